/*
 * Decision engine: the DESIGN §5 order (allowlist, blocklist, modes,
 * methods and GraphQL, the private-address guard and what lifts it), the
 * rule and file:line source of every decision, and flag mode. Policies are
 * built from real config files written to a temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"
#include "tsv.h"

static char tmpdir[] = "/tmp/test_policy.XXXXXX";

static const char base_yaml[] = "version: 1\n"                           /* 1 */
                                "network:\n"                             /* 2 */
                                "  mode: practical\n"                    /* 3 */
                                "  blocklist:\n"                         /* 4 */
                                "    - \"*.segment.io\"\n"               /* 5 */
                                "    - both.example.com\n"               /* 6 */
                                "    - \"198.18.5.0/24\"\n"              /* 7 */
                                "  allowlist:\n"                         /* 8 */
                                "    - both.example.com\n"               /* 9 */
                                "    - api.anthropic.com\n"              /* 10 */
                                "    - \"*.corp.example\"\n"             /* 11 */
                                "    - \"198.18.7.7\"\n"                 /* 12 */
                                "    - \"169.254.169.254/32\"\n"         /* 13 */
                                "    - internal.example.com\n"           /* 14 */
                                "  allowMethods: [GET, HEAD, OPTIONS]\n" /* 15 */
                                "  allowGraphqlQueries: true\n"          /* 16 */
                                "  onViolation: block\n";                /* 17 */

/* Write text to a file in the temp dir and load it as a policy. */
static struct policy *
load(const char *name, const char *text)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs;
	char path[256];
	char *files[1];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	files[0] = path;
	buf_init(&errs);
	cfg = config_load(files, 1, &errs);
	if (cfg == NULL)
		fail_msg("config: %s", buf_cstr(&errs));
	p = policy_new(cfg, &errs);
	if (p == NULL)
		fail_msg("policy: %s", buf_cstr(&errs));
	buf_free(&errs);
	return p;
}

/* A variant of base_yaml with one substring replaced. */
static struct policy *
load_variant(const char *name, const char *from, const char *to)
{
	struct buf b;
	struct policy *p;
	const char *at = strstr(base_yaml, from);

	assert_non_null(at);
	buf_init(&b);
	buf_add(&b, base_yaml, (size_t)(at - base_yaml));
	buf_adds(&b, to);
	buf_adds(&b, at + strlen(from));
	p = load(name, buf_cstr(&b));
	buf_free(&b);
	return p;
}

struct req {
	const char *method;
	const char *url;
	const char *content_type;
	const char *body;
};

/* Decide as the proxy does: one call, the address guard included for a literal. */
static void
decide(const struct policy *p, const struct req *r, struct decision *d)
{
	struct policy_request pr;
	struct url u;

	memset(&u, 0, sizeof u);
	if (url_parse(r->url, &u) != NULL)
		fail_msg("url_parse %s", r->url);
	memset(&pr, 0, sizeof pr);
	pr.host = &u.host;
	pr.method = r->method;
	pr.query = u.query;
	pr.content_type = r->content_type;
	pr.body = r->body;
	pr.body_len = r->body ? strlen(r->body) : 0;
	policy_decide(p, &pr, d);
	url_free(&u);
}

static void
expect(const struct policy *p, const struct req *r, enum policy_action action, const char *rule,
       const char *source_suffix)
{
	struct decision d;
	size_t ls, lx;

	decide(p, r, &d);
	if (d.action != action || strcmp(d.rule, rule) != 0)
		fail_msg("%s %s: got %s %s (%s), want %s %s", r->method ? r->method : "-", r->url,
		         policy_action_name(d.action), d.rule, d.reason, policy_action_name(action),
		         rule);
	if (source_suffix != NULL) {
		ls = strlen(d.source);
		lx = strlen(source_suffix);
		if (ls < lx || strcmp(d.source + ls - lx, source_suffix) != 0)
			fail_msg("%s: source %s, want ...%s", r->url, d.source, source_suffix);
	}
}

static void
test_order(void **state)
{
	struct policy *p = load("base.yaml", base_yaml);
	const struct req get = {"GET", "https://api.segment.io/v1", NULL, NULL};

	(void)state;
	/* Blocklist by wildcard, with the entry's file:line. */
	expect(p, &get, ACTION_BLOCK, "*.segment.io", "base.yaml:5");
	/* The allowlist wins over the blocklist. */
	expect(p, &(struct req){"DELETE", "https://both.example.com/", NULL, NULL}, ACTION_ALLOW,
	       "both.example.com", "base.yaml:9");
	/* Allowlisted hosts take every method. */
	expect(p, &(struct req){"POST", "https://api.anthropic.com/v1/messages", NULL, NULL},
	       ACTION_ALLOW, "api.anthropic.com", "base.yaml:10");
	/* Unlisted host: methods decide. */
	expect(p, &(struct req){"GET", "https://example.com/", NULL, NULL}, ACTION_ALLOW,
	       "allow-methods", "base.yaml:15");
	expect(p, &(struct req){"HEAD", "https://example.com/", NULL, NULL}, ACTION_ALLOW,
	       "allow-methods", NULL);
	expect(p, &(struct req){"POST", "https://example.com/", NULL, NULL}, ACTION_BLOCK,
	       "method-not-allowed", "base.yaml:15");
	/* Methods are case-sensitive. */
	expect(p, &(struct req){"get", "https://example.com/", NULL, NULL}, ACTION_BLOCK,
	       "method-not-allowed", NULL);
	/* A host-only decision (DNS) on an unlisted host. */
	expect(p, &(struct req){NULL, "example.com:443", NULL, NULL}, ACTION_ALLOW, "unlisted-host",
	       "base.yaml:3");
	expect(p, &(struct req){NULL, "x.segment.io:443", NULL, NULL}, ACTION_BLOCK, "*.segment.io",
	       NULL);
	/*
	 * A tunnel: any port, for unlisted hosts too (the proxy intercepts
	 * those and cuts what is not TLS); the lists decide as for requests.
	 */
	{
		static const struct {
			const char *url;
			enum policy_action action;
			const char *rule;
		} t[] = {
		    {"example.com:443", ACTION_ALLOW, "unlisted-host"},
		    {"example.com:22", ACTION_ALLOW, "unlisted-host"},
		    {"example.com:8443", ACTION_ALLOW, "unlisted-host"},
		    {"x.segment.io:8443", ACTION_BLOCK, "*.segment.io"},
		    {"api.anthropic.com:22", ACTION_ALLOW, "api.anthropic.com"},
		    {"x.segment.io:443", ACTION_BLOCK, "*.segment.io"},
		};
		struct policy_request pr;
		struct decision d;
		struct url u;
		size_t i;

		for (i = 0; i < EG_NELEM(t); i++) {
			memset(&u, 0, sizeof u);
			assert_null(url_parse(t[i].url, &u));
			memset(&pr, 0, sizeof pr);
			pr.host = &u.host;
			pr.method = "CONNECT";
			pr.port = u.port;
			policy_decide(p, &pr, &d);
			if (d.action != t[i].action || strcmp(d.rule, t[i].rule) != 0)
				fail_msg("CONNECT %s: got %s %s", t[i].url,
				         policy_action_name(d.action), d.rule);
			assert_int_equal(d.graphql_present, 0);
			url_free(&u);
		}
	}
	policy_unref(p);
}

static void
test_graphql(void **state)
{
	struct policy *p = load("base.yaml", base_yaml);
	struct policy *noq;
	struct decision d;
	const char *json = "application/json";

	(void)state;
	expect(p,
	       &(struct req){"POST", "https://api.github.com/graphql", json,
	                     "{\"query\":\"query Q { viewer { login } }\"}"},
	       ACTION_ALLOW, "graphql-query", "base.yaml:16");
	expect(
	    p,
	    &(struct req){"POST", "https://api.github.com/graphql", json,
	                  "{\"query\":\"mutation M { addStar(input:{}) { clientMutationId } }\"}"},
	    ACTION_BLOCK, "graphql-mutation", NULL);
	expect(p,
	       &(struct req){"POST", "https://api.github.com/graphql", json,
	                     "{\"query\":\"subscription S { x }\"}"},
	       ACTION_BLOCK, "graphql-subscription", NULL);
	expect(p,
	       &(struct req){"POST", "https://api.github.com/graphql", json,
	                     "{\"query\":\"query Q { unterminated\"}"},
	       ACTION_BLOCK, "graphql-not-query", NULL);
	/* A GET carrying a mutation is a violation, though GET is allowed. */
	expect(p,
	       &(struct req){"GET", "https://api.github.com/graphql?query=mutation%7Bx%7D", NULL,
	                     NULL},
	       ACTION_BLOCK, "graphql-mutation", NULL);
	/* The allowlist lets an allowlisted host take mutations. */
	expect(p,
	       &(struct req){"POST", "https://api.anthropic.com/graphql", json,
	                     "{\"query\":\"mutation { x }\"}"},
	       ACTION_ALLOW, "api.anthropic.com", NULL);
	/* The decision names the operation. */
	decide(p,
	       &(struct req){"POST", "https://api.github.com/graphql", json,
	                     "{\"query\":\"mutation CreateIssue { x }\"}"},
	       &d);
	assert_int_equal(d.graphql_present, 1);
	assert_int_equal(d.gql.op, GQL_MUTATION);
	assert_string_equal(d.gql.name, "CreateIssue");
	assert_non_null(strstr(d.reason, "CreateIssue"));
	/* A compressed body cannot be read: not provably a query. */
	{
		struct policy_request pr;
		struct url u;

		memset(&u, 0, sizeof u);
		assert_null(url_parse("https://api.github.com/graphql", &u));
		memset(&pr, 0, sizeof pr);
		pr.host = &u.host;
		pr.method = "GET";
		pr.content_type = json;
		pr.body = "\x1f\x8b";
		pr.body_len = 2;
		pr.body_encoded = 1;
		policy_decide(p, &pr, &d);
		assert_int_equal(d.action, ACTION_BLOCK);
		assert_string_equal(d.rule, "graphql-not-query");
		url_free(&u);
	}
	policy_unref(p);

	noq = load_variant("noq.yaml", "allowGraphqlQueries: true", "allowGraphqlQueries: false");
	expect(noq,
	       &(struct req){"POST", "https://api.github.com/graphql", json,
	                     "{\"query\":\"{ viewer { login } }\"}"},
	       ACTION_BLOCK, "method-not-allowed", NULL);
	policy_unref(noq);
}

static void
test_modes(void **state)
{
	struct policy *p;

	(void)state;
	p = load_variant("strict.yaml", "mode: practical", "mode: strict");
	assert_int_equal(policy_mode(p), MODE_STRICT);
	expect(p, &(struct req){"GET", "https://example.com/", NULL, NULL}, ACTION_BLOCK,
	       "strict-default-deny", "strict.yaml:3");
	expect(p, &(struct req){"POST", "https://api.anthropic.com/", NULL, NULL}, ACTION_ALLOW,
	       "api.anthropic.com", NULL);
	expect(p, &(struct req){"GET", "https://x.segment.io/", NULL, NULL}, ACTION_BLOCK,
	       "*.segment.io", NULL);
	/* Tunnels to unlisted hosts stay closed on every port. */
	expect(p, &(struct req){"CONNECT", "example.com:8443", NULL, NULL}, ACTION_BLOCK,
	       "strict-default-deny", NULL);
	expect(p, &(struct req){"CONNECT", "example.com:443", NULL, NULL}, ACTION_BLOCK,
	       "strict-default-deny", NULL);
	policy_unref(p);

	/* Off blocks even the allowlist. */
	p = load_variant("off.yaml", "mode: practical", "mode: off");
	expect(p, &(struct req){"GET", "https://api.anthropic.com/", NULL, NULL}, ACTION_BLOCK,
	       "mode-off", "off.yaml:3");
	expect(p, &(struct req){NULL, "example.com:443", NULL, NULL}, ACTION_BLOCK, "mode-off",
	       NULL);
	expect(p, &(struct req){"CONNECT", "api.anthropic.com:8443", NULL, NULL}, ACTION_BLOCK,
	       "mode-off", NULL);
	policy_unref(p);

	/* Flag: violations pass and say so; the blocklist still blocks. */
	p = load_variant("flag.yaml", "onViolation: block", "onViolation: flag");
	expect(p, &(struct req){"POST", "https://example.com/", NULL, NULL}, ACTION_FLAG,
	       "method-not-allowed", NULL);
	expect(p,
	       &(struct req){"GET", "https://api.github.com/graphql?query=mutation%7Bx%7D", NULL,
	                     NULL},
	       ACTION_FLAG, "graphql-mutation", NULL);
	expect(p, &(struct req){"GET", "https://x.segment.io/", NULL, NULL}, ACTION_BLOCK,
	       "*.segment.io", NULL);
	policy_unref(p);
}

/* The policies tests/data/decide.tsv names. */
static struct policy *
decide_policy(const char *name)
{
	if (strcmp(name, "base") == 0)
		return load("base.yaml", base_yaml);
	if (strcmp(name, "flag") == 0)
		return load_variant("flag.yaml", "onViolation: block", "onViolation: flag");
	if (strcmp(name, "noq") == 0)
		return load_variant("noq.yaml", "allowGraphqlQueries: true",
		                    "allowGraphqlQueries: false");
	if (strcmp(name, "post") == 0)
		return load_variant("post.yaml", "[GET, HEAD, OPTIONS]",
		                    "[GET, HEAD, OPTIONS, POST]");
	if (strcmp(name, "trace") == 0)
		return load_variant("trace.yaml", "[GET, HEAD, OPTIONS]",
		                    "[GET, HEAD, OPTIONS, TRACE]");
	if (strcmp(name, "noget") == 0)
		return load_variant("noget.yaml", "[GET, HEAD, OPTIONS]", "[HEAD, OPTIONS]");
	fail_msg("decide.tsv: no policy \"%s\"", name);
	return NULL;
}

/*
 * Step 4 as a table: methods, overrides, bodies on read methods and the
 * GraphQL allowance, each request built the way egressd builds it (header
 * fields through policy_request_header, the held body, its truncation).
 */
static void
test_decide_table(void **state)
{
	char **f, *p, *h, *colon, *value;
	struct policy_request pr;
	struct decision d;
	struct policy *pol;
	struct url u;
	unsigned lineno;
	size_t n;
	struct tsv t;

	(void)state;
	tsv_open(&t, "decide.tsv", 9, 9);
	while ((f = tsv_next(&t)) != NULL) {
		lineno = t.lineno;
		memset(&u, 0, sizeof u);
		if (url_parse(f[2], &u) != NULL)
			fail_msg("decide.tsv:%u: bad url", lineno);
		memset(&pr, 0, sizeof pr);
		pr.host = &u.host;
		pr.method = f[1];
		pr.query = u.query;
		for (p = strcmp(f[3], "-") == 0 ? NULL : f[3]; p != NULL;) {
			h = strsep(&p, "|");
			h += strspn(h, " ");
			if ((colon = strchr(h, ':')) == NULL)
				fail_msg("decide.tsv:%u: bad header", lineno);
			for (value = colon + 1; *value == ' '; value++)
				;
			for (n = strlen(value); n > 0 && value[n - 1] == ' '; n--)
				value[n - 1] = '\0';
			policy_request_header(&pr, h, (size_t)(colon - h), value);
		}
		if (strcmp(f[4], "-") != 0) {
			tsv_unescape(f[4]);
			pr.content_type = f[4];
		}
		if (strcmp(f[5], "-") != 0) {
			pr.body_truncated = f[5][0] == '~';
			pr.body = f[5] + pr.body_truncated;
			pr.body_len = tsv_unescape(f[5] + pr.body_truncated);
		}
		pol = decide_policy(f[0]);
		policy_decide(pol, &pr, &d);
		if (strcmp(policy_action_name(d.action), f[6]) != 0 || strcmp(d.rule, f[7]) != 0)
			fail_msg("decide.tsv:%u: got %s %s (%s), want %s %s", lineno,
			         policy_action_name(d.action), d.rule, d.reason, f[6], f[7]);
		if (strcmp(f[8], "-") != 0 && strstr(d.reason, f[8]) == NULL)
			fail_msg("decide.tsv:%u: reason \"%s\", want \"%s\"", lineno, d.reason,
			         f[8]);
		policy_unref(pol);
		url_free(&u);
	}
	print_message("%u decision cases\n", t.rows);
	assert_true(t.rows >= 60);
}

/* Decide for a name, then for the address it resolved to. */
static void
expect_resolved(const struct policy *p, const char *url, const char *addr,
                enum policy_action action, const char *rule)
{
	struct policy_request pr;
	struct decision d;
	struct addr a;
	struct url u;

	memset(&u, 0, sizeof u);
	assert_null(url_parse(url, &u));
	assert_null(addr_parse(addr, &a));
	memset(&pr, 0, sizeof pr);
	pr.host = &u.host;
	pr.method = "GET";
	policy_decide(p, &pr, &d);
	policy_check_addr(p, &a, &d);
	if (d.action != action || strcmp(d.rule, rule) != 0)
		fail_msg("%s -> %s: got %s %s (%s), want %s %s", url, addr,
		         policy_action_name(d.action), d.rule, d.reason, policy_action_name(action),
		         rule);
	url_free(&u);
}

static void
test_address_guard(void **state)
{
	struct policy *p = load("base.yaml", base_yaml);

	(void)state;
	/* A public name resolving to private space: rebinding is blocked. */
	expect_resolved(p, "https://example.com/", "10.1.2.3", ACTION_BLOCK, "private-address");
	expect_resolved(p, "https://example.com/", "127.0.0.1", ACTION_BLOCK, "private-address");
	expect_resolved(p, "https://example.com/", "::ffff:192.168.1.1", ACTION_BLOCK,
	                "private-address");
	expect_resolved(p, "https://example.com/", "fd12::1", ACTION_BLOCK, "private-address");
	expect_resolved(p, "https://example.com/", "93.184.215.14", ACTION_ALLOW, "allow-methods");
	/* An exact-name allowlist entry lifts the guard... */
	expect_resolved(p, "https://internal.example.com/", "10.1.2.3", ACTION_ALLOW,
	                "internal.example.com");
	/* ... a wildcard entry does not ... */
	expect_resolved(p, "https://git.corp.example/", "10.1.2.3", ACTION_BLOCK,
	                "private-address");
	/* ... and metadata yields only to an address entry. */
	expect_resolved(p, "https://internal.example.com/", "fd00:ec2::254", ACTION_BLOCK,
	                "private-address");
	expect_resolved(p, "https://example.com/", "169.254.169.254", ACTION_ALLOW,
	                "allow-methods");
	/* An allowlisted address lifts the guard but not the method rules. */
	expect_resolved(p, "https://example.com/", "198.18.7.7", ACTION_ALLOW, "allow-methods");
	expect(p, &(struct req){"POST", "https://example.com/", NULL, NULL}, ACTION_BLOCK,
	       "method-not-allowed", NULL);
	/* Blocklist address entries apply to resolved addresses... */
	expect_resolved(p, "https://example.com/", "198.18.5.1", ACTION_BLOCK, "198.18.5.0/24");
	/* ... unless the name is allowlisted (the allowlist wins). */
	expect_resolved(p, "https://internal.example.com/", "198.18.5.1", ACTION_ALLOW,
	                "internal.example.com");
	/* Address literals in every form are checked as addresses. */
	expect(p, &(struct req){"GET", "http://2130706433/", NULL, NULL}, ACTION_BLOCK,
	       "private-address", "builtin");
	expect(p, &(struct req){"GET", "http://[::1]:8080/", NULL, NULL}, ACTION_BLOCK,
	       "private-address", NULL);
	expect(p, &(struct req){"POST", "http://198.18.7.7/", NULL, NULL}, ACTION_ALLOW,
	       "198.18.7.7", "base.yaml:12");
	expect(p, &(struct req){"GET", "http://198.18.5.200/", NULL, NULL}, ACTION_BLOCK,
	       "198.18.5.0/24", "base.yaml:7");
	policy_unref(p);
}

/* One policy_decide() call decides as egressd does, literal or name, with or without a method. */
static void
test_decide_one_call(void **state)
{
	struct policy *p = load("base.yaml", base_yaml);
	struct policy_request pr;
	struct decision d;
	struct host h;

	(void)state;
	memset(&pr, 0, sizeof pr);
	pr.host = &h;
	/* A request to an address literal gets the address guard... */
	assert_null(host_parse("10.1.2.3", 8, &h));
	pr.method = "GET";
	policy_decide(p, &pr, &d);
	assert_int_equal(d.action, ACTION_BLOCK);
	assert_string_equal(d.rule, "private-address");
	assert_int_equal(d.list, POLICY_LIST_ADDRESS);
	assert_string_equal(policy_list_name(d.list), "address");
	/* ... and a body could still make it a method violation: it is read first. */
	assert_int_equal(d.body_matters, 1);
	pr.method = "CONNECT";
	pr.port = 443;
	policy_decide(p, &pr, &d);
	assert_string_equal(d.rule, "private-address");
	assert_int_equal(d.body_matters, 0);
	/* A name without a method (DNS) connects nowhere: no guard. */
	pr.method = NULL;
	pr.port = 0;
	policy_decide(p, &pr, &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	assert_string_equal(d.rule, "unlisted-host");
	assert_int_equal(d.list, POLICY_LIST_MODE);
	/* An allowlisted address lifts the guard; the allowlist needs no body. */
	assert_null(host_parse("198.18.7.7", 10, &h));
	pr.method = "GET";
	policy_decide(p, &pr, &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	assert_int_equal(d.list, POLICY_LIST_ALLOWLIST);
	assert_int_equal(d.body_matters, 0);
	/* A name is decided as written; its addresses come later. */
	assert_null(host_parse("example.com", 11, &h));
	policy_decide(p, &pr, &d);
	assert_string_equal(d.rule, "allow-methods");
	assert_int_equal(d.list, POLICY_LIST_METHODS);
	assert_int_equal(d.body_matters, 1);
	policy_unref(p);
}

static void
test_default_and_refs(void **state)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs;

	(void)state;
	buf_init(&errs);
	cfg = config_load(NULL, 0, &errs);
	assert_non_null(cfg);
	p = policy_new(cfg, &errs);
	assert_non_null(p);
	expect(p, &(struct req){"GET", "https://api.segment.io/", NULL, NULL}, ACTION_BLOCK,
	       "*.segment.io", "builtin");
	expect(p, &(struct req){"POST", "https://example.com/", NULL, NULL}, ACTION_BLOCK,
	       "method-not-allowed", "builtin");
	assert_ptr_equal(policy_ref(p), p);
	policy_unref(p);
	/* Still usable after dropping one of two references. */
	expect(p, &(struct req){"GET", "https://example.com/", NULL, NULL}, ACTION_ALLOW,
	       "allow-methods", "builtin");
	policy_unref(p);
	assert_string_equal(policy_action_name(ACTION_FLAG), "flag");
	buf_free(&errs);
}

static void
test_bad_list_file(void **state)
{
	struct config *cfg;
	struct buf errs;
	char path[256];
	char *files[1];
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/lists.yaml", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("network:\n  blocklistFiles: [does-not-exist.txt]\n", f);
	fclose(f);
	files[0] = path;
	buf_init(&errs);
	cfg = config_load(files, 1, &errs);
	assert_non_null(cfg);
	assert_null(policy_new(cfg, &errs));
	assert_non_null(strstr(buf_cstr(&errs), "lists.yaml:2:20: blocklistFiles entry"));
	buf_free(&errs);
}

/* Decide a request carrying header fields (name, value pairs, NULL-ended). */
static void
decide_ws(const struct policy *p, const char *method, const char *url, const char *const *fields,
          struct decision *d)
{
	struct policy_request pr;
	struct url u;
	size_t i;

	memset(&u, 0, sizeof u);
	assert_null(url_parse(url, &u));
	memset(&pr, 0, sizeof pr);
	pr.host = &u.host;
	pr.method = method;
	pr.port = u.port;
	pr.query = u.query;
	for (i = 0; fields[i] != NULL; i += 2)
		policy_request_header(&pr, fields[i], strlen(fields[i]), fields[i + 1]);
	policy_decide(p, &pr, d);
	url_free(&u);
}

static void
test_websocket(void **state)
{
	static const char *const plain[] = {"Upgrade", "websocket", NULL};
	static const char *const gql[] = {"Upgrade", "websocket", "Sec-WebSocket-Protocol",
	                                  "graphql-transport-ws, graphql-ws", NULL};
	static const char *const legacy[] = {"Upgrade", "websocket", "Sec-WebSocket-Protocol",
	                                     "graphql-ws", NULL};
	static const char *const mixed[] = {"Upgrade", "websocket", "Sec-WebSocket-Protocol",
	                                    "graphql-ws, chat", NULL};
	static const char *const none[] = {NULL};
	static const struct {
		const char *policy; /* base, flag, noq, strict */
		const char *method;
		const char *url;
		const char *const *fields;
		enum policy_action action;
		const char *rule;
		int inspect;
	} t[] = {
	    /* An unlisted host: a plain WebSocket is a violation. */
	    {"base", "GET", "https://example.com/ws", plain, ACTION_BLOCK, "websocket", 0},
	    {"flag", "GET", "https://example.com/ws", plain, ACTION_FLAG, "websocket", 0},
	    /* Only GraphQL subprotocols, all of them: inspected. */
	    {"base", "GET", "https://example.com/graphql", gql, ACTION_ALLOW, "websocket-graphql",
	     1},
	    {"base", "GET", "https://example.com/graphql", legacy, ACTION_ALLOW,
	     "websocket-graphql", 1},
	    {"base", "GET", "https://example.com/graphql", mixed, ACTION_BLOCK, "websocket", 0},
	    {"noq", "GET", "https://example.com/graphql", gql, ACTION_BLOCK, "websocket", 0},
	    /* A mutation in the URL is refused as without the upgrade. */
	    {"base", "GET", "https://example.com/graphql?query=mutation%7Bx%7D", gql, ACTION_BLOCK,
	     "graphql-mutation", 0},
	    {"base", "GET", "https://example.com/graphql?query=%7Bx%7D", plain, ACTION_BLOCK,
	     "websocket", 0},
	    /* Allowlisted hosts are unchanged; listed and strict refusals come first. */
	    {"base", "GET", "https://api.anthropic.com/ws", plain, ACTION_ALLOW,
	     "api.anthropic.com", 0},
	    {"base", "GET", "https://api.anthropic.com/ws", gql, ACTION_ALLOW, "api.anthropic.com",
	     0},
	    {"base", "GET", "https://x.segment.io/ws", gql, ACTION_BLOCK, "*.segment.io", 0},
	    {"strict", "GET", "https://example.com/ws", gql, ACTION_BLOCK, "strict-default-deny",
	     0},
	    /* Only a GET upgrades to a WebSocket. */
	    {"base", "POST", "https://example.com/ws", plain, ACTION_BLOCK, "method-not-allowed",
	     0},
	    {"base", "HEAD", "https://example.com/ws", gql, ACTION_ALLOW, "allow-methods", 0},
	    {"base", "GET", "https://example.com/ws", none, ACTION_ALLOW, "allow-methods", 0},
	};
	struct policy *base, *flag, *noq, *strict, *p;
	struct decision d;
	size_t i;

	(void)state;
	base = load("base.yaml", base_yaml);
	flag = load_variant("flag.yaml", "onViolation: block", "onViolation: flag");
	noq = load_variant("noq.yaml", "allowGraphqlQueries: true", "allowGraphqlQueries: false");
	strict = load_variant("strict.yaml", "mode: practical", "mode: strict");
	for (i = 0; i < EG_NELEM(t); i++) {
		p = strcmp(t[i].policy, "flag") == 0     ? flag
		    : strcmp(t[i].policy, "noq") == 0    ? noq
		    : strcmp(t[i].policy, "strict") == 0 ? strict
		                                         : base;
		decide_ws(p, t[i].method, t[i].url, t[i].fields, &d);
		if (d.action != t[i].action || strcmp(d.rule, t[i].rule) != 0 ||
		    d.ws_inspect != t[i].inspect)
			fail_msg("case %zu %s %s: got %s %s inspect %d (%s)", i, t[i].method,
			         t[i].url, policy_action_name(d.action), d.rule, d.ws_inspect,
			         d.reason);
	}
	decide_ws(base, "GET", "https://example.com/graphql", gql, &d);
	assert_string_equal(policy_list_name(d.list), "websocket");
	assert_non_null(strstr(d.source, "base.yaml:16")); /* allowGraphqlQueries */
	assert_non_null(strstr(d.reason, "every client message is inspected"));
	policy_unref(base);
	policy_unref(flag);
	policy_unref(noq);
	policy_unref(strict);
}

/* One client message on an inspected WebSocket, by its classification. */
static void
test_websocket_message(void **state)
{
	static const struct {
		const char *msg;
		int flag;
		enum policy_action action;
		const char *rule;
	} t[] = {
	    {"{\"type\":\"connection_init\",\"payload\":{\"token\":\"x\"}}", 0, ACTION_ALLOW, ""},
	    {"{\"type\":\"ping\"}", 0, ACTION_ALLOW, ""},
	    {"{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"query Q { a }\"}}", 0,
	     ACTION_ALLOW, "websocket-graphql"},
	    {"{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"subscription { a }\"}}",
	     0, ACTION_ALLOW, "websocket-graphql"},
	    {"{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"mutation M { a }\"}}",
	     0, ACTION_BLOCK, "graphql-mutation"},
	    {"{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"mutation M { a }\"}}",
	     1, ACTION_FLAG, "graphql-mutation"},
	    {"{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a \"}}", 0,
	     ACTION_BLOCK, "graphql-not-query"},
	    {"{\"type\":\"start\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\"}}", 0, ACTION_BLOCK,
	     "websocket-message"},
	    {"{\"type\":\"start\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\"}}", 1, ACTION_FLAG,
	     "websocket-message"},
	};
	struct policy *base, *flag;
	struct gql_ws_msg m;
	struct decision d;
	size_t i;

	(void)state;
	base = load("base.yaml", base_yaml);
	flag = load_variant("flag.yaml", "onViolation: block", "onViolation: flag");
	for (i = 0; i < EG_NELEM(t); i++) {
		graphql_ws_classify(GQL_WS_TRANSPORT, t[i].msg, strlen(t[i].msg), &m);
		policy_decide_ws_message(t[i].flag ? flag : base, &m, &d);
		if (d.action != t[i].action || strcmp(d.rule, t[i].rule) != 0)
			fail_msg("%s: got %s %s (%s)", t[i].msg, policy_action_name(d.action),
			         d.rule, d.reason);
		assert_int_equal(d.graphql_present, m.kind == GQL_WS_OPERATION);
	}
	graphql_ws_classify(GQL_WS_TRANSPORT, t[4].msg, strlen(t[4].msg), &m);
	policy_decide_ws_message(base, &m, &d);
	assert_string_equal(d.gql.name, "M");
	assert_string_equal(d.reason, "GraphQL mutation M over WebSocket is a write");
	policy_unref(base);
	policy_unref(flag);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_graphql),
	    cmocka_unit_test(test_decide_table),
	    cmocka_unit_test(test_modes),
	    cmocka_unit_test(test_address_guard),
	    cmocka_unit_test(test_decide_one_call),
	    cmocka_unit_test(test_default_and_refs),
	    cmocka_unit_test(test_bad_list_file),
	    cmocka_unit_test(test_websocket),
	    cmocka_unit_test(test_websocket_message),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
