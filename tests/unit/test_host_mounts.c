/*
 * Unit tests for host/mounts.c's path safety (seed 003 §16.1): the
 * project resolved through links, refused when it is "/", the home
 * directory, inside ~/.ssh, not a directory, or unnamed by a mount; a
 * missing project named with the absolute path it was taken to mean; and
 * sources that are sockets or runtime control sockets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static char home[] = "/tmp/test-host-mounts.XXXXXX";

static void
test_project(void **state)
{
	char out[PATH_MAX], *p, *want;
	const char *why;

	assert_non_null(
	    strstr(mounts_check_project("/", out, sizeof out), "is the root directory"));
	assert_non_null(
	    strstr(mounts_check_project(home, out, sizeof out), "is your home directory"));
	/* A directory above the home would mount it whole. */
	assert_non_null(
	    strstr(mounts_check_project("/tmp", out, sizeof out), "holds your home directory"));
	p = xasprintf("%s/proj", home);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_null(mounts_check_project(p, out, sizeof out));
	assert_string_equal(out, p);
	free(p);
	/* A link to the home directory is the home directory. */
	p = xasprintf("%s/proj/up", home);
	assert_int_equal(symlink(home, p), 0);
	assert_non_null(strstr(mounts_check_project(p, out, sizeof out), "is your home directory"));
	free(p);
	p = xasprintf("%s/.ssh/keys", home);
	assert_int_equal(host_mkdirs(p, 0700), 0);
	assert_non_null(strstr(mounts_check_project(p, out, sizeof out), "~/.ssh"));
	free(p);
	p = xasprintf("%s/a,b", home);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_non_null(strstr(mounts_check_project(p, out, sizeof out), "','"));
	free(p);
	assert_int_equal(chdir(home), 0);
	why = mounts_check_project("missing", out, sizeof out);
	want = xasprintf("project missing does not exist (%s/missing)", home);
	assert_string_equal(why, want);
	free(want);
	p = xasprintf("%s/file", home);
	assert_int_equal(host_write_file(p, "x", 1, 0644), 0);
	assert_non_null(strstr(mounts_check_project(p, out, sizeof out), "is not a directory"));
	free(p);
}

static void
test_sources(void **state)
{
	struct sockaddr_un sa;
	char *p;
	int s;

	p = xasprintf("%s/sock", home);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_non_null(strstr(mounts_check_source(p, 1), "socket"));
	close(s);
	free(p);
	p = xasprintf("%s/file", home);
	assert_null(mounts_check_source(p, 1));
	assert_non_null(mounts_check_source(p, 0));
	free(p);
	assert_non_null(mounts_check_source("/no/such/path", 1));
}

static int
setup(void **state)
{
	if (mkdtemp(home) == NULL)
		return -1;
	setenv("HOME", home, 1);
	return 0;
}

static int
teardown(void **state)
{
	char *p = xasprintf("rm -rf %s", home);
	int rc = system(p);

	free(p);
	return rc == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_project),
	    cmocka_unit_test(test_sources),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
