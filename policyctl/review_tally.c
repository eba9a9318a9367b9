/*
 * The tally of an audit log that `policyctl audit` reports from: lines,
 * bad lines, the span, counts by action and event type, and per host its
 * requests, DNS queries, methods, bytes and first refusal. Hosts sit in
 * an open-addressing table keyed by name, so a log of any length is
 * tallied in memory that grows with its hosts only.
 */
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

void
review_tally_init(struct review_tally *s, const char *name)
{
	memset(s, 0, sizeof *s);
	s->name = name;
	s->first_ms = INT64_MAX;
	s->last_ms = INT64_MIN;
	s->hcap = 256;
	s->hosts = xcalloc(s->hcap, sizeof *s->hosts);
}

void
review_tally_free(struct review_tally *s)
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
review_tally_bad(struct review_tally *s, unsigned long line, const char *why)
{
	if (s->bad < REVIEW_SHOW_BAD) {
		s->bad_lines[s->bad] = line;
		s->bad_why[s->bad] = why;
	}
	s->bad++;
}

static uint64_t
review_tally_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static void
review_tally_grow(struct review_tally *s)
{
	struct review_host **old = s->hosts;
	size_t oldcap = s->hcap, i, j;

	s->hcap *= 2;
	s->hosts = xcalloc(s->hcap, sizeof *s->hosts);
	for (i = 0; i < oldcap; i++) {
		if (old[i] == NULL)
			continue;
		for (j = review_tally_hash(old[i]->name) & (s->hcap - 1); s->hosts[j] != NULL;
		     j = (j + 1) & (s->hcap - 1))
			;
		s->hosts[j] = old[i];
	}
	free(old);
}

/* The tally of a host, or NULL. */
struct review_host *
review_tally_find(const struct review_tally *s, const char *name)
{
	size_t i;

	for (i = review_tally_hash(name) & (s->hcap - 1); s->hosts[i] != NULL;
	     i = (i + 1) & (s->hcap - 1))
		if (strcmp(s->hosts[i]->name, name) == 0)
			return s->hosts[i];
	return NULL;
}

static struct review_host *
review_tally_host(struct review_tally *s, const char *name)
{
	struct review_host *h;
	size_t i;

	if (2 * (s->nhosts + 1) > s->hcap)
		review_tally_grow(s);
	for (i = review_tally_hash(name) & (s->hcap - 1); s->hosts[i] != NULL;
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
review_tally_method(struct review_host *h, const char *m)
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
review_tally_type(struct review_tally *s, const char *type)
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
review_tally_add(struct review_tally *s, const struct review_event *ev)
{
	struct review_host *h;

	s->events++;
	s->count[ev->act]++;
	review_tally_type(s, ev->event);
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
	if (ev->event[0] == 'd' && ev->reason != NULL && strcmp(ev->event, "daemon") == 0 &&
	    strcmp(ev->reason, "resumed") == 0) {
		s->gaps++;
		s->unwritten += ev->unwritten > 0 ? (uint64_t)ev->unwritten : 0;
		s->refused += ev->refused > 0 ? (uint64_t)ev->refused : 0;
	}
	if (ev->host == NULL || *ev->host == '\0')
		return;
	h = review_tally_host(s, ev->host);
	h->n++;
	h->count[ev->act]++;
	if (ev->dns)
		h->dns++;
	if (ev->method != NULL)
		review_tally_method(h, ev->method);
	if (ev->bytes_up > 0)
		h->up += (uint64_t)ev->bytes_up;
	if (ev->bytes_down > 0)
		h->down += (uint64_t)ev->bytes_down;
	if (h->rule == NULL && ev->rule != NULL &&
	    (ev->act == REVIEW_ACT_BLOCK || ev->act == REVIEW_ACT_FLAG))
		h->rule = xstrdup(ev->rule);
}

static int
review_tally_cmp(const void *a, const void *b)
{
	const struct review_host *x = *(const struct review_host *const *)a;
	const struct review_host *y = *(const struct review_host *const *)b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The hosts, most requests first; the caller frees the array. */
struct review_host **
review_tally_sorted(const struct review_tally *s)
{
	struct review_host **v;
	size_t i, n = 0;

	v = xcalloc(s->nhosts + 1, sizeof *v);
	for (i = 0; i < s->hcap; i++)
		if (s->hosts[i] != NULL)
			v[n++] = s->hosts[i];
	qsort(v, n, sizeof *v, review_tally_cmp);
	return v;
}
