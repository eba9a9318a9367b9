/*
 * Unit tests for policy/doh.c and its step in policy_decide: well-known
 * DNS-over-HTTPS names (exact, and under the domains that serve nothing
 * else) are blocked with rule doh-provider, source builtin,
 * in any mode but off; the allowlist still wins; the blocklist decides
 * first when it names the host; network.blockDohProviders: false turns the
 * list off; ordinary names are untouched. Address literals of the
 * services' published resolvers (v4, v6, v4-mapped, NAT64) are blocked
 * the same way, whatever the port; their neighbours are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_int.h"

static struct policy *
doh_policy_lists(const char *allow, const char *block, const char *extra)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs, yaml;

	buf_init(&errs);
	buf_init(&yaml);
	buf_printf(&yaml,
	           "version: 1\n"
	           "network:\n"
	           "  inheritGlobal: false\n"
	           "  allowlist: [%s]\n"
	           "  blocklist: [%s]\n"
	           "%s",
	           allow, block, extra);
	cfg = config_load_mem("doh.yaml", yaml.data, yaml.len, &errs);
	if (cfg == NULL)
		fail_msg("%s", buf_cstr(&errs));
	p = policy_new(cfg, &errs);
	assert_non_null(p);
	buf_free(&errs);
	buf_free(&yaml);
	return p;
}

static struct policy *
doh_policy(const char *extra)
{
	return doh_policy_lists("\"dns.quad9.net\"", "\"doh.opendns.com\"", extra);
}

static void
doh_decide(const struct policy *p, const char *host, const char *method, struct decision *d)
{
	struct policy_request req;
	struct host h;

	assert_null(host_parse(host, strlen(host), &h));
	memset(&req, 0, sizeof req);
	req.host = &h;
	req.method = method;
	req.port = 443;
	policy_decide(p, &req, d);
}

struct doh_case {
	const char *host;
	const char *method; /* NULL: a DNS question */
	const char *action;
	const char *rule;
};

static const struct doh_case doh_cases[] = {
    {"dns.google", NULL, "block", "doh-provider"},
    {"DNS.Google.", "GET", "block", "doh-provider"},
    {"cloudflare-dns.com", "CONNECT", "block", "doh-provider"},
    {"mozilla.cloudflare-dns.com", NULL, "block", "doh-provider"},
    {"abc123.dns.nextdns.io", "GET", "block", "doh-provider"},
    {"doh.cleanbrowsing.org", "GET", "block", "doh-provider"},
    /* The services' own addresses, as a client that skips the name writes them. */
    {"1.1.1.1", "GET", "block", "doh-provider"},
    {"1.0.0.1", "CONNECT", "block", "doh-provider"},
    {"[2606:4700:4700::1111]", "CONNECT", "block", "doh-provider"},
    {"[2606:4700:4700:0:0:0:0:1001]", "GET", "block", "doh-provider"},
    {"8.8.8.8", "POST", "block", "doh-provider"},
    {"[::ffff:8.8.4.4]", "GET", "block", "doh-provider"},
    {"[64:ff9b::909:909]", "GET", "block", "doh-provider"},
    {"[2001:4860:4860::8888]", "GET", "block", "doh-provider"},
    {"149.112.112.112", "CONNECT", "block", "doh-provider"},
    {"208.67.222.222", "GET", "block", "doh-provider"},
    {"94.140.14.14", "GET", "block", "doh-provider"},
    {"[2a10:50c0::ad1:ff]", "GET", "block", "doh-provider"},
    {"45.90.28.190", "GET", "block", "doh-provider"},
    {"194.242.2.4", "GET", "block", "doh-provider"},
    {"[2a07:e340::3]", "GET", "block", "doh-provider"},
    /* Their neighbours serve other things. */
    {"1.1.1.4", "GET", "allow", "allow-methods"},
    {"8.8.8.9", "GET", "allow", "allow-methods"},
    {"[2606:4700:4700::1114]", "GET", "allow", "allow-methods"},
    {"[64:ff9b::808:809]", "GET", "allow", "allow-methods"},
    {"45.90.29.1", "GET", "allow", "allow-methods"},
    {"93.184.215.14", "GET", "allow", "allow-methods"},
    /* The allowlist wins; the blocklist, when it names the host, decides first. */
    {"dns.quad9.net", "POST", "allow", "dns.quad9.net"},
    {"doh.opendns.com", "GET", "block", "doh.opendns.com"},
    /* Neighbours that are not DoH endpoints. */
    {"google.com", "GET", "allow", "allow-methods"},
    {"www.cleanbrowsing.org", "GET", "allow", "allow-methods"},
    {"notdns.google.example", NULL, "allow", "unlisted-host"},
    {"xdns.google", "GET", "allow", "allow-methods"},
};

static void
test_doh_decide(void **state)
{
	struct policy *p = doh_policy("");
	struct decision d;
	size_t i;

	for (i = 0; i < EG_NELEM(doh_cases); i++) {
		doh_decide(p, doh_cases[i].host, doh_cases[i].method, &d);
		if (strcmp(policy_action_name(d.action), doh_cases[i].action) != 0 ||
		    strcmp(d.rule, doh_cases[i].rule) != 0)
			fail_msg("%s %s: %s %s, want %s %s", doh_cases[i].host,
			         doh_cases[i].method ? doh_cases[i].method : "(dns)",
			         policy_action_name(d.action), d.rule, doh_cases[i].action,
			         doh_cases[i].rule);
		if (strcmp(d.rule, "doh-provider") == 0) {
			assert_string_equal(d.source, "builtin");
			assert_string_equal(policy_list_name(d.list), "doh");
			assert_non_null(strstr(d.reason, "blockDohProviders"));
		}
	}
	policy_unref(p);
}

/* What a decision on an address says: the provider and the entry. */
static void
test_doh_addr(void **state)
{
	struct policy *p = doh_policy_lists("\"8.8.4.4\"", "\"9.9.9.0/24\"", "");
	struct policy_request req;
	struct decision d;
	struct host h;
	const char *entry, *provider;

	doh_decide(p, "1.1.1.1", "GET", &d);
	assert_string_equal(d.rule, "doh-provider");
	assert_non_null(strstr(d.reason, "1.1.1.1 is an address of the Cloudflare DNS service"));
	assert_non_null(strstr(d.reason, "entry 1.1.1.1"));
	doh_decide(p, "[2606:4700:4700::1111]", "GET", &d);
	assert_non_null(strstr(d.reason, "entry 2606:4700:4700::1111"));

	/* DNS over TLS: a tunnel to port 853 is named for what it is. */
	assert_null(host_parse("1.0.0.1", 7, &h));
	memset(&req, 0, sizeof req);
	req.host = &h;
	req.method = "CONNECT";
	req.port = 853;
	policy_decide(p, &req, &d);
	assert_string_equal(d.rule, "doh-provider");

	/* An allowlist address entry wins; the blocklist decides first when it covers it. */
	doh_decide(p, "8.8.4.4", "POST", &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	assert_string_equal(d.rule, "8.8.4.4");
	doh_decide(p, "9.9.9.9", "GET", &d);
	assert_int_equal(d.action, ACTION_BLOCK);
	assert_string_equal(d.rule, "9.9.9.0/24");
	policy_unref(p);

	/* The matcher alone: names carry no provider, addresses do. */
	assert_null(host_parse("dns.google", 10, &h));
	provider = "x";
	assert_true(doh_match(&h, &entry, &provider));
	assert_string_equal(entry, "dns.google");
	assert_null(provider);
	assert_null(host_parse("9.9.9.11", 8, &h));
	assert_true(doh_match(&h, &entry, &provider));
	assert_string_equal(entry, "9.9.9.11");
	assert_string_equal(provider, "Quad9");
	assert_true(doh_match(&h, &entry, NULL));
}

static void
test_doh_off(void **state)
{
	struct policy *p = doh_policy("  blockDohProviders: false\n");
	struct decision d;

	doh_decide(p, "dns.google", "GET", &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	assert_string_equal(d.rule, "allow-methods");
	doh_decide(p, "mozilla.cloudflare-dns.com", NULL, &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	doh_decide(p, "1.1.1.1", "GET", &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	assert_string_equal(d.rule, "allow-methods");
	policy_unref(p);
}

static void
test_doh_strict(void **state)
{
	struct policy *p = doh_policy("  mode: strict\n");
	struct decision d;

	/* Named for what it is rather than the strict default. */
	doh_decide(p, "dns.google", NULL, &d);
	assert_string_equal(d.rule, "doh-provider");
	doh_decide(p, "dns.quad9.net", NULL, &d);
	assert_int_equal(d.action, ACTION_ALLOW);
	doh_decide(p, "[2620:fe::fe]", "CONNECT", &d);
	assert_string_equal(d.rule, "doh-provider");
	policy_unref(p);
}

static void
test_doh_config(void **state)
{
	struct policy *p = doh_policy("  blockDohProviders: false\n");
	struct buf out, errs;
	struct config *cfg;

	buf_init(&out);
	config_dump(policy_config(p), &out);
	assert_non_null(strstr(buf_cstr(&out), "  blockDohProviders: false  # doh.yaml:6\n"));
	buf_free(&out);
	policy_unref(p);

	buf_init(&errs);
	cfg = config_load_mem("b.yaml", "network: {blockDohProviders: 1}\n", 32, &errs);
	assert_null(cfg);
	assert_non_null(strstr(buf_cstr(&errs), "b.yaml:1:30: blockDohProviders"));
	buf_free(&errs);
	assert_true(doh_count() > 100);
	assert_null(doh_check());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_doh_decide), cmocka_unit_test(test_doh_addr),
	    cmocka_unit_test(test_doh_off),    cmocka_unit_test(test_doh_strict),
	    cmocka_unit_test(test_doh_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
