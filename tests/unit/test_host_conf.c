/*
 * Unit tests for host/conf.c: the command line's layer (values quoted so
 * that a hostile --allow or --image is one value, never more YAML; errors
 * read "command line: ..."), the files found for a project (the nearest
 * .opencode-sandbox.yaml upward, seed 000's file) and the refusal of
 * project files reached through a symbolic link.
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

static char dir[] = "/tmp/test-host-conf.XXXXXX";

static void
test_cli_layer(void **state)
{
	struct host_args a;
	struct config *cfg;
	struct conf c;
	struct buf errs;

	memset(&a, 0, sizeof a);
	memset(&c, 0, sizeof c);
	a.image = "x\"\n  evil: [1]";
	a.mode = "strict";
	a.readonly = 1;
	strv_add(&a.allow, "a.example");
	conf_cli_layer(&c, &a);
	assert_int_equal(c.n, 1);
	buf_init(&errs);
	cfg = conf_load(&c, 1, &errs);
	assert_null(cfg);
	/* One value, refused as a whole by the image name check. */
	assert_string_equal(buf_cstr(&errs),
	                    "command line: name \"x\\\"\\x0a  evil: [1]\": contains a control "
	                    "character\n");
	conf_free(&c);
	a.image = "img:1";
	a.cpus = "0";
	conf_cli_layer(&c, &a);
	buf_reset(&errs);
	assert_null(conf_load(&c, 1, &errs));
	assert_non_null(strstr(buf_cstr(&errs), "command line: cpus: \"0\" is not a number"));
	conf_free(&c);
	a.cpus = "2";
	conf_cli_layer(&c, &a);
	cfg = conf_load(&c, 1, &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->wrapper.image_name, "img:1");
	assert_int_equal(cfg->mode, MODE_STRICT);
	assert_true(cfg->wrapper.project_readonly);
	assert_int_equal(cfg->allowlist.n, 1);
	config_free(cfg);
	conf_free(&c);
	strv_free(&a.allow);
	buf_free(&errs);
	/* Nothing on the command line: no layer at all. */
	memset(&a, 0, sizeof a);
	conf_cli_layer(&c, &a);
	assert_int_equal(c.n, 0);
}

static void
put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", dir, rel);

	assert_int_equal(host_write_file(p, text, strlen(text), 0644), 0);
	free(p);
}

static void
test_discover(void **state)
{
	struct host_args a;
	struct buf errs;
	struct conf c;
	char *proj, *p, *cmd;

	memset(&a, 0, sizeof a);
	memset(&c, 0, sizeof c);
	buf_init(&errs);
	setenv("XDG_CONFIG_HOME", dir, 1);
	proj = xasprintf("%s/top/proj", dir);
	p = xasprintf("%s/.opencode", proj);
	assert_int_equal(host_mkdirs(p, 0755), 0);
	free(p);
	put("top/.opencode-sandbox.yaml", "version: 1\n");
	put("top/proj/.opencode/sandbox.json", "{}\n");
	assert_int_equal(conf_discover(&c, &a, proj, &errs), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.files[0].role, CONF_DEFAULTS);
	assert_int_equal(c.files[1].role, CONF_SEED);
	assert_int_equal(c.files[2].role, CONF_PROJECT);
	p = xasprintf("%s/top/.opencode-sandbox.yaml", dir);
	assert_string_equal(c.files[2].path, p);
	free(p);
	conf_free(&c);

	/* A link as the project file, or as the .opencode directory: refused. */
	p = xasprintf("%s/top/proj/.opencode-sandbox.yaml", dir);
	assert_int_equal(symlink("/etc/hostname", p), 0);
	assert_int_equal(conf_discover(&c, &a, proj, &errs), -1);
	assert_non_null(strstr(buf_cstr(&errs), "must be a regular file"));
	unlink(p);
	free(p);
	conf_free(&c);
	buf_reset(&errs);
	p = xasprintf("%s/top/proj/.opencode", dir);
	cmd = xasprintf("rm -r %s", p);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	assert_int_equal(symlink("/etc", p), 0);
	assert_int_equal(conf_discover(&c, &a, proj, &errs), -1);
	assert_non_null(strstr(buf_cstr(&errs), "a symbolic link"));
	free(p);
	conf_free(&c);
	free(proj);
	buf_free(&errs);
	unsetenv("XDG_CONFIG_HOME");
}

static int
setup(void **state)
{
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char *p = xasprintf("rm -rf %s", dir);
	int rc = system(p);

	free(p);
	return rc == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli_layer),
	    cmocka_unit_test(test_discover),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
