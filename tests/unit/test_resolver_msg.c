/*
 * Unit tests for resolver/msg.c: the strict query parser against the
 * malformed queries of tests/data/resolver/queries.tsv, the replies the
 * resolver makes itself (EDE, BADVERS, truncation) or from a cached answer
 * (the client's id and spelling, TTLs aged), and the check of an upstream
 * answer against the question asked (id, 0x20 case, TSIG records).
 */
#include "resolver_test.h"
#include "tsv.h"

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
	struct dns_msg_query mq;
	struct tsv t;
	size_t n;
	int rcode, want;
	const char *err;

	tsv_open(&t, "resolver/queries.tsv", 2, 2);
	while ((f = tsv_next(&t)) != NULL) {
		line = f[0];
		want = atoi(f[1]);
		n = hex_decode(line, q, sizeof q);
		err = dns_msg_parse_query(q, n, &mq, &rcode);
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
	struct dns_msg_query mq;
	size_t n;
	int rcode;

	n = test_query("WWW.Example.TEST.", LDNS_RR_TYPE_AAAA, 1232, q, sizeof q);
	assert_null(dns_msg_parse_query(q, n, &mq, &rcode));
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
	assert_null(dns_msg_parse_query(q, n, &mq, &rcode));
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
	struct dns_msg_query mq;
	char text[256];
	size_t n;
	int rcode;

	n = test_query("blocked.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	assert_null(dns_msg_parse_query(q, n, &mq, &rcode));
	n = dns_msg_reply_simple(&mq, DNS_MSG_NXDOMAIN, DNS_MSG_EDE_BLOCKED, "blocked by rule x", r,
	                         sizeof r);
	assert_true(n > 12);
	assert_int_equal(r[3] & 0xf, DNS_MSG_NXDOMAIN);
	assert_int_equal(r[2] & 0x80, 0x80);
	assert_int_equal(test_reply_ede(r, n, text, sizeof text), DNS_MSG_EDE_BLOCKED);
	assert_string_equal(text, "blocked by rule x");

	/* No EDNS in the query: no OPT (and so no EDE) in the reply. */
	n = test_query("blocked.example.test.", LDNS_RR_TYPE_A, 0, q, sizeof q);
	assert_null(dns_msg_parse_query(q, n, &mq, &rcode));
	n = dns_msg_reply_simple(&mq, DNS_MSG_NXDOMAIN, DNS_MSG_EDE_BLOCKED, "x", r, sizeof r);
	assert_int_equal(r[11], 0);

	/* EDNS version 1: BADVERS, whose upper bits travel in the OPT record. */
	n = test_query("a.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	q[n - 5] = 1;
	assert_non_null(dns_msg_parse_query(q, n, &mq, &rcode));
	assert_int_equal(rcode, DNS_MSG_RCODE_BADVERS);
	n = dns_msg_reply_simple(&mq, (unsigned)rcode, -1, NULL, r, sizeof r);
	assert_int_equal(r[3] & 0xf, 0);
	assert_int_equal(r[n - 6], 1);
}

static void
test_msg_reply_served(void **state)
{
	static const char *const an[] = {"www.example.test. 60 IN A 198.18.0.1",
	                                 "www.example.test. 60 IN A 198.18.0.2", NULL};
	struct policy *p = test_policy(policy_yaml);
	struct resolver_conf conf;
	struct dns_answer_served s;
	struct dns_msg_query mq;
	struct decision qd;
	ldns_pkt *pkt, *got;
	uint8_t q[512], r[1024], *raw;
	size_t n, len;
	uint32_t ttl;
	int rcode;

	resolver_conf_init(&conf);
	pkt = test_answer("www.example.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	assert_int_equal(dns_answer_prepare(pkt, &conf, &raw, &len, &ttl), 0);
	assert_int_equal(dns_answer_decide(p, "www.example.test", &qd), 0);
	assert_int_equal(dns_answer_served_build(raw, len, p, &qd, &s), 0);
	n = test_query("WWW.example.test.", LDNS_RR_TYPE_A, 1232, q, sizeof q);
	assert_null(dns_msg_parse_query(q, n, &mq, &rcode));

	/* 25 seconds in the cache: TTL 35; the client's id and spelling back. */
	n = dns_msg_reply_served(&mq, &s, 25, 1232, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_id(got), 0x1234);
	assert_int_equal(ldns_pkt_ancount(got), 2);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(got), 0)), 35);
	assert_true(ldns_pkt_edns(got));
	assert_memory_equal(r + 12, "\003WWW", 4);
	ldns_pkt_free(got);

	/* Past its TTL (served while in flight): 0, never a wrap-around. */
	n = dns_msg_reply_served(&mq, &s, 90, 1232, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(got), 1)), 0);
	ldns_pkt_free(got);

	/* Too large for the client's limit: TC, no records. */
	n = dns_msg_reply_served(&mq, &s, 0, 40, r, sizeof r);
	assert_int_equal(ldns_wire2pkt(&got, r, n), LDNS_STATUS_OK);
	assert_true(ldns_pkt_tc(got));
	assert_int_equal(ldns_pkt_ancount(got), 0);
	ldns_pkt_free(got);

	dns_answer_served_free(&s);
	free(raw);
	ldns_pkt_free(pkt);
	policy_unref(p);
}

static void
test_msg_check_answer(void **state)
{
	static const char *const an[] = {"www.example.test. 60 IN A 198.18.0.1", NULL};
	uint8_t key[DNS_MSG_KEY_MAX], *wire;
	ldns_pkt *pkt, *got;
	size_t key_len, len;

	assert_null(dns_msg_name_key("www.example.test", LDNS_RR_TYPE_A, key, &key_len));
	pkt = test_answer("WWW.EXAMPLE.test.", LDNS_RR_TYPE_A, 0, an, NULL);
	ldns_pkt_set_id(pkt, 77);
	assert_int_equal(ldns_pkt2wire(&wire, pkt, &len), LDNS_STATUS_OK);
	/* 0x20: the question must come back spelt exactly as it was sent. */
	assert_ptr_equal(dns_msg_check_answer(wire, len, 77, key, key_len, &got), dns_msg_err_case);
	assert_null(got);
	memcpy(key + 1, "WWW", 3);
	memcpy(key + 5, "EXAMPLE", 7);
	assert_null(dns_msg_check_answer(wire, len, 77, key, key_len, &got));
	ldns_pkt_free(got);
	key[2] = 'w';
	assert_ptr_equal(dns_msg_check_answer(wire, len, 77, key, key_len, &got), dns_msg_err_case);
	key[2] = 'W';
	assert_string_equal(dns_msg_check_answer(wire, len, 78, key, key_len, &got), "wrong id");
	assert_null(got);
	assert_null(dns_msg_name_key("www.example.test", LDNS_RR_TYPE_AAAA, key, &key_len));
	assert_string_equal(dns_msg_check_answer(wire, len, 77, key, key_len, &got),
	                    "answer to another question");
	assert_null(dns_msg_name_key("wwx.example.test", LDNS_RR_TYPE_A, key, &key_len));
	assert_string_equal(dns_msg_check_answer(wire, len, 77, key, key_len, &got),
	                    "answer to another question");
	assert_string_equal(dns_msg_check_answer(wire, 11, 77, key, key_len, &got), "short answer");
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
	uint8_t key[DNS_MSG_KEY_MAX], msg[128], *raw;
	ldns_pkt *got;
	size_t key_len, len, raw_len;
	uint32_t ttl;

	resolver_conf_init(&conf);
	assert_null(dns_msg_name_key("www.example.test", LDNS_RR_TYPE_A, key, &key_len));
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
	assert_null(dns_msg_check_answer(msg, len + 3 * sizeof tsig, 77, key, key_len, &got));
	assert_int_equal(ldns_rr_list_rr_count(ldns_pkt_additional(got)), 3);
	assert_int_equal(dns_answer_prepare(got, &conf, &raw, &raw_len, &ttl), 0);
	assert_int_equal(raw[11], 0); /* no additional record left */
	free(raw);
	ldns_pkt_free(got);
	/* Two TSIGs, then a record cut short: refused, nothing kept. */
	assert_string_equal(
	    dns_msg_check_answer(msg, len + 3 * sizeof tsig - 1, 77, key, key_len, &got),
	    "unparsable answer");
	assert_null(got);
}

static void
test_msg_name_mix(void **state)
{
	static const uint8_t all[4] = {0xff, 0xff, 0xff, 0xff}, none[4] = {0}, alt[1] = {0x55};
	uint8_t key[DNS_MSG_KEY_MAX], w[DNS_MSG_KEY_MAX];
	size_t key_len;

	assert_null(dns_msg_name_key("a-1.example.test", LDNS_RR_TYPE_A, key, &key_len));
	memcpy(w, key, key_len);
	dns_msg_name_mix(w, key_len - 4, all, sizeof all);
	assert_memory_equal(w, "\3A-1\7EXAMPLE\4TEST\0", key_len - 4);
	memcpy(w, key, key_len);
	dns_msg_name_mix(w, key_len - 4, none, sizeof none);
	assert_memory_equal(w, key, key_len);
	/* Bits go to letters only, in order; without enough bits the rest stay. */
	memcpy(w, key, key_len);
	dns_msg_name_mix(w, key_len - 4, alt, sizeof alt);
	assert_memory_equal(w, "\3A-1\7eXaMpLe\4test\0", key_len - 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_msg_parse_table),  cmocka_unit_test(test_msg_parse_fields),
	    cmocka_unit_test(test_msg_reply_simple), cmocka_unit_test(test_msg_reply_served),
	    cmocka_unit_test(test_msg_check_answer), cmocka_unit_test(test_msg_name_mix),
	    cmocka_unit_test(test_msg_check_tsig),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
