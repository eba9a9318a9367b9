/*
 * Tests for policy/domain.c: matching and validation are table-driven from
 * tests/data/domain.tsv and tests/data/domain_errors.tsv; the rest covers
 * sources, duplicates, add_kind and a large random set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_int.h"
#include "test_rng.h"
#include "tsv.h"

static int
parse_flags(const char *s)
{
	int flags = 0;

	if (strstr(s, "allow") != NULL)
		flags |= DOMAIN_F_ALLOWLIST;
	if (strstr(s, "noaddr") != NULL)
		flags |= DOMAIN_F_NO_ADDR;
	return flags;
}

/* Adds one table entry: "||name^" as a tree, anything else as written. */
static const char *
add_entry(struct domain_set *set, const char *entry, int flags, unsigned line)
{
	size_t len = strlen(entry);

	if (len > 3 && entry[0] == '|' && entry[1] == '|' && entry[len - 1] == '^')
		return domain_set_add_kind(set, DOMAIN_TREE, entry + 2, len - 3, "list.yaml", line);
	return domain_set_add(set, entry, len, flags, "list.yaml", line);
}

static void
check_match_row(char **f, unsigned lineno)
{
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	struct addr a;
	char entries[4096], got[512], *tok, *save = NULL;
	const char *error;
	unsigned n = 0;
	int hit;

	snprintf(entries, sizeof entries, "%s", f[1]);
	for (tok = strtok_r(entries, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
		if ((error = add_entry(set, tok, parse_flags(f[0]), ++n)) != NULL)
			fail_msg("domain.tsv:%u: adding \"%s\": %s", lineno, tok, error);
	}
	memset(&m, 0, sizeof m);
	if (f[2][0] != '\0' && addr_parse(f[2], &a) == NULL)
		hit = domain_set_match_addr(set, &a, &m);
	else
		hit = domain_set_match_name(set, f[2], &m);
	if (hit) {
		snprintf(got, sizeof got, "%s@%u", m.pattern, m.line);
		if (m.file == NULL || strcmp(m.file, "list.yaml") != 0)
			fail_msg("domain.tsv:%u: wrong file", lineno);
	} else
		snprintf(got, sizeof got, "-");
	if (strcmp(got, f[3]) != 0)
		fail_msg("domain.tsv:%u: query \"%s\": got %s, want %s", lineno, f[2], got, f[3]);
	domain_set_free(set);
}

static void
test_domain_table(void **state)
{
	struct tsv t;
	char **f;

	tsv_open(&t, "domain.tsv", 4, 4);
	while ((f = tsv_next(&t)) != NULL)
		check_match_row(f, t.lineno);
	assert_true(t.rows >= 60);
}

static void
test_domain_errors(void **state)
{
	char pattern[4096], **f;
	unsigned lineno;
	struct tsv t;
	struct domain_set *set;
	const char *error;
	size_t len;

	tsv_open(&t, "domain_errors.tsv", 3, 3);
	while ((f = tsv_next(&t)) != NULL) {
		lineno = t.lineno;
		set = domain_set_new();
		/* "<empty>" is the empty entry; "\xHH" a byte. */
		snprintf(pattern, sizeof pattern, "%s", f[1]);
		len = strcmp(f[1], "<empty>") == 0 ? 0 : tsv_unescape(pattern);
		error = domain_set_add(set, pattern, len, parse_flags(f[0]), "x.yaml", 1);
		if (strcmp(f[2], "OK") == 0) {
			if (error != NULL)
				fail_msg("domain_errors.tsv:%u: \"%s\": %s", lineno, f[1], error);
			assert_int_equal(domain_set_count(set), 1);
		} else {
			if (error == NULL || strcmp(error, f[2]) != 0)
				fail_msg("domain_errors.tsv:%u: \"%s\": got \"%s\", want \"%s\"",
				         lineno, f[1], error ? error : "OK", f[2]);
			assert_int_equal(domain_set_count(set), 0);
		}
		domain_set_free(set);
	}
	assert_true(t.rows >= 50);
}

static void
test_domain_source(void **state)
{
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	struct addr a;
	char file[64];

	assert_null(domain_set_add(set, "builtin.example", 15, 0, NULL, 0));
	/* The caller's string is reused: the set must keep its own copy. */
	snprintf(file, sizeof file, "/etc/a.yaml");
	assert_null(domain_set_add(set, "a.example", 9, 0, file, 3));
	snprintf(file, sizeof file, "/etc/b.yaml");
	assert_null(domain_set_add(set, "*.b.example", 11, 0, file, 7));
	assert_null(domain_set_add(set, "10.0.0.0/8", 10, 0, file, 9));
	snprintf(file, sizeof file, "/etc/a.yaml");
	assert_null(domain_set_add(set, "c.example", 9, 0, file, 12));
	memset(file, 'X', sizeof file - 1);

	assert_true(domain_set_match_name(set, "builtin.example", &m));
	assert_null(m.file);
	assert_int_equal(m.kind, DOMAIN_EXACT);
	assert_true(domain_set_match_name(set, "a.example", &m));
	assert_string_equal(m.file, "/etc/a.yaml");
	assert_int_equal(m.line, 3);
	assert_true(domain_set_match_name(set, "x.b.example", &m));
	assert_string_equal(m.file, "/etc/b.yaml");
	assert_int_equal(m.line, 7);
	assert_int_equal(m.kind, DOMAIN_WILDCARD);
	assert_string_equal(m.pattern, "*.b.example");
	assert_true(domain_set_match_name(set, "c.example", &m));
	assert_string_equal(m.file, "/etc/a.yaml");
	assert_int_equal(m.line, 12);
	assert_null(addr_parse("10.9.8.7", &a));
	assert_true(domain_set_match_addr(set, &a, &m));
	assert_string_equal(m.file, "/etc/b.yaml");
	assert_int_equal(m.line, 9);
	assert_int_equal(m.kind, DOMAIN_CIDR);
	assert_string_equal(m.pattern, "10.0.0.0/8");
	/* NULL m: only the answer. */
	assert_true(domain_set_match_name(set, "a.example", NULL));
	assert_true(domain_set_match_addr(set, &a, NULL));
	assert_false(domain_set_match_name(set, "d.example", NULL));
	domain_set_free(set);
}

static void
test_domain_duplicates(void **state)
{
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	struct addr a;

	assert_null(domain_set_add(set, "a.example", 9, 0, "one", 1));
	assert_null(domain_set_add(set, "A.EXAMPLE.", 10, 0, "two", 2));
	assert_null(domain_set_add_kind(set, DOMAIN_EXACT, "a.example", 9, "three", 3));
	assert_null(domain_set_add(set, "::1", 3, 0, "one", 4));
	assert_null(domain_set_add(set, "[::1]", 5, 0, "two", 5));
	assert_null(domain_set_add(set, "::ffff:1.2.3.4", 14, 0, "one", 6));
	assert_null(domain_set_add(set, "1.2.3.4", 7, 0, "two", 7));
	assert_int_equal(domain_set_count(set), 3);
	assert_true(domain_set_match_name(set, "a.example", &m));
	assert_string_equal(m.file, "one");
	assert_int_equal(m.line, 1);
	assert_null(addr_parse("::1", &a));
	assert_true(domain_set_match_addr(set, &a, &m));
	assert_int_equal(m.line, 4);
	assert_null(addr_parse("1.2.3.4", &a));
	assert_true(domain_set_match_addr(set, &a, &m));
	assert_int_equal(m.line, 6);
	assert_string_equal(m.pattern, "1.2.3.4");

	/* Three kinds of one name are three entries. */
	assert_null(domain_set_add(set, "*.a.example", 11, 0, "one", 8));
	assert_null(domain_set_add_kind(set, DOMAIN_TREE, "a.example", 9, "one", 9));
	assert_null(domain_set_add_kind(set, DOMAIN_TREE, "A.example", 9, "two", 10));
	assert_int_equal(domain_set_count(set), 5);
	assert_true(domain_set_match_name(set, "a.example", &m));
	assert_int_equal(m.kind, DOMAIN_EXACT);
	assert_true(domain_set_match_name(set, "b.a.example", &m));
	assert_int_equal(m.kind, DOMAIN_WILDCARD);
	assert_int_equal(m.line, 8);
	domain_set_free(set);
}

static void
test_domain_add_kind(void **state)
{
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	struct addr a;

	assert_null(domain_set_add_kind(set, DOMAIN_EXACT, "API.Example.COM.", 16, "f", 1));
	assert_true(domain_set_match_name(set, "api.example.com", &m));
	assert_string_equal(m.pattern, "api.example.com");
	assert_null(domain_set_add_kind(set, DOMAIN_WILDCARD, "w.example", 9, "f", 2));
	assert_true(domain_set_match_name(set, "x.w.example", &m));
	assert_false(domain_set_match_name(set, "w.example", &m));
	assert_null(domain_set_add_kind(set, DOMAIN_TREE, "t.example", 9, "f", 3));
	assert_true(domain_set_match_name(set, "t.example", &m));
	assert_string_equal(m.pattern, "||t.example^");
	assert_null(domain_set_add_kind(set, DOMAIN_EXACT,
	                                "b\xc3\xbc"
	                                "cher.example",
	                                15, "f", 4));
	assert_true(domain_set_match_name(set, "xn--bcher-kva.example", &m));
	assert_int_equal(m.line, 4);
	assert_null(domain_set_add_kind(set, DOMAIN_ADDR, "10.0.0.1", 8, "f", 5));
	assert_null(domain_set_add_kind(set, DOMAIN_CIDR, "fd00::/8", 8, "f", 6));
	assert_null(addr_parse("fd00::1", &a));
	assert_true(domain_set_match_addr(set, &a, &m));
	assert_int_equal(m.line, 6);
	assert_int_equal(domain_set_count(set), 6);

	assert_string_equal(domain_set_add_kind(set, DOMAIN_EXACT, "2130706433", 10, "f", 9),
	                    "numeric host; write the address as a dotted quad");
	assert_string_equal(domain_set_add_kind(set, DOMAIN_TREE, "a.0x7f", 6, "f", 9),
	                    "numeric host; write the address as a dotted quad");
	assert_string_equal(domain_set_add_kind(set, DOMAIN_EXACT, "*.a.example", 11, "f", 9),
	                    "'*' is only allowed as a leading \"*.\"");
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, "", 0, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, ".", 1, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, "a b", 3, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, "a\0b", 3, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_TREE, "a/b", 3, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, "a..b", 4, "f", 9));
	assert_non_null(domain_set_add_kind(set, DOMAIN_EXACT, "\xff\xfe.example", 10, "f", 9));
	assert_string_equal(domain_set_add_kind(set, DOMAIN_CIDR, "10.0.0.1", 8, "f", 9),
	                    "not a CIDR");
	assert_string_equal(domain_set_add_kind(set, DOMAIN_ADDR, "10.0.0.0/8", 10, "f", 9),
	                    "not an address");
	assert_string_equal(domain_set_add_kind(set, DOMAIN_ADDR, "example.com", 11, "f", 9),
	                    "invalid address");
	assert_string_equal(domain_set_add_kind(set, (enum domain_kind)99, "a.b", 3, "f", 9),
	                    "unknown entry kind");
	assert_int_equal(domain_set_count(set), 6);
	domain_set_free(set);
}

/*
 * List files take a one-pass route to the table (lowercase, check and
 * hash together); config entries take host_parse(). Both must accept and
 * store the same names.
 */
static void
test_domain_fast_path(void **state)
{
	static const char *const names[] = {
	    "a.example",
	    "A.EXAMPLE.",
	    "ex_am-ple.com",
	    "-a.example",
	    "a-.example",
	    "a..example",
	    ".a.example",
	    "a.example..",
	    "a b.example",
	    "a.1",
	    "a.0x1f",
	    "a.0xg",
	    "1e5",
	    "a.1e5",
	    "a.0x",
	    "xn--bcher-kva.example",
	    "a\tb.example",
	    "a.example/",
	    "a:80",
	    "a@b",
	    "b\xc3\xbc\x63her.example",
	    "\xc0.example",
	    "_dmarc.example",
	    "0.0.0.0",
	    "example.",
	};
	char label64[70], long254[260];
	struct domain_set *set;
	struct host h;
	const char *name, *err;
	size_t i, n;
	int want;

	memset(label64, 'a', 64);
	memcpy(label64 + 64, ".test", 6);
	for (i = 0; i < 253; i++)
		long254[i] = i % 2 ? '.' : 'a';
	long254[253] = 'b';
	long254[254] = '\0';
	for (i = 0; i < EG_NELEM(names) + 3; i++) {
		name = i < EG_NELEM(names)        ? names[i]
		       : i == EG_NELEM(names)     ? label64
		       : i == EG_NELEM(names) + 1 ? long254
		                                  : long254 + 1;
		n = strlen(name);
		want = host_parse(name, n, &h) == NULL && h.kind == HOST_NAME;
		set = domain_set_new();
		err = domain_set_add_kind(set, DOMAIN_EXACT, name, n, "f", 1);
		if ((err == NULL) != want)
			fail_msg("%s: the list file route says %s, host_parse %s", name,
			         err ? err : "ok", want ? "ok" : "no");
		if (want && !domain_set_match_name(set, h.name, NULL))
			fail_msg("%s: stored, but %s does not match", name, h.name);
		domain_set_free(set);
	}
}

/* A reserved table holds what it was told, and what it held. */
static void
test_domain_reserve(void **state)
{
	struct domain_set *set = domain_set_new();
	char name[32];
	size_t i;

	assert_null(domain_set_add(set, "first.example", 13, 0, NULL, 0));
	domain_set_reserve(set, 5000);
	domain_set_reserve(set, 10); /* smaller than what is there: nothing changes */
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "n%zu.example", i);
		assert_null(domain_set_add_kind(set, DOMAIN_TREE, name, strlen(name), "f", 1));
	}
	assert_int_equal(domain_set_count(set), 5001);
	assert_true(domain_set_match_name(set, "first.example", NULL));
	assert_true(domain_set_match_name(set, "x.n4999.example", NULL));
	assert_false(domain_set_match_name(set, "n5000.example", NULL));
	domain_set_reserve(set, (size_t)1 << 40); /* a wild hint is capped, not obeyed */
	assert_true(domain_set_match_name(set, "n0.example", NULL));
	domain_set_free(set);
}

/* Names that are not normalised must not crash or match by accident. */
static void
test_domain_odd_queries(void **state)
{
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	char name[600];
	size_t i;

	assert_null(domain_set_add(set, "*.a", 3, 0, "f", 1));
	assert_null(domain_set_add(set, "a", 1, 0, "f", 2));
	assert_false(domain_set_match_name(set, "", &m));
	memset(name, '.', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	assert_false(domain_set_match_name(set, name, &m));
	name[HOST_NAME_MAXLEN] = '\0';
	assert_false(domain_set_match_name(set, name, &m));
	for (i = 0; i < HOST_NAME_MAXLEN; i++)
		name[i] = i % 2 ? '.' : 'a';
	name[HOST_NAME_MAXLEN] = '\0';
	assert_true(domain_set_match_name(set, name, &m));
	assert_string_equal(m.pattern, "*.a");
	name[HOST_NAME_MAXLEN] = 'a';
	name[HOST_NAME_MAXLEN + 1] = '\0';
	assert_false(domain_set_match_name(set, name, &m));
	domain_set_free(set);
	domain_set_free(NULL);
}

static uint32_t
rand32(void)
{
	return (uint32_t)(test_rng() >> 16);
}

static void
rand_label(char *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rand32() % 36];
	out[n] = '\0';
}

#define RANDOM_N 100000

/*
 * Entries carry a '-' and their index in the first label; misses have no
 * '-' anywhere, so none of them can equal an entry or sit under one.
 */
static void
test_domain_random(void **state)
{
	static const char *tlds[] = {"com", "net", "org", "io", "co.uk", "de"};
	struct domain_set *set = domain_set_new();
	struct domain_match m;
	char(*names)[80] = xcalloc(RANDOM_N, sizeof *names);
	char a[16], b[16], q[128];
	size_t i, found = 0;
	enum domain_kind kind;

	for (i = 0; i < RANDOM_N; i++) {
		rand_label(a, 3 + rand32() % 10);
		rand_label(b, 3 + rand32() % 10);
		snprintf(names[i], sizeof names[i], "%s-%zu.%s.%s", a, i, b,
		         tlds[rand32() % EG_NELEM(tlds)]);
		kind = (enum domain_kind)(i % 3);
		assert_null(domain_set_add_kind(set, kind, names[i], strlen(names[i]), "big.txt",
		                                (unsigned)i + 1));
	}
	assert_int_equal(domain_set_count(set), RANDOM_N);
	for (i = 0; i < RANDOM_N; i++) {
		if (i % 3 == DOMAIN_WILDCARD)
			snprintf(q, sizeof q, "x.%s", names[i]);
		else
			snprintf(q, sizeof q, "%s", names[i]);
		if (domain_set_match_name(set, q, &m) && m.line == i + 1 && m.kind == i % 3)
			found++;
		else
			fail_msg("entry %zu (%s) not found", i, q);
		if (i % 3 == DOMAIN_WILDCARD)
			assert_false(domain_set_match_name(set, names[i], &m));
	}
	assert_int_equal(found, RANDOM_N);
	for (i = 0; i < RANDOM_N; i++) {
		rand_label(a, 3 + rand32() % 10);
		snprintf(q, sizeof q, "%s.%s", a, names[i] + strcspn(names[i], ".") + 1);
		if (domain_set_match_name(set, q, &m))
			fail_msg("miss %zu (%s) matched %s", i, q, m.pattern);
	}
	free(names);
	domain_set_free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_domain_table),    cmocka_unit_test(test_domain_errors),
	    cmocka_unit_test(test_domain_source),   cmocka_unit_test(test_domain_duplicates),
	    cmocka_unit_test(test_domain_add_kind), cmocka_unit_test(test_domain_odd_queries),
	    cmocka_unit_test(test_domain_random),   cmocka_unit_test(test_domain_fast_path),
	    cmocka_unit_test(test_domain_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
