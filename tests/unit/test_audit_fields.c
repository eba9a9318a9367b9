/*
 * Unit tests for audit/fields.c, the table of audit fields the writer and
 * the fast reader of `policyctl audit` share: a line with every field set
 * holds exactly the table's keys, in its order, each with the kind of
 * value the table gives; fields_find knows every key whatever the hint
 * and nothing else.
 */
#include "audit_test.h"

static void
test_writer_order(void **state)
{
	struct gql_result g = {.op = GQL_QUERY, .name = "Viewer"};
	struct audit_event ev;
	char *long_reason;
	json_t *j, *v;
	void *it;
	int k;

	long_reason = xmalloc(10000);
	memset(long_reason, 'r', 9999);
	long_reason[9999] = '\0';
	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.rule = "allow-methods";
	ev.source = "policy.yaml:3";
	ev.reason = long_reason; /* past the cap: "truncated" too */
	ev.mode = "practical";
	ev.client = "127.0.0.1:40000";
	ev.host = "api.example.com";
	ev.port = 443;
	ev.scheme = "https";
	ev.method = "POST";
	ev.path = "/graphql";
	ev.status = 200;
	ev.bytes_up = 1;
	ev.bytes_down = 2;
	ev.duration_ms = 3;
	ev.graphql = &g;
	ev.qname = "api.example.com";
	ev.qtype = "A";
	ev.rcode = "NOERROR";
	ev.error = "none";
	ev.addr = "198.18.0.1";
	ev.sni = "api.example.com";
	ev.tls = "intercept";
	ev.hint = "a hint";
	ev.proto = "tcp";
	ev.uid = 1000;
	ev.refused = 4;
	ev.unwritten = 5;
	ev.seqs = "6-7";
	ev.cached = 1;
	j = one_line("every.jsonl", &ev);
	free(long_reason);

	k = 0;
	for (it = json_object_iter(j); it != NULL; it = json_object_iter_next(j, it), k++) {
		if (k >= AUDIT_FIELD_COUNT)
			fail_msg("key %s is not in the table", json_object_iter_key(it));
		if (strcmp(json_object_iter_key(it), fields_table[k].name) != 0)
			fail_msg("key %d is %s, the table says %s", k, json_object_iter_key(it),
			         fields_table[k].name);
		v = json_object_iter_value(it);
		switch (fields_table[k].value) {
		case AUDIT_VALUE_STRING:
			assert_true(json_is_string(v));
			break;
		case AUDIT_VALUE_INT:
			assert_true(json_is_integer(v) && json_integer_value(v) >= 0);
			break;
		case AUDIT_VALUE_TRUE:
			assert_true(json_is_true(v));
			break;
		case AUDIT_VALUE_OBJECT:
			assert_true(json_is_object(v));
			break;
		}
		assert_int_equal(fields_table[k].len, strlen(fields_table[k].name));
	}
	assert_int_equal(k, AUDIT_FIELD_COUNT);
	json_decref(j);
}

static void
test_find(void **state)
{
	static const char *const unknown[] = {"",      "x",     "hos",      "hostt",   "Host",
	                                      "bytes", "prev ", "duration", "sequence"};
	const char *name;
	int k, hint;
	size_t i;

	for (k = 0; k < AUDIT_FIELD_COUNT; k++) {
		name = fields_table[k].name;
		for (hint = -1; hint <= AUDIT_FIELD_COUNT; hint++)
			assert_int_equal(fields_find(name, strlen(name), hint), k);
	}
	for (i = 0; i < EG_NELEM(unknown); i++)
		for (hint = -1; hint <= AUDIT_FIELD_COUNT; hint++)
			assert_int_equal(fields_find(unknown[i], strlen(unknown[i]), hint), -1);
	/* Only len bytes are read. */
	assert_int_equal(fields_find("hostname", 4, 0), AUDIT_FIELD_HOST);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_order),
	    cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
