/*
 * Unit tests for proxy/metrics.c: the Prometheus text exposition written
 * from a snapshot made here (every line a HELP, a TYPE or a sample of the
 * family just introduced, valid names, counters ending _total, label
 * values escaped, each counter's value where it belongs, no label with a
 * host name), and the table of the hosts blocked most (bounded however
 * many names are blocked, the heavy hitters kept and ordered).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy.h"

static int
name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == ':'))
			return 0;
	return 1;
}

/*
 * Checks the exposition's grammar line by line: HELP then TYPE introduce a
 * family, each sample belongs to the family last introduced (or its
 * _bucket/_sum/_count), label values are quoted with only \\ \" \n escapes,
 * and a value follows. Returns the number of samples.
 */
static int
check_grammar(const char *text)
{
	char family[128] = "", type[16] = "";
	const char *line = text, *end, *p, *name_end;
	int samples = 0;

	while (*line != '\0') {
		end = strchr(line, '\n');
		assert_non_null(end); /* every line ends with a newline */
		if (strncmp(line, "# HELP ", 7) == 0) {
			p = line + 7;
			name_end = strchr(p, ' ');
			assert_true(name_end != NULL && name_end < end);
			assert_true(name_ok(p, (size_t)(name_end - p)));
			snprintf(family, sizeof family, "%.*s", (int)(name_end - p), p);
		} else if (strncmp(line, "# TYPE ", 7) == 0) {
			p = line + 7;
			assert_int_equal(strncmp(p, family, strlen(family)), 0);
			p += strlen(family);
			assert_true(*p == ' ');
			snprintf(type, sizeof type, "%.*s", (int)(end - p - 1), p + 1);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0);
			/* Counters are named for what they count, ending _total. */
			if (strcmp(type, "counter") == 0)
				assert_non_null(strstr(family, "_total"));
		} else {
			assert_true(line[0] != '#');
			for (p = line; p < end && *p != '{' && *p != ' '; p++)
				;
			assert_true((size_t)(p - line) == strlen(family) &&
			            strncmp(line, family, strlen(family)) == 0);
			if (*p == '{') {
				for (p++; *p != '}';) {
					name_end = strchr(p, '=');
					assert_true(name_end != NULL && name_end < end);
					assert_true(name_ok(p, (size_t)(name_end - p)));
					/* No host names: only these label names exist. */
					assert_true(strncmp(p, "event=", 6) == 0 ||
					            strncmp(p, "action=", 7) == 0 ||
					            strncmp(p, "direction=", 10) == 0 ||
					            strncmp(p, "cache=", 6) == 0 ||
					            strncmp(p, "listener=", 9) == 0 ||
					            strncmp(p, "kind=", 5) == 0 ||
					            strncmp(p, "result=", 7) == 0 ||
					            strncmp(p, "mode=", 5) == 0 ||
					            strncmp(p, "limit=", 6) == 0 ||
					            strncmp(p, "version=", 8) == 0);
					p = name_end + 1;
					assert_true(*p == '"');
					for (p++; *p != '"'; p++) {
						assert_true(p < end);
						if (*p == '\\') {
							p++;
							assert_true(*p == '\\' || *p == '"' ||
							            *p == 'n');
						}
					}
					p++;
					assert_true(*p == ',' || *p == '}');
					if (*p == ',')
						p++;
				}
				p++;
			}
			assert_true(*p == ' ');
			assert_true(p + 1 < end);
			strtod(p + 1, (char **)&name_end);
			assert_true(name_end == end);
			samples++;
		}
		line = end + 1;
	}
	return samples;
}

/* The value of the sample whose line starts with prefix ("name{labels} "). */
static double
sample(const char *text, const char *prefix)
{
	const char *p = text;
	size_t n = strlen(prefix);

	while ((p = strstr(p, prefix)) != NULL) {
		if (p == text || p[-1] == '\n')
			return strtod(p + n, NULL);
		p += n;
	}
	fail_msg("no sample %s", prefix);
	return -1;
}

static void
test_exposition(void **state)
{
	struct metrics m;
	struct metrics_snapshot s;
	struct buf b;

	memset(&m, 0, sizeof m);
	memset(&s, 0, sizeof s);
	m.requests[METRICS_EV_HTTP][ACTION_ALLOW] = 7;
	m.requests[METRICS_EV_HTTP][ACTION_BLOCK] = 3;
	m.requests[METRICS_EV_CONNECT][ACTION_FLAG] = 2;
	m.requests[METRICS_EV_TLS][ACTION_BLOCK] = 1;
	m.bytes_up = 123456789012ull;
	m.bytes_down = 5;
	m.accepted[1] = 9;
	m.reloads[1] = 4;
	m.packets_dropped = 11;
	s.m = &m;
	s.version = "1.2 \"quoted\" \\ back\nslash";
	s.start_time = 1700000000.5;
	s.policy_loaded = 1700000001.25;
	s.generation = 3;
	s.mode = "strict";
	s.dns[ACTION_BLOCK][1] = 6;
	s.open[METRICS_CONN_TUNNEL] = 2;
	s.has_ca = 1;
	s.ca_not_after = 1700600000;
	s.leaves_minted = 12;
	s.audit_lines = 40;
	s.audit_errors = 1;
	buf_init(&b);
	metrics_format(&s, &b);
	assert_true(check_grammar(b.data) > 40);
	assert_true(sample(b.data, "egressd_requests_total{event=\"http\",action=\"allow\"} ") ==
	            7);
	assert_true(sample(b.data, "egressd_requests_total{event=\"http\",action=\"block\"} ") ==
	            3);
	assert_true(sample(b.data, "egressd_requests_total{event=\"connect\",action=\"flag\"} ") ==
	            2);
	assert_true(sample(b.data, "egressd_requests_total{event=\"tls\",action=\"block\"} ") == 1);
	assert_non_null(strstr(b.data, "egressd_bytes_total{direction=\"up\"} 123456789012\n"));
	assert_true(sample(b.data, "egressd_dns_queries_total{action=\"block\",cache=\"hit\"} ") ==
	            6);
	assert_true(
	    sample(b.data, "egressd_connections_accepted_total{listener=\"transparent\"} ") == 9);
	assert_true(sample(b.data, "egressd_connections_open{kind=\"tunnel\"} ") == 2);
	assert_true(sample(b.data, "egressd_policy_generation ") == 3);
	assert_true(sample(b.data, "egressd_policy_reloads_total{result=\"failed\"} ") == 4);
	assert_true(sample(b.data, "egressd_policy_mode{mode=\"strict\"} ") == 1);
	assert_true(sample(b.data, "egressd_policy_mode{mode=\"practical\"} ") == 0);
	assert_true(sample(b.data, "egressd_tls_leaves_minted_total ") == 12);
	assert_true(sample(b.data, "egressd_ca_expiry_timestamp_seconds ") == 1700600000);
	assert_true(sample(b.data, "egressd_audit_lines_total ") == 40);
	assert_true(sample(b.data, "egressd_audit_write_errors_total ") == 1);
	assert_true(sample(b.data, "egressd_packets_dropped_total ") == 11);
	assert_true(sample(b.data, "egressd_start_time_seconds ") == 1700000000.5);
	assert_non_null(strstr(b.data, "egressd_build_info{version=\"1.2 \\\"quoted\\\" \\\\ "
	                               "back\\nslash\"} 1\n"));
	buf_free(&b);

	/* Without a CA its metrics are left out, the rest stays well formed. */
	s.has_ca = 0;
	buf_init(&b);
	metrics_format(&s, &b);
	check_grammar(b.data);
	assert_null(strstr(b.data, "egressd_ca_expiry_timestamp_seconds"));
	buf_free(&b);
}

static void
test_blocked(void **state)
{
	const struct metrics_blocked *top[10], *all[METRICS_BLOCKED_MAX + 10];
	struct metrics m;
	struct decision d;
	char host[64];
	size_t n, i;

	memset(&m, 0, sizeof m);
	memset(&d, 0, sizeof d);
	d.action = ACTION_BLOCK;
	strcpy(d.rule, "*.segment.io");
	d.list = POLICY_LIST_BLOCKLIST;
	strcpy(d.source, "/etc/policy.yaml:12");
	assert_int_equal(metrics_blocked_top(&m, top, 10), 0);
	/* Two heavy hitters among 10000 names blocked once each. */
	for (i = 0; i < 10000; i++) {
		snprintf(host, sizeof host, "n%zu.example.test", i);
		metrics_blocked_note(&m, host, &d);
		if (i % 10 == 0)
			metrics_blocked_note(&m, "api.segment.io", &d);
		if (i % 20 == 0)
			metrics_blocked_note(&m, "ads.example.test", &d);
	}
	n = metrics_blocked_top(&m, top, 10);
	assert_int_equal(n, 10);
	assert_string_equal(top[0]->host, "api.segment.io");
	assert_int_equal(top[0]->count, 1000);
	assert_string_equal(top[0]->rule, "*.segment.io");
	assert_string_equal(top[0]->source, "/etc/policy.yaml:12");
	assert_string_equal(top[1]->host, "ads.example.test");
	assert_int_equal(top[1]->count, 500);
	for (i = 1; i < n; i++)
		assert_true(top[i - 1]->count >= top[i]->count);
	/* The table never grows past its bound. */
	n = metrics_blocked_top(&m, all, EG_NELEM(all));
	assert_int_equal(n, METRICS_BLOCKED_MAX);
	metrics_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exposition),
	    cmocka_unit_test(test_blocked),
	};

	log_init("test", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
