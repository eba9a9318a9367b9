/*
 * Unit tests for ca/cache.c: hits and misses, eviction in LRU order, the
 * capacity bound, one mint for a host asked for twice, hosts folded to one
 * key (case, address spelling) but names and addresses kept apart, leaves
 * that outlive their eviction through the caller's reference, re-minting
 * of leaves near their end, and a long random run checked step by step
 * against a naive LRU model. ASan's leak check covers the reference counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/x509v3.h>

#include "ca.h"

static struct ca *test_ca;

static void
stats_expect(struct ca_cache *cache, uint64_t hits, uint64_t misses, uint64_t mints,
             uint64_t evictions, size_t entries)
{
	struct ca_cache_stats st;

	ca_cache_stats(cache, &st);
	if (st.hits != hits || st.misses != misses || st.mints != mints ||
	    st.evictions != evictions || st.entries != entries)
		fail_msg("stats hits=%llu misses=%llu mints=%llu evictions=%llu entries=%zu, "
		         "want %llu %llu %llu %llu %zu",
		         (unsigned long long)st.hits, (unsigned long long)st.misses,
		         (unsigned long long)st.mints, (unsigned long long)st.evictions, st.entries,
		         (unsigned long long)hits, (unsigned long long)misses,
		         (unsigned long long)mints, (unsigned long long)evictions, entries);
}

/* Gets host and checks the leaf names it; returns the leaf without its reference. */
static X509 *
get(struct ca_cache *cache, const char *host, int is_ip)
{
	X509 *leaf = ca_cache_get(cache, host, is_ip);

	if (leaf == NULL)
		fail_msg("ca_cache_get %s failed", host);
	if (is_ip)
		assert_int_equal(X509_check_ip_asc(leaf, host, 0), 1);
	else
		assert_int_equal(X509_check_host(leaf, host, 0, 0, NULL), 1);
	X509_free(leaf); /* the cache still holds one */
	return leaf;
}

static void
test_hit_miss(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 8);
	X509 *a, *b, *a2;

	stats_expect(cache, 0, 0, 0, 0, 0);
	a = get(cache, "a.example", 0);
	stats_expect(cache, 0, 1, 1, 0, 1);
	a2 = get(cache, "a.example", 0);
	assert_ptr_equal(a, a2);
	stats_expect(cache, 1, 1, 1, 0, 1);
	b = get(cache, "b.example", 0);
	assert_ptr_not_equal(a, b);
	stats_expect(cache, 1, 2, 2, 0, 2);
	ca_cache_free(cache);
}

/*
 * egressd is single-threaded: a second request for a host the first has
 * just minted finds that entry, even while the first still holds its leaf.
 */
static void
test_same_host_mints_once(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 0);
	X509 *first, *second;

	first = ca_cache_get(cache, "new.example", 0);
	second = ca_cache_get(cache, "new.example", 0);
	assert_non_null(first);
	assert_ptr_equal(first, second);
	stats_expect(cache, 1, 1, 1, 0, 1);
	X509_free(first);
	X509_free(second);
	ca_cache_free(cache);
}

static void
test_keys(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 0);
	X509 *a, *b;

	/* Case and address spelling fold to one entry. */
	a = get(cache, "Mixed.Example", 0);
	b = get(cache, "mixed.example", 0);
	assert_ptr_equal(a, b);
	a = get(cache, "2001:db8::1", 1);
	b = get(cache, "2001:0db8:0:0::1", 1);
	assert_ptr_equal(a, b);
	stats_expect(cache, 2, 2, 2, 0, 2);
	/* The same text as a name and as an address: two leaves, two SAN types. */
	a = get(cache, "192.0.2.1", 1);
	b = ca_cache_get(cache, "192.0.2.1", 0);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(X509_check_ip_asc(b, "192.0.2.1", 0), 0);
	X509_free(b);
	stats_expect(cache, 2, 4, 4, 0, 4);

	/* Refused hosts are neither cached nor counted. */
	assert_null(ca_cache_get(cache, "bad name", 0));
	assert_null(ca_cache_get(cache, "*.example", 0));
	assert_null(ca_cache_get(cache, "example.com", 1));
	assert_null(ca_cache_get(cache, NULL, 0));
	stats_expect(cache, 2, 4, 4, 0, 4);
	ca_cache_free(cache);
}

static void
test_eviction_order(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 3);
	X509 *a, *a2;

	a = get(cache, "a.test", 0);
	get(cache, "b.test", 0);
	get(cache, "c.test", 0);
	stats_expect(cache, 0, 3, 3, 0, 3);
	a2 = get(cache, "a.test", 0); /* a is now the most recent: b is the oldest */
	assert_ptr_equal(a, a2);
	get(cache, "d.test", 0);
	stats_expect(cache, 1, 4, 4, 1, 3);
	get(cache, "c.test", 0); /* still there */
	get(cache, "a.test", 0); /* still there */
	stats_expect(cache, 3, 4, 4, 1, 3);
	get(cache, "b.test", 0); /* evicted before: minted again, evicting d */
	stats_expect(cache, 3, 5, 5, 2, 3);
	get(cache, "d.test", 0);
	stats_expect(cache, 3, 6, 6, 3, 3);
	/* Recency now, oldest first: a, b, d; a goes next. */
	get(cache, "b.test", 0);
	get(cache, "d.test", 0);
	stats_expect(cache, 5, 6, 6, 3, 3);
	get(cache, "e.test", 0);
	get(cache, "b.test", 0);
	get(cache, "d.test", 0);
	stats_expect(cache, 7, 7, 7, 4, 3);
	ca_cache_free(cache);
}

static void
test_capacity_bound(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 16);
	struct ca_cache_stats st;
	char host[64];
	int i;

	for (i = 0; i < 100; i++) {
		snprintf(host, sizeof host, "h%d.test", i);
		get(cache, host, 0);
		ca_cache_stats(cache, &st);
		assert_true(st.entries <= 16);
	}
	stats_expect(cache, 0, 100, 100, 84, 16);
	/* The last 16 are the ones kept. */
	for (i = 84; i < 100; i++) {
		snprintf(host, sizeof host, "h%d.test", i);
		get(cache, host, 0);
	}
	stats_expect(cache, 16, 100, 100, 84, 16);
	ca_cache_free(cache);
}

static void
test_default_capacity(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 0);
	char host[64];
	int i;

	for (i = 0; i < CA_CACHE_DEFAULT + 5; i++) {
		snprintf(host, sizeof host, "%d.d.test", i);
		get(cache, host, 0);
	}
	stats_expect(cache, 0, CA_CACHE_DEFAULT + 5, CA_CACHE_DEFAULT + 5, 5, CA_CACHE_DEFAULT);
	ca_cache_free(cache);
}

/* A caller's reference keeps a leaf alive after the cache drops it, and after the cache is gone. */
static void
test_refcounts(void **state)
{
	struct ca_cache *cache = ca_cache_new(test_ca, 1);
	X509 *held, *again;

	held = ca_cache_get(cache, "held.test", 0);
	assert_non_null(held);
	again = get(cache, "other.test", 0); /* evicts held.test */
	stats_expect(cache, 0, 2, 2, 1, 1);
	assert_int_equal(X509_check_host(held, "held.test", 0, 0, NULL), 1);
	again = ca_cache_get(cache, "other.test", 0);
	ca_cache_free(cache);
	assert_int_equal(X509_check_host(held, "held.test", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(again, "other.test", 0, 0, NULL), 1);
	X509_free(held);
	X509_free(again);
	ca_cache_free(NULL);
}

/*
 * A leaf near its end is minted again; a leaf that ends with the CA is
 * kept, since a new one could not last longer.
 */
static void
test_refresh(void **state)
{
	char err[256];
	struct ca *ca = ca_new_ephemeral(3600, NULL, 0, err, sizeof err);
	struct ca_cache *cache = ca_cache_new(ca, 0);
	X509 *a, *b;

	assert_non_null(ca);
	a = get(cache, "short.test", 0);
	b = get(cache, "short.test", 0);
	assert_ptr_equal(a, b); /* ends with the CA: kept */
	stats_expect(cache, 1, 1, 1, 0, 1);

	ca_set_leaf_lifetime(ca, 1);
	get(cache, "one-second.test", 0);
	sleep(2);
	a = ca_cache_get(cache, "one-second.test", 0);
	assert_non_null(a);
	assert_true(X509_cmp_current_time(X509_get0_notAfter(a)) > 0);
	stats_expect(cache, 1, 3, 3, 0, 2);
	X509_free(a);
	ca_cache_free(cache);
	ca_free(ca);
}

static uint64_t
rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * A random walk over 40 hosts with room for 8, each step checked against a
 * model kept as an array in recency order: hit or miss, and the counters.
 */
static void
test_model(void **state)
{
	enum { HOSTS = 40, CAP = 8, STEPS = 1500 };
	struct ca_cache *cache = ca_cache_new(test_ca, CAP);
	struct ca_cache_stats st;
	int model[CAP], n = 0, i, j, h, pos;
	uint64_t seed = 0x9e3779b97f4a7c15ull, hits = 0, misses = 0, evictions = 0;
	char host[32];

	for (i = 0; i < STEPS; i++) {
		/* Skewed: low numbers come up more often, so there are hits. */
		h = (int)(rng(&seed) % HOSTS);
		if (rng(&seed) % 2)
			h %= 10;
		snprintf(host, sizeof host, "m%d.test", h);
		for (pos = -1, j = 0; j < n; j++)
			if (model[j] == h)
				pos = j;
		if (pos >= 0) {
			hits++;
			memmove(model + 1, model, (size_t)pos * sizeof *model);
		} else {
			misses++;
			if (n == CAP) {
				evictions++;
				n--;
			}
			memmove(model + 1, model, (size_t)n * sizeof *model);
			n++;
		}
		model[0] = h;
		get(cache, host, 0);
		ca_cache_stats(cache, &st);
		if (st.hits != hits || st.misses != misses || st.evictions != evictions)
			fail_msg("step %d (%s): cache and model disagree", i, host);
	}
	stats_expect(cache, hits, misses, misses, evictions, CAP);
	assert_true(hits > 100 && misses > 100);
	ca_cache_free(cache);
}

static int
setup(void **state)
{
	char err[256];

	test_ca = ca_new_ephemeral(CA_LIFETIME_DEFAULT, NULL, 0, err, sizeof err);
	return test_ca == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	ca_free(test_ca);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit_miss),       cmocka_unit_test(test_same_host_mints_once),
	    cmocka_unit_test(test_keys),           cmocka_unit_test(test_eviction_order),
	    cmocka_unit_test(test_capacity_bound), cmocka_unit_test(test_default_capacity),
	    cmocka_unit_test(test_refcounts),      cmocka_unit_test(test_refresh),
	    cmocka_unit_test(test_model),
	};

	log_init("test_ca_cache", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
