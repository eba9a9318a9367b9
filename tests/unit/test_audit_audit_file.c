/*
 * Unit tests for audit/audit.c, the file: the SHA-256 chain (recomputed
 * here with OpenSSL) across reopens, batching, partial tails and short
 * writes, stdout and inherited descriptors, the file mode, refused paths,
 * and four processes appending to one file without tearing a line.
 */
#include <sys/mman.h>
#include <sys/vfs.h>

#include <linux/magic.h>

#include "audit_test.h"

static void
test_chain_and_seq(void **state)
{
	struct audit *a;
	struct lines l;
	char want[65];
	json_t *j;
	size_t i;

	a = open_ok(tpath("chain.jsonl"));
	for (i = 0; i < 5; i++)
		write_simple(a, "example.com");
	audit_close(a);
	read_lines(tpath("chain.jsonl"), &l);
	assert_int_equal(l.n, 5);
	for (i = 0; i < l.n; i++) {
		j = parse(l.p[i], l.len[i]);
		assert_non_null(j);
		assert_int_equal(ival(j, "seq"), i + 1);
		if (i == 0)
			assert_string_equal(sval(j, "prev"), ZEROS);
		else {
			sha256_hex(l.p[i - 1], l.len[i - 1], want);
			assert_string_equal(sval(j, "prev"), want);
		}
		json_decref(j);
	}
	assert_chain(&l, 5);
	/* The check can fail: an edited line breaks the next one's prev. */
	strstr(l.p[2], "example.com")[0] = 'E';
	assert_int_equal(chain_break(&l, &i), 4);
	lines_free(&l);
}

static int wakeups;

static void
count_wakeup(void *arg)
{
	(void)arg;
	wakeups++;
}

/* Batched: nothing reaches the file before a flush, then every line does. */
static void
test_batch(void **state)
{
	struct audit *a;
	struct lines l;
	struct stat st;
	int i;

	wakeups = 0;
	a = open_ok(tpath("batch.jsonl"));
	audit_set_batch(a, count_wakeup, NULL);
	for (i = 0; i < 3; i++)
		write_simple(a, "example.com");
	assert_int_equal(wakeups, 1); /* once, when the first line became pending */
	assert_int_equal(stat(tpath("batch.jsonl"), &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(audit_flush(a), 0);
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 3);
	lines_free(&l);
	/* A new batch wakes its owner again; close writes what is pending. */
	write_simple(a, "example.org");
	write_simple(a, "example.net");
	assert_int_equal(wakeups, 2);
	audit_close(a);
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 5);
	assert_chain(&l, 5);
	lines_free(&l);
	/* Turning batching off flushes, then each line is written at once. */
	a = open_ok(tpath("batch.jsonl"));
	audit_set_batch(a, count_wakeup, NULL);
	write_simple(a, "example.com");
	audit_set_batch(a, NULL, NULL);
	write_simple(a, "example.com");
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 7);
	assert_chain(&l, 7);
	lines_free(&l);
	audit_close(a);
}

static void
test_reopen_continues(void **state)
{
	struct audit *a;
	struct lines l;
	json_t *j;
	int run, i;

	for (run = 0; run < 3; run++) {
		a = open_ok(tpath("reopen.jsonl"));
		for (i = 0; i < 3; i++)
			write_simple(a, "example.com");
		audit_close(a);
	}
	read_lines(tpath("reopen.jsonl"), &l);
	assert_int_equal(l.n, 9);
	assert_chain(&l, 9);
	/* seq restarts with each run; the chain does not. */
	j = parse(l.p[3], l.len[3]);
	assert_int_equal(ival(j, "seq"), 1);
	assert_string_not_equal(sval(j, "prev"), ZEROS);
	json_decref(j);
	lines_free(&l);
}

static void
test_partial_tail(void **state)
{
	static const char partial[] = "{\"v\":1,\"ts\":\"2026-01-01T00:00";
	struct audit *a;
	struct lines l;
	char want[65];
	json_t *j;

	/* A run, then a truncated line, then a new run. */
	a = open_ok(tpath("partial.jsonl"));
	write_simple(a, "one.example");
	audit_close(a);
	a = open_ok(tpath("partial.jsonl"));
	audit_close(a); /* a run that writes nothing leaves the file alone */
	{
		int fd = open(tpath("partial.jsonl"), O_WRONLY | O_APPEND);

		assert_true(fd != -1);
		assert_int_equal(write(fd, partial, strlen(partial)), (ssize_t)strlen(partial));
		close(fd);
	}
	a = open_ok(tpath("partial.jsonl"));
	write_simple(a, "two.example");
	write_simple(a, "three.example");
	audit_close(a);

	read_lines(tpath("partial.jsonl"), &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.len[1], strlen(partial));
	assert_memory_equal(l.p[1], partial, strlen(partial));
	assert_null(parse(l.p[1], l.len[1]));
	j = parse(l.p[2], l.len[2]);
	assert_non_null(j);
	sha256_hex(partial, strlen(partial), want);
	assert_string_equal(sval(j, "prev"), want);
	assert_string_equal(sval(j, "host"), "two.example");
	json_decref(j);
	assert_chain(&l, 3);
	lines_free(&l);

	/* A file that is nothing but a partial line. */
	write_raw(tpath("partial-only.jsonl"), "garbage", 7);
	a = open_ok(tpath("partial-only.jsonl"));
	write_simple(a, "x.example");
	audit_close(a);
	read_lines(tpath("partial-only.jsonl"), &l);
	assert_int_equal(l.n, 2);
	sha256_hex("garbage", 7, want);
	j = parse(l.p[1], l.len[1]);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);
}

/* Odd tails: an empty last line, and last lines longer than one block. */
static void
test_tail_shapes(void **state)
{
	static const size_t sizes[] = {65535, 65536, 65537, 200000};
	struct audit *a;
	struct lines l;
	char want[65], *big;
	json_t *j;
	size_t i;

	write_raw(tpath("empty-last.jsonl"), "first\n\n", 7);
	a = open_ok(tpath("empty-last.jsonl"));
	write_simple(a, "x.example");
	audit_close(a);
	read_lines(tpath("empty-last.jsonl"), &l);
	assert_int_equal(l.n, 3);
	j = parse(l.p[2], l.len[2]);
	sha256_hex("", 0, want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);

	big = xmalloc(300000);
	for (i = 0; i < EG_NELEM(sizes); i++) {
		memset(big, 'p', 100);
		big[100] = '\n';
		memset(big + 101, 'q', sizes[i]);
		big[101 + sizes[i]] = '\n';
		write_raw(tpath("long-last.jsonl"), big, sizes[i] + 102);
		a = open_ok(tpath("long-last.jsonl"));
		write_simple(a, "x.example");
		audit_close(a);
		read_lines(tpath("long-last.jsonl"), &l);
		assert_int_equal(l.n, 3);
		j = parse(l.p[2], l.len[2]);
		sha256_hex(big + 101, sizes[i], want);
		assert_string_equal(sval(j, "prev"), want);
		json_decref(j);
		lines_free(&l);
	}
	free(big);
}

static void
test_oversize_tail(void **state)
{
	char err[256] = "";
	size_t len = 5 * 1024 * 1024;
	char *big;

	big = xmalloc(len);
	memset(big, 'x', len);
	write_raw(tpath("oversize.jsonl"), big, len);
	free(big);
	assert_null(audit_open(tpath("oversize.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "longer than"));
}

static void
test_file_mode(void **state)
{
	struct audit *a;
	struct stat st;
	mode_t old;

	old = umask(0);
	a = open_ok(tpath("mode.jsonl"));
	umask(old);
	write_simple(a, "x.example");
	audit_close(a);
	assert_int_equal(stat(tpath("mode.jsonl"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(S_ISREG(st.st_mode));
}

static void
test_refused_paths(void **state)
{
	char err[256], target[256];

	err[0] = '\0';
	assert_int_equal(mkdir(tpath("adir"), 0700), 0);
	assert_null(audit_open(tpath("adir"), err, sizeof err));
	assert_non_null(strstr(err, "cannot open "));
	assert_non_null(strstr(err, "adir: Is a directory"));

	snprintf(target, sizeof target, "%s", tpath("target.jsonl"));
	write_raw(target, "", 0);
	assert_int_equal(symlink(target, tpath("link.jsonl")), 0);
	assert_null(audit_open(tpath("link.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "symbolic link"));

	/* A FIFO with no reader: refused at once, no hang. */
	assert_int_equal(mkfifo(tpath("fifo"), 0600), 0);
	assert_null(audit_open(tpath("fifo"), err, sizeof err));
	assert_non_null(strstr(err, "not a regular file"));

	assert_null(audit_open(tpath("missing/dir/log.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "log.jsonl: No such file or directory"));
	assert_null(audit_open("/dev/null", err, sizeof err));
	assert_non_null(strstr(err, "/dev/null: not a regular file"));

	/* No error buffer: still NULL, no crash. */
	assert_null(audit_open(tpath("adir"), NULL, 0));
	assert_null(audit_open(tpath("adir"), err, 1));
	assert_int_equal(err[0], '\0');
}

/* "-" writes to stdout, here a pipe: the chain starts from zeros, fd 1 stays. */
static void
test_stdout_pipe(void **state)
{
	struct audit *a;
	struct lines l;
	char buf[8192], want[65];
	int p[2], saved;
	ssize_t n;
	json_t *j;

	fflush(stdout);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDOUT_FILENO);
	assert_true(saved != -1);
	assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
	close(p[1]);
	a = audit_open("-", NULL, 0);
	if (a != NULL) {
		write_simple(a, "one.example");
		write_simple(a, "two.example");
		audit_close(a);
	}
	/* audit_close did not close stdout. */
	assert_true(fcntl(STDOUT_FILENO, F_GETFD) != -1);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	assert_non_null(a);
	n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	assert_true(n > 0);
	write_raw(tpath("stdout.jsonl"), buf, (size_t)n);
	read_lines(tpath("stdout.jsonl"), &l);
	assert_int_equal(l.n, 2);
	j = parse(l.p[0], l.len[0]);
	assert_string_equal(sval(j, "prev"), ZEROS);
	json_decref(j);
	j = parse(l.p[1], l.len[1]);
	sha256_hex(l.p[0], l.len[0], want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);
}

/* An inherited write-only descriptor of a regular file ("egressd >>log"). */
static void
test_open_fd_file(void **state)
{
	struct audit *a;
	struct lines l;
	char err[256];
	int fd;

	a = open_ok(tpath("fd.jsonl"));
	write_simple(a, "one.example");
	write_simple(a, "two.example");
	audit_close(a);

	/* Without O_APPEND and at offset 0: the writer must still append. */
	fd = open(tpath("fd.jsonl"), O_WRONLY);
	assert_true(fd > STDERR_FILENO);
	a = audit_open_fd(fd, err, sizeof err);
	assert_non_null(a);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	write_simple(a, "three.example");
	audit_close(a);
	assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed: it was owned */
	assert_int_equal(errno, EBADF);

	read_lines(tpath("fd.jsonl"), &l);
	assert_int_equal(l.n, 3);
	assert_chain(&l, 3);
	lines_free(&l);

	fd = open(tpath("fd.jsonl"), O_RDONLY);
	assert_null(audit_open_fd(fd, err, sizeof err));
	assert_non_null(strstr(err, "not open for writing"));
	close(fd);
	assert_null(audit_open_fd(-1, err, sizeof err));
}

/*
 * A short write (file size limit) leaves torn bytes; the next line starts
 * after a newline and chains from them. A write that writes nothing leaves
 * the chain as it was. Runs in a child so the limit stays there.
 */
static int
limited_write(struct audit *a, const char *path, off_t room, const char *event)
{
	struct audit_event ev;

	file_room(path, room);
	audit_event_init(&ev);
	ev.event = event;
	return audit_write(a, &ev);
}

/*
 * Line i + 1 of l follows a line torn after torn_len bytes: it is whole, has
 * seq and host, and chains from exactly the torn bytes.
 */
static void
assert_after_torn(const struct lines *l, size_t i, size_t torn_len, int seq, const char *host)
{
	char want[65];
	json_t *j;

	assert_int_equal(l->len[i], torn_len);
	assert_memory_equal(l->p[i], "{\"v\":1", 6);
	j = parse(l->p[i + 1], l->len[i + 1]);
	assert_non_null(j);
	assert_int_equal(ival(j, "seq"), seq);
	assert_string_equal(sval(j, "host"), host);
	sha256_hex(l->p[i], torn_len, want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
}

/*
 * Short writes (a file size limit) leave torn bytes; the next line starts
 * after a newline and chains from them. A write that writes nothing leaves
 * the chain as it was. Runs in a child so the limit stays there.
 */
static void
test_short_write(void **state)
{
	const char *path = tpath("short.jsonl");
	struct audit *a;
	struct lines l;
	pid_t pid;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		int bad = 0;

		signal(SIGXFSZ, SIG_IGN);
		if ((a = audit_open(path, NULL, 0)) == NULL)
			_exit(10);
		write_simple(a, "one.example");
		/* seq 2: 40 bytes land, the line is torn. */
		bad |= limited_write(a, path, 40, "tcp") != -1;
		/* seq 3: no room at all, nothing lands. */
		bad |= limited_write(a, path, 0, "dns") != -1;
		/* seq 4: "\n" and 29 bytes land: a second torn line. */
		bad |= limited_write(a, path, 30, "tls") != -1;
		/* seq 5: only the "\n" lands, which ends the torn line. */
		bad |= limited_write(a, path, 1, "connect") != -1;
		file_room(path, -1);
		write_simple(a, "six.example");
		audit_close(a);
		_exit(bad ? 11 : 0);
	}
	child_ok(pid);

	read_lines(path, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.len[1], 40);
	assert_null(parse(l.p[1], l.len[1]));
	/* seq 6 after 1: the gap shows lines were lost. */
	assert_after_torn(&l, 2, 29, 6, "six.example");
	assert_chain(&l, 2);
	lines_free(&l);
}

/*
 * The same in a batch: a flush torn by the file size limit leaves 25 bytes
 * of the pending line; the next batch, made in place, starts with a
 * newline and chains from those bytes.
 */
static void
test_short_write_batched(void **state)
{
	const char *path = tpath("short_batch.jsonl");
	struct audit *a;
	struct lines l;
	pid_t pid;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		int bad = 0;

		signal(SIGXFSZ, SIG_IGN);
		if ((a = audit_open(path, NULL, 0)) == NULL)
			_exit(10);
		write_simple(a, "one.example");
		audit_set_batch(a, count_wakeup, NULL);
		write_simple(a, "two.example");
		file_room(path, 25);
		bad |= audit_flush(a) != -1;
		file_room(path, -1);
		write_simple(a, "three.example");
		audit_close(a);
		_exit(bad ? 11 : 0);
	}
	child_ok(pid);

	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	assert_after_torn(&l, 1, 25, 3, "three.example");
	lines_free(&l);
}

#define CONC_PROCS  4
#define CONC_EVENTS 2000

static void
conc_child(int id)
{
	struct audit_event ev;
	struct audit *a;
	char client[32], path[64];
	int i, bad = 0;

	if ((a = audit_open(tpath("conc.jsonl"), NULL, 0)) == NULL)
		_exit(10);
	snprintf(client, sizeof client, "child-%d", id);
	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.client = client;
	ev.host = "concurrent.example";
	ev.method = "GET";
	ev.path = path;
	for (i = 0; i < CONC_EVENTS; i++) {
		/* Lines of varying length, some crossing page boundaries. */
		snprintf(path, sizeof path, "/%d/%.*s", i, i % 40,
		         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		ev.bytes_up = i;
		bad |= audit_write(a, &ev) != 0;
	}
	audit_close(a);
	_exit(bad ? 11 : 0);
}

static void
test_concurrent(void **state)
{
	static char hashes[CONC_PROCS][CONC_EVENTS][65];
	static int seen[CONC_PROCS][CONC_EVENTS];
	static json_t *js[CONC_PROCS * CONC_EVENTS];
	pid_t pids[CONC_PROCS];
	struct lines l;
	struct stat st;
	int i, id;
	json_int_t seq;
	size_t k;

	write_raw(tpath("conc.jsonl"), "", 0);
	for (i = 0; i < CONC_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] != -1);
		if (pids[i] == 0)
			conc_child(i);
	}
	for (i = 0; i < CONC_PROCS; i++)
		child_ok(pids[i]);
	assert_int_equal(stat(tpath("conc.jsonl"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	read_lines(tpath("conc.jsonl"), &l);
	assert_int_equal(l.n, CONC_PROCS * CONC_EVENTS);
	assert_int_equal(l.data[st.st_size - 1], '\n');
	memset(seen, 0, sizeof seen);
	for (k = 0; k < l.n; k++) {
		if ((js[k] = parse(l.p[k], l.len[k])) == NULL)
			fail_msg("line %zu is not JSON", k + 1);
		assert_int_equal(sscanf(sval(js[k], "client"), "child-%d", &id), 1);
		assert_true(id >= 0 && id < CONC_PROCS);
		seq = ival(js[k], "seq");
		assert_true(seq >= 1 && seq <= CONC_EVENTS);
		assert_int_equal(seen[id][seq - 1]++, 0);
		assert_int_equal(ival(js[k], "bytes_up"), seq - 1);
		sha256_hex(l.p[k], l.len[k], hashes[id][seq - 1]);
	}
	/* Each writer's own lines form a chain: seq k+1 holds the hash of seq k. */
	for (k = 0; k < l.n; k++) {
		sscanf(sval(js[k], "client"), "child-%d", &id);
		seq = ival(js[k], "seq");
		if (seq > 1)
			assert_string_equal(sval(js[k], "prev"), hashes[id][seq - 2]);
		json_decref(js[k]);
	}
	lines_free(&l);
}

/* Append lines of about 3 KiB to a until the file is at least size bytes. */
static void
write_until(struct audit *a, int fd, off_t size)
{
	static char host[3001];
	struct stat st;

	memset(host, 'h', sizeof host - 1);
	do {
		write_simple(a, host);
		assert_int_equal(fstat(fd, &st), 0);
	} while (st.st_size < size);
}

/* Pages of fd's bytes [off, off + len) in the page cache (both page multiples). */
static size_t
resident_pages(int fd, size_t off, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), i, n = 0;
	unsigned char *vec;
	void *m;

	m = mmap(NULL, off + len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	vec = xmalloc((off + len) / page);
	assert_int_equal(mincore(m, off + len, vec), 0);
	for (i = off / page; i < (off + len) / page; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(m, off + len);
	return n;
}

/*
 * The written log leaves the page cache behind the writer: once its pages
 * are on disk, the windows well behind the end are dropped. Here the test
 * puts them on disk itself (fsync) so the outcome does not depend on the
 * disk's speed; the next window's release must then drop them.
 */
static void
test_cache_released(void **state)
{
	const off_t mib = 1024 * 1024, size = 5 * AUDIT_CACHE_WINDOW;
	struct audit *a;
	struct lines l;
	struct statfs sfs;
	int fd;

	a = open_ok(tpath("cache.jsonl"));
	assert_int_equal(statfs(tpath("cache.jsonl"), &sfs), 0);
	if (sfs.f_type == TMPFS_MAGIC) {
		audit_close(a);
		print_message("tmpfs keeps its pages: nothing to drop\n");
		skip();
	}
	/* The span checked below is at least 8 MiB. */
	assert_true(size - 2 * AUDIT_CACHE_WINDOW >= 8 * mib);
	fd = open(tpath("cache.jsonl"), O_RDONLY);
	assert_true(fd != -1);
	write_until(a, fd, size);
	assert_int_equal(fsync(fd), 0);
	/* Two more releases: both see the pages above clean. */
	write_until(a, fd, size + 2 * AUDIT_CACHE_WINDOW);
	/* Dropped for sure: from one window in to one window before the fsync. */
	assert_int_equal(
	    resident_pages(fd, (size_t)AUDIT_CACHE_WINDOW, (size_t)(size - 2 * AUDIT_CACHE_WINDOW)),
	    0);
	close(fd);
	audit_close(a);
	/* Nothing is lost by dropping: every line is there and chained. */
	read_lines(tpath("cache.jsonl"), &l);
	assert_chain(&l, l.n);
	assert_true(l.n > 9000);
	lines_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chain_and_seq),
	    cmocka_unit_test(test_reopen_continues),
	    cmocka_unit_test(test_partial_tail),
	    cmocka_unit_test(test_tail_shapes),
	    cmocka_unit_test(test_oversize_tail),
	    cmocka_unit_test(test_file_mode),
	    cmocka_unit_test(test_refused_paths),
	    cmocka_unit_test(test_stdout_pipe),
	    cmocka_unit_test(test_open_fd_file),
	    cmocka_unit_test(test_short_write),
	    cmocka_unit_test(test_short_write_batched),
	    cmocka_unit_test(test_concurrent),
	    cmocka_unit_test(test_batch),
	    cmocka_unit_test(test_cache_released),
	};

	log_init("test_policy_audit_file", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
