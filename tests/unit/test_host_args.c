/*
 * Unit tests for host/args.c, the command line of opencode-sandbox (seed
 * 003 §6.3): every row of the argument rules, wrapper flags anywhere
 * before "--" (never left for OpenCode or the runtime), "--" as the escape,
 * and the usage errors. Directories are made in a private temp dir that is
 * the working directory.
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

static char tmp[] = "/tmp/test-host-args.XXXXXX";

/* Parse a NULL-terminated list of words after the program name. */
static int
parse(struct host_args *a, struct buf *err, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "opencode-sandbox";
	va_start(ap, err);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	return args_parse(a, argc, argv, err);
}

/* OpenCode's arguments on one line. */
static const char *
oc(const struct host_args *a)
{
	static char line[512];
	size_t i, o = 0;

	line[0] = '\0';
	for (i = 0; i < a->oc.n; i++)
		o += (size_t)snprintf(line + o, sizeof line - o, "%s%s", i > 0 ? " " : "",
		                      a->oc.v[i]);
	return line;
}

static void
test_rules(void **state)
{
	static const struct {
		const char *argv[6];
		enum host_cmd cmd;
		const char *project;
		const char *oc;
	} cases[] = {
	    {{NULL}, HOST_CMD_RUN, NULL, ""},
	    {{"--help"}, HOST_CMD_RUN, NULL, "--help"},
	    {{"-h"}, HOST_CMD_RUN, NULL, "-h"},
	    {{"."}, HOST_CMD_RUN, ".", ""},
	    {{".", "--help"}, HOST_CMD_RUN, ".", "--help"},
	    {{"proj", "--model", "a/b"}, HOST_CMD_RUN, "proj", "--model a/b"},
	    {{"--print-logs", "proj"}, HOST_CMD_RUN, "proj", "--print-logs"},
	    {{"--model", "a/b"}, HOST_CMD_RUN, NULL, "--model a/b"},
	    {{"run"}, HOST_CMD_RUN, NULL, ""},
	    {{"run", "proj"}, HOST_CMD_RUN, "proj", ""},
	    {{"run", "proj", "-c"}, HOST_CMD_RUN, "proj", "-c"},
	    {{"run", "summarize this"}, HOST_CMD_RUN, NULL, "run summarize this"},
	    {{"run", "--continue"}, HOST_CMD_RUN, NULL, "run --continue"},
	    {{"run", "no-such-dir"}, HOST_CMD_RUN, NULL, "run no-such-dir"},
	    {{"--", "--help"}, HOST_CMD_RUN, NULL, "--help"},
	    {{"--", "run", "proj"}, HOST_CMD_RUN, NULL, "run proj"},
	    {{".", "--", "run", "x"}, HOST_CMD_RUN, ".", "run x"},
	    {{"run", "--", "x"}, HOST_CMD_RUN, NULL, "x"},
	    {{"--", "--dry-run"}, HOST_CMD_RUN, NULL, "--dry-run"},
	    {{"serve", "--port", "4096"}, HOST_CMD_RUN, NULL, "serve --port 4096"},
	    {{"--print-logs", "run", "x"}, HOST_CMD_RUN, NULL, "--print-logs run x"},
	    {{"help"}, HOST_CMD_HELP, NULL, ""},
	    {{"help", "init"}, HOST_CMD_HELP, NULL, ""},
	    {{"doctor"}, HOST_CMD_OTHER, NULL, ""},
	    {{"upgrade", "1.2"}, HOST_CMD_OTHER, NULL, ""},
	    {{"", "x"}, HOST_CMD_RUN, NULL, " x"},
	};
	struct host_args a;
	struct buf err;
	char *argv[8];
	size_t i;
	int argc, k;

	buf_init(&err);
	for (i = 0; i < EG_NELEM(cases); i++) {
		argc = 0;
		argv[argc++] = "opencode-sandbox";
		for (k = 0; cases[i].argv[k] != NULL; k++)
			argv[argc++] = (char *)cases[i].argv[k];
		argv[argc] = NULL;
		assert_int_equal(args_parse(&a, argc, argv, &err), 0);
		assert_int_equal(a.cmd, cases[i].cmd);
		if (cases[i].project == NULL)
			assert_null(a.project);
		else
			assert_string_equal(a.project, cases[i].project);
		if (a.cmd == HOST_CMD_RUN)
			assert_string_equal(oc(&a), cases[i].oc);
		args_free(&a);
	}
	buf_free(&err);
}

/* Wrapper flags anywhere before "--", both spellings, and their values taken out. */
static void
test_flags(void **state)
{
	struct host_args a;
	struct buf err;

	buf_init(&err);
	assert_int_equal(parse(&a, &err, "run", "summarize", "--dry-run", "--network-mode=strict",
	                       "--config", "a.yaml", "--config=b.yaml", "--allow", "x.example",
	                       "--cpus", "2", "--keep", "--", "--debug", NULL),
	                 0);
	assert_string_equal(oc(&a), "run summarize --debug");
	assert_true(a.dry_run);
	assert_true(a.keep);
	assert_false(a.debug);
	assert_string_equal(a.mode, "strict");
	assert_int_equal(a.configs.n, 2);
	assert_string_equal(a.configs.v[1], "b.yaml");
	assert_string_equal(a.allow.v[0], "x.example");
	assert_string_equal(a.cpus, "2");
	args_free(&a);
	buf_free(&err);
}

static void
test_errors(void **state)
{
	struct host_args a;
	struct buf err;

	buf_init(&err);
	assert_int_equal(parse(&a, &err, "--config", NULL), -1);
	assert_string_equal(buf_cstr(&err), "--config needs a value");
	buf_reset(&err);
	assert_int_equal(parse(&a, &err, "--config", "--dry-run", NULL), -1);
	buf_reset(&err);
	assert_int_equal(parse(&a, &err, "--config=", NULL), -1);
	buf_reset(&err);
	assert_int_equal(parse(&a, &err, "--keep=yes", NULL), -1);
	assert_string_equal(buf_cstr(&err), "--keep takes no value");
	buf_reset(&err);
	assert_int_equal(parse(&a, &err, "--network-mode", "paranoid", NULL), -1);
	assert_non_null(strstr(buf_cstr(&err), "expected practical, strict or off"));
	buf_free(&err);
}

static int
setup(void **state)
{
	if (mkdtemp(tmp) == NULL || chdir(tmp) == -1 || mkdir("proj", 0755) == -1)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	rmdir("proj");
	chdir("/");
	rmdir(tmp);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
