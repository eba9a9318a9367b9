/*
 * Unit tests for proxy/control.c's request parser, the untrusted input of
 * egressd's control socket: the table tests/data/control.tsv (commands,
 * JSON that is not one object, explain's fields, header fields, bodies in
 * text and strict base64), and the bounds a table line cannot hold: a line
 * past the request limit, a body past 1 MiB, nesting past the JSON
 * parser's depth, and every field at its limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy.h"
#include "tsv.h"

static const char *const cmds[] = {"explain", "status", "metrics", "reload"};

static int
is_key(const char *kv, size_t klen, const char *key)
{
	return strlen(key) == klen && strncmp(kv, key, klen) == 0;
}

/* One "key=value" check of a parsed explain request. */
static void
check_field(const struct control_request *r, char *kv, const struct tsv *t)
{
	char *eq = strchr(kv, '=');
	size_t klen, vlen;
	const char *got;

	if (eq == NULL)
		fail_msg("control.tsv:%u: bad check \"%s\"", t->lineno, kv);
	klen = (size_t)(eq - kv);
	vlen = tsv_unescape(eq + 1);
	if (is_key(kv, klen, "target") || is_key(kv, klen, "method") ||
	    is_key(kv, klen, "content_type")) {
		got = kv[0] == 't' ? r->target : kv[0] == 'm' ? r->method : r->content_type;
		if (got == NULL || strcmp(got, eq + 1) != 0)
			fail_msg("control.tsv:%u: %.*s is \"%s\", want \"%s\"", t->lineno,
			         (int)klen, kv, got ? got : "(null)", eq + 1);
	} else if (is_key(kv, klen, "headers")) {
		if (r->nheaders != strtoul(eq + 1, NULL, 10))
			fail_msg("control.tsv:%u: %zu headers, want %s", t->lineno, r->nheaders,
			         eq + 1);
	} else if (is_key(kv, klen, "body_len")) {
		if (r->body_len != strtoul(eq + 1, NULL, 10))
			fail_msg("control.tsv:%u: body_len %zu, want %s", t->lineno, r->body_len,
			         eq + 1);
	} else if (is_key(kv, klen, "body")) {
		if (r->body == NULL || r->body_len != vlen || memcmp(r->body, eq + 1, vlen) != 0 ||
		    r->body[vlen] != '\0')
			fail_msg("control.tsv:%u: the body is not \"%s\"", t->lineno, eq + 1);
	} else if (is_key(kv, klen, "truncated")) {
		if (r->body_truncated != atoi(eq + 1))
			fail_msg("control.tsv:%u: body_truncated %d", t->lineno, r->body_truncated);
	} else
		fail_msg("control.tsv:%u: unknown check \"%s\"", t->lineno, kv);
}

static void
test_table(void **state)
{
	struct control_request r;
	struct tsv t;
	const char *err;
	char **f;
	size_t len;
	int i;

	tsv_open(&t, "control.tsv", 2, 9);
	while ((f = tsv_next(&t)) != NULL) {
		len = tsv_unescape(f[0]);
		err = control_request_parse(f[0], len, &r);
		if (strncmp(f[1], "ok ", 3) == 0) {
			if (err != NULL)
				fail_msg("control.tsv:%u: refused: %s", t.lineno, err);
			if (strcmp(cmds[r.cmd], f[1] + 3) != 0)
				fail_msg("control.tsv:%u: command %s, want %s", t.lineno,
				         cmds[r.cmd], f[1] + 3);
			for (i = 2; i < t.nf; i++)
				check_field(&r, f[i], &t);
		} else {
			if (strcmp(f[1], "error") != 0 || t.nf != 3)
				fail_msg("control.tsv:%u: bad result column", t.lineno);
			if (err == NULL)
				fail_msg("control.tsv:%u: accepted, want \"%s\"", t.lineno, f[2]);
			if (strstr(err, f[2]) == NULL)
				fail_msg("control.tsv:%u: \"%s\", want \"%s\"", t.lineno, err,
				         f[2]);
			/* Every refusal is one line of text a client can print. */
			assert_null(strchr(err, '\n'));
		}
		control_request_free(&r);
	}
	assert_true(t.rows >= 70);
}

/* An explain request with a body of n bytes of 'a', as text or base64 (AAAA = 3 NULs). */
static char *
body_request(size_t n, int b64, size_t *len)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, b64 ? "{\"cmd\":\"explain\",\"target\":\"x\",\"body_base64\":\""
	                 : "{\"cmd\":\"explain\",\"target\":\"x\",\"body\":\"");
	for (i = 0; i < n; i++)
		buf_addc(&b, b64 ? 'A' : 'a');
	buf_adds(&b, "\"}");
	*len = b.len;
	return buf_release(&b);
}

static void
test_body_limits(void **state)
{
	struct control_request r;
	size_t len;
	char *req;

	/* 1 MiB exactly is taken, one byte more is refused, as text and as base64. */
	req = body_request(CONTROL_MAX_BODY, 0, &len);
	assert_null(control_request_parse(req, len, &r));
	assert_int_equal(r.body_len, CONTROL_MAX_BODY);
	control_request_free(&r);
	free(req);
	req = body_request(CONTROL_MAX_BODY + 1, 0, &len);
	assert_non_null(strstr(control_request_parse(req, len, &r), "over 1 MiB"));
	control_request_free(&r);
	free(req);
	req = body_request((CONTROL_MAX_BODY + 2) / 3 * 4, 1, &len);
	assert_null(control_request_parse(req, len, &r));
	assert_true(r.body_len >= CONTROL_MAX_BODY && r.body_len < CONTROL_MAX_BODY + 3);
	assert_int_equal(r.body[0], 0);
	control_request_free(&r);
	free(req);
	req = body_request((CONTROL_MAX_BODY + 2) / 3 * 4 + 4, 1, &len);
	assert_non_null(strstr(control_request_parse(req, len, &r), "over 1 MiB"));
	control_request_free(&r);
	free(req);
}

static void
test_request_limit(void **state)
{
	struct control_request r;
	char *big;

	/* Past the line limit the bytes are not even handed to the JSON parser. */
	big = xmalloc(CONTROL_MAX_REQUEST + 1);
	memset(big, ' ', CONTROL_MAX_REQUEST + 1);
	memcpy(big, "{\"cmd\":\"status\"}", 16);
	assert_non_null(
	    strstr(control_request_parse(big, CONTROL_MAX_REQUEST + 1, &r), "the request is over"));
	control_request_free(&r);
	/* At the limit, trailing whitespace is JSON's. */
	assert_null(control_request_parse(big, CONTROL_MAX_REQUEST, &r));
	control_request_free(&r);
	free(big);
}

static void
test_nesting(void **state)
{
	struct control_request r;
	struct buf b;
	int i;

	/* Far deeper than the JSON parser goes: refused, without running out of stack. */
	buf_init(&b);
	buf_adds(&b, "{\"cmd\":\"status\",\"x\":");
	for (i = 0; i < 100000; i++)
		buf_addc(&b, '[');
	for (i = 0; i < 100000; i++)
		buf_addc(&b, ']');
	buf_addc(&b, '}');
	assert_non_null(strstr(control_request_parse(b.data, b.len, &r), "not JSON"));
	control_request_free(&r);
	buf_free(&b);
}

static void
test_field_limits(void **state)
{
	struct control_request r;
	struct buf b;
	int i;

	/* A target of 8192 bytes is taken, 8193 refused. */
	for (i = 0; i < 2; i++) {
		buf_init(&b);
		buf_adds(&b, "{\"cmd\":\"explain\",\"target\":\"");
		while (b.len < 27 + 8192 + (size_t)i)
			buf_addc(&b, 'a');
		buf_adds(&b, "\"}");
		if (i == 0)
			assert_null(control_request_parse(b.data, b.len, &r));
		else
			assert_non_null(control_request_parse(b.data, b.len, &r));
		control_request_free(&r);
		buf_free(&b);
	}
	/* 32 header fields are taken. */
	buf_init(&b);
	buf_adds(&b, "{\"cmd\":\"explain\",\"target\":\"x\",\"headers\":[");
	for (i = 0; i < CONTROL_MAX_HEADERS; i++)
		buf_printf(&b, "%s{\"name\":\"X-%d\",\"value\":\"v\"}", i ? "," : "", i);
	buf_adds(&b, "]}");
	assert_null(control_request_parse(b.data, b.len, &r));
	assert_int_equal(r.nheaders, CONTROL_MAX_HEADERS);
	assert_string_equal(r.header_names[31], "X-31");
	control_request_free(&r);
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),         cmocka_unit_test(test_body_limits),
	    cmocka_unit_test(test_request_limit), cmocka_unit_test(test_nesting),
	    cmocka_unit_test(test_field_limits),
	};

	log_init("test", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
