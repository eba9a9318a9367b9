/*
 * The summary of `policyctl audit`: the session's span, counts by action
 * and event type, a table of hosts, then every block and flag. Events are
 * tallied as the file streams by; the blocks and flags go to a temporary
 * file meanwhile, so a log of any size is summarised in bounded memory
 * (the host table aside). Every string from the log is escaped before it
 * reaches a terminal: the log holds whatever hosts and paths a client sent.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "review_int.h"

void
review_summary_init(struct review_summary *s, const char *name)
{
	memset(s, 0, sizeof *s);
	s->name = name;
	s->first_ms = INT64_MAX;
	s->last_ms = INT64_MIN;
	s->hcap = 256;
	s->hosts = xcalloc(s->hcap, sizeof *s->hosts);
}

void
review_summary_free(struct review_summary *s)
{
	size_t i;

	for (i = 0; i < s->hcap; i++) {
		if (s->hosts[i] == NULL)
			continue;
		free(s->hosts[i]->name);
		free(s->hosts[i]->rule);
		free(s->hosts[i]);
	}
	free(s->hosts);
}

void
review_summary_bad(struct review_summary *s, unsigned long line, const char *why)
{
	if (s->bad < REVIEW_SHOW_BAD) {
		s->bad_lines[s->bad] = line;
		s->bad_why[s->bad] = why;
	}
	s->bad++;
}

static uint64_t
review_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static void
review_hosts_grow(struct review_summary *s)
{
	struct review_host **old = s->hosts;
	size_t oldcap = s->hcap, i, j;

	s->hcap *= 2;
	s->hosts = xcalloc(s->hcap, sizeof *s->hosts);
	for (i = 0; i < oldcap; i++) {
		if (old[i] == NULL)
			continue;
		for (j = review_hash(old[i]->name) & (s->hcap - 1); s->hosts[j] != NULL;
		     j = (j + 1) & (s->hcap - 1))
			;
		s->hosts[j] = old[i];
	}
	free(old);
}

/* The tally of a host, or NULL. */
struct review_host *
review_summary_find(const struct review_summary *s, const char *name)
{
	size_t i;

	for (i = review_hash(name) & (s->hcap - 1); s->hosts[i] != NULL;
	     i = (i + 1) & (s->hcap - 1))
		if (strcmp(s->hosts[i]->name, name) == 0)
			return s->hosts[i];
	return NULL;
}

static struct review_host *
review_host_get(struct review_summary *s, const char *name)
{
	struct review_host *h;
	size_t i;

	if (2 * (s->nhosts + 1) > s->hcap)
		review_hosts_grow(s);
	for (i = review_hash(name) & (s->hcap - 1); s->hosts[i] != NULL;
	     i = (i + 1) & (s->hcap - 1))
		if (strcmp(s->hosts[i]->name, name) == 0)
			return s->hosts[i];
	h = xcalloc(1, sizeof *h);
	h->name = xstrdup(name);
	s->hosts[i] = h;
	s->nhosts++;
	return h;
}

static void
review_host_method(struct review_host *h, const char *m)
{
	unsigned i;

	for (i = 0; i < h->nmethods; i++)
		if (strncmp(h->methods[i], m, REVIEW_METHOD_SZ - 1) == 0)
			return;
	if (h->nmethods == REVIEW_METHODS) {
		h->more_methods = 1;
		return;
	}
	str_copy(h->methods[h->nmethods++], REVIEW_METHOD_SZ, m);
}

static void
review_count_type(struct review_summary *s, const char *type)
{
	unsigned i;

	for (i = 0; i < s->ntypes; i++)
		if (strncmp(s->types[i], type, sizeof s->types[i]) == 0) {
			s->type_n[i]++;
			return;
		}
	if (s->ntypes == EG_NELEM(s->types) || strlen(type) >= sizeof s->types[0]) {
		s->other_types++;
		return;
	}
	str_copy(s->types[s->ntypes], sizeof s->types[0], type);
	s->type_n[s->ntypes++] = 1;
}

/* Tally one event that passed the filter. */
void
review_summary_add(struct review_summary *s, const struct review_event *ev)
{
	struct review_host *h;

	s->events++;
	s->count[ev->act]++;
	review_count_type(s, ev->event);
	if (ev->ts_ms < s->first_ms) {
		s->first_ms = ev->ts_ms;
		str_copy(s->first_ts, sizeof s->first_ts, ev->ts);
	}
	if (ev->ts_ms > s->last_ms) {
		s->last_ms = ev->ts_ms;
		str_copy(s->last_ts, sizeof s->last_ts, ev->ts);
	}
	if (ev->act == REVIEW_ACT_BLOCK || ev->act == REVIEW_ACT_FLAG)
		s->nviol++;
	if (ev->host == NULL || *ev->host == '\0')
		return;
	h = review_host_get(s, ev->host);
	h->n++;
	h->count[ev->act]++;
	if (ev->dns)
		h->dns++;
	if (ev->method != NULL)
		review_host_method(h, ev->method);
	if (ev->bytes_up > 0)
		h->up += (uint64_t)ev->bytes_up;
	if (ev->bytes_down > 0)
		h->down += (uint64_t)ev->bytes_down;
	if (h->rule == NULL && ev->rule != NULL &&
	    (ev->act == REVIEW_ACT_BLOCK || ev->act == REVIEW_ACT_FLAG))
		h->rule = xstrdup(ev->rule);
}

static int
review_host_cmp(const void *a, const void *b)
{
	const struct review_host *x = *(const struct review_host *const *)a;
	const struct review_host *y = *(const struct review_host *const *)b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The hosts, most requests first; the caller frees the array. */
struct review_host **
review_summary_sorted(const struct review_summary *s)
{
	struct review_host **v;
	size_t i, n = 0;

	v = xcalloc(s->nhosts + 1, sizeof *v);
	for (i = 0; i < s->hcap; i++)
		if (s->hosts[i] != NULL)
			v[n++] = s->hosts[i];
	qsort(v, n, sizeof *v, review_host_cmp);
	return v;
}

static void
review_json_str(struct buf *b, const char *key, const char *v)
{
	buf_printf(b, ",\"%s\":", key);
	json_escape_str(b, v);
}

static void
review_json_int(struct buf *b, const char *key, int64_t v)
{
	if (v >= 0)
		buf_printf(b, ",\"%s\":%" PRId64, key, v);
	else
		buf_printf(b, ",\"%s\":null", key);
}

/* One block or flag as a JSON object. */
void
review_summary_json_event(struct buf *b, const struct review_event *ev)
{
	buf_printf(b, "{\"line\":%lu", ev->line);
	review_json_str(b, "ts", ev->ts);
	review_json_str(b, "event", ev->event);
	review_json_str(b, "action", ev->action);
	review_json_str(b, "method", ev->method);
	review_json_str(b, "host", ev->host);
	review_json_int(b, "port", ev->port);
	review_json_str(b, "path", ev->path);
	review_json_int(b, "status", ev->status);
	review_json_str(b, "rule", ev->rule);
	review_json_str(b, "source", ev->source);
	review_json_str(b, "reason", ev->reason);
	buf_addc(b, '}');
}

static void
review_json_hosts(struct buf *b, const struct review_summary *s)
{
	struct review_host **v, *h;
	size_t i;
	unsigned m;

	v = review_summary_sorted(s);
	buf_adds(b, ",\"hosts\":[");
	for (i = 0; (h = v[i]) != NULL; i++) {
		buf_adds(b, i > 0 ? ",{\"host\":" : "{\"host\":");
		json_escape_str(b, h->name);
		buf_printf(b, ",\"requests\":%" PRIu64 ",\"dns\":%" PRIu64 ",\"methods\":[", h->n,
		           h->dns);
		for (m = 0; m < h->nmethods; m++) {
			if (m > 0)
				buf_addc(b, ',');
			json_escape_str(b, h->methods[m]);
		}
		buf_printf(b,
		           "],\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64
		           ",\"allow\":%" PRIu64 ",\"flag\":%" PRIu64 ",\"block\":%" PRIu64 "}",
		           h->up, h->down, h->count[REVIEW_ACT_ALLOW], h->count[REVIEW_ACT_FLAG],
		           h->count[REVIEW_ACT_BLOCK]);
	}
	buf_addc(b, ']');
	free(v);
}

static int
review_json_summary(FILE *out, const struct review_summary *s, FILE *viol)
{
	char blk[REVIEW_BLOCK];
	struct buf b;
	unsigned i;
	size_t n;

	buf_init(&b);
	buf_adds(&b, "{\"file\":");
	json_escape_str(&b, s->name);
	buf_printf(&b, ",\"lines\":%lu,\"events\":%lu,\"bad_lines\":{\"count\":%lu,\"first\":[",
	           s->lines, s->events, s->bad);
	for (i = 0; i < s->bad && i < REVIEW_SHOW_BAD; i++) {
		buf_printf(&b, "%s{\"line\":%lu,\"why\":", i > 0 ? "," : "", s->bad_lines[i]);
		json_escape_str(&b, s->bad_why[i]);
		buf_addc(&b, '}');
	}
	buf_printf(&b, "]},\"partial_tail\":%s", s->partial_tail ? "true" : "false");
	review_json_str(&b, "first", s->events > 0 ? s->first_ts : NULL);
	review_json_str(&b, "last", s->events > 0 ? s->last_ts : NULL);
	review_json_int(&b, "duration_ms", s->events > 0 ? s->last_ms - s->first_ms : -1);
	buf_printf(&b,
	           ",\"actions\":{\"allow\":%" PRIu64 ",\"flag\":%" PRIu64 ",\"block\":%" PRIu64
	           ",\"none\":%" PRIu64 "},\"event_types\":{",
	           s->count[REVIEW_ACT_ALLOW], s->count[REVIEW_ACT_FLAG],
	           s->count[REVIEW_ACT_BLOCK], s->count[REVIEW_ACT_NONE]);
	for (i = 0; i < s->ntypes; i++) {
		if (i > 0)
			buf_addc(&b, ',');
		json_escape_str(&b, s->types[i]);
		buf_printf(&b, ":%" PRIu64, s->type_n[i]);
	}
	if (s->other_types > 0)
		buf_printf(&b, "%s\"(other)\":%" PRIu64, s->ntypes > 0 ? "," : "", s->other_types);
	buf_addc(&b, '}');
	review_json_hosts(&b, s);
	buf_adds(&b, ",\"violations\":[");
	fwrite(b.data, 1, b.len, out);
	buf_free(&b);
	rewind(viol);
	while ((n = fread(blk, 1, sizeof blk, viol)) > 0)
		fwrite(blk, 1, n, out);
	fputs("]}\n", out);
	return ferror(viol) ? -1 : 0;
}

struct review_spool {
	FILE *f;
	const struct review_opts *o;
	struct buf b;
	unsigned long n;
};

static void
review_spool_cb(const struct review_event *ev, void *arg)
{
	struct review_spool *sp = arg;

	if (ev->act != REVIEW_ACT_BLOCK && ev->act != REVIEW_ACT_FLAG)
		return;
	buf_reset(&sp->b);
	if (sp->o->json) {
		if (sp->n > 0)
			buf_addc(&sp->b, ',');
		review_summary_json_event(&sp->b, ev);
	} else
		review_text_event(&sp->b, ev, sp->o->color);
	fwrite(sp->b.data, 1, sp->b.len, sp->f);
	sp->n++;
}

/*
 * `policyctl audit [FILE]`: read in, print the summary to out. 0, or -1
 * when the input or the spool file cannot be read or written.
 */
int
review_summary(FILE *in, FILE *out, const struct review_opts *o)
{
	struct review_summary s;
	struct review_spool sp;
	int rc = -1;

	memset(&sp, 0, sizeof sp);
	sp.o = o;
	if ((sp.f = tmpfile()) == NULL) {
		fprintf(o->err, "policyctl: cannot make a temporary file: %s\n", strerror(errno));
		return -1;
	}
	buf_init(&sp.b);
	review_summary_init(&s, o->name);
	if (review_scan(in, o, &s, review_spool_cb, &sp) == -1)
		goto out;
	if (fflush(sp.f) != 0 || ferror(sp.f)) {
		fprintf(o->err, "policyctl: cannot write a temporary file: %s\n", strerror(errno));
		goto out;
	}
	rc = o->json ? review_json_summary(out, &s, sp.f)
	             : review_text_summary(out, &s, sp.f, o->color);
out:
	review_summary_free(&s);
	buf_free(&sp.b);
	fclose(sp.f);
	return rc;
}
