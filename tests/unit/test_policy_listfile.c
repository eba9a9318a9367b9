/*
 * Tests for policy/listfile.c: the sample lists in tests/data/lists/ (one
 * per format, mixed, BOM and CRLF), generated files for what cannot sit
 * in a text fixture (NUL bytes, overlong lines, lines across read chunks),
 * and files that cannot be read.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy_int.h"

struct expect_match {
	const char *query;
	const char *pattern; /* NULL: no match */
	unsigned line;
};

struct list_case {
	const char *file;
	unsigned long lines;
	unsigned long entries;
	unsigned long invalid;
	unsigned long first_invalid[LISTFILE_SHOW_INVALID];
	struct expect_match matches[10];
};

static const struct list_case list_cases[] = {
    {"hosts.txt",
     25,
     7,
     2,
     {24, 25},
     {{"ads.example.com", "ads.example.com", 18},
      {"x.ads.example.com", NULL, 0},
      {"tracker.example.net", "tracker.example.net", 19},
      {"b.example.org", "b.example.org", 20},
      {"c.example.org", "c.example.org", 20},
      {"upper.example.com", "upper.example.com", 21},
      {"v6.example.com", "v6.example.com", 23},
      {"localhost", NULL, 0}}},
    {"domains.txt",
     9,
     5,
     2,
     {8, 9},
     {{"ads.example.com", "ads.example.com", 2},
      {"tracker.example.net", "tracker.example.net", 3},
      {"wild.example.com", NULL, 0},
      {"a.wild.example.com", "*.wild.example.com", 4},
      {"padded.example.org", "padded.example.org", 5},
      {"inline.example.org", "inline.example.org", 6},
      {"x.inline.example.org", NULL, 0}}},
    {"adblock.txt",
     13,
     2,
     8,
     {6, 7, 8, 9, 10},
     {{"ads.example.com", "||ads.example.com^", 4},
      {"a.b.ads.example.com", "||ads.example.com^", 4},
      {"tracker.example.net", "||tracker.example.net^", 5},
      {"third.example.com", NULL, 0},
      {"good.example.com", NULL, 0},
      {"path.example.com", NULL, 0},
      {"example.com", NULL, 0}}},
    {"mixed.txt",
     9,
     4,
     0,
     {0},
     {{"hosts.example.com", "hosts.example.com", 4},
      {"plain.example.com", "plain.example.com", 6},
      {"x.wild.example.com", "*.wild.example.com", 7},
      {"tree.example.com", "||tree.example.com^", 9},
      {"x.tree.example.com", "||tree.example.com^", 9}}},
    {"bom_crlf.txt",
     6,
     4,
     0,
     {0},
     {{"bom.example.com", "bom.example.com", 2},
      {"crlf.example.com", "crlf.example.com", 3},
      {"x.tree.example.com", "||tree.example.com^", 4},
      {"last.example.com", "last.example.com", 6}}},
    {"empty.txt", 0, 0, 0, {0}, {{"example.com", NULL, 0}}},
};

static void
check_case(const struct list_case *c)
{
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	struct domain_match m;
	const struct expect_match *e;
	char path[1024];
	size_t i;
	int hit;

	snprintf(path, sizeof path, "%s/lists/%s", TEST_DATA_DIR, c->file);
	if (listfile_load(set, path, &st) != 0)
		fail_msg("%s: %s", c->file, st.error);
	if (st.lines != c->lines || st.entries != c->entries || st.invalid != c->invalid)
		fail_msg("%s: lines %lu entries %lu invalid %lu, want %lu %lu %lu", c->file,
		         st.lines, st.entries, st.invalid, c->lines, c->entries, c->invalid);
	assert_int_equal(domain_set_count(set), c->entries);
	for (i = 0; i < LISTFILE_SHOW_INVALID; i++) {
		if (st.first_invalid[i] != c->first_invalid[i])
			fail_msg("%s: invalid line %zu is %lu, want %lu", c->file, i,
			         st.first_invalid[i], c->first_invalid[i]);
	}
	assert_string_equal(st.error, "");
	for (e = c->matches; e->query != NULL; e++) {
		hit = domain_set_match_name(set, e->query, &m);
		if (e->pattern == NULL) {
			if (hit)
				fail_msg("%s: %s matched %s", c->file, e->query, m.pattern);
			continue;
		}
		if (!hit)
			fail_msg("%s: %s did not match", c->file, e->query);
		if (strcmp(m.pattern, e->pattern) != 0 || m.line != e->line)
			fail_msg("%s: %s matched %s@%u, want %s@%u", c->file, e->query, m.pattern,
			         m.line, e->pattern, e->line);
		assert_string_equal(m.file, path);
	}
	domain_set_free(set);
}

static void
test_listfile_samples(void **state)
{
	size_t i;

	for (i = 0; i < EG_NELEM(list_cases); i++)
		check_case(&list_cases[i]);
}

/* Writes len bytes to a fresh temporary file and returns its path. */
static char *
write_temp(const void *data, size_t len)
{
	char *path = xstrdup("/tmp/test_listfile.XXXXXX");
	int fd;

	fd = mkstemp(path);
	assert_true(fd != -1);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

static void
test_listfile_nul_and_overlong(void **state)
{
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	struct buf b;
	char *path, *long_line;

	long_line = xmalloc(5000);
	memset(long_line, 'a', 4999);
	long_line[4999] = '\0';
	buf_init(&b);
	buf_adds(&b, "one.example.com\n");
	buf_add(&b, "nul\0.example.com\n", 17);
	buf_adds(&b, long_line);
	buf_adds(&b, "\ntwo.example.com\n");
	/* 4096 bytes exactly is still a line (and an invalid name). */
	long_line[4096] = '\0';
	buf_adds(&b, long_line);
	buf_adds(&b, "\nthree.example.com\n0.0.0.0 four.example.com five..example.com\n");
	buf_adds(&b, long_line);
	path = write_temp(b.data, b.len);

	assert_int_equal(listfile_load(set, path, &st), 0);
	assert_int_equal(st.lines, 8);
	assert_int_equal(st.entries, 4);
	assert_int_equal(st.invalid, 5);
	assert_int_equal(st.first_invalid[0], 2);
	assert_int_equal(st.first_invalid[1], 3);
	assert_int_equal(st.first_invalid[2], 5);
	assert_int_equal(st.first_invalid[3], 7);
	assert_int_equal(st.first_invalid[4], 8);
	assert_true(domain_set_match_name(set, "four.example.com", NULL));
	assert_false(domain_set_match_name(set, "nul", NULL));

	unlink(path);
	free(path);
	free(long_line);
	buf_free(&b);
	domain_set_free(set);
}

/*
 * Several MiB with lines of varied length, so line ends and an overlong
 * line fall across the loader's read chunks; every name must be found.
 */
static void
test_listfile_chunks(void **state)
{
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	struct buf b;
	char name[300], *path, *junk;
	unsigned long i, n = 0, bad = 0;
	struct domain_match m;

	junk = xmalloc(9000);
	memset(junk, 'z', 8999);
	junk[8999] = '\0';
	buf_init(&b);
	for (i = 0; b.len < (3 << 20); i++) {
		if (i % 20011 == 0) {
			buf_adds(&b, junk);
			buf_addc(&b, '\n');
			bad++;
		} else {
			buf_printf(&b, "0.0.0.0 n%lu.%.*s.example\n", i, (int)(i % 50) + 1,
			           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
			n++;
		}
	}
	buf_printf(&b, "||tail.example^");
	path = write_temp(b.data, b.len);
	assert_int_equal(listfile_load(set, path, &st), 0);
	assert_int_equal(st.lines, i + 1);
	assert_int_equal(st.invalid, bad);
	assert_int_equal(st.entries, n + 1);
	assert_int_equal(st.first_invalid[0], 1);
	assert_int_equal(st.first_invalid[1], 20012);
	for (i = 1; i < 20011; i++) {
		snprintf(name, sizeof name, "n%lu.%.*s.example", i, (int)(i % 50) + 1,
		         "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		if (!domain_set_match_name(set, name, &m) || m.line != i + 1)
			fail_msg("%s not found at line %lu", name, i + 1);
	}
	assert_true(domain_set_match_name(set, "x.tail.example", NULL));
	unlink(path);
	free(path);
	free(junk);
	buf_free(&b);
	domain_set_free(set);
}

static void
test_listfile_unreadable(void **state)
{
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	char fifo[] = "/tmp/test_listfile_fifo.XXXXXX", *path;
	int fd;

	assert_int_equal(listfile_load(set, "/nonexistent/list.txt", &st), -1);
	assert_string_equal(st.error, "cannot open: No such file or directory");
	assert_int_equal(listfile_load(set, TEST_DATA_DIR, &st), -1);
	assert_string_equal(st.error, "is a directory");

	/* A FIFO with no writer must fail at once, not hang. */
	fd = mkstemp(fifo);
	assert_true(fd != -1);
	close(fd);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(listfile_load(set, fifo, &st), -1);
	assert_string_equal(st.error, "not a regular file");
	unlink(fifo);

	/* Past the size cap (a sparse file: no disk is used). */
	path = write_temp("a.example\n", 10);
	assert_int_equal(truncate(path, ((off_t)512 << 20) + 1), 0);
	assert_int_equal(listfile_load(set, path, &st), -1);
	assert_string_equal(st.error, "too large (over 512 MiB)");
	unlink(path);
	free(path);

	assert_int_equal(domain_set_count(set), 0);
	domain_set_free(set);
}

/*
 * A-labels in every line format: the fast path hands them to the full
 * check, which takes valid ones and counts an invalid one ("xn--a") as an
 * invalid line, as the config loader and the URL parser refuse it.
 */
static void
test_listfile_alabels(void **state)
{
	static const char text[] = "xn--bcher-kva.example\n"
	                           "xn--a.example\n"
	                           "0.0.0.0 xn--zca.example\n"
	                           "0.0.0.0 ads.xn--a.example\n"
	                           "||xn--0ca.example^\n"
	                           "||xn--a.example^\n"
	                           "*.XN--A.example\n"
	                           "xn--abc.example\n";
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	char *path = write_temp(text, sizeof text - 1);

	assert_int_equal(listfile_load(set, path, &st), 0);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.invalid, 5);
	assert_int_equal(st.first_invalid[0], 2);
	assert_int_equal(st.first_invalid[1], 4);
	assert_int_equal(st.first_invalid[2], 6);
	assert_int_equal(st.first_invalid[3], 7);
	assert_int_equal(st.first_invalid[4], 8);
	assert_true(domain_set_match_name(set, "xn--bcher-kva.example", NULL));
	assert_true(domain_set_match_name(set, "xn--zca.example", NULL));
	assert_true(domain_set_match_name(set, "a.xn--0ca.example", NULL));
	assert_false(domain_set_match_name(set, "xn--a.example", NULL));
	unlink(path);
	free(path);
	domain_set_free(set);
}

/* Loading a second file adds to the set and reports its own source. */
static void
test_listfile_two_files(void **state)
{
	struct domain_set *set = domain_set_new();
	struct listfile_stats st;
	struct domain_match m;
	char a[1024], b[1024];

	snprintf(a, sizeof a, "%s/lists/domains.txt", TEST_DATA_DIR);
	snprintf(b, sizeof b, "%s/lists/adblock.txt", TEST_DATA_DIR);
	assert_int_equal(listfile_load(set, a, &st), 0);
	assert_int_equal(listfile_load(set, b, &st), 0);
	/* ads.example.com is in both, as different kinds: two entries. */
	assert_int_equal(st.entries, 2);
	assert_int_equal(domain_set_count(set), 7);
	assert_true(domain_set_match_name(set, "ads.example.com", &m));
	assert_string_equal(m.file, a);
	assert_true(domain_set_match_name(set, "x.ads.example.com", &m));
	assert_string_equal(m.file, b);
	domain_set_free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_listfile_samples),
	    cmocka_unit_test(test_listfile_nul_and_overlong),
	    cmocka_unit_test(test_listfile_chunks),
	    cmocka_unit_test(test_listfile_unreadable),
	    cmocka_unit_test(test_listfile_two_files),
	    cmocka_unit_test(test_listfile_alabels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
