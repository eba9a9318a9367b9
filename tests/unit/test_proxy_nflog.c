/*
 * Unit tests for proxy/nflog.c: the netlink messages of an NFLOG group as
 * the kernel sends them, built byte by byte here: IPv4 and IPv6 packets of
 * each kind the sandbox drops (QUIC, other UDP, DNS over TLS, ICMP,
 * ICMPv6 behind an extension header, a later fragment), several messages
 * in one datagram, other message types skipped, and broken lengths at
 * every layer reported, never read past.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include <cmocka.h>

#include "proxy.h"

struct msg {
	unsigned char b[1024];
	size_t n;
};

static void
put(struct msg *m, const void *p, size_t n)
{
	assert_true(m->n + n <= sizeof m->b);
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
attr(struct msg *m, uint16_t type, const void *v, size_t n)
{
	struct nlattr a = {(uint16_t)(NLA_HDRLEN + n), type};
	static const unsigned char zero[4];

	put(m, &a, sizeof a);
	put(m, v, n);
	put(m, zero, NLA_ALIGN(n) - n);
}

/* One NFULNL_MSG_PACKET with a prefix, a uid and the packet bytes. */
static void
packet_msg(struct msg *m, const char *prefix, int64_t uid, const void *pkt, size_t n)
{
	size_t start = m->n;
	struct nlmsghdr h = {0};
	struct nfgenmsg g = {AF_INET, NFNETLINK_V0, htons(7)};
	struct nfulnl_msg_packet_hdr ph = {htons(0x0800), 3, 0};
	uint32_t u;

	h.nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET;
	put(m, &h, sizeof h);
	put(m, &g, sizeof g);
	attr(m, NFULA_PACKET_HDR, &ph, sizeof ph);
	if (prefix != NULL)
		attr(m, NFULA_PREFIX, prefix, strlen(prefix) + 1);
	if (uid >= 0) {
		u = htonl((uint32_t)uid);
		attr(m, NFULA_UID, &u, sizeof u);
	}
	if (pkt != NULL)
		attr(m, NFULA_PAYLOAD, pkt, n);
	((struct nlmsghdr *)(void *)(m->b + start))->nlmsg_len = (uint32_t)(m->n - start);
}

/* An IPv4 header to 198.18.0.1 with proto, then l4 bytes. */
static size_t
ip4(unsigned char *p, int proto, const unsigned char *l4, size_t n)
{
	memset(p, 0, 20);
	p[0] = 0x45;
	p[9] = (unsigned char)proto;
	p[12] = 198, p[13] = 18, p[14] = 0, p[15] = 2;
	p[16] = 198, p[17] = 18, p[18] = 0, p[19] = 1;
	memcpy(p + 20, l4, n);
	return 20 + n;
}

static const unsigned char udp443[8] = {0xc3, 0x50, 0x01, 0xbb, 0, 9, 0, 0};
static const unsigned char tcp853[20] = {0xa0, 0x00, 0x03, 0x55};
static const unsigned char icmp_echo[8] = {8, 0};

static enum nflog_next
one(struct msg *m, struct nflog_packet *pkt, const char **err)
{
	const unsigned char *p = m->b;
	size_t left = m->n;

	return nflog_next(&p, &left, pkt, err);
}

static void
test_quic_v4(void **state)
{
	unsigned char ip[64];
	struct msg m = {0};
	struct nflog_packet pkt;
	const char *err, *hint;
	char num[8];

	packet_msg(&m, "strict-drop", 1000, ip, ip4(ip, IPPROTO_UDP, udp443, sizeof udp443));
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_null(err);
	assert_string_equal(pkt.prefix, "strict-drop");
	assert_int_equal(pkt.uid, 1000);
	assert_int_equal(pkt.family, 4);
	assert_string_equal(pkt.src, "198.18.0.2");
	assert_string_equal(pkt.dst, "198.18.0.1");
	assert_int_equal(pkt.sport, 50000);
	assert_int_equal(pkt.dport, 443);
	assert_string_equal(nflog_proto_name(&pkt, num, sizeof num), "udp");
	assert_non_null(strstr(nflog_reason(&pkt, &hint), "QUIC"));
	assert_non_null(hint);
}

static void
test_dot_and_icmp(void **state)
{
	unsigned char ip[64];
	struct msg m = {0};
	struct nflog_packet pkt;
	const char *err, *hint;
	const unsigned char *p;
	size_t left;

	/* Two messages in one datagram, a non-packet message between them. */
	packet_msg(&m, "strict-drop", 1000, ip, ip4(ip, IPPROTO_TCP, tcp853, sizeof tcp853));
	{
		struct nlmsghdr done = {NLMSG_HDRLEN, NLMSG_DONE, 0, 0, 0};
		put(&m, &done, sizeof done);
	}
	packet_msg(&m, "off-drop", 0, ip, ip4(ip, IPPROTO_ICMP, icmp_echo, sizeof icmp_echo));
	p = m.b;
	left = m.n;
	assert_int_equal(nflog_next(&p, &left, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(pkt.dport, 853);
	assert_non_null(strstr(nflog_reason(&pkt, &hint), "DNS over TLS"));
	assert_int_equal(nflog_next(&p, &left, &pkt, &err), NFLOG_NEXT_SKIP);
	assert_int_equal(nflog_next(&p, &left, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(pkt.proto, IPPROTO_ICMP);
	assert_int_equal(pkt.icmp_type, 8);
	assert_int_equal(pkt.dport, -1);
	assert_int_equal(pkt.uid, 0);
	assert_non_null(strstr(nflog_reason(&pkt, &hint), "off mode"));
	assert_int_equal(nflog_next(&p, &left, &pkt, &err), NFLOG_NEXT_END);
}

static void
test_v6_extension_and_fragment(void **state)
{
	unsigned char ip[128];
	struct msg m = {0};
	struct nflog_packet pkt;
	const char *err;
	char num[8];

	/* IPv6 → hop-by-hop options (8 bytes) → ICMPv6 echo request. */
	memset(ip, 0, sizeof ip);
	ip[0] = 0x60;
	ip[6] = IPPROTO_HOPOPTS;
	inet_pton(AF_INET6, "2001:2::2", ip + 8);
	inet_pton(AF_INET6, "2001:2::1", ip + 24);
	ip[40] = IPPROTO_ICMPV6;
	ip[41] = 0;
	ip[48] = 128;
	packet_msg(&m, "strict-drop", 1000, ip, 56);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(pkt.family, 6);
	assert_string_equal(pkt.dst, "2001:2::1");
	assert_string_equal(nflog_proto_name(&pkt, num, sizeof num), "icmpv6");
	assert_int_equal(pkt.icmp_type, 128);

	/* A later IPv4 fragment of UDP: protocol known, no ports read. */
	memset(&m, 0, sizeof m);
	ip4(ip, IPPROTO_UDP, udp443, sizeof udp443);
	ip[6] = 0x00;
	ip[7] = 0x10;
	packet_msg(&m, "strict-drop", 1000, ip, 28);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(pkt.proto, IPPROTO_UDP);
	assert_int_equal(pkt.dport, -1);

	/* Another protocol is named by number; copied bytes short of the header. */
	memset(&m, 0, sizeof m);
	ip4(ip, 132, udp443, 0);
	packet_msg(&m, "strict-drop", 1000, ip, 20);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_string_equal(nflog_proto_name(&pkt, num, sizeof num), "132");
	memset(&m, 0, sizeof m);
	ip4(ip, IPPROTO_UDP, udp443, sizeof udp443);
	packet_msg(&m, "strict-drop", 1000, ip, 22);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(pkt.dport, -1);
}

static void
test_broken(void **state)
{
	unsigned char ip[64];
	struct msg m = {0};
	struct nflog_packet pkt;
	const char *err;
	const unsigned char *p;
	size_t left, n;

	n = ip4(ip, IPPROTO_UDP, udp443, sizeof udp443);

	/* No packet attribute. */
	packet_msg(&m, "strict-drop", 1000, NULL, 0);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);
	assert_non_null(err);

	/* A message longer than the datagram, shorter than its header. */
	memset(&m, 0, sizeof m);
	packet_msg(&m, "strict-drop", 1000, ip, n);
	((struct nlmsghdr *)(void *)m.b)->nlmsg_len = (uint32_t)m.n + 4;
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);
	((struct nlmsghdr *)(void *)m.b)->nlmsg_len = 3;
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);

	/* An attribute running past its message. */
	memset(&m, 0, sizeof m);
	packet_msg(&m, "strict-drop", 1000, ip, n);
	((struct nlattr *)(void *)(m.b + NLMSG_HDRLEN + 4))->nla_len = 0xfff0;
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);

	/* Bytes that are not IP, an IPv4 header length past the packet. */
	memset(&m, 0, sizeof m);
	packet_msg(&m, "strict-drop", 1000, "\x10\x00", 2);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);
	memset(&m, 0, sizeof m);
	ip[0] = 0x4f;
	packet_msg(&m, "strict-drop", 1000, ip, 24);
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_ERROR);

	/* A truncated header at the end of a datagram. */
	p = (const unsigned char *)"\x20\x00\x00";
	left = 3;
	assert_int_equal(nflog_next(&p, &left, &pkt, &err), NFLOG_NEXT_ERROR);

	/* An unterminated prefix longer than the field is cut, not overrun. */
	memset(&m, 0, sizeof m);
	{
		char longp[100];

		memset(longp, 'x', sizeof longp - 1);
		longp[sizeof longp - 1] = '\0';
		ip[0] = 0x45;
		packet_msg(&m, longp, 1000, ip, n);
	}
	assert_int_equal(one(&m, &pkt, &err), NFLOG_NEXT_PACKET);
	assert_int_equal(strlen(pkt.prefix), sizeof pkt.prefix - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quic_v4),
	    cmocka_unit_test(test_dot_and_icmp),
	    cmocka_unit_test(test_v6_extension_and_fragment),
	    cmocka_unit_test(test_broken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
