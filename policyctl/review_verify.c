/*
 * `policyctl audit --verify`: checks the hash chain of an audit file. The
 * "prev" of each line must be the SHA-256 of the bytes of the line before
 * it (without its newline), the first line's 64 zeros; the hashes are
 * taken by the writer's own chain (audit/chain.c). A broken link is reported
 * at the line whose prev does not match, with what "seq" suggests
 * happened (a line changed, lines removed or reordered, a second chain);
 * a line that is not an audit event and a file that ends inside a line
 * are reported as such. The chain then continues from the line as it is,
 * so each damage is reported once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

#define REVIEW_VERIFY_SHOW 100 /* problems printed; all are counted */
#define REVIEW_VERIFY_RING 64  /* recent line hashes kept to explain a mismatch */

struct review_verify {
	const struct review_opts *o;
	FILE *out;
	struct buf b;
	unsigned long problems;
	unsigned long first;
	int64_t last_seq;                             /* of the line before; -1 when unknown */
	char ring[REVIEW_VERIFY_RING][CHAIN_HEX + 1]; /* hash of line n at n % RING */
};

static void review_verify_problem(struct review_verify *, unsigned long, const char *, const char *,
                                  ...) EG_PRINTF(4, 5);

static void
review_verify_problem(struct review_verify *v, unsigned long line, const char *kind,
                      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (v->problems++ == 0)
		v->first = line;
	if (v->problems > REVIEW_VERIFY_SHOW)
		return;
	if (v->o->json) {
		buf_printf(&v->b, "%s{\"line\":%lu,\"kind\":\"%s\",\"message\":",
		           v->problems > 1 ? "," : "", line, kind);
		json_escape_str(&v->b, msg);
		buf_addc(&v->b, '}');
	} else
		buf_printf(&v->b, "line %lu: %s\n", line, msg);
	fwrite(v->b.data, 1, v->b.len, v->out);
	buf_reset(&v->b);
}

/* The line among the last few before n whose hash is prev, or 0. */
static unsigned long
review_verify_seen(const struct review_verify *v, unsigned long n, const char *prev)
{
	unsigned long j;

	for (j = n > 2 ? n - 2 : 0; j > 0 && n - j <= REVIEW_VERIFY_RING - 1; j--)
		if (strcmp(v->ring[j % REVIEW_VERIFY_RING], prev) == 0)
			return j;
	return 0;
}

/* Say what a prev that does not match the line before suggests. */
static void
review_verify_mismatch(struct review_verify *v, unsigned long n, const char *prev, int64_t seq)
{
	int64_t ls = v->last_seq;
	unsigned long j;

	if (n == 1)
		review_verify_problem(
		    v, n, "head-removed",
		    "prev is not 64 zeros: lines before this one were removed (the "
		    "file does not start where its chain began)");
	else if (strcmp(prev, chain_zeros) == 0)
		review_verify_problem(v, n, "new-chain",
		                      "prev is 64 zeros, but this is not the first line: a new "
		                      "chain starts here (another writer appended to the file, or "
		                      "files were joined)");
	else if ((j = review_verify_seen(v, n, prev)) != 0)
		review_verify_problem(v, n, "out-of-place",
		                      "prev is the hash of line %lu, not of line %lu: lines were "
		                      "reordered, or inserted after line %lu",
		                      j, n - 1, j);
	else if (seq > 1 && ls >= 0 && seq > ls + 1)
		review_verify_problem(v, n, "removed",
		                      "prev does not match line %lu, and seq jumps from %" PRId64
		                      " to %" PRId64
		                      ": lines were removed or reordered before this "
		                      "one",
		                      n - 1, ls, seq);
	else if (seq > 1 && ls >= 0 && seq <= ls)
		review_verify_problem(v, n, "reordered",
		                      "prev does not match line %lu, and seq %" PRId64
		                      " follows %" PRId64 ": lines were reordered",
		                      n - 1, seq, ls);
	else if (seq > 1 && ls >= 0 && seq == ls + 1)
		review_verify_problem(v, n, "changed",
		                      "prev does not match line %lu: line %lu was changed", n - 1,
		                      n - 1);
	else
		review_verify_problem(
		    v, n, "mismatch",
		    "prev does not match line %lu: line %lu was changed, or lines "
		    "before this one were removed or reordered",
		    n - 1, n - 1);
}

/* Check one line against the hash expected of the line before it. */
static void
review_verify_line(struct review_verify *v, struct review_reader *r, const char *expect)
{
	struct review_event ev;
	const char *why, *prev;

	why =
	    r->overlong ? "longer than 1 MiB" : review_event_parse(&ev, r->line.data, r->line.len);
	prev = r->overlong ? NULL : ev.prev;
	if (prev == NULL || strlen(prev) != CHAIN_HEX) {
		if (r->partial)
			review_verify_problem(
			    v, r->lineno, "truncated-tail",
			    "truncated tail: the file ends inside this line (%" PRIu64
			    " bytes, no newline)",
			    r->size);
		else
			review_verify_problem(v, r->lineno, "damaged",
			                      "not an audit line (%s): partial or damaged",
			                      why != NULL ? why : "no \"prev\"");
		v->last_seq = -1;
	} else {
		if (strcmp(prev, expect) != 0)
			review_verify_mismatch(v, r->lineno, prev, why == NULL ? ev.seq : -1);
		else if (r->partial)
			review_verify_problem(
			    v, r->lineno, "truncated-tail",
			    "truncated tail: the file ends without a newline after "
			    "this line");
		v->last_seq = why == NULL ? ev.seq : -1;
	}
	if (!r->overlong)
		review_event_clear(&ev);
}

/*
 * Verify the chain of the file in: 0 when it is whole, 1 when it is
 * broken or a line is damaged, -1 when the file cannot be read.
 */
int
review_verify(FILE *in, FILE *out, const struct review_opts *o)
{
	char expect[CHAIN_HEX + 1];
	struct review_verify v;
	struct review_reader r;
	unsigned long runs = 0;
	int rc;

	memset(&v, 0, sizeof v);
	v.o = o;
	v.out = out;
	v.last_seq = -1;
	buf_init(&v.b);
	memcpy(expect, chain_zeros, sizeof expect);
	if (o->json) {
		fputs("{\"file\":", out);
		json_escape_str(&v.b, o->name);
		buf_adds(&v.b, ",\"problems\":[");
		fwrite(v.b.data, 1, v.b.len, out);
		buf_reset(&v.b);
	}
	review_reader_init(&r, in, 1);
	while ((rc = review_reader_next(&r)) == 1) {
		review_verify_line(&v, &r, expect);
		if (v.last_seq == 1)
			runs++;
		memcpy(expect, r.hash, sizeof expect);
		memcpy(v.ring[r.lineno % REVIEW_VERIFY_RING], r.hash, sizeof expect);
	}
	if (rc == -1) {
		fprintf(o->err, "policyctl: %s: %s\n", o->name, strerror(r.error));
		if (o->json)
			fputs("]}\n", out);
		review_reader_free(&r);
		buf_free(&v.b);
		return -1;
	}
	if (o->json) {
		buf_printf(&v.b,
		           "],\"lines\":%lu,\"runs\":%lu,\"ok\":%s,\"first_break\":", r.lineno,
		           runs, v.problems == 0 ? "true" : "false");
		if (v.problems > 0)
			buf_printf(&v.b, "%lu", v.first);
		else
			buf_adds(&v.b, "null");
		buf_printf(&v.b, ",\"problem_count\":%lu,\"last_hash\":", v.problems);
		json_escape_str(&v.b, r.lineno > 0 ? expect : NULL);
		buf_adds(&v.b, "}\n");
	} else {
		if (v.problems > REVIEW_VERIFY_SHOW)
			buf_printf(&v.b, "... %lu more problems not shown\n",
			           v.problems - REVIEW_VERIFY_SHOW);
		if (v.problems == 0)
			buf_printf(&v.b, "%lu lines, %lu run%s, chain OK\n", r.lineno, runs,
			           runs == 1 ? "" : "s");
		else
			buf_printf(&v.b,
			           "%lu lines, chain BROKEN: %lu problem%s, first at line %lu\n",
			           r.lineno, v.problems, v.problems == 1 ? "" : "s", v.first);
		if (r.lineno > 0)
			buf_printf(
			    &v.b,
			    "last line hash: %s (keep it elsewhere to detect lines cut off the "
			    "end later)\n",
			    expect);
	}
	fwrite(v.b.data, 1, v.b.len, out);
	buf_free(&v.b);
	review_reader_free(&r);
	return v.problems > 0 ? 1 : 0;
}
