/*
 * Unit tests for common/timeutil.c: time_rfc3339_ms against a reference
 * made with gmtime_r and strftime, for times in any order (the formatter
 * keeps the last second it formatted), every millisecond of one second,
 * the epoch, and a clock past year 9999.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common.h"

static void
reference(time_t sec, long nsec, char out[40])
{
	struct tm tm;
	char day[32];

	assert_non_null(gmtime_r(&sec, &tm));
	assert_true(strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm) > 0);
	snprintf(out, 40, "%s.%03ldZ", day, nsec / 1000000);
}

static void
check(time_t sec, long nsec)
{
	struct timespec ts = {sec, nsec};
	char got[32], want[40];

	memset(got, 'x', sizeof got);
	time_rfc3339_ms(&ts, got);
	reference(sec, nsec, want);
	assert_string_equal(got, want);
}

static void
test_epoch(void **state)
{
	(void)state;
	check(0, 0);
}

static void
test_every_millisecond(void **state)
{
	long ms;

	(void)state;
	for (ms = 0; ms < 1000; ms++)
		check(1796000000, ms * 1000000 + 999999);
}

static void
test_seconds_in_any_order(void **state)
{
	/* Forwards, back, the same second again, across days, months and a leap day. */
	static const time_t secs[] = {
	    1796000000, 1796000001, 1796000000, 1796000000, 1795999999, 951782399, 951782400,
	    951868800,  1767225599, 1767225600, 4102444800, 86399,      86400,     1,
	};
	size_t i;
	uint64_t x = 88172645463325252ull;

	(void)state;
	for (i = 0; i < sizeof secs / sizeof secs[0]; i++)
		check(secs[i], (long)(i * 77) % 1000 * 1000000);
	/* And a few thousand times anywhere in years 1970..2999. */
	for (i = 0; i < 5000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check((time_t)(x % 32503680000ull), (long)(x >> 40) % 1000000000);
	}
}

static void
test_past_9999(void **state)
{
	struct timespec ts = {253402300800 + 86400 * 400, 5000000}; /* year 10400 */
	char got[32];

	(void)state;
	time_rfc3339_ms(&ts, got);
	assert_int_equal(strlen(got), 24);
	assert_memory_equal(got, "9999-", 5);
	assert_string_equal(got + 19, ".005Z");
	check(1796000000, 0); /* and a sane clock again */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_epoch),
	    cmocka_unit_test(test_every_millisecond),
	    cmocka_unit_test(test_seconds_in_any_order),
	    cmocka_unit_test(test_past_9999),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
