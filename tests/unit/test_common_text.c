/*
 * Unit tests for common/text.c: the RFC 9110 tchar and token checks that
 * the HTTP parsers share, for every byte against the grammar's own list;
 * hex digits for every byte; and UTF-8 sequence lengths against the
 * Unicode Standard's table of well-formed sequences, for every one- and
 * two-byte input and at the edges of each three- and four-byte range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"

/* RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
 * "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA. */
static void
test_tchar(void **state)
{
	const char *extra = "!#$%&'*+-.^_`|~";
	char one[1];
	int c, want;

	(void)state;
	for (c = -1; c <= 256; c++) {
		want = c > 0 && c < 128 &&
		       ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		        (c >= 'A' && c <= 'Z') || strchr(extra, c) != NULL);
		if (text_http_tchar(c) != want)
			fail_msg("text_http_tchar(%d) = %d, want %d", c, text_http_tchar(c), want);
		if (c >= 0 && c < 256) {
			one[0] = (char)c;
			assert_int_equal(text_http_token(one, 1), want);
		}
	}
	assert_true(text_http_token("Content-Length", 14));
	assert_false(text_http_token("Content Length", 14));
	assert_false(text_http_token("", 0));
}

static void
test_hex_value(void **state)
{
	const char *digits = "0123456789abcdef", *p;
	int c, want;

	(void)state;
	for (c = -1; c <= 256; c++) {
		p = c > 0 && c < 256 ? strchr(digits, c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c)
		                     : NULL;
		want = p != NULL ? (int)(p - digits) : -1;
		if (text_hex_value(c) != want)
			fail_msg("text_hex_value(%d) = %d, want %d", c, text_hex_value(c), want);
	}
}

/* Whether b[0..n) is one well-formed sequence (Unicode Table 3-7). */
static int
wellformed(const unsigned char *b, size_t n)
{
	static const struct {
		size_t n;
		unsigned char lo[4];
		unsigned char hi[4];
	} t[] = {
	    {1, {0x00}, {0x7f}},
	    {2, {0xc2, 0x80}, {0xdf, 0xbf}},
	    {3, {0xe0, 0xa0, 0x80}, {0xe0, 0xbf, 0xbf}},
	    {3, {0xe1, 0x80, 0x80}, {0xec, 0xbf, 0xbf}},
	    {3, {0xed, 0x80, 0x80}, {0xed, 0x9f, 0xbf}},
	    {3, {0xee, 0x80, 0x80}, {0xef, 0xbf, 0xbf}},
	    {4, {0xf0, 0x90, 0x80, 0x80}, {0xf0, 0xbf, 0xbf, 0xbf}},
	    {4, {0xf1, 0x80, 0x80, 0x80}, {0xf3, 0xbf, 0xbf, 0xbf}},
	    {4, {0xf4, 0x80, 0x80, 0x80}, {0xf4, 0x8f, 0xbf, 0xbf}},
	};
	size_t i, j;

	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (t[i].n != n)
			continue;
		for (j = 0; j < n && b[j] >= t[i].lo[j] && b[j] <= t[i].hi[j]; j++)
			;
		if (j == n)
			return 1;
	}
	return 0;
}

static void
check_utf8(const unsigned char *b, size_t n)
{
	size_t want, got;

	/* The length of the longest well-formed prefix that is one sequence. */
	for (want = n; want > 0 && !wellformed(b, want); want--)
		;
	got = text_utf8_len(b, n);
	if (got != want)
		fail_msg("text_utf8_len(%02x %02x %02x %02x, %zu) = %zu, want %zu", b[0],
		         n > 1 ? b[1] : 0, n > 2 ? b[2] : 0, n > 3 ? b[3] : 0, n, got, want);
}

static void
test_utf8_len(void **state)
{
	static const unsigned char edges[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0,
	                                      0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed,
	                                      0xef, 0xf0, 0xf4, 0xf5, 0xff};
	unsigned char b[4];
	size_t i, j, k, l;
	unsigned c, d;

	(void)state;
	for (c = 0; c < 256; c++) {
		b[0] = (unsigned char)c;
		check_utf8(b, 1);
		for (d = 0; d < 256; d++) {
			b[1] = (unsigned char)d;
			check_utf8(b, 2);
		}
	}
	for (i = 0; i < sizeof edges; i++)
		for (j = 0; j < sizeof edges; j++)
			for (k = 0; k < sizeof edges; k++)
				for (l = 0; l < sizeof edges; l++) {
					b[0] = edges[i];
					b[1] = edges[j];
					b[2] = edges[k];
					b[3] = edges[l];
					check_utf8(b, 3);
					check_utf8(b, 4);
				}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tchar),
	    cmocka_unit_test(test_hex_value),
	    cmocka_unit_test(test_utf8_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
