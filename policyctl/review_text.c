/*
 * The text of `policyctl audit` for people: untrusted strings escaped for
 * a terminal, one line per event (the summary's list of blocks and flags,
 * and --follow), and the summary itself, in colour only when asked.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

#define REVIEW_HOST_WIDTH 48

#define C_RED    "\033[31m"
#define C_YELLOW "\033[33m"
#define C_GREEN  "\033[32m"
#define C_BOLD   "\033[1m"
#define C_OFF    "\033[0m"

/*
 * Make an untrusted string safe for a terminal: control characters, C1
 * controls, bidirectional overrides and bytes that are not UTF-8 become
 * visible escapes, so a log line cannot move the cursor or reorder text.
 */
void
review_text_escape(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
			buf_addc(b, (char)p[i++]);
			continue;
		}
		if (p[i] == '\\') {
			buf_adds(b, "\\\\");
			i++;
			continue;
		}
		if (p[i] < 0x80 || (n = text_utf8_len(p + i, len - i)) == 0) {
			buf_printf(b, "\\x%02x", p[i++]);
			continue;
		}
		cp = n == 2   ? (uint32_t)(p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f)
		     : n == 3 ? (uint32_t)(p[i] & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 |
		                    (p[i + 2] & 0x3f)
		              : 0x10000;
		if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200e && cp <= 0x200f) ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			buf_printf(b, "\\u{%04" PRIx32 "}", cp);
		else
			buf_add(b, p + i, n);
		i += n;
	}
}

static void
review_text_str(struct buf *b, const char *s)
{
	if (s != NULL)
		review_text_escape(b, s, strlen(s));
}

void
review_text_bytes(char *out, size_t len, uint64_t n)
{
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		snprintf(out, len, "%" PRIu64 " B", n);
		return;
	}
	for (v /= 1024; v >= 1024 && u < EG_NELEM(units) - 1; u++)
		v /= 1024;
	snprintf(out, len, "%.1f %s", v, units[u]);
}

static const char *
review_text_color(enum review_act a)
{
	switch (a) {
	case REVIEW_ACT_BLOCK:
		return C_RED;
	case REVIEW_ACT_FLAG:
		return C_YELLOW;
	case REVIEW_ACT_ALLOW:
		return C_GREEN;
	case REVIEW_ACT_NONE:
		break;
	}
	return "";
}

/* What the event reached: host[:port]path, or the DNS name and type. */
static void
review_text_target(struct buf *b, const struct review_event *ev)
{
	review_text_str(b, ev->host);
	if (ev->dns) {
		if (ev->qtype != NULL) {
			buf_addc(b, ' ');
			review_text_str(b, ev->qtype);
		}
		return;
	}
	if (ev->port >= 0 &&
	    !(ev->port == 80 && ev->path != NULL && ev->scheme != NULL &&
	      strcmp(ev->scheme, "http") == 0) &&
	    !(ev->port == 443 && ev->path != NULL))
		buf_printf(b, ":%" PRId64, ev->port);
	review_text_str(b, ev->path);
}

/* One line for an event: time, action, type, method, target, rule, source. */
void
review_text_event(struct buf *b, const struct review_event *ev, int color)
{
	const char *act = review_act_name(ev->act);
	size_t n;

	review_text_str(b, ev->ts);
	buf_adds(b, "  ");
	if (color && ev->act != REVIEW_ACT_NONE)
		buf_printf(b, "%s%-5s%s", review_text_color(ev->act), act, C_OFF);
	else
		buf_printf(b, "%-5s", act);
	buf_addc(b, ' ');
	n = strnlen(ev->event, 16);
	review_text_escape(b, ev->event, n);
	/* The column fits the usual types; a longer one (websocket) still gets a space. */
	buf_printf(b, "%*s", n < 8 ? (int)(8 - n) : 1, "");
	if (ev->method != NULL) {
		struct buf m;

		buf_init(&m);
		review_text_str(&m, ev->method);
		buf_printf(b, "%-7s ", buf_cstr(&m));
		buf_free(&m);
	}
	if (ev->host != NULL)
		review_text_target(b, ev);
	if (ev->rule != NULL) {
		buf_adds(b, "  rule ");
		review_text_str(b, ev->rule);
		if (ev->source != NULL) {
			buf_adds(b, " (");
			review_text_str(b, ev->source);
			buf_addc(b, ')');
		}
	}
	if (ev->host == NULL && ev->reason != NULL) {
		buf_adds(b, ev->rule != NULL || ev->method != NULL ? "  " : "");
		review_text_str(b, ev->reason);
	}
	buf_addc(b, '\n');
}

/* A duration for people: 950ms, 9.1s, 4m05s, 2h03m, 3d04h. */
static void
review_text_span(char *out, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(out, len, "%" PRId64 "ms", ms);
	else if (s < 60)
		snprintf(out, len, "%.1fs", (double)ms / 1000);
	else if (s < 3600)
		snprintf(out, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, len, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(out, len, "%" PRId64 "d%02" PRId64 "h", s / 86400, s / 3600 % 24);
}

static void
review_text_head(struct buf *b, const char *title, int color)
{
	if (color)
		buf_printf(b, "%s%s%s\n", C_BOLD, title, C_OFF);
	else
		buf_printf(b, "%s\n", title);
}

static void
review_text_overview(struct buf *b, const struct review_tally *s, int color)
{
	char span[32];
	unsigned i;

	buf_adds(b, "audit log: ");
	review_text_str(b, s->name);
	buf_printf(b, "\nlines:     %lu (%lu matching events, %lu bad)\n", s->lines, s->events,
	           s->bad);
	if (s->events > 0) {
		review_text_span(span, sizeof span, s->last_ms - s->first_ms);
		buf_adds(b, "span:      ");
		review_text_str(b, s->first_ts);
		buf_adds(b, " .. ");
		review_text_str(b, s->last_ts);
		buf_printf(b, " (%s)\n", span);
	}
	buf_adds(b, "actions:   ");
	if (color)
		buf_printf(b,
		           C_GREEN "%" PRIu64 " allowed" C_OFF ", " C_YELLOW "%" PRIu64
		                   " flagged" C_OFF ", " C_RED "%" PRIu64 " blocked" C_OFF,
		           s->count[REVIEW_ACT_ALLOW], s->count[REVIEW_ACT_FLAG],
		           s->count[REVIEW_ACT_BLOCK]);
	else
		buf_printf(b, "%" PRIu64 " allowed, %" PRIu64 " flagged, %" PRIu64 " blocked",
		           s->count[REVIEW_ACT_ALLOW], s->count[REVIEW_ACT_FLAG],
		           s->count[REVIEW_ACT_BLOCK]);
	buf_printf(b, ", %" PRIu64 " without an action\n", s->count[REVIEW_ACT_NONE]);
	if (s->ntypes > 0) {
		buf_adds(b, "events:    ");
		for (i = 0; i < s->ntypes; i++) {
			buf_adds(b, i > 0 ? ", " : "");
			review_text_str(b, s->types[i]);
			buf_printf(b, " %" PRIu64, s->type_n[i]);
		}
		if (s->other_types > 0)
			buf_printf(b, ", other %" PRIu64, s->other_types);
		buf_addc(b, '\n');
	}
	if (s->gaps > 0)
		buf_printf(b,
		           "not written: the log could not be written %lu time%s: %" PRIu64
		           " line%s lost, %" PRIu64
		           " request%s refused (policyctl audit --verify names them)\n",
		           s->gaps, s->gaps == 1 ? "" : "s", s->unwritten,
		           s->unwritten == 1 ? "" : "s", s->refused, s->refused == 1 ? "" : "s");
	if (s->bad > 0) {
		buf_printf(b, "bad lines: %lu, not audit events:", s->bad);
		for (i = 0; i < s->bad && i < REVIEW_SHOW_BAD; i++)
			buf_printf(b, "%s line %lu (%s)", i > 0 ? "," : "", s->bad_lines[i],
			           s->bad_why[i]);
		buf_adds(b, s->bad > REVIEW_SHOW_BAD ? ", ...\n" : "\n");
	}
	if (s->partial_tail)
		buf_printf(b,
		           "note:      the file ends inside line %lu (no newline): a partial "
		           "or truncated last line\n",
		           s->lines);
}

/* The host column of one row, escaped and cut to the column's width. */
static void
review_text_host(struct buf *b, const char *name, int width)
{
	struct buf e;
	int len;

	buf_init(&e);
	review_text_str(&e, name);
	len = (int)e.len;
	if (len > width)
		buf_printf(b, "%.*s...", width - 3, e.data);
	else
		buf_printf(b, "%s%*s", e.data, width - len, "");
	buf_free(&e);
}

static void
review_text_methods(struct buf *b, const struct review_host *h)
{
	struct buf m;
	unsigned i;

	buf_init(&m);
	for (i = 0; i < h->nmethods; i++) {
		if (i > 0)
			buf_addc(&m, ',');
		review_text_str(&m, h->methods[i]);
	}
	if (h->more_methods)
		buf_adds(&m, ",...");
	if (h->nmethods == 0)
		buf_addc(&m, '-');
	buf_printf(b, "  %-16s", buf_cstr(&m));
	buf_free(&m);
}

static void
review_text_hosts(struct buf *b, const struct review_tally *s, int color)
{
	struct review_host **v, *h;
	char up[32], down[32];
	size_t i;
	int width = 4;

	v = review_tally_sorted(s);
	for (i = 0; v[i] != NULL; i++) {
		struct buf e;

		buf_init(&e);
		review_text_str(&e, v[i]->name);
		if ((int)e.len > width)
			width = e.len > REVIEW_HOST_WIDTH ? REVIEW_HOST_WIDTH : (int)e.len;
		buf_free(&e);
	}
	buf_addc(b, '\n');
	review_text_head(b, "hosts", color);
	buf_printf(b, "%-*s  %8s  %5s  %-16s  %10s  %10s  %7s  %7s  %7s\n", width, "host",
	           "requests", "dns", "methods", "up", "down", "allowed", "flagged", "blocked");
	for (i = 0; (h = v[i]) != NULL; i++) {
		review_text_host(b, h->name, width);
		buf_printf(b, "  %8" PRIu64 "  %5" PRIu64, h->n, h->dns);
		review_text_methods(b, h);
		review_text_bytes(up, sizeof up, h->up);
		review_text_bytes(down, sizeof down, h->down);
		buf_printf(b, "  %10s  %10s  %7" PRIu64 "  %7" PRIu64 "  %7" PRIu64 "\n", up, down,
		           h->count[REVIEW_ACT_ALLOW], h->count[REVIEW_ACT_FLAG],
		           h->count[REVIEW_ACT_BLOCK]);
	}
	if (v[0] == NULL)
		buf_adds(b, "(none)\n");
	free(v);
}

/*
 * Print the summary for people; viol holds the lines of the blocks and
 * flags, already formatted, in file order.
 */
int
review_text_summary(FILE *out, const struct review_tally *s, FILE *viol, int color)
{
	char blk[REVIEW_BLOCK];
	struct buf b;
	size_t n;
	char title[64];

	buf_init(&b);
	review_text_overview(&b, s, color);
	review_text_hosts(&b, s, color);
	snprintf(title, sizeof title, "blocked and flagged (%lu)", s->nviol);
	buf_addc(&b, '\n');
	review_text_head(&b, title, color);
	fwrite(b.data, 1, b.len, out);
	buf_free(&b);
	rewind(viol);
	while ((n = fread(blk, 1, sizeof blk, viol)) > 0)
		fwrite(blk, 1, n, out);
	if (s->nviol == 0)
		fputs("(none)\n", out);
	return ferror(viol) ? -1 : 0;
}
