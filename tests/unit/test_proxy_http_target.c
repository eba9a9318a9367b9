/*
 * Unit tests for proxy/http/http_target.c: request targets in each form, split
 * into scheme, authority, host, port and path, and the ones refused
 * (userinfo, bad ports and hosts, fragments, other schemes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

struct target_case {
	const char *method;
	const char *target;
	int ok;
	enum http_target_form form;
	const char *scheme, *authority, *host;
	uint16_t port;
	const char *path;
};

static const struct target_case target_cases[] = {
    {"GET", "/a?b", 1, HTTP_TARGET_ORIGIN, NULL, NULL, NULL, 0, "/a?b"},
    {"GET", "http://Example.COM/x", 1, HTTP_TARGET_ABSOLUTE, "http", "Example.COM", "Example.COM",
     80, "/x"},
    {"GET", "HTTPS://a.b:8443", 1, HTTP_TARGET_ABSOLUTE, "https", "a.b:8443", "a.b", 8443, "/"},
    {"GET", "https://a.b?q=1", 1, HTTP_TARGET_ABSOLUTE, "https", "a.b", "a.b", 443, "/?q=1"},
    {"GET", "http://[::1]:8080/p", 1, HTTP_TARGET_ABSOLUTE, "http", "[::1]:8080", "[::1]", 8080,
     "/p"},
    {"CONNECT", "a.b:443", 1, HTTP_TARGET_AUTHORITY, NULL, "a.b:443", "a.b", 443, NULL},
    {"CONNECT", "[2001:db8::1]:22", 1, HTTP_TARGET_AUTHORITY, NULL, "[2001:db8::1]:22",
     "[2001:db8::1]", 22, NULL},
    {"OPTIONS", "*", 1, HTTP_TARGET_ASTERISK, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "a.b", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "a.b:", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "a.b:+443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "a.b:0443", 1, HTTP_TARGET_AUTHORITY, NULL, "a.b:0443", "a.b", 443, NULL},
    {"CONNECT", "a.b:443443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", ":443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "[::1:443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "[]:443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "[fe80::1%25eth0]:443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"CONNECT", "u@a.b:443", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "http://u@a.b/", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "http://a.b:/", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "http:///x", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "http:/a.b/", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "ws://a.b/", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "a.b:80", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "*", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "/a b", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "/a#frag", 0, 0, NULL, NULL, NULL, 0, NULL},
    {"GET", "http://a.b]/", 0, 0, NULL, NULL, NULL, 0, NULL},
};

static void
check_str(const char *got, const char *want)
{
	if (want == NULL)
		assert_null(got);
	else
		assert_string_equal(got, want);
}

static void
test_targets(void **state)
{
	const struct target_case *c;
	struct http_target t;
	const char *error;
	size_t i;

	for (i = 0; i < EG_NELEM(target_cases); i++) {
		c = &target_cases[i];
		error =
		    http_target_parse(http_method_id(c->method, strlen(c->method)), c->target, &t);
		if ((error == NULL) != c->ok)
			fail_msg("%s %s: %s", c->method, c->target, error ? error : "accepted");
		if (error != NULL) {
			assert_null(t.host);
			continue;
		}
		assert_int_equal(t.form, c->form);
		check_str(t.scheme, c->scheme);
		check_str(t.authority, c->authority);
		check_str(t.host, c->host);
		check_str(t.path, c->path);
		assert_int_equal(t.port, c->port);
		http_target_free(&t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
