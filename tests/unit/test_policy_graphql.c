/*
 * Tests for the GraphQL classifier. Most cases come from
 * tests/data/graphql.tsv (documents, bodies and URL queries with the
 * expected operation); generated inputs (depth bombs, token floods, long
 * names) and the small API contracts are tested here directly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy_int.h"
#include "tsv.h"

static enum gql_op
test_op_parse(const char *s)
{
	static const enum gql_op ops[] = {GQL_NONE, GQL_QUERY, GQL_MUTATION, GQL_SUBSCRIPTION,
	                                  GQL_UNKNOWN};
	size_t i;

	for (i = 0; i < EG_NELEM(ops); i++) {
		if (strcmp(graphql_op_name(ops[i]), s) == 0)
			return ops[i];
	}
	fail_msg("bad expected op '%s'", s);
	return GQL_UNKNOWN;
}

static char *
test_read_file(const char *name, size_t *len)
{
	char path[1024];
	struct buf b;
	char chunk[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "%s/graphql/%s", TEST_DATA_DIR, name);
	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("cannot open %s", path);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	buf_add(&b, "", 0);
	*len = b.len;
	return buf_release(&b);
}

/* A TSV field: "-" is NULL, "@name" a data file, else \t \n \r \\ \xHH escapes. */
static char *
test_field(const char *s, size_t *len)
{
	struct buf b;
	unsigned v;

	if (strcmp(s, "-") == 0) {
		*len = 0;
		return NULL;
	}
	if (s[0] == '@')
		return test_read_file(s + 1, len);
	buf_init(&b);
	buf_add(&b, "", 0);
	for (; *s != '\0'; s++) {
		if (*s != '\\' || s[1] == '\0') {
			buf_addc(&b, *s);
			continue;
		}
		switch (*++s) {
		case 't':
			buf_addc(&b, '\t');
			break;
		case 'n':
			buf_addc(&b, '\n');
			break;
		case 'r':
			buf_addc(&b, '\r');
			break;
		case 'x':
			if (sscanf(s + 1, "%2x", &v) != 1)
				fail_msg("bad \\x escape in '%s'", s);
			buf_addc(&b, (char)v);
			s += 2;
			break;
		default:
			buf_addc(&b, *s);
			break;
		}
	}
	*len = b.len;
	return buf_release(&b);
}

/* The "only" column: the pure flag, and why a request is not pure. */
static void
test_only(unsigned lineno, const struct gql_result *res, const char *want)
{
	if (strcmp(want, "-") == 0)
		return;
	if (strcmp(want, "yes") == 0) {
		if (!res->pure || res->impure != NULL)
			fail_msg("graphql.tsv:%u: not GraphQL only (%s), want only", lineno,
			         res->impure ? res->impure : "no reason");
		return;
	}
	if (res->pure)
		fail_msg("graphql.tsv:%u: GraphQL only, want not (%s)", lineno, want);
	if (res->op != GQL_NONE && res->impure == NULL)
		fail_msg("graphql.tsv:%u: not GraphQL only, without a reason", lineno);
	if (strcmp(want, "no") != 0 && (res->impure == NULL || strstr(res->impure, want) == NULL))
		fail_msg("graphql.tsv:%u: why not only: '%s', want '%s'", lineno,
		         res->impure ? res->impure : "(null)", want);
}

static void
test_table(void **state)
{
	char **f, *qs, *body, *ct, *opname;
	size_t qslen, bodylen, ctlen, oplen;
	struct gql_result res;
	unsigned lineno;
	enum gql_op want, got;
	struct tsv t;

	tsv_open(&t, "graphql.tsv", 9, 9);
	while ((f = tsv_next(&t)) != NULL) {
		lineno = t.lineno;
		qs = test_field(f[1], &qslen);
		body = test_field(f[2], &bodylen);
		ct = test_field(f[3], &ctlen);
		opname = test_field(f[4], &oplen);
		want = test_op_parse(f[5]);
		memset(&res, 0xa5, sizeof res);
		if (strcmp(f[0], "doc") == 0)
			got = graphql_classify_document(body, bodylen, opname, &res);
		else if (strcmp(f[0], "req") == 0 || strcmp(f[0], "trunc") == 0 ||
		         strcmp(f[0], "post") == 0)
			got = graphql_classify_request(
			    qs != NULL && strcmp(f[0], "post") != 0 ? "GET" : "POST", ct, body,
			    bodylen, strcmp(f[0], "trunc") == 0, qs, &res);
		else
			fail_msg("graphql.tsv:%u: bad mode '%s'", lineno, f[0]);
		if (got != want || res.op != got)
			fail_msg("graphql.tsv:%u: got %s (%s), want %s", lineno,
			         graphql_op_name(got), res.reason, f[5]);
		assert_non_null(res.reason);
		if (strcmp(res.name, strcmp(f[6], "-") == 0 ? "" : f[6]) != 0)
			fail_msg("graphql.tsv:%u: name '%s', want '%s'", lineno, res.name, f[6]);
		if (strcmp(f[7], "-") != 0 && strstr(res.reason, f[7]) == NULL)
			fail_msg("graphql.tsv:%u: reason '%s', want '%s'", lineno, res.reason,
			         f[7]);
		test_only(lineno, &res, f[8]);
		free(qs);
		free(body);
		free(ct);
		free(opname);
	}
	print_message("%u table cases\n", t.rows);
	assert_true(t.rows >= 60);
}

static char *
test_repeat(const char *head, const char *unit, size_t count, const char *tail)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_adds(&b, head);
	for (i = 0; i < count; i++)
		buf_adds(&b, unit);
	buf_adds(&b, tail);
	return buf_release(&b);
}

static enum gql_op
test_classify_nested(const char *open, const char *close, const char *head, size_t depth,
                     const char *tail, struct gql_result *res)
{
	struct buf b;
	enum gql_op op;
	size_t i;

	buf_init(&b);
	buf_adds(&b, head);
	for (i = 0; i < depth; i++)
		buf_adds(&b, open);
	buf_adds(&b, "x");
	for (i = 0; i < depth; i++)
		buf_adds(&b, close);
	buf_adds(&b, tail);
	op = graphql_classify_document(b.data, b.len, NULL, res);
	buf_free(&b);
	return op;
}

static void
test_depth(void **state)
{
	struct gql_result res;

	/* 128 levels of selection sets parse; one more does not. */
	assert_int_equal(test_classify_nested("a{", "}", "query Deep {", 127, "}", &res),
	                 GQL_QUERY);
	assert_string_equal(res.name, "Deep");
	assert_int_equal(test_classify_nested("a{", "}", "query {", 128, "}", &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "too deep");
	assert_int_equal(test_classify_nested("a{", "}", "{", 100000, "}", &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "too deep");
	/* Nested list values and list types are bounded the same way. */
	assert_int_equal(test_classify_nested("[", "]", "{a(b:", 100, ")}", &res), GQL_QUERY);
	assert_int_equal(test_classify_nested("[", "]", "{a(b:", 100000, ")}", &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "too deep");
	assert_int_equal(test_classify_nested("{a:", "}", "{a(b:", 100000, ")}", &res),
	                 GQL_UNKNOWN);
	assert_string_equal(res.reason, "too deep");
	assert_int_equal(test_classify_nested("[", "]", "query($v:", 100000, "){a}", &res),
	                 GQL_UNKNOWN);
	assert_string_equal(res.reason, "too deep");
	/* Unbalanced: only opening braces. */
	assert_int_equal(test_classify_nested("a{", "", "{", 50, "}", &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "parse error: unexpected end of document");
}

static void
test_tokens(void **state)
{
	struct gql_result res;
	char *doc;

	doc = test_repeat("{", " a", 50000, " }");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), NULL, &res), GQL_QUERY);
	free(doc);
	doc = test_repeat("{", " a", 200000, " }");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), NULL, &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "too many tokens");
	free(doc);
	/* Many operations: the duplicate check must not be quadratic or wrong. */
	doc = test_repeat("query Z{a}", " mutation M{a} query Q{a}", 1, "");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), "Z", &res), GQL_QUERY);
	free(doc);
	doc = test_repeat("", "query A{a} ", 20000, "");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), "A", &res), GQL_UNKNOWN);
	assert_string_equal(res.reason, "duplicate operation name");
	free(doc);
	/* Ignored tokens do not count: 1 MiB of commas is fine. */
	doc = test_repeat("{", ",,,,,,,,,,,,,,,,", 65536, "a}");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), NULL, &res), GQL_QUERY);
	free(doc);
}

static void
test_names(void **state)
{
	struct gql_result res;
	char *doc;
	size_t i;

	doc = test_repeat("mutation ", "N", 500, " { a }");
	assert_int_equal(graphql_classify_document(doc, strlen(doc), NULL, &res), GQL_MUTATION);
	assert_int_equal(strlen(res.name), sizeof res.name - 1);
	for (i = 0; i < sizeof res.name - 1; i++)
		assert_int_equal(res.name[i], 'N');
	free(doc);
	assert_string_equal(graphql_op_name(GQL_NONE), "none");
	assert_string_equal(graphql_op_name(GQL_QUERY), "query");
	assert_string_equal(graphql_op_name(GQL_MUTATION), "mutation");
	assert_string_equal(graphql_op_name(GQL_SUBSCRIPTION), "subscription");
	assert_string_equal(graphql_op_name(GQL_UNKNOWN), "unknown");
	/* A NULL document is an empty one. */
	assert_int_equal(graphql_classify_document(NULL, 0, NULL, &res), GQL_UNKNOWN);
}

static void
test_request(void **state)
{
	static const char big[] = "{\"query\":\"{ a }\"}";
	struct gql_result res;
	char *body;

	/* Embedded NUL bytes: in the document, in operationName, in the URL. */
	assert_int_equal(graphql_classify_document("{a}\0", 4, NULL, &res), GQL_UNKNOWN);
	assert_int_equal(graphql_classify_request("GET", NULL, NULL, 0, 0,
	                                          "query=query+A{a}+query+B{b}&operationName=A%00B",
	                                          &res),
	                 GQL_UNKNOWN);
	assert_int_equal(graphql_classify_request("POST", "application/json", big, sizeof big - 1,
	                                          0, NULL, &res),
	                 GQL_QUERY);
	/* The same body cut by the proxy's buffer limit. */
	assert_int_equal(
	    graphql_classify_request("POST", "application/json", big, 5, 1, NULL, &res),
	    GQL_UNKNOWN);
	assert_string_equal(res.reason, "body too large to classify");
	assert_int_equal(
	    graphql_classify_request("POST", "application/json", NULL, 0, 1, NULL, &res),
	    GQL_UNKNOWN);
	/* A large batch of queries, then the same with one mutation at the end. */
	body = test_repeat("[", "{\"query\":\"query Q{a}\"},", 5000, "{\"query\":\"{b}\"}]");
	assert_int_equal(
	    graphql_classify_request("POST", "application/json", body, strlen(body), 0, NULL, &res),
	    GQL_QUERY);
	assert_string_equal(res.name, "Q");
	free(body);
	body = test_repeat("[", "{\"query\":\"{a}\"},", 5000, "{\"query\":\"mutation M{b}\"}]");
	assert_int_equal(
	    graphql_classify_request("POST", "application/json", body, strlen(body), 0, NULL, &res),
	    GQL_MUTATION);
	assert_string_equal(res.name, "M");
	free(body);
	/* Deep JSON is bounded by jansson, and still not waved through. */
	body = test_repeat("{\"query\":\"{a}\",\"x\":", "[", 100000, "");
	assert_int_equal(
	    graphql_classify_request("POST", "application/json", body, strlen(body), 0, NULL, &res),
	    GQL_UNKNOWN);
	free(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),   cmocka_unit_test(test_depth),
	    cmocka_unit_test(test_tokens),  cmocka_unit_test(test_names),
	    cmocka_unit_test(test_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
