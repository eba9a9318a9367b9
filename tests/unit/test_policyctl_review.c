/*
 * Tests for `policyctl audit` (policyctl/review*.c) on committed audit files:
 * tests/data/review/session.jsonl, recorded from a real egressd by
 * tests/integration/policyctl_audit.sh (REVIEW_RECORD=DIR) with times and
 * ports fixed, and crafted.jsonl, hand-made for what a live run does not
 * produce (DNS events, hostile strings, a torn line, a truncated tail).
 * Outputs are compared with golden files next to them; run with
 * REVIEW_UPDATE_GOLDEN=1 to rewrite the goldens after a deliberate change.
 * Damaged copies for --verify are made here from the intact file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "review.h"

#define DIR TEST_DATA_DIR "/review/"

typedef int (*review_fn)(FILE *, FILE *, const struct review_opts *);

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = xmalloc((size_t)n + 1);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	data[n] = '\0';
	fclose(f);
	if (len != NULL)
		*len = (size_t)n;
	return data;
}

/* Run fn on the bytes in[0..len) and return what it printed; *rc its result. */
static char *
run_mem(review_fn fn, const char *in, size_t len, const struct review_opts *o, int *rc)
{
	FILE *f = tmpfile(), *out;
	char *text = NULL;
	size_t tlen = 0;

	assert_non_null(f);
	assert_int_equal(fwrite(in, 1, len, f), len);
	rewind(f);
	out = open_memstream(&text, &tlen);
	assert_non_null(out);
	*rc = fn(f, out, o);
	fclose(out);
	fclose(f);
	return text;
}

static char *
run_file(review_fn fn, const char *name, const struct review_opts *o, int *rc)
{
	char path[512], *in, *text;
	size_t len;

	snprintf(path, sizeof path, DIR "%s", name);
	in = slurp(path, &len);
	text = run_mem(fn, in, len, o, rc);
	free(in);
	return text;
}

/* Compare with the golden file, or rewrite it with REVIEW_UPDATE_GOLDEN. */
static void
golden(const char *name, const char *got)
{
	char path[512], *want;
	const char *a, *b;
	FILE *f;
	int line = 1;

	snprintf(path, sizeof path, DIR "%s", name);
	if (getenv("REVIEW_UPDATE_GOLDEN") != NULL) {
		assert_non_null(f = fopen(path, "wb"));
		fputs(got, f);
		fclose(f);
		return;
	}
	want = slurp(path, NULL);
	for (a = got, b = want; *a != '\0' && *a == *b; a++, b++)
		if (*a == '\n')
			line++;
	if (*a != *b)
		print_error("%s differs at line %d:\n got: %.120s\nwant: %.120s\n", name, line, a,
		            b);
	assert_string_equal(got, want);
	free(want);
}

static void
opts(struct review_opts *o, const char *name)
{
	review_opts_init(o);
	o->name = name;
	o->err = fopen("/dev/null", "w");
	assert_non_null(o->err);
}

static void
test_time_parse(void **state)
{
	static const struct {
		const char *in;
		int64_t ms; /* INT64_MIN: an error */
	} cases[] = {
	    {"2026-11-29T10:00:00Z", 1795946400000},
	    {"2026-11-29T10:00:00.5Z", 1795946400500},
	    {"2026-11-29T10:00:00.123456z", 1795946400123},
	    {"2026-11-29t10:00:00Z", 1795946400000},
	    {"2026-11-29 10:00:00Z", 1795946400000},
	    {"2026-11-29T11:30:00+01:30", 1795946400000},
	    {"2026-11-29T08:00:00-02:00", 1795946400000},
	    {"2026-11-29", 1795910400000},
	    {"1970-01-01T00:00:00Z", 0},
	    {"2024-02-29T00:00:00Z", 1709164800000},
	    {"10m", 1795946400000 - 600000},
	    {"90s", 1795946400000 - 90000},
	    {"2h", 1795946400000 - 7200000},
	    {"1d", 1795946400000 - 86400000},
	    {"1w", 1795946400000 - 604800000},
	    {"0s", 1795946400000},
	    {"2026-11-29T10:00:00", INT64_MIN},
	    {"2026-11-29T25:00:00Z", INT64_MIN},
	    {"2026-13-01", INT64_MIN},
	    {"2026-02-30", INT64_MIN},
	    {"2025-02-29", INT64_MIN},
	    {"2100-02-29", INT64_MIN},
	    {"2000-02-29", 951782400000},
	    {"2026-1", INT64_MIN},
	    {"2026-11-29T1", INT64_MIN},
	    {"2026-11-29T10:0", INT64_MIN},
	    {"2026-11-29T10:00:00+0", INT64_MIN},
	    {"999999999w", 1795946400000 - 999999999 * (int64_t)604800000},
	    {"9999999999w", INT64_MIN},
	    {"2026-11-29T10:00:00.Z", INT64_MIN},
	    {"2026-11-29T10:00:00Zjunk", INT64_MIN},
	    {"2026-11-29T10:00:00+1:00", INT64_MIN},
	    {"10", INT64_MIN},
	    {"10y", INT64_MIN},
	    {"m", INT64_MIN},
	    {"", INT64_MIN},
	    {"yesterday", INT64_MIN},
	    {"99999999999999999999m", INT64_MIN},
	};
	const char *err;
	int64_t ms;
	size_t i;

	(void)state;
	for (i = 0; i < EG_NELEM(cases); i++) {
		ms = -1;
		err = review_time_parse(cases[i].in, 1795946400000, &ms);
		if (cases[i].ms == INT64_MIN) {
			if (err == NULL)
				fail_msg("\"%s\" parsed as %lld", cases[i].in, (long long)ms);
		} else {
			if (err != NULL)
				fail_msg("\"%s\": %s", cases[i].in, err);
			assert_int_equal(ms, cases[i].ms);
		}
	}
}

static void
test_summary_golden(void **state)
{
	struct review_opts o;
	json_error_t jerr;
	json_t *j;
	char *text;
	int rc;

	(void)state;
	opts(&o, "session.jsonl");
	text = run_file(review_summary, "session.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	assert_null(strchr(text, '\033'));
	golden("session.txt", text);
	free(text);

	o.color = 1;
	text = run_file(review_summary, "session.jsonl", &o, &rc);
	assert_non_null(strstr(text, "\033[31mblock\033[0m"));
	golden("session-color.txt", text);
	free(text);

	o.color = 0;
	o.json = 1;
	text = run_file(review_summary, "session.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("session.json", text);
	j = json_loads(text, 0, &jerr);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "events")), 18);
	assert_int_equal(json_array_size(json_object_get(j, "violations")), 9);
	json_decref(j);
	free(text);
	fclose(o.err);
}

static void
test_filters_golden(void **state)
{
	static const struct {
		const char *golden;
		int actions;
		const char *host;
		const char *events;
		const char *since;
		const char *until;
	} cases[] = {
	    {"session-blocked.txt", REVIEW_ONLY_BLOCK, NULL, NULL, NULL, NULL},
	    {"session-flagged.txt", REVIEW_ONLY_FLAG, NULL, NULL, NULL, NULL},
	    {"session-host.txt", 0, "*.TRACKER.test", NULL, NULL, NULL},
	    {"session-event.txt", 0, NULL, "connect,daemon", NULL, NULL},
	    {"session-since.txt", 0, NULL, NULL, "2026-11-29T10:00:06Z",
	     "2026-11-29T11:00:12+01:00"},
	    {"session-none.txt", REVIEW_ONLY_BLOCK, "allowed.test", NULL, NULL, NULL},
	};
	struct review_opts o;
	char *text;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < EG_NELEM(cases); i++) {
		opts(&o, "session.jsonl");
		o.filter.actions = cases[i].actions;
		o.filter.host_glob = cases[i].host;
		o.filter.events = cases[i].events;
		if (cases[i].since != NULL)
			assert_null(review_time_parse(cases[i].since, 0, &o.filter.since_ms));
		if (cases[i].until != NULL)
			assert_null(review_time_parse(cases[i].until, 0, &o.filter.until_ms));
		text = run_file(review_summary, "session.jsonl", &o, &rc);
		assert_int_equal(rc, 0);
		golden(cases[i].golden, text);
		free(text);
		fclose(o.err);
	}
}

/* The fragment loads as a project file and allows each entry it lists. */
static void
check_suggestion_loads(const char *yaml, const char *allowed[], const char *not_allowed[])
{
	struct policy_request req;
	struct decision d;
	struct config *cfg;
	struct policy *p;
	struct host h;
	struct buf errs;
	size_t i;

	buf_init(&errs);
	cfg = config_load_mem("suggest.yaml", yaml, strlen(yaml), &errs);
	if (cfg == NULL)
		fail_msg("suggestion does not load: %s", buf_cstr(&errs));
	assert_non_null(p = policy_new(cfg, &errs));
	for (i = 0; allowed[i] != NULL || not_allowed[i] != NULL; i++) {
		const char *name = allowed[i] != NULL ? allowed[i] : not_allowed[i];

		assert_null(host_parse(name, strlen(name), &h));
		memset(&req, 0, sizeof req);
		req.host = &h;
		req.method = "POST";
		policy_decide(p, &req, &d);
		if ((d.action == ACTION_ALLOW) != (allowed[i] != NULL))
			fail_msg("%s: %s by %s", name, policy_action_name(d.action), d.rule);
	}
	policy_unref(p);
	buf_free(&errs);
}

static void
test_suggest_golden(void **state)
{
	static const char *s_allow[] = {"a.tracker.test",
	                                "new.tracker.test",
	                                "x.cdn.test",
	                                "plain.test",
	                                "blocked.test",
	                                NULL,
	                                NULL};
	static const char *s_not[] = {NULL, NULL, NULL, NULL, NULL, "tracker.test", NULL};
	static const char *c_allow[] = {
	    "c.example.co.uk", "api.segment.io", "a.github.io", NULL, NULL, NULL, NULL, NULL, NULL};
	static const char *c_not[] = {NULL,
	                              NULL,
	                              NULL,
	                              "10.0.0.5",
	                              "c.github.io",
	                              "other.co.uk",
	                              "off.example.net",
	                              "example.co.uk",
	                              NULL};
	static const char *g_allow[] = {
	    "93.184.215.14", "api.example.org", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	static const char *g_not[] = {
	    NULL,           NULL,  "169.254.169.254",      "fd00:ec2::254",      "127.0.0.1",
	    "192.168.1.10", "::1", "intranet.example.com", "rebind.example.net", NULL};
	struct review_opts o;
	char *text;
	int rc;

	(void)state;
	opts(&o, "session.jsonl");
	text = run_file(review_suggest, "session.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("session-suggest.yaml", text);
	check_suggestion_loads(text, s_allow, s_not);
	free(text);
	fclose(o.err);

	/*
	 * Crafted: no wildcard over a public suffix (co.uk) nor a private one
	 * (github.io); hosts the private-address guard blocked get no entry,
	 * and the fragment says so; mode-off, policy events and a host that
	 * is not a name are left out.
	 */
	opts(&o, "crafted.jsonl");
	text = run_file(review_suggest, "crafted.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("crafted-suggest.yaml", text);
	assert_null(strstr(text, "\"*.co.uk\""));
	assert_null(strstr(text, "\"*.github.io\""));
	assert_null(strstr(text, "off.example.net"));
	assert_null(strstr(text, "\nnetwork: evil"));
	assert_null(strstr(text, "\"10.0.0.5\""));
	assert_null(strstr(text, "\"a.internal.example.co.uk\""));
	check_suggestion_loads(text, c_allow, c_not);
	free(text);
	fclose(o.err);

	/*
	 * Addresses that are not globally reachable (metadata, loopback,
	 * private, ULA) never come back as entries, whatever rule blocked
	 * them, nor do names the guard blocked: the fragment names each and
	 * says why.
	 */
	opts(&o, "guard.jsonl");
	text = run_file(review_suggest, "guard.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("guard-suggest.yaml", text);
	assert_null(strstr(text, "\"169.254.169.254\""));
	assert_null(strstr(text, "\"rebind.example.net\""));
	assert_non_null(
	    strstr(text, "#   169.254.169.254: 2 requests; a cloud metadata address\n"));
	assert_non_null(strstr(text, "#   intranet.example.com: 1 request; blocked by rule "
	                             "private-address"));
	check_suggestion_loads(text, g_allow, g_not);
	free(text);
	fclose(o.err);

	/* Nothing blocked: an empty list that still loads. */
	opts(&o, "session.jsonl");
	o.filter.events = "dns";
	text = run_file(review_suggest, "session.jsonl", &o, &rc);
	assert_non_null(strstr(text, "  allowlist: []\n"));
	check_suggestion_loads(text, (const char *[]){NULL}, (const char *[]){NULL});
	free(text);
	fclose(o.err);
}

/* Verify in[0..len); the report must hold want as a whole line. */
static void
verify_case(const char *in, size_t len, int want_rc, const char *want)
{
	struct review_opts o;
	char *text, *line, *nl;
	int rc;

	opts(&o, "x.jsonl");
	text = run_mem(review_verify, in, len, &o, &rc);
	if (rc != want_rc)
		fail_msg("verify: %d, want %d:\n%s", rc, want_rc, text);
	line = xasprintf("%s\n", want);
	nl = xasprintf("\n%s\n", want);
	if (strncmp(text, line, strlen(line)) != 0 && strstr(text, nl) == NULL)
		fail_msg("no line \"%s\" in:\n%s", want, text);
	free(nl);
	free(line);
	free(text);
	fclose(o.err);
}

/* Line n of text (1-based) as [*start, *end), newline excluded. */
static void
find_line(const char *text, int n, const char **start, const char **end)
{
	const char *p = text;

	while (--n > 0)
		p = strchr(p, '\n') + 1;
	*start = p;
	*end = strchr(p, '\n');
}

static void
test_verify(void **state)
{
	struct review_opts o;
	const char *s, *e, *s2, *e2;
	char *in, *text, *m;
	size_t len;
	int rc;

	(void)state;
	opts(&o, "session.jsonl");
	text = run_file(review_verify, "session.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("session-verify.txt", text);
	free(text);
	o.json = 1;
	text = run_file(review_verify, "session.jsonl", &o, &rc);
	golden("session-verify.json", text);
	free(text);
	fclose(o.err);

	opts(&o, "crafted.jsonl");
	text = run_file(review_verify, "crafted.jsonl", &o, &rc);
	assert_int_equal(rc, 1);
	golden("crafted-verify.txt", text);
	free(text);
	fclose(o.err);

	in = slurp(DIR "session.jsonl", &len);
	verify_case(in, len, 0, "18 lines, 2 runs, chain OK");
	verify_case("", 0, 0, "0 lines, 0 runs, chain OK");

	/* One byte of line 6 edited: the link from line 7 breaks. */
	m = xstrdup(in);
	find_line(m, 6, &s, &e);
	*strstr(s, "\"seq\":6") = '\'';
	verify_case(m, len, 1, "line 6: not an audit line (not JSON): partial or damaged");
	free(m);
	m = xstrdup(in);
	find_line(m, 6, &s, &e);
	memcpy(strstr(s, "\"path\":\"/c\""), "\"path\":\"/d\"", 11);
	verify_case(m, len, 1, "line 7: prev does not match line 6: line 6 was changed");

	/* Line 6 deleted. */
	find_line(in, 6, &s, &e);
	memcpy(m, in, (size_t)(s - in));
	memcpy(m + (s - in), e + 1, len - (size_t)(e + 1 - in));
	verify_case(m, len - (size_t)(e + 1 - s), 1,
	            "line 6: prev does not match line 5, and seq jumps from 5 to 7: lines were "
	            "removed or reordered before this one");

	/* Lines 6 and 7 swapped. */
	find_line(in, 7, &s2, &e2);
	memcpy(m, in, len);
	memcpy(m + (s - in), s2, (size_t)(e2 - s2) + 1);
	memcpy(m + (s - in) + (e2 - s2) + 1, s, (size_t)(e - s) + 1);
	verify_case(m, len, 1,
	            "line 7: prev is the hash of line 5, not of line 6: lines were reordered, or "
	            "inserted after line 5");

	/* Truncated inside the last line, and just before its newline. */
	find_line(in, 18, &s, &e);
	text = xasprintf("line 18: truncated tail: the file ends inside this line (%d bytes, no "
	                 "newline)",
	                 (int)(e - s) - 39);
	verify_case(in, len - 40, 1, text);
	free(text);
	verify_case(in, len - 1, 1,
	            "line 18: truncated tail: the file ends without a newline after this line");

	/* A copy that starts at the second run: lines cut from the start. */
	find_line(in, 14, &s, &e);
	verify_case(s, len - (size_t)(s - in), 1,
	            "line 1: prev is not 64 zeros: lines before this one were removed (the file "
	            "does not start where its chain began)");

	/* Another copy of the log appended to it: a new chain. */
	memcpy(m, in, len);
	m[len] = '\0';
	text = xasprintf("%s%s", m, in);
	verify_case(text, 2 * len, 1,
	            "line 19: prev is 64 zeros, but this is not the first line: a new chain starts "
	            "here (another writer appended to the file, or files were joined)");
	free(text);
	free(m);
	free(in);
}

static void
test_crafted(void **state)
{
	struct review_opts o;
	json_error_t jerr;
	json_t *j;
	char *text;
	int rc;

	(void)state;
	opts(&o, "crafted.jsonl");
	text = run_file(review_summary, "crafted.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	golden("crafted.txt", text);
	/* No raw control character from the log reaches a terminal. */
	assert_null(strchr(text, '\033'));
	assert_null(strstr(text, "\xe2\x80\xae"));
	assert_non_null(strstr(text, "in\\x1bjection.example"));
	assert_non_null(strstr(text, "/graphql\\x1b[2J\\u{202e}"));
	assert_non_null(strstr(text, "bad lines: 2, not audit events: line 6 (not JSON), line 18 "
	                             "(not JSON)"));
	free(text);

	o.json = 1;
	text = run_file(review_summary, "crafted.jsonl", &o, &rc);
	golden("crafted.json", text);
	assert_non_null(j = json_loads(text, 0, &jerr));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "bad_lines"), "count")), 2);
	assert_true(json_is_true(json_object_get(j, "partial_tail")));
	json_decref(j);
	free(text);
	fclose(o.err);
}

static void
test_html(void **state)
{
	struct review_opts o;
	const char *p;
	char *text;
	int rc, rows = 0;

	(void)state;
	opts(&o, "crafted<b>.jsonl");
	text = run_file(review_html, "crafted.jsonl", &o, &rc);
	assert_int_equal(rc, 0);
	assert_null(strstr(text, "<script>alert"));
	assert_null(strstr(text, "<b>"));
	assert_non_null(strstr(text, "crafted&lt;b&gt;.jsonl"));
	assert_non_null(strstr(text, "<td>/&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
	assert_non_null(strstr(text, "\"/\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\""));
	assert_null(strstr(text, "http://"));
	assert_null(strstr(text, "https://"));
	assert_null(strstr(text, " src="));
	assert_null(strstr(text, " href="));
	for (p = strstr(strstr(text, "<table id=\"hosts\">"), "<tbody>");
	     p != NULL && (p = strstr(p, "<tr>")) != NULL && p < strstr(text, "</table>"); p++)
		rows++;
	assert_int_equal(rows, 14);
	free(text);
	fclose(o.err);
}

/* Lines that are not events: counted with their numbers, never fatal. */
static void
test_bad_lines(void **state)
{
	struct review_opts o;
	struct buf in;
	char *text, *big;
	int i, rc;

	(void)state;
	buf_init(&in);
	buf_adds(&in,
	         "{\"v\":1,\"ts\":\"2026-11-29T10:00:00.000Z\",\"seq\":1,\"event\":\"daemon\"}\n");
	buf_adds(&in, "\n[1,2]\n{\"v\":\"1\",\"ts\":\"x\",\"event\":\"http\"}\n");
	buf_adds(&in, "{\"v\":1,\"ts\":\"yesterday\",\"event\":\"http\"}\n{\"v\":1,\"ts\":"
	              "\"2026-11-29T10:00:00Z\"}\n{\"v\":1,\"v\":2}\n");
	buf_adds(&in, "{\"v\":1,\"ts\":\"2026-11-29T10:00:01Z\",\"event\":\"http\",\"host\":"
	              "\"a\\u0000b\"}\n");
	big = xmalloc(2 * 1024 * 1024);
	memset(big, 'a', 2 * 1024 * 1024);
	buf_add(&in, big, 2 * 1024 * 1024);
	buf_addc(&in, '\n');
	free(big);
	for (i = 0; i < 12; i++)
		buf_adds(&in, "garbage\n");
	buf_adds(&in, "{\"v\":1,\"ts\":\"2026-11-29T10:00:02.000Z\",\"event\":\"http\",\"action\":"
	              "\"block\",\"host\":\"z.test\",\"rule\":\"r\"}");
	opts(&o, "bad.jsonl");
	text = run_mem(review_summary, in.data, in.len, &o, &rc);
	assert_int_equal(rc, 0);
	if (strstr(text, "lines:     22 (3 matching events, 19 bad)\n") == NULL)
		print_error("%s", text);
	assert_non_null(strstr(text, "lines:     22 (3 matching events, 19 bad)\n"));
	assert_non_null(strstr(text,
	                       "line 2 (empty line), line 3 (not a JSON object), line 4 (no "
	                       "version (\"v\")), line 5 (\"ts\" is not an RFC 3339 time), "
	                       "line 6 (no event type (\"event\")), line 7 (not JSON), line 9 "
	                       "(longer than 1 MiB), line 10 (not JSON)"));
	assert_non_null(strstr(text, ", ...\n"));
	assert_non_null(strstr(text, "the file ends inside line 22"));
	assert_non_null(strstr(text, "blocked and flagged (1)"));
	free(text);
	fclose(o.err);
	buf_free(&in);
}

/* An event type longer than the column (websocket) still stands apart from the target. */
static void
test_long_event_type(void **state)
{
	static const char line[] =
	    "{\"v\":1,\"ts\":\"2026-11-29T11:00:00.250Z\",\"seq\":1,\"event\":\"websocket\","
	    "\"action\":\"block\",\"rule\":\"graphql-mutation\",\"source\":\"builtin\","
	    "\"host\":\"api.example.com\",\"port\":443,\"scheme\":\"https\",\"path\":\"/graphql\","
	    "\"graphql\":{\"operation\":\"mutation\",\"name\":\"M\"}}\n";
	struct review_opts o;
	char *text;
	int rc;

	(void)state;
	opts(&o, "ws.jsonl");
	text = run_mem(review_summary, line, sizeof line - 1, &o, &rc);
	assert_int_equal(rc, 0);
	if (strstr(text, "block websocket api.example.com/graphql  rule graphql-mutation") == NULL)
		fail_msg("%s", text);
	free(text);
	fclose(o.err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time_parse),
	    cmocka_unit_test(test_summary_golden),
	    cmocka_unit_test(test_filters_golden),
	    cmocka_unit_test(test_suggest_golden),
	    cmocka_unit_test(test_verify),
	    cmocka_unit_test(test_crafted),
	    cmocka_unit_test(test_html),
	    cmocka_unit_test(test_bad_lines),
	    cmocka_unit_test(test_long_event_type),
	};

	log_init("test", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
