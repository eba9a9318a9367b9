/*
 * The leaf cache: a bounded LRU of minted certificates keyed by (host,
 * is_ip), a hash table for O(1) lookup and a list in recency order for
 * O(1) eviction. egressd runs one event loop on one thread, so a lookup
 * runs to completion before the next starts: when several connections ask
 * for the same new host, the first mints and inserts and every later one
 * finds that entry. Nothing here locks; a second thread would need to.
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#define CA_INTERNAL
#include "ca.h"

#define CA_CACHE_REFRESH_MAX 3600 /* re-mint a leaf this close to its notAfter */

struct ca_cache_entry {
	LIST_ENTRY(ca_cache_entry) bucket;
	TAILQ_ENTRY(ca_cache_entry) lru; /* most recently used first */
	X509 *leaf;
	time_t not_after;
	uint64_t hash;
	int is_ip;
	char host[]; /* canonical, see ca_mint_host_check */
};
LIST_HEAD(ca_cache_bucket, ca_cache_entry);
TAILQ_HEAD(ca_cache_lru, ca_cache_entry);

struct ca_cache {
	struct ca *ca;
	struct ca_cache_bucket *buckets;
	size_t mask; /* bucket count - 1, a power of two minus one */
	size_t capacity;
	struct ca_cache_lru lru;
	uint64_t seed;
	struct ca_cache_stats stats;
};

/*
 * Seeded FNV-1a with a final mix. The seed is random per cache so a client
 * choosing SNI names cannot aim them all at one bucket.
 */
static uint64_t
ca_cache_hash(const struct ca_cache *cache, const char *host, int is_ip)
{
	uint64_t h = cache->seed ^ (is_ip ? 0x9e3779b97f4a7c15ull : 0);

	for (; *host != '\0'; host++) {
		h ^= (unsigned char)*host;
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* The CA must outlive the cache. capacity 0: CA_CACHE_DEFAULT. */
struct ca_cache *
ca_cache_new(struct ca *ca, size_t capacity)
{
	struct ca_cache *cache;
	size_t nb = 16;

	if (capacity == 0)
		capacity = CA_CACHE_DEFAULT;
	while (nb < 2 * capacity && nb < ((size_t)1 << 30))
		nb <<= 1;
	cache = xcalloc(1, sizeof *cache);
	cache->ca = ca;
	cache->capacity = capacity;
	cache->buckets = xcalloc(nb, sizeof *cache->buckets);
	cache->mask = nb - 1;
	TAILQ_INIT(&cache->lru);
	if (RAND_bytes((unsigned char *)&cache->seed, sizeof cache->seed) != 1)
		cache->seed =
		    (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull; /* still fine, just guessable */
	return cache;
}

static void
ca_cache_remove(struct ca_cache *cache, struct ca_cache_entry *e)
{
	LIST_REMOVE(e, bucket);
	TAILQ_REMOVE(&cache->lru, e, lru);
	X509_free(e->leaf);
	free(e);
	cache->stats.entries--;
}

void
ca_cache_free(struct ca_cache *cache)
{
	struct ca_cache_entry *e;

	if (cache == NULL)
		return;
	while ((e = TAILQ_FIRST(&cache->lru)) != NULL)
		ca_cache_remove(cache, e);
	free(cache->buckets);
	free(cache);
}

static int
ca_cache_leaf_end(X509 *leaf, time_t *out)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
		return -1;
	*out = timegm(&tm);
	return 0;
}

/*
 * A leaf is stale when it ends within a refresh margin (an eighth of the
 * leaf lifetime, at most an hour) and a new one would end later; a leaf
 * that already ends with the CA cannot be improved and is kept.
 */
static int
ca_cache_stale(const struct ca_cache *cache, const struct ca_cache_entry *e)
{
	const struct ca *ca = cache->ca;
	long margin = ca->leaf_lifetime / 8;
	time_t want;

	if (margin > CA_CACHE_REFRESH_MAX)
		margin = CA_CACHE_REFRESH_MAX;
	want = time(NULL) + margin;
	if (want > ca->not_after)
		want = ca->not_after;
	return e->not_after < want;
}

static struct ca_cache_entry *
ca_cache_find(struct ca_cache *cache, const char *host, int is_ip, uint64_t h)
{
	struct ca_cache_entry *e;

	LIST_FOREACH(e, &cache->buckets[h & cache->mask], bucket)
	{
		if (e->hash == h && e->is_ip == is_ip && strcmp(e->host, host) == 0)
			return e;
	}
	return NULL;
}

/* Mints a leaf for a canonical host and records its end of validity. */
static X509 *
ca_cache_mint(struct ca_cache *cache, const char *host, int is_ip, time_t *not_after)
{
	X509 *leaf;

	if (ca_mint(cache->ca, host, is_ip, &leaf) != 0)
		return NULL;
	if (ca_cache_leaf_end(leaf, not_after) != 0) {
		X509_free(leaf);
		return NULL;
	}
	cache->stats.mints++;
	return leaf;
}

/*
 * Returns the leaf for host with a reference the caller drops with
 * X509_free, minting it on a miss; NULL when the host is invalid or the
 * mint fails (nothing is cached then).
 */
X509 *
ca_cache_get(struct ca_cache *cache, const char *host, int is_ip)
{
	struct ca_cache_entry *e;
	char canon[CA_HOST_BUFLEN];
	time_t not_after;
	uint64_t h;
	X509 *leaf;
	size_t len;

	is_ip = is_ip != 0;
	if (ca_mint_host_check(host, is_ip, canon) != NULL)
		return NULL;
	h = ca_cache_hash(cache, canon, is_ip);
	if ((e = ca_cache_find(cache, canon, is_ip, h)) != NULL) {
		if (!ca_cache_stale(cache, e)) {
			cache->stats.hits++;
		} else {
			cache->stats.misses++;
			if ((leaf = ca_cache_mint(cache, canon, is_ip, &not_after)) == NULL)
				return NULL;
			X509_free(e->leaf);
			e->leaf = leaf;
			e->not_after = not_after;
		}
		TAILQ_REMOVE(&cache->lru, e, lru);
		TAILQ_INSERT_HEAD(&cache->lru, e, lru);
		X509_up_ref(e->leaf);
		return e->leaf;
	}

	cache->stats.misses++;
	if ((leaf = ca_cache_mint(cache, canon, is_ip, &not_after)) == NULL)
		return NULL;
	if (cache->stats.entries >= cache->capacity) {
		ca_cache_remove(cache, TAILQ_LAST(&cache->lru, ca_cache_lru));
		cache->stats.evictions++;
	}
	len = strlen(canon);
	e = xmalloc(sizeof *e + len + 1);
	memcpy(e->host, canon, len + 1);
	e->leaf = leaf;
	e->not_after = not_after;
	e->hash = h;
	e->is_ip = is_ip;
	LIST_INSERT_HEAD(&cache->buckets[h & cache->mask], e, bucket);
	TAILQ_INSERT_HEAD(&cache->lru, e, lru);
	cache->stats.entries++;
	X509_up_ref(leaf);
	return leaf;
}

void
ca_cache_stats(const struct ca_cache *cache, struct ca_cache_stats *out)
{
	*out = cache->stats;
}
