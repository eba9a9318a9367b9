/*
 * Unit tests for resolver/answer.c: the two rewrites of an upstream
 * answer, cleaning (ECH and hints out, TTLs clamped, negative TTL from
 * the SOA) and filtering under a policy (CNAME chains, private addresses,
 * exact allowlist entries), then the proxy's address list, and the fast
 * path that decides plain names without host_parse().
 */
#include "resolver_test.h"

static void
test_answer_prepare_ttl(void **state)
{
	static const char *const an[] = {"www.example.test. 300 IN A 198.18.0.1",
	                                 "www.example.test. 60 IN A 198.18.0.2", NULL};
	static const char *const huge[] = {"www.example.test. 999999 IN A 198.18.0.1", NULL};
	static const char *const mixed[] = {"WwW.ExAmPlE.test. 60 IN A 198.18.0.1", NULL};
	static const char *const soa[] = {
	    "example.test. 600 IN SOA ns.example.test. a.example.test. 1 2 3 4 45", NULL};
	struct resolver_conf conf;
	ldns_pkt *pkt;
	uint8_t *raw;
	size_t len;
	uint32_t ttl;

	resolver_conf_init(&conf);
	pkt = test_answer("www.example.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 60);
	free(raw);
	ldns_pkt_free(pkt);

	pkt = test_answer("www.example.test.", LDNS_RR_TYPE_A, 0, huge, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, conf.max_ttl);
	free(raw);
	ldns_pkt_free(pkt);

	/* The mixed case of a 0x20 query is not kept: clients get their own. */
	pkt = test_answer("WwW.ExAmPlE.test.", LDNS_RR_TYPE_A, 0, mixed, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_true(len > 12 + 18);
	assert_memory_equal(raw + 12, "\3www\7example\4test\0", 18);
	assert_null(memmem(raw, len, "ExAmPlE", 7));
	assert_null(memmem(raw, len, "WwW", 3));
	free(raw);
	ldns_pkt_free(pkt);

	/* NXDOMAIN: min(SOA TTL, MINIMUM) (RFC 2308); without an SOA, not kept. */
	pkt = test_answer("nope.example.test.", LDNS_RR_TYPE_A, 3, NULL, soa);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 45);
	free(raw);
	ldns_pkt_free(pkt);
	pkt = test_answer("nope.example.test.", LDNS_RR_TYPE_A, 3, NULL, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 0);
	free(raw);
	ldns_pkt_free(pkt);
}

static void
test_answer_prepare_ech(void **state)
{
	static const char *const an[] = {"ech.example.test. 60 IN HTTPS \\# 26 "
	                                 "0001000001000302683200040004c612001400050004deadbeef",
	                                 NULL};
	static const char *const mand[] = {
	    "ech.example.test. 60 IN HTTPS \\# 17 00010000000002000500050004deadbeef", NULL};
	static const uint8_t want[] = {0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x03, 0x02, 'h', '2'};
	struct resolver_conf conf;
	ldns_pkt *pkt, *got;
	ldns_buffer *b;
	uint8_t *raw;
	size_t len;
	uint32_t ttl;

	resolver_conf_init(&conf);
	pkt = test_answer("ech.example.test.", LDNS_RR_TYPE_HTTPS, 0, an, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ldns_wire2pkt(&got, raw, len), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_ancount(got), 1);
	b = ldns_buffer_new(64);
	assert_int_equal(ldns_rr_rdata2buffer_wire(b, ldns_rr_list_rr(ldns_pkt_answer(got), 0)),
	                 LDNS_STATUS_OK);
	assert_int_equal(ldns_buffer_position(b), sizeof want);
	assert_memory_equal(ldns_buffer_begin(b), want, sizeof want);
	ldns_buffer_free(b);
	ldns_pkt_free(got);
	free(raw);
	ldns_pkt_free(pkt);

	/* ech listed as mandatory: the record cannot be kept at all. */
	pkt = test_answer("ech.example.test.", LDNS_RR_TYPE_HTTPS, 0, mand, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ldns_wire2pkt(&got, raw, len), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_ancount(got), 0);
	ldns_pkt_free(got);
	free(raw);
	ldns_pkt_free(pkt);
}

struct serve_case {
	const char *qname;
	const char *an[4];
	unsigned rcode;
	const char *rule; /* the verdict's rule, or NULL when allowed */
	int naddr;        /* address records left */
};

static const struct serve_case serve_cases[] = {
    {"www.example.test.", {"www.example.test. 60 IN A 198.18.0.1"}, 0, NULL, 1},
    {"cloak.example.test.",
     {"cloak.example.test. 60 IN CNAME t.ads.example.test.",
      "t.ads.example.test. 60 IN A 198.18.0.1"},
     3,
     "*.ads.example.test",
     0},
    {"deep.example.test.",
     {"deep.example.test. 60 IN CNAME x.example.test.",
      "x.example.test. 60 IN CNAME blocked.example.test.",
      "blocked.example.test. 60 IN A 198.18.0.1"},
     3,
     "blocked.example.test",
     0},
    {"rebind.example.test.", {"rebind.example.test. 60 IN A 127.0.0.1"}, 3, "private-address", 0},
    {"rebind6.example.test.",
     {"rebind6.example.test. 60 IN AAAA fd00::1"},
     3,
     "private-address",
     0},
    {"meta.example.test.", {"meta.example.test. 60 IN A 169.254.169.254"}, 3, "private-address", 0},
    {"mixed.example.test.",
     {"mixed.example.test. 60 IN A 10.0.0.1", "mixed.example.test. 60 IN A 198.18.0.9"},
     0,
     NULL,
     1},
    {"trusted.example.test.", {"trusted.example.test. 60 IN A 10.1.1.1"}, 0, NULL, 1},
    /* A wildcard allowlist entry does not lift the guard (DESIGN §5). */
    {"a.wild.example.test.", {"a.wild.example.test. 60 IN A 10.1.1.1"}, 3, "private-address", 0},
    {"pub.example.test.", {"pub.example.test. 60 IN A 8.8.8.8"}, 0, NULL, 1},
};

static void
test_answer_served(void **state)
{
	struct policy *p = test_policy(policy_yaml);
	struct resolver_conf conf;
	struct dns_answer_served s;
	struct decision qd;
	const struct serve_case *c;
	ldns_pkt *pkt, *got;
	uint8_t *raw, *again;
	size_t i, len, len_raw, k;
	uint32_t ttl;
	char name[256];

	resolver_conf_init(&conf);
	for (i = 0; i < EG_NELEM(serve_cases); i++) {
		c = &serve_cases[i];
		pkt = test_answer(c->qname, LDNS_RR_TYPE_A, 0, c->an, NULL);
		assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len_raw, &ttl), 0);
		snprintf(name, sizeof name, "%.*s", (int)strlen(c->qname) - 1, c->qname);
		assert_int_equal(dns_answer_decide(p, name, &qd), 0);
		assert_int_equal(dns_answer_served_build(raw, len_raw, p, &qd, &s), 0);
		if (s.rcode != c->rcode)
			fail_msg("%s: rcode %u, want %u", c->qname, s.rcode, c->rcode);
		if (c->rule == NULL)
			assert_null(s.verdict);
		else if (s.verdict == NULL || strcmp(s.verdict->rule, c->rule) != 0)
			fail_msg("%s: rule %s, want %s", c->qname,
			         s.verdict ? s.verdict->rule : "-", c->rule);
		assert_int_equal(ldns_wire2pkt(&got, s.wire, s.len), LDNS_STATUS_OK);
		for (k = 0, len = 0; k < ldns_pkt_ancount(got); k++)
			len += ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_answer(got), k)) ==
			       LDNS_RR_TYPE_A;
		if ((int)len != c->naddr)
			fail_msg("%s: %zu addresses, want %d", c->qname, len, c->naddr);
		ldns_pkt_free(got);
		/*
		 * An answer with nothing removed is served as kept, which is what
		 * ldns makes of it again; anything removed makes other bytes.
		 */
		for (k = 0; k < EG_NELEM(c->an) && c->an[k] != NULL; k++)
			;
		if (c->rule == NULL && (size_t)c->naddr == k) {
			assert_int_equal(s.len, len_raw);
			assert_memory_equal(s.wire, raw, len_raw);
			assert_int_equal(ldns_wire2pkt(&got, raw, len_raw), LDNS_STATUS_OK);
			assert_int_equal(ldns_pkt2wire(&again, got, &len), LDNS_STATUS_OK);
			assert_int_equal(len, len_raw);
			assert_memory_equal(again, raw, len_raw);
			free(again);
			ldns_pkt_free(got);
		} else if (s.len == len_raw) {
			assert_memory_not_equal(s.wire, raw, len_raw);
		}
		dns_answer_served_free(&s);
		free(raw);
		ldns_pkt_free(pkt);
	}
	policy_unref(p);
}

static void
test_answer_addrs(void **state)
{
	static const char *const an[] = {"web.example.test. 60 IN CNAME cdn.example.test.",
	                                 "other.example.test. 60 IN A 198.18.9.9",
	                                 "cdn.example.test. 60 IN A 127.0.0.1",
	                                 "cdn.example.test. 60 IN A 198.18.0.7", NULL};
	static const char *const cloak[] = {"web.example.test. 60 IN CNAME x.ads.example.test.",
	                                    "x.ads.example.test. 60 IN A 198.18.0.7", NULL};
	struct policy *p = test_policy(policy_yaml);
	struct resolver_conf conf;
	struct addr addrs[4];
	struct decision d;
	ldns_pkt *pkt;
	uint8_t *raw;
	size_t len, n = 0;
	uint32_t ttl;
	char text[64];

	resolver_conf_init(&conf);
	pkt = test_answer("web.example.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	/* Unfiltered by the guard: the proxy applies it with the request's decision. */
	assert_int_equal(dns_answer_addrs(raw, len, p, addrs, 4, &n, &d), RESOLVER_OK);
	assert_int_equal(n, 2);
	addr_format(&addrs[0], text, sizeof text);
	assert_string_equal(text, "127.0.0.1");
	addr_format(&addrs[1], text, sizeof text);
	assert_string_equal(text, "198.18.0.7");
	free(raw);
	ldns_pkt_free(pkt);

	pkt = test_answer("web.example.test.", LDNS_RR_TYPE_A, 0, cloak, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	n = 0;
	assert_int_equal(dns_answer_addrs(raw, len, p, addrs, 4, &n, &d), RESOLVER_E_BLOCKED);
	assert_string_equal(d.rule, "*.ads.example.test");
	free(raw);
	ldns_pkt_free(pkt);
	policy_unref(p);
}

/*
 * The resolver decides plain names without host_parse(): every name must
 * get the decision host_parse() and policy_decide() give it.
 */
static void
test_answer_decide_names(void **state)
{
	static const char *const names[] = {
	    "www.example.test",
	    "blocked.example.test",
	    "x.ads.example.test",
	    "trusted.example.test",
	    "a.wild.example.test",
	    "1.1.1.1",
	    "198.18.0.1",
	    "a.0x1f",
	    "a.0x",
	    "a.1e5",
	    "a.b1",
	    "abc.de",
	    "a.-",
	    "_dmarc.example.test",
	    "xn--bcher-kva.example",
	    "xn--a.example",
	    "a.xn--a.example",
	    "xn--zca.xn--a",
	    "dns.google",
	    "a..b",
	    "a.",
	    ".a",
	    "a b.test",
	    "A.test",
	    "2130706433",
	    "0x7f.1",
	    "x",
	};
	struct policy *p = test_policy(policy_yaml);
	struct policy_request req;
	struct decision got, want;
	struct host h;
	size_t i;
	int blocked;

	for (i = 0; i < EG_NELEM(names); i++) {
		blocked = dns_answer_decide(p, names[i], &got);
		if (host_parse(names[i], strlen(names[i]), &h) != NULL) {
			assert_int_equal(blocked, 1);
			assert_string_equal(got.rule, "invalid-name");
			continue;
		}
		memset(&req, 0, sizeof req);
		req.host = &h;
		policy_decide(p, &req, &want);
		if (blocked != (want.action == ACTION_BLOCK) || strcmp(got.rule, want.rule) != 0 ||
		    strcmp(got.reason, want.reason) != 0)
			fail_msg("%s: %s (%s), want %s (%s)", names[i], got.rule, got.reason,
			         want.rule, want.reason);
	}
	policy_unref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_answer_prepare_ttl),  cmocka_unit_test(test_answer_prepare_ech),
	    cmocka_unit_test(test_answer_served),       cmocka_unit_test(test_answer_addrs),
	    cmocka_unit_test(test_answer_decide_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
