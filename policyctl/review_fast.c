/*
 * The fast path of the audit line parser. Building a jansson tree costs
 * several microseconds a line, which is most of the time a summary of a
 * million events takes. egressd writes one compact shape: a flat object of
 * the keys of audit/fields.c, each once and in order, whose values are strings without escapes,
 * non-negative integers or true. This scanner accepts that shape only and
 * answers "not mine" for anything else (whitespace, escapes, nesting,
 * negative or fractional numbers, unknown or repeated keys, bytes that
 * are not UTF-8, trailing bytes), which then goes to jansson. So it never
 * rejects a line itself, and whatever it accepts jansson accepts with the
 * same values: tests/fuzz/fuzz_review.c checks the two against each other.
 * Strings are used in place, the closing quote overwritten with a NUL.
 */
#include <string.h>

#include "review_int.h"

enum review_type {
	T_NONE,
	T_STR,
	T_INT,
	T_LIT, /* true, false or null */
};

struct review_val {
	enum review_type type;
	size_t off; /* a string's first byte */
	size_t len;
	int64_t num;
};

/* A string at line[*i] (after its quote); -1 when jansson must decide. */
static int
review_fast_str(const char *line, size_t len, size_t *i)
{
	const unsigned char *p = (const unsigned char *)line;
	size_t j = *i, n;

	for (;;) {
		/* Plain printable ASCII is nearly all of a line: skip it fast. */
		while (j < len && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\')
			j++;
		if (j == len || p[j] == '\\' || p[j] < 0x20)
			return -1;
		if (p[j] == '"')
			break;
		if ((n = text_utf8_len(p + j, len - j)) == 0)
			return -1;
		j += n;
	}
	*i = j;
	return 0;
}

/* One value at line[*i]; -1 when jansson must decide. */
static int
review_fast_value(const char *line, size_t len, size_t *i, struct review_val *v)
{
	size_t j = *i, start;
	int digits = 0;

	if (j >= len)
		return -1;
	if (line[j] == '"') {
		start = ++j;
		if (review_fast_str(line, len, &j) == -1)
			return -1;
		v->type = T_STR;
		v->off = start;
		v->len = j - start;
		*i = j + 1;
		return 0;
	}
	if (line[j] >= '0' && line[j] <= '9') {
		if (line[j] == '0' && j + 1 < len && line[j + 1] >= '0' && line[j + 1] <= '9')
			return -1;
		v->num = 0;
		for (; j < len && line[j] >= '0' && line[j] <= '9'; j++) {
			if (++digits > 18)
				return -1;
			v->num = v->num * 10 + (line[j] - '0');
		}
		if (j < len && (line[j] == '.' || line[j] == 'e' || line[j] == 'E'))
			return -1;
		v->type = T_INT;
		*i = j;
		return 0;
	}
	if (len - j >= 4 &&
	    (memcmp(line + j, "true", 4) == 0 || memcmp(line + j, "null", 4) == 0)) {
		v->type = T_LIT;
		*i = j + 4;
		return 0;
	}
	if (len - j >= 5 && memcmp(line + j, "false", 5) == 0) {
		v->type = T_LIT;
		*i = j + 5;
		return 0;
	}
	return -1;
}

/* Scan the whole line into vals; -1 when jansson must decide. */
static int
review_fast_scan(const char *line, size_t len, struct review_val *vals)
{
	size_t i = 1, start;
	uint64_t seen = 0;
	int k = -1;

	if (len < 2 || line[0] != '{' || line[len - 1] != '}' || line[1] == '}')
		return -1;
	for (;;) {
		if (line[i] != '"')
			return -1;
		start = ++i;
		while (i < len && line[i] >= 'a' && line[i] <= 'z')
			i++;
		while (i < len && line[i] == '_')
			for (i++; i < len && line[i] >= 'a' && line[i] <= 'z'; i++)
				;
		/* egressd writes keys in table order: the one after the last comes next. */
		if (i >= len || line[i] != '"' ||
		    (k = fields_find(line + start, i - start, k + 1)) < 0)
			return -1;
		if (seen & (1ull << k))
			return -1;
		seen |= 1ull << k;
		if (++i >= len || line[i] != ':')
			return -1;
		i++;
		if (review_fast_value(line, len, &i, &vals[k]) == -1)
			return -1;
		if (i >= len - 1)
			return i == len - 1 ? 0 : -1;
		if (line[i] != ',')
			return -1;
		i++;
	}
}

static const char *
review_fast_s(char *line, const struct review_val *v)
{
	return v->type == T_STR ? line + v->off : NULL;
}

static int64_t
review_fast_i(const struct review_val *v)
{
	return v->type == T_INT ? v->num : -1;
}

/*
 * Fill ev from a line in egressd's compact form: 0, or -1 (ev untouched
 * but cleared, line unchanged) when the line is anything else.
 */
int
review_fast_parse(struct review_event *ev, char *line, size_t len)
{
	struct review_val v[AUDIT_FIELD_COUNT];
	int k;

	memset(ev, 0, sizeof *ev);
	memset(v, 0, sizeof v);
	if (review_fast_scan(line, len, v) == -1)
		return -1;
	for (k = 0; k < AUDIT_FIELD_COUNT; k++)
		if (v[k].type == T_STR)
			line[v[k].off + v[k].len] = '\0';
	ev->has_v = v[AUDIT_FIELD_V].type == T_INT;
	ev->ts = review_fast_s(line, &v[AUDIT_FIELD_TS]);
	ev->event = review_fast_s(line, &v[AUDIT_FIELD_EVENT]);
	ev->seq = review_fast_i(&v[AUDIT_FIELD_SEQ]);
	ev->action = review_fast_s(line, &v[AUDIT_FIELD_ACTION]);
	ev->rule = review_fast_s(line, &v[AUDIT_FIELD_RULE]);
	ev->source = review_fast_s(line, &v[AUDIT_FIELD_SOURCE]);
	ev->reason = review_fast_s(line, &v[AUDIT_FIELD_REASON]);
	ev->host = review_fast_s(line, &v[AUDIT_FIELD_HOST]);
	ev->qname = review_fast_s(line, &v[AUDIT_FIELD_QNAME]);
	ev->method = review_fast_s(line, &v[AUDIT_FIELD_METHOD]);
	ev->scheme = review_fast_s(line, &v[AUDIT_FIELD_SCHEME]);
	ev->path = review_fast_s(line, &v[AUDIT_FIELD_PATH]);
	ev->qtype = review_fast_s(line, &v[AUDIT_FIELD_QTYPE]);
	ev->rcode = review_fast_s(line, &v[AUDIT_FIELD_RCODE]);
	ev->error = review_fast_s(line, &v[AUDIT_FIELD_ERROR]);
	ev->prev = review_fast_s(line, &v[AUDIT_FIELD_PREV]);
	ev->port = review_fast_i(&v[AUDIT_FIELD_PORT]);
	ev->status = review_fast_i(&v[AUDIT_FIELD_STATUS]);
	ev->bytes_up = review_fast_i(&v[AUDIT_FIELD_BYTES_UP]);
	ev->bytes_down = review_fast_i(&v[AUDIT_FIELD_BYTES_DOWN]);
	ev->duration_ms = review_fast_i(&v[AUDIT_FIELD_DURATION_MS]);
	ev->seqs = review_fast_s(line, &v[AUDIT_FIELD_SEQS]);
	ev->refused = review_fast_i(&v[AUDIT_FIELD_REFUSED]);
	ev->unwritten = review_fast_i(&v[AUDIT_FIELD_UNWRITTEN]);
	return 0;
}
