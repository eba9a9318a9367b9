/*
 * Unit tests for policy/audit.c: the fields and their order, omission of
 * absent values, escaping of hostile values, the query-string cut, the
 * SHA-256 chain (recomputed here with OpenSSL) across reopens, partial
 * tails and short writes, stdout and inherited descriptors, the file mode,
 * and four processes appending to one file without tearing a line.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "policy.h"

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"

static char tmpdir[] = "/tmp/test_audit.XXXXXX";

struct lines {
	char **p;
	size_t *len;
	size_t n;
	char *data;
};

static int
setup_dir(void **state)
{
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown_dir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *
tpath(const char *name)
{
	static char path[256];

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

static void
sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0, i;

	assert_int_equal(EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_int_equal(mdlen, 32);
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void
write_raw(const char *path, const void *p, size_t len)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd != -1);
	assert_int_equal(write(fd, p, len), (ssize_t)len);
	close(fd);
}

/* Read a file and split it at newlines; a last line without one counts. */
static void
read_lines(const char *path, struct lines *l)
{
	struct stat st;
	size_t i, start;
	int fd;

	memset(l, 0, sizeof *l);
	fd = open(path, O_RDONLY);
	assert_true(fd != -1);
	assert_int_equal(fstat(fd, &st), 0);
	l->data = xmalloc((size_t)st.st_size + 1);
	assert_int_equal(read(fd, l->data, (size_t)st.st_size), st.st_size);
	close(fd);
	l->data[st.st_size] = '\0';
	l->p = xcalloc((size_t)st.st_size + 1, sizeof *l->p);
	l->len = xcalloc((size_t)st.st_size + 1, sizeof *l->len);
	for (i = start = 0; i < (size_t)st.st_size; i++) {
		if (l->data[i] == '\n') {
			l->p[l->n] = l->data + start;
			l->len[l->n++] = i - start;
			start = i + 1;
		}
	}
	if (start < (size_t)st.st_size) {
		l->p[l->n] = l->data + start;
		l->len[l->n++] = (size_t)st.st_size - start;
	}
}

static void
lines_free(struct lines *l)
{
	free(l->data);
	free(l->p);
	free(l->len);
}

static json_t *
parse(const char *p, size_t len)
{
	json_error_t jerr;

	return json_loadb(p, len, JSON_PRESERVE_ORDER, &jerr);
}

/*
 * Check the chain of a whole file: line 1 holds zeros, every other line the
 * hash of the one before. Lines that are not JSON (partial) are hashed but
 * not checked. Returns the first line whose prev is wrong, or 0, and counts
 * the JSON lines in *good.
 */
static size_t
chain_break(const struct lines *l, size_t *good)
{
	char want[65] = ZEROS;
	json_t *j, *prev;
	size_t i;
	int ok;

	*good = 0;
	for (i = 0; i < l->n; i++) {
		if ((j = parse(l->p[i], l->len[i])) != NULL) {
			prev = json_object_get(j, "prev");
			ok = json_is_string(prev) && strcmp(json_string_value(prev), want) == 0;
			json_decref(j);
			if (!ok)
				return i + 1;
			(*good)++;
		}
		sha256_hex(l->p[i], l->len[i], want);
	}
	return 0;
}

/* The whole chain holds and has this many JSON lines. */
static void
assert_chain(const struct lines *l, size_t want_good)
{
	size_t good, bad;

	if ((bad = chain_break(l, &good)) != 0)
		fail_msg("line %zu: prev does not chain", bad);
	assert_int_equal(good, want_good);
}

static struct audit *
open_ok(const char *path)
{
	struct audit *a;
	char err[256] = "";

	a = audit_open(path, err, sizeof err);
	if (a == NULL)
		fail_msg("audit_open %s: %s", path, err);
	return a;
}

static void
write_simple(struct audit *a, const char *host)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.host = host;
	assert_int_equal(audit_write(a, &ev), 0);
}

/* Write one event to a new file and return its only line, parsed. */
static json_t *
one_line(const char *name, const struct audit_event *ev)
{
	struct audit *a;
	struct lines l;
	json_t *j;

	a = open_ok(tpath(name));
	assert_int_equal(audit_write(a, ev), 0);
	audit_close(a);
	read_lines(tpath(name), &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.data[l.len[0]], '\n');
	j = parse(l.p[0], l.len[0]);
	lines_free(&l);
	assert_non_null(j);
	return j;
}

static void
assert_keys(json_t *j, const char *const *keys, size_t n)
{
	void *it;
	size_t i = 0;

	for (it = json_object_iter(j); it != NULL; it = json_object_iter_next(j, it), i++) {
		if (i >= n)
			fail_msg("extra key %s", json_object_iter_key(it));
		if (strcmp(json_object_iter_key(it), keys[i]) != 0)
			fail_msg("key %zu is %s, want %s", i, json_object_iter_key(it), keys[i]);
	}
	assert_int_equal(i, n);
}

static const char *
sval(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static json_int_t
ival(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return json_integer_value(v);
}

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

static void
test_chain_and_seq(void **state)
{
	struct audit *a;
	struct lines l;
	char want[65];
	json_t *j;
	size_t i;

	a = open_ok(tpath("chain.jsonl"));
	for (i = 0; i < 5; i++)
		write_simple(a, "example.com");
	audit_close(a);
	read_lines(tpath("chain.jsonl"), &l);
	assert_int_equal(l.n, 5);
	for (i = 0; i < l.n; i++) {
		j = parse(l.p[i], l.len[i]);
		assert_non_null(j);
		assert_int_equal(ival(j, "seq"), i + 1);
		if (i == 0)
			assert_string_equal(sval(j, "prev"), ZEROS);
		else {
			sha256_hex(l.p[i - 1], l.len[i - 1], want);
			assert_string_equal(sval(j, "prev"), want);
		}
		json_decref(j);
	}
	assert_chain(&l, 5);
	/* The check can fail: an edited line breaks the next one's prev. */
	strstr(l.p[2], "example.com")[0] = 'E';
	assert_int_equal(chain_break(&l, &i), 4);
	lines_free(&l);
}

static int wakeups;

static void
count_wakeup(void *arg)
{
	(void)arg;
	wakeups++;
}

/* Batched: nothing reaches the file before a flush, then every line does. */
static void
test_batch(void **state)
{
	struct audit *a;
	struct lines l;
	struct stat st;
	int i;

	wakeups = 0;
	a = open_ok(tpath("batch.jsonl"));
	audit_set_batch(a, count_wakeup, NULL);
	for (i = 0; i < 3; i++)
		write_simple(a, "example.com");
	assert_int_equal(wakeups, 1); /* once, when the first line became pending */
	assert_int_equal(stat(tpath("batch.jsonl"), &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(audit_flush(a), 0);
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 3);
	lines_free(&l);
	/* A new batch wakes its owner again; close writes what is pending. */
	write_simple(a, "example.org");
	write_simple(a, "example.net");
	assert_int_equal(wakeups, 2);
	audit_close(a);
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 5);
	assert_chain(&l, 5);
	lines_free(&l);
	/* Turning batching off flushes, then each line is written at once. */
	a = open_ok(tpath("batch.jsonl"));
	audit_set_batch(a, count_wakeup, NULL);
	write_simple(a, "example.com");
	audit_set_batch(a, NULL, NULL);
	write_simple(a, "example.com");
	read_lines(tpath("batch.jsonl"), &l);
	assert_int_equal(l.n, 7);
	assert_chain(&l, 7);
	lines_free(&l);
	audit_close(a);
}

static void
test_reopen_continues(void **state)
{
	struct audit *a;
	struct lines l;
	json_t *j;
	int run, i;

	for (run = 0; run < 3; run++) {
		a = open_ok(tpath("reopen.jsonl"));
		for (i = 0; i < 3; i++)
			write_simple(a, "example.com");
		audit_close(a);
	}
	read_lines(tpath("reopen.jsonl"), &l);
	assert_int_equal(l.n, 9);
	assert_chain(&l, 9);
	/* seq restarts with each run; the chain does not. */
	j = parse(l.p[3], l.len[3]);
	assert_int_equal(ival(j, "seq"), 1);
	assert_string_not_equal(sval(j, "prev"), ZEROS);
	json_decref(j);
	lines_free(&l);
}

static void
test_partial_tail(void **state)
{
	static const char partial[] = "{\"v\":1,\"ts\":\"2026-01-01T00:00";
	struct audit *a;
	struct lines l;
	char want[65];
	json_t *j;

	/* A run, then a truncated line, then a new run. */
	a = open_ok(tpath("partial.jsonl"));
	write_simple(a, "one.example");
	audit_close(a);
	a = open_ok(tpath("partial.jsonl"));
	audit_close(a); /* a run that writes nothing leaves the file alone */
	{
		int fd = open(tpath("partial.jsonl"), O_WRONLY | O_APPEND);

		assert_true(fd != -1);
		assert_int_equal(write(fd, partial, strlen(partial)), (ssize_t)strlen(partial));
		close(fd);
	}
	a = open_ok(tpath("partial.jsonl"));
	write_simple(a, "two.example");
	write_simple(a, "three.example");
	audit_close(a);

	read_lines(tpath("partial.jsonl"), &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.len[1], strlen(partial));
	assert_memory_equal(l.p[1], partial, strlen(partial));
	assert_null(parse(l.p[1], l.len[1]));
	j = parse(l.p[2], l.len[2]);
	assert_non_null(j);
	sha256_hex(partial, strlen(partial), want);
	assert_string_equal(sval(j, "prev"), want);
	assert_string_equal(sval(j, "host"), "two.example");
	json_decref(j);
	assert_chain(&l, 3);
	lines_free(&l);

	/* A file that is nothing but a partial line. */
	write_raw(tpath("partial-only.jsonl"), "garbage", 7);
	a = open_ok(tpath("partial-only.jsonl"));
	write_simple(a, "x.example");
	audit_close(a);
	read_lines(tpath("partial-only.jsonl"), &l);
	assert_int_equal(l.n, 2);
	sha256_hex("garbage", 7, want);
	j = parse(l.p[1], l.len[1]);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);
}

/* Odd tails: an empty last line, and last lines longer than one block. */
static void
test_tail_shapes(void **state)
{
	static const size_t sizes[] = {65535, 65536, 65537, 200000};
	struct audit *a;
	struct lines l;
	char want[65], *big;
	json_t *j;
	size_t i;

	write_raw(tpath("empty-last.jsonl"), "first\n\n", 7);
	a = open_ok(tpath("empty-last.jsonl"));
	write_simple(a, "x.example");
	audit_close(a);
	read_lines(tpath("empty-last.jsonl"), &l);
	assert_int_equal(l.n, 3);
	j = parse(l.p[2], l.len[2]);
	sha256_hex("", 0, want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);

	big = xmalloc(300000);
	for (i = 0; i < EG_NELEM(sizes); i++) {
		memset(big, 'p', 100);
		big[100] = '\n';
		memset(big + 101, 'q', sizes[i]);
		big[101 + sizes[i]] = '\n';
		write_raw(tpath("long-last.jsonl"), big, sizes[i] + 102);
		a = open_ok(tpath("long-last.jsonl"));
		write_simple(a, "x.example");
		audit_close(a);
		read_lines(tpath("long-last.jsonl"), &l);
		assert_int_equal(l.n, 3);
		j = parse(l.p[2], l.len[2]);
		sha256_hex(big + 101, sizes[i], want);
		assert_string_equal(sval(j, "prev"), want);
		json_decref(j);
		lines_free(&l);
	}
	free(big);
}

static void
test_oversize_tail(void **state)
{
	char err[256] = "";
	size_t len = 5 * 1024 * 1024;
	char *big;

	big = xmalloc(len);
	memset(big, 'x', len);
	write_raw(tpath("oversize.jsonl"), big, len);
	free(big);
	assert_null(audit_open(tpath("oversize.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "longer than"));
}

static void
test_file_mode(void **state)
{
	struct audit *a;
	struct stat st;
	mode_t old;

	old = umask(0);
	a = open_ok(tpath("mode.jsonl"));
	umask(old);
	write_simple(a, "x.example");
	audit_close(a);
	assert_int_equal(stat(tpath("mode.jsonl"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(S_ISREG(st.st_mode));
}

static void
test_refused_paths(void **state)
{
	char err[256], target[256];

	err[0] = '\0';
	assert_int_equal(mkdir(tpath("adir"), 0700), 0);
	assert_null(audit_open(tpath("adir"), err, sizeof err));
	assert_non_null(strstr(err, "cannot open "));
	assert_non_null(strstr(err, "adir: Is a directory"));

	snprintf(target, sizeof target, "%s", tpath("target.jsonl"));
	write_raw(target, "", 0);
	assert_int_equal(symlink(target, tpath("link.jsonl")), 0);
	assert_null(audit_open(tpath("link.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "symbolic link"));

	/* A FIFO with no reader: refused at once, no hang. */
	assert_int_equal(mkfifo(tpath("fifo"), 0600), 0);
	assert_null(audit_open(tpath("fifo"), err, sizeof err));
	assert_non_null(strstr(err, "not a regular file"));

	assert_null(audit_open(tpath("missing/dir/log.jsonl"), err, sizeof err));
	assert_non_null(strstr(err, "log.jsonl: No such file or directory"));
	assert_null(audit_open("/dev/null", err, sizeof err));
	assert_non_null(strstr(err, "/dev/null: not a regular file"));

	/* No error buffer: still NULL, no crash. */
	assert_null(audit_open(tpath("adir"), NULL, 0));
	assert_null(audit_open(tpath("adir"), err, 1));
	assert_int_equal(err[0], '\0');
}

/* "-" writes to stdout, here a pipe: the chain starts from zeros, fd 1 stays. */
static void
test_stdout_pipe(void **state)
{
	struct audit *a;
	struct lines l;
	char buf[8192], want[65];
	int p[2], saved;
	ssize_t n;
	json_t *j;

	fflush(stdout);
	assert_int_equal(pipe(p), 0);
	saved = dup(STDOUT_FILENO);
	assert_true(saved != -1);
	assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
	close(p[1]);
	a = audit_open("-", NULL, 0);
	if (a != NULL) {
		write_simple(a, "one.example");
		write_simple(a, "two.example");
		audit_close(a);
	}
	/* audit_close did not close stdout. */
	assert_true(fcntl(STDOUT_FILENO, F_GETFD) != -1);
	assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	assert_non_null(a);
	n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	assert_true(n > 0);
	write_raw(tpath("stdout.jsonl"), buf, (size_t)n);
	read_lines(tpath("stdout.jsonl"), &l);
	assert_int_equal(l.n, 2);
	j = parse(l.p[0], l.len[0]);
	assert_string_equal(sval(j, "prev"), ZEROS);
	json_decref(j);
	j = parse(l.p[1], l.len[1]);
	sha256_hex(l.p[0], l.len[0], want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	lines_free(&l);
}

/* An inherited write-only descriptor of a regular file ("egressd >>log"). */
static void
test_open_fd_file(void **state)
{
	struct audit *a;
	struct lines l;
	char err[256];
	int fd;

	a = open_ok(tpath("fd.jsonl"));
	write_simple(a, "one.example");
	write_simple(a, "two.example");
	audit_close(a);

	/* Without O_APPEND and at offset 0: the writer must still append. */
	fd = open(tpath("fd.jsonl"), O_WRONLY);
	assert_true(fd > STDERR_FILENO);
	a = audit_open_fd(fd, err, sizeof err);
	assert_non_null(a);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	write_simple(a, "three.example");
	audit_close(a);
	assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed: it was owned */
	assert_int_equal(errno, EBADF);

	read_lines(tpath("fd.jsonl"), &l);
	assert_int_equal(l.n, 3);
	assert_chain(&l, 3);
	lines_free(&l);

	fd = open(tpath("fd.jsonl"), O_RDONLY);
	assert_null(audit_open_fd(fd, err, sizeof err));
	assert_non_null(strstr(err, "not open for writing"));
	close(fd);
	assert_null(audit_open_fd(-1, err, sizeof err));
}

/*
 * A short write (file size limit) leaves torn bytes; the next line starts
 * after a newline and chains from them. A write that writes nothing leaves
 * the chain as it was. Runs in a child so the limit stays there.
 */
static int
limited_write(struct audit *a, const char *path, off_t room, const char *event)
{
	struct audit_event ev;
	struct rlimit rl;
	struct stat st;

	stat(path, &st);
	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = (rlim_t)(st.st_size + room);
	setrlimit(RLIMIT_FSIZE, &rl);
	audit_event_init(&ev);
	ev.event = event;
	return audit_write(a, &ev);
}

/*
 * Short writes (a file size limit) leave torn bytes; the next line starts
 * after a newline and chains from them. A write that writes nothing leaves
 * the chain as it was. Runs in a child so the limit stays there.
 */
static void
test_short_write(void **state)
{
	const char *path = tpath("short.jsonl");
	struct audit *a;
	struct rlimit rl;
	struct lines l;
	char want[65];
	pid_t pid;
	int status;
	json_t *j;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		int bad = 0;

		signal(SIGXFSZ, SIG_IGN);
		if ((a = audit_open(path, NULL, 0)) == NULL)
			_exit(10);
		write_simple(a, "one.example");
		/* seq 2: 40 bytes land, the line is torn. */
		bad |= limited_write(a, path, 40, "tcp") != -1;
		/* seq 3: no room at all, nothing lands. */
		bad |= limited_write(a, path, 0, "dns") != -1;
		/* seq 4: "\n" and 29 bytes land: a second torn line. */
		bad |= limited_write(a, path, 30, "tls") != -1;
		/* seq 5: only the "\n" lands, which ends the torn line. */
		bad |= limited_write(a, path, 1, "connect") != -1;
		getrlimit(RLIMIT_FSIZE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_FSIZE, &rl);
		write_simple(a, "six.example");
		audit_close(a);
		_exit(bad ? 11 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	read_lines(path, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.len[1], 40);
	assert_null(parse(l.p[1], l.len[1]));
	assert_int_equal(l.len[2], 29);
	assert_memory_equal(l.p[2], "{\"v\":1", 6);
	j = parse(l.p[3], l.len[3]);
	assert_non_null(j);
	assert_int_equal(ival(j, "seq"), 6); /* the gap shows lines were lost */
	assert_string_equal(sval(j, "host"), "six.example");
	sha256_hex(l.p[2], 29, want);
	assert_string_equal(sval(j, "prev"), want);
	json_decref(j);
	assert_chain(&l, 2);
	lines_free(&l);
}

#define CONC_PROCS  4
#define CONC_EVENTS 2000

static void
conc_child(int id)
{
	struct audit_event ev;
	struct audit *a;
	char client[32], path[64];
	int i, bad = 0;

	if ((a = audit_open(tpath("conc.jsonl"), NULL, 0)) == NULL)
		_exit(10);
	snprintf(client, sizeof client, "child-%d", id);
	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.client = client;
	ev.host = "concurrent.example";
	ev.method = "GET";
	ev.path = path;
	for (i = 0; i < CONC_EVENTS; i++) {
		/* Lines of varying length, some crossing page boundaries. */
		snprintf(path, sizeof path, "/%d/%.*s", i, i % 40,
		         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		ev.bytes_up = i;
		bad |= audit_write(a, &ev) != 0;
	}
	audit_close(a);
	_exit(bad ? 11 : 0);
}

static void
test_concurrent(void **state)
{
	static char hashes[CONC_PROCS][CONC_EVENTS][65];
	static int seen[CONC_PROCS][CONC_EVENTS];
	static json_t *js[CONC_PROCS * CONC_EVENTS];
	pid_t pids[CONC_PROCS];
	struct lines l;
	struct stat st;
	int i, id, status;
	json_int_t seq;
	size_t k;

	write_raw(tpath("conc.jsonl"), "", 0);
	for (i = 0; i < CONC_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] != -1);
		if (pids[i] == 0)
			conc_child(i);
	}
	for (i = 0; i < CONC_PROCS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(stat(tpath("conc.jsonl"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	read_lines(tpath("conc.jsonl"), &l);
	assert_int_equal(l.n, CONC_PROCS * CONC_EVENTS);
	assert_int_equal(l.data[st.st_size - 1], '\n');
	memset(seen, 0, sizeof seen);
	for (k = 0; k < l.n; k++) {
		if ((js[k] = parse(l.p[k], l.len[k])) == NULL)
			fail_msg("line %zu is not JSON", k + 1);
		assert_int_equal(sscanf(sval(js[k], "client"), "child-%d", &id), 1);
		assert_true(id >= 0 && id < CONC_PROCS);
		seq = ival(js[k], "seq");
		assert_true(seq >= 1 && seq <= CONC_EVENTS);
		assert_int_equal(seen[id][seq - 1]++, 0);
		assert_int_equal(ival(js[k], "bytes_up"), seq - 1);
		sha256_hex(l.p[k], l.len[k], hashes[id][seq - 1]);
	}
	/* Each writer's own lines form a chain: seq k+1 holds the hash of seq k. */
	for (k = 0; k < l.n; k++) {
		sscanf(sval(js[k], "client"), "child-%d", &id);
		seq = ival(js[k], "seq");
		if (seq > 1)
			assert_string_equal(sval(js[k], "prev"), hashes[id][seq - 2]);
		json_decref(js[k]);
	}
	lines_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_event_init),     cmocka_unit_test(test_all_fields),
	    cmocka_unit_test(test_absent_fields),  cmocka_unit_test(test_graphql),
	    cmocka_unit_test(test_hostile_values), cmocka_unit_test(test_path_query_cut),
	    cmocka_unit_test(test_truncation),     cmocka_unit_test(test_event_required),
	    cmocka_unit_test(test_chain_and_seq),  cmocka_unit_test(test_reopen_continues),
	    cmocka_unit_test(test_partial_tail),   cmocka_unit_test(test_tail_shapes),
	    cmocka_unit_test(test_oversize_tail),  cmocka_unit_test(test_file_mode),
	    cmocka_unit_test(test_refused_paths),  cmocka_unit_test(test_stdout_pipe),
	    cmocka_unit_test(test_open_fd_file),   cmocka_unit_test(test_short_write),
	    cmocka_unit_test(test_concurrent),     cmocka_unit_test(test_batch),
	};

	log_init("test_policy_audit", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
