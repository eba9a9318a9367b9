/*
 * sni_parse against real ClientHellos made by OpenSSL (with and without a
 * server name, whole, cut at every length, split over records) and against
 * hand-broken ones: lengths that lie, a second server_name, plain HTTP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "tls.h"

/* The first flight of an OpenSSL client: one ClientHello record. */
static size_t
client_hello(const char *sni, unsigned char *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	int n;

	assert_non_null(ssl);
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	SSL_set_alpn_protos(ssl, (const unsigned char *)"\x08http/1.1", 9);
	assert_int_equal(SSL_connect(ssl), -1); /* wants the server's answer */
	n = BIO_read(wb, out, (int)cap);
	assert_true(n > 5);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return (size_t)n;
}

static enum sni_result
parse(const unsigned char *b, size_t n, char *name, const char **err)
{
	return sni_parse(b, n, name, 256, err);
}

static void
test_found(void **state)
{
	unsigned char b[4096];
	size_t n = client_hello("api.example.com", b, sizeof b);
	char name[256];
	const char *err;

	assert_int_equal(parse(b, n, name, &err), SNI_FOUND);
	assert_string_equal(name, "api.example.com");
	assert_null(err);
	/* Bytes after the ClientHello (early data, a second record) do not matter. */
	memcpy(b + n, "\x17\x03\x03\x00\x01x", 6);
	assert_int_equal(parse(b, n + 6, name, &err), SNI_FOUND);
}

static void
test_absent(void **state)
{
	unsigned char b[4096];
	size_t n = client_hello(NULL, b, sizeof b);
	char name[256];
	const char *err;

	assert_int_equal(parse(b, n, name, &err), SNI_ABSENT);
	assert_string_equal(name, "");
}

/* Every proper prefix asks for more; none is an error or a name. */
static void
test_prefixes(void **state)
{
	unsigned char b[4096];
	size_t n = client_hello("prefix.example.org", b, sizeof b), i;
	char name[256];
	const char *err;

	for (i = 0; i < n; i++)
		assert_int_equal(parse(b, i, name, &err), SNI_MORE);
}

/* The same ClientHello cut into records of 7 bytes each. */
static void
test_split_records(void **state)
{
	unsigned char b[4096], s[16384];
	size_t n = client_hello("split.example.net", b, sizeof b), off, k = 0, take;
	char name[256];
	const char *err;

	for (off = 5; off < n; off += take) {
		take = n - off < 7 ? n - off : 7;
		s[k++] = 22;
		s[k++] = 3;
		s[k++] = 1;
		s[k++] = 0;
		s[k++] = (unsigned char)take;
		memcpy(s + k, b + off, take);
		k += take;
	}
	assert_int_equal(parse(s, k, name, &err), SNI_FOUND);
	assert_string_equal(name, "split.example.net");
	assert_int_equal(parse(s, k - 1, name, &err), SNI_MORE);
}

static void
test_not_tls(void **state)
{
	char name[256];
	const char *err;

	assert_int_equal(parse((const unsigned char *)"GET / HTTP/1.1\r\n", 16, name, &err),
	                 SNI_NOT_TLS);
	assert_int_equal(parse((const unsigned char *)"\x16\x02\x00\x00\x10", 5, name, &err),
	                 SNI_NOT_TLS);
	assert_int_equal(parse((const unsigned char *)"", 0, name, &err), SNI_MORE);
}

/* Offsets in an OpenSSL ClientHello, found by walking it. */
static size_t
find_sni_ext(const unsigned char *b, size_t n)
{
	size_t p = 5 + 4 + 2 + 32;

	p += 1 + b[p];
	p += 2 + ((size_t)b[p] << 8 | b[p + 1]);
	p += 1 + b[p];
	p += 2; /* extensions length */
	while (p + 4 <= n) {
		if (b[p] == 0 && b[p + 1] == 0)
			return p;
		p += 4 + ((size_t)b[p + 2] << 8 | b[p + 3]);
	}
	fail();
	return 0;
}

static void
test_broken(void **state)
{
	unsigned char b[4096], c[4096];
	size_t n = client_hello("broken.example.com", b, sizeof b), e;
	char name[256];
	const char *err;

	e = find_sni_ext(b, n);
	/* The server name's own length runs past its extension. */
	memcpy(c, b, n);
	c[e + 4 + 2 + 1 + 1] = 0xff;
	assert_int_equal(parse(c, n, name, &err), SNI_ERROR);
	assert_non_null(err);
	assert_string_equal(name, "");
	/* A handshake message that is not a ClientHello. */
	memcpy(c, b, n);
	c[5] = 2;
	assert_int_equal(parse(c, n, name, &err), SNI_ERROR);
	/* A zero-length record. */
	memcpy(c, b, n);
	c[3] = 0;
	c[4] = 0;
	assert_int_equal(parse(c, n, name, &err), SNI_ERROR);
	/* Two server_name extensions: rename another extension's type to 0. */
	memcpy(c, b, n);
	{
		size_t p = e + 4 + ((size_t)c[e + 2] << 8 | c[e + 3]);

		assert_true(p + 4 <= n);
		c[p] = 0;
		c[p + 1] = 0;
		assert_int_equal(parse(c, n, name, &err), SNI_ERROR);
	}
	/* A record header that promises more than TLS allows. */
	memcpy(c, b, n);
	c[3] = 0x50;
	assert_int_equal(parse(c, n, name, &err), SNI_ERROR);
}

/* A ClientHello claiming more than SNI_HELLO_MAX bytes is refused. */
static void
test_too_large(void **state)
{
	unsigned char b[9] = {22, 3, 1, 0, 4, 1, 0x01, 0x00, 0x00};
	char name[256];
	const char *err;

	assert_int_equal(parse(b, 9, name, &err), SNI_ERROR);
	assert_string_equal(err, "ClientHello too large");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_found),     cmocka_unit_test(test_absent),
	    cmocka_unit_test(test_prefixes),  cmocka_unit_test(test_split_records),
	    cmocka_unit_test(test_not_tls),   cmocka_unit_test(test_broken),
	    cmocka_unit_test(test_too_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
