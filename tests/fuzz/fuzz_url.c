/*
 * Fuzz target for url_parse and host_parse. Beyond not crashing, a parsed
 * URL must hold its invariants: a non-empty host, a name in lowercase
 * without spaces, a path starting with '/', and the same host again when
 * scheme://host:port/path is parsed a second time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

#define FUZZ_URL_MAX 4096

static void
fuzz_url_check_host(const struct host *h)
{
	const char *p;

	if (h->name[0] == '\0')
		abort();
	for (p = h->name; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (unsigned char)*p <= ' ')
			abort();
	}
	if (h->kind == HOST_NAME && host_name_check(h->name, strlen(h->name)) != NULL)
		abort();
	if (h->kind == HOST_ADDR && h->addr.af != AF_INET && h->addr.af != AF_INET6)
		abort();
}

static void
fuzz_url_reparse(const struct url *u)
{
	struct url again;
	char *s;
	int v6 = u->host.kind == HOST_ADDR && u->host.addr.af == AF_INET6;

	/* Without a scheme, "http" could be read as one: give it http://. */
	s = xasprintf("%s://%s%s%s:%u%s", u->scheme[0] != '\0' ? u->scheme : "http", v6 ? "[" : "",
	              u->host.name, v6 ? "]" : "", u->port != 0 ? u->port : 1, u->path);
	if (url_parse(s, &again) != NULL)
		abort();
	if (strcmp(again.host.name, u->host.name) != 0 || again.host.kind != u->host.kind ||
	    memcmp(&again.host.addr, &u->host.addr, sizeof again.host.addr) != 0)
		abort();
	url_free(&again);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host host;
	struct url u;
	char *s;

	if (size > FUZZ_URL_MAX)
		size = FUZZ_URL_MAX;
	if (host_parse((const char *)data, size, &host) == NULL)
		fuzz_url_check_host(&host);

	s = xmalloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	if (url_parse(s, &u) == NULL) {
		fuzz_url_check_host(&u.host);
		if (u.path == NULL || u.path[0] != '/')
			abort();
		fuzz_url_reparse(&u);
	} else if (u.path != NULL || u.query != NULL)
		abort();
	url_free(&u);
	free(s);
	return 0;
}
