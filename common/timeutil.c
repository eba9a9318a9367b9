/* Wall-clock formatting for logs and a monotonic clock for durations. */
#include <string.h>
#include <time.h>

#include "common.h"

static void
time_2digits(char *p, int v)
{
	p[0] = (char)('0' + v / 10 % 10);
	p[1] = (char)('0' + v % 10);
}

/*
 * Format as RFC 3339 UTC with milliseconds: 2026-11-29T19:28:45.123Z.
 * Every audit line carries one, so the date and time of the last second
 * formatted are kept and only the milliseconds are written each time.
 * (egressd and policyctl format from one thread.)
 */
void
time_rfc3339_ms(const struct timespec *ts, char out[32])
{
	static time_t last_sec = (time_t)-1;
	static char last[20]; /* YYYY-MM-DDTHH:MM:SS */
	struct tm tm;
	long ms;
	int y;

	if (ts->tv_sec != last_sec) {
		if (gmtime_r(&ts->tv_sec, &tm) == NULL) {
			memcpy(out, "1970-01-01T00:00:00.000Z", 25);
			return;
		}
		/* Years past 9999 cannot be RFC 3339; the clock would be broken. */
		y = tm.tm_year + 1900;
		if (y < 0 || y > 9999)
			y = 9999;
		time_2digits(last, y / 100);
		time_2digits(last + 2, y % 100);
		last[4] = '-';
		time_2digits(last + 5, tm.tm_mon + 1);
		last[7] = '-';
		time_2digits(last + 8, tm.tm_mday);
		last[10] = 'T';
		time_2digits(last + 11, tm.tm_hour);
		last[13] = ':';
		time_2digits(last + 14, tm.tm_min);
		last[16] = ':';
		time_2digits(last + 17, tm.tm_sec);
		last_sec = ts->tv_sec;
	}
	ms = (long)(ts->tv_nsec / 1000000) % 1000;
	if (ms < 0)
		ms = 0;
	memcpy(out, last, 19);
	out[19] = '.';
	out[20] = (char)('0' + ms / 100);
	time_2digits(out + 21, (int)(ms % 100));
	out[23] = 'Z';
	out[24] = '\0';
}

uint64_t
time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t
time_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
