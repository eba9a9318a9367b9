/*
 * The answer cache: upstream answers by question (lowercase name, type,
 * class), kept for their TTL, bounded in entries and bytes with the least
 * recently used going first. The table is hashed with SipHash under a key
 * drawn at start, since the names are the payload's to choose and a
 * predictable hash would let it pile every name into one chain.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "resolver_int.h"

#define DNS_CACHE_MIN_BUCKETS 1024

TAILQ_HEAD(dns_cache_lru, dns_cache_entry);
struct dns_cache {
	struct dns_cache_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	size_t bytes;
	size_t max_entries;
	size_t max_bytes;
	struct dns_cache_lru lru; /* most recently used first */
	uint64_t k0, k1;
};

#define DNS_CACHE_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define DNS_CACHE_SIPROUND                                                                         \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = DNS_CACHE_ROTL(v1, 13);                                                       \
		v1 ^= v0;                                                                          \
		v0 = DNS_CACHE_ROTL(v0, 32);                                                       \
		v2 += v3;                                                                          \
		v3 = DNS_CACHE_ROTL(v3, 16);                                                       \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = DNS_CACHE_ROTL(v3, 21);                                                       \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = DNS_CACHE_ROTL(v1, 17);                                                       \
		v1 ^= v2;                                                                          \
		v2 = DNS_CACHE_ROTL(v2, 32);                                                       \
	} while (0)

/* SipHash-2-4 of a question key. */
uint64_t
dns_cache_hash(const struct dns_cache *c, const uint8_t *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ c->k0, v1 = 0x646f72616e646f6dULL ^ c->k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ c->k0, v3 = 0x7465646279746573ULL ^ c->k1;
	uint64_t m, b = (uint64_t)len << 56;
	size_t i, left = len & 7;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, in + i, 8);
		v3 ^= m;
		DNS_CACHE_SIPROUND;
		DNS_CACHE_SIPROUND;
		v0 ^= m;
	}
	for (m = 0; left > 0; left--)
		m |= (uint64_t)in[i + left - 1] << (8 * (left - 1));
	b |= m;
	v3 ^= b;
	DNS_CACHE_SIPROUND;
	DNS_CACHE_SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	DNS_CACHE_SIPROUND;
	DNS_CACHE_SIPROUND;
	DNS_CACHE_SIPROUND;
	DNS_CACHE_SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

struct dns_cache *
dns_cache_new(size_t max_entries, size_t max_bytes)
{
	struct dns_cache *c;
	uint64_t k[2];

	c = xcalloc(1, sizeof *c);
	c->max_entries = max_entries > 0 ? max_entries : 1;
	c->max_bytes = max_bytes;
	for (c->nbuckets = DNS_CACHE_MIN_BUCKETS; c->nbuckets < c->max_entries; c->nbuckets <<= 1)
		;
	c->buckets = xcalloc(c->nbuckets, sizeof *c->buckets);
	TAILQ_INIT(&c->lru);
	if (getrandom(k, sizeof k, 0) != (ssize_t)sizeof k)
		fatal("getrandom");
	c->k0 = k[0];
	c->k1 = k[1];
	return c;
}

static size_t
dns_cache_entry_size(const struct dns_cache_entry *e)
{
	return sizeof *e + e->key_len + e->raw_len + e->served.len +
	       e->served.nttl * sizeof *e->served.ttl_off;
}

/* An entry outside the table (for an answer that may not be kept). */
struct dns_cache_entry *
dns_cache_entry_new(const uint8_t *key, size_t key_len, uint8_t *raw, size_t raw_len, uint64_t now)
{
	struct dns_cache_entry *e;

	e = xcalloc(1, sizeof *e);
	e->key = xmalloc(key_len);
	memcpy(e->key, key, key_len);
	e->key_len = key_len;
	e->raw = raw;
	e->raw_len = raw_len;
	e->t_insert = now;
	e->t_expire = now;
	e->served.ede = -1;
	return e;
}

void
dns_cache_entry_free(struct dns_cache_entry *e)
{
	if (e == NULL)
		return;
	dns_answer_served_free(&e->served);
	free(e->key);
	free(e->raw);
	free(e);
}

static void
dns_cache_unlink(struct dns_cache *c, struct dns_cache_entry *e)
{
	struct dns_cache_entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	TAILQ_REMOVE(&c->lru, e, lru);
	c->count--;
	c->bytes -= dns_cache_entry_size(e);
}

static void
dns_cache_drop(struct dns_cache *c, struct dns_cache_entry *e)
{
	dns_cache_unlink(c, e);
	dns_cache_entry_free(e);
}

void
dns_cache_clear(struct dns_cache *c)
{
	struct dns_cache_entry *e;

	while ((e = TAILQ_FIRST(&c->lru)) != NULL)
		dns_cache_drop(c, e);
}

void
dns_cache_free(struct dns_cache *c)
{
	if (c == NULL)
		return;
	dns_cache_clear(c);
	free(c->buckets);
	free(c);
}

size_t
dns_cache_count(const struct dns_cache *c)
{
	return c->count;
}

size_t
dns_cache_bytes(const struct dns_cache *c)
{
	return c->bytes;
}

static struct dns_cache_entry *
dns_cache_find(struct dns_cache *c, const uint8_t *key, size_t key_len, uint64_t h)
{
	struct dns_cache_entry *e;

	for (e = c->buckets[h & (c->nbuckets - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->key_len == key_len && memcmp(e->key, key, key_len) == 0)
			return e;
	return NULL;
}

/* A fresh answer to the question key, or NULL; an expired one is dropped. */
struct dns_cache_entry *
dns_cache_get(struct dns_cache *c, const uint8_t *key, size_t key_len, uint64_t now)
{
	uint64_t h = dns_cache_hash(c, key, key_len);
	struct dns_cache_entry *e;

	if ((e = dns_cache_find(c, key, key_len, h)) == NULL)
		return NULL;
	if (now >= e->t_expire) {
		dns_cache_drop(c, e);
		return NULL;
	}
	if (TAILQ_FIRST(&c->lru) != e) {
		TAILQ_REMOVE(&c->lru, e, lru);
		TAILQ_INSERT_HEAD(&c->lru, e, lru);
	}
	return e;
}

/*
 * Keep raw (which the cache now owns) as the answer to key for ttl seconds,
 * replacing an older answer, and evicting the least recently used while
 * over the bounds. Returns the entry, valid until the next cache call.
 */
struct dns_cache_entry *
dns_cache_put(struct dns_cache *c, const uint8_t *key, size_t key_len, uint8_t *raw, size_t raw_len,
              uint32_t ttl, uint64_t now)
{
	uint64_t h = dns_cache_hash(c, key, key_len);
	struct dns_cache_entry *e, *old, **bucket;

	if ((old = dns_cache_find(c, key, key_len, h)) != NULL)
		dns_cache_drop(c, old);
	e = dns_cache_entry_new(key, key_len, raw, raw_len, now);
	e->hash = h;
	e->t_expire = now + (uint64_t)ttl * 1000;
	e->cached = 1;
	bucket = &c->buckets[h & (c->nbuckets - 1)];
	e->next = *bucket;
	*bucket = e;
	TAILQ_INSERT_HEAD(&c->lru, e, lru);
	c->count++;
	c->bytes += dns_cache_entry_size(e);
	while (c->count > 1 &&
	       (c->count > c->max_entries || (c->max_bytes > 0 && c->bytes > c->max_bytes)))
		dns_cache_drop(c, TAILQ_LAST(&c->lru, dns_cache_lru));
	return e;
}

/*
 * What clients get from e under policy p (generation gen), whose decision
 * for the question's name is qd: built once per policy, then reused, and
 * counted in the cache's bytes. NULL if the answer cannot be served.
 */
const struct dns_answer_served *
dns_cache_served(struct dns_cache *c, struct dns_cache_entry *e, uint64_t gen,
                 const struct policy *p, const struct decision *qd)
{
	size_t before;

	if (e->served_ok && e->served_gen == gen)
		return &e->served;
	before = dns_cache_entry_size(e);
	dns_answer_served_free(&e->served);
	e->served_ok = dns_answer_served_build(e->raw, e->raw_len, p, qd, &e->served) == 0;
	e->served_gen = gen;
	if (e->cached)
		c->bytes = c->bytes - before + dns_cache_entry_size(e);
	return e->served_ok ? &e->served : NULL;
}
