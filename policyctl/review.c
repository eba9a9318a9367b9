/*
 * The reading half of `policyctl audit`: an audit file streamed line by
 * line (never loaded whole, each line optionally hashed for the chain
 * check), each line parsed with jansson into an event, the filters of the
 * command line, and RFC 3339 or relative times. A line that is not an
 * audit event is counted with its number and skipped, never fatal: the
 * log may be a damaged copy, and it holds untrusted strings throughout.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

void
review_opts_init(struct review_opts *o)
{
	memset(o, 0, sizeof *o);
	o->filter.since_ms = INT64_MIN;
	o->filter.until_ms = INT64_MAX;
	o->name = "-";
	o->err = stderr;
	o->interval_ms = 200;
}

const char *
review_act_name(enum review_act a)
{
	switch (a) {
	case REVIEW_ACT_ALLOW:
		return "allow";
	case REVIEW_ACT_FLAG:
		return "flag";
	case REVIEW_ACT_BLOCK:
		return "block";
	case REVIEW_ACT_NONE:
		break;
	}
	return "-";
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t
review_days(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* n decimal digits at s, or -1. */
static int
review_digits(const char *s, int n)
{
	int v = 0;

	while (n-- > 0) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s++ - '0');
	}
	return v;
}

/*
 * An RFC 3339 date-time (any offset, any number of fraction digits, "T" or
 * a space) or a bare date, as milliseconds since the epoch.
 */
static const char *
review_rfc3339(const char *s, int64_t *ms)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, off = 0, scale = 100, oh, om;

	/* Each field is read only once the one before it matched: no overread. */
	y = review_digits(s, 4);
	mo = y >= 0 && s[4] == '-' ? review_digits(s + 5, 2) : -1;
	d = mo >= 0 && s[7] == '-' ? review_digits(s + 8, 2) : -1;
	if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 != 0 || (y % 100 == 0 && y % 400 != 0))))
		return "not a date (want YYYY-MM-DD)";
	s += 10;
	if (*s == '\0')
		goto done;
	if (*s != 'T' && *s != 't' && *s != ' ')
		return "not an RFC 3339 time";
	h = review_digits(s + 1, 2);
	mi = h >= 0 && s[3] == ':' ? review_digits(s + 4, 2) : -1;
	sec = mi >= 0 && s[6] == ':' ? review_digits(s + 7, 2) : -1;
	if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return "not an RFC 3339 time (want HH:MM:SS)";
	s += 9;
	if (*s == '.') {
		if (!isdigit((unsigned char)s[1]))
			return "no digits after the decimal point";
		for (s++; isdigit((unsigned char)*s); s++, scale /= 10)
			frac += (*s - '0') * scale;
	}
	if (*s == 'Z' || *s == 'z')
		s++;
	else if (*s == '+' || *s == '-') {
		oh = review_digits(s + 1, 2);
		om = oh >= 0 && s[3] == ':' ? review_digits(s + 4, 2) : -1;
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return "bad time zone offset (want Z or +HH:MM)";
		off = (oh * 60 + om) * (*s == '-' ? -1 : 1);
		s += 6;
	} else
		return "no time zone (want Z or +HH:MM)";
	if (*s != '\0')
		return "trailing characters after the time";
done:
	*ms = ((review_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) - (int64_t)off * 60) *
	          1000 +
	      frac;
	return NULL;
}

/*
 * A time for --since/--until: RFC 3339, a date, or a duration before now
 * ("90s", "10m", "2h", "1d", "1w").
 */
const char *
review_time_parse(const char *s, int64_t now_ms, int64_t *ms)
{
	static const struct {
		char unit;
		int64_t ms;
	} units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}, {'w', 604800000}};
	const char *p = s;
	int64_t n = 0;
	size_t i;

	/* At most 9 digits: weeks of them still fit in milliseconds. */
	if (isdigit((unsigned char)*p) && strlen(p) <= 10) {
		while (isdigit((unsigned char)*p))
			n = n * 10 + (*p++ - '0');
		if (*p != '\0' && p[1] == '\0') {
			for (i = 0; i < EG_NELEM(units); i++)
				if (units[i].unit == *p) {
					*ms = now_ms - n * units[i].ms;
					return NULL;
				}
		}
	}
	if (strlen(s) < 10 || (s[4] != '-'))
		return "not a time: use RFC 3339 (2026-11-29T19:28:45Z), a date, or a duration "
		       "ago (10m, 2h, 1d)";
	return review_rfc3339(s, ms);
}

/* Read from f; hash every line when hash is set. */
void
review_reader_init(struct review_reader *r, FILE *f, int hash)
{
	memset(r, 0, sizeof *r);
	r->f = f;
	r->blk = xmalloc(REVIEW_BLOCK);
	buf_init(&r->line);
	buf_reserve(&r->line, 1024);
	if (hash)
		r->chain = chain_new();
}

void
review_reader_free(struct review_reader *r)
{
	chain_free(r->chain);
	free(r->blk);
	buf_free(&r->line);
}

/* Keep at most REVIEW_LINE_MAX bytes of a line; hash all of them. */
static void
review_reader_take(struct review_reader *r, const char *p, size_t n)
{
	size_t room = REVIEW_LINE_MAX - r->line.len;

	if (r->chain != NULL)
		chain_update(r->chain, p, n);
	r->size += n;
	if (n > room) {
		r->overlong = 1;
		n = room;
	}
	buf_add(&r->line, p, n);
}

/*
 * The next line into r->line: 1, or 0 at the end of the file, or -1 on a
 * read error (errno in r->error). A last line without a newline is a
 * line too, marked partial.
 */
int
review_reader_next(struct review_reader *r)
{
	const char *nl;
	size_t n;

	buf_reset(&r->line);
	r->size = 0;
	r->overlong = r->partial = 0;
	if (r->chain != NULL)
		chain_begin(r->chain);
	for (;;) {
		if (r->pos == r->end) {
			n = fread(r->blk, 1, REVIEW_BLOCK, r->f);
			if (n == 0) {
				if (ferror(r->f)) {
					r->error = errno != 0 ? errno : EIO;
					return -1;
				}
				if (r->size == 0)
					return 0;
				r->partial = 1;
				break;
			}
			r->pos = 0;
			r->end = n;
		}
		nl = memchr(r->blk + r->pos, '\n', r->end - r->pos);
		n = nl != NULL ? (size_t)(nl - (r->blk + r->pos)) : r->end - r->pos;
		review_reader_take(r, r->blk + r->pos, n);
		r->pos += n;
		if (nl != NULL) {
			r->pos++;
			break;
		}
	}
	r->lineno++;
	if (r->chain != NULL)
		chain_end(r->chain, r->hash);
	return 1;
}

static const char *
review_str(json_t *o, enum audit_field f)
{
	return json_string_value(json_object_get(o, fields_table[f].name));
}

/* An integer field, or -1 when absent or not a non-negative integer. */
static int64_t
review_int(json_t *o, enum audit_field f)
{
	json_t *v = json_object_get(o, fields_table[f].name);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	return (int64_t)json_integer_value(v);
}

void
review_event_clear(struct review_event *ev)
{
	if (ev->root != NULL)
		json_decref(ev->root);
	memset(ev, 0, sizeof *ev);
}

/*
 * The checks and derived fields both parsers share: an audit event has an
 * integer "v", an RFC 3339 "ts" and a string "event".
 */
static const char *
review_event_finish(struct review_event *ev)
{
	if (!ev->has_v)
		return "no version (\"v\")";
	if (ev->ts == NULL)
		return "no time (\"ts\")";
	if (review_rfc3339(ev->ts, &ev->ts_ms) != NULL)
		return "\"ts\" is not an RFC 3339 time";
	if (ev->event == NULL)
		return "no event type (\"event\")";
	if (ev->action != NULL) {
		if (strcmp(ev->action, "allow") == 0)
			ev->act = REVIEW_ACT_ALLOW;
		else if (strcmp(ev->action, "flag") == 0)
			ev->act = REVIEW_ACT_FLAG;
		else if (strcmp(ev->action, "block") == 0)
			ev->act = REVIEW_ACT_BLOCK;
	}
	if (ev->host == NULL && ev->qname != NULL) {
		ev->host = ev->qname;
		ev->dns = 1;
	} else
		ev->dns = strcmp(ev->event, "dns") == 0;
	return NULL;
}

/* Parse one line with jansson alone. */
const char *
review_event_parse_json(struct review_event *ev, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *o;

	memset(ev, 0, sizeof *ev);
	if (len == 0)
		return "empty line";
	if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr)) == NULL)
		return "not JSON";
	ev->root = o;
	if (!json_is_object(o))
		return "not a JSON object";
	ev->has_v = json_is_integer(json_object_get(o, fields_table[AUDIT_FIELD_V].name));
	ev->ts = review_str(o, AUDIT_FIELD_TS);
	ev->event = review_str(o, AUDIT_FIELD_EVENT);
	ev->seq = review_int(o, AUDIT_FIELD_SEQ);
	ev->action = review_str(o, AUDIT_FIELD_ACTION);
	ev->rule = review_str(o, AUDIT_FIELD_RULE);
	ev->source = review_str(o, AUDIT_FIELD_SOURCE);
	ev->reason = review_str(o, AUDIT_FIELD_REASON);
	ev->host = review_str(o, AUDIT_FIELD_HOST);
	ev->qname = review_str(o, AUDIT_FIELD_QNAME);
	ev->method = review_str(o, AUDIT_FIELD_METHOD);
	ev->scheme = review_str(o, AUDIT_FIELD_SCHEME);
	ev->path = review_str(o, AUDIT_FIELD_PATH);
	ev->qtype = review_str(o, AUDIT_FIELD_QTYPE);
	ev->rcode = review_str(o, AUDIT_FIELD_RCODE);
	ev->error = review_str(o, AUDIT_FIELD_ERROR);
	ev->prev = review_str(o, AUDIT_FIELD_PREV);
	ev->port = review_int(o, AUDIT_FIELD_PORT);
	ev->status = review_int(o, AUDIT_FIELD_STATUS);
	ev->bytes_up = review_int(o, AUDIT_FIELD_BYTES_UP);
	ev->bytes_down = review_int(o, AUDIT_FIELD_BYTES_DOWN);
	ev->duration_ms = review_int(o, AUDIT_FIELD_DURATION_MS);
	ev->seqs = review_str(o, AUDIT_FIELD_SEQS);
	ev->refused = review_int(o, AUDIT_FIELD_REFUSED);
	ev->unwritten = review_int(o, AUDIT_FIELD_UNWRITTEN);
	return review_event_finish(ev);
}

/*
 * Parse one line; an error string says why it is not an audit event. The
 * line is the caller's buffer, which the fast path may write into. Lines
 * in the exact compact form egressd writes take the fast path
 * (review_fast.c); anything else, valid or not, is parsed by jansson, so
 * what is accepted and how is jansson's either way.
 */
const char *
review_event_parse(struct review_event *ev, char *line, size_t len)
{
	if (review_fast_parse(ev, line, len) == 0)
		return review_event_finish(ev);
	return review_event_parse_json(ev, line, len);
}

/* Whether type is one of the comma-separated names in list. */
static int
review_type_listed(const char *list, const char *type)
{
	size_t tlen = strlen(type), n;
	const char *p = list;

	for (;;) {
		n = strcspn(p, ",");
		if (n == tlen && strncmp(p, type, n) == 0)
			return 1;
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}

int
review_filter_match(const struct review_filter *f, const struct review_event *ev)
{
	if (f->actions != 0) {
		if (ev->act == REVIEW_ACT_BLOCK && !(f->actions & REVIEW_ONLY_BLOCK))
			return 0;
		if (ev->act == REVIEW_ACT_FLAG && !(f->actions & REVIEW_ONLY_FLAG))
			return 0;
		if (ev->act != REVIEW_ACT_BLOCK && ev->act != REVIEW_ACT_FLAG)
			return 0;
	}
	if (ev->ts_ms < f->since_ms || ev->ts_ms >= f->until_ms)
		return 0;
	if (f->events != NULL && !review_type_listed(f->events, ev->event))
		return 0;
	if (f->host_glob != NULL &&
	    (ev->host == NULL || fnmatch(f->host_glob, ev->host, FNM_CASEFOLD) != 0))
		return 0;
	return 1;
}

/*
 * Read a whole file into s: every line counted, bad ones noted, events
 * that pass the filter tallied and handed to cb. -1 on a read error.
 */
int
review_scan(FILE *in, const struct review_opts *o, struct review_tally *s,
            void (*cb)(const struct review_event *, void *), void *arg)
{
	struct review_reader r;
	struct review_event ev;
	const char *why;
	int rc;

	review_reader_init(&r, in, 0);
	/* Parsed in place: line.data is ours and line.len bytes long. */
	while ((rc = review_reader_next(&r)) == 1) {
		s->lines = r.lineno;
		if (r.partial)
			s->partial_tail = 1;
		why = r.overlong ? "longer than 1 MiB"
		                 : review_event_parse(&ev, r.line.data, r.line.len);
		if (why != NULL) {
			review_tally_bad(s, r.lineno, why);
			if (!r.overlong)
				review_event_clear(&ev);
			continue;
		}
		ev.line = r.lineno;
		if (review_filter_match(&o->filter, &ev)) {
			review_tally_add(s, &ev);
			if (cb != NULL)
				cb(&ev, arg);
		}
		review_event_clear(&ev);
	}
	if (rc == -1)
		fprintf(o->err, "policyctl: %s: %s\n", o->name, strerror(r.error));
	review_reader_free(&r);
	return rc == -1 ? -1 : 0;
}
