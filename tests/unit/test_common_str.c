/*
 * Unit tests for common/str.c: the snprintf stand-ins give what snprintf
 * gives (copies cut to fit and always terminated, decimal numbers over
 * the whole range, dotted IPv4 addresses, lowercase hex of every byte).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"

static void
test_copy(void **state)
{
	char b[8];

	(void)state;
	assert_int_equal(str_copy(b, sizeof b, "abc"), 3);
	assert_string_equal(b, "abc");
	assert_int_equal(str_copy(b, sizeof b, "abcdefghij"), 7);
	assert_string_equal(b, "abcdefg");
	assert_int_equal(str_copy(b, 1, "abc"), 0);
	assert_string_equal(b, "");
	memcpy(b, "xyz", 4);
	assert_int_equal(str_copy(b, 0, "abc"), 0);
	assert_string_equal(b, "xyz");
}

static void
test_u64(void **state)
{
	static const uint64_t v[] = {
	    0, 1, 9, 10, 99, 100, 4294967295u, 4294967296u, 10000000000000000000u, UINT64_MAX};
	char got[24], want[24];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		snprintf(want, sizeof want, "%llu", (unsigned long long)v[i]);
		assert_int_equal(str_u64(got, v[i]), strlen(want));
		assert_string_equal(got, want);
	}
}

static void
test_ipv4(void **state)
{
	static const uint8_t a[][4] = {
	    {0, 0, 0, 0}, {127, 0, 0, 1}, {10, 20, 30, 40}, {255, 255, 255, 255}, {198, 18, 0, 9}};
	char got[16], want[16];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof a / sizeof a[0]; i++) {
		snprintf(want, sizeof want, "%u.%u.%u.%u", a[i][0], a[i][1], a[i][2], a[i][3]);
		assert_int_equal(str_ipv4(got, a[i]), strlen(want));
		assert_string_equal(got, want);
	}
}

static void
test_hex(void **state)
{
	unsigned char all[256];
	char got[513], want[513];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof all; i++) {
		all[i] = (unsigned char)i;
		snprintf(want + 2 * i, 3, "%02x", (unsigned)i);
	}
	assert_int_equal(str_hex(got, all, sizeof all), 512);
	assert_string_equal(got, want);
	memset(got, 'x', sizeof got);
	assert_int_equal(str_hex(got, all, 0), 0);
	assert_int_equal(got[0], '\0');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_copy),
	    cmocka_unit_test(test_u64),
	    cmocka_unit_test(test_ipv4),
	    cmocka_unit_test(test_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
