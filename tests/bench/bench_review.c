/*
 * Benchmark for `policyctl audit`: writes an audit file of N events (1
 * million by default) shaped like egressd's (about 350 bytes a line, 2000
 * hosts, one request in twenty blocked, one in fifty flagged, a valid hash
 * chain), then times the summary, --json, --verify, --suggest and --html
 * over it. Target: the summary of 1 million events in a few seconds.
 * usage: bench_review [EVENTS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "review.h"

typedef int (*review_fn)(FILE *, FILE *, const struct review_opts *);

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Write n events to f, chained like egressd's; returns the bytes written. */
static long
make_log(FILE *f, long n)
{
	static const char *methods[] = {"GET", "GET", "GET", "HEAD", "POST", "PUT"};
	char prev[CHAIN_HEX + 1], ts[32], line[1024];
	struct chain *chain = chain_new();
	struct timespec t = {1795946400, 0};
	const char *action, *rule;
	long i, bytes = 0;
	int len;

	memcpy(prev, chain_zeros, sizeof prev);
	srand(1);
	for (i = 0; i < n; i++) {
		int r = rand(), host = r % 2000;

		t.tv_nsec = (i % 1000) * 1000000L;
		t.tv_sec = 1795946400 + i / 1000;
		time_rfc3339_ms(&t, ts);
		action = r % 20 == 0 ? "block" : r % 50 == 1 ? "flag" : "allow";
		rule = r % 20 == 0   ? "*.tracker.example"
		       : r % 50 == 1 ? "method-not-allowed"
		                     : "allow-methods";
		len = snprintf(
		    line, sizeof line,
		    "{\"v\":1,\"ts\":\"%s\",\"seq\":%ld,\"event\":\"http\",\"action\":\"%s\","
		    "\"rule\":\"%s\",\"source\":\"/etc/opencode-sandbox/policy.yaml:7\","
		    "\"reason\":\"GET is an allowed method\",\"mode\":\"practical\","
		    "\"client\":\"127.0.0.1:%d\",\"host\":\"h%d.%s.example\",\"port\":443,"
		    "\"scheme\":\"https\",\"method\":\"%s\",\"path\":\"/api/v1/items/%d\","
		    "\"status\":200,\"bytes_up\":%d,\"bytes_down\":%d,\"duration_ms\":%d,"
		    "\"prev\":\"%s\"}",
		    ts, i + 1, action, rule, 30000 + r % 30000, host,
		    r % 20 == 0 ? "tracker" : "cdn", methods[r % 6], r % 10000, r % 500, r % 50000,
		    r % 300, prev);
		chain_line(chain, line, (size_t)len, prev);
		fwrite(line, 1, (size_t)len, f);
		fputc('\n', f);
		bytes += len + 1;
	}
	chain_free(chain);
	fflush(f);
	return bytes;
}

static void
timed(const char *what, review_fn fn, FILE *in, FILE *out, const struct review_opts *o, long n)
{
	double t0, dt;
	int rc;

	rewind(in);
	t0 = now_s();
	rc = fn(in, out, o);
	dt = now_s() - t0;
	printf("%-10s %7.2f s  %9.0f events/s  (rc %d)\n", what, dt, (double)n / dt, rc);
}

int
main(int argc, char **argv)
{
	struct review_opts o;
	FILE *log, *out;
	long n = argc > 1 ? atol(argv[1]) : 1000000, bytes;
	double t0;

	log_init("bench_review", LOG_LVL_WARN);
	if (n <= 0) {
		fprintf(stderr, "usage: bench_review [EVENTS]\n");
		return 2;
	}
	if ((log = tmpfile()) == NULL || (out = fopen("/dev/null", "w")) == NULL) {
		perror("bench_review");
		return 1;
	}
	t0 = now_s();
	bytes = make_log(log, n);
	printf("%ld events, %.1f MiB written in %.2f s\n", n, (double)bytes / 1048576,
	       now_s() - t0);
	review_opts_init(&o);
	o.name = "bench.jsonl";
	timed("summary", review_summary, log, out, &o, n);
	o.json = 1;
	timed("--json", review_summary, log, out, &o, n);
	timed("--verify", review_verify, log, out, &o, n);
	o.json = 0;
	timed("--suggest", review_suggest, log, out, &o, n);
	timed("--html", review_html, log, out, &o, n);
	o.filter.actions = REVIEW_ONLY_BLOCK;
	timed("--blocked", review_summary, log, out, &o, n);
	fclose(out);
	fclose(log);
	return 0;
}
