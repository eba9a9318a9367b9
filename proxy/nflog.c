/*
 * Packets the sandbox's nftables rules drop, turned into audit events. In
 * strict and off mode whatever cannot pass egressd (UDP other than DNS,
 * QUIC, DNS over TLS, ICMP, other IP protocols) is dropped in the kernel
 * and never reaches a listener; the drop rule also logs it to an NFLOG
 * group. sandbox-init binds a netfilter netlink socket to that group while
 * it is still root and hands it down as the inherited fd "nflog"; egressd
 * only reads it: one `packet` event per logged packet, naming the sender's
 * uid, the protocol and the destination. The rule's own rate limit bounds
 * how many a flood can write.
 *
 * The messages come from the kernel, but the packet bytes inside them are
 * the payload's: both layers are parsed with every length checked.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit.h"
#include "proxy.h"

#define NFLOG_BUF        65536
#define NFLOG_PER_WAKEUP 64
#define NFLOG_DRAIN_MAX  1024
#define NFLOG_V6_EXT_MAX 8 /* extension headers walked before giving up */

struct nflog {
	struct egressd *e;
	struct event *ev;
	int fd;
	uint64_t lost; /* messages the kernel could not queue (ENOBUFS) */
	unsigned char *buf;
};

static uint16_t
nflog_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
nflog_ports(const unsigned char *l4, size_t n, struct nflog_packet *pkt)
{
	switch (pkt->proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		if (n >= 4) {
			pkt->sport = nflog_get16(l4);
			pkt->dport = nflog_get16(l4 + 2);
		}
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (n >= 1)
			pkt->icmp_type = l4[0];
		break;
	}
}

static const char *
nflog_decode4(const unsigned char *p, size_t n, struct nflog_packet *pkt)
{
	size_t ihl;

	if (n < 20)
		return "IPv4 header truncated";
	ihl = (size_t)(p[0] & 0x0f) * 4;
	if (ihl < 20 || ihl > n)
		return "IPv4 header length out of range";
	pkt->family = 4;
	pkt->proto = p[9];
	inet_ntop(AF_INET, p + 12, pkt->src, sizeof pkt->src);
	inet_ntop(AF_INET, p + 16, pkt->dst, sizeof pkt->dst);
	/* A later fragment carries no transport header. */
	if ((nflog_get16(p + 6) & 0x1fff) == 0)
		nflog_ports(p + ihl, n - ihl, pkt);
	return NULL;
}

static const char *
nflog_decode6(const unsigned char *p, size_t n, struct nflog_packet *pkt)
{
	size_t off = 40, len;
	int next, i;

	if (n < 40)
		return "IPv6 header truncated";
	pkt->family = 6;
	inet_ntop(AF_INET6, p + 8, pkt->src, sizeof pkt->src);
	inet_ntop(AF_INET6, p + 24, pkt->dst, sizeof pkt->dst);
	next = p[6];
	for (i = 0; i < NFLOG_V6_EXT_MAX; i++) {
		if (next == IPPROTO_HOPOPTS || next == IPPROTO_ROUTING || next == IPPROTO_DSTOPTS) {
			if (n - off < 2)
				break;
			len = ((size_t)p[off + 1] + 1) * 8;
		} else if (next == IPPROTO_FRAGMENT) {
			if (n - off < 8)
				break;
			if ((nflog_get16(p + off + 2) & 0xfff8) != 0) {
				/* Not the first fragment: no transport header. */
				pkt->proto = p[off];
				return NULL;
			}
			len = 8;
		} else {
			pkt->proto = next;
			nflog_ports(p + off, n - off, pkt);
			return NULL;
		}
		if (len > n - off)
			break;
		next = p[off];
		off += len;
	}
	/* Headers past the copied bytes: the protocol is not known. */
	pkt->proto = -1;
	return NULL;
}

/* The IP packet as logged (network header first). */
const char *
nflog_decode_packet(const unsigned char *p, size_t n, struct nflog_packet *pkt)
{
	if (n < 1)
		return "empty packet";
	switch (p[0] >> 4) {
	case 4:
		return nflog_decode4(p, n, pkt);
	case 6:
		return nflog_decode6(p, n, pkt);
	}
	return "not an IP packet";
}

static void
nflog_packet_init(struct nflog_packet *pkt)
{
	memset(pkt, 0, sizeof *pkt);
	pkt->uid = -1;
	pkt->proto = -1;
	pkt->sport = pkt->dport = -1;
	pkt->icmp_type = -1;
}

/* The attributes of one NFULNL_MSG_PACKET, after its nfgenmsg. */
static const char *
nflog_attrs(const unsigned char *p, size_t n, struct nflog_packet *pkt)
{
	const struct nlattr *a;
	const unsigned char *v;
	size_t alen, vlen, step;
	uint32_t u;

	while (n >= NLA_HDRLEN) {
		a = (const struct nlattr *)(const void *)p;
		alen = a->nla_len;
		if (alen < NLA_HDRLEN || alen > n)
			return "attribute length out of range";
		v = p + NLA_HDRLEN;
		vlen = alen - NLA_HDRLEN;
		switch (a->nla_type & NLA_TYPE_MASK) {
		case NFULA_PREFIX:
			/* NUL-terminated by the kernel; cut at the first NUL anyway. */
			vlen = strnlen((const char *)v, vlen);
			if (vlen >= sizeof pkt->prefix)
				vlen = sizeof pkt->prefix - 1;
			memcpy(pkt->prefix, v, vlen);
			pkt->prefix[vlen] = '\0';
			break;
		case NFULA_UID:
			if (vlen < 4)
				return "uid attribute truncated";
			memcpy(&u, v, 4);
			pkt->uid = (int64_t)ntohl(u);
			break;
		case NFULA_PAYLOAD:
			pkt->payload = v;
			pkt->payload_len = vlen;
			break;
		}
		step = NLA_ALIGN(alen);
		if (step >= n)
			break;
		p += step;
		n -= step;
	}
	return NULL;
}

/*
 * The next packet message of a netlink datagram: NFLOG_NEXT_PACKET with
 * *pkt filled, NFLOG_NEXT_SKIP for another kind of message, NFLOG_NEXT_END
 * at the end, NFLOG_NEXT_ERROR with *err set when the bytes are not whole
 * messages (the rest of the datagram is dropped).
 */
enum nflog_next
nflog_next(const unsigned char **p, size_t *left, struct nflog_packet *pkt, const char **err)
{
	const struct nlmsghdr *h;
	const unsigned char *body;
	size_t len, step;

	*err = NULL;
	if (*left == 0)
		return NFLOG_NEXT_END;
	if (*left < NLMSG_HDRLEN) {
		*err = "message header truncated";
		return NFLOG_NEXT_ERROR;
	}
	h = (const struct nlmsghdr *)(const void *)*p;
	len = h->nlmsg_len;
	if (len < NLMSG_HDRLEN || len > *left) {
		*err = "message length out of range";
		return NFLOG_NEXT_ERROR;
	}
	body = *p + NLMSG_HDRLEN;
	step = NLMSG_ALIGN(len);
	if (step > *left)
		step = *left;
	*p += step;
	*left -= step;
	if (h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
		return NFLOG_NEXT_SKIP;
	len -= NLMSG_HDRLEN;
	if (len < sizeof(struct nfgenmsg)) {
		*err = "packet message truncated";
		return NFLOG_NEXT_ERROR;
	}
	nflog_packet_init(pkt);
	if ((*err = nflog_attrs(body + NFA_ALIGN(sizeof(struct nfgenmsg)),
	                        len - NFA_ALIGN(sizeof(struct nfgenmsg)), pkt)) != NULL)
		return NFLOG_NEXT_ERROR;
	if (pkt->payload == NULL) {
		*err = "packet message without the packet";
		return NFLOG_NEXT_ERROR;
	}
	if ((*err = nflog_decode_packet(pkt->payload, pkt->payload_len, pkt)) != NULL)
		return NFLOG_NEXT_ERROR;
	return NFLOG_NEXT_PACKET;
}

/* tcp, udp, icmp, icmpv6, or the protocol number. */
const char *
nflog_proto_name(const struct nflog_packet *pkt, char *buf, size_t len)
{
	switch (pkt->proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case -1:
		return "unknown";
	}
	snprintf(buf, len, "%d", pkt->proto);
	return buf;
}

/* What the packet was, in the words a user looks for. */
const char *
nflog_reason(const struct nflog_packet *pkt, const char **hint)
{
	int off = strcmp(pkt->prefix, "off-drop") == 0;

	*hint = NULL;
	if (off) {
		*hint = "off mode: nothing leaves the sandbox";
		return "off mode: the packet was dropped";
	}
	if (pkt->proto == IPPROTO_UDP && pkt->dport == 443) {
		*hint = "HTTP/3 clients fall back to HTTPS over TCP, which goes through egressd";
		return "QUIC (UDP 443) does not leave the sandbox";
	}
	if (pkt->proto == IPPROTO_TCP && pkt->dport == 853) {
		*hint = "names resolve through egressd's resolver (port 53 is redirected to it)";
		return "DNS over TLS (TCP 853) does not leave the sandbox";
	}
	if (pkt->proto == IPPROTO_UDP)
		return "UDP other than DNS does not leave the sandbox";
	if (pkt->proto == IPPROTO_ICMP || pkt->proto == IPPROTO_ICMPV6)
		return "ICMP does not leave the sandbox";
	return "only TCP through egressd and DNS to its resolver leave the sandbox";
}

static void
nflog_audit(struct nflog *l, const struct nflog_packet *pkt)
{
	struct audit_event ev;
	char client[INET6_ADDRSTRLEN + 8], num[8];
	const char *hint;

	audit_event_init(&ev);
	ev.event = "packet";
	ev.action = "block";
	ev.rule = pkt->prefix[0] != '\0' ? pkt->prefix : "nftables";
	ev.source = "nftables";
	ev.reason = nflog_reason(pkt, &hint);
	ev.hint = hint;
	ev.mode = config_mode_name(policy_mode(l->e->policy));
	if (pkt->sport >= 0)
		snprintf(client, sizeof client, pkt->family == 6 ? "[%s]:%d" : "%s:%d", pkt->src,
		         pkt->sport);
	else
		snprintf(client, sizeof client, "%s", pkt->src);
	ev.client = client;
	ev.host = pkt->dst;
	ev.port = pkt->dport;
	ev.proto = nflog_proto_name(pkt, num, sizeof num);
	ev.uid = pkt->uid;
	audit_write(l->e->audit, &ev);
	l->e->m.packets_dropped++;
}

static void
nflog_datagram(struct nflog *l, const unsigned char *p, size_t n)
{
	struct nflog_packet pkt;
	const char *err;

	for (;;) {
		switch (nflog_next(&p, &n, &pkt, &err)) {
		case NFLOG_NEXT_PACKET:
			nflog_audit(l, &pkt);
			continue;
		case NFLOG_NEXT_SKIP:
			continue;
		case NFLOG_NEXT_ERROR:
			log_warnx("nflog: %s", err);
			return;
		case NFLOG_NEXT_END:
			return;
		}
	}
}

/*
 * Reads up to max datagrams; 0 once the socket is empty, -1 when reading
 * failed for good (the read event is then removed), 1 when more may wait.
 */
static int
nflog_read(struct nflog *l, int max)
{
	ssize_t n;
	int i;

	for (i = 0; i < max; i++) {
		n = recv(l->fd, l->buf, NFLOG_BUF, MSG_DONTWAIT);
		if (n > 0) {
			nflog_datagram(l, l->buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == ENOBUFS) {
			/* The kernel's queue overflowed: say so, keep reading. */
			if (l->lost++ == 0)
				log_warnx("nflog: dropped packets were logged faster than read; "
				          "some are missing from the audit (the rule's counter has "
				          "them all)");
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		log_warn("nflog: recv");
		event_del(l->ev);
		return -1;
	}
	return 1;
}

static void
nflog_read_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)nflog_read(arg, NFLOG_PER_WAKEUP);
}

/*
 * At exit: whatever the socket holds is audited before the last line. The
 * group is bound with a queue threshold of one packet (sandbox-init), so a
 * packet dropped before the payload exited is already here. Bounded: the
 * rules' rate limit lets at most a burst's worth wait.
 */
void
nflog_drain(struct nflog *l)
{
	if (l != NULL)
		(void)nflog_read(l, NFLOG_DRAIN_MAX);
}

/* Reads the inherited NFLOG socket fd from now on; takes the fd. */
struct nflog *
nflog_new(struct egressd *e, int fd)
{
	struct nflog *l;

	l = xcalloc(1, sizeof *l);
	l->e = e;
	l->fd = fd;
	l->buf = xmalloc(NFLOG_BUF);
	l->ev = event_new(e->base, fd, EV_READ | EV_PERSIST, nflog_read_cb, l);
	if (l->ev == NULL || event_add(l->ev, NULL) == -1)
		fatalx("nflog: cannot add the read event");
	return l;
}

void
nflog_free(struct nflog *l)
{
	if (l == NULL)
		return;
	event_free(l->ev);
	close(l->fd);
	free(l->buf);
	free(l);
}
