/*
 * Benchmark for the audit writer: bench_audit [N=200000] [FILE]
 * appends 2N events shaped like egressd's (N allowed HTTP requests through
 * the proxy, then N DNS queries) to FILE (default bench_audit.jsonl in the
 * current directory; remove it after) with batching on, flushing every 64
 * lines as the event loop does, and prints the mean cost of one line of
 * each kind in ns. The JSON, the hash chain and the writes are the real
 * ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void
nop_wakeup(void *arg)
{
	(void)arg;
}

static double
run(struct audit *a, const struct audit_event *ev, long n)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		if (audit_write(a, ev) == -1) {
			fprintf(stderr, "bench_audit: write failed\n");
			exit(1);
		}
		if (i % 64 == 63)
			audit_flush(a);
	}
	audit_flush(a);
	return (now_ns() - t0) / (double)n;
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	const char *path = argc > 2 ? argv[2] : "bench_audit.jsonl";
	struct audit_event http, dns;
	struct audit *a;
	char err[256];

	if (n <= 0 || n > 100000000) {
		fprintf(stderr, "usage: bench_audit [N] [FILE]\n");
		return 2;
	}
	if ((a = audit_open(path, err, sizeof err)) == NULL) {
		fprintf(stderr, "bench_audit: %s: %s\n", path, err);
		return 1;
	}
	audit_set_batch(a, nop_wakeup, NULL);
	audit_event_init(&http);
	http.event = "http";
	http.action = "allow";
	http.rule = "127.0.0.1";
	http.source = "/etc/opencode-sandbox/policy.yaml:4";
	http.reason = "127.0.0.1 is on the allowlist (all methods)";
	http.mode = "practical";
	http.client = "127.0.0.1:48312";
	http.host = "127.0.0.1";
	http.port = 9081;
	http.scheme = "http";
	http.method = "GET";
	http.path = "/bench?token=secret";
	http.status = 200;
	http.bytes_up = 0;
	http.bytes_down = 100;
	http.duration_ms = 0;
	http.addr = "127.0.0.1";
	audit_event_init(&dns);
	dns.event = "dns";
	dns.action = "allow";
	dns.rule = "198.18.0.0/15";
	dns.source = "/etc/opencode-sandbox/policy.yaml:6";
	dns.mode = "practical";
	dns.client = "127.0.0.1:53124";
	dns.qname = "name-000123.benchtld";
	dns.qtype = "A";
	dns.rcode = "NOERROR";
	dns.duration_ms = 0;
	dns.cached = 1;
	printf("http event: %.0f ns/line\n", run(a, &http, n));
	printf("dns event:  %.0f ns/line\n", run(a, &dns, n));
	audit_close(a);
	return 0;
}
