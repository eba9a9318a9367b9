/*
 * Unit tests for audit/audit.c, the line: the fields and their order,
 * omission of absent values, escaping of hostile values, the query-string
 * cut and the cap on long values. test_policy_audit_file.c covers the
 * chain and the file.
 */
#include "audit_test.h"

static void
test_event_init(void **state)
{
	struct audit_event ev;

	memset(&ev, 0x5a, sizeof ev);
	audit_event_init(&ev);
	assert_null(ev.event);
	assert_null(ev.action);
	assert_null(ev.rule);
	assert_null(ev.source);
	assert_null(ev.reason);
	assert_null(ev.mode);
	assert_null(ev.client);
	assert_null(ev.host);
	assert_null(ev.scheme);
	assert_null(ev.method);
	assert_null(ev.path);
	assert_null(ev.graphql);
	assert_null(ev.qname);
	assert_null(ev.qtype);
	assert_null(ev.rcode);
	assert_null(ev.error);
	assert_int_equal(ev.port, -1);
	assert_int_equal(ev.status, -1);
	assert_int_equal(ev.bytes_up, -1);
	assert_int_equal(ev.bytes_down, -1);
	assert_int_equal(ev.duration_ms, -1);
	audit_close(NULL);
}

/* ts is RFC 3339 UTC with milliseconds and close to now. */
static void
check_ts(const char *ts)
{
	struct tm tm;
	time_t t;

	assert_int_equal(strlen(ts), 24);
	memset(&tm, 0, sizeof tm);
	assert_int_equal(sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	                        &tm.tm_hour, &tm.tm_min, &tm.tm_sec),
	                 6);
	assert_true(ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[19] == '.');
	assert_true(ts[20] >= '0' && ts[20] <= '9' && ts[22] >= '0' && ts[22] <= '9');
	assert_int_equal(ts[23], 'Z');
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	assert_true(labs((long)(t - time(NULL))) < 10);
}

static void
test_all_fields(void **state)
{
	static const char *const keys[] = {
	    "v",      "ts",     "seq",      "event",      "action",      "rule",    "source",
	    "reason", "mode",   "client",   "host",       "port",        "scheme",  "method",
	    "path",   "status", "bytes_up", "bytes_down", "duration_ms", "graphql", "qname",
	    "qtype",  "rcode",  "error",    "prev"};
	struct gql_result g = {.op = GQL_MUTATION, .name = "CreateIssue"};
	struct audit_event ev;
	json_t *j, *gq;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "block";
	ev.rule = "*.segment.io";
	ev.source = "/etc/opencode-sandbox/policy.yaml:12";
	ev.reason = "blocklist";
	ev.mode = "practical";
	ev.client = "127.0.0.1:40000";
	ev.host = "api.segment.io";
	ev.port = 443;
	ev.scheme = "https";
	ev.method = "POST";
	ev.path = "/v1/batch";
	ev.status = 403;
	ev.bytes_up = 5000000000LL;
	ev.bytes_down = 0;
	ev.duration_ms = 12;
	ev.graphql = &g;
	ev.qname = "api.segment.io";
	ev.qtype = "AAAA";
	ev.rcode = "NXDOMAIN";
	ev.error = "blocked";
	j = one_line("all.jsonl", &ev);
	assert_keys(j, keys, EG_NELEM(keys));
	assert_int_equal(ival(j, "v"), 1);
	check_ts(sval(j, "ts"));
	assert_int_equal(ival(j, "seq"), 1);
	assert_string_equal(sval(j, "event"), "http");
	assert_string_equal(sval(j, "action"), "block");
	assert_string_equal(sval(j, "rule"), "*.segment.io");
	assert_string_equal(sval(j, "source"), "/etc/opencode-sandbox/policy.yaml:12");
	assert_string_equal(sval(j, "reason"), "blocklist");
	assert_string_equal(sval(j, "mode"), "practical");
	assert_string_equal(sval(j, "client"), "127.0.0.1:40000");
	assert_string_equal(sval(j, "host"), "api.segment.io");
	assert_int_equal(ival(j, "port"), 443);
	assert_string_equal(sval(j, "scheme"), "https");
	assert_string_equal(sval(j, "method"), "POST");
	assert_string_equal(sval(j, "path"), "/v1/batch");
	assert_int_equal(ival(j, "status"), 403);
	assert_true(ival(j, "bytes_up") == 5000000000LL);
	assert_int_equal(ival(j, "bytes_down"), 0);
	assert_int_equal(ival(j, "duration_ms"), 12);
	gq = json_object_get(j, "graphql");
	assert_true(json_is_object(gq));
	assert_int_equal(json_object_size(gq), 2);
	assert_string_equal(sval(gq, "operation"), "mutation");
	assert_string_equal(sval(gq, "name"), "CreateIssue");
	assert_string_equal(sval(j, "qname"), "api.segment.io");
	assert_string_equal(sval(j, "qtype"), "AAAA");
	assert_string_equal(sval(j, "rcode"), "NXDOMAIN");
	assert_string_equal(sval(j, "error"), "blocked");
	assert_string_equal(sval(j, "prev"), ZEROS);
	json_decref(j);
}

static void
test_absent_fields(void **state)
{
	static const char *const bare[] = {"v", "ts", "seq", "event", "prev"};
	static const char *const zeros[] = {"v",           "ts",     "seq",      "event",
	                                    "port",        "status", "bytes_up", "bytes_down",
	                                    "duration_ms", "prev"};
	struct audit_event ev;
	json_t *j;

	audit_event_init(&ev);
	ev.event = "daemon";
	j = one_line("bare.jsonl", &ev);
	assert_keys(j, bare, EG_NELEM(bare));
	json_decref(j);

	/* Zero is a value; only negatives mean absent. */
	ev.port = 0;
	ev.status = 0;
	ev.bytes_up = 0;
	ev.bytes_down = 0;
	ev.duration_ms = 0;
	j = one_line("zeros.jsonl", &ev);
	assert_keys(j, zeros, EG_NELEM(zeros));
	json_decref(j);

	ev.port = -5;
	ev.status = -1;
	ev.bytes_up = INT64_MIN;
	ev.bytes_down = -1;
	ev.duration_ms = -100;
	j = one_line("negative.jsonl", &ev);
	assert_keys(j, bare, EG_NELEM(bare));
	json_decref(j);
}

static void
test_graphql(void **state)
{
	static const struct {
		enum gql_op op;
		const char *name;
	} ops[] = {
	    {GQL_QUERY, "query"},
	    {GQL_MUTATION, "mutation"},
	    {GQL_SUBSCRIPTION, "subscription"},
	    {GQL_UNKNOWN, "unknown"},
	};
	struct gql_result g;
	struct audit_event ev;
	json_t *j, *gq;
	char name[32];
	size_t i;

	audit_event_init(&ev);
	ev.event = "http";
	ev.graphql = &g;
	for (i = 0; i < EG_NELEM(ops); i++) {
		memset(&g, 0, sizeof g);
		g.op = ops[i].op;
		snprintf(name, sizeof name, "gql%zu.jsonl", i);
		j = one_line(name, &ev);
		gq = json_object_get(j, "graphql");
		assert_string_equal(sval(gq, "operation"), ops[i].name);
		/* An empty name is null, not "". */
		assert_true(json_is_null(json_object_get(gq, "name")));
		json_decref(j);
	}

	/* Not GraphQL: the field is absent, whether NULL or GQL_NONE. */
	memset(&g, 0, sizeof g);
	g.op = GQL_NONE;
	strcpy(g.name, "ignored");
	j = one_line("gqlnone.jsonl", &ev);
	assert_null(json_object_get(j, "graphql"));
	json_decref(j);
	ev.graphql = NULL;
	j = one_line("gqlnull.jsonl", &ev);
	assert_null(json_object_get(j, "graphql"));
	json_decref(j);

	/* A hostile operation name is escaped; a full, unterminated name is bounded. */
	g.op = GQL_QUERY;
	strcpy(g.name, "a\"b\n}");
	ev.graphql = &g;
	j = one_line("gqlname.jsonl", &ev);
	assert_string_equal(sval(json_object_get(j, "graphql"), "name"), "a\"b\n}");
	json_decref(j);
	memset(g.name, 'n', sizeof g.name);
	j = one_line("gqlfull.jsonl", &ev);
	assert_int_equal(strlen(sval(json_object_get(j, "graphql"), "name")), sizeof g.name);
	json_decref(j);
}

/* Values that try to break out of their string or the line stay values. */
static void
test_hostile_values(void **state)
{
	static const char host[] = "evil.com\",\"action\":\"allow\"}\n{\"v\":1";
	static const char reason[] = "tab\there\r\nbell\a nul-ish \x01 del \x7f";
	static const char path[] = "/a\"b\\c\n\xff\xfe/\xed\xa0\x80/\xc3\xa9";
	struct audit_event ev;
	struct lines l;
	struct audit *a;
	json_t *j;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "block";
	ev.host = host;
	ev.reason = reason;
	ev.path = path;
	ev.method = "GET\r\nX-Injected: 1";
	a = open_ok(tpath("hostile.jsonl"));
	assert_int_equal(audit_write(a, &ev), 0);
	audit_close(a);
	read_lines(tpath("hostile.jsonl"), &l);
	assert_int_equal(l.n, 1);
	j = parse(l.p[0], l.len[0]);
	assert_non_null(j);
	assert_string_equal(sval(j, "action"), "block");
	assert_string_equal(sval(j, "host"), host);
	assert_string_equal(sval(j, "reason"), reason);
	assert_string_equal(sval(j, "method"), "GET\r\nX-Injected: 1");
	assert_string_equal(sval(j, "path"), "/a\"b\\c\n\xef\xbf\xbd\xef\xbf\xbd/"
	                                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd/\xc3\xa9");
	json_decref(j);
	lines_free(&l);
}

static void
test_path_query_cut(void **state)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
	    {"/search?q=secret-token&x=1", "/search"},
	    {"/a/b?", "/a/b"},
	    {"?secret-token", ""},
	    {"/page#secret-token", "/page"},
	    {"/p#f?secret-token", "/p"},
	    {"/plain/path", "/plain/path"},
	    {"/", "/"},
	};
	struct audit_event ev;
	struct lines l;
	struct audit *a;
	json_t *j;
	size_t i;

	audit_event_init(&ev);
	ev.event = "http";
	a = open_ok(tpath("query.jsonl"));
	for (i = 0; i < EG_NELEM(cases); i++) {
		ev.path = cases[i].in;
		assert_int_equal(audit_write(a, &ev), 0);
	}
	audit_close(a);
	read_lines(tpath("query.jsonl"), &l);
	assert_int_equal(l.n, EG_NELEM(cases));
	assert_null(strstr(l.data, "secret-token"));
	for (i = 0; i < l.n; i++) {
		j = parse(l.p[i], l.len[i]);
		assert_non_null(j);
		assert_string_equal(sval(j, "path"), cases[i].want);
		json_decref(j);
	}
	lines_free(&l);
}

static void
test_truncation(void **state)
{
	struct audit_event ev;
	char *big;
	json_t *j;

	big = xmalloc(20001);
	memset(big, 'a', 20000);
	big[20000] = '\0';
	audit_event_init(&ev);
	ev.event = "http";
	ev.path = big;
	j = one_line("trunc.jsonl", &ev);
	assert_int_equal(strlen(sval(j, "path")), 8192);
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);

	/* Exactly at the cap: whole, no marker. */
	big[8192] = '\0';
	ev.path = NULL;
	ev.reason = big;
	j = one_line("trunc-exact.jsonl", &ev);
	assert_int_equal(strlen(sval(j, "reason")), 8192);
	assert_null(json_object_get(j, "truncated"));
	json_decref(j);

	/* A character straddling the cap is dropped whole, not replaced. */
	memcpy(big + 8191, "\xe2\x82\xac", 4);
	j = one_line("trunc-utf8.jsonl", &ev);
	assert_int_equal(strlen(sval(j, "reason")), 8191);
	assert_null(strstr(sval(j, "reason"), "\xef\xbf\xbd"));
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);
	free(big);
}

static void
test_event_required(void **state)
{
	struct audit_event ev;
	struct audit *a;
	struct stat st;

	audit_event_init(&ev);
	ev.host = "x";
	a = open_ok(tpath("noevent.jsonl"));
	assert_int_equal(audit_write(a, &ev), -1);
	audit_close(a);
	assert_int_equal(stat(tpath("noevent.jsonl"), &st), 0);
	assert_int_equal(st.st_size, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event_init),     cmocka_unit_test(test_all_fields),
	    cmocka_unit_test(test_absent_fields),  cmocka_unit_test(test_graphql),
	    cmocka_unit_test(test_hostile_values), cmocka_unit_test(test_path_query_cut),
	    cmocka_unit_test(test_truncation),     cmocka_unit_test(test_event_required),
	};

	log_init("test_policy_audit", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
