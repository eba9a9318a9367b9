/*
 * Engine scenarios for the resolver: a client's query through parse,
 * decision, cache, forwarding and the answer filters to what the client
 * and the audit log get, with the upstream side scripted byte by byte and
 * time moved by hand (resolver_harness.h explains the harness and how to
 * write a scenario). Each scenario states the behaviour it pins down, as
 * docs/resolver.md promises it.
 */
#include "resolver_harness.h"

#define WWW "www.example.test"

static const char *const an_www[] = {WWW ". 300 IN A 93.184.216.34", NULL};

/* The first question of a scenario: asked, forwarded to upstream 0, answered with an. */
static void
eng_resolve(struct eng *h, const char *name, const char *const *an, const char *addrs)
{
	struct eng_query q;
	ldns_pkt *pkt;
	char got[256];
	json_t *j;
	uint16_t id;

	id = eng_ask(h, name, LDNS_RR_TYPE_A);
	eng_up_recv(h, 0, &q);
	eng_up_answer(h, &q, LDNS_RCODE_NOERROR, an, 0);
	pkt = eng_client_recv(h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	eng_addrs(pkt, got, sizeof got);
	assert_string_equal(got, addrs);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(h, name, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
}

/* The client got nothing (yet). */
static void
eng_client_none(struct eng *h)
{
	struct pollfd p = {h->client, POLLIN, 0};

	eng_settle(h);
	assert_int_equal(poll(&p, 1, 0), 0);
}

/*
 * An allowed name goes upstream with RD and EDNS (1232), its name in the
 * 0x20 mix of case; the answer reaches the client with the client's id
 * and spelling, and one dns audit line says allow, NOERROR.
 */
static void
test_forward_answer(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	const ldns_rr *rr;
	char got[256], *s;
	json_t *j;
	uint16_t id;

	eng_init(&h);
	eng_start(&h);
	id = eng_ask(&h, "Www.Example.TEST", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	assert_true(strcasecmp(q.qname, WWW ".") == 0);
	assert_int_equal(q.qtype, LDNS_RR_TYPE_A);
	assert_true(ldns_pkt_rd(q.pkt));
	assert_int_equal(ldns_pkt_edns_udp_size(q.pkt), 1232);
	eng_quiet(&h); /* no answer, no audit line before the upstream's */

	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_true(ldns_pkt_qr(pkt));
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	eng_addrs(pkt, got, sizeof got);
	assert_string_equal(got, "93.184.216.34");
	rr = ldns_rr_list_rr(ldns_pkt_question(pkt), 0);
	s = ldns_rdf2str(ldns_rr_owner(rr));
	assert_string_equal(s, "Www.Example.TEST.");
	free(s);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(pkt), 0)), 300);
	assert_int_equal(eng_ede(pkt, got, sizeof got), -1);
	ldns_pkt_free(pkt);

	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	assert_string_equal(eng_field(j, "qtype"), "A");
	assert_string_equal(eng_field(j, "scheme"), "udp");
	assert_string_equal(eng_field(j, "mode"), "practical");
	assert_true(strncmp(eng_field(j, "client"), "127.0.0.1:", 10) == 0);
	json_decref(j);
	eng_query_free(&q);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Asked again, the name is answered from the cache: nothing goes
 * upstream, the TTL counts down with the time in the cache, the client's
 * own spelling comes back, and the audit line says cached.
 */
static void
test_cache_hit(void **state)
{
	struct eng h;
	ldns_pkt *pkt;
	char *s;
	json_t *j;
	uint16_t id;

	eng_init(&h);
	eng_start(&h);
	eng_resolve(&h, WWW, an_www, "93.184.216.34");

	eng_advance(&h, 100 * 1000);
	id = eng_ask(&h, "WWW.example.test", LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(pkt), 0)), 200);
	s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(pkt), 0)));
	assert_string_equal(s, "WWW.example.test.");
	free(s);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 1);
	json_decref(j);
	eng_quiet(&h); /* in particular, nothing upstream */
	eng_stop(&h);
}

/* An answer is kept for its TTL and not a second longer. */
static void
test_ttl_expiry(void **state)
{
	static const char *const an60[] = {WWW ". 60 IN A 93.184.216.34", NULL};
	static const char *const an_new[] = {WWW ". 60 IN A 93.184.216.35", NULL};
	struct eng h;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	eng_start(&h);
	eng_resolve(&h, WWW, an60, "93.184.216.34");

	eng_advance(&h, 59 * 1000 + 999);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(pkt), 0)), 1);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 1);
	json_decref(j);
	eng_quiet(&h);

	/* 60 s after it came: gone, asked upstream again. */
	eng_advance(&h, 1);
	eng_resolve(&h, WWW, an_new, "93.184.216.35");
	eng_quiet(&h);
	eng_stop(&h);
}

/* Check a reply blocked by a rule: NXDOMAIN, no records, EDE 15 naming the rule. */
static void
eng_expect_blocked(ldns_pkt *pkt, uint16_t id, const char *ede_prefix)
{
	char text[256];

	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NXDOMAIN);
	assert_int_equal(ldns_pkt_ancount(pkt), 0);
	assert_int_equal(eng_ede(pkt, text, sizeof text), 15);
	assert_true(strncmp(text, ede_prefix, strlen(ede_prefix)) == 0);
}

/*
 * A blocked name in the CNAME chain blocks the whole answer, from the
 * upstream and then from the cache, with the blocked name's rule.
 */
static void
test_cname_cloak(void **state)
{
	static const char *const an[] = {WWW ". 300 IN CNAME t.ads.example.test.",
	                                 "t.ads.example.test. 300 IN A 93.184.216.34", NULL};
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	json_t *j;
	uint16_t id;
	int round;

	eng_init(&h);
	eng_start(&h);
	for (round = 0; round < 2; round++) {
		id = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
		if (round == 0) {
			eng_up_recv(&h, 0, &q);
			eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an, 0);
			eng_query_free(&q);
		}
		pkt = eng_client_recv(&h);
		eng_expect_blocked(pkt, id, "blocked by rule *.ads.example.test (");
		ldns_pkt_free(pkt);
		j = eng_audit_expect(&h, WWW, "block", "NXDOMAIN", round);
		assert_string_equal(eng_field(j, "rule"), "*.ads.example.test");
		assert_non_null(strstr(eng_field(j, "reason"), "t.ads.example.test"));
		json_decref(j);
		eng_quiet(&h);
	}
	eng_stop(&h);
}

/*
 * The address guard on answers: a public name on a private address
 * alone is blocked (rule private-address); beside a public address the
 * private one is dropped and EDE 15 counts it; an exact allowlist entry
 * for the name lifts the guard.
 */
static void
test_private_address(void **state)
{
	static const char *const priv[] = {WWW ". 300 IN A 10.0.0.1", NULL};
	static const char *const mixed[] = {"mixed.example.test. 300 IN A 93.184.216.34",
	                                    "mixed.example.test. 300 IN A 192.168.1.1", NULL};
	static const char *const trusted[] = {"trusted.example.test. 300 IN A 10.0.0.1", NULL};
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	char text[256];
	json_t *j;
	uint16_t id;

	eng_init(&h);
	eng_start(&h);
	id = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, priv, 0);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	eng_expect_blocked(pkt, id, "blocked by rule private-address (");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "block", "NXDOMAIN", 0);
	assert_string_equal(eng_field(j, "rule"), "private-address");
	json_decref(j);

	id = eng_ask(&h, "mixed.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, mixed, 0);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	eng_addrs(pkt, text, sizeof text);
	assert_string_equal(text, "93.184.216.34");
	assert_int_equal(eng_ede(pkt, text, sizeof text), 15);
	assert_string_equal(text, "1 address not globally reachable removed");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "mixed.example.test", "allow", "NOERROR", 0);
	json_decref(j);

	eng_resolve(&h, "trusted.example.test", trusted, "10.0.0.1");
	eng_quiet(&h);
	eng_stop(&h);
}

/* A blocked name never leaves: NXDOMAIN with EDE 15 at once, nothing upstream. */
static void
test_blocked_name(void **state)
{
	struct eng h;
	ldns_pkt *pkt;
	json_t *j;
	uint16_t id;

	eng_init(&h);
	eng_start(&h);
	id = eng_ask(&h, "blocked.example.test", LDNS_RR_TYPE_AAAA);
	pkt = eng_client_recv(&h);
	eng_expect_blocked(pkt, id, "blocked by rule blocked.example.test (");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "blocked.example.test", "block", "NXDOMAIN", 0);
	assert_string_equal(eng_field(j, "rule"), "blocked.example.test");
	assert_string_equal(eng_field(j, "qtype"), "AAAA");
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A try unanswered for its timeout (1000 ms here, an upstream not heard
 * from yet) is followed by a try at the next upstream, not a moment
 * before; that upstream answers, and the next question goes to it first.
 */
static void
test_timeout_next_upstream(void **state)
{
	struct eng h;
	struct eng_query q0, q1;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q0);
	eng_advance(&h, 999);
	eng_quiet(&h);
	eng_advance(&h, 1);
	eng_up_recv(&h, 1, &q1);
	assert_true(strcasecmp(q1.qname, WWW ".") == 0);
	eng_quiet(&h);
	eng_up_answer(&h, &q1, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q0);
	eng_query_free(&q1);

	eng_ask(&h, "next.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 1, &q1);
	assert_true(strcasecmp(q1.qname, "next.example.test.") == 0);
	eng_query_free(&q1);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Earlier tries keep listening: a slow answer to the first try, arriving
 * after the second try went out, is as good as a quick one, and the
 * second try's answer after it changes nothing. The upstream that
 * answered is asked first next time, though it was slow.
 */
static void
test_timeout_slow_answer(void **state)
{
	struct eng h;
	struct eng_query q0, q1;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q0);
	eng_advance(&h, 1000);
	eng_up_recv(&h, 1, &q1);
	eng_up_answer(&h, &q0, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_up_answer(&h, &q1, LDNS_RCODE_NOERROR, an_www, 0);
	eng_quiet(&h);
	eng_query_free(&q0);
	eng_query_free(&q1);

	eng_ask(&h, "next.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q0);
	assert_true(strcasecmp(q0.qname, "next.example.test.") == 0);
	eng_query_free(&q0);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Nobody answers: two tries per upstream, a timeout apart, then the
 * question waits for its deadline (4 s) and the client gets SERVFAIL with
 * EDE 22, audited with the error.
 */
static void
test_timeout_servfail(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	char text[256];
	json_t *j;
	uint16_t id;
	int i;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	id = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	for (i = 0; i < 4; i++) {
		eng_up_recv(&h, i % 2, &q);
		eng_query_free(&q);
		eng_advance(&h, 999);
		eng_quiet(&h);
		eng_advance(&h, 1);
	}
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_SERVFAIL);
	assert_int_equal(eng_ede(pkt, text, sizeof text), 22);
	assert_string_equal(text, "no upstream answered");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "SERVFAIL", 0);
	assert_string_equal(eng_field(j, "error"), "no upstream answered");
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/* An upstream's SERVFAIL moves on to the next upstream at once; it is never kept. */
static void
test_upstream_servfail_next(void **state)
{
	struct eng h;
	struct eng_query q0, q1;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q0);
	eng_up_answer(&h, &q0, LDNS_RCODE_SERVFAIL, NULL, 0);
	eng_up_recv(&h, 1, &q1);
	eng_client_none(&h);
	eng_up_answer(&h, &q1, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q0);
	eng_query_free(&q1);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Datagrams that do not answer the question are ignored, and the try
 * goes on listening: too short, no question, records cut off, the wrong
 * id, and a right answer sent from another port (the try's socket is
 * connected to its upstream).
 */
static void
test_bad_answers_ignored(void **state)
{
	struct eng h;
	struct eng_query q;
	uint8_t b[4096];
	ldns_pkt *pkt;
	json_t *j;
	size_t len;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	len = eng_answer_wire(&q, LDNS_RCODE_NOERROR, an_www, NULL, 0, b, sizeof b);

	eng_up_send(&h, &q, (const uint8_t *)"\x12\x34\x81", 3);
	eng_client_none(&h);
	eng_up_send(&h, &q, b, 12); /* the header alone: no question */
	eng_client_none(&h);
	eng_up_send(&h, &q, b, len - 2); /* the last record cut short */
	eng_client_none(&h);
	b[0] ^= 0x5a; /* the wrong id */
	eng_up_send(&h, &q, b, len);
	eng_client_none(&h);
	b[0] ^= 0x5a;
	assert_int_equal(sendto(h.up[1].udp, b, len, 0, (struct sockaddr *)&q.from, q.from_len),
	                 (ssize_t)len);
	eng_client_none(&h);
	eng_quiet(&h);

	eng_up_send(&h, &q, b, len);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * An answer whose question differs from the one sent in case only (0x20)
 * is refused, the try it hit stops listening, and the same upstream is
 * asked again at once, all lowercase, from a new socket.
 */
static void
test_wrong_case(void **state)
{
	struct eng h;
	struct eng_query q, q2;
	uint8_t b[4096];
	ldns_pkt *pkt;
	json_t *j;
	size_t len;

	eng_init(&h);
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	len = eng_answer_wire(&q, LDNS_RCODE_NOERROR, an_www, NULL, 0, b, sizeof b);
	b[13] ^= 0x20; /* the first letter of the question, in the other case */
	eng_up_send(&h, &q, b, len);
	eng_client_none(&h);

	eng_up_recv(&h, 0, &q2);
	assert_string_equal(q2.qname, WWW ".");
	/* The right answer to the first try comes too late: its socket is closed. */
	b[13] ^= 0x20;
	eng_up_send(&h, &q, b, len);
	eng_client_none(&h);

	eng_up_answer(&h, &q2, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_query_free(&q2);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Over TCP: length-prefixed queries, pipelined, answered as their answers
 * come (here the second first), audited with scheme tcp.
 */
static void
test_tcp_query(void **state)
{
	static const char *const an_b[] = {"b.example.test. 300 IN A 93.184.216.35", NULL};
	struct eng h;
	struct eng_query qa, qb;
	ldns_pkt *pkt;
	char got[256];
	json_t *j;
	uint16_t ida, idb;
	int fd;

	eng_init(&h);
	eng_start(&h);
	fd = eng_tcp_open(&h);
	ida = eng_tcp_ask(&h, fd, WWW, LDNS_RR_TYPE_A);
	idb = eng_tcp_ask(&h, fd, "b.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &qa);
	eng_up_recv(&h, 0, &qb);
	assert_true(strcasecmp(qa.qname, WWW ".") == 0);
	assert_true(strcasecmp(qb.qname, "b.example.test.") == 0);

	eng_up_answer(&h, &qb, LDNS_RCODE_NOERROR, an_b, 0);
	pkt = eng_tcp_recv(&h, fd);
	assert_int_equal(ldns_pkt_id(pkt), idb);
	eng_addrs(pkt, got, sizeof got);
	assert_string_equal(got, "93.184.216.35");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "b.example.test", "allow", "NOERROR", 0);
	assert_string_equal(eng_field(j, "scheme"), "tcp");
	json_decref(j);

	eng_up_answer(&h, &qa, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_tcp_recv(&h, fd);
	assert_int_equal(ldns_pkt_id(pkt), ida);
	eng_addrs(pkt, got, sizeof got);
	assert_string_equal(got, "93.184.216.34");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);

	eng_query_free(&qa);
	eng_query_free(&qb);
	close(fd);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A truncated answer (TC) is asked again over TCP from the same upstream,
 * with the same id and spelling; the full answer reaches the client.
 */
static void
test_truncated_tcp_upstream(void **state)
{
	static const char *const many[] = {
	    WWW ". 300 IN A 93.184.216.1", WWW ". 300 IN A 93.184.216.2",
	    WWW ". 300 IN A 93.184.216.3", WWW ". 300 IN A 93.184.216.4",
	    WWW ". 300 IN A 93.184.216.5", NULL};
	struct eng h;
	struct eng_query q, qt;
	ldns_pkt *pkt;
	char got[256];
	json_t *j;

	eng_init(&h);
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, NULL, 1);
	eng_up_accept(&h, 0, &qt);
	assert_int_equal(qt.id, q.id);
	assert_string_equal(qt.qname, q.qname);
	eng_client_none(&h);

	eng_up_answer(&h, &qt, LDNS_RCODE_NOERROR, many, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	eng_addrs(pkt, got, sizeof got);
	assert_string_equal(got, "93.184.216.1 93.184.216.2 93.184.216.3 93.184.216.4 "
	                         "93.184.216.5");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_query_free(&qt);
	eng_quiet(&h);
	eng_stop(&h);
}

/* Clients asking a question already in flight wait for the one upstream query. */
static void
test_coalesce(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	json_t *j;
	uint16_t id1, id2;

	eng_init(&h);
	eng_start(&h);
	id1 = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	id2 = eng_ask(&h, "WWW.EXAMPLE.TEST", LDNS_RR_TYPE_A);
	eng_quiet(&h);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id1);
	ldns_pkt_free(pkt);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id2);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A policy that changes while a question is out decides its clients
 * again when the answer comes; cached answers are filtered again too.
 */
static void
test_policy_swap(void **state)
{
	static const char *const yaml = "version: 1\n"
	                                "network:\n"
	                                "  mode: practical\n"
	                                "  inheritGlobal: false\n"
	                                "  blocklist: [\"*.example.test\"]\n";
	struct eng h;
	struct eng_query q;
	struct policy *p;
	struct config *cfg;
	struct buf errs;
	ldns_pkt *pkt;
	json_t *j;
	uint16_t id;

	eng_init(&h);
	eng_start(&h);
	eng_resolve(&h, "cached.example.test",
	            (const char *const[]){"cached.example.test. 300 IN A 93.184.216.34", NULL},
	            "93.184.216.34");
	id = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);

	buf_init(&errs);
	cfg = config_load_mem("swap.yaml", yaml, strlen(yaml), &errs);
	assert_non_null(cfg);
	p = policy_new(cfg, &errs);
	assert_non_null(p);
	buf_free(&errs);
	resolver_set_policy(h.r, p);
	policy_unref(p);

	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	eng_expect_blocked(pkt, id, "blocked by rule *.example.test (");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "block", "NXDOMAIN", 0);
	json_decref(j);

	id = eng_ask(&h, "cached.example.test", LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	eng_expect_blocked(pkt, id, "blocked by rule *.example.test (");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "cached.example.test", "block", "NXDOMAIN", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * The retransmission timeout follows the measured round trips (RFC 6298):
 * an answer in 10 ms brings it down to its floor of 100 ms; each timeout
 * doubles it until an answer brings a new measurement.
 */
static void
test_rto(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_advance(&h, 10);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);

	/* 100 ms, then 200 ms, then the tries are used up until the deadline. */
	eng_ask(&h, "slow.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_query_free(&q);
	eng_advance(&h, 99);
	eng_quiet(&h);
	eng_advance(&h, 1);
	eng_up_recv(&h, 0, &q);
	eng_query_free(&q);
	eng_advance(&h, 4000);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_SERVFAIL);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "slow.example.test", "allow", "SERVFAIL", 0);
	json_decref(j);
	eng_quiet(&h);

	/* Two timeouts since the last answer: 400 ms now. */
	eng_ask(&h, "next.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_query_free(&q);
	eng_advance(&h, 399);
	eng_quiet(&h);
	eng_advance(&h, 1);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR,
	              (const char *const[]){"next.example.test. 300 IN A 93.184.216.34", NULL}, 0);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "next.example.test", "allow", "NOERROR", 0);
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * Malformed queries: FORMERR for a header whose question is missing;
 * nothing back for a response sent to the resolver, or for bytes short
 * of a header. Each is audited as a block with rule malformed-query.
 */
static void
test_malformed_query(void **state)
{
	static const uint8_t no_question[12] = {0x42, 0x42, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	static const uint8_t response[12] = {0x43, 0x43, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0, 0};
	struct eng h;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	eng_start(&h);
	eng_client_send(&h, no_question, sizeof no_question);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), 0x4242);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_FORMERR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "", "block", "FORMERR", 0);
	assert_string_equal(eng_field(j, "rule"), "malformed-query");
	assert_string_equal(eng_field(j, "source"), "builtin");
	assert_true(strlen(eng_field(j, "error")) > 0);
	json_decref(j);

	eng_client_send(&h, response, sizeof response);
	eng_client_none(&h);
	j = eng_audit_expect(&h, "", "block", "", 0);
	assert_string_equal(eng_field(j, "rule"), "malformed-query");
	json_decref(j);

	eng_client_send(&h, response, 5);
	eng_client_none(&h);
	j = eng_audit_expect(&h, "", "block", "", 0);
	assert_string_equal(eng_field(j, "rule"), "malformed-query");
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/* In off mode nothing resolves: REFUSED with EDE 15, nothing upstream. */
static void
test_off_mode(void **state)
{
	struct eng h;
	ldns_pkt *pkt;
	char text[256];
	json_t *j;

	eng_init(&h);
	h.yaml = "version: 1\n"
	         "network:\n"
	         "  mode: off\n"
	         "  inheritGlobal: false\n";
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_REFUSED);
	assert_int_equal(eng_ede(pkt, text, sizeof text), 15);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "block", "REFUSED", 0);
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A negative answer is kept for the SOA's TTL or its MINIMUM, whichever
 * is smaller (RFC 2308): 45 s here, and not a millisecond more.
 */
static void
test_negative_cache(void **state)
{
	static const char *const soa[] = {
	    "example.test. 600 IN SOA ns.example.test. a.example.test. 1 2 3 4 45", NULL};
	struct eng h;
	struct eng_query q;
	uint8_t b[1024];
	ldns_pkt *pkt;
	char text[256];
	json_t *j;
	size_t len;

	eng_init(&h);
	eng_start(&h);
	eng_ask(&h, "none.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	len = eng_answer_wire(&q, LDNS_RCODE_NXDOMAIN, NULL, soa, 0, b, sizeof b);
	eng_up_send(&h, &q, b, len);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NXDOMAIN);
	assert_int_equal(eng_ede(pkt, text, sizeof text), -1);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "none.example.test", "allow", "NXDOMAIN", 0);
	json_decref(j);

	eng_advance(&h, 44 * 1000 + 999);
	eng_ask(&h, "none.example.test", LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NXDOMAIN);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "none.example.test", "allow", "NXDOMAIN", 1);
	json_decref(j);
	eng_quiet(&h);

	eng_advance(&h, 1);
	eng_ask(&h, "none.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_query_free(&q);
	eng_client_none(&h);
	eng_stop(&h); /* with the question still out: resolver_free ends it */
}

/*
 * An answer larger than a client without EDNS can take (512 bytes) goes
 * back truncated, without records; the client asks again over TCP and
 * gets it whole, from the cache.
 */
static void
test_truncated_to_client(void **state)
{
	const char *an[41];
	char lines[40][64], got[1024];
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	json_t *j;
	int i, fd;

	for (i = 0; i < 40; i++) {
		snprintf(lines[i], sizeof lines[i], WWW ". 300 IN A 93.184.216.%d", i + 1);
		an[i] = lines[i];
	}
	an[40] = NULL;
	eng_init(&h);
	h.edns = 0;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an, 0);
	eng_query_free(&q);
	pkt = eng_client_recv(&h);
	assert_true(ldns_pkt_tc(pkt));
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	assert_int_equal(ldns_pkt_ancount(pkt), 0);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);

	fd = eng_tcp_open(&h);
	eng_tcp_ask(&h, fd, WWW, LDNS_RR_TYPE_A);
	pkt = eng_tcp_recv(&h, fd);
	assert_false(ldns_pkt_tc(pkt));
	assert_int_equal(ldns_pkt_ancount(pkt), 40);
	eng_addrs(pkt, got, sizeof got);
	assert_true(strncmp(got, "93.184.216.1 93.184.216.2 ", 26) == 0);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 1);
	assert_string_equal(eng_field(j, "scheme"), "tcp");
	json_decref(j);
	close(fd);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A TCP client that shuts its side after asking still gets its answer,
 * then the resolver closes the connection.
 */
static void
test_tcp_half_close(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	uint8_t b[16];
	json_t *j;
	uint16_t id;
	int fd;

	eng_init(&h);
	eng_start(&h);
	fd = eng_tcp_open(&h);
	id = eng_tcp_ask(&h, fd, WWW, LDNS_RR_TYPE_A);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	eng_up_recv(&h, 0, &q);
	eng_settle(&h);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	eng_query_free(&q);
	pkt = eng_tcp_recv(&h, fd);
	assert_int_equal(ldns_pkt_id(pkt), id);
	ldns_pkt_free(pkt);
	eng_wait(&h, fd);
	assert_int_equal(recv(fd, b, sizeof b, 0), 0);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	close(fd);
	eng_quiet(&h);
	eng_stop(&h);
}

/*
 * A TCP client gone (reset) while its query is out: its query is dropped
 * without an answer or an audit line, and the question goes on to fill
 * the cache for the next client.
 */
static void
test_tcp_client_gone(void **state)
{
	struct linger lg = {1, 0};
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	json_t *j;
	int fd;

	eng_init(&h);
	eng_start(&h);
	fd = eng_tcp_open(&h);
	eng_tcp_ask(&h, fd, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
	close(fd); /* a reset */
	eng_settle(&h);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	eng_query_free(&q);
	eng_quiet(&h);

	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 1);
	json_decref(j);
	eng_quiet(&h);
	eng_stop(&h);
}

/* A truncated answer whose upstream refuses TCP moves on to the next upstream. */
static void
test_upstream_tcp_refused(void **state)
{
	struct eng h;
	struct eng_query q0, q1;
	ldns_pkt *pkt;
	json_t *j;

	eng_init(&h);
	h.nup = 2;
	eng_start(&h);
	close(h.up[0].tcp);
	h.up[0].tcp = -1;
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q0);
	eng_up_answer(&h, &q0, LDNS_RCODE_NOERROR, NULL, 1);
	eng_up_recv(&h, 1, &q1);
	eng_up_answer(&h, &q1, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q0);
	eng_query_free(&q1);
	eng_quiet(&h);
	eng_stop(&h);
}

/* Past max_pending questions in flight, a new one gets SERVFAIL with EDE 23 at once. */
static void
test_too_many_pending(void **state)
{
	struct eng h;
	struct eng_query q;
	ldns_pkt *pkt;
	char text[256];
	json_t *j;
	uint16_t id;

	eng_init(&h);
	h.conf.max_pending = 1;
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	id = eng_ask(&h, "b.example.test", LDNS_RR_TYPE_A);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_SERVFAIL);
	assert_int_equal(eng_ede(pkt, text, sizeof text), 23);
	assert_string_equal(text, "too many questions in flight");
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, "b.example.test", "allow", "SERVFAIL", 0);
	assert_string_equal(eng_field(j, "error"), "too many questions in flight");
	json_decref(j);
	eng_quiet(&h);

	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);
	eng_quiet(&h);
	eng_stop(&h);
}

struct eng_lookup {
	int called;
	int err;
	char addrs[256];
	char rule[300];
};

static void
eng_lookup_cb(void *arg, const struct resolver_answer *a)
{
	struct eng_lookup *l = arg;
	char t[INET6_ADDRSTRLEN];
	size_t i, n = 0;

	l->called++;
	l->err = a->err;
	l->addrs[0] = '\0';
	for (i = 0; i < a->naddrs; i++) {
		inet_ntop(a->addrs[i].af, a->addrs[i].a, t, sizeof t);
		n += (size_t)snprintf(l->addrs + n, sizeof l->addrs - n, "%s%s", i > 0 ? " " : "",
		                      t);
	}
	if (a->blocked != NULL)
		snprintf(l->rule, sizeof l->rule, "%s", a->blocked->rule);
}

/*
 * The proxy's lookups go through the same upstreams and cache, A and
 * AAAA at once, IPv4 first; a cached name calls back before
 * resolver_lookup returns; a blocked CNAME chain reports the rule; a
 * name nobody answers fails at the deadline. None is audited as dns.
 */
static void
test_lookup(void **state)
{
	static const char *const a4[] = {WWW ". 300 IN A 93.184.216.34", NULL};
	static const char *const a6[] = {WWW ". 300 IN AAAA 2606:2800:220:1::1", NULL};
	static const char *const cloak[] = {"c.example.test. 300 IN CNAME t.ads.example.test.",
	                                    "t.ads.example.test. 300 IN A 93.184.216.34", NULL};
	struct eng h;
	struct eng_query q4, q6;
	struct eng_lookup l;
	struct resolver_lookup *lk;

	eng_init(&h);
	eng_start(&h);
	memset(&l, 0, sizeof l);
	lk = resolver_lookup(h.r, h.policy, WWW, eng_lookup_cb, &l);
	assert_non_null(lk);
	eng_up_recv(&h, 0, &q4);
	eng_up_recv(&h, 0, &q6);
	assert_int_equal(q4.qtype, LDNS_RR_TYPE_A);
	assert_int_equal(q6.qtype, LDNS_RR_TYPE_AAAA);
	eng_up_answer(&h, &q6, LDNS_RCODE_NOERROR, a6, 0);
	eng_settle(&h);
	assert_int_equal(l.called, 0);
	eng_up_answer(&h, &q4, LDNS_RCODE_NOERROR, a4, 0);
	eng_settle(&h);
	assert_int_equal(l.called, 1);
	assert_int_equal(l.err, RESOLVER_OK);
	assert_string_equal(l.addrs, "93.184.216.34 2606:2800:220:1::1");
	eng_query_free(&q4);
	eng_query_free(&q6);

	memset(&l, 0, sizeof l);
	assert_null(resolver_lookup(h.r, h.policy, WWW, eng_lookup_cb, &l));
	assert_int_equal(l.called, 1);
	assert_string_equal(l.addrs, "93.184.216.34 2606:2800:220:1::1");

	memset(&l, 0, sizeof l);
	assert_non_null(resolver_lookup(h.r, h.policy, "c.example.test", eng_lookup_cb, &l));
	eng_up_recv(&h, 0, &q4);
	eng_up_recv(&h, 0, &q6);
	eng_up_answer(&h, &q4, LDNS_RCODE_NOERROR, cloak, 0);
	eng_up_answer(&h, &q6, LDNS_RCODE_NOERROR, cloak, 0);
	eng_settle(&h);
	assert_int_equal(l.called, 1);
	assert_int_equal(l.err, RESOLVER_E_BLOCKED);
	assert_string_equal(l.rule, "*.ads.example.test");
	eng_query_free(&q4);
	eng_query_free(&q6);

	memset(&l, 0, sizeof l);
	assert_non_null(resolver_lookup(h.r, h.policy, "down.example.test", eng_lookup_cb, &l));
	eng_up_recv(&h, 0, &q4);
	eng_up_recv(&h, 0, &q6);
	eng_query_free(&q4);
	eng_query_free(&q6);
	/* The answers above came at once: the timeout is at its floor, 100 ms. */
	eng_advance(&h, 100);
	eng_up_recv(&h, 0, &q4);
	eng_up_recv(&h, 0, &q6);
	eng_query_free(&q4);
	eng_query_free(&q6);
	eng_advance(&h, 3899);
	assert_int_equal(l.called, 0);
	eng_advance(&h, 1);
	assert_int_equal(l.called, 1);
	assert_int_equal(l.err, RESOLVER_E_FAIL);
	eng_quiet(&h); /* no audit line for any of them */
	eng_stop(&h);
}

/* A cancelled lookup never calls back; its questions still fill the cache. */
static void
test_lookup_cancel(void **state)
{
	static const char *const a4[] = {WWW ". 300 IN A 93.184.216.34", NULL};
	static const char *const a6[] = {WWW ". 300 IN AAAA 2606:2800:220:1::1", NULL};
	struct eng h;
	struct eng_query q4, q6;
	struct eng_lookup l;
	struct resolver_lookup *lk;

	eng_init(&h);
	eng_start(&h);
	memset(&l, 0, sizeof l);
	lk = resolver_lookup(h.r, h.policy, WWW, eng_lookup_cb, &l);
	assert_non_null(lk);
	eng_up_recv(&h, 0, &q4);
	eng_up_recv(&h, 0, &q6);
	resolver_lookup_cancel(lk);
	eng_up_answer(&h, &q4, LDNS_RCODE_NOERROR, a4, 0);
	eng_up_answer(&h, &q6, LDNS_RCODE_NOERROR, a6, 0);
	eng_settle(&h);
	assert_int_equal(l.called, 0);
	eng_query_free(&q4);
	eng_query_free(&q6);

	assert_null(resolver_lookup(h.r, h.policy, WWW, eng_lookup_cb, &l));
	assert_int_equal(l.called, 1);
	assert_string_equal(l.addrs, "93.184.216.34 2606:2800:220:1::1");
	eng_quiet(&h);
	eng_stop(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forward_answer),
	    cmocka_unit_test(test_cache_hit),
	    cmocka_unit_test(test_ttl_expiry),
	    cmocka_unit_test(test_cname_cloak),
	    cmocka_unit_test(test_private_address),
	    cmocka_unit_test(test_blocked_name),
	    cmocka_unit_test(test_timeout_next_upstream),
	    cmocka_unit_test(test_timeout_slow_answer),
	    cmocka_unit_test(test_timeout_servfail),
	    cmocka_unit_test(test_upstream_servfail_next),
	    cmocka_unit_test(test_bad_answers_ignored),
	    cmocka_unit_test(test_wrong_case),
	    cmocka_unit_test(test_tcp_query),
	    cmocka_unit_test(test_truncated_tcp_upstream),
	    cmocka_unit_test(test_coalesce),
	    cmocka_unit_test(test_policy_swap),
	    cmocka_unit_test(test_rto),
	    cmocka_unit_test(test_malformed_query),
	    cmocka_unit_test(test_off_mode),
	    cmocka_unit_test(test_negative_cache),
	    cmocka_unit_test(test_truncated_to_client),
	    cmocka_unit_test(test_tcp_half_close),
	    cmocka_unit_test(test_tcp_client_gone),
	    cmocka_unit_test(test_upstream_tcp_refused),
	    cmocka_unit_test(test_too_many_pending),
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_lookup_cancel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
