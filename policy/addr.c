/*
 * IP addresses and CIDR blocks as written in the configuration, and the
 * table of special-purpose ranges that tells a globally reachable address
 * from a loopback, private, metadata or otherwise local one. The proxy asks
 * addr_special about the address it is about to connect to, after DNS, so
 * every form an address can take (IPv4-mapped, NAT64, 6to4) is reduced to
 * the address that is really reached before the table is consulted.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "policy_int.h"

struct addr_range {
	sa_family_t af;
	uint8_t net[16];
	uint8_t plen;
	const char *name;
};

static const char addr_metadata[] = "metadata";

/*
 * First match wins: metadata hosts come first, and every range comes before
 * any larger range that contains it (broadcast before 240/4, ::1 before
 * ::/96, the named IPv6 blocks before the reserved space around them).
 */
static const struct addr_range addr_ranges[] = {
    {AF_INET, {169, 254, 169, 254}, 32, addr_metadata},
    {AF_INET, {169, 254, 170, 2}, 32, addr_metadata},   /* ECS tasks */
    {AF_INET, {100, 100, 100, 200}, 32, addr_metadata}, /* Alibaba */
    {AF_INET, {168, 63, 129, 16}, 32, addr_metadata},   /* Azure */
    {AF_INET6, {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, 0x54}, 128, addr_metadata},

    {AF_INET, {0}, 8, "this-network"},
    {AF_INET, {10}, 8, "private"},
    {AF_INET, {100, 64}, 10, "cgnat"},
    {AF_INET, {127}, 8, "loopback"},
    {AF_INET, {169, 254}, 16, "link-local"},
    {AF_INET, {172, 16}, 12, "private"},
    {AF_INET, {192, 0, 0}, 24, "ietf-protocol"},
    {AF_INET, {192, 0, 2}, 24, "documentation"},
    {AF_INET, {192, 88, 99}, 24, "6to4-relay"},
    {AF_INET, {192, 168}, 16, "private"},
    {AF_INET, {198, 18}, 15, "benchmarking"},
    {AF_INET, {198, 51, 100}, 24, "documentation"},
    {AF_INET, {203, 0, 113}, 24, "documentation"},
    {AF_INET, {224}, 4, "multicast"},
    {AF_INET, {255, 255, 255, 255}, 32, "broadcast"},
    {AF_INET, {240}, 4, "reserved"},

    {AF_INET6, {0}, 128, "unspecified"},
    {AF_INET6, {[15] = 1}, 128, "loopback"},
    {AF_INET6, {0}, 96, "reserved"}, /* IPv4-compatible, deprecated */
    {AF_INET6, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "nat64-local"},
    {AF_INET6, {0x01, 0x00}, 64, "discard"},
    {AF_INET6, {0x20, 0x01, 0x0d, 0xb8}, 32, "documentation"},
    {AF_INET6, {0x3f, 0xff}, 20, "documentation"},
    {AF_INET6, {0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, "benchmarking"},
    {AF_INET6, {0x20, 0x01, 0x00, 0x10}, 28, "orchid"},
    {AF_INET6, {0x20, 0x01, 0x00, 0x20}, 28, "orchid"},
    {AF_INET6, {0x20, 0x01}, 32, "teredo"},
    {AF_INET6, {0x5f, 0x00}, 16, "srv6"},
    {AF_INET6, {0xfc}, 7, "unique-local"},
    {AF_INET6, {0xfe, 0x80}, 10, "link-local"},
    {AF_INET6, {0xfe, 0xc0}, 10, "site-local"},
    {AF_INET6, {0xff}, 8, "multicast"},
    /* Only 2000::/3 is global unicast; the rest is reserved by the IETF. */
    {AF_INET6, {0x00}, 3, "reserved"},
    {AF_INET6, {0x40}, 2, "reserved"},
    {AF_INET6, {0x80}, 1, "reserved"},
};

static const uint8_t addr_mapped_prefix[12] = {[10] = 0xff, [11] = 0xff};
static const uint8_t addr_nat64_prefix[12] = {0x00, 0x64, 0xff, 0x9b};
static const uint8_t addr_v4compat_prefix[12];

/* Compares the first plen bits of two byte strings. */
static int
addr_prefix_equal(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned full = plen / 8, rest = plen % 8;
	uint8_t mask;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

static unsigned
addr_bits(sa_family_t af)
{
	return af == AF_INET ? 32 : 128;
}

/* Strict dotted quad: four decimal parts, no leading zeros, no other bases. */
static const char *
addr_parse_v4(const char *s, uint8_t out[4])
{
	unsigned part, v, ndigits;
	const char *p = s;

	for (part = 0; part < 4; part++) {
		if (part > 0 && *p++ != '.')
			return "invalid IPv4 address";
		v = 0;
		ndigits = 0;
		while (*p >= '0' && *p <= '9') {
			if (ndigits > 0 && v == 0)
				return "leading zero in IPv4 address";
			v = v * 10 + (unsigned)(*p - '0');
			if (v > 255)
				return "invalid IPv4 address";
			ndigits++;
			p++;
		}
		if (ndigits == 0)
			return "invalid IPv4 address";
		out[part] = (uint8_t)v;
	}
	if (*p != '\0')
		return "invalid IPv4 address";
	return NULL;
}

const char *
addr_parse(const char *s, struct addr *out)
{
	memset(out, 0, sizeof *out);
	if (*s == '\0')
		return "empty address";
	if (strchr(s, ':') == NULL) {
		out->af = AF_INET;
		return addr_parse_v4(s, out->a);
	}
	if (strchr(s, '%') != NULL)
		return "zone identifier not allowed";
	if (strlen(s) >= INET6_ADDRSTRLEN || inet_pton(AF_INET6, s, out->a) != 1) {
		memset(out, 0, sizeof *out);
		return "invalid IPv6 address";
	}
	out->af = AF_INET6;
	return NULL;
}

/*
 * IPv4 without printf (str_ipv4): every request's audit line and every
 * request to an address literal formats one. IPv6 (zero runs, mapped
 * forms) is left to inet_ntop.
 */
void
addr_format(const struct addr *a, char *out, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	if (len == 0)
		return;
	if (a->af == AF_INET)
		str_ipv4(tmp, a->a);
	else if (a->af != AF_INET6 || inet_ntop(AF_INET6, a->a, tmp, sizeof tmp) == NULL)
		strcpy(tmp, "invalid");
	str_copy(out, len, tmp);
}

const char *
addr_cidr_parse(const char *s, struct cidr *out)
{
	char text[INET6_ADDRSTRLEN];
	const char *slash, *p, *error;
	unsigned plen, i, bits;
	size_t alen;

	memset(out, 0, sizeof *out);
	slash = strchr(s, '/');
	alen = slash != NULL ? (size_t)(slash - s) : strlen(s);
	if (alen == 0)
		return "empty address";
	if (alen >= sizeof text)
		return "invalid address";
	memcpy(text, s, alen);
	text[alen] = '\0';
	if ((error = addr_parse(text, &out->net)) != NULL)
		return error;
	bits = addr_bits(out->net.af);
	if (slash == NULL) {
		out->plen = (uint8_t)bits;
		return NULL;
	}

	p = slash + 1;
	if (*p == '\0' || (p[0] == '0' && p[1] != '\0'))
		return "invalid prefix length";
	plen = 0;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return "invalid prefix length";
		plen = plen * 10 + (unsigned)(*p - '0');
		if (plen > bits)
			return "prefix length out of range";
	}
	for (i = plen; i < bits; i++) {
		if (out->net.a[i / 8] & (0x80 >> (i % 8)))
			return "host bits set";
	}
	out->plen = (uint8_t)plen;
	return NULL;
}

void
addr_cidr_format(const struct cidr *c, char *out, size_t len)
{
	char text[INET6_ADDRSTRLEN];

	addr_format(&c->net, text, sizeof text);
	snprintf(out, len, "%s/%u", text, c->plen);
}

void
addr_unmap(const struct addr *in, struct addr *out)
{
	struct addr tmp;

	if (in->af == AF_INET6 && memcmp(in->a, addr_mapped_prefix, 12) == 0) {
		memset(&tmp, 0, sizeof tmp);
		tmp.af = AF_INET;
		memcpy(tmp.a, in->a + 12, 4);
		*out = tmp;
		return;
	}
	if (out != in)
		*out = *in;
}

/*
 * Both sides are unmapped first, so ::ffff:10.1.2.3 is in 10.0.0.0/8 and
 * 10.1.2.3 is in ::ffff:10.0.0.0/104 alike.
 */
int
addr_in_cidr(const struct addr *a, const struct cidr *c)
{
	struct addr ua;
	struct cidr uc = *c;

	addr_unmap(a, &ua);
	if (c->net.af == AF_INET6 && c->plen >= 96 &&
	    memcmp(c->net.a, addr_mapped_prefix, 12) == 0) {
		addr_unmap(&c->net, &uc.net);
		uc.plen = (uint8_t)(c->plen - 96);
	}
	if (ua.af != uc.net.af || (ua.af != AF_INET && ua.af != AF_INET6))
		return 0;
	if (uc.plen > addr_bits(uc.net.af))
		return 0;
	return addr_prefix_equal(ua.a, uc.net.a, uc.plen);
}

static const char *
addr_table_lookup(const struct addr *a)
{
	const struct addr_range *r;
	size_t i;

	for (i = 0; i < EG_NELEM(addr_ranges); i++) {
		r = &addr_ranges[i];
		if (r->af == a->af && addr_prefix_equal(a->a, r->net, r->plen))
			return r->name;
	}
	return NULL;
}

/* The IPv4 address carried in a NAT64 or 6to4 address, if any. */
static int
addr_embedded_v4(const struct addr *a, struct addr *v4)
{
	memset(v4, 0, sizeof *v4);
	v4->af = AF_INET;
	if (memcmp(a->a, addr_nat64_prefix, 12) == 0) {
		memcpy(v4->a, a->a + 12, 4);
		return 1;
	}
	if (a->a[0] == 0x20 && a->a[1] == 0x02) {
		memcpy(v4->a, a->a + 2, 4);
		return 1;
	}
	return 0;
}

/*
 * NAT64 and 6to4 addresses are as reachable as the IPv4 address they carry.
 * The deprecated IPv4-compatible form (::a.b.c.d) is reserved in any case,
 * but still reported as metadata when it carries a metadata address, since
 * metadata yields to fewer exceptions than other special ranges.
 */
const char *
addr_special(const struct addr *a)
{
	struct addr u, v4;
	const char *name;

	if (a->af != AF_INET && a->af != AF_INET6)
		return "invalid";
	addr_unmap(a, &u);
	if (u.af == AF_INET6) {
		if (addr_embedded_v4(&u, &v4))
			return addr_table_lookup(&v4);
		if (memcmp(u.a, addr_v4compat_prefix, 12) == 0) {
			memset(&v4, 0, sizeof v4);
			v4.af = AF_INET;
			memcpy(v4.a, u.a + 12, 4);
			name = addr_table_lookup(&v4);
			if (name == addr_metadata)
				return name;
		}
	}
	return addr_table_lookup(&u);
}

int
addr_is_metadata(const struct addr *a)
{
	return addr_special(a) == addr_metadata;
}
