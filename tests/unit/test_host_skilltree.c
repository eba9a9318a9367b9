/*
 * Unit tests for host/skilltree.c, a skill's files: an import's walk
 * (links inside the source followed and copied as what they name, a link
 * out of the source, a loop and a special file refused), a run's copy
 * (nothing followed: links and special files left out with a note), the
 * hash (sha256sum's lines of the files, sorted by path), a replaced
 * SKILL.md, the file limit, and opening a path under a base without
 * following a link. Trees are made in a private temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static char tmp[] = "/tmp/test-host-skilltree.XXXXXX";

static void
put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", tmp, rel), *slash = strrchr(p, '/');

	*slash = '\0';
	assert_int_equal(host_mkdirs(p, 0755), 0);
	*slash = '/';
	assert_int_equal(host_write_file(p, text, strlen(text), 0644), 0);
	free(p);
}

static void
link_(const char *target, const char *rel)
{
	char *p = xasprintf("%s/%s", tmp, rel);

	assert_int_equal(symlink(target, p), 0);
	free(p);
}

static char *
path(const char *rel)
{
	return xasprintf("%s/%s", tmp, rel);
}

/* The hash of files as the documentation's shell line computes it. */
static char *
expect_hash(const char *const *files, const char *const *texts, size_t n)
{
	struct buf b;
	char *h, *out;
	size_t i;

	buf_init(&b);
	for (i = 0; i < n; i++) {
		h = host_sha256_hex(texts[i], strlen(texts[i]));
		buf_printf(&b, "%s  %s\n", h, files[i]);
		free(h);
	}
	out = host_sha256_hex(b.data, b.len);
	buf_free(&b);
	return out;
}

static int
copy(struct skilltree *t, const char *src, const char *dst, struct buf *err, int follow,
     const char *root)
{
	char *s = path(src), *d = dst != NULL ? path(dst) : NULL, *r = path(root);
	int rc;

	memset(t, 0, sizeof *t);
	t->label = src;
	t->root = r;
	t->follow = follow;
	t->err = err;
	buf_reset(err);
	rc = skilltree_copy(t, s, d);
	free(s);
	free(d);
	free(r);
	return rc;
}

static char *
slurp(const char *rel)
{
	char *p = path(rel), *data;
	size_t len;

	if (host_read_file(p, 1 << 20, &data, &len) == -1)
		data = NULL;
	free(p);
	return data;
}

static void
test_import(void **state)
{
	static const char *const files[] = {"SKILL.md", "a-b", "a/b", "link.md", "sub/x.sh"};
	static const char *const texts[] = {"---\nname: s\ndescription: d\n---\n", "dash", "nested",
	                                    "shared\n", "#!/bin/sh\n"};
	struct skilltree t;
	struct stat st;
	struct buf err;
	char *want, *p;

	buf_init(&err);
	put("src/s/SKILL.md", texts[0]);
	put("src/s/a-b", texts[1]);
	put("src/s/a/b", texts[2]);
	put("src/shared.md", texts[3]);
	link_("../shared.md", "src/s/link.md");
	put("src/s/sub/x.sh", texts[4]);
	p = path("src/s/sub/x.sh");
	chmod(p, 0755);
	free(p);
	/* The listing is sorted by path: "a-b" before "a/b". */
	want = expect_hash(files, texts, 5);
	assert_int_equal(copy(&t, "src/s", "out", &err, 1, "src"), 0);
	assert_string_equal(t.sha256, want);
	skilltree_free(&t);
	/* The copy: the link became the file it named; the mode's x bit is kept. */
	p = path("out/link.md");
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	free(p);
	p = slurp("out/link.md");
	assert_string_equal(p, "shared\n");
	free(p);
	p = path("out/sub/x.sh");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	free(p);
	/* Scanning alone gives the same hash, and the copy walks to the same one. */
	assert_int_equal(copy(&t, "src/s", NULL, &err, 1, "src"), 0);
	assert_string_equal(t.sha256, want);
	skilltree_free(&t);
	assert_int_equal(copy(&t, "out", NULL, &err, 0, "out"), 0);
	assert_string_equal(t.sha256, want);
	skilltree_free(&t);
	free(want);
	/* A directory link inside the source is followed too. */
	put("src/d/SKILL.md", texts[0]);
	link_("../s/a", "src/d/alias");
	assert_int_equal(copy(&t, "src/d", "out2", &err, 1, "src"), 0);
	skilltree_free(&t);
	p = slurp("out2/alias/b");
	assert_string_equal(p, "nested");
	free(p);
	buf_free(&err);
}

static void
test_refusals(void **state)
{
	struct skilltree t;
	struct buf err;
	char *p;

	buf_init(&err);
	put("r1/SKILL.md", "x");
	link_("/etc/passwd", "r1/pw");
	assert_int_equal(copy(&t, "r1", NULL, &err, 1, "r1"), -1);
	assert_non_null(strstr(buf_cstr(&err), "r1/pw: a symbolic link out of the source"));
	skilltree_free(&t);
	/* Out of the root, even when inside another skill of the same parent. */
	put("r2/SKILL.md", "x");
	link_("../r1/SKILL.md", "r2/other");
	assert_int_equal(copy(&t, "r2", NULL, &err, 1, "r2"), -1);
	assert_non_null(strstr(buf_cstr(&err), "out of the source"));
	skilltree_free(&t);
	put("r3/SKILL.md", "x");
	link_(".", "r3/loop");
	assert_int_equal(copy(&t, "r3", NULL, &err, 1, "r3"), -1);
	assert_non_null(strstr(buf_cstr(&err), "r3/loop: a symbolic link that loops"));
	skilltree_free(&t);
	put("r4/SKILL.md", "x");
	p = path("r4/fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	free(p);
	assert_int_equal(copy(&t, "r4", NULL, &err, 1, "r4"), -1);
	assert_non_null(strstr(buf_cstr(&err), "r4/fifo: not a regular file or a directory"));
	skilltree_free(&t);
	link_("nowhere", "r3/dangling");
	assert_int_equal(copy(&t, "r3", NULL, &err, 1, "r3"), -1);
	skilltree_free(&t);
	buf_free(&err);
}

/* A run's copy follows nothing: links and special files are left out, with a note. */
static void
test_run_copy(void **state)
{
	struct skilltree t;
	struct buf err;
	struct stat st;
	char *p;

	buf_init(&err);
	put("p/s/SKILL.md", "---\n");
	link_("/etc/passwd", "p/s/pw");
	link_("SKILL.md", "p/s/inside");
	p = path("p/s/fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	free(p);
	assert_int_equal(copy(&t, "p/s", "pc", &err, 0, "p/s"), 0);
	assert_int_equal(t.notes.n, 3);
	assert_non_null(strstr(t.notes.v[0], "p/s/fifo: not a regular file or a directory"));
	assert_non_null(strstr(t.notes.v[1], "p/s/inside: a symbolic link, not copied"));
	assert_non_null(strstr(t.notes.v[2], "p/s/pw: a symbolic link, not copied"));
	skilltree_free(&t);
	p = path("pc/pw");
	assert_int_equal(lstat(p, &st), -1);
	free(p);
	/* The skill itself reached through a link is refused. */
	link_("p/s", "slink");
	assert_int_equal(copy(&t, "slink", NULL, &err, 0, "slink"), -1);
	skilltree_free(&t);
	buf_free(&err);
}

static void
test_replace_and_limits(void **state)
{
	static const char *const files[] = {"SKILL.md"};
	static const char *const texts[] = {"renamed"};
	struct skilltree t;
	struct buf err;
	char name[64], *want, *p;
	int i;

	buf_init(&err);
	put("m/SKILL.md", "original");
	memset(&t, 0, sizeof t);
	t.label = "m";
	t.root = p = path("m");
	t.follow = 1;
	t.err = &err;
	t.skill_md = "renamed";
	t.skill_md_len = 7;
	{
		char *dst = path("mc");

		assert_int_equal(skilltree_copy(&t, p, dst), 0);
		free(dst);
	}
	want = expect_hash(files, texts, 1);
	assert_string_equal(t.sha256, want);
	free(want);
	skilltree_free(&t);
	free(p);
	p = slurp("mc/SKILL.md");
	assert_string_equal(p, "renamed");
	free(p);
	for (i = 0; i <= 4096; i++) {
		snprintf(name, sizeof name, "big/f%d", i);
		put(name, "");
	}
	assert_int_equal(copy(&t, "big", NULL, &err, 1, "big"), -1);
	assert_non_null(strstr(buf_cstr(&err), "more than 4096 files"));
	skilltree_free(&t);
	buf_free(&err);
}

static void
test_open_under(void **state)
{
	char *base = path("u"), *p;
	int fd;

	put("u/a/b/file", "x");
	link_("a", "u/l");
	p = path("u/a/b/file");
	assert_true((fd = skilltree_open_under(base, p, O_RDONLY)) >= 0);
	close(fd);
	free(p);
	p = path("u/l/b/file");
	assert_int_equal(skilltree_open_under(base, p, O_RDONLY), -1);
	assert_int_equal(errno, ELOOP);
	free(p);
	p = path("u/l");
	assert_int_equal(skilltree_open_under(base, p, O_RDONLY | O_DIRECTORY), -1);
	assert_int_equal(errno, ELOOP);
	free(p);
	p = path("u/a/../a/b/file");
	assert_int_equal(skilltree_open_under(base, p, O_RDONLY), -1);
	assert_int_equal(errno, EINVAL);
	free(p);
	assert_int_equal(skilltree_open_under(base, "/etc/passwd", O_RDONLY), -1);
	assert_int_equal(errno, EINVAL);
	free(base);
}

static int
setup(void **state)
{
	return mkdtemp(tmp) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	return state_remove_tree(tmp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_import),     cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_run_copy),   cmocka_unit_test(test_replace_and_limits),
	    cmocka_unit_test(test_open_under),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
