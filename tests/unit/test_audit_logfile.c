/*
 * Unit tests for audit/logfile.c: rotation at audit.maxBytes (FILE.1 ...
 * FILE.keep, the oldest dropped, each new file's first line continuing the
 * chain of the one before, seq going on), a rotation the directory refuses
 * (tried again from the tick, nothing lost meanwhile), reopening after a
 * tool moved the file away (logrotate's create mode) or left it where it
 * was, room reserved past the end given back at close, and the set of
 * files a reader walks, oldest first.
 */
#include "audit_int.h"
#include "audit_test.h"

static void
write_n(struct audit *a, int n, const char *host)
{
	int i;

	for (i = 0; i < n; i++)
		write_simple(a, host);
}

/* Every line of the files, oldest first, as one struct lines per file. */
static void
read_set(const char *path, struct lines *l, size_t *n)
{
	char **names;
	size_t i;

	names = logfile_set(path, n);
	for (i = 0; i < *n; i++)
		read_lines(names[i], &l[i]);
	logfile_set_free(names, *n);
}

/* The files one after the other are one chain with seqs 1, 2, 3, ... */
static void
assert_set_chain(struct lines *l, size_t n, int first_seq)
{
	char want[65] = ZEROS;
	json_t *j;
	size_t f, i;
	int seq = first_seq;

	for (f = 0; f < n; f++) {
		for (i = 0; i < l[f].n; i++) {
			j = parse(l[f].p[i], l[f].len[i]);
			assert_non_null(j);
			if (f > 0 || i > 0 || first_seq == 1)
				assert_string_equal(sval(j, "prev"), want);
			assert_int_equal(ival(j, "seq"), seq++);
			json_decref(j);
			sha256_hex(l[f].p[i], l[f].len[i], want);
		}
	}
}

static void
test_rotate(void **state)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 4096, 2};
	const char *path = tpath("rot.jsonl");
	struct audit_stats st;
	struct lines l[8];
	struct stat sb;
	struct audit *a;
	json_t *j;
	size_t n, f;
	char *name;

	a = open_ok(path);
	audit_configure(a, &set);
	write_n(a, 200, "rotate.example"); /* about 30 lines a file */
	audit_stats(a, &st);
	assert_true(st.rotations >= 5);
	audit_close(a);
	/* keep: 2, so FILE, FILE.1 and FILE.2; FILE.3 was dropped. */
	read_set(path, l, &n);
	assert_int_equal(n, 3);
	if (asprintf(&name, "%s.3", path) == -1)
		fail();
	assert_int_equal(stat(name, &sb), -1);
	free(name);
	for (f = 0; f < n; f++) {
		/* Rotated after the write that passed 4096 bytes: one line past it at most. */
		if (f < n - 1)
			assert_true(l[f].p[l[f].n - 1] - l[f].p[0] < 4096);
		/* Each file starts where the one before ends: a line saying so. */
		j = parse(l[f].p[0], l[f].len[0]);
		assert_string_equal(sval(j, "event"), "daemon");
		assert_string_equal(sval(j, "reason"), "rotated");
		json_decref(j);
	}
	j = parse(l[0].p[0], l[0].len[0]);
	assert_set_chain(l, n, (int)ival(j, "seq"));
	json_decref(j);
	j = parse(l[n - 1].p[l[n - 1].n - 1], l[n - 1].len[l[n - 1].n - 1]);
	assert_int_equal(ival(j, "seq"), 200 + (int)st.rotations);
	json_decref(j);
	for (f = 0; f < n; f++)
		lines_free(&l[f]);
}

/*
 * A directory that refuses the new file (here: its temporary name is
 * taken by a directory) leaves the log where it is, growing past
 * maxBytes; the tick tries again, and nothing is lost in between.
 */
static void
test_rotate_refused(void **state)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 4096, 3};
	const char *path = tpath("refused.jsonl");
	struct audit_stats st;
	struct lines l[8];
	struct audit *a;
	char tmp[300];
	size_t n, f, total = 0;

	snprintf(tmp, sizeof tmp, "%s.new", path);
	assert_int_equal(mkdir(tmp, 0700), 0);
	a = open_ok(path);
	audit_configure(a, &set);
	write_n(a, 100, "refused.example");
	audit_stats(a, &st);
	assert_int_equal(st.rotations, 0);
	audit_tick(a);
	audit_stats(a, &st);
	assert_int_equal(st.rotations, 0);
	assert_int_equal(rmdir(tmp), 0);
	audit_tick(a);
	audit_stats(a, &st);
	assert_int_equal(st.rotations, 1);
	write_n(a, 5, "after.example");
	audit_close(a);
	read_set(path, l, &n);
	assert_int_equal(n, 2);
	assert_int_equal(l[0].n, 100);
	assert_set_chain(l, n, 1);
	for (f = 0; f < n; f++) {
		total += l[f].n;
		lines_free(&l[f]);
	}
	assert_int_equal(total, 100 + 1 + 5);
}

/*
 * logrotate's create mode: the file is moved to FILE.1 and a new empty
 * FILE made, then SIGUSR1. Lines written in between land in FILE.1; after
 * the reopen, FILE starts with a line that continues the chain. A reopen
 * with nothing moved changes nothing.
 */
static void
test_reopen(void **state)
{
	const char *path = tpath("lr.jsonl");
	struct lines l[4];
	struct audit *a;
	char moved[300];
	json_t *j;
	size_t n;
	int fd;

	a = open_ok(path);
	write_n(a, 3, "one.example");
	assert_int_equal(audit_reopen(a), 0); /* the same file: nothing to do */
	snprintf(moved, sizeof moved, "%s.1", path);
	assert_int_equal(rename(path, moved), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd != -1);
	close(fd);
	write_n(a, 2, "between.example");
	assert_int_equal(audit_reopen(a), 0);
	write_n(a, 2, "after.example");
	audit_close(a);
	read_set(path, l, &n);
	assert_int_equal(n, 2);
	assert_int_equal(l[0].n, 5);
	assert_int_equal(l[1].n, 3);
	j = parse(l[1].p[0], l[1].len[0]);
	assert_string_equal(sval(j, "reason"), "reopened");
	json_decref(j);
	assert_set_chain(l, n, 1);
	lines_free(&l[0]);
	lines_free(&l[1]);

	/* A path egressd cannot open again: the log goes on where it was. */
	a = open_ok(tpath("gone.jsonl"));
	assert_int_equal(unlink(tpath("gone.jsonl")), 0);
	assert_int_equal(mkdir(tpath("gone.jsonl"), 0700), 0);
	assert_int_equal(audit_reopen(a), -1);
	write_n(a, 1, "still.example");
	audit_close(a);
	assert_int_equal(rmdir(tpath("gone.jsonl")), 0);
}

/*
 * Room is reserved ahead of the lines (blocks allocated past the end),
 * and given back from a file rotated away; the new file has its own.
 */
static void
test_room_released(void **state)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 8192, 1};
	const char *path = tpath("room.jsonl");
	struct audit_stats st;
	struct audit *a;
	struct stat sb;
	char moved[300];

	a = open_ok(path);
	audit_configure(a, &set);
	assert_int_equal(audit_admit(a), 1);
	write_n(a, 3, "room.example");
	audit_stats(a, &st);
	assert_true(st.reserved >= AUDIT_ROOM_STEP);
	assert_int_equal(st.owed, 1);
	assert_int_equal(stat(path, &sb), 0);
	assert_true((off_t)sb.st_blocks * 512 >= sb.st_size + AUDIT_ROOM_STEP);
	audit_release(a);
	for (st.rotations = 0; st.rotations == 0; audit_stats(a, &st))
		write_n(a, 1, "room.example");
	snprintf(moved, sizeof moved, "%s.1", path);
	assert_int_equal(stat(moved, &sb), 0);
	assert_true((off_t)sb.st_blocks * 512 < sb.st_size + 8192);
	assert_int_equal(stat(path, &sb), 0);
	assert_true((off_t)sb.st_blocks * 512 >= sb.st_size + AUDIT_ROOM_STEP);
	audit_close(a);
}

/* The set: every FILE.n there is, highest first, then FILE. */
static void
test_set(void **state)
{
	char **v, name[300];
	size_t n;

	v = logfile_set(tpath("none.jsonl"), &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], tpath("none.jsonl"));
	logfile_set_free(v, n);
	snprintf(name, sizeof name, "%s.1", tpath("set.jsonl"));
	write_raw(name, "", 0);
	snprintf(name, sizeof name, "%s.2", tpath("set.jsonl"));
	write_raw(name, "", 0);
	snprintf(name, sizeof name, "%s.4", tpath("set.jsonl")); /* after a hole: there too */
	write_raw(name, "", 0);
	v = logfile_set(tpath("set.jsonl"), &n);
	assert_int_equal(n, 4);
	snprintf(name, sizeof name, "%s.4", tpath("set.jsonl"));
	assert_string_equal(v[0], name);
	snprintf(name, sizeof name, "%s.2", tpath("set.jsonl"));
	assert_string_equal(v[1], name);
	snprintf(name, sizeof name, "%s.1", tpath("set.jsonl"));
	assert_string_equal(v[2], name);
	assert_string_equal(v[3], tpath("set.jsonl"));
	logfile_set_free(v, n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rotate), cmocka_unit_test(test_rotate_refused),
	    cmocka_unit_test(test_reopen), cmocka_unit_test(test_room_released),
	    cmocka_unit_test(test_set),
	};

	log_init("test_audit_logfile", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
