/*
 * What an upstream answer becomes. Once, when it arrives: ECH and address
 * hints out of HTTPS/SVCB records, the transport's OPT and signatures out,
 * TTLs clamped, and the time it may be kept (RFC 2308 for negative
 * answers). Then, per policy, before clients see it: a blocked name in
 * the CNAME chain blocks the answer, and addresses the guard refuses are
 * dropped. The proxy gets the addresses at the end of the chain instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver_int.h"

#define DNS_ANSWER_TYPE_TSIG  250
#define DNS_ANSWER_TYPE_SVCB  64
#define DNS_ANSWER_TYPE_HTTPS 65
#define DNS_ANSWER_CHAIN_MAX  16

static uint16_t
dns_answer_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Rewrite an HTTPS/SVCB record's parameters without ech (5) and the
 * address hints (4, 6): ECH would hide the real server name from the
 * proxy, and hints are addresses that would skip the A/AAAA filter.
 * Returns 0 to keep the record, -1 to drop it (malformed, or one of those
 * keys mandatory).
 */
static int
dns_answer_svcb_clean(ldns_rr *rr)
{
	ldns_buffer *b;
	const uint8_t *d;
	uint8_t *out;
	size_t len, o, n, w, k;
	uint16_t key, vlen;
	ldns_rdf *rdf;

	if ((b = ldns_buffer_new(512)) == NULL)
		return -1;
	if (ldns_rr_rdata2buffer_wire(b, rr) != LDNS_STATUS_OK) {
		ldns_buffer_free(b);
		return -1;
	}
	d = ldns_buffer_begin(b);
	len = ldns_buffer_position(b);
	out = xmalloc(len > 0 ? len : 1);
	o = 2;
	while (o < len && d[o] != 0 && (d[o] & 0xc0) == 0)
		o += 1 + d[o];
	if (len < 2 || o >= len || d[o] != 0) {
		free(out);
		ldns_buffer_free(b);
		return -1;
	}
	o++;
	memcpy(out, d, o);
	w = o;
	while (o < len) {
		if (o + 4 > len || o + 4 + dns_answer_get16(d + o + 2) > len)
			goto drop;
		key = dns_answer_get16(d + o);
		vlen = dns_answer_get16(d + o + 2);
		if (key == 0) /* mandatory: a list of keys */
			for (k = 0; k + 1 < vlen; k += 2)
				if ((n = dns_answer_get16(d + o + 4 + k)) == 4 || n == 5 || n == 6)
					goto drop;
		if (key != 4 && key != 5 && key != 6) {
			memcpy(out + w, d + o, 4 + (size_t)vlen);
			w += 4 + (size_t)vlen;
		}
		o += 4 + (size_t)vlen;
	}
	while ((rdf = ldns_rr_pop_rdf(rr)) != NULL)
		ldns_rdf_deep_free(rdf);
	ldns_rr_push_rdf(rr, ldns_rdf_new_frm_data(LDNS_RDF_TYPE_UNKNOWN, w, out));
	free(out);
	ldns_buffer_free(b);
	return 0;
drop:
	free(out);
	ldns_buffer_free(b);
	return -1;
}

/*
 * A message to wire format in a buffer of its own size: ldns hands back
 * its 64 KiB work buffer, which would make every cached answer that large.
 */
static int
dns_answer_to_wire(const ldns_pkt *pkt, uint8_t **wire, size_t *len)
{
	uint8_t *big;

	*wire = NULL;
	if (ldns_pkt2wire(&big, pkt, len) != LDNS_STATUS_OK)
		return -1;
	*wire = xmalloc(*len > 0 ? *len : 1);
	memcpy(*wire, big, *len);
	free(big);
	return 0;
}

/* Copy a section's records that keep() accepts into dst, cloned. */
static void
dns_answer_copy_section(ldns_pkt *dst, ldns_pkt_section sec, const ldns_rr_list *src,
                        int (*keep)(ldns_rr *, void *), void *arg)
{
	ldns_rr *rr;
	size_t i;

	for (i = 0; i < ldns_rr_list_rr_count(src); i++) {
		rr = ldns_rr_clone(ldns_rr_list_rr(src, i));
		if (rr == NULL)
			continue;
		if (keep != NULL && !keep(rr, arg)) {
			ldns_rr_free(rr);
			continue;
		}
		if (!ldns_pkt_push_rr(dst, sec, rr))
			ldns_rr_free(rr);
	}
}

struct dns_answer_prep {
	const struct resolver_conf *conf;
	uint32_t min_ttl;
	uint32_t neg_ttl; /* from the SOA of a negative answer */
	int soa;
};

/* Keep a record of an arriving answer, cleaned and with its TTL clamped. */
static int
dns_answer_prep_keep(ldns_rr *rr, void *arg)
{
	struct dns_answer_prep *mp = arg;
	uint32_t ttl = ldns_rr_ttl(rr);
	ldns_rr_type t = ldns_rr_get_type(rr);

	if (t == DNS_ANSWER_TYPE_TSIG || t == LDNS_RR_TYPE_OPT)
		return 0;
	if ((t == DNS_ANSWER_TYPE_SVCB || t == DNS_ANSWER_TYPE_HTTPS) &&
	    dns_answer_svcb_clean(rr) == -1)
		return 0;
	if (ttl > 0x7fffffffu) /* RFC 2181 §8 */
		ttl = 0;
	if (ttl > mp->conf->max_ttl)
		ttl = mp->conf->max_ttl;
	ldns_rr_set_ttl(rr, ttl);
	return 1;
}

static int
dns_answer_prep_answer(ldns_rr *rr, void *arg)
{
	struct dns_answer_prep *mp = arg;

	if (!dns_answer_prep_keep(rr, arg))
		return 0;
	if (ldns_rr_ttl(rr) < mp->min_ttl)
		mp->min_ttl = ldns_rr_ttl(rr);
	return 1;
}

/* Authority of an answer: an SOA gives the negative TTL (RFC 2308 §5). */
static int
dns_answer_prep_authority(ldns_rr *rr, void *arg)
{
	struct dns_answer_prep *mp = arg;
	uint32_t ttl, minimum;

	if (!dns_answer_prep_keep(rr, arg))
		return 0;
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_SOA && ldns_rr_rd_count(rr) == 7) {
		ttl = ldns_rr_ttl(rr);
		minimum = ldns_rdf2native_int32(ldns_rr_rdf(rr, 6));
		if (minimum < ttl)
			ttl = minimum;
		if (ttl > mp->conf->max_neg_ttl)
			ttl = mp->conf->max_neg_ttl;
		ldns_rr_set_ttl(rr, ttl);
		if (!mp->soa || ttl < mp->neg_ttl)
			mp->neg_ttl = ttl;
		mp->soa = 1;
	}
	return 1;
}

/*
 * The question's name, and the owners spelt like it, in lowercase: the
 * upstream echoes the mixed case of the query (0x20), which is not for
 * clients, who get their own spelling back (dns_msg_reply_served).
 */
static void
dns_answer_lower_owners(ldns_pkt *n)
{
	const ldns_rr_list *lists[3];
	ldns_rdf *qname, *owner;
	size_t s, i;

	if (ldns_rr_list_rr_count(ldns_pkt_question(n)) == 0)
		return;
	qname = ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(n), 0));
	lists[0] = ldns_pkt_answer(n);
	lists[1] = ldns_pkt_authority(n);
	lists[2] = ldns_pkt_additional(n);
	for (s = 0; s < EG_NELEM(lists); s++) {
		for (i = 0; i < ldns_rr_list_rr_count(lists[s]); i++) {
			owner = ldns_rr_owner(ldns_rr_list_rr(lists[s], i));
			if (owner != NULL && ldns_dname_compare(owner, qname) == 0)
				ldns_dname2canonical(owner);
		}
	}
	ldns_dname2canonical(qname);
}

/*
 * Clean an upstream answer into the form the cache keeps (*raw, to free)
 * and say for how long (*ttl): the smallest answer TTL, or for NXDOMAIN and
 * NODATA the SOA's negative TTL; 0 when it must not be kept. Returns -1
 * when the answer cannot be used.
 */
int
dns_answer_prepare(ldns_pkt *pkt, const struct resolver_conf *conf, uint8_t **raw, size_t *len,
                   uint32_t *ttl)
{
	struct dns_answer_prep mp = {conf, UINT32_MAX, 0, 0};
	ldns_pkt *n;
	int rc;
	unsigned rcode = ldns_pkt_get_rcode(pkt);

	if ((n = ldns_pkt_new()) == NULL)
		return -1;
	ldns_pkt_set_qr(n, 1);
	ldns_pkt_set_rd(n, 1);
	ldns_pkt_set_ra(n, 1);
	ldns_pkt_set_rcode(n, (uint8_t)rcode);
	dns_answer_copy_section(n, LDNS_SECTION_QUESTION, ldns_pkt_question(pkt), NULL, NULL);
	dns_answer_copy_section(n, LDNS_SECTION_ANSWER, ldns_pkt_answer(pkt),
	                        dns_answer_prep_answer, &mp);
	dns_answer_copy_section(n, LDNS_SECTION_AUTHORITY, ldns_pkt_authority(pkt),
	                        dns_answer_prep_authority, &mp);
	dns_answer_copy_section(n, LDNS_SECTION_ADDITIONAL, ldns_pkt_additional(pkt),
	                        dns_answer_prep_keep, &mp);
	dns_answer_lower_owners(n);
	rc = dns_answer_to_wire(n, raw, len);
	ldns_pkt_free(n);
	if (rc == -1)
		return -1;
	*ttl = 0;
	if (rcode == DNS_MSG_NOERROR && ldns_rr_list_rr_count(ldns_pkt_answer(pkt)) > 0)
		*ttl = mp.min_ttl == UINT32_MAX ? 0 : mp.min_ttl;
	else if ((rcode == DNS_MSG_NOERROR || rcode == DNS_MSG_NXDOMAIN) && mp.soa)
		*ttl = mp.neg_ttl;
	return 0;
}

/*
 * The host of a name that is already what host_parse() would make of it
 * (lowercase letters, digits, '-', '_', labels of 1 to 63 bytes), so that
 * the common query skips the general parser. A last label that could be
 * a number (digits, or hex after "0x") makes the name an address, and an
 * A-label ("xn--") must decode to a valid name: those, and everything
 * else, return -1 for host_parse() to decide.
 */
static int
dns_answer_name_plain(const char *name, struct host *h)
{
	size_t i, label = 0, len = strnlen(name, HOST_NAME_MAXLEN + 1);
	int wordy = 0;
	unsigned c;

	if (len == 0 || len > HOST_NAME_MAXLEN)
		return -1;
	for (i = 0; i < len; i++) {
		c = (unsigned char)name[i];
		if (c == '.') {
			if (label == 0)
				return -1;
			label = 0;
			wordy = 0;
			continue;
		}
		if (label == 0 && len - i >= 4 && memcmp(name + i, "xn--", 4) == 0)
			return -1;
		if (!(c - 'a' < 26u || c - '0' < 10u || c == '-' || c == '_') ||
		    ++label > HOST_LABEL_MAXLEN)
			return -1;
		if (!(c - '0' < 10u || c - 'a' < 6u || c == 'x'))
			wordy = 1;
	}
	if (label == 0 || !wordy)
		return -1;
	h->kind = HOST_NAME;
	memcpy(h->name, name, len + 1);
	memset(&h->addr, 0, sizeof h->addr);
	return 0;
}

/*
 * Decide a name as the resolver does: by the name alone, like a request
 * without a method. A name the policy cannot read is blocked. Returns 1
 * when d blocks it.
 */
int
dns_answer_decide(const struct policy *p, const char *name, struct decision *d)
{
	struct policy_request req;
	struct host h;

	if (dns_answer_name_plain(name, &h) == -1 && host_parse(name, strlen(name), &h) != NULL) {
		memset(d, 0, sizeof *d);
		d->action = ACTION_BLOCK;
		str_copy(d->rule, sizeof d->rule, "invalid-name");
		d->list = POLICY_LIST_NAME;
		str_copy(d->source, sizeof d->source, "builtin");
		snprintf(d->reason, sizeof d->reason,
		         "the name holds characters no policy entry can match");
		return 1;
	}
	memset(&req, 0, sizeof req);
	req.host = &h;
	policy_decide(p, &req, d);
	return d->action == ACTION_BLOCK;
}

/*
 * A CNAME chain is blocked by a name on a list (blocklist, the DoH list),
 * not by the mode's default: in strict mode an allowlisted name may still
 * point into a CDN nobody listed.
 */
static int
dns_answer_cloak_check(const ldns_pkt *pkt, const struct policy *p, struct decision *d)
{
	const ldns_rr_list *an = ldns_pkt_answer(pkt);
	const ldns_rr *rr;
	const ldns_rdf *target;
	char name[DNS_MSG_NAME_MAX + 1], why[sizeof d->reason];
	size_t i;

	for (i = 0; i < ldns_rr_list_rr_count(an); i++) {
		rr = ldns_rr_list_rr(an, i);
		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME &&
		    ldns_rr_get_type(rr) != LDNS_RR_TYPE_DNAME)
			continue;
		if (ldns_rr_rd_count(rr) < 1 || (target = ldns_rr_rdf(rr, 0)) == NULL)
			continue;
		(void)dns_msg_name_text(ldns_rdf_data(target), ldns_rdf_size(target), name,
		                        sizeof name);
		if (!dns_answer_decide(p, name, d) || d->list == POLICY_LIST_MODE)
			continue;
		str_copy(why, sizeof why, d->reason);
		snprintf(d->reason, sizeof d->reason, "the CNAME chain reaches %s: %s", name, why);
		return 1;
	}
	return 0;
}

static int
dns_answer_rr_addr(const ldns_rr *rr, struct addr *a)
{
	const ldns_rdf *rd;

	memset(a, 0, sizeof *a);
	if (ldns_rr_rd_count(rr) != 1 || (rd = ldns_rr_rdf(rr, 0)) == NULL)
		return -1;
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_A && ldns_rdf_size(rd) == 4) {
		a->af = AF_INET;
		memcpy(a->a, ldns_rdf_data(rd), 4);
		return 0;
	}
	if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_AAAA && ldns_rdf_size(rd) == 16) {
		a->af = AF_INET6;
		memcpy(a->a, ldns_rdf_data(rd), 16);
		return 0;
	}
	return -1;
}

struct dns_answer_guard {
	const struct policy *p;
	const struct decision *qd;
	size_t dropped;
	size_t kept;
	struct addr first_dropped;
};

/* The rebinding guard on an address record: §5 step 5 for the question's name. */
static int
dns_answer_guard_keep(ldns_rr *rr, void *arg)
{
	struct dns_answer_guard *g = arg;
	struct addr a;

	if (dns_answer_rr_addr(rr, &a) == -1)
		return 1;
	if (policy_addr_allowed(g->p, &a, g->qd)) {
		g->kept++;
		return 1;
	}
	if (g->dropped++ == 0)
		g->first_dropped = a;
	return 0;
}

/*
 * Whether the rebinding guard keeps every address record of the answer
 * and additional sections (counted in g), so that the cleaned answer is
 * served as it was kept.
 */
static int
dns_answer_all_kept(const ldns_pkt *pkt, struct dns_answer_guard *g)
{
	const ldns_rr_list *lists[2] = {ldns_pkt_answer(pkt), ldns_pkt_additional(pkt)};
	size_t s, i;

	for (s = 0; s < EG_NELEM(lists); s++)
		for (i = 0; i < ldns_rr_list_rr_count(lists[s]); i++)
			if (!dns_answer_guard_keep(ldns_rr_list_rr(lists[s], i), g))
				return 0;
	return 1;
}

static void
dns_answer_served_block(struct dns_answer_served *s, const struct decision *d)
{
	s->rcode = DNS_MSG_NXDOMAIN;
	s->ede = DNS_MSG_EDE_BLOCKED;
	snprintf(s->ede_text, sizeof s->ede_text, "blocked by rule %s (%s, %s)", d->rule,
	         d->list != POLICY_LIST_NONE ? policy_list_name(d->list) : "policy", d->source);
	s->verdict = xmalloc(sizeof *s->verdict);
	*s->verdict = *d;
}

/*
 * Build what clients get from a cached answer under policy p, whose
 * decision for the question's name is qd: blocked outright when a name of
 * the CNAME chain is blocked or every address was refused, otherwise the
 * answer without the refused addresses. Returns -1 on a broken answer.
 */
int
dns_answer_served_build(const uint8_t *raw, size_t raw_len, const struct policy *p,
                        const struct decision *qd, struct dns_answer_served *s)
{
	struct dns_answer_guard g = {p, qd, 0, 0, {0}};
	struct decision d;
	ldns_pkt *pkt, *n;
	int rc = 0, blocked;

	memset(s, 0, sizeof *s);
	s->ede = -1;
	if (ldns_wire2pkt(&pkt, raw, raw_len) != LDNS_STATUS_OK)
		return -1;
	s->rcode = ldns_pkt_get_rcode(pkt);
	blocked = dns_answer_cloak_check(pkt, p, &d);
	if (!blocked && dns_answer_all_kept(pkt, &g)) {
		/* Nothing to remove: clients get the answer as it was kept. */
		ldns_pkt_free(pkt);
		s->wire = xmalloc(raw_len > 0 ? raw_len : 1);
		memcpy(s->wire, raw, raw_len);
		s->len = raw_len;
		goto offsets;
	}
	g.dropped = g.kept = 0;
	n = ldns_pkt_new();
	ldns_pkt_set_qr(n, 1);
	ldns_pkt_set_rd(n, 1);
	ldns_pkt_set_ra(n, 1);
	dns_answer_copy_section(n, LDNS_SECTION_QUESTION, ldns_pkt_question(pkt), NULL, NULL);
	if (blocked) {
		dns_answer_served_block(s, &d);
	} else {
		dns_answer_copy_section(n, LDNS_SECTION_ANSWER, ldns_pkt_answer(pkt),
		                        dns_answer_guard_keep, &g);
		if (g.dropped > 0 && g.kept == 0) {
			d = *qd;
			policy_check_addr(p, &g.first_dropped, &d);
			dns_answer_served_block(s, &d);
			blocked = 1;
		}
	}
	if (!blocked) {
		dns_answer_copy_section(n, LDNS_SECTION_AUTHORITY, ldns_pkt_authority(pkt), NULL,
		                        NULL);
		dns_answer_copy_section(n, LDNS_SECTION_ADDITIONAL, ldns_pkt_additional(pkt),
		                        dns_answer_guard_keep, &g);
		if (g.dropped > 0) {
			s->ede = DNS_MSG_EDE_BLOCKED;
			snprintf(s->ede_text, sizeof s->ede_text,
			         "%zu address%s not globally reachable removed", g.dropped,
			         g.dropped == 1 ? "" : "es");
		}
	}
	ldns_pkt_set_rcode(n, (uint8_t)s->rcode);
	rc = dns_answer_to_wire(n, &s->wire, &s->len);
	ldns_pkt_free(n);
	ldns_pkt_free(pkt);
offsets:
	if (rc == -1 || s->len > DNS_MSG_MAX || dns_msg_ttl_offsets(s->wire, s->len, s) == -1) {
		dns_answer_served_free(s);
		return -1;
	}
	return 0;
}

void
dns_answer_served_free(struct dns_answer_served *s)
{
	free(s->wire);
	free(s->ttl_off);
	free(s->verdict);
	memset(s, 0, sizeof *s);
	s->ede = -1;
}

/*
 * The addresses of a cached answer for the proxy: the records at the end
 * of the CNAME chain from the question's name, appended to addrs (which
 * holds *n of max). Returns RESOLVER_E_BLOCKED (with d) when a name of the
 * chain is blocked, RESOLVER_E_NONAME for NXDOMAIN, else RESOLVER_OK.
 */
int
dns_answer_addrs(const uint8_t *raw, size_t raw_len, const struct policy *p, struct addr *addrs,
                 size_t max, size_t *n, struct decision *d)
{
	const ldns_rr_list *an;
	const ldns_rr *rr;
	const ldns_rdf *cur;
	ldns_pkt *pkt;
	size_t i, step;
	int rc = RESOLVER_OK, moved;

	if (ldns_wire2pkt(&pkt, raw, raw_len) != LDNS_STATUS_OK)
		return RESOLVER_E_FAIL;
	if ((unsigned)ldns_pkt_get_rcode(pkt) == DNS_MSG_NXDOMAIN)
		rc = RESOLVER_E_NONAME;
	else if (dns_answer_cloak_check(pkt, p, d))
		rc = RESOLVER_E_BLOCKED;
	if (rc != RESOLVER_OK || ldns_rr_list_rr_count(ldns_pkt_question(pkt)) != 1) {
		ldns_pkt_free(pkt);
		return rc;
	}
	an = ldns_pkt_answer(pkt);
	cur = ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(pkt), 0));
	for (step = 0, moved = 1; moved && step < DNS_ANSWER_CHAIN_MAX; step++) {
		moved = 0;
		for (i = 0; i < ldns_rr_list_rr_count(an); i++) {
			rr = ldns_rr_list_rr(an, i);
			if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_CNAME &&
			    ldns_rr_rd_count(rr) == 1 &&
			    ldns_dname_compare(ldns_rr_owner(rr), cur) == 0) {
				cur = ldns_rr_rdf(rr, 0);
				moved = 1;
				break;
			}
		}
	}
	for (i = 0; i < ldns_rr_list_rr_count(an) && *n < max; i++) {
		rr = ldns_rr_list_rr(an, i);
		if (ldns_dname_compare(ldns_rr_owner(rr), cur) == 0 &&
		    dns_answer_rr_addr(rr, &addrs[*n]) == 0)
			(*n)++;
	}
	ldns_pkt_free(pkt);
	return RESOLVER_OK;
}
