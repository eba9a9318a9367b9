/* Wall-clock formatting for logs and a monotonic clock for durations. */
#include <stdio.h>
#include <time.h>

#include "common.h"

/* Format as RFC 3339 UTC with milliseconds: 2026-11-29T19:28:45.123Z. */
void
time_rfc3339_ms(const struct timespec *ts, char out[32])
{
	struct tm tm;

	if (gmtime_r(&ts->tv_sec, &tm) == NULL) {
		snprintf(out, 32, "1970-01-01T00:00:00.000Z");
		return;
	}
	/* Years past 9999 cannot be RFC 3339; the clock would be broken. */
	if (tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		tm.tm_year = 9999 - 1900;
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
	         (tm.tm_mon + 1) % 100, tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
	         tm.tm_sec % 100, (long)(ts->tv_nsec / 1000000) % 1000);
}

uint64_t
time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
