/*
 * Tests for policy/graphql_ws.c, the GraphQL-over-WebSocket message
 * classifier: the cases are in tests/data/graphql_ws.tsv (each subprotocol's
 * client messages, operations and their classes, and the shapes, types and
 * JSON that are refused); the subprotocol names and an operation name too
 * long to keep are tested here.
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

static enum gql_ws_kind
test_kind_parse(const char *s)
{
	if (strcmp(s, "invalid") == 0)
		return GQL_WS_INVALID;
	if (strcmp(s, "control") == 0)
		return GQL_WS_CONTROL;
	if (strcmp(s, "operation") == 0)
		return GQL_WS_OPERATION;
	fail_msg("bad kind '%s'", s);
	return GQL_WS_INVALID;
}

static void
test_table(void **state)
{
	char **f;
	unsigned lineno;
	enum gql_ws_proto proto;
	enum gql_ws_kind kind;
	struct gql_ws_msg m;
	size_t len;
	struct tsv t;

	(void)state;
	tsv_open(&t, "graphql_ws.tsv", 6, 6);
	while ((f = tsv_next(&t)) != NULL) {
		lineno = t.lineno;
		proto = strcmp(f[0], "legacy") == 0 ? GQL_WS_LEGACY : GQL_WS_TRANSPORT;
		len = tsv_unescape(f[1]);
		memset(&m, 0xa5, sizeof m);
		kind = graphql_ws_classify(proto, f[1], len, &m);
		if (kind != test_kind_parse(f[2]) || m.kind != kind)
			fail_msg("graphql_ws.tsv:%u: got kind %d (%s), want %s", lineno, kind,
			         m.reason, f[2]);
		if (strcmp(graphql_op_name(m.gql.op), f[3]) != 0)
			fail_msg("graphql_ws.tsv:%u: got %s (%s), want %s", lineno,
			         graphql_op_name(m.gql.op), m.gql.reason, f[3]);
		if (strcmp(m.gql.name, strcmp(f[4], "-") == 0 ? "" : f[4]) != 0)
			fail_msg("graphql_ws.tsv:%u: name '%s', want '%s'", lineno, m.gql.name,
			         f[4]);
		assert_non_null(m.reason);
		if (strcmp(f[5], "-") != 0 && strstr(m.reason, f[5]) == NULL)
			fail_msg("graphql_ws.tsv:%u: reason '%s', want '%s'", lineno, m.reason,
			         f[5]);
		if (kind != GQL_WS_INVALID && m.type == NULL)
			fail_msg("graphql_ws.tsv:%u: no message type", lineno);
	}
	print_message("%u table cases\n", t.rows);
	assert_true(t.rows >= 60);
}

static void
test_proto(void **state)
{
	enum gql_ws_proto p;

	(void)state;
	assert_int_equal(graphql_ws_proto("graphql-transport-ws", 20, &p), 0);
	assert_int_equal(p, GQL_WS_TRANSPORT);
	assert_string_equal(graphql_ws_proto_name(p), "graphql-transport-ws");
	assert_int_equal(graphql_ws_proto("graphql-ws", 10, &p), 0);
	assert_int_equal(p, GQL_WS_LEGACY);
	assert_string_equal(graphql_ws_proto_name(p), "graphql-ws");
	/* Names compare exactly (RFC 6455 §4.1). */
	assert_int_equal(graphql_ws_proto("GraphQL-WS", 10, &p), -1);
	assert_int_equal(graphql_ws_proto("graphql-ws ", 11, &p), -1);
	assert_int_equal(graphql_ws_proto("graphql-ws, chat", 16, &p), -1);
	assert_int_equal(graphql_ws_proto("graphql-w", 9, &p), -1);
	assert_int_equal(graphql_ws_proto("", 0, &p), -1);
}

/* A long operation name is cut to what gql_result keeps; the class stays. */
static void
test_long_name(void **state)
{
	struct gql_ws_msg m;
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b);
	buf_adds(&b, "{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"mutation ");
	for (i = 0; i < 1000; i++)
		buf_addc(&b, 'M');
	buf_adds(&b, " { a }\"}}");
	assert_int_equal(graphql_ws_classify(GQL_WS_TRANSPORT, b.data, b.len, &m),
	                 GQL_WS_OPERATION);
	assert_int_equal(m.gql.op, GQL_MUTATION);
	assert_int_equal(strlen(m.gql.name), sizeof m.gql.name - 1);
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_proto),
	    cmocka_unit_test(test_long_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
