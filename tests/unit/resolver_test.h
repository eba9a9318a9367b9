/*
 * What the resolver's unit tests share: a policy from YAML text, and an
 * upstream answer built with ldns from zone-file lines.
 */
#ifndef RESOLVER_TEST_H
#define RESOLVER_TEST_H

#define EG_UNUSED __attribute__((unused))

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resolver_int.h"

static EG_UNUSED const char policy_yaml[] =
    "version: 1\n"
    "network:\n"
    "  mode: practical\n"
    "  inheritGlobal: false\n"
    "  blocklist: [\"blocked.example.test\", \"*.ads.example.test\"]\n"
    "  allowlist: [\"198.18.0.0/15\", \"trusted.example.test\", \"*.wild.example.test\"]\n";

static EG_UNUSED struct policy *
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

/* An upstream answer from zone-file lines, as ldns would receive it. */
static EG_UNUSED ldns_pkt *
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

#endif
