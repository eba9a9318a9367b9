/*
 * Fuzz target for `policyctl audit`: hostile audit files through the
 * summary (text with colour and JSON), --verify, --suggest and --html.
 * The first byte picks filters; the rest is the file. The JSON outputs
 * must parse, the suggestion must load as a configuration, and the page
 * must never carry a raw "<script" of the input outside its own two.
 * Each line also goes through both line parsers: whatever the fast path
 * (policyctl/review_fast.c) accepts, jansson must accept with equal values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "review_int.h"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

typedef int (*review_fn)(FILE *, FILE *, const struct review_opts *);

static char *
run(review_fn fn, const uint8_t *data, size_t size, const struct review_opts *o, int *rc,
    size_t *len)
{
	FILE *in, *out;
	char *text = NULL;

	in = tmpfile();
	CHECK(in != NULL);
	if (size > 0)
		CHECK(fwrite(data, 1, size, in) == size);
	rewind(in);
	out = open_memstream(&text, len);
	CHECK(out != NULL);
	*rc = fn(in, out, o);
	fclose(out);
	fclose(in);
	return text;
}

static int
same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The fast path and jansson agree on one line. */
static void
differential(const uint8_t *p, size_t len)
{
	struct review_event f, j;
	const char *wf, *wj;
	char *a;

	a = malloc(len + 1);
	CHECK(a != NULL);
	memcpy(a, p, len);
	a[len] = '\0';
	wf = review_event_parse(&f, a, len);
	wj = review_event_parse_json(&j, (const char *)p, len);
	CHECK(same(wf, wj));
	if (f.root == NULL && wf == NULL) {
		CHECK(same(f.ts, j.ts) && same(f.event, j.event) && same(f.action, j.action));
		CHECK(same(f.rule, j.rule) && same(f.source, j.source) && same(f.reason, j.reason));
		CHECK(same(f.host, j.host) && same(f.method, j.method) && same(f.path, j.path));
		CHECK(same(f.scheme, j.scheme) && same(f.qtype, j.qtype) && same(f.rcode, j.rcode));
		CHECK(same(f.error, j.error) && same(f.prev, j.prev) && f.dns == j.dns);
		CHECK(f.act == j.act && f.ts_ms == j.ts_ms && f.seq == j.seq && f.port == j.port);
		CHECK(f.status == j.status && f.bytes_up == j.bytes_up);
		CHECK(f.bytes_down == j.bytes_down && f.duration_ms == j.duration_ms);
	}
	review_event_clear(&f);
	review_event_clear(&j);
	free(a);
}

static size_t
count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *globs[] = {NULL, "*.test", "a*", "[", NULL, NULL, "*", "?.example"};
	static FILE *devnull;
	struct review_opts o;
	struct config *cfg;
	struct policy *pol;
	const uint8_t *p, *nl;
	json_error_t jerr;
	struct buf errs;
	json_t *j;
	char *text;
	size_t len;
	int rc;

	if (devnull == NULL) {
		log_init("fuzz", LOG_LVL_ERR);
		devnull = fopen("/dev/null", "w");
	}
	if (size < 1 || size > 200000)
		return 0;
	review_opts_init(&o);
	o.name = "fuzz.jsonl";
	o.err = devnull;
	o.filter.actions = data[0] & 3;
	o.filter.host_glob = globs[(data[0] >> 2) & 7];
	o.filter.events = (data[0] & 0x20) ? "http,dns" : NULL;
	if (data[0] & 0x40)
		o.filter.since_ms = 1795946400000;
	o.color = data[0] >> 7;
	data++;
	size--;
	for (p = data; p < data + size; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(data + size - p))) == NULL)
			nl = data + size;
		differential(p, (size_t)(nl - p));
	}

	text = run(review_summary, data, size, &o, &rc, &len);
	CHECK(rc == 0 && strlen(text) == len);
	free(text);

	o.json = 1;
	text = run(review_summary, data, size, &o, &rc, &len);
	CHECK(rc == 0);
	j = json_loads(text, 0, &jerr);
	CHECK(j != NULL);
	json_decref(j);
	free(text);

	text = run(review_verify, data, size, &o, &rc, &len);
	CHECK(rc == 0 || rc == 1);
	j = json_loads(text, 0, &jerr);
	CHECK(j != NULL);
	CHECK(json_is_true(json_object_get(j, "ok")) == (rc == 0));
	json_decref(j);
	free(text);
	o.json = 0;

	text = run(review_suggest, data, size, &o, &rc, &len);
	CHECK(rc == 0);
	buf_init(&errs);
	cfg = config_load_mem("suggest.yaml", text, len, &errs);
	CHECK(cfg != NULL);
	pol = policy_new(cfg, &errs);
	CHECK(pol != NULL);
	policy_unref(pol);
	buf_free(&errs);
	free(text);

	text = run(review_html, data, size, &o, &rc, &len);
	CHECK(rc == 0);
	CHECK(count(text, "<script") == 2 && count(text, "</script") == 2);
	free(text);
	return 0;
}
