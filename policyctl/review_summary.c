/*
 * The summary of `policyctl audit`: the session's span, counts by action
 * and event type, a table of hosts, then every block and flag. Events are
 * tallied (review_tally.c) as the file streams by; the blocks and flags go to a temporary
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

static void
review_summary_json_str(struct buf *b, const char *key, const char *v)
{
	buf_printf(b, ",\"%s\":", key);
	json_escape_str(b, v);
}

static void
review_summary_json_int(struct buf *b, const char *key, int64_t v)
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
	review_summary_json_str(b, "ts", ev->ts);
	review_summary_json_str(b, "event", ev->event);
	review_summary_json_str(b, "action", ev->action);
	review_summary_json_str(b, "method", ev->method);
	review_summary_json_str(b, "host", ev->host);
	review_summary_json_int(b, "port", ev->port);
	review_summary_json_str(b, "path", ev->path);
	review_summary_json_int(b, "status", ev->status);
	review_summary_json_str(b, "rule", ev->rule);
	review_summary_json_str(b, "source", ev->source);
	review_summary_json_str(b, "reason", ev->reason);
	buf_addc(b, '}');
}

static void
review_summary_json_hosts(struct buf *b, const struct review_tally *s)
{
	struct review_host **v, *h;
	size_t i;
	unsigned m;

	v = review_tally_sorted(s);
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
review_summary_json(FILE *out, const struct review_tally *s, FILE *viol)
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
	review_summary_json_str(&b, "first", s->events > 0 ? s->first_ts : NULL);
	review_summary_json_str(&b, "last", s->events > 0 ? s->last_ts : NULL);
	review_summary_json_int(&b, "duration_ms", s->events > 0 ? s->last_ms - s->first_ms : -1);
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
	if (s->gaps > 0)
		buf_printf(&b,
		           ",\"not_written\":{\"episodes\":%lu,\"lines\":%" PRIu64
		           ",\"refused\":%" PRIu64 "}",
		           s->gaps, s->unwritten, s->refused);
	review_summary_json_hosts(&b, s);
	buf_adds(&b, ",\"violations\":[");
	fwrite(b.data, 1, b.len, out);
	buf_free(&b);
	rewind(viol);
	while ((n = fread(blk, 1, sizeof blk, viol)) > 0)
		fwrite(blk, 1, n, out);
	fputs("]}\n", out);
	return ferror(viol) ? -1 : 0;
}

struct review_summary_spool {
	FILE *f;
	const struct review_opts *o;
	struct buf b;
	unsigned long n;
};

static void
review_summary_spool_cb(const struct review_event *ev, void *arg)
{
	struct review_summary_spool *sp = arg;

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
	struct review_tally s;
	struct review_summary_spool sp;
	int rc = -1;

	memset(&sp, 0, sizeof sp);
	sp.o = o;
	if ((sp.f = tmpfile()) == NULL) {
		fprintf(o->err, "policyctl: cannot make a temporary file: %s\n", strerror(errno));
		return -1;
	}
	buf_init(&sp.b);
	review_tally_init(&s, o->name);
	if (review_scan(in, o, &s, review_summary_spool_cb, &sp) == -1)
		goto out;
	if (fflush(sp.f) != 0 || ferror(sp.f)) {
		fprintf(o->err, "policyctl: cannot write a temporary file: %s\n", strerror(errno));
		goto out;
	}
	rc = o->json ? review_summary_json(out, &s, sp.f)
	             : review_text_summary(out, &s, sp.f, o->color);
out:
	review_tally_free(&s);
	buf_free(&sp.b);
	fclose(sp.f);
	return rc;
}
