/*
 * Fuzz target for the resolver's handling of untrusted DNS bytes. The
 * input is split at its first byte: a client's query goes through parse,
 * decide and the resolver's own replies; the rest is taken as an upstream
 * answer to that question and goes through the check, the cleaning, the
 * policy filter, the reply built from it and the proxy's address list.
 * Beyond not crashing: a reply is never larger than the client's limit,
 * and it always parses back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resolver_int.h"

#define FUZZ_DNS_MAX 8192

static const char fuzz_dns_yaml[] = "version: 1\n"
                                    "network:\n"
                                    "  mode: practical\n"
                                    "  inheritGlobal: false\n"
                                    "  blocklist: [\"blocked.test\", \"*.ads.test\"]\n"
                                    "  allowlist: [\"198.18.0.0/15\", \"ok.test\"]\n";

static struct policy *
fuzz_dns_policy(void)
{
	static struct policy *p;
	struct config *cfg;
	struct buf errs;

	if (p != NULL)
		return p;
	buf_init(&errs);
	cfg = config_load_mem("fuzz.yaml", fuzz_dns_yaml, sizeof fuzz_dns_yaml - 1, &errs);
	if (cfg == NULL || (p = policy_new(cfg, &errs)) == NULL)
		abort();
	buf_free(&errs);
	return p;
}

static void
fuzz_dns_reply_check(const uint8_t *r, size_t len, size_t limit)
{
	ldns_pkt *pkt;

	if (len == 0)
		return;
	if (len > limit)
		abort();
	if (ldns_wire2pkt(&pkt, r, len) != LDNS_STATUS_OK)
		abort();
	ldns_pkt_free(pkt);
}

static void
fuzz_dns_answer(const struct dns_msg_query *q, const struct decision *d, const uint8_t *data,
                size_t size)
{
	static uint8_t out[DNS_MSG_MAX + 2];
	struct resolver_conf conf;
	struct dns_answer_served s;
	struct addr addrs[RESOLVER_MAX_ADDRS];
	struct decision bd;
	ldns_pkt *pkt;
	uint8_t *raw;
	size_t raw_len, n = 0, len;
	uint32_t ttl;
	uint16_t id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;

	resolver_conf_init(&conf);
	if (dns_msg_check_answer(data, size, id, q->key, q->key_len, &pkt) != NULL)
		return;
	if (dns_answer_prepare(pkt, &conf, &raw, &raw_len, &ttl) == 0) {
		if (dns_answer_served_build(raw, raw_len, fuzz_dns_policy(), d, &s) == 0) {
			len = dns_msg_reply_served(q, &s, ttl / 2, DNS_MSG_UDP_PLAIN, out,
			                           sizeof out);
			fuzz_dns_reply_check(out, len, DNS_MSG_UDP_PLAIN);
			len = dns_msg_reply_served(q, &s, 0, DNS_MSG_MAX, out, sizeof out);
			fuzz_dns_reply_check(out, len, DNS_MSG_MAX);
			dns_answer_served_free(&s);
		}
		(void)dns_answer_addrs(raw, raw_len, fuzz_dns_policy(), addrs, RESOLVER_MAX_ADDRS,
		                       &n, &bd);
		if (n > RESOLVER_MAX_ADDRS)
			abort();
		free(raw);
	}
	ldns_pkt_free(pkt);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[DNS_MSG_MAX];
	struct dns_msg_query q;
	struct decision d;
	size_t qlen, len;
	int rcode;

	if (size > FUZZ_DNS_MAX)
		size = FUZZ_DNS_MAX;
	if (size < 1)
		return 0;
	qlen = data[0] < size - 1 ? data[0] : size - 1;
	data++;
	size--;
	if (dns_msg_parse_query(data, qlen, &q, &rcode) != NULL) {
		if (rcode >= 0) {
			len = dns_msg_reply_simple(&q, (unsigned)rcode, -1, NULL, out, sizeof out);
			fuzz_dns_reply_check(out, len, sizeof out);
		}
		return 0;
	}
	if (strlen(q.name) > DNS_MSG_NAME_MAX || q.key_len > DNS_MSG_KEY_MAX)
		abort();
	if (dns_answer_decide(fuzz_dns_policy(), q.name, &d)) {
		len = dns_msg_reply_simple(&q, DNS_MSG_NXDOMAIN, DNS_MSG_EDE_BLOCKED, d.rule, out,
		                           sizeof out);
		fuzz_dns_reply_check(out, len, sizeof out);
		return 0;
	}
	fuzz_dns_answer(&q, &d, data + qlen, size - qlen);
	return 0;
}
