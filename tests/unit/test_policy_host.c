/*
 * Unit tests for policy/host.c: every case of tests/data/host.tsv (the
 * normalised name, the address a numeric host really is, or why the host
 * is refused), and the name checker used on list patterns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_int.h"
#include "tsv.h"

static int
check_case(unsigned lineno, char *input, const char *result, const char *want)
{
	struct host h;
	const char *error;
	char *copy;
	size_t len;
	int ok;

	len = tsv_unescape(input);
	/* An exact-size heap copy: ASan catches any read past the length. */
	copy = xmalloc(len);
	memcpy(copy, input, len);
	error = host_parse(copy, len, &h);
	free(copy);
	if (strcmp(result, "error") == 0)
		ok = error != NULL && strcmp(error, want) == 0 && h.name[0] == '\0';
	else
		ok = error == NULL && strcmp(h.name, want) == 0 &&
		     h.kind == (strcmp(result, "addr") == 0 ? HOST_ADDR : HOST_NAME);
	if (!ok)
		fprintf(stderr, "host.tsv:%u: got %s %s, want %s %s\n", lineno,
		        error != NULL ? "error" : (h.kind == HOST_ADDR ? "addr" : "name"),
		        error != NULL ? error : h.name, result, want);
	return ok ? 0 : -1;
}

static void
test_host_table(void **state)
{
	unsigned failed = 0;
	struct tsv t;
	char **f;

	tsv_open(&t, "host.tsv", 3, 3);
	while ((f = tsv_next(&t)) != NULL) {
		if (check_case(t.lineno, f[0], f[1], f[2]) == -1)
			failed++;
	}
	assert_int_equal(failed, 0);
	assert_true(t.rows >= 40);
}

/* The address a numeric host stands for, not only its text. */
static void
test_host_addr_value(void **state)
{
	struct host h;

	assert_null(host_parse("0x7f.1", 6, &h));
	assert_int_equal(h.kind, HOST_ADDR);
	assert_int_equal(h.addr.af, AF_INET);
	assert_memory_equal(h.addr.a, "\x7f\0\0\1", 4);
	assert_null(host_parse("[::1]", 5, &h));
	assert_int_equal(h.addr.af, AF_INET6);
	assert_memory_equal(h.addr.a, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16);
	assert_null(host_parse("example.com", 11, &h));
	assert_int_equal(h.kind, HOST_NAME);
	assert_int_equal(h.addr.af, 0);
}

/* The length argument rules: bytes past it are never read. */
static void
test_host_length(void **state)
{
	struct host h;
	char big[2000];

	assert_null(host_parse("example.com.evil", 11, &h));
	assert_string_equal(h.name, "example.com");
	assert_string_equal(host_parse("example.com", 0, &h), "empty host");
	memset(big, 'a', sizeof big);
	assert_string_equal(host_parse(big, sizeof big, &h), "host too long");
	assert_string_equal(host_parse(big, 64, &h), "label too long");
	assert_null(host_parse(big, 63, &h));
}

static void
test_host_name_check(void **state)
{
	char name[300];

	assert_null(host_name_check("example.com", 11));
	assert_null(host_name_check("_sip._tcp.example.com", 21));
	assert_null(host_name_check("xn--bcher-kva.de", 16));
	assert_string_equal(host_name_check("", 0), "empty host");
	assert_string_equal(host_name_check("Example.com", 11), "invalid character in host");
	assert_string_equal(host_name_check("example.com.", 12), "empty label");
	assert_string_equal(host_name_check(".com", 4), "empty label");
	assert_string_equal(host_name_check("a..b", 4), "empty label");
	assert_string_equal(host_name_check("*.example.com", 13), "invalid character in host");
	assert_string_equal(host_name_check("a b", 3), "invalid character in host");
	assert_string_equal(host_name_check("a\0b", 3), "invalid character in host");
	assert_string_equal(host_name_check("b\xc3\xbc"
	                                    "cher.de",
	                                    10),
	                    "invalid character in host");
	memset(name, 'a', sizeof name);
	assert_null(host_name_check(name, 63));
	assert_string_equal(host_name_check(name, 64), "label too long");
	assert_string_equal(host_name_check(name, 254), "host too long");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_table),
	    cmocka_unit_test(test_host_addr_value),
	    cmocka_unit_test(test_host_length),
	    cmocka_unit_test(test_host_name_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
