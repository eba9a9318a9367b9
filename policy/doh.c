/*
 * The built-in list of well-known DNS-over-HTTPS services. A DoH endpoint
 * reached through the proxy is a resolver the policy cannot see into: the
 * payload could resolve blocked names with it, or tunnel data through
 * queries, so by default (network.blockDohProviders) the names of these
 * services are blocked, in the proxy and in the resolver alike. An explicit
 * allowlist entry still wins. Address literals (https://1.1.1.1/) are not
 * on the list: addresses are matched by address entries only.
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/*
 * Names whose subdomains are DoH endpoints too: these domains serve
 * nothing else a coding agent needs.
 */
static const char *const doh_trees[] = {
    "adguard-dns.com",  "cloudflare-dns.com",
    "dns.google",       "dns.nextdns.io",
    "dns.mullvad.net",  "dns0.eu",
    "doh.pub",          "dns.sb",
    "dns.controld.com", "dns.quad9.net",
};

/* Single endpoints on domains that serve other things as well. */
static const char *const doh_names[] = {
    "1dot1dot1dot1.cloudflare-dns.com",
    "8888.google",
    "dns.google.com",
    "dns9.quad9.net",
    "dns10.quad9.net",
    "dns11.quad9.net",
    "dns12.quad9.net",
    "one.one.one.one",
    "1.1.1.1.cloudflare-dns.com",
    "doh.opendns.com",
    "dns.opendns.com",
    "doh.familyshield.opendns.com",
    "doh.umbrella.com",
    "dns.adguard.com",
    "dns-family.adguard.com",
    "dns-unfiltered.adguard.com",
    "doh.cleanbrowsing.org",
    "doh.libredns.gr",
    "doh.mullvad.net",
    "adblock.doh.mullvad.net",
    "dns.alidns.com",
    "doh.360.cn",
    "dns.twnic.tw",
    "doh.xfinity.com",
    "doh.dns.apple.com",
    "dns.switch.ch",
    "doh.ffmuc.net",
    "dns.digitale-gesellschaft.ch",
    "doh.applied-privacy.net",
    "doh.dns4all.eu",
    "dns.njal.la",
    "doh.crypto.sx",
    "doh.li",
    "dns.rubyfish.cn",
    "doh.centraleu.pi-dns.com",
    "odvr.nic.cz",
    "doh.tiar.app",
    "dns.aa.net.uk",
    "freedns.controld.com",
};

static int
doh_name_in(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return (int)i;
	return -1;
}

/*
 * Whether host is a well-known DoH service; *entry is the list entry that
 * matched (for names under a tree entry, the tree's apex).
 */
int
doh_match(const struct host *h, const char **entry)
{
	const char *p;
	int k;

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

/* How many entries the built-in list holds. */
size_t
doh_count(void)
{
	return EG_NELEM(doh_trees) + EG_NELEM(doh_names);
}
