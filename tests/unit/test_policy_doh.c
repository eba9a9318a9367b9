/*
 * Unit tests for policy/doh.c and its step in policy_decide: well-known
 * DNS-over-HTTPS names (exact, and under the domains that serve nothing
 * else) are blocked with rule doh-provider, source builtin,
 * in any mode but off; the allowlist still wins; the blocklist decides
 * first when it names the host; network.blockDohProviders: false turns the
 * list off; ordinary names are untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static struct policy *
doh_policy(const char *extra)
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
	           "  allowlist: [\"dns.quad9.net\"]\n"
	           "  blocklist: [\"doh.opendns.com\"]\n"
	           "%s",
	           extra);
	cfg = config_load_mem("doh.yaml", yaml.data, yaml.len, &errs);
	if (cfg == NULL)
		fail_msg("%s", buf_cstr(&errs));
	p = policy_new(cfg, &errs);
	assert_non_null(p);
	buf_free(&errs);
	buf_free(&yaml);
	return p;
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
    /* Addresses are matched by address entries only. */
    {"1.1.1.1", "GET", "allow", "allow-methods"},
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
			assert_string_equal(d.list, "doh");
			assert_non_null(strstr(d.reason, "blockDohProviders"));
		}
	}
	policy_unref(p);
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
	assert_true(doh_count() > 40);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_doh_decide),
	    cmocka_unit_test(test_doh_off),
	    cmocka_unit_test(test_doh_strict),
	    cmocka_unit_test(test_doh_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
