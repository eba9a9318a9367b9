/*
 * DNS messages on the wire: the strict parse of a client's query, the
 * replies egressd makes itself (blocked, refused, malformed, failed) or
 * from a cached answer, upstream queries, and the check of an upstream
 * answer against the question asked. Queries are parsed by hand, since
 * they are small and their rules are narrow; answers, which may use every
 * feature of the format, go through ldns (answer.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver_int.h"

#define DNS_MSG_HDR          12
#define DNS_MSG_TYPE_OPT     41
#define DNS_MSG_TYPE_TSIG    250
#define DNS_MSG_EDE_TEXT_MAX 150

static uint16_t
dns_msg_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
dns_msg_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t
dns_msg_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
dns_msg_put32(uint8_t *p, uint32_t v)
{
	dns_msg_put16(p, (uint16_t)(v >> 16));
	dns_msg_put16(p + 2, (uint16_t)v);
}

static int
dns_msg_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int
dns_msg_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/*
 * An uncompressed wire name as lowercase text without the final dot ("" for
 * the root). Returns 0 when every byte is one the policy can match, so a
 * label holding a '.' or a space can never pass for another name.
 */
int
dns_msg_name_text(const uint8_t *w, size_t len, char *out, size_t cap)
{
	size_t i = 0, o = 0, n, k;
	int ok = 1;

	while (i < len && w[i] != 0) {
		n = w[i++];
		if (n > 63 || i + n > len || o + n + 2 > cap)
			return -1;
		if (o > 0)
			out[o++] = '.';
		for (k = 0; k < n; k++) {
			int c = dns_msg_lower(w[i + k]);

			if (!dns_msg_name_char(c))
				ok = 0;
			out[o++] = c >= 0x21 && c < 0x7f ? (char)c : '?';
		}
		i += n;
	}
	out[o] = '\0';
	return ok ? 0 : -1;
}

/* Parse the OPT record of a query at *off; errors are FORMERR. */
static const char *
dns_msg_parse_opt(const uint8_t *p, size_t len, size_t *off, struct dns_msg_query *q)
{
	size_t o = *off, rdlen, end;

	if (o + 11 > len)
		return "truncated additional record";
	if (p[o] != 0)
		return "additional record is not an OPT record at the root";
	if (dns_msg_get16(p + o + 1) != DNS_MSG_TYPE_OPT)
		return "additional record is not an OPT record";
	q->edns = 1;
	q->udp_size = dns_msg_get16(p + o + 3);
	q->edns_version = p[o + 6];
	rdlen = dns_msg_get16(p + o + 9);
	o += 11;
	if (o + rdlen > len)
		return "truncated OPT record";
	end = o + rdlen;
	while (o < end) {
		if (o + 4 > end || o + 4 + dns_msg_get16(p + o + 2) > end)
			return "truncated EDNS option";
		o += 4 + dns_msg_get16(p + o + 2);
	}
	*off = o;
	return NULL;
}

/* The question name at offset 12 of a query; compression is refused. */
static const char *
dns_msg_parse_qname(const uint8_t *p, size_t len, size_t *off, struct dns_msg_query *q)
{
	size_t o = DNS_MSG_HDR, n;

	for (;;) {
		if (o >= len)
			return "truncated question";
		n = p[o];
		if ((n & 0xc0) == 0xc0)
			return "compression pointer in a question";
		if (n & 0xc0)
			return "unknown label type";
		if (o - DNS_MSG_HDR + 1 + n > DNS_MSG_NAME_MAX)
			return "name too long";
		if (o + 1 + n > len)
			return "truncated question";
		o += 1 + n;
		if (n == 0)
			break;
	}
	q->qname_len = o - DNS_MSG_HDR;
	memcpy(q->qname, p + DNS_MSG_HDR, q->qname_len);
	*off = o;
	return NULL;
}

static void
dns_msg_make_key(struct dns_msg_query *q)
{
	size_t i;

	for (i = 0; i < q->qname_len; i++)
		q->key[i] = (uint8_t)dns_msg_lower(q->qname[i]);
	dns_msg_put16(q->key + i, q->qtype);
	dns_msg_put16(q->key + i + 2, q->qclass);
	q->key_len = q->qname_len + 4;
	q->name_ok = dns_msg_name_text(q->qname, q->qname_len, q->name, sizeof q->name) == 0 &&
	             q->name[0] != '\0';
}

/*
 * Check a client's query. NULL when it can be answered; otherwise the
 * reason, with *rcode the error to reply (FORMERR, NOTIMP, REFUSED,
 * BADVERS) or -1 when nothing may be sent back (no header, or a response).
 */
const char *
dns_msg_parse_query(const uint8_t *p, size_t len, struct dns_msg_query *q, int *rcode)
{
	const char *err;
	size_t off;
	unsigned opcode;

	memset(q, 0, offsetof(struct dns_msg_query, qname));
	q->key_len = 0;
	q->name[0] = '\0';
	q->name_ok = 0;
	q->edns = 0;
	q->udp_size = 0;
	q->edns_version = 0;
	*rcode = -1;
	if (len < DNS_MSG_HDR)
		return "shorter than a header";
	q->id = dns_msg_get16(p);
	q->flags[0] = p[2];
	q->flags[1] = p[3];
	if (p[2] & 0x80)
		return "a response, not a query";
	*rcode = DNS_MSG_FORMERR;
	opcode = (p[2] >> 3) & 0xf;
	if (dns_msg_get16(p + 4) != 1)
		return opcode != 0 ? (*rcode = DNS_MSG_NOTIMP, "opcode not supported")
		                   : "question count is not 1";
	if ((err = dns_msg_parse_qname(p, len, &off, q)) != NULL)
		return err;
	if (off + 4 > len)
		return "truncated question";
	q->qtype = dns_msg_get16(p + off);
	q->qclass = dns_msg_get16(p + off + 2);
	q->has_question = 1;
	off += 4;
	dns_msg_make_key(q);
	if (dns_msg_get16(p + 6) != 0 || dns_msg_get16(p + 8) != 0)
		return "answer or authority records in a query";
	if (dns_msg_get16(p + 10) > 1)
		return "more than one additional record";
	if (dns_msg_get16(p + 10) == 1 && (err = dns_msg_parse_opt(p, len, &off, q)) != NULL)
		return err;
	if (off != len)
		return "trailing bytes after the query";
	if (opcode != 0)
		return (*rcode = DNS_MSG_NOTIMP, "opcode not supported");
	if (q->edns && q->edns_version != 0)
		return (*rcode = DNS_MSG_RCODE_BADVERS, "EDNS version not supported");
	if (q->qtype == DNS_MSG_TYPE_OPT || q->qtype == DNS_MSG_TYPE_TSIG)
		return "meta type in a question";
	if (q->qtype >= 251 && q->qtype <= 254)
		return (*rcode = DNS_MSG_REFUSED, "zone transfers are not served");
	if (q->qclass != LDNS_RR_CLASS_IN)
		return (*rcode = DNS_MSG_REFUSED, "only class IN is served");
	return NULL;
}

/* Append an OPT record (with an EDE option when ede >= 0); 0 if no room. */
static size_t
dns_msg_put_opt(uint8_t *out, size_t cap, unsigned rcode, int ede, const char *text)
{
	size_t tlen = text != NULL ? strnlen(text, DNS_MSG_EDE_TEXT_MAX) : 0;
	size_t olen = ede >= 0 ? 6 + tlen : 0;

	if (11 + olen > cap)
		return 0;
	out[0] = 0;
	dns_msg_put16(out + 1, DNS_MSG_TYPE_OPT);
	dns_msg_put16(out + 3, DNS_MSG_UDP_SIZE);
	dns_msg_put32(out + 5, (uint32_t)(rcode >> 4) << 24);
	dns_msg_put16(out + 9, (uint16_t)olen);
	if (ede >= 0) {
		dns_msg_put16(out + 11, LDNS_EDNS_EDE);
		dns_msg_put16(out + 13, (uint16_t)(2 + tlen));
		dns_msg_put16(out + 15, (uint16_t)ede);
		memcpy(out + 17, text, tlen);
	}
	return 11 + olen;
}

/*
 * A reply made here: the header, the question when there was one, and an
 * OPT record (with the Extended DNS Error) when the client spoke EDNS.
 * Returns its length, 0 if cap is too small.
 */
size_t
dns_msg_reply_simple(const struct dns_msg_query *q, unsigned rcode, int ede, const char *text,
                     uint8_t *out, size_t cap)
{
	size_t len = DNS_MSG_HDR, n;

	if (cap < DNS_MSG_HDR + DNS_MSG_KEY_MAX)
		return 0;
	memset(out, 0, DNS_MSG_HDR);
	dns_msg_put16(out, q->id);
	out[2] = (uint8_t)(0x80 | (q->flags[0] & 0x79));
	out[3] = (uint8_t)(0x80 | (rcode & 0xf));
	if (q->has_question) {
		dns_msg_put16(out + 4, 1);
		memcpy(out + len, q->qname, q->qname_len);
		len += q->qname_len;
		dns_msg_put16(out + len, q->qtype);
		dns_msg_put16(out + len + 2, q->qclass);
		len += 4;
	}
	if (q->edns || rcode > 15) {
		if ((n = dns_msg_put_opt(out + len, cap - len, rcode, ede, text)) == 0)
			return 0;
		dns_msg_put16(out + 10, 1);
		len += n;
	}
	return len;
}

/*
 * A cached answer for this client: its id, flags and question spelling,
 * TTLs less the seconds it has spent in the cache, and an OPT record when
 * the client has EDNS. An answer larger than limit is sent truncated (TC)
 * so the client retries over TCP.
 */
size_t
dns_msg_reply_served(const struct dns_msg_query *q, const struct dns_answer_served *s,
                     uint32_t elapsed, size_t limit, uint8_t *out, size_t cap)
{
	size_t len, i, n, tlen = strnlen(s->ede_text, DNS_MSG_EDE_TEXT_MAX);
	uint32_t ttl;

	len = s->len + (q->edns ? 11 + (s->ede >= 0 ? 6 + tlen : 0) : 0);
	if (len > limit || len > cap) {
		if ((len = dns_msg_reply_simple(q, s->rcode, -1, NULL, out, cap)) > 0)
			out[2] |= 0x02;
		return len;
	}
	memcpy(out, s->wire, s->len);
	dns_msg_put16(out, q->id);
	out[2] = (uint8_t)(0x80 | (q->flags[0] & 0x01));
	out[3] = (uint8_t)(0x80 | (s->rcode & 0xf));
	memcpy(out + DNS_MSG_HDR, q->qname, q->qname_len);
	for (i = 0; i < s->nttl; i++) {
		ttl = dns_msg_get32(out + s->ttl_off[i]);
		dns_msg_put32(out + s->ttl_off[i], ttl > elapsed ? ttl - elapsed : 0);
	}
	len = s->len;
	if (q->edns) {
		n = dns_msg_put_opt(out + len, cap - len, s->rcode, s->ede, s->ede_text);
		dns_msg_put16(out + 10, (uint16_t)(dns_msg_get16(out + 10) + 1));
		len += n;
	}
	return len;
}

/* An upstream query for key (name, type, class): RD and an EDNS OPT record. */
size_t
dns_msg_build_query(const uint8_t *key, size_t key_len, uint16_t id, uint8_t *out, size_t cap)
{
	if (cap < DNS_MSG_HDR + key_len + 11)
		return 0;
	memset(out, 0, DNS_MSG_HDR);
	dns_msg_put16(out, id);
	out[2] = 0x01;
	dns_msg_put16(out + 4, 1);
	dns_msg_put16(out + 10, 1);
	memcpy(out + DNS_MSG_HDR, key, key_len);
	return DNS_MSG_HDR + key_len +
	       dns_msg_put_opt(out + DNS_MSG_HDR + key_len, 11, 0, -1, NULL);
}

/* The question key of a host name (text, no trailing dot) and a type. */
const char *
dns_msg_name_key(const char *name, uint16_t qtype, uint8_t *key, size_t *key_len)
{
	size_t o = 0, n;
	const char *dot;

	while (*name != '\0') {
		dot = strchr(name, '.');
		n = dot != NULL ? (size_t)(dot - name) : strlen(name);
		if (n == 0 || n > 63)
			return "bad label";
		if (o + 1 + n + 1 > DNS_MSG_NAME_MAX)
			return "name too long";
		key[o++] = (uint8_t)n;
		while (n-- > 0)
			key[o++] = (uint8_t)dns_msg_lower((unsigned char)*name++);
		if (*name == '.')
			name++;
	}
	key[o++] = 0;
	dns_msg_put16(key + o, qtype);
	dns_msg_put16(key + o + 2, LDNS_RR_CLASS_IN);
	*key_len = o + 4;
	return NULL;
}

const char dns_msg_err_case[] = "the answer's question differs in case only";

/*
 * A message into an ldns packet, record by record. ldns_wire2pkt() would
 * do it, but it keeps only the last TSIG record of a message and loses
 * the others, which lets every forged answer with two of them leak
 * memory; here every record lands in its section (OPT and TSIG
 * included, for dns_answer_prepare() to drop), and the packet owns them all.
 */
static ldns_status
dns_msg_wire2pkt(ldns_pkt **out, const uint8_t *p, size_t len)
{
	static const ldns_pkt_section secs[4] = {LDNS_SECTION_QUESTION, LDNS_SECTION_ANSWER,
	                                         LDNS_SECTION_AUTHORITY, LDNS_SECTION_ADDITIONAL};
	ldns_status st = LDNS_STATUS_OK;
	ldns_pkt *pkt;
	ldns_rr *rr;
	size_t pos = DNS_MSG_HDR, s, i, n;

	*out = NULL;
	if (len < DNS_MSG_HDR)
		return LDNS_STATUS_WIRE_INCOMPLETE_HEADER;
	if ((pkt = ldns_pkt_new()) == NULL)
		return LDNS_STATUS_MEM_ERR;
	ldns_pkt_set_id(pkt, dns_msg_get16(p));
	ldns_pkt_set_qr(pkt, (p[2] & 0x80) != 0);
	ldns_pkt_set_opcode(pkt, (ldns_pkt_opcode)((p[2] >> 3) & 0xf));
	ldns_pkt_set_aa(pkt, (p[2] & 0x04) != 0);
	ldns_pkt_set_tc(pkt, (p[2] & 0x02) != 0);
	ldns_pkt_set_rd(pkt, (p[2] & 0x01) != 0);
	ldns_pkt_set_ra(pkt, (p[3] & 0x80) != 0);
	ldns_pkt_set_ad(pkt, (p[3] & 0x20) != 0);
	ldns_pkt_set_cd(pkt, (p[3] & 0x10) != 0);
	ldns_pkt_set_rcode(pkt, p[3] & 0xf);
	for (s = 0; s < EG_NELEM(secs) && st == LDNS_STATUS_OK; s++) {
		n = dns_msg_get16(p + 4 + 2 * s);
		for (i = 0; i < n; i++) {
			if ((st = ldns_wire2rr(&rr, p, len, &pos, secs[s])) != LDNS_STATUS_OK)
				break;
			/* Counts follow the records pushed. */
			if (!ldns_pkt_push_rr(pkt, secs[s], rr)) {
				ldns_rr_free(rr);
				st = LDNS_STATUS_MEM_ERR;
				break;
			}
		}
	}
	if (st != LDNS_STATUS_OK) {
		ldns_pkt_free(pkt);
		return st;
	}
	*out = pkt;
	return LDNS_STATUS_OK;
}

/*
 * Mix the case of the letters of a wire name (DNS 0x20): bit i of rnd
 * makes the i-th letter uppercase. An upstream answer must carry the
 * question spelt the same, which a forger who cannot see the query has
 * to guess on top of the id and the port.
 */
void
dns_msg_name_mix(uint8_t *w, size_t len, const uint8_t *rnd, size_t rndlen)
{
	size_t i, k = 0;

	for (i = 0; i < len && k < 8 * rndlen; i++) {
		if (w[i] < 'a' || w[i] > 'z')
			continue;
		if (rnd[k / 8] & (1u << (k % 8)))
			w[i] = (uint8_t)(w[i] - 'a' + 'A');
		k++;
	}
}

/*
 * Whether an upstream datagram answers our question: our id, a response,
 * the question exactly as sent (question: name as spelt on the wire, type,
 * class). Only then is it parsed. The same question in another case is
 * refused with dns_msg_err_case: a forgery, or an upstream that does not
 * keep the case of questions. On NULL, *pkt is the parsed answer.
 */
const char *
dns_msg_check_answer(const uint8_t *p, size_t len, uint16_t id, const uint8_t *question,
                     size_t qlen, ldns_pkt **pkt)
{
	size_t i;

	*pkt = NULL;
	if (len < DNS_MSG_HDR)
		return "short answer";
	if (dns_msg_get16(p) != id)
		return "wrong id";
	if (!(p[2] & 0x80) || ((p[2] >> 3) & 0xf) != 0)
		return "not a response to a query";
	if (dns_msg_get16(p + 4) != 1 || len < DNS_MSG_HDR + qlen)
		return "question missing from the answer";
	if (memcmp(p + DNS_MSG_HDR, question, qlen) != 0) {
		for (i = 0; i < qlen; i++)
			if (i + 4 < qlen
			        ? dns_msg_lower(p[DNS_MSG_HDR + i]) != dns_msg_lower(question[i])
			        : p[DNS_MSG_HDR + i] != question[i])
				return "answer to another question";
		return dns_msg_err_case;
	}
	if (dns_msg_wire2pkt(pkt, p, len) != LDNS_STATUS_OK) {
		*pkt = NULL;
		return "unparsable answer";
	}
	return NULL;
}

/* Offsets of the TTL of every record of a message we wrote. */
int
dns_msg_ttl_offsets(const uint8_t *w, size_t len, struct dns_answer_served *s)
{
	size_t o = DNS_MSG_HDR, nrr, i;

	if (len < DNS_MSG_HDR)
		return -1;
	nrr = (size_t)dns_msg_get16(w + 6) + dns_msg_get16(w + 8) + dns_msg_get16(w + 10);
	for (i = 0; i < dns_msg_get16(w + 4); i++) {
		while (o < len && w[o] != 0 && (w[o] & 0xc0) == 0)
			o += 1 + w[o];
		o += o < len && w[o] != 0 ? 2 : 1;
		o += 4;
	}
	s->ttl_off = xreallocarray(NULL, nrr > 0 ? nrr : 1, sizeof *s->ttl_off);
	for (i = 0; i < nrr; i++) {
		while (o < len && w[o] != 0 && (w[o] & 0xc0) == 0)
			o += 1 + w[o];
		o += o < len && w[o] != 0 ? 2 : 1;
		if (o + 10 > len)
			return -1;
		s->ttl_off[s->nttl++] = (uint16_t)(o + 4);
		o += 10 + dns_msg_get16(w + o + 8);
	}
	return o == len ? 0 : -1;
}

const char *
dns_msg_type_name(uint16_t t, char *buf, size_t len)
{
	static const struct {
		uint16_t t;
		const char *name;
	} names[] = {
	    {1, "A"},      {2, "NS"},     {5, "CNAME"},  {6, "SOA"},     {12, "PTR"},
	    {15, "MX"},    {16, "TXT"},   {28, "AAAA"},  {33, "SRV"},    {35, "NAPTR"},
	    {39, "DNAME"}, {43, "DS"},    {46, "RRSIG"}, {48, "DNSKEY"}, {52, "TLSA"},
	    {64, "SVCB"},  {65, "HTTPS"}, {99, "SPF"},   {255, "ANY"},   {257, "CAA"},
	};
	size_t i;

	for (i = 0; i < EG_NELEM(names); i++)
		if (names[i].t == t)
			return names[i].name;
	snprintf(buf, len, "TYPE%u", t);
	return buf;
}

const char *
dns_msg_rcode_name(unsigned rcode)
{
	switch (rcode) {
	case DNS_MSG_NOERROR:
		return "NOERROR";
	case DNS_MSG_FORMERR:
		return "FORMERR";
	case DNS_MSG_SERVFAIL:
		return "SERVFAIL";
	case DNS_MSG_NXDOMAIN:
		return "NXDOMAIN";
	case DNS_MSG_NOTIMP:
		return "NOTIMP";
	case DNS_MSG_REFUSED:
		return "REFUSED";
	case DNS_MSG_RCODE_BADVERS:
		return "BADVERS";
	}
	return "RCODE";
}
