/*
 * The built-in list of well-known DNS-over-HTTPS services. A DoH endpoint
 * reached through the proxy is a resolver the policy cannot see into: the
 * payload could resolve blocked names with it, or tunnel data through
 * queries, so by default (network.blockDohProviders) the names of these
 * services are blocked, in the proxy and in the resolver alike. An explicit
 * allowlist entry still wins. Clients that skip the name and go to the
 * service's address (https://1.1.1.1/dns-query, DNS over TLS to
 * 9.9.9.9:853) meet the second half: the anycast addresses these services
 * publish for their resolvers, matched when a request's host is an
 * address literal. The addresses serve DNS and nothing else.
 */
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

/*
 * Names whose subdomains are DoH endpoints too: these domains serve
 * nothing else a coding agent needs.
 */
static const char *const doh_trees[] = {
    "adguard-dns.com", "cloudflare-dns.com", "dns.controld.com", "dns.google", "dns.mullvad.net",
    "dns.nextdns.io",  "dns.quad9.net",      "dns.sb",           "dns0.eu",    "doh.pub",
};

/* Single endpoints on domains that serve other things as well. */
static const char *const doh_names[] = {
    "1.1.1.1.cloudflare-dns.com",
    "1dot1dot1dot1.cloudflare-dns.com",
    "8888.google",
    "adblock.doh.mullvad.net",
    "dns-family.adguard.com",
    "dns-unfiltered.adguard.com",
    "dns.aa.net.uk",
    "dns.adguard.com",
    "dns.alidns.com",
    "dns.digitale-gesellschaft.ch",
    "dns.google.com",
    "dns.njal.la",
    "dns.opendns.com",
    "dns.rubyfish.cn",
    "dns.switch.ch",
    "dns.twnic.tw",
    "dns10.quad9.net",
    "dns11.quad9.net",
    "dns12.quad9.net",
    "dns9.quad9.net",
    "doh.360.cn",
    "doh.applied-privacy.net",
    "doh.centraleu.pi-dns.com",
    "doh.cleanbrowsing.org",
    "doh.crypto.sx",
    "doh.dns.apple.com",
    "doh.dns4all.eu",
    "doh.familyshield.opendns.com",
    "doh.ffmuc.net",
    "doh.li",
    "doh.libredns.gr",
    "doh.mullvad.net",
    "doh.opendns.com",
    "doh.tiar.app",
    "doh.umbrella.com",
    "doh.xfinity.com",
    "freedns.controld.com",
    "odvr.nic.cz",
    "one.one.one.one",
};

/*
 * Addresses the services publish for their resolvers (DoH, DoT and plain
 * DNS alike), with the provider's name for the reason a decision gives.
 */
static const struct {
	const char *cidr;
	const char *provider;
} doh_addrs[] = {
    {"1.1.1.1", "Cloudflare"},
    {"1.0.0.1", "Cloudflare"},
    {"1.1.1.2", "Cloudflare for Families"},
    {"1.0.0.2", "Cloudflare for Families"},
    {"1.1.1.3", "Cloudflare for Families"},
    {"1.0.0.3", "Cloudflare for Families"},
    {"2606:4700:4700::1111", "Cloudflare"},
    {"2606:4700:4700::1001", "Cloudflare"},
    {"2606:4700:4700::1112", "Cloudflare for Families"},
    {"2606:4700:4700::1002", "Cloudflare for Families"},
    {"2606:4700:4700::1113", "Cloudflare for Families"},
    {"2606:4700:4700::1003", "Cloudflare for Families"},
    {"8.8.8.8", "Google Public DNS"},
    {"8.8.4.4", "Google Public DNS"},
    {"2001:4860:4860::8888", "Google Public DNS"},
    {"2001:4860:4860::8844", "Google Public DNS"},
    {"9.9.9.9", "Quad9"},
    {"149.112.112.112", "Quad9"},
    {"9.9.9.10", "Quad9"},
    {"149.112.112.10", "Quad9"},
    {"9.9.9.11", "Quad9"},
    {"149.112.112.11", "Quad9"},
    {"2620:fe::fe", "Quad9"},
    {"2620:fe::9", "Quad9"},
    {"2620:fe::10", "Quad9"},
    {"2620:fe::fe:10", "Quad9"},
    {"2620:fe::11", "Quad9"},
    {"2620:fe::fe:11", "Quad9"},
    {"208.67.222.222", "OpenDNS"},
    {"208.67.220.220", "OpenDNS"},
    {"208.67.222.123", "OpenDNS FamilyShield"},
    {"208.67.220.123", "OpenDNS FamilyShield"},
    {"2620:119:35::35", "OpenDNS"},
    {"2620:119:53::53", "OpenDNS"},
    {"94.140.14.14", "AdGuard DNS"},
    {"94.140.15.15", "AdGuard DNS"},
    {"94.140.14.15", "AdGuard DNS family"},
    {"94.140.15.16", "AdGuard DNS family"},
    {"94.140.14.140", "AdGuard DNS unfiltered"},
    {"94.140.14.141", "AdGuard DNS unfiltered"},
    {"2a10:50c0::ad1:ff", "AdGuard DNS"},
    {"2a10:50c0::ad2:ff", "AdGuard DNS"},
    {"2a10:50c0::bad1:ff", "AdGuard DNS family"},
    {"2a10:50c0::bad2:ff", "AdGuard DNS family"},
    {"2a10:50c0::1:ff", "AdGuard DNS unfiltered"},
    {"2a10:50c0::2:ff", "AdGuard DNS unfiltered"},
    {"185.228.168.9", "CleanBrowsing"},
    {"185.228.169.9", "CleanBrowsing"},
    {"185.228.168.10", "CleanBrowsing"},
    {"185.228.169.11", "CleanBrowsing"},
    {"185.228.168.168", "CleanBrowsing"},
    {"185.228.169.168", "CleanBrowsing"},
    {"194.242.2.2", "Mullvad DNS"},
    {"194.242.2.3", "Mullvad DNS"},
    {"194.242.2.4", "Mullvad DNS"},
    {"194.242.2.5", "Mullvad DNS"},
    {"194.242.2.6", "Mullvad DNS"},
    {"194.242.2.7", "Mullvad DNS"},
    {"194.242.2.8", "Mullvad DNS"},
    {"194.242.2.9", "Mullvad DNS"},
    {"2a07:e340::2", "Mullvad DNS"},
    {"2a07:e340::3", "Mullvad DNS"},
    {"2a07:e340::4", "Mullvad DNS"},
    {"2a07:e340::5", "Mullvad DNS"},
    {"2a07:e340::6", "Mullvad DNS"},
    {"2a07:e340::7", "Mullvad DNS"},
    {"2a07:e340::8", "Mullvad DNS"},
    {"2a07:e340::9", "Mullvad DNS"},
    {"45.90.28.0/24", "NextDNS"},
    {"45.90.30.0/24", "NextDNS"},
    {"193.110.81.0", "DNS0.EU"},
    {"185.253.5.0", "DNS0.EU"},
    {"2a0f:fc80::", "DNS0.EU"},
    {"2a0f:fc81::", "DNS0.EU"},
    {"223.5.5.5", "AliDNS"},
    {"223.6.6.6", "AliDNS"},
    {"2400:3200::1", "AliDNS"},
    {"2400:3200:baba::1", "AliDNS"},
    {"1.12.12.12", "DNSPod"},
    {"120.53.53.53", "DNSPod"},
};

static int
doh_cmp(const void *key, const void *entry)
{
	return strcmp(key, *(const char *const *)entry);
}

/* The lists are sorted (strcmp order; the unit test holds them to it). */
static int
doh_name_in(const char *name, const char *const *list, size_t n)
{
	const char *const *hit;

	if ((hit = bsearch(name, list, n, sizeof *list, doh_cmp)) == NULL)
		return -1;
	return (int)(hit - list);
}

/*
 * An address of the list: IPv4-mapped IPv6 and the NAT64 well-known prefix
 * (64:ff9b::/96, RFC 6052) count as the IPv4 address they carry.
 */
static int
doh_addr_match(const struct addr *in, const char **entry, const char **provider)
{
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
	struct addr a;
	struct cidr c;
	size_t i;

	addr_unmap(in, &a);
	if (a.af == AF_INET6 && memcmp(a.a, nat64, sizeof nat64) == 0) {
		memmove(a.a, a.a + 12, 4);
		memset(a.a + 4, 0, 12);
		a.af = AF_INET;
	}
	for (i = 0; i < EG_NELEM(doh_addrs); i++) {
		if (addr_cidr_parse(doh_addrs[i].cidr, &c) != NULL)
			fatalx("doh: bad built-in entry %s", doh_addrs[i].cidr);
		if (addr_in_cidr(&a, &c)) {
			*entry = doh_addrs[i].cidr;
			if (provider != NULL)
				*provider = doh_addrs[i].provider;
			return 1;
		}
	}
	return 0;
}

/*
 * Whether host is a well-known DoH service; *entry is the list entry that
 * matched (for names under a tree entry, the tree's apex), and for an
 * address *provider (when not NULL) the service it belongs to, else NULL.
 */
int
doh_match(const struct host *h, const char **entry, const char **provider)
{
	const char *p;
	int k;

	if (provider != NULL)
		*provider = NULL;
	if (h->kind == HOST_ADDR)
		return doh_addr_match(&h->addr, entry, provider);
	if (h->kind != HOST_NAME)
		return 0;
	if ((k = doh_name_in(h->name, doh_names, EG_NELEM(doh_names))) >= 0) {
		*entry = doh_names[k];
		return 1;
	}
	for (p = h->name; p != NULL; p = (p = strchr(p, '.')) != NULL ? p + 1 : NULL) {
		if ((k = doh_name_in(p, doh_trees, EG_NELEM(doh_trees))) >= 0) {
			*entry = doh_trees[k];
			return 1;
		}
	}
	return 0;
}

/*
 * Check the built-in tables (for the unit test): names in strcmp order,
 * as the search needs, every address parsing. Returns the first entry
 * out of place, or NULL.
 */
const char *
doh_check(void)
{
	struct cidr c;
	size_t i;

	for (i = 1; i < EG_NELEM(doh_trees); i++)
		if (strcmp(doh_trees[i - 1], doh_trees[i]) >= 0)
			return doh_trees[i];
	for (i = 1; i < EG_NELEM(doh_names); i++)
		if (strcmp(doh_names[i - 1], doh_names[i]) >= 0)
			return doh_names[i];
	for (i = 0; i < EG_NELEM(doh_addrs); i++)
		if (addr_cidr_parse(doh_addrs[i].cidr, &c) != NULL)
			return doh_addrs[i].cidr;
	return NULL;
}

/* How many entries the built-in list holds. */
size_t
doh_count(void)
{
	return EG_NELEM(doh_trees) + EG_NELEM(doh_names) + EG_NELEM(doh_addrs);
}
