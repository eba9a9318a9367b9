/*
 * Unit tests for policy/addr.c: strict address and CIDR parsing, canonical
 * formatting, CIDR membership across IPv4-mapped forms, and the special
 * range table (tests/data/addr_special.tsv), metadata first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <cmocka.h>

#include "policy_int.h"
#include "tsv.h"

struct parse_case {
	const char *in;
	const char *want; /* canonical text, or the error when error is set */
	int error;
};

static const struct parse_case parse_cases[] = {
    {"127.0.0.1", "127.0.0.1", 0},
    {"0.0.0.0", "0.0.0.0", 0},
    {"255.255.255.255", "255.255.255.255", 0},
    {"10.0.0.10", "10.0.0.10", 0},
    {"::1", "::1", 0},
    {"0:0:0:0:0:0:0:1", "::1", 0},
    {"2001:DB8:0:0:1::1", "2001:db8::1:0:0:1", 0},
    {"::ffff:127.0.0.1", "::ffff:127.0.0.1", 0},
    {"fd00:ec2::254", "fd00:ec2::254", 0},
    {"", "empty address", 1},
    {"0177.0.0.1", "leading zero in IPv4 address", 1},
    {"127.0.0.01", "leading zero in IPv4 address", 1},
    {"00.0.0.0", "leading zero in IPv4 address", 1},
    {"127.1", "invalid IPv4 address", 1},
    {"2130706433", "invalid IPv4 address", 1},
    {"0x7f.0.0.1", "invalid IPv4 address", 1},
    {"256.0.0.1", "invalid IPv4 address", 1},
    {"1.2.3.4.", "invalid IPv4 address", 1},
    {"1.2.3.4.5", "invalid IPv4 address", 1},
    {"1..3.4", "invalid IPv4 address", 1},
    {" 1.2.3.4", "invalid IPv4 address", 1},
    {"1.2.3.4 ", "invalid IPv4 address", 1},
    {"99999999999.1.1.1", "invalid IPv4 address", 1},
    {"example.com", "invalid IPv4 address", 1},
    {"[::1]", "invalid IPv6 address", 1},
    {"fe80::1%eth0", "zone identifier not allowed", 1},
    {"1:2:3:4:5:6:7:8:9", "invalid IPv6 address", 1},
    {"::1::", "invalid IPv6 address", 1},
    {"::12345", "invalid IPv6 address", 1},
    {"0000:0000:0000:0000:0000:0000:0000:0000:0000", "invalid IPv6 address", 1},
};

static void
test_addr_parse(void **state)
{
	const struct parse_case *c;
	struct addr a;
	const char *error;
	char text[64];
	size_t i;

	for (i = 0; i < EG_NELEM(parse_cases); i++) {
		c = &parse_cases[i];
		error = addr_parse(c->in, &a);
		if (c->error) {
			if (error == NULL || strcmp(error, c->want) != 0)
				fail_msg("%s: got %s, want %s", c->in, error ? error : "success",
				         c->want);
			continue;
		}
		if (error != NULL)
			fail_msg("%s: %s", c->in, error);
		addr_format(&a, text, sizeof text);
		assert_string_equal(text, c->want);
	}
}

static void
test_addr_format_small(void **state)
{
	struct addr a;
	char text[8];

	assert_null(addr_parse("2001:db8::1", &a));
	addr_format(&a, text, sizeof text);
	assert_string_equal(text, "2001:db");
	addr_format(&a, text, 0);
	memset(&a, 0, sizeof a);
	addr_format(&a, text, sizeof text);
	assert_string_equal(text, "invalid");
}

/* IPv4 and IPv6 text as inet_ntop writes it, for addresses across the whole space. */
static void
test_addr_format_as_inet_ntop(void **state)
{
	static const uint8_t fixed[][4] = {
	    {0, 0, 0, 0}, {255, 255, 255, 255}, {127, 0, 0, 1}, {10, 0, 0, 10}, {1, 22, 203, 100},
	};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct addr a;
	char got[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];
	size_t i;
	int k;

	(void)state;
	for (i = 0; i < EG_NELEM(fixed) + 20000; i++) {
		memset(&a, 0, sizeof a);
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		a.af = i % 2 ? AF_INET6 : AF_INET;
		for (k = 0; k < 16; k++)
			a.a[k] = (uint8_t)(x >> (k % 8 * 8)) & (k % 3 ? 0xff : 0x0f);
		if (i < EG_NELEM(fixed)) {
			a.af = AF_INET;
			memcpy(a.a, fixed[i], 4);
		} else if (i % 10 == 1)
			memset(a.a, 0, 10); /* zero runs, and ::ffff:a.b.c.d forms below */
		if (i % 20 == 1)
			a.a[10] = a.a[11] = 0xff;
		assert_non_null(inet_ntop(a.af, a.a, want, sizeof want));
		addr_format(&a, got, sizeof got);
		assert_string_equal(got, want);
	}
	/* Cut to the room given, as for IPv6. */
	memset(&a, 0, sizeof a);
	a.af = AF_INET;
	memcpy(a.a, fixed[1], 4);
	addr_format(&a, got, 8);
	assert_string_equal(got, "255.255");
}

struct cidr_case {
	const char *in;
	const char *want; /* canonical text, or the error */
	int error;
};

static const struct cidr_case cidr_cases[] = {
    {"198.18.0.0/15", "198.18.0.0/15", 0},
    {"10.0.0.0/8", "10.0.0.0/8", 0},
    {"0.0.0.0/0", "0.0.0.0/0", 0},
    {"1.2.3.4", "1.2.3.4/32", 0},
    {"1.2.3.4/32", "1.2.3.4/32", 0},
    {"::1", "::1/128", 0},
    {"fd00::/8", "fd00::/8", 0},
    {"::/0", "::/0", 0},
    {"2001:DB8::/32", "2001:db8::/32", 0},
    {"::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104", 0},
    {"198.19.0.0/15", "host bits set", 1},
    {"10.0.0.1/8", "host bits set", 1},
    {"fd00::1/8", "host bits set", 1},
    {"1.2.3.4/33", "prefix length out of range", 1},
    {"::/129", "prefix length out of range", 1},
    {"1.2.3.4/99999999999999999999", "prefix length out of range", 1},
    {"1.2.3.0/", "invalid prefix length", 1},
    {"1.2.3.0/024", "invalid prefix length", 1},
    {"1.2.3.0/+24", "invalid prefix length", 1},
    {"1.2.3.0/24/24", "invalid prefix length", 1},
    {"1.2.3.0/ 24", "invalid prefix length", 1},
    {"/24", "empty address", 1},
    {"010.0.0.0/8", "leading zero in IPv4 address", 1},
    {"10.0.0/8", "invalid IPv4 address", 1},
    {"fe80::%eth0/64", "zone identifier not allowed", 1},
    {"0000:0000:0000:0000:0000:0000:0000:0000:0000:0000/64", "invalid address", 1},
};

static void
test_addr_cidr_parse(void **state)
{
	const struct cidr_case *c;
	struct cidr cidr;
	const char *error;
	char text[64];
	size_t i;

	for (i = 0; i < EG_NELEM(cidr_cases); i++) {
		c = &cidr_cases[i];
		error = addr_cidr_parse(c->in, &cidr);
		if (c->error) {
			if (error == NULL || strcmp(error, c->want) != 0)
				fail_msg("%s: got %s, want %s", c->in, error ? error : "success",
				         c->want);
			continue;
		}
		if (error != NULL)
			fail_msg("%s: %s", c->in, error);
		addr_cidr_format(&cidr, text, sizeof text);
		assert_string_equal(text, c->want);
	}
}

struct in_case {
	const char *addr;
	const char *cidr;
	int in;
};

static const struct in_case in_cases[] = {
    {"198.18.0.1", "198.18.0.0/15", 1},
    {"198.19.255.255", "198.18.0.0/15", 1},
    {"198.20.0.0", "198.18.0.0/15", 0},
    {"198.17.255.255", "198.18.0.0/15", 0},
    {"8.8.8.8", "0.0.0.0/0", 1},
    {"1.2.3.4", "1.2.3.4", 1},
    {"1.2.3.5", "1.2.3.4", 0},
    {"::ffff:10.1.2.3", "10.0.0.0/8", 1},
    {"::ffff:11.1.2.3", "10.0.0.0/8", 0},
    {"10.1.2.3", "::ffff:10.0.0.0/104", 1},
    {"::ffff:10.1.2.3", "::ffff:10.0.0.0/104", 1},
    {"10.1.2.3", "::ffff:0:0/96", 1},
    {"10.1.2.3", "::/0", 0},
    {"::a01:203", "10.0.0.0/8", 0}, /* IPv4-compatible is not mapped */
    {"10.1.2.3", "::/96", 0},
    {"::1", "0.0.0.0/0", 0},
    {"fd00::1", "fd00::/8", 1},
    {"fe00::1", "fd00::/8", 0},
    {"2001:db8::1", "2001:db8::/32", 1},
    {"2001:db9::1", "2001:db8::/32", 0},
    {"2001:db8::1", "::/0", 1},
    {"2001:db8::1", "2001:db8::1", 1},
    {"2001:db8::2", "2001:db8::1", 0},
};

static void
test_addr_in_cidr(void **state)
{
	const struct in_case *c;
	struct cidr cidr;
	struct addr a;
	size_t i;

	for (i = 0; i < EG_NELEM(in_cases); i++) {
		c = &in_cases[i];
		assert_null(addr_parse(c->addr, &a));
		assert_null(addr_cidr_parse(c->cidr, &cidr));
		if (addr_in_cidr(&a, &cidr) != c->in)
			fail_msg("%s in %s: want %d", c->addr, c->cidr, c->in);
	}
}

static void
test_addr_unmap(void **state)
{
	struct addr a, u;
	char text[64];

	assert_null(addr_parse("::ffff:192.0.2.1", &a));
	addr_unmap(&a, &u);
	assert_int_equal(u.af, AF_INET);
	addr_format(&u, text, sizeof text);
	assert_string_equal(text, "192.0.2.1");
	addr_unmap(&a, &a); /* in place */
	assert_int_equal(a.af, AF_INET);
	assert_memory_equal(a.a, "\xc0\0\2\1", 4);

	assert_null(addr_parse("::192.0.2.1", &a));
	addr_unmap(&a, &u);
	assert_int_equal(u.af, AF_INET6);
	assert_memory_equal(&u, &a, sizeof a);
	assert_null(addr_parse("192.0.2.1", &a));
	addr_unmap(&a, &u);
	assert_memory_equal(&u, &a, sizeof a);
}

static void
test_addr_special_table(void **state)
{
	char **f, *text, *want;
	unsigned failed = 0;
	const char *got;
	struct addr a;
	struct tsv t;

	tsv_open(&t, "addr_special.tsv", 2, 2);
	while ((f = tsv_next(&t)) != NULL) {
		text = f[0];
		want = f[1];
		assert_null(addr_parse(text, &a));
		got = addr_special(&a);
		if (strcmp(got != NULL ? got : "-", want) != 0 ||
		    addr_is_metadata(&a) != (strcmp(want, "metadata") == 0)) {
			fprintf(stderr, "addr_special.tsv:%u: %s: got %s, want %s\n", t.lineno,
			        text, got != NULL ? got : "-", want);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	assert_true(t.rows >= 60);
}

/* An address of neither family is never taken for a reachable one. */
static void
test_addr_special_invalid(void **state)
{
	struct cidr cidr;
	struct addr a;

	memset(&a, 0, sizeof a);
	assert_non_null(addr_special(&a));
	assert_false(addr_is_metadata(&a));
	assert_null(addr_cidr_parse("0.0.0.0/0", &cidr));
	assert_false(addr_in_cidr(&a, &cidr));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addr_parse),
	    cmocka_unit_test(test_addr_format_small),
	    cmocka_unit_test(test_addr_format_as_inet_ntop),
	    cmocka_unit_test(test_addr_cidr_parse),
	    cmocka_unit_test(test_addr_in_cidr),
	    cmocka_unit_test(test_addr_unmap),
	    cmocka_unit_test(test_addr_special_table),
	    cmocka_unit_test(test_addr_special_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
