/*
 * Unit tests for policy/url.c: every case of tests/data/url.tsv (the host,
 * port, path and query a URL really reaches, or why it is refused), plus
 * the freeing rules of struct url.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "tsv.h"

/* Checks one case; returns 0 when it holds, -1 after printing why not. */
static int
check_case(unsigned lineno, char **f, int nf)
{
	const char *error, *scheme, *query;
	struct url u;
	char input[1024];
	int ok = 1;

	snprintf(input, sizeof input, "%s", f[0]);
	tsv_unescape(input);
	error = url_parse(input, &u);
	if (strcmp(f[1], "error") == 0) {
		if (nf != 3 || error == NULL || strcmp(error, f[2]) != 0) {
			fprintf(stderr, "url.tsv:%u: %s: got %s, want error %s\n", lineno, f[0],
			        error != NULL ? error : "success", f[2]);
			ok = 0;
		}
		if (u.path != NULL || u.query != NULL)
			ok = 0;
		url_free(&u);
		return ok ? 0 : -1;
	}
	if (nf != 7 || error != NULL) {
		fprintf(stderr, "url.tsv:%u: %s: %s\n", lineno, f[0], nf != 7 ? "bad case" : error);
		url_free(&u);
		return -1;
	}
	scheme = strcmp(f[2], "-") == 0 ? "" : f[2];
	query = strcmp(f[6], "-") == 0 ? NULL : f[6];
	if (query != NULL)
		tsv_unescape(f[6]);
	if (strcmp(u.scheme, scheme) != 0 || strcmp(u.host.name, f[3]) != 0 ||
	    u.host.kind != (strcmp(f[1], "addr") == 0 ? HOST_ADDR : HOST_NAME) ||
	    u.port != atoi(f[4]) || u.path == NULL || strcmp(u.path, f[5]) != 0 ||
	    (query == NULL) != (u.query == NULL) ||
	    (query != NULL && strcmp(query, u.query) != 0)) {
		fprintf(stderr, "url.tsv:%u: %s: got %s %s %s %u %s %s\n", lineno, f[0],
		        u.host.kind == HOST_ADDR ? "addr" : "name", u.scheme, u.host.name, u.port,
		        u.path != NULL ? u.path : "(null)", u.query != NULL ? u.query : "-");
		ok = 0;
	}
	url_free(&u);
	return ok ? 0 : -1;
}

static void
test_url_table(void **state)
{
	unsigned failed = 0;
	struct tsv t;
	char **f;

	tsv_open(&t, "url.tsv", 3, 8);
	while ((f = tsv_next(&t)) != NULL) {
		if (check_case(t.lineno, f, t.nf) == -1)
			failed++;
	}
	assert_int_equal(failed, 0);
	assert_true(t.rows >= 50);
}

static void
test_url_port_explicit(void **state)
{
	struct url u;

	assert_null(url_parse("https://example.com:443/", &u));
	assert_int_equal(u.port, 443);
	assert_int_equal(u.port_explicit, 1);
	url_free(&u);
	assert_null(url_parse("https://example.com/", &u));
	assert_int_equal(u.port, 443);
	assert_int_equal(u.port_explicit, 0);
	url_free(&u);
	assert_null(url_parse("example.com", &u));
	assert_int_equal(u.port, 0);
	assert_int_equal(u.port_explicit, 0);
	url_free(&u);
}

/* Addresses keep their value, so the policy can check them as addresses. */
static void
test_url_addr_value(void **state)
{
	struct url u;

	assert_null(url_parse("http://0x7f.1/", &u));
	assert_int_equal(u.host.kind, HOST_ADDR);
	assert_int_equal(u.host.addr.af, AF_INET);
	assert_memory_equal(u.host.addr.a, "\x7f\0\0\1", 4);
	assert_string_equal(addr_special(&u.host.addr), "loopback");
	url_free(&u);
	assert_null(url_parse("http://[::ffff:169.254.169.254]/latest", &u));
	assert_int_equal(u.host.addr.af, AF_INET6);
	assert_true(addr_is_metadata(&u.host.addr));
	url_free(&u);
}

/* url_free is safe on a zeroed, a failed and an already freed struct. */
static void
test_url_free(void **state)
{
	struct url u;

	memset(&u, 0, sizeof u);
	url_free(&u);
	assert_non_null(url_parse("ftp://x/", &u));
	assert_null(u.path);
	url_free(&u);
	assert_null(url_parse("http://x/?q", &u));
	url_free(&u);
	assert_null(u.path);
	assert_null(u.query);
	url_free(&u);
}

/* Long and hostile input: bounded errors, never a crash. */
static void
test_url_long(void **state)
{
	struct url u;
	size_t n = 100000;
	char *s;

	s = xmalloc(n + 16);
	memcpy(s, "http://", 7);
	memset(s + 7, 'a', n);
	s[n + 7] = '\0';
	assert_string_equal(url_parse(s, &u), "host too long");
	memset(s + 7, '@', n);
	assert_string_equal(url_parse(s, &u), "empty host");
	memcpy(s + 7, "x.com/", 6);
	memset(s + 13, '\\', n - 6);
	assert_null(url_parse(s, &u));
	assert_string_equal(u.host.name, "x.com");
	assert_int_equal(strspn(u.path, "/"), n - 5);
	url_free(&u);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_url_table),      cmocka_unit_test(test_url_port_explicit),
	    cmocka_unit_test(test_url_addr_value), cmocka_unit_test(test_url_free),
	    cmocka_unit_test(test_url_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
