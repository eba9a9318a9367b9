/*
 * Unit tests for host/state.c: the state directories a run plans (one per
 * project, named for it and a hash of its path; one per run), the
 * summary of an audit log (requests, blocked, flagged; an intercepted
 * tunnel's CONNECT not counted twice, DNS lookups not at all, lines that
 * are not JSON skipped), and removing a tree without following links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static void
test_plan(void **state)
{
	struct config_text t;
	struct host_state s, s2;
	struct config *cfg;
	struct buf errs;

	memset(&t, 0, sizeof t);
	buf_init(&errs);
	t.file.path = "/etc/g.yaml";
	t.data = "version: 1\nstate:\n  stateDir: /var/tmp/osb\n";
	t.len = strlen(t.data);
	cfg = config_load_texts(&t, 1, &errs);
	assert_non_null(cfg);
	assert_int_equal(state_plan(&s, cfg, "/home/u/My Project!", &errs), 0);
	assert_string_equal(s.root, "/var/tmp/osb");
	assert_string_equal(s.slug, "my-project");
	assert_int_equal(strncmp(s.project, "/var/tmp/osb/projects/my-project-", 33), 0);
	assert_int_equal(strlen(s.project), 33 + 12);
	assert_int_equal(strncmp(s.run, s.project, strlen(s.project)), 0);
	assert_non_null(strstr(s.audit, "/logs/audit-events.jsonl"));
	/* Two runs of one project: one project directory, two run directories. */
	assert_int_equal(state_plan(&s2, cfg, "/home/u/My Project!", &errs), 0);
	assert_string_equal(s.project, s2.project);
	assert_string_not_equal(s.run, s2.run);
	state_free(&s2);
	assert_int_equal(state_plan(&s2, cfg, "/home/v/My Project!", &errs), 0);
	assert_string_not_equal(s.project, s2.project);
	state_free(&s2);
	state_free(&s);
	config_free(cfg);
	buf_free(&errs);
}

/* The directories made, with their modes; the project's path written beside its state. */
static void
test_create(void **state)
{
	char dir[] = "/tmp/test-host-state-mk.XXXXXX", *p, *data;
	struct config_text t;
	struct host_state s;
	struct config *cfg;
	struct stat st;
	struct buf errs;
	size_t len;

	assert_non_null(mkdtemp(dir));
	memset(&t, 0, sizeof t);
	buf_init(&errs);
	t.file.path = "/etc/g.yaml";
	p = xasprintf("version: 1\nstate:\n  stateDir: %s/state\n", dir);
	t.data = p;
	t.len = strlen(p);
	cfg = config_load_texts(&t, 1, &errs);
	assert_non_null(cfg);
	free(p);
	assert_int_equal(state_plan(&s, cfg, "/home/u/proj", &errs), 0);
	assert_int_equal(state_create(&s, &errs), 0);
	assert_int_equal(stat(s.run, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(s.logs, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	p = xasprintf("%s/project", s.project);
	assert_int_equal(host_read_file(p, 4096, &data, &len), 0);
	assert_string_equal(data, "/home/u/proj\n");
	free(data);
	free(p);
	state_free(&s);
	config_free(cfg);
	buf_free(&errs);
	assert_int_equal(state_remove_tree(dir), 0);
}

static void
test_summary(void **state)
{
	char path[] = "/tmp/test-host-state.XXXXXX";
	struct state_summary sum;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{\"event\":\"daemon\",\"reason\":\"started\"}\n"
	      "{\"event\":\"dns\",\"action\":\"block\"}\n"
	      "{\"event\":\"connect\",\"action\":\"allow\",\"tls\":\"intercept\"}\n"
	      "{\"event\":\"connect\",\"action\":\"allow\",\"tls\":\"passthrough\"}\n"
	      "{\"event\":\"http\",\"action\":\"allow\"}\n"
	      "not json\n"
	      "{\"event\":\"http\",\"action\":\"block\"}\n"
	      "{\"event\":\"http\",\"action\":\"flag\"}\n"
	      "{\"event\":\"tls\",\"action\":\"block\"}\n"
	      "{\"event\":\"packet\",\"action\":\"block\"}\n"
	      "{\"event\":\"policy\",\"action\":\"block\",\"rule\":\"project-file\"}\n",
	      f);
	fclose(f);
	state_summarize(path, &sum);
	assert_true(sum.readable);
	assert_int_equal(sum.requests, 4);
	assert_int_equal(sum.blocked, 3);
	assert_int_equal(sum.flagged, 1);
	unlink(path);
	state_summarize(path, &sum);
	assert_false(sum.readable);
}

static void
test_remove_tree(void **state)
{
	char dir[] = "/tmp/test-host-state-rm.XXXXXX", keep[] = "/tmp/test-host-state-keep.XXXXXX";
	char *p, *k;

	assert_non_null(mkdtemp(dir));
	assert_non_null(mkdtemp(keep));
	k = xasprintf("%s/precious", keep);
	assert_int_equal(host_write_file(k, "x", 1, 0644), 0);
	p = xasprintf("%s/a/b", dir);
	assert_int_equal(host_mkdirs(p, 0755), 0);
	free(p);
	p = xasprintf("%s/a/link", dir);
	assert_int_equal(symlink(keep, p), 0);
	free(p);
	assert_int_equal(state_remove_tree(dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(access(k, F_OK), 0);
	unlink(k);
	rmdir(keep);
	free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan),
	    cmocka_unit_test(test_create),
	    cmocka_unit_test(test_summary),
	    cmocka_unit_test(test_remove_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
