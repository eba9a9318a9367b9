/*
 * policyctl: the policy seen from the command line. `explain` answers what
 * the policy does with one request and which rule of which file decided,
 * through the same policy_decide() call egressd makes;
 * `check` validates configuration files and prints the effective result;
 * `audit` reviews an audit log (summary, filters, follow, suggestions, the
 * hash chain, an HTML page), its work done by policyctl/review*.c.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "policy.h"
#include "review.h"

#define EXIT_USAGE         2
#define POLICY_MAX_HEADERS 32

struct ctl {
	struct config_file *files;
	size_t nfiles;
	int json;
	const char *method;
	const char *body_path;
	const char *content_type;
	char *headers[POLICY_MAX_HEADERS]; /* --header "Name: value", split at the colon */
	size_t nheaders;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: policyctl explain [--config FILE]... [--project-config FILE]...\n"
	        "                         [--method M] [--body FILE] [--content-type T]\n"
	        "                         [--header 'NAME: VALUE']... [--json] HOST|URL\n"
	        "       policyctl check   [--config FILE]... [--project-config FILE]... [--json]\n"
	        "       policyctl audit   [--json] [--blocked] [--flagged] [--host GLOB]\n"
	        "                         [--since TIME] [--until TIME] [--event TYPE]\n"
	        "                         [--follow] [--suggest] [--verify] [--html FILE] [FILE]\n"
	        "\n"
	        "With no --config the embedded default policy is used. The first --config is\n"
	        "the global file, later ones are project files merged over it. A\n"
	        "--project-config file is one the sandboxed program can write: like egressd,\n"
	        "policyctl takes from it only what tightens the files before it.\n"
	        "audit reads FILE, or stdin when FILE is - or absent (and stdin is not a\n"
	        "terminal). TIME is RFC 3339 (2026-11-29T19:28:45Z), a date, or a\n"
	        "duration ago (30s, 10m, 2h, 1d).\n");
}

static void
ctl_add_file(struct ctl *c, const char *path, int flags)
{
	c->files = xreallocarray(c->files, c->nfiles + 1, sizeof *c->files);
	c->files[c->nfiles].path = xstrdup(path);
	c->files[c->nfiles++].flags = flags;
}

static void
ctl_free(struct ctl *c)
{
	size_t i;

	for (i = 0; i < c->nfiles; i++)
		free((char *)c->files[i].path);
	free(c->files);
	for (i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
}

/*
 * --header "Name: value": a field the request carries, for the fields
 * the policy reads (method overrides, a WebSocket upgrade and its
 * subprotocols). Stored as name NUL value. An Upgrade field stands for
 * one the Connection field names, as a client sends it.
 */
static int
ctl_add_header(struct ctl *c, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char *h, *v;
	size_t n;

	if (colon == NULL || colon == arg || !text_http_token(arg, (size_t)(colon - arg))) {
		fprintf(stderr, "policyctl: --header wants \"NAME: VALUE\", not \"%s\"\n", arg);
		return -1;
	}
	if (c->nheaders == POLICY_MAX_HEADERS) {
		fprintf(stderr, "policyctl: at most %d --header options\n", POLICY_MAX_HEADERS);
		return -1;
	}
	h = xstrdup(arg);
	h[colon - arg] = '\0';
	for (v = h + (colon - arg) + 1; *v == ' ' || *v == '\t'; v++)
		;
	memmove(h + (colon - arg) + 1, v, strlen(v) + 1);
	/* Trailing whitespace is not part of a field value (RFC 9110 §5.5), as in egressd. */
	v = h + (colon - arg) + 1;
	for (n = strlen(v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'); n--)
		v[n - 1] = '\0';
	c->headers[c->nheaders++] = h;
	return 0;
}

/* Print the error lines of a failed load, one per line, then a count. */
static void
print_errors(const char *text)
{
	const char *p;
	size_t n = 0;

	fputs(text, stderr);
	for (p = text; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	fprintf(stderr, "policyctl: %zu error%s in configuration\n", n, n == 1 ? "" : "s");
}

/* What a project file set and was not taken, as egressd warns of it. */
static void
ctl_ignored_warn(const struct config *cfg)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&b);
		config_ignored_text(&cfg->ignored[i], &b);
		fprintf(stderr, "policyctl: warning: %s:%u:%u: %s\n", cfg->ignored[i].loc.file,
		        cfg->ignored[i].loc.line, cfg->ignored[i].loc.col, buf_cstr(&b));
	}
	buf_free(&b);
}

/* Load and compile the policy the files describe; NULL after printing why. */
static struct policy *
ctl_load(struct ctl *c, struct buf *errs)
{
	struct config *cfg;

	if ((cfg = config_load_files(c->files, c->nfiles, errs)) == NULL)
		return NULL;
	return policy_new(cfg, errs);
}

/* Read at most max bytes of path; *truncated says whether there was more. */
static char *
read_body(const char *path, size_t max, size_t *len, int *truncated)
{
	FILE *f;
	char *data;
	size_t n;
	int c;

	if ((f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb")) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	data = xmalloc(max + 1);
	n = fread(data, 1, max, f);
	if (ferror(f)) {
		fprintf(stderr, "policyctl: %s: read error\n", path);
		free(data);
		if (f != stdin)
			fclose(f);
		return NULL;
	}
	*truncated = n == max && (c = fgetc(f)) != EOF;
	if (f != stdin)
		fclose(f);
	data[n] = '\0';
	*len = n;
	return data;
}

static const char *
action_word(enum policy_action a)
{
	switch (a) {
	case ACTION_ALLOW:
		return "allowed";
	case ACTION_FLAG:
		return "flagged";
	case ACTION_BLOCK:
		break;
	}
	return "blocked";
}

/* Notes that help a person read the answer; at most a handful. */
static size_t
explain_notes(const struct policy *p, const char *input, const struct url *u,
              const struct decision *d, const char *notes[], char store[][320], size_t max)
{
	struct domain_match m;
	size_t n = 0;

	notes[n++] = policy_mode_note(policy_mode(p));
	if (u->host.kind == HOST_ADDR && strstr(input, u->host.name) == NULL && n < max) {
		snprintf(store[n], sizeof store[n],
		         "the host is an IP address written in another form: %s", u->host.name);
		notes[n] = store[n];
		n++;
	}
	if (u->host.kind == HOST_NAME && d->action != ACTION_BLOCK && n < max) {
		notes[n++] = "decided by the name as written; egressd also checks the address it "
		             "resolves to (private addresses are blocked unless allowlisted)";
	}
	if (d->action != ACTION_BLOCK && policy_passthrough(p, &u->host, &m) && n < max) {
		snprintf(store[n], sizeof store[n],
		         "passthrough (%s): HTTPS to this host is tunnelled without interception, "
		         "so methods inside TLS are not checked",
		         m.pattern);
		notes[n] = store[n];
		n++;
	}
	if (d->ws_inspect && n < max)
		notes[n++] =
		    "WebSocket messages are inspected: egressd reads every client message "
		    "and lets only GraphQL queries and subscriptions through; anything else "
		    "closes the connection (code 4403) and is audited";
	if (d->action == ACTION_FLAG && n < max)
		notes[n++] = "flagged requests are let through and recorded in the audit log";
	return n;
}

static void
explain_print_text(const char *input, const struct url *u, const struct policy_request *req,
                   const struct decision *d, const struct policy *p, const char *notes[],
                   size_t nnotes)
{
	const char *list = policy_list_name(d->list);
	size_t i;

	printf("%s: %s\n", action_word(d->action), u->host.name);
	printf("matched rule: %s (%s%s%s)\n", d->rule, list ? list : "", list ? ", " : "",
	       d->source);
	printf("reason: %s\n", d->reason);
	printf("method: %s", req->method);
	for (i = 0; i < req->noverrides && i < POLICY_MAX_OVERRIDES; i++)
		printf("%s%s: %s", i == 0 ? " (" : ", ", req->override_fields[i],
		       req->overrides[i]);
	printf("%s\n", req->noverrides > POLICY_MAX_OVERRIDES ? ", ...)"
	               : req->noverrides > 0                  ? ")"
	                                                      : "");
	if (d->graphql_present)
		printf("graphql: %s%s%s%s\n", graphql_op_name(d->gql.op), d->gql.name[0] ? " " : "",
		       d->gql.name, d->gql.pure ? "" : " (in a request that is not GraphQL alone)");
	printf("mode: %s\n", config_mode_name(policy_mode(p)));
	for (i = 0; i < nnotes; i++)
		printf("note: %s\n", notes[i]);
	(void)input;
}

static void
json_key(struct buf *b, const char *key, int first)
{
	if (!first)
		buf_addc(b, ',');
	json_escape_str(b, key);
	buf_addc(b, ':');
}

static void
explain_print_json(const struct url *u, const struct policy_request *req, const struct decision *d,
                   const struct policy *p, const char *notes[], size_t nnotes)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_addc(&b, '{');
	json_key(&b, "host", 1);
	json_escape_str(&b, u->host.name);
	json_key(&b, "host_kind", 0);
	json_escape_str(&b, u->host.kind == HOST_ADDR ? "address" : "name");
	json_key(&b, "action", 0);
	json_escape_str(&b, policy_action_name(d->action));
	json_key(&b, "rule", 0);
	json_escape_str(&b, d->rule);
	json_key(&b, "list", 0);
	json_escape_str(&b, policy_list_name(d->list));
	json_key(&b, "source", 0);
	json_escape_str(&b, d->source);
	json_key(&b, "mode", 0);
	json_escape_str(&b, config_mode_name(policy_mode(p)));
	json_key(&b, "method", 0);
	json_escape_str(&b, req->method);
	json_key(&b, "overrides", 0);
	buf_addc(&b, '[');
	for (i = 0; i < req->noverrides && i < POLICY_MAX_OVERRIDES; i++) {
		buf_adds(&b, i > 0 ? ",{" : "{");
		json_key(&b, "field", 1);
		json_escape_str(&b, req->override_fields[i]);
		json_key(&b, "method", 0);
		json_escape_str(&b, req->overrides[i]);
		buf_addc(&b, '}');
	}
	buf_addc(&b, ']');
	json_key(&b, "scheme", 0);
	json_escape_str(&b, u->scheme[0] ? u->scheme : NULL);
	json_key(&b, "port", 0);
	if (u->port != 0)
		buf_printf(&b, "%u", u->port);
	else
		buf_adds(&b, "null");
	json_key(&b, "path", 0);
	json_escape_str(&b, u->path);
	json_key(&b, "graphql", 0);
	if (d->graphql_present) {
		buf_addc(&b, '{');
		json_key(&b, "operation", 1);
		json_escape_str(&b, graphql_op_name(d->gql.op));
		json_key(&b, "name", 0);
		json_escape_str(&b, d->gql.name[0] ? d->gql.name : NULL);
		json_key(&b, "only", 0);
		buf_adds(&b, d->gql.pure ? "true" : "false");
		json_key(&b, "not_only", 0);
		json_escape_str(&b, d->gql.impure);
		buf_addc(&b, '}');
	} else
		buf_adds(&b, "null");
	json_key(&b, "reason", 0);
	json_escape_str(&b, d->reason);
	json_key(&b, "notes", 0);
	buf_addc(&b, '[');
	for (i = 0; i < nnotes; i++) {
		if (i > 0)
			buf_addc(&b, ',');
		json_escape_str(&b, notes[i]);
	}
	buf_adds(&b, "]}\n");
	fputs(buf_cstr(&b), stdout);
	buf_free(&b);
}

static int
cmd_explain(struct ctl *c, const char *input)
{
	struct policy_request req;
	struct decision d;
	struct policy *p;
	struct url u;
	struct buf errs;
	const char *err, *notes[8];
	char store[8][320];
	char *body = NULL;
	size_t nnotes, i;
	int rc = EXIT_USAGE;

	memset(&u, 0, sizeof u);
	buf_init(&errs);
	if (strlen(c->method) > 32 || !text_http_token(c->method, strlen(c->method))) {
		fprintf(stderr, "policyctl: invalid method \"%s\"\n", c->method);
		goto out;
	}
	if ((err = url_parse(input, &u)) != NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", input, err);
		goto out;
	}
	if ((p = ctl_load(c, &errs)) == NULL) {
		print_errors(buf_cstr(&errs));
		goto out;
	}
	ctl_ignored_warn(policy_config(p));
	memset(&req, 0, sizeof req);
	req.host = &u.host;
	req.method = c->method;
	/* A CONNECT names its port; without one, explain asks about HTTPS's. */
	req.port = u.port != 0 ? u.port : strcmp(c->method, "CONNECT") == 0 ? 443 : 0;
	req.query = u.query;
	for (i = 0; i < c->nheaders; i++)
		policy_request_header(&req, c->headers[i], strlen(c->headers[i]),
		                      c->headers[i] + strlen(c->headers[i]) + 1);
	if (c->body_path != NULL) {
		body = read_body(c->body_path, policy_config(p)->max_graphql_body, &req.body_len,
		                 &req.body_truncated);
		if (body == NULL) {
			policy_unref(p);
			goto out;
		}
		req.body = body;
	}
	/* Without --content-type the request has none, and is read as egressd reads it. */
	req.content_type = c->content_type;

	policy_decide(p, &req, &d);
	nnotes = explain_notes(p, input, &u, &d, notes, store, EG_NELEM(notes));
	if (c->json)
		explain_print_json(&u, &req, &d, p, notes, nnotes);
	else
		explain_print_text(input, &u, &req, &d, p, notes, nnotes);
	policy_unref(p);
	rc = 0;
out:
	free(body);
	url_free(&u);
	buf_free(&errs);
	return rc;
}

static void
json_loc(struct buf *b, const struct cfg_loc *loc)
{
	if (loc->file == NULL)
		buf_adds(b, "\"builtin\"");
	else {
		char s[512];

		snprintf(s, sizeof s, "%s:%u", loc->file, loc->line);
		json_escape_str(b, s);
	}
}

static void
json_value_str(struct buf *b, const char *key, const char *value, const struct cfg_loc *loc)
{
	json_key(b, key, 0);
	buf_adds(b, "{\"value\":");
	json_escape_str(b, value);
	buf_adds(b, ",\"source\":");
	json_loc(b, loc);
	buf_addc(b, '}');
}

static void
json_value_int(struct buf *b, const char *key, long long value, const struct cfg_loc *loc)
{
	json_key(b, key, 0);
	buf_printf(b, "{\"value\":%lld,\"source\":", value);
	json_loc(b, loc);
	buf_addc(b, '}');
}

static void
json_value_bool(struct buf *b, const char *key, int value, const struct cfg_loc *loc)
{
	json_key(b, key, 0);
	buf_printf(b, "{\"value\":%s,\"source\":", value ? "true" : "false");
	json_loc(b, loc);
	buf_addc(b, '}');
}

static void
json_list(struct buf *b, const char *key, const struct cfg_list *l)
{
	size_t i;

	json_key(b, key, 0);
	buf_addc(b, '[');
	for (i = 0; i < l->n; i++) {
		if (i > 0)
			buf_addc(b, ',');
		buf_adds(b, "{\"value\":");
		json_escape_str(b, l->items[i].value);
		buf_adds(b, ",\"source\":");
		json_loc(b, &l->items[i].loc);
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
}

/* Append each line of text as a JSON string of an array. */
static void
json_lines(struct buf *b, const char *text)
{
	const char *nl;
	int first = 1;

	buf_addc(b, '[');
	while (text != NULL && *text != '\0') {
		nl = strchr(text, '\n');
		if (!first)
			buf_addc(b, ',');
		json_escape(b, text, nl ? (size_t)(nl - text) : strlen(text));
		first = 0;
		text = nl ? nl + 1 : NULL;
	}
	buf_addc(b, ']');
}

/* "ignored": what --project-config files set and was not taken. */
static void
check_json_ignored(struct buf *b, const struct config *cfg)
{
	struct buf text;
	size_t i;

	buf_init(&text);
	json_key(b, "ignored", 0);
	buf_addc(b, '[');
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&text);
		config_ignored_text(&cfg->ignored[i], &text);
		buf_adds(b, i > 0 ? ",{" : "{");
		json_key(b, "key", 1);
		json_escape_str(b, cfg->ignored[i].key);
		json_key(b, "entry", 0);
		json_escape_str(b, cfg->ignored[i].entry);
		json_key(b, "source", 0);
		json_loc(b, &cfg->ignored[i].loc);
		json_key(b, "reason", 0);
		json_escape_str(b, buf_cstr(&text));
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
	buf_free(&text);
}

static void
check_print_json(const struct config *cfg, const char *errors, const char *warnings)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_printf(&b, "{\"ok\":%s,\"errors\":", cfg ? "true" : "false");
	json_lines(&b, errors);
	buf_adds(&b, ",\"warnings\":");
	json_lines(&b, warnings);
	if (cfg != NULL) {
		buf_adds(&b, ",\"files\":[");
		for (i = 0; i < cfg->nfiles; i++) {
			if (i > 0)
				buf_addc(&b, ',');
			json_escape_str(&b, cfg->files[i]);
		}
		buf_adds(&b, "],\"network\":{\"_\":0");
		json_value_str(&b, "mode", config_mode_name(cfg->mode), &cfg->mode_loc);
		json_value_bool(&b, "inheritGlobal", cfg->inherit_global, &cfg->inherit_global_loc);
		json_list(&b, "blocklist", &cfg->blocklist);
		json_list(&b, "allowlist", &cfg->allowlist);
		json_list(&b, "passthrough", &cfg->passthrough);
		json_list(&b, "blocklistFiles", &cfg->blocklist_files);
		json_list(&b, "allowMethods", &cfg->allow_methods);
		json_value_bool(&b, "allowGraphqlQueries", cfg->allow_graphql_queries,
		                &cfg->allow_graphql_queries_loc);
		json_value_str(&b, "onViolation",
		               cfg->on_violation == VIOLATION_FLAG ? "flag" : "block",
		               &cfg->on_violation_loc);
		json_value_bool(&b, "failClosed", cfg->fail_closed, &cfg->fail_closed_loc);
		json_value_int(&b, "proxyPort", cfg->proxy_port, &cfg->proxy_port_loc);
		json_value_int(&b, "dnsPort", cfg->dns_port, &cfg->dns_port_loc);
		json_value_int(&b, "maxGraphqlBody", (long long)cfg->max_graphql_body,
		               &cfg->max_graphql_body_loc);
		buf_adds(&b, "},\"ca\":{\"_\":0");
		json_value_bool(&b, "nameConstraints", cfg->ca_name_constraints,
		                &cfg->ca_name_constraints_loc);
		json_value_int(&b, "lifetimeHours", cfg->ca_lifetime_hours,
		               &cfg->ca_lifetime_hours_loc);
		buf_adds(&b, "},\"audit\":{\"_\":0");
		json_value_str(&b, "path", cfg->audit_path, &cfg->audit_path_loc);
		buf_addc(&b, '}');
		check_json_ignored(&b, cfg);
	}
	buf_adds(&b, "}\n");
	fputs(buf_cstr(&b), stdout);
	buf_free(&b);
}

static int
cmd_check(struct ctl *c)
{
	struct policy *p;
	struct buf errs, dump;
	const char *w;

	buf_init(&errs);
	buf_init(&dump);
	p = ctl_load(c, &errs);
	if (c->json) {
		check_print_json(p ? policy_config(p) : NULL, buf_cstr(&errs),
		                 p ? policy_warnings(p) : NULL);
	} else if (p == NULL) {
		print_errors(buf_cstr(&errs));
	} else {
		w = policy_warnings(p);
		while (w != NULL && *w != '\0') {
			const char *nl = strchr(w, '\n');
			int len = nl ? (int)(nl - w) : (int)strlen(w);

			fprintf(stderr, "policyctl: warning: %.*s\n", len, w);
			w = nl ? nl + 1 : NULL;
		}
		ctl_ignored_warn(policy_config(p));
		config_dump(policy_config(p), &dump);
		printf("configuration OK\n%s", buf_cstr(&dump));
	}
	buf_free(&errs);
	buf_free(&dump);
	if (p == NULL)
		return EXIT_USAGE;
	policy_unref(p);
	return 0;
}

/* `policyctl audit`: set by SIGINT/SIGTERM to end --follow. */
static volatile sig_atomic_t audit_stop;

static void
audit_signal_cb(int sig)
{
	(void)sig;
	audit_stop = 1;
}

static const char *const audit_event_types[] = {"http", "connect", "tls",    "tcp",
                                                "dns",  "packet",  "daemon", "policy"};

/* Append one --event value (a type, or several separated by commas). */
static int
audit_add_events(struct buf *types, const char *arg)
{
	const char *p = arg;
	size_t n, i;

	for (;;) {
		n = strcspn(p, ",");
		for (i = 0; i < EG_NELEM(audit_event_types); i++)
			if (strlen(audit_event_types[i]) == n &&
			    strncmp(audit_event_types[i], p, n) == 0)
				break;
		if (i == EG_NELEM(audit_event_types)) {
			fprintf(
			    stderr,
			    "policyctl: --event %s: unknown type (http, connect, tls, tcp, dns, "
			    "daemon, policy)\n",
			    arg);
			return -1;
		}
		if (types->len > 0)
			buf_addc(types, ',');
		buf_add(types, p, n);
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}

static int
audit_time(const char *opt, const char *arg, int64_t *ms)
{
	struct timespec now;
	const char *err;

	clock_gettime(CLOCK_REALTIME, &now);
	err = review_time_parse(arg, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, ms);
	if (err != NULL) {
		fprintf(stderr, "policyctl: %s %s: %s\n", opt, arg, err);
		return -1;
	}
	return 0;
}

/* The mode and input checks of audit's command line; -1 after saying why. */
static int
audit_check_args(int modes, int filters, int json, int html, const char *verb)
{
	if (modes > 1) {
		fprintf(stderr, "policyctl: --follow, --suggest, --verify and --html exclude each "
		                "other\n");
		return -1;
	}
	if (filters && strcmp(verb, "verify") == 0) {
		fprintf(stderr, "policyctl: --verify checks the whole file and takes no filter\n");
		return -1;
	}
	if (json && (html || strcmp(verb, "suggest") == 0)) {
		fprintf(stderr, "policyctl: --json does not apply to --%s\n", html ? "html" : verb);
		return -1;
	}
	return 0;
}

static int
audit_run(const char *verb, const char *path, const char *html, struct review_opts *o)
{
	struct sigaction sa;
	FILE *in, *out = NULL;
	int rc;

	if (strcmp(verb, "follow") == 0) {
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = audit_signal_cb;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		return review_follow(path, stdout, o, &audit_stop) == -1 ? EXIT_USAGE : 0;
	}
	if (strcmp(path, "-") == 0)
		in = stdin;
	else if ((in = fopen(path, "r")) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	if (html != NULL && (out = strcmp(html, "-") == 0 ? stdout : fopen(html, "w")) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", html, strerror(errno));
		if (in != stdin)
			fclose(in);
		return EXIT_USAGE;
	}
	if (html != NULL)
		rc = review_html(in, out, o);
	else if (strcmp(verb, "verify") == 0)
		rc = review_verify(in, stdout, o);
	else if (strcmp(verb, "suggest") == 0)
		rc = review_suggest(in, stdout, o);
	else
		rc = review_summary(in, stdout, o);
	if (in != stdin)
		fclose(in);
	if (out != NULL && out != stdout && fclose(out) != 0) {
		fprintf(stderr, "policyctl: %s: %s\n", html, strerror(errno));
		rc = -1;
	}
	if (fflush(stdout) != 0)
		rc = -1;
	return rc == -1 ? EXIT_USAGE : rc;
}

static int
cmd_audit(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"blocked", no_argument, NULL, 'B'},
	    {"flagged", no_argument, NULL, 'F'},
	    {"host", required_argument, NULL, 'H'},
	    {"since", required_argument, NULL, 's'},
	    {"until", required_argument, NULL, 'u'},
	    {"event", required_argument, NULL, 'e'},
	    {"follow", no_argument, NULL, 'f'},
	    {"suggest", no_argument, NULL, 'S'},
	    {"verify", no_argument, NULL, 'V'},
	    {"html", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct review_opts o;
	struct buf types;
	const char *verb = "summary", *html = NULL, *path, *nc;
	int ch, modes = 0, filters = 0, rc = EXIT_USAGE;

	review_opts_init(&o);
	buf_init(&types);
	optind = 2;
	while ((ch = getopt_long(argc, argv, "jBFH:s:u:e:fSVo:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			o.json = 1;
			break;
		case 'B':
		case 'F':
			o.filter.actions |= ch == 'B' ? REVIEW_ONLY_BLOCK : REVIEW_ONLY_FLAG;
			filters = 1;
			break;
		case 'H':
			o.filter.host_glob = optarg;
			filters = 1;
			break;
		case 's':
		case 'u':
			if (audit_time(ch == 's' ? "--since" : "--until", optarg,
			               ch == 's' ? &o.filter.since_ms : &o.filter.until_ms) == -1)
				goto out;
			filters = 1;
			break;
		case 'e':
			if (audit_add_events(&types, optarg) == -1)
				goto out;
			filters = 1;
			break;
		case 'f':
		case 'S':
		case 'V':
			verb = ch == 'f' ? "follow" : ch == 'S' ? "suggest" : "verify";
			modes++;
			break;
		case 'o':
			html = optarg;
			verb = "html";
			modes++;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
	}
	if (audit_check_args(modes, filters, o.json, html != NULL, verb) == -1)
		goto out;
	if (optind < argc - 1) {
		fprintf(stderr, "policyctl: audit takes at most one FILE\n");
		goto out;
	}
	path = optind < argc ? argv[optind] : "-";
	if (optind == argc && isatty(STDIN_FILENO)) {
		fprintf(stderr, "policyctl: audit needs a FILE (or - for stdin)\n");
		usage(stderr);
		goto out;
	}
	o.name = path;
	if (types.len > 0)
		o.filter.events = buf_cstr(&types);
	nc = getenv("NO_COLOR");
	o.color = isatty(STDOUT_FILENO) && (nc == NULL || *nc == '\0');
	rc = audit_run(verb, path, html, &o);
out:
	buf_free(&types);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"project-config", required_argument, NULL, 'P'},
	    {"method", required_argument, NULL, 'm'},
	    {"body", required_argument, NULL, 'b'},
	    {"content-type", required_argument, NULL, 't'},
	    {"header", required_argument, NULL, 'H'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ctl c;
	const char *cmd;
	int ch, rc, explain;

	log_init("policyctl", LOG_LVL_WARN);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "audit") == 0)
		return cmd_audit(argc, argv);
	explain = strcmp(cmd, "explain") == 0;
	if (!explain && strcmp(cmd, "check") != 0) {
		fprintf(stderr, "policyctl: unknown command \"%s\"\n", cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	memset(&c, 0, sizeof c);
	c.method = "GET";
	optind = 2;
	while ((ch = getopt_long(argc, argv, "c:m:b:t:H:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
		case 'P':
			ctl_add_file(&c, optarg, ch == 'P' ? CONFIG_FILE_UNTRUSTED : 0);
			break;
		case 'j':
			c.json = 1;
			break;
		case 'h':
			usage(stdout);
			ctl_free(&c);
			return 0;
		case 'H':
			if (!explain)
				goto bad_usage;
			if (ctl_add_header(&c, optarg) == -1) {
				ctl_free(&c);
				return EXIT_USAGE;
			}
			break;
		case 'm':
		case 'b':
		case 't':
			if (explain) {
				if (ch == 'm')
					c.method = optarg;
				else if (ch == 'b')
					c.body_path = optarg;
				else
					c.content_type = optarg;
				break;
			}
			/* FALLTHROUGH */
		default:
		bad_usage:
			usage(stderr);
			ctl_free(&c);
			return EXIT_USAGE;
		}
	}
	if ((explain && optind != argc - 1) || (!explain && optind != argc)) {
		fprintf(stderr, "policyctl: %s\n",
		        explain ? "explain needs exactly one HOST or URL"
		                : "check takes no operands");
		usage(stderr);
		ctl_free(&c);
		return EXIT_USAGE;
	}
	rc = explain ? cmd_explain(&c, argv[optind]) : cmd_check(&c);
	ctl_free(&c);
	return rc;
}
