/*
 * Unit tests for image/nft.c: the ruleset each mode generates (what strict
 * lets out, redirects and drops; that off lets no uid out; that practical
 * has no table) and the read-back comparison, which must notice any rule
 * that differs, is missing or was added, while ignoring counter values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "init.h"

static const struct nft_rules strict = {
    .mode = MODE_STRICT, .egress_uid = 997, .transparent_port = 18081, .dns_port = 53};

static char *
build(const struct nft_rules *r)
{
	struct buf b;

	buf_init(&b);
	nft_rules_build(r, &b);
	if (b.data == NULL)
		buf_adds(&b, "");
	return buf_release(&b);
}

static void
test_strict_text(void **state)
{
	char *t = build(&strict);

	assert_non_null(strstr(t, "table inet opencode_sandbox {\n"));
	assert_non_null(strstr(t, "type nat hook output priority -100; policy accept;"));
	assert_non_null(strstr(t, "type filter hook output priority 0; policy drop;"));
	assert_non_null(strstr(t, "meta skuid 997 accept"));
	assert_non_null(strstr(t, "udp dport 53 redirect to :53"));
	assert_non_null(strstr(t, "tcp dport 53 redirect to :53"));
	assert_non_null(strstr(t, "meta l4proto tcp redirect to :18081"));
	/* DNS over TLS must not reach the transparent listener: it is dropped. */
	assert_true(strstr(t, "tcp dport 853 accept") < strstr(t, "meta l4proto tcp redirect"));
	assert_true(strstr(t, "tcp dport 53 redirect") < strstr(t, "meta l4proto tcp redirect"));
	/* Loopback and egressd come before every redirect. */
	assert_true(strstr(t, "oif \"lo\" accept") < strstr(t, "udp dport 53"));
	assert_true(strstr(t, "meta skuid 997") < strstr(t, "udp dport 53"));
	assert_null(strstr(t, "udp dport 443"));
	/* Dropped packets go to egressd's NFLOG group first, rate-limited. */
	assert_non_null(strstr(t, "meta skuid >= 0 limit rate 20/second burst 50 packets log "
	                          "prefix \"strict-drop\" group 7\n"));
	assert_true(strstr(t, "log prefix") < strstr(t, "drop comment"));
	assert_true(strstr(t, "meta skuid 997 accept\n\t\tip daddr") < strstr(t, "log prefix"));
	free(t);
}

static void
test_off_text(void **state)
{
	struct nft_rules r = strict;
	char *t;

	r.mode = MODE_OFF;
	t = build(&r);
	assert_non_null(strstr(t, "policy drop;"));
	assert_non_null(strstr(t, "oif \"lo\" accept"));
	assert_null(strstr(t, "skuid 997")); /* no uid may leave */
	assert_null(strstr(t, "skuid 0 "));
	assert_null(strstr(t, "redirect")); /* nothing is served from outside */
	assert_null(strstr(t, "nat"));
	assert_non_null(strstr(t, "log prefix \"off-drop\" group 7\n"));
	assert_true(strstr(t, "log prefix") < strstr(t, "drop comment"));
	free(t);
}

/*
 * A port the payload serves the host on: only the replies of connections
 * the host opened may leave from it, in strict and off alike, before the
 * log-and-drop rules; without one, no such rule.
 */
static void
test_serve_port(void **state)
{
	static const enum policy_mode modes[] = {MODE_STRICT, MODE_OFF};
	struct nft_rules r = strict;
	size_t i;
	char *t;

	t = build(&r);
	assert_null(strstr(t, "sport"));
	free(t);
	r.serve_ports[0] = 4096;
	r.nserve = 1;
	for (i = 0; i < EG_NELEM(modes); i++) {
		r.mode = modes[i];
		t = build(&r);
		assert_non_null(strstr(t, "\t\ttcp sport 4096 ct state established accept\n"));
		assert_true(strstr(t, "tcp sport 4096") < strstr(t, "log prefix"));
		assert_true(strstr(t, "tcp sport 4096") > strstr(t, "filter_output"));
		assert_null(nft_rules_compare(&r, t));
		free(t);
	}
	/* The read-back notices the rule missing. */
	r.mode = MODE_STRICT;
	t = build(&strict);
	assert_non_null(nft_rules_compare(&r, t));
	free(t);
}

static void
test_practical_text(void **state)
{
	struct nft_rules r = strict;
	char *t;

	r.mode = MODE_PRACTICAL;
	t = build(&r);
	assert_string_equal(t, "");
	free(t);
}

static void
test_compare(void **state)
{
	struct nft_rules other = strict;
	char *t = build(&strict), *c;
	const char *why;
	struct buf b;

	/* Its own text, and the listing with live counters and other spacing. */
	assert_null(nft_rules_compare(&strict, t));
	buf_init(&b);
	for (c = t; *c != '\0'; c++) {
		if (strncmp(c, "counter packets 0 bytes 0", 25) == 0) {
			buf_adds(&b, "counter packets 12 bytes 3456");
			c += 24;
		} else if (*c == '\t')
			buf_adds(&b, "    ");
		else
			buf_addc(&b, *c);
	}
	buf_adds(&b, "\n\n");
	assert_null(nft_rules_compare(&strict, buf_cstr(&b)));
	buf_free(&b);

	/* Another egressd uid, another port, a missing or an extra rule: caught. */
	other.egress_uid = 0;
	assert_non_null(nft_rules_compare(&other, t));
	other = strict;
	other.transparent_port = 18082;
	assert_non_null(nft_rules_compare(&other, t));
	why = nft_rules_compare(&strict, "table inet opencode_sandbox {\n}\n");
	assert_non_null(why);
	assert_non_null(strstr(why, "expected"));
	c = xasprintf("%s\ntable inet x {\n}\n", t);
	assert_non_null(nft_rules_compare(&strict, c));
	free(c);
	assert_non_null(nft_rules_compare(&strict, ""));
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_strict_text), cmocka_unit_test(test_off_text),
	    cmocka_unit_test(test_serve_port),  cmocka_unit_test(test_practical_text),
	    cmocka_unit_test(test_compare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
