/*
 * Unit tests for host/plan.c's serve ports: `opencode serve` and `web`
 * get a known port (4096 unless given) and listen on the container's
 * address unless a --hostname is given; other commands are untouched,
 * and a bad --port is an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"

static int
serve(const char *line, char *out, size_t n, int *port)
{
	struct strv in, res;
	char copy[256], *w, *save = NULL;
	size_t i, o = 0;
	int rc;

	memset(&in, 0, sizeof in);
	memset(&res, 0, sizeof res);
	snprintf(copy, sizeof copy, "%s", line);
	for (w = strtok_r(copy, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save))
		strv_add(&in, w);
	rc = plan_serve_ports(&in, &res, port);
	out[0] = '\0';
	for (i = 0; i < res.n; i++)
		o += (size_t)snprintf(out + o, n - o, "%s%s", i > 0 ? " " : "", res.v[i]);
	strv_free(&in);
	strv_free(&res);
	return rc;
}

static void
test_serve(void **state)
{
	char out[256];
	int port;

	assert_int_equal(serve("serve", out, sizeof out, &port), 0);
	assert_int_equal(port, 4096);
	assert_string_equal(out, "serve --port 4096 --hostname 0.0.0.0");
	assert_int_equal(serve("web --port 8080 --hostname 127.0.0.1", out, sizeof out, &port), 0);
	assert_int_equal(port, 8080);
	assert_string_equal(out, "web --port 8080 --hostname 127.0.0.1");
	assert_int_equal(serve("--log-level DEBUG serve --port=9000", out, sizeof out, &port), 0);
	assert_int_equal(port, 9000);
	assert_int_equal(serve("--model serve run x", out, sizeof out, &port), 0);
	assert_int_equal(port, 0);
	assert_string_equal(out, "--model serve run x");
	assert_int_equal(serve("run serve", out, sizeof out, &port), 0);
	assert_int_equal(port, 0);
	assert_int_equal(serve("serve --port 0", out, sizeof out, &port), 0);
	assert_int_equal(port, 4096);
	assert_int_equal(serve("serve --port 70000", out, sizeof out, &port), -1);
	assert_int_equal(serve("serve --port x1", out, sizeof out, &port), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_serve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
