/*
 * Tests for `policyctl audit` on what the audit writer makes when its log
 * is rotated or cannot be written for a while: the rotated set read as
 * one (review_set.c) and checked as one chain (review_verify_set), a file
 * missing from the middle of the set found as a break, the oldest file
 * starting on a rotated one that is gone, a gap the writer named told
 * apart from lines removed, and a gap nothing named (egressd stopped while
 * it could not write) reported. The logs are written here by the real
 * writer (audit/), in a temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit_int.h"
#include "review.h"

static char dir[] = "/tmp/test_review_set.XXXXXX";

static const char *
path_of(const char *name)
{
	static char p[256];

	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void
line(struct audit *a, const char *host)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.host = host;
	ev.path = "/a/path";
	assert_int_equal(audit_write(a, &ev), 0);
}

/* A log of n lines at name, rotated every 4 KiB, keeping keep files. */
static void
make_rotated(const char *name, int n, unsigned keep)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 4096, keep};
	struct audit *a;
	int i;

	a = audit_open(path_of(name), NULL, 0);
	assert_non_null(a);
	audit_configure(a, &set);
	for (i = 0; i < n; i++)
		line(a, "set.example");
	audit_close(a);
}

/* What verify prints for the log at name; *rc its result. */
static char *
verify(const char *name, int json, int *rc)
{
	struct review_opts o;
	char **names, *text = NULL;
	size_t n, len = 0;
	FILE *out;

	review_opts_init(&o);
	o.name = path_of(name);
	o.json = json;
	o.err = fopen("/dev/null", "w");
	names = logfile_set(path_of(name), &n);
	out = open_memstream(&text, &len);
	*rc = review_verify_set(names, n, out, &o);
	fclose(out);
	fclose(o.err);
	logfile_set_free(names, n);
	return text;
}

static void
must_have(const char *text, const char *want)
{
	if (strstr(text, want) == NULL)
		fail_msg("no \"%s\" in:\n%s", want, text);
}

/* A rotated set is one chain, read as one log; a file missing from it is a break. */
static void
test_set_verify(void **state)
{
	struct review_opts o;
	char *text, moved[300];
	FILE *in, *out;
	size_t len = 0;
	int rc;

	make_rotated("a.jsonl", 150, 3);
	text = verify("a.jsonl", 0, &rc);
	assert_int_equal(rc, 0);
	/* keep: 3 of the rotations: the oldest kept starts on one that is gone. */
	must_have(text, "the first line continues a log rotated away");
	must_have(text, "chain OK");
	free(text);

	/* The summary reads the set as one log: every line of every file. */
	review_opts_init(&o);
	o.name = path_of("a.jsonl");
	o.err = fopen("/dev/null", "w");
	in = review_set_open(path_of("a.jsonl"), o.err);
	assert_non_null(in);
	text = NULL;
	out = open_memstream(&text, &len);
	assert_int_equal(review_summary(in, out, &o), 0);
	fclose(out);
	fclose(in);
	fclose(o.err);
	must_have(text, "events:    daemon");
	free(text);

	/* FILE.2 taken out of the middle: its neighbours no longer link up. */
	snprintf(moved, sizeof moved, "%s.2", path_of("a.jsonl"));
	assert_int_equal(unlink(moved), 0);
	text = verify("a.jsonl", 0, &rc);
	assert_int_equal(rc, 1);
	must_have(text, ".1: line 1: prev does not match line ");
	free(text);
}

static void
nop_wakeup(void *arg)
{
	(void)arg;
}

static void
admitted_line(struct audit *a, const char *host)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.host = host;
	ev.admitted = 1;
	assert_int_equal(audit_write(a, &ev), 0);
}

/*
 * The writer's gap: seqs 3 and 4 lost with their batch to a file size
 * limit (reserving off, as on a file system without it), seq 5 (an
 * admitted exchange's line) written once the limit is gone; then either
 * the tick writes the line that names 3-4, or the run ends first and a
 * new run appends. In a child, which the limit would otherwise outlive.
 */
static void
make_gap(const char *name, int named)
{
	struct audit_settings set = {AUDIT_ON_ERROR_BLOCK, 0, 0};
	struct rlimit rl;
	struct audit *a;
	struct stat st;
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		if ((a = audit_open(path_of(name), NULL, 0)) == NULL)
			_exit(10);
		a->flags &= ~AUDIT_F_ROOM;
		audit_configure(a, &set);
		line(a, "one.example");
		line(a, "two.example");
		audit_set_batch(a, nop_wakeup, NULL);
		line(a, "three.example");
		line(a, "four.example");
		stat(path_of(name), &st);
		getrlimit(RLIMIT_FSIZE, &rl);
		rl.rlim_cur = (rlim_t)st.st_size;
		setrlimit(RLIMIT_FSIZE, &rl);
		if (audit_flush(a) != -1 || !audit_refusing(a))
			_exit(11);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_FSIZE, &rl);
		admitted_line(a, "five.example");
		if (audit_flush(a) != 0)
			_exit(12);
		if (named)
			audit_tick(a);
		if (audit_refusing(a) == named)
			_exit(13);
		audit_close(a);
		if (!named) {
			/* The run stopped before it could say so; the next one appends. */
			if ((a = audit_open(path_of(name), NULL, 0)) == NULL)
				_exit(14);
		} else if ((a = audit_open(path_of(name), NULL, 0)) == NULL)
			_exit(15);
		line(a, "next.example");
		audit_close(a);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A gap the writer named is no problem, and is shown; lines removed are one. */
static void
test_gap_named(void **state)
{
	char *text, *data, *l2, *l3;
	FILE *f;
	long n;
	int rc;

	make_gap("gap.jsonl", 1);
	text = verify("gap.jsonl", 0, &rc);
	assert_int_equal(rc, 0);
	must_have(text, "line 4: gap: the log could not be written for ");
	must_have(text, "(File too large): 2 lines not written (seq 3-4), 0 requests refused\n");
	must_have(text, "5 lines, 2 runs, chain OK; 2 lines egressd could not write, named by 1 "
	                "daemon line\n");
	free(text);
	text = verify("gap.jsonl", 1, &rc);
	assert_int_equal(rc, 0);
	must_have(text, "\"gaps\":[{\"line\":4,\"seqs\":\"3-4\",\"unwritten\":2,\"refused\":0,");
	must_have(text, "\"ok\":true");
	free(text);

	/* Line 2 cut out: the chain breaks there, and seq's jump is no gap. */
	f = fopen(path_of("gap.jsonl"), "r+");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	data = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	l2 = strchr(data, '\n') + 1;
	l3 = strchr(l2, '\n') + 1;
	f = fopen(path_of("cut.jsonl"), "w");
	fwrite(data, 1, (size_t)(l2 - data), f);
	fwrite(l3, 1, strlen(l3), f);
	fclose(f);
	free(data);
	text = verify("cut.jsonl", 0, &rc);
	assert_int_equal(rc, 1);
	must_have(text, "line 2: prev does not match line 1, and seq jumps from 1 to 5: lines were "
	                "removed or reordered before this one\n");
	free(text);
}

/* A jump nothing names (the run ended while it could not write) is a problem. */
static void
test_gap_unnamed(void **state)
{
	char *text;
	int rc;

	make_gap("lost.jsonl", 0);
	text = verify("lost.jsonl", 0, &rc);
	assert_int_equal(rc, 1);
	must_have(text, "line 3: seq jumps from 2 to 5 with the chain whole: 2 lines were not "
	                "written, and no daemon line of the run names them (egressd stopped "
	                "before it could)\n");
	free(text);
}

static int
setup(void **state)
{
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_verify),
	    cmocka_unit_test(test_gap_named),
	    cmocka_unit_test(test_gap_unnamed),
	};

	log_init("test_policyctl_review_set", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
