/*
 * Fuzz target for the host names a client can hand the CA (the SNI of a
 * ClientHello, the host of a CONNECT): the first byte says name or
 * address, the rest is the host. Whatever is accepted must mint a leaf
 * from a name-constrained CA that matches exactly that host; whatever is
 * refused must mint nothing.
 */
#define CA_INTERNAL
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include "ca.h"

int LLVMFuzzerTestOneInput(const unsigned char *, size_t);

static struct ca *fuzz_ca;
static struct ca_cache *fuzz_cache;

static int
fuzz_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const permitted[] = {"*.x.com", "10.0.0.0/8"};
	char host[300], out[CA_HOST_BUFLEN], err[256];
	size_t i, len;
	X509 *x;
	int is_ip;

	if (fuzz_ca == NULL) {
		log_init("fuzz_ca_host", LOG_LVL_ERR);
		fuzz_ca = ca_new_ephemeral(3600, permitted, 2, err, sizeof err);
		if (fuzz_ca == NULL)
			abort();
		fuzz_cache = ca_cache_new(fuzz_ca, 4);
	}
	if (size < 1 || size > 290)
		return 0;
	is_ip = data[0] & 1;
	memcpy(host, data + 1, size - 1);
	host[size - 1] = '\0';
	if (ca_mint_host_check(host, is_ip, out) != NULL) {
		if (ca_cache_get(fuzz_cache, host, is_ip) != NULL)
			abort();
		return 0;
	}
	len = strlen(out);
	if (len == 0 || len > 253)
		abort();
	for (i = 0; !is_ip && i < len; i++)
		if (!fuzz_name_char(out[i]))
			abort();
	if ((x = ca_cache_get(fuzz_cache, host, is_ip)) == NULL)
		abort();
	if ((is_ip ? X509_check_ip_asc(x, out, 0) : X509_check_host(x, out, 0, 0, NULL)) != 1)
		abort();
	X509_free(x);
	return 0;
}
