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

#include "resolver.h"

#define MSG_HDR          12
#define MSG_TYPE_OPT     41
#define MSG_TYPE_TSIG    250
#define MSG_EDE_TEXT_MAX 150

static uint16_t
msg_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
msg_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t
msg_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
msg_put32(uint8_t *p, uint32_t v)
{
	msg_put16(p, (uint16_t)(v >> 16));
	msg_put16(p + 2, (uint16_t)v);
}

static int
msg_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int
msg_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/*
 * An uncompressed wire name as lowercase text without the final dot ("" for
 * the root). Returns 0 when every byte is one the policy can match, so a
 * label holding a '.' or a space can never pass for another name.
 */
int
msg_name_text(const uint8_t *w, size_t len, char *out, size_t cap)
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
			int c = msg_lower(w[i + k]);

			if (!msg_name_char(c))
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
msg_parse_opt(const uint8_t *p, size_t len, size_t *off, struct msg_query *q)
{
	size_t o = *off, rdlen, end;

	if (o + 11 > len)
		return "truncated additional record";
	if (p[o] != 0)
		return "additional record is not an OPT record at the root";
	if (msg_get16(p + o + 1) != MSG_TYPE_OPT)
		return "additional record is not an OPT record";
	q->edns = 1;
	q->udp_size = msg_get16(p + o + 3);
	q->edns_version = p[o + 6];
	rdlen = msg_get16(p + o + 9);
	o += 11;
	if (o + rdlen > len)
		return "truncated OPT record";
	end = o + rdlen;
	while (o < end) {
		if (o + 4 > end || o + 4 + msg_get16(p + o + 2) > end)
			return "truncated EDNS option";
		o += 4 + msg_get16(p + o + 2);
	}
	*off = o;
	return NULL;
}

/* The question name at offset 12 of a query; compression is refused. */
static const char *
msg_parse_qname(const uint8_t *p, size_t len, size_t *off, struct msg_query *q)
{
	size_t o = MSG_HDR, n;

	for (;;) {
		if (o >= len)
			return "truncated question";
		n = p[o];
		if ((n & 0xc0) == 0xc0)
			return "compression pointer in a question";
		if (n & 0xc0)
			return "unknown label type";
		if (o - MSG_HDR + 1 + n > MSG_NAME_MAX)
			return "name too long";
		if (o + 1 + n > len)
			return "truncated question";
		o += 1 + n;
		if (n == 0)
			break;
	}
	q->qname_len = o - MSG_HDR;
	memcpy(q->qname, p + MSG_HDR, q->qname_len);
	*off = o;
	return NULL;
}

static void
msg_make_key(struct msg_query *q)
{
	size_t i;

	for (i = 0; i < q->qname_len; i++)
		q->key[i] = (uint8_t)msg_lower(q->qname[i]);
	msg_put16(q->key + i, q->qtype);
	msg_put16(q->key + i + 2, q->qclass);
	q->key_len = q->qname_len + 4;
	q->name_ok = msg_name_text(q->qname, q->qname_len, q->name, sizeof q->name) == 0 &&
	             q->name[0] != '\0';
}

/*
 * Check a client's query. NULL when it can be answered; otherwise the
 * reason, with *rcode the error to reply (FORMERR, NOTIMP, REFUSED,
 * BADVERS) or -1 when nothing may be sent back (no header, or a response).
 */
const char *
msg_parse_query(const uint8_t *p, size_t len, struct msg_query *q, int *rcode)
{
	const char *err;
	size_t off;
	unsigned opcode;

	memset(q, 0, offsetof(struct msg_query, qname));
	q->key_len = 0;
	q->name[0] = '\0';
	q->name_ok = 0;
	q->edns = 0;
	q->udp_size = 0;
	q->edns_version = 0;
	*rcode = -1;
	if (len < MSG_HDR)
		return "shorter than a header";
	q->id = msg_get16(p);
	q->flags[0] = p[2];
	q->flags[1] = p[3];
	if (p[2] & 0x80)
		return "a response, not a query";
	*rcode = MSG_FORMERR;
	opcode = (p[2] >> 3) & 0xf;
	if (msg_get16(p + 4) != 1)
		return opcode != 0 ? (*rcode = MSG_NOTIMP, "opcode not supported")
		                   : "question count is not 1";
	if ((err = msg_parse_qname(p, len, &off, q)) != NULL)
		return err;
	if (off + 4 > len)
		return "truncated question";
	q->qtype = msg_get16(p + off);
	q->qclass = msg_get16(p + off + 2);
	q->has_question = 1;
	off += 4;
	msg_make_key(q);
	if (msg_get16(p + 6) != 0 || msg_get16(p + 8) != 0)
		return "answer or authority records in a query";
	if (msg_get16(p + 10) > 1)
		return "more than one additional record";
	if (msg_get16(p + 10) == 1 && (err = msg_parse_opt(p, len, &off, q)) != NULL)
		return err;
	if (off != len)
		return "trailing bytes after the query";
	if (opcode != 0)
		return (*rcode = MSG_NOTIMP, "opcode not supported");
	if (q->edns && q->edns_version != 0)
		return (*rcode = MSG_RCODE_BADVERS, "EDNS version not supported");
	if (q->qtype == MSG_TYPE_OPT || q->qtype == MSG_TYPE_TSIG)
		return "meta type in a question";
	if (q->qtype >= 251 && q->qtype <= 254)
		return (*rcode = MSG_REFUSED, "zone transfers are not served");
	if (q->qclass != LDNS_RR_CLASS_IN)
		return (*rcode = MSG_REFUSED, "only class IN is served");
	return NULL;
}

/* Append an OPT record (with an EDE option when ede >= 0); 0 if no room. */
static size_t
msg_put_opt(uint8_t *out, size_t cap, unsigned rcode, int ede, const char *text)
{
	size_t tlen = text != NULL ? strnlen(text, MSG_EDE_TEXT_MAX) : 0;
	size_t olen = ede >= 0 ? 6 + tlen : 0;

	if (11 + olen > cap)
		return 0;
	out[0] = 0;
	msg_put16(out + 1, MSG_TYPE_OPT);
	msg_put16(out + 3, MSG_UDP_SIZE);
	msg_put32(out + 5, (uint32_t)(rcode >> 4) << 24);
	msg_put16(out + 9, (uint16_t)olen);
	if (ede >= 0) {
		msg_put16(out + 11, LDNS_EDNS_EDE);
		msg_put16(out + 13, (uint16_t)(2 + tlen));
		msg_put16(out + 15, (uint16_t)ede);
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
msg_reply_simple(const struct msg_query *q, unsigned rcode, int ede, const char *text, uint8_t *out,
                 size_t cap)
{
	size_t len = MSG_HDR, n;

	if (cap < MSG_HDR + MSG_KEY_MAX)
		return 0;
	memset(out, 0, MSG_HDR);
	msg_put16(out, q->id);
	out[2] = (uint8_t)(0x80 | (q->flags[0] & 0x79));
	out[3] = (uint8_t)(0x80 | (rcode & 0xf));
	if (q->has_question) {
		msg_put16(out + 4, 1);
		memcpy(out + len, q->qname, q->qname_len);
		len += q->qname_len;
		msg_put16(out + len, q->qtype);
		msg_put16(out + len + 2, q->qclass);
		len += 4;
	}
	if (q->edns || rcode > 15) {
		if ((n = msg_put_opt(out + len, cap - len, rcode, ede, text)) == 0)
			return 0;
		msg_put16(out + 10, 1);
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
msg_reply_served(const struct msg_query *q, const struct answer_served *s, uint32_t elapsed,
                 size_t limit, uint8_t *out, size_t cap)
{
	size_t len, i, n, tlen = strnlen(s->ede_text, MSG_EDE_TEXT_MAX);
	uint32_t ttl;

	len = s->len + (q->edns ? 11 + (s->ede >= 0 ? 6 + tlen : 0) : 0);
	if (len > limit || len > cap) {
		if ((len = msg_reply_simple(q, s->rcode, -1, NULL, out, cap)) > 0)
			out[2] |= 0x02;
		return len;
	}
	memcpy(out, s->wire, s->len);
	msg_put16(out, q->id);
	out[2] = (uint8_t)(0x80 | (q->flags[0] & 0x01));
	out[3] = (uint8_t)(0x80 | (s->rcode & 0xf));
	memcpy(out + MSG_HDR, q->qname, q->qname_len);
	for (i = 0; i < s->nttl; i++) {
		ttl = msg_get32(out + s->ttl_off[i]);
		msg_put32(out + s->ttl_off[i], ttl > elapsed ? ttl - elapsed : 0);
	}
	len = s->len;
	if (q->edns) {
		n = msg_put_opt(out + len, cap - len, s->rcode, s->ede, s->ede_text);
		msg_put16(out + 10, (uint16_t)(msg_get16(out + 10) + 1));
		len += n;
	}
	return len;
}

/* An upstream query for key (name, type, class): RD and an EDNS OPT record. */
size_t
msg_build_query(const uint8_t *key, size_t key_len, uint16_t id, uint8_t *out, size_t cap)
{
	if (cap < MSG_HDR + key_len + 11)
		return 0;
	memset(out, 0, MSG_HDR);
	msg_put16(out, id);
	out[2] = 0x01;
	msg_put16(out + 4, 1);
	msg_put16(out + 10, 1);
	memcpy(out + MSG_HDR, key, key_len);
	return MSG_HDR + key_len + msg_put_opt(out + MSG_HDR + key_len, 11, 0, -1, NULL);
}

/* The question key of a host name (text, no trailing dot) and a type. */
const char *
msg_name_key(const char *name, uint16_t qtype, uint8_t *key, size_t *key_len)
{
	size_t o = 0, n;
	const char *dot;

	while (*name != '\0') {
		dot = strchr(name, '.');
		n = dot != NULL ? (size_t)(dot - name) : strlen(name);
		if (n == 0 || n > 63)
			return "bad label";
		if (o + 1 + n + 1 > MSG_NAME_MAX)
			return "name too long";
		key[o++] = (uint8_t)n;
		while (n-- > 0)
			key[o++] = (uint8_t)msg_lower((unsigned char)*name++);
		if (*name == '.')
			name++;
	}
	key[o++] = 0;
	msg_put16(key + o, qtype);
	msg_put16(key + o + 2, LDNS_RR_CLASS_IN);
	*key_len = o + 4;
	return NULL;
}

const char msg_err_case[] = "the answer's question differs in case only";

/*
 * A message into an ldns packet, record by record. ldns_wire2pkt() would
 * do it, but it keeps only the last TSIG record of a message and loses
 * the others, which lets every forged answer with two of them leak
 * memory; here every record lands in its section (OPT and TSIG
 * included, for answer_prepare() to drop), and the packet owns them all.
 */
static ldns_status
msg_wire2pkt(ldns_pkt **out, const uint8_t *p, size_t len)
{
	static const ldns_pkt_section secs[4] = {LDNS_SECTION_QUESTION, LDNS_SECTION_ANSWER,
	                                         LDNS_SECTION_AUTHORITY, LDNS_SECTION_ADDITIONAL};
	ldns_status st = LDNS_STATUS_OK;
	ldns_pkt *pkt;
	ldns_rr *rr;
	size_t pos = MSG_HDR, s, i, n;

	*out = NULL;
	if (len < MSG_HDR)
		return LDNS_STATUS_WIRE_INCOMPLETE_HEADER;
	if ((pkt = ldns_pkt_new()) == NULL)
		return LDNS_STATUS_MEM_ERR;
	ldns_pkt_set_id(pkt, msg_get16(p));
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
		n = msg_get16(p + 4 + 2 * s);
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
msg_name_mix(uint8_t *w, size_t len, const uint8_t *rnd, size_t rndlen)
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
 * refused with msg_err_case: a forgery, or an upstream that does not
 * keep the case of questions. On NULL, *pkt is the parsed answer.
 */
const char *
msg_check_answer(const uint8_t *p, size_t len, uint16_t id, const uint8_t *question, size_t qlen,
                 ldns_pkt **pkt)
{
	size_t i;

	*pkt = NULL;
	if (len < MSG_HDR)
		return "short answer";
	if (msg_get16(p) != id)
		return "wrong id";
	if (!(p[2] & 0x80) || ((p[2] >> 3) & 0xf) != 0)
		return "not a response to a query";
	if (msg_get16(p + 4) != 1 || len < MSG_HDR + qlen)
		return "question missing from the answer";
	if (memcmp(p + MSG_HDR, question, qlen) != 0) {
		for (i = 0; i < qlen; i++)
			if (i + 4 < qlen ? msg_lower(p[MSG_HDR + i]) != msg_lower(question[i])
			                 : p[MSG_HDR + i] != question[i])
				return "answer to another question";
		return msg_err_case;
	}
	if (msg_wire2pkt(pkt, p, len) != LDNS_STATUS_OK) {
		*pkt = NULL;
		return "unparsable answer";
	}
	return NULL;
}

/* Offsets of the TTL of every record of a message we wrote. */
int
msg_ttl_offsets(const uint8_t *w, size_t len, struct answer_served *s)
{
	size_t o = MSG_HDR, nrr, i;

	if (len < MSG_HDR)
		return -1;
	nrr = (size_t)msg_get16(w + 6) + msg_get16(w + 8) + msg_get16(w + 10);
	for (i = 0; i < msg_get16(w + 4); i++) {
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
		o += 10 + msg_get16(w + o + 8);
	}
	return o == len ? 0 : -1;
}

const char *
msg_type_name(uint16_t t, char *buf, size_t len)
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
msg_rcode_name(unsigned rcode)
{
	switch (rcode) {
	case MSG_NOERROR:
		return "NOERROR";
	case MSG_FORMERR:
		return "FORMERR";
	case MSG_SERVFAIL:
		return "SERVFAIL";
	case MSG_NXDOMAIN:
		return "NXDOMAIN";
	case MSG_NOTIMP:
		return "NOTIMP";
	case MSG_REFUSED:
		return "REFUSED";
	case MSG_RCODE_BADVERS:
		return "BADVERS";
	}
	return "RCODE";
}
