/*
 * Engine scenarios for the resolver while its audit log cannot be written
 * (resolver_harness.h explains the harness): an answer goes out only once
 * its line is kept, so the question under way when the log fails is
 * answered REFUSED with an Extended DNS Error (14, Not Ready) that says
 * why, and so is every query after it, a cached name included, without
 * asking an upstream; each is counted as refused.
 */
#include <signal.h>

#include "resolver_harness.h"

#define WWW "www.example.test"

static const char *const an_www[] = {WWW ". 300 IN A 93.184.216.34", NULL};
static const char *const an_api[] = {"api.example.test. 300 IN A 93.184.216.35", NULL};

/* The reply to id: REFUSED, no answer, EDE 14 naming the audit log. */
static void
expect_refused(struct eng *h, uint16_t id)
{
	char text[256];
	ldns_pkt *pkt;

	pkt = eng_client_recv(h);
	assert_int_equal(ldns_pkt_id(pkt), id);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_REFUSED);
	assert_int_equal(ldns_pkt_ancount(pkt), 0);
	assert_int_equal(eng_ede(pkt, text, sizeof text), 14);
	assert_string_equal(text, "the audit log cannot be written (Broken pipe)");
	ldns_pkt_free(pkt);
}

static void
test_audit_unwritable(void **state)
{
	struct audit_stats st;
	struct eng_query q;
	struct eng h;
	ldns_pkt *pkt;
	uint16_t id;
	json_t *j;

	eng_init(&h);
	eng_start(&h);
	eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_www, 0);
	pkt = eng_client_recv(&h);
	assert_int_equal(ldns_pkt_get_rcode(pkt), LDNS_RCODE_NOERROR);
	ldns_pkt_free(pkt);
	j = eng_audit_expect(&h, WWW, "allow", "NOERROR", 0);
	json_decref(j);
	eng_query_free(&q);

	/* A question out upstream when the log's reader goes away. */
	id = eng_ask(&h, "api.example.test", LDNS_RR_TYPE_A);
	eng_up_recv(&h, 0, &q);
	close(h.audit_rd);
	h.audit_rd = -1;
	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an_api, 0);
	expect_refused(&h, id);
	eng_query_free(&q);
	assert_true(audit_refusing(h.audit));

	/* From now on every query, a cached name too, is refused at once. */
	id = eng_ask(&h, WWW, LDNS_RR_TYPE_A);
	expect_refused(&h, id);
	id = eng_ask(&h, "new.example.test", LDNS_RR_TYPE_AAAA);
	expect_refused(&h, id);
	audit_stats(h.audit, &st);
	assert_int_equal(st.refused, 3);
	assert_int_equal(st.unwritten, 1);
	eng_quiet(&h);
	eng_stop(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_audit_unwritable),
	};

	/* As egressd does (egressd_new): a reader gone is EPIPE, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
