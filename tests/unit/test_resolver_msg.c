/*
 * Unit tests for resolver/msg.c: the strict query parser against the
 * malformed queries of tests/data/resolver/queries.tsv, the replies the
 * resolver makes itself (EDE, BADVERS, truncation), and the two rewrites of
 * an upstream answer: cleaning (ECH and hints out, TTLs clamped, negative
 * TTL from the SOA) and filtering under a policy (CNAME chains, private
 * addresses, exact allowlist entries), then the proxy's address list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resolver.h"
#include "tsv.h"

static const char policy_yaml[] =
    "version: 1\n"
    "network:\n"
    "  mode: practical\n"
    "  inheritGlobal: false\n"
    "  blocklist: [\"blocked.example.test\", \"*.ads.example.test\"]\n"
    "  allowlist: [\"198.18.0.0/15\", \"trusted.example.test\", \"*.wild.example.test\"]\n";

static struct policy *
test_policy(const char *yaml)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs;

	buf_init(&errs);
	cfg = config_load_mem("test.yaml", yaml, strlen(yaml), &errs);
	assert_non_null(cfg);
	p = policy_new(cfg, &errs);
	assert_non_null(p);
	buf_free(&errs);
	return p;
}

static size_t
hex_decode(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (hex[0] != '\0' && hex[1] != '\0' && n < cap) {
		if (hex[0] == ' ') {
			hex++;
			continue;
		}
		out[n++] = (uint8_t)(text_hex_value(hex[0]) << 4 | text_hex_value(hex[1]));
		hex += 2;
	}
	return n;
}

/* Each line: hex of a query, then the rcode (-1: dropped, 0: accepted). */
static void
test_msg_parse_table(void **state)
{
	char **f, *line;
	uint8_t q[2048];
	struct msg_query mq;
	struct tsv t;
	size_t n;
	int rcode, want;
	const char *err;

	tsv_open(&t, "resolver/queries.tsv", 2, 2);
	while ((f = tsv_next(&t)) != NULL) {
		line = f[0];
		want = atoi(f[1]);
		n = hex_decode(line, q, sizeof q);
		err = msg_parse_query(q, n, &mq, &rcode);
		if (want == 0) {
			if (err != NULL)
				fail_msg("%s: %s", line, err);
		} else if (err == NULL || rcode != want) {
			fail_msg("%s: rcode %d (%s), want %d", line, rcode, err ? err : "ok", want);
		}
	}
	assert_true(t.rows >= 15);
}

/* Build a query for name/type with ldns (EDNS with size udp when udp > 0). */
static size_t
test_query(const char *name, ldns_rr_type t, uint16_t udp, uint8_t *out, size_t cap)
{
	ldns_pkt *pkt = NULL;
	uint8_t *wire;
	size_t len;

	assert_int_equal(ldns_pkt_query_new_frm_str(&pkt, name, t, LDNS_RR_CLASS_IN, LDNS_RD),
	                 LDNS_STATUS_OK);
	ldns_pkt_set_id(pkt, 0x1234);
	if (udp > 0)
		ldns_pkt_set_edns_udp_size(pkt, udp);
	assert_int_equal(ldns_pkt2wire(&wire, pkt, &len), LDNS_STATUS_OK);
	assert_true(len <= cap);
	memcpy(out, wire, len);
	free(wire);
	ldns_pkt_free(pkt);
	return len;
}

static void
test_msg_parse_fields(void **state)
{
	uint8_t q[512];
	struct msg_query mq;
	size_t n;
	int rcode;

	n = test_query("WWW.Example.TEST.", LDNS_RR_TYPE_AAAA, 1232, q, sizeof q);
	assert_null(msg_parse_query(q, n, &mq, &rcode));
	assert_int_equal(mq.id, 0x1234);
	assert_int_equal(mq.qtype, LDNS_RR_TYPE_AAAA);
	assert_string_equal(mq.name, "www.example.test");
	assert_true(mq.name_ok);
	assert_true(mq.edns);
	assert_int_equal(mq.udp_size, 1232);
	assert_memory_equal(mq.qname, "\003WWW\007Example\004TEST", 17);
	assert_memory_equal(mq.key, "\003www\007example\004test\000\000\034\000\001", 22);

	/* A label holding a dot or a space can never pass for another name. */
	memcpy(q + 12, "\013a.b cdefghi", 12);
	assert_null(msg_parse_query(q, n, &mq, &rcode));
	assert_false(mq.name_ok);
}

/* The EDE option of a reply: its info code and text, or -1. */
static int
test_reply_ede(const uint8_t *r, size_t len, char *text, size_t tlen)
{
	ldns_pkt *pkt;
	ldns_edns_option_list *ol;
	ldns_edns_option *o;
	size_t i;
	int code = -1;

	assert_int_equal(ldns_wire2pkt(&pkt, r, len), LDNS_STATUS_OK);
	ol = ldns_pkt_edns_get_option_list(pkt);
	for (i = 0; ol != NULL && i < ldns_edns_option_list_get_count(ol); i++) {
		o = ldns_edns_option_list_get_option(ol, i);
		if (ldns_edns_get_code(o) != LDNS_EDNS_EDE || ldns_edns_get_size(o) < 2)
			continue;
		code = ldns_edns_get_data(o)[0] << 8 | ldns_edns_get_data(o)[1];
		snprintf(text, tlen, "%.*s", (int)ldns_edns_get_size(o) - 2,
		         (const char *)ldns_edns_get_data(o) + 2);
	}
	ldns_pkt_free(pkt);
	return code;
}

static void
test_msg_reply_simple(void **state)
{
	uint8_t q[512], r[1024];
	struct msg_query mq;
	char text[256];
	size_t n;
	int rcode;

	n = test_query("blocked.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	assert_null(msg_parse_query(q, n, &mq, &rcode));
	n = msg_reply_simple(&mq, MSG_NXDOMAIN, MSG_EDE_BLOCKED, "blocked by rule x", r, sizeof r);
	assert_true(n > 12);
	assert_int_equal(r[3] & 0xf, MSG_NXDOMAIN);
	assert_int_equal(r[2] & 0x80, 0x80);
	assert_int_equal(test_reply_ede(r, n, text, sizeof text), MSG_EDE_BLOCKED);
	assert_string_equal(text, "blocked by rule x");

	/* No EDNS in the query: no OPT (and so no EDE) in the reply. */
	n = test_query("blocked.example.test.", LDNS_RR_TYPE_A, 0, q, sizeof q);
	assert_null(msg_parse_query(q, n, &mq, &rcode));
	n = msg_reply_simple(&mq, MSG_NXDOMAIN, MSG_EDE_BLOCKED, "x", r, sizeof r);
	assert_int_equal(r[11], 0);

	/* EDNS version 1: BADVERS, whose upper bits travel in the OPT record. */
	n = test_query("a.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	q[n - 5] = 1;
	assert_non_null(msg_parse_query(q, n, &mq, &rcode));
	assert_int_equal(rcode, MSG_RCODE_BADVERS);
	n = msg_reply_simple(&mq, (unsigned)rcode, -1, NULL, r, sizeof r);
	assert_int_equal(r[3] & 0xf, 0);
	assert_int_equal(r[n - 6], 1);
}

/* An upstream answer from zone-file lines, as ldns would receive it. */
static ldns_pkt *
test_answer(const char *qname, ldns_rr_type t, int rcode, const char *const *an,
            const char *const *ns)
{
	ldns_pkt *pkt = NULL;
	ldns_rr *rr;

	assert_int_equal(ldns_pkt_query_new_frm_str(&pkt, qname, t, LDNS_RR_CLASS_IN, LDNS_RD),
	                 LDNS_STATUS_OK);
	ldns_pkt_set_qr(pkt, 1);
	ldns_pkt_set_rcode(pkt, (uint8_t)rcode);
	for (; an != NULL && *an != NULL; an++) {
		assert_int_equal(ldns_rr_new_frm_str(&rr, *an, 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(pkt, LDNS_SECTION_ANSWER, rr);
	}
	for (; ns != NULL && *ns != NULL; ns++) {
		assert_int_equal(ldns_rr_new_frm_str(&rr, *ns, 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(pkt, LDNS_SECTION_AUTHORITY, rr);
	}
	return pkt;
}

static void
test_msg_prepare_ttl(void **state)
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
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 60);
	free(raw);
	ldns_pkt_free(pkt);

	pkt = test_answer("www.example.test.", LDNS_RR_TYPE_A, 0, huge, NULL);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, conf.max_ttl);
	free(raw);
	ldns_pkt_free(pkt);

	/* The mixed case of a 0x20 query is not kept: clients get their own. */
	pkt = test_answer("WwW.ExAmPlE.test.", LDNS_RR_TYPE_A, 0, mixed, NULL);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_true(len > 12 + 18);
	assert_memory_equal(raw + 12, "\3www\7example\4test\0", 18);
	assert_null(memmem(raw, len, "ExAmPlE", 7));
	assert_null(memmem(raw, len, "WwW", 3));
	free(raw);
	ldns_pkt_free(pkt);

	/* NXDOMAIN: min(SOA TTL, MINIMUM) (RFC 2308); without an SOA, not kept. */
	pkt = test_answer("nope.example.test.", LDNS_RR_TYPE_A, 3, NULL, soa);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 45);
	free(raw);
	ldns_pkt_free(pkt);
	pkt = test_answer("nope.example.test.", LDNS_RR_TYPE_A, 3, NULL, NULL);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(ttl, 0);
	free(raw);
	ldns_pkt_free(pkt);
}

static void
test_msg_prepare_ech(void **state)
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
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
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
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
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
test_msg_served(void **state)
{
	struct policy *p = test_policy(policy_yaml);
	struct resolver_conf conf;
	struct answer_served s;
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
		assert_int_equal(answer_prepare(pkt, &conf, &raw, &len_raw, &ttl), 0);
		snprintf(name, sizeof name, "%.*s", (int)strlen(c->qname) - 1, c->qname);
		assert_int_equal(answer_decide(p, name, &qd), 0);
		assert_int_equal(answer_served_build(raw, len_raw, p, &qd, &s), 0);
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
		answer_served_free(&s);
		free(raw);
		ldns_pkt_free(pkt);
	}
	policy_unref(p);
}

static void
test_msg_reply_served(void **state)
{
	static const char *const an[] = {"www.example.test. 60 IN A 198.18.0.1",
	                                 "www.example.test. 60 IN A 198.18.0.2", NULL};
	struct policy *p = test_policy(policy_yaml);
	struct resolver_conf conf;
	struct answer_served s;
	struct msg_query mq;
	struct decision qd;
	ldns_pkt *pkt, *got;
	uint8_t q[512], r[1024], *raw;
	size_t n, len;
	uint32_t ttl;
	int rcode;

	resolver_conf_init(&conf);
	pkt = test_answer("www.example.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(answer_decide(p, "www.example.test", &qd), 0);
	assert_int_equal(answer_served_build(raw, len, p, &qd, &s), 0);
	n = test_query("WWW.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	assert_null(msg_parse_query(q, n, &mq, &rcode));

	/* 25 seconds in the cache: TTL 35; the client's id and spelling back. */
	n = msg_reply_served(&mq, &s, 25, 1232, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_id(got), 0x1234);
	assert_int_equal(ldns_pkt_ancount(got), 2);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(got), 0)), 35);
	assert_true(ldns_pkt_edns(got));
	assert_memory_equal(r + 12, "\003WWW", 4);
	ldns_pkt_free(got);

	/* Past its TTL (served while in flight): 0, never a wrap-around. */
	n = msg_reply_served(&mq, &s, 90, 1232, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(got), 1)), 0);
	ldns_pkt_free(got);

	/* Too large for the client's limit: TC, no records. */
	n = msg_reply_served(&mq, &s, 0, 40, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_true(ldns_pkt_tc(got));
	assert_int_equal(ldns_pkt_ancount(got), 0);
	ldns_pkt_free(got);

	answer_served_free(&s);
	free(raw);
	ldns_pkt_free(pkt);
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
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	/* Unfiltered by the guard: the proxy applies it with the request's decision. */
	assert_int_equal(answer_addrs(raw, len, p, addrs, 4, &n, &d), RESOLVER_OK);
	assert_int_equal(n, 2);
	addr_format(&addrs[0], text, sizeof text);
	assert_string_equal(text, "127.0.0.1");
	addr_format(&addrs[1], text, sizeof text);
	assert_string_equal(text, "198.18.0.7");
	free(raw);
	ldns_pkt_free(pkt);

	pkt = test_answer("web.example.test.", LDNS_RR_TYPE_A, 0, cloak, NULL);
	assert_int_equal(answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	n = 0;
	assert_int_equal(answer_addrs(raw, len, p, addrs, 4, &n, &d), RESOLVER_E_BLOCKED);
	assert_string_equal(d.rule, "*.ads.example.test");
	free(raw);
	ldns_pkt_free(pkt);
	policy_unref(p);
}

static void
test_msg_check_answer(void **state)
{
	static const char *const an[] = {"www.example.test. 60 IN A 198.18.0.1", NULL};
	uint8_t key[MSG_KEY_MAX], *wire;
	ldns_pkt *pkt, *got;
	size_t key_len, len;

	assert_null(msg_name_key("www.example.test", LDNS_RR_TYPE_A, key, &key_len));
	pkt = test_answer("WWW.EXAMPLE.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	ldns_pkt_set_id(pkt, 77);
	assert_int_equal(ldns_pkt2wire(&wire, pkt, &len), LDNS_STATUS_OK);
	/* 0x20: the question must come back spelt exactly as it was sent. */
	assert_ptr_equal(msg_check_answer(wire, len, 77, key, key_len, &got), msg_err_case);
	assert_null(got);
	memcpy(key + 1, "WWW", 3);
	memcpy(key + 5, "EXAMPLE", 7);
	assert_null(msg_check_answer(wire, len, 77, key, key_len, &got));
	ldns_pkt_free(got);
	key[2] = 'w';
	assert_ptr_equal(msg_check_answer(wire, len, 77, key, key_len, &got), msg_err_case);
	key[2] = 'W';
	assert_string_equal(msg_check_answer(wire, len, 78, key, key_len, &got), "wrong id");
	assert_null(got);
	assert_null(msg_name_key("www.example.test", LDNS_RR_TYPE_AAAA, key, &key_len));
	assert_string_equal(msg_check_answer(wire, len, 77, key, key_len, &got),
	                    "answer to another question");
	assert_null(msg_name_key("wwx.example.test", LDNS_RR_TYPE_A, key, &key_len));
	assert_string_equal(msg_check_answer(wire, len, 77, key, key_len, &got),
	                    "answer to another question");
	assert_string_equal(msg_check_answer(wire, 11, 77, key, key_len, &got), "short answer");
	free(wire);
	ldns_pkt_free(pkt);
}

/*
 * ldns_wire2pkt() keeps only the last TSIG record and loses the others:
 * the answer parser keeps them all, so that none leaks, and the cleaning
 * drops them.
 */
static void
test_msg_check_tsig(void **state)
{
	static const uint8_t tsig[11] = {0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0};
	struct resolver_conf conf;
	uint8_t key[MSG_KEY_MAX], msg[128], *raw;
	ldns_pkt *got;
	size_t key_len, len, raw_len;
	uint32_t ttl;

	resolver_conf_init(&conf);
	assert_null(msg_name_key("www.example.test", LDNS_RR_TYPE_A, key, &key_len));
	memset(msg, 0, 12);
	msg[1] = 77;
	msg[2] = 0x81;
	msg[3] = 0x80;
	msg[5] = 1;
	msg[11] = 3;
	memcpy(msg + 12, key, key_len);
	len = 12 + key_len;
	memcpy(msg + len, tsig, sizeof tsig);
	memcpy(msg + len + sizeof tsig, tsig, sizeof tsig);
	memcpy(msg + len + 2 * sizeof tsig, tsig, sizeof tsig);
	assert_null(msg_check_answer(msg, len + 3 * sizeof tsig, 77, key, key_len, &got));
	assert_int_equal(ldns_rr_list_rr_count(ldns_pkt_additional(got)), 3);
	assert_int_equal(answer_prepare(got, &conf, &raw, &raw_len, &ttl), 0);
	assert_int_equal(raw[11], 0); /* no additional record left */
	free(raw);
	ldns_pkt_free(got);
	/* Two TSIGs, then a record cut short: refused, nothing kept. */
	assert_string_equal(
	    msg_check_answer(msg, len + 3 * sizeof tsig - 1, 77, key, key_len, &got),
	    "unparsable answer");
	assert_null(got);
}

static void
test_msg_name_mix(void **state)
{
	static const uint8_t all[4] = {0xff, 0xff, 0xff, 0xff}, none[4] = {0}, alt[1] = {0x55};
	uint8_t key[MSG_KEY_MAX], w[MSG_KEY_MAX];
	size_t key_len;

	assert_null(msg_name_key("a-1.example.test", LDNS_RR_TYPE_A, key, &key_len));
	memcpy(w, key, key_len);
	msg_name_mix(w, key_len - 4, all, sizeof all);
	assert_memory_equal(w, "\3A-1\7EXAMPLE\4TEST\0", key_len - 4);
	memcpy(w, key, key_len);
	msg_name_mix(w, key_len - 4, none, sizeof none);
	assert_memory_equal(w, key, key_len);
	/* Bits go to letters only, in order; without enough bits the rest stay. */
	memcpy(w, key, key_len);
	msg_name_mix(w, key_len - 4, alt, sizeof alt);
	assert_memory_equal(w, "\3A-1\7eXaMpLe\4test\0", key_len - 4);
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
		blocked = answer_decide(p, names[i], &got);
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
	    cmocka_unit_test(test_msg_parse_table),  cmocka_unit_test(test_msg_parse_fields),
	    cmocka_unit_test(test_msg_reply_simple), cmocka_unit_test(test_msg_prepare_ttl),
	    cmocka_unit_test(test_msg_prepare_ech),  cmocka_unit_test(test_msg_served),
	    cmocka_unit_test(test_msg_reply_served), cmocka_unit_test(test_answer_addrs),
	    cmocka_unit_test(test_msg_check_answer), cmocka_unit_test(test_msg_name_mix),
	    cmocka_unit_test(test_msg_check_tsig),   cmocka_unit_test(test_answer_decide_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
