/*
 * Benchmark for leaf minting: bench_mint [N=2000]
 * makes a per-run CA, then mints N leaves for new host names twice: with
 * ca_mint alone, and through the cache (a miss each time, the path a new
 * host takes in egressd, default capacity so evictions are included).
 * Prints the mean and p99 of each and of N/10 IPv6 leaves, checks that the
 * leaves verify against the CA, and exits non-zero when the mean cost of a
 * new host through the cache is above the target (0.3 ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>

#include "ca.h"

#define TARGET_MS 0.3

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
report(const char *what, double *t, size_t n, double *mean_out)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += t[i];
	qsort(t, n, sizeof *t, cmp_double);
	*mean_out = sum / (double)n;
	printf("%-24s n=%zu mean=%.4f ms p50=%.4f ms p99=%.4f ms max=%.4f ms\n", what, n, *mean_out,
	       t[n / 2], t[(n * 99) / 100], t[n - 1]);
}

/* One leaf checked by signature against the CA key: the bench mints real certificates. */
static int
check_leaf(struct ca *ca, X509 *leaf)
{
	EVP_PKEY *pub = X509_get0_pubkey(ca_cert(ca));

	return pub != NULL && X509_verify(leaf, pub) == 1 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct ca *ca;
	struct ca_cache *cache;
	struct ca_cache_stats st;
	char err[256], host[64];
	double *t, t0, mean_mint, mean_cache, mean_ip;
	size_t n = 2000, i;
	X509 *leaf;
	int bad = 0;

	if (argc > 1 && (n = strtoul(argv[1], NULL, 10)) < 10) {
		fprintf(stderr, "usage: bench_mint [N >= 10]\n");
		return 2;
	}
	if ((ca = ca_new_ephemeral(CA_LIFETIME_DEFAULT, NULL, 0, err, sizeof err)) == NULL) {
		fprintf(stderr, "bench_mint: %s\n", err);
		return 1;
	}
	t = xcalloc(n, sizeof *t);
	for (i = 0; i < 50; i++) { /* warm up: first-use fetches and tables */
		snprintf(host, sizeof host, "warm%zu.example.com", i);
		if (ca_mint(ca, host, 0, &leaf) == 0)
			X509_free(leaf);
	}

	for (i = 0; i < n; i++) {
		snprintf(host, sizeof host, "host%zu.bench.example.com", i);
		t0 = now_ms();
		if (ca_mint(ca, host, 0, &leaf) != 0) {
			fprintf(stderr, "bench_mint: mint %s failed\n", host);
			return 1;
		}
		t[i] = now_ms() - t0;
		if (i % 500 == 0 && check_leaf(ca, leaf) != 0)
			bad++;
		X509_free(leaf);
	}
	report("ca_mint", t, n, &mean_mint);

	cache = ca_cache_new(ca, 0);
	for (i = 0; i < n; i++) {
		snprintf(host, sizeof host, "new%zu.bench.example.org", i);
		t0 = now_ms();
		leaf = ca_cache_get(cache, host, 0);
		t[i] = now_ms() - t0;
		if (leaf == NULL) {
			fprintf(stderr, "bench_mint: cache_get %s failed\n", host);
			return 1;
		}
		if (i % 500 == 0 && check_leaf(ca, leaf) != 0)
			bad++;
		X509_free(leaf);
	}
	report("ca_cache_get (miss)", t, n, &mean_cache);
	ca_cache_stats(cache, &st);
	printf("cache: misses=%llu mints=%llu evictions=%llu entries=%zu\n",
	       (unsigned long long)st.misses, (unsigned long long)st.mints,
	       (unsigned long long)st.evictions, st.entries);

	t0 = now_ms();
	for (i = 0; i < n; i++) {
		leaf = ca_cache_get(cache, "new1999.bench.example.org", 0);
		X509_free(leaf);
	}
	printf("%-24s mean=%.5f ms\n", "ca_cache_get (hit)", (now_ms() - t0) / (double)n);

	for (i = 0; i < n / 10; i++) {
		snprintf(host, sizeof host, "2001:db8::%zx", i + 1);
		t0 = now_ms();
		if (ca_mint(ca, host, 1, &leaf) != 0) {
			fprintf(stderr, "bench_mint: mint %s failed\n", host);
			return 1;
		}
		t[i] = now_ms() - t0;
		if (i == 0 && check_leaf(ca, leaf) != 0)
			bad++;
		X509_free(leaf);
	}
	report("ca_mint (IPv6)", t, n / 10, &mean_ip);

	ca_cache_free(cache);
	ca_free(ca);
	free(t);
	if (bad) {
		fprintf(stderr, "bench_mint: %d leaves did not verify\n", bad);
		return 1;
	}
	if (mean_cache > TARGET_MS) {
		fprintf(stderr, "bench_mint: FAIL: mean %.4f ms per new host > target %.1f ms\n",
		        mean_cache, TARGET_MS);
		return 1;
	}
	printf("bench_mint: OK: mean %.4f ms per new host (target < %.1f ms)\n", mean_cache,
	       TARGET_MS);
	return 0;
}
