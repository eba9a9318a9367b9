/* Wall-clock formatting for logs and a monotonic clock for durations. */
#include <stdio.h>
#include <time.h>

#include "common.h"

/* Format as RFC 3339 UTC with milliseconds: 2026-11-29T19:28:45.123Z. */
void
time_rfc3339_ms(const struct timespec *ts, char out[32])
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    (long)(ts->tv_nsec / 1000000));
}

uint64_t
time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
