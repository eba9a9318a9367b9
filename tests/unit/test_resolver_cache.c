/*
 * Unit tests for resolver/cache.c: answers come back by question (and only
 * their own), expire with their TTL, replace older answers, and the bounds
 * on entries and bytes evict the least recently used first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resolver_int.h"

static void
test_key(const char *name, uint16_t type, uint8_t *key, size_t *len)
{
	assert_null(dns_msg_name_key(name, type, key, len));
}

static uint8_t *
test_raw(const char *text, size_t *len)
{
	*len = strlen(text);
	return (uint8_t *)xstrdup(text);
}

static void
test_cache_get_put(void **state)
{
	struct dns_cache *c = dns_cache_new(10, 0);
	struct dns_cache_entry *e;
	uint8_t k1[DNS_MSG_KEY_MAX], k2[DNS_MSG_KEY_MAX], *raw;
	size_t l1, l2, rl;

	test_key("a.example.test", 1, k1, &l1);
	test_key("a.example.test", 28, k2, &l2);
	assert_null(dns_cache_get(c, k1, l1, 1000));
	raw = test_raw("one", &rl);
	e = dns_cache_put(c, k1, l1, raw, rl, 30, 1000);
	assert_non_null(e);
	assert_int_equal(dns_cache_count(c), 1);
	e = dns_cache_get(c, k1, l1, 1000 + 29999);
	assert_non_null(e);
	assert_memory_equal(e->raw, "one", 3);
	/* Another type of the same name is another question. */
	assert_null(dns_cache_get(c, k2, l2, 1000));
	/* Expired at exactly its TTL, and dropped. */
	assert_null(dns_cache_get(c, k1, l1, 1000 + 30000));
	assert_int_equal(dns_cache_count(c), 0);

	raw = test_raw("old", &rl);
	dns_cache_put(c, k1, l1, raw, rl, 30, 1000);
	raw = test_raw("new", &rl);
	dns_cache_put(c, k1, l1, raw, rl, 30, 2000);
	assert_int_equal(dns_cache_count(c), 1);
	assert_memory_equal(dns_cache_get(c, k1, l1, 2000)->raw, "new", 3);
	dns_cache_free(c);
}

static void
test_cache_lru(void **state)
{
	struct dns_cache *c = dns_cache_new(3, 0);
	uint8_t k[4][DNS_MSG_KEY_MAX], *raw;
	size_t l[4], rl;
	char name[32];
	int i;

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "n%d.example.test", i);
		test_key(name, 1, k[i], &l[i]);
	}
	for (i = 0; i < 3; i++) {
		raw = test_raw("x", &rl);
		dns_cache_put(c, k[i], l[i], raw, rl, 60, 0);
	}
	/* n0 is used, so n1 is the least recently used when n3 comes in. */
	assert_non_null(dns_cache_get(c, k[0], l[0], 1));
	raw = test_raw("x", &rl);
	dns_cache_put(c, k[3], l[3], raw, rl, 60, 2);
	assert_int_equal(dns_cache_count(c), 3);
	assert_non_null(dns_cache_get(c, k[0], l[0], 3));
	assert_null(dns_cache_get(c, k[1], l[1], 3));
	assert_non_null(dns_cache_get(c, k[2], l[2], 3));
	assert_non_null(dns_cache_get(c, k[3], l[3], 3));
	dns_cache_clear(c);
	assert_int_equal(dns_cache_count(c), 0);
	dns_cache_free(c);
}

static void
test_cache_bytes(void **state)
{
	struct dns_cache *c = dns_cache_new(1000, 4096);
	uint8_t k[DNS_MSG_KEY_MAX], *raw;
	size_t l, i;
	char name[32];

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof name, "b%zu.example.test", i);
		test_key(name, 1, k, &l);
		raw = xmalloc(1000);
		memset(raw, 'x', 1000);
		dns_cache_put(c, k, l, raw, 1000, 60, 0);
	}
	/* Four answers of 1000 bytes and their bookkeeping fit, not more. */
	assert_true(dns_cache_count(c) >= 1 && dns_cache_count(c) <= 4);
	assert_non_null(dns_cache_get(c, k, l, 1));
	dns_cache_free(c);
}

static void
test_cache_hash_keyed(void **state)
{
	struct dns_cache *a = dns_cache_new(10, 0), *b = dns_cache_new(10, 0);
	uint8_t k[DNS_MSG_KEY_MAX];
	size_t l;

	/* Keyed per process: the payload cannot aim names at one chain. */
	test_key("x.example.test", 1, k, &l);
	assert_int_not_equal(dns_cache_hash(a, k, l), dns_cache_hash(b, k, l));
	assert_int_equal(dns_cache_hash(a, k, l), dns_cache_hash(a, k, l));
	dns_cache_free(a);
	dns_cache_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cache_get_put),
	    cmocka_unit_test(test_cache_lru),
	    cmocka_unit_test(test_cache_bytes),
	    cmocka_unit_test(test_cache_hash_keyed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
