/*
 * Unit tests for audit/audit.c, a log that cannot be written. Each case
 * runs in a child with a disk of its own: a small tmpfs mounted in a mount
 * namespace (root, or a user namespace; skipped where neither can be
 * had), filled up by a file the test then shrinks, so the full disk is the
 * kernel's. audit.onError: block refuses new requests once the room kept
 * ahead of the lines runs out and before any line of an admitted exchange
 * is lost; continue lets requests through and counts what is lost; both
 * say, once the disk has room, how long and how many, and which seqs; the
 * chain links only lines that are in the file. A file system that cannot
 * reserve (stood in for by a file size limit with reserving off) loses a
 * whole batch on a failed write and the chain goes back to the last line
 * written.
 */
#include <sched.h>
#include <sys/mount.h>

#include "audit_int.h"
#include "audit_test.h"

#define DISK_SKIP 77

static char disk[300];

static void
write_to(const char *path, const char *text)
{
	int fd;

	if ((fd = open(path, O_WRONLY)) == -1)
		return;
	(void)write(fd, text, strlen(text));
	close(fd);
}

/*
 * In the child: a private mount namespace with a tmpfs of size bytes at
 * disk. Root unshares the mount namespace alone; others go through a user
 * namespace that maps them to root. -1 when neither works.
 */
static int
disk_mount(const char *size)
{
	char opts[64], map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWNS) == -1) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == -1)
			return -1;
		write_to("/proc/self/setgroups", "deny");
		snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
		write_to("/proc/self/uid_map", map);
		snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
		write_to("/proc/self/gid_map", map);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return -1;
	snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
	return mount("tmpfs", disk, "tmpfs", 0, opts);
}

/* Fill the disk: a file that grows until the disk refuses more. */
static int
disk_fill(void)
{
	char blk[4096], path[320];
	int fd;

	memset(blk, 'f', sizeof blk);
	snprintf(path, sizeof path, "%s/filler", disk);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600)) == -1)
		return -1;
	while (write(fd, blk, sizeof blk) > 0)
		;
	close(fd);
	return 0;
}

static void
disk_free(void)
{
	char path[320];

	snprintf(path, sizeof path, "%s/filler", disk);
	unlink(path);
}

/* Run fn in a child on a disk of its own; the case is skipped where none can be had. */
static void
on_disk(void (*fn)(const char *), const char *size)
{
	char path[320];
	int status;
	pid_t pid;

	snprintf(disk, sizeof disk, "%s/disk", tmpdir);
	mkdir(disk, 0700);
	snprintf(path, sizeof path, "%s/log.jsonl", disk);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		if (disk_mount(size) == -1)
			_exit(DISK_SKIP);
		fn(path);
		/* Copy the log out of the namespace for the parent to read. */
		snprintf(path, sizeof path, "cp %s/log.jsonl %s/out.jsonl", disk, tmpdir);
		_exit(system(path) == 0 ? 0 : 9);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == DISK_SKIP) {
		print_message("no mount namespace for a small disk here: skipped\n");
		skip();
	}
	if (WEXITSTATUS(status) != 0)
		fail_msg("the child failed at step %d", WEXITSTATUS(status));
}

static void
nop_wakeup(void *arg)
{
	(void)arg;
}

static int
event_rc(struct audit *a, const char *host, int admitted)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.host = host;
	ev.path = "/a/path/of/some/length/for/a/line/of/a/few/hundred/bytes";
	ev.admitted = admitted;
	return audit_write(a, &ev);
}

/* One line; the child exits with step unless audit_write returns want. */
static void
write_event(struct audit *a, const char *host, int admitted, int want, int step)
{
	if (event_rc(a, host, admitted) != want)
		_exit(step);
}

/* The line at i is the one that ends an episode. */
static json_t *
resumed_line(const struct lines *l, size_t i)
{
	json_t *j;

	j = parse(l->p[i], l->len[i]);
	assert_non_null(j);
	assert_string_equal(sval(j, "event"), "daemon");
	assert_string_equal(sval(j, "reason"), "resumed");
	assert_string_equal(sval(j, "error"), strerror(ENOSPC));
	assert_true(ival(j, "duration_ms") >= 0);
	return j;
}

static void
full_block(const char *path)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 0, 0};
	struct audit_stats st;
	struct audit *a;
	int k, i;

	signal(SIGXFSZ, SIG_IGN);
	if ((a = audit_open(path, NULL, 0)) == NULL)
		_exit(10);
	audit_configure(a, &set);
	for (i = 0; i < 3; i++)
		write_event(a, "before.example", 0, 0, 11);
	if (disk_fill() == -1)
		_exit(12);
	for (k = 0; k < 200 && audit_admit(a); k++)
		;
	/* The room kept ahead (64 KiB, 2 KiB a line) ran out, and nothing is lost. */
	if (k < 16 || k >= 64 || !audit_refusing(a) || audit_admit(a))
		_exit(13);
	audit_stats(a, &st);
	if (!st.failing || st.error != ENOSPC || st.refused != 2 || st.owed != (uint64_t)k ||
	    st.unwritten != 0)
		_exit(14);
	/* The exchanges let through finish: every line is written. */
	for (i = 0; i < k; i++)
		write_event(a, "admitted.example", 1, 0, 15);
	/* Lines of nothing admitted take what room is left, then are not made. */
	for (i = 0; i < 1000 && event_rc(a, "unadmitted.example", 0) == 0; i++)
		;
	if (i == 1000)
		_exit(16);
	audit_stats(a, &st);
	if (st.unwritten != 1)
		_exit(17);
	audit_tick(a); /* still full: nothing changes */
	if (!audit_refusing(a))
		_exit(18);
	disk_free();
	audit_tick(a);
	if (audit_refusing(a) || !audit_admit(a))
		_exit(19);
	write_event(a, "after.example", 1, 0, 20);
	audit_close(a);
}

/*
 * audit.onError: block on a disk that fills up. Once the room kept ahead
 * runs out, admission is refused (and counted) while the lines of the
 * exchanges already let through are all written; a line of nothing
 * admitted is made only while room is left, and the first one that finds
 * none is named by its seq. Once the disk has room, one tick writes the
 * line that says so, and requests go through again.
 */
static void
test_full_block(void **state)
{
	struct lines l;
	json_t *j;
	char seqs[32];
	uint64_t lost;
	size_t n;

	on_disk(full_block, "1m");
	read_lines(tpath("out.jsonl"), &l);
	assert_chain(&l, l.n);
	/* before, admitted, the lines that found room, the daemon line, after. */
	n = l.n;
	assert_true(n > 3 + 16 + 2);
	j = parse(l.p[n - 3], l.len[n - 3]);
	lost = (uint64_t)ival(j, "seq") + 1; /* the last line made in room; the next had none */
	json_decref(j);
	j = resumed_line(&l, n - 2);
	assert_int_equal(ival(j, "refused"), 2);
	assert_int_equal(ival(j, "unwritten"), 1);
	snprintf(seqs, sizeof seqs, "%llu", (unsigned long long)lost);
	assert_string_equal(sval(j, "seqs"), seqs);
	assert_int_equal(ival(j, "seq"), (json_int_t)lost + 1);
	json_decref(j);
	lines_free(&l);
}

static void
full_continue(const char *path)
{
	struct audit_settings set = {AUDIT_ON_ERROR_CONTINUE, 0, 0};
	struct audit_stats st;
	struct audit *a;
	int i;

	signal(SIGXFSZ, SIG_IGN);
	if ((a = audit_open(path, NULL, 0)) == NULL)
		_exit(10);
	audit_configure(a, &set);
	audit_set_batch(a, nop_wakeup, NULL);
	write_event(a, "before.example", 0, 0, 11);
	audit_flush(a);
	if (disk_fill() == -1)
		_exit(12);
	/* Let through whatever happens; the room ahead holds a few hundred lines. */
	for (i = 0; i < 600; i++) {
		if (!audit_admit(a))
			_exit(13);
		write_event(a, "continue.example", 1, 0, 14);
		if (i % 50 == 49)
			audit_flush(a);
	}
	audit_flush(a);
	audit_stats(a, &st);
	if (!st.failing || st.refused != 0 || st.unwritten == 0 || st.unwritten >= 600)
		_exit(15);
	disk_free();
	audit_tick(a);
	if (audit_refusing(a))
		_exit(16);
	audit_stats(a, &st);
	if (st.failing)
		_exit(17);
	write_event(a, "after.example", 0, 0, 18);
	audit_close(a);
}

/*
 * audit.onError: continue on a disk that fills up: nothing is refused;
 * each batch writes the whole lines that fit the room left and loses the
 * rest (no line is torn), whose seqs the daemon line names as one range
 * once the disk has room. The file stays one chain.
 */
static void
test_full_continue(void **state)
{
	struct lines l;
	json_t *j, *k;
	char want[48];
	json_int_t first, unwritten;
	size_t n, i;

	on_disk(full_continue, "1m");
	read_lines(tpath("out.jsonl"), &l);
	assert_chain(&l, l.n);
	n = l.n;
	for (i = 0; i < n; i++)
		assert_int_equal(l.p[i][0], '{'); /* no torn line */
	j = resumed_line(&l, n - 2);
	assert_int_equal(ival(j, "refused"), 0);
	unwritten = ival(j, "unwritten");
	/* The lines written, before and after the gap, and the ones lost, are the 600. */
	assert_int_equal((json_int_t)(n - 3) + unwritten, 600);
	k = parse(l.p[n - 3], l.len[n - 3]);
	first = ival(k, "seq") + 1;
	json_decref(k);
	snprintf(want, sizeof want, "%lld-%lld", (long long)first,
	         (long long)(first + unwritten - 1));
	assert_string_equal(sval(j, "seqs"), want);
	assert_int_equal(ival(j, "seq"), first + unwritten);
	json_decref(j);
	lines_free(&l);
}

/*
 * Where room cannot be reserved (a file system without fallocate, stood
 * in for here by a file size limit with reserving off), a batch whose
 * write fails is lost whole: the chain goes back to the last line in the
 * file, and the line that says the log resumed chains from it and names
 * the batch's seqs.
 */
static void
test_batch_lost(void **state)
{
	const char *path = tpath("batch_lost.jsonl");
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 0, 0};
	struct audit *a;
	struct lines l;
	json_t *j;
	pid_t pid;
	char want[65];

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		if ((a = audit_open(path, NULL, 0)) == NULL)
			_exit(10);
		a->flags &= ~AUDIT_F_ROOM;
		audit_configure(a, &set);
		audit_set_batch(a, nop_wakeup, NULL);
		write_event(a, "one.example", 0, 0, 11);
		audit_flush(a);
		write_event(a, "two.example", 0, 0, 12);
		write_event(a, "three.example", 0, 0, 13);
		write_event(a, "four.example", 0, 0, 14);
		file_room(path, 0);
		if (audit_flush(a) != -1 || !audit_refusing(a))
			_exit(15);
		/* While failing, a line of nothing admitted is not tried. */
		write_event(a, "five.example", 0, -1, 16);
		audit_tick(a); /* the limit is still there */
		file_room(path, -1);
		audit_tick(a);
		if (audit_refusing(a))
			_exit(17);
		write_event(a, "seven.example", 0, 0, 18);
		audit_close(a);
		_exit(0);
	}
	child_ok(pid);
	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	assert_chain(&l, 3);
	j = parse(l.p[1], l.len[1]);
	assert_string_equal(sval(j, "reason"), "resumed");
	assert_string_equal(sval(j, "error"), strerror(EFBIG));
	assert_string_equal(sval(j, "seqs"), "2-6");
	assert_int_equal(ival(j, "unwritten"), 5);
	assert_int_equal(ival(j, "seq"), 7);
	sha256_hex(l.p[0], l.len[0], want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	j = parse(l.p[2], l.len[2]);
	assert_int_equal(ival(j, "seq"), 8);
	json_decref(j);
	lines_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_block),
	    cmocka_unit_test(test_full_continue),
	    cmocka_unit_test(test_batch_lost),
	};

	log_init("test_audit_audit_full", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
