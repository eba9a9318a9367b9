/*
 * `policyctl audit --verify`: checks the hash chain of an audit file, or
 * of a rotated set (FILE.n ... FILE.1, FILE) as one chain. The "prev" of
 * each line must be the SHA-256 of the bytes of the line before it
 * (without its newline), the first line's 64 zeros; the hashes are taken
 * by the writer's own chain (audit/chain.c). A broken link is reported at
 * the line whose prev does not match, with what "seq" suggests happened (a
 * line changed, lines removed or reordered, a second chain); a line that
 * is not an audit event and a file that ends inside a line are reported as
 * such. The chain then continues from the line as it is, so each damage is
 * reported once.
 *
 * Lines egressd made and could not write (a full disk) leave the chain
 * whole and "seq" jumping; the daemon line egressd writes once the log
 * can be written again names those seqs. A jump it names is a gap, shown
 * apart and no problem; a jump nothing names is. A file whose first line
 * says it continues a rotated one ("rotated", "reopened") may start off
 * zeros when the file before it is not there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

#define REVIEW_VERIFY_SHOW  100 /* problems printed; all are counted */
#define REVIEW_VERIFY_RING  64  /* recent line hashes kept to explain a mismatch */
#define REVIEW_VERIFY_JUMPS 64  /* seq jumps awaiting the daemon line that names them */

/* Seqs a run skipped with its chain whole: lo..hi, first seen at line. */
struct review_jump {
	int64_t lo;
	int64_t hi;
	unsigned long line;
	const char *file;
};

struct review_verify {
	const struct review_opts *o;
	FILE *out;
	struct buf b;
	unsigned long problems;
	unsigned long first;
	const char *first_file;
	int64_t last_seq;                             /* of the line before; -1 when unknown */
	char ring[REVIEW_VERIFY_RING][CHAIN_HEX + 1]; /* hash of line n at n % RING */
	const char *file; /* the file being read, when a set has several; else NULL */
	unsigned long lines;
	unsigned long runs;
	struct review_jump jumps[REVIEW_VERIFY_JUMPS];
	size_t njumps;
	struct buf gaps;     /* the gaps, as they are printed */
	unsigned long ngaps; /* daemon lines naming seqs not written */
	uint64_t unwritten;  /* the lines they name */
	int continued;       /* the first file continues one that is not there */
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
	if (v->problems++ == 0) {
		v->first = line;
		v->first_file = v->file;
	}
	if (v->problems > REVIEW_VERIFY_SHOW)
		return;
	if (v->o->json) {
		buf_printf(&v->b, "%s{", v->problems > 1 ? "," : "");
		if (v->file != NULL) {
			buf_adds(&v->b, "\"file\":");
			json_escape_str(&v->b, v->file);
			buf_addc(&v->b, ',');
		}
		buf_printf(&v->b, "\"line\":%lu,\"kind\":\"%s\",\"message\":", line, kind);
		json_escape_str(&v->b, msg);
		buf_addc(&v->b, '}');
	} else if (v->file != NULL)
		buf_printf(&v->b, "%s: line %lu: %s\n", v->file, line, msg);
	else
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

/*
 * Say what a prev that does not match the line before suggests: n is the
 * line's number in its file, k its number in the whole input.
 */
static void
review_verify_mismatch(struct review_verify *v, unsigned long n, unsigned long k, const char *prev,
                       int64_t seq)
{
	int64_t ls = v->last_seq;
	unsigned long j;

	if (k == 1)
		review_verify_problem(
		    v, n, "head-removed",
		    "prev is not 64 zeros: lines before this one were removed (the "
		    "file does not start where its chain began)");
	else if (strcmp(prev, chain_zeros) == 0)
		review_verify_problem(v, n, "new-chain",
		                      "prev is 64 zeros, but this is not the first line: a new "
		                      "chain starts here (another writer appended to the file, or "
		                      "files were joined)");
	else if ((j = review_verify_seen(v, k, prev)) != 0)
		review_verify_problem(v, n, "out-of-place",
		                      "prev is the hash of line %lu, not of line %lu: lines were "
		                      "reordered, or inserted after line %lu",
		                      n - (k - j), n - 1, n - (k - j));
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

/* A daemon line that starts a file continuing another (rotation, reopen). */
static int
review_verify_continues(const struct review_event *ev)
{
	return ev->event != NULL && strcmp(ev->event, "daemon") == 0 && ev->reason != NULL &&
	       (strcmp(ev->reason, "rotated") == 0 || strcmp(ev->reason, "reopened") == 0);
}

/* The seq jumps a run left with its chain whole: kept until a daemon line names them. */
static void
review_verify_jump(struct review_verify *v, unsigned long n, int64_t lo, int64_t hi)
{
	if (v->njumps == REVIEW_VERIFY_JUMPS) {
		review_verify_problem(v, n, "unrecorded-gap",
		                      "seq jumps from %" PRId64 " to %" PRId64
		                      " with the chain whole: lines were not written, and too many "
		                      "such jumps wait for a line that names them",
		                      lo - 1, hi + 1);
		return;
	}
	v->jumps[v->njumps++] = (struct review_jump){lo, hi, n, v->file};
}

/* Jumps no daemon line named: lines were lost and nothing says why. */
static void
review_verify_jumps_flush(struct review_verify *v)
{
	const char *file = v->file;
	size_t i;

	for (i = 0; i < v->njumps; i++) {
		v->file = v->jumps[i].file;
		review_verify_problem(
		    v, v->jumps[i].line, "unrecorded-gap",
		    "seq jumps from %" PRId64 " to %" PRId64 " with the chain whole: %" PRId64
		    " line%s were not written, and no daemon "
		    "line of the run names them (egressd stopped before it could)",
		    v->jumps[i].lo - 1, v->jumps[i].hi + 1, v->jumps[i].hi - v->jumps[i].lo + 1,
		    v->jumps[i].hi > v->jumps[i].lo ? "s" : "");
	}
	v->file = file;
	v->njumps = 0;
}

/* Take the seqs lo..hi a daemon line names out of the jumps waiting. */
static void
review_verify_named(struct review_verify *v, int64_t lo, int64_t hi)
{
	struct review_jump *j;
	size_t i;

	for (i = 0; i < v->njumps;) {
		j = &v->jumps[i];
		if (j->hi < lo || j->lo > hi) {
			i++;
			continue;
		}
		if (j->lo < lo && j->hi > hi) {
			/* Named in the middle: the two ends still wait. */
			if (v->njumps < REVIEW_VERIFY_JUMPS) {
				v->jumps[v->njumps++] =
				    (struct review_jump){hi + 1, j->hi, j->line, j->file};
				j->hi = lo - 1;
			}
			i++;
			continue;
		}
		if (j->lo < lo)
			j->hi = lo - 1;
		else if (j->hi > hi)
			j->lo = hi + 1;
		else {
			v->jumps[i] = v->jumps[--v->njumps];
			continue;
		}
		i++;
	}
}

/*
 * The daemon line that ends an episode of lines not written: its "seqs"
 * ("12-40,57") settle the jumps, and the gap is shown.
 */
static void
review_verify_gap(struct review_verify *v, unsigned long n, const struct review_event *ev)
{
	const char *p, *err = ev->error != NULL ? ev->error : "unknown error";
	int64_t lo, hi, unwritten = ev->unwritten > 0 ? ev->unwritten : 0;
	int64_t refused = ev->refused > 0 ? ev->refused : 0;
	double secs = ev->duration_ms > 0 ? (double)ev->duration_ms / 1000.0 : 0;
	char *end;

	for (p = ev->seqs; p != NULL && *p != '\0';) {
		lo = hi = strtoll(p, &end, 10);
		if (end == p || lo < 1)
			break;
		if (*end == '-') {
			p = end + 1;
			hi = strtoll(p, &end, 10);
			if (end == p || hi < lo)
				break;
		}
		review_verify_named(v, lo, hi);
		p = *end == ',' ? end + 1 : end;
	}
	v->ngaps++;
	v->unwritten += (uint64_t)unwritten;
	if (v->o->json) {
		buf_printf(&v->gaps, "%s{", v->ngaps > 1 ? "," : "");
		if (v->file != NULL) {
			buf_adds(&v->gaps, "\"file\":");
			json_escape_str(&v->gaps, v->file);
			buf_addc(&v->gaps, ',');
		}
		buf_printf(&v->gaps, "\"line\":%lu,\"seqs\":", n);
		json_escape_str(&v->gaps, ev->seqs != NULL ? ev->seqs : "");
		buf_printf(&v->gaps,
		           ",\"unwritten\":%" PRId64 ",\"refused\":%" PRId64
		           ",\"duration_ms\":%" PRId64 ",\"error\":",
		           unwritten, refused, ev->duration_ms > 0 ? ev->duration_ms : 0);
		json_escape_str(&v->gaps, err);
		buf_addc(&v->gaps, '}');
		return;
	}
	if (v->file != NULL)
		buf_printf(&v->gaps, "%s: ", v->file);
	buf_printf(&v->gaps, "line %lu: gap: the log could not be written for %.1f s (", n, secs);
	review_text_escape(&v->gaps, err, strlen(err));
	buf_printf(&v->gaps, "): %" PRId64 " line%s not written", unwritten,
	           unwritten == 1 ? "" : "s");
	if (ev->seqs != NULL && *ev->seqs != '\0') {
		buf_adds(&v->gaps, " (seq ");
		review_text_escape(&v->gaps, ev->seqs, strlen(ev->seqs));
		buf_addc(&v->gaps, ')');
	}
	buf_printf(&v->gaps, ", %" PRId64 " request%s refused\n", refused, refused == 1 ? "" : "s");
}

/* Check one line against the hash expected of the line before it. */
static void
review_verify_line(struct review_verify *v, struct review_reader *r, const char *expect)
{
	struct review_event ev;
	const char *why, *prev;
	int64_t ls = v->last_seq;

	why =
	    r->overlong ? "longer than 1 MiB" : review_event_parse(&ev, r->line.data, r->line.len);
	prev = r->overlong ? NULL : ev.prev;
	v->lines++;
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
		if (strcmp(prev, expect) == 0 && why == NULL && ls >= 0 && ev.seq > ls + 1)
			review_verify_jump(v, r->lineno, ls + 1, ev.seq - 1);
		if (v->lines == 1 && strcmp(prev, chain_zeros) != 0 && why == NULL &&
		    review_verify_continues(&ev))
			v->continued = 1; /* the file it continues is not in the input */
		else if (strcmp(prev, expect) != 0)
			review_verify_mismatch(v, r->lineno, v->lines, prev,
			                       why == NULL ? ev.seq : -1);
		else if (r->partial)
			review_verify_problem(
			    v, r->lineno, "truncated-tail",
			    "truncated tail: the file ends without a newline after "
			    "this line");
		v->last_seq = why == NULL ? ev.seq : -1;
		if (why == NULL && ev.seq == 1) {
			review_verify_jumps_flush(
			    v); /* a new run: the last one said nothing more */
			v->runs++;
		}
		if (why == NULL && strcmp(ev.event, "daemon") == 0 && ev.reason != NULL &&
		    strcmp(ev.reason, "resumed") == 0)
			review_verify_gap(v, r->lineno, &ev);
	}
	if (!r->overlong)
		review_event_clear(&ev);
}

/* Check the lines of one file of the input, the chain going on from expect. */
static int
review_verify_file(struct review_verify *v, FILE *in, const char *name, char expect[CHAIN_HEX + 1])
{
	struct review_reader r;
	int rc;

	review_reader_init(&r, in, 1);
	while ((rc = review_reader_next(&r)) == 1) {
		review_verify_line(v, &r, expect);
		memcpy(expect, r.hash, CHAIN_HEX + 1);
		memcpy(v->ring[v->lines % REVIEW_VERIFY_RING], r.hash, CHAIN_HEX + 1);
	}
	if (rc == -1)
		fprintf(v->o->err, "policyctl: %s: %s\n", name, strerror(r.error));
	review_reader_free(&r);
	return rc;
}

static void
review_verify_report(struct review_verify *v, const char *expect)
{
	if (v->o->json) {
		buf_printf(&v->b,
		           "],\"lines\":%lu,\"runs\":%lu,\"ok\":%s,\"first_break\":", v->lines,
		           v->runs, v->problems == 0 ? "true" : "false");
		if (v->problems > 0)
			buf_printf(&v->b, "%lu", v->first);
		else
			buf_adds(&v->b, "null");
		buf_printf(&v->b, ",\"problem_count\":%lu,\"last_hash\":", v->problems);
		json_escape_str(&v->b, v->lines > 0 ? expect : NULL);
		if (v->ngaps > 0 || v->continued)
			buf_printf(&v->b, ",\"gaps\":[%s],\"unwritten\":%llu,\"continues\":%s",
			           buf_cstr(&v->gaps), (unsigned long long)v->unwritten,
			           v->continued ? "true" : "false");
		buf_adds(&v->b, "}\n");
		return;
	}
	if (v->problems > REVIEW_VERIFY_SHOW)
		buf_printf(&v->b, "... %lu more problems not shown\n",
		           v->problems - REVIEW_VERIFY_SHOW);
	buf_add(&v->b, v->gaps.data, v->gaps.len);
	if (v->continued)
		buf_adds(&v->b,
		         "the first line continues a log rotated away (its file is not here): "
		         "its link is not checked\n");
	if (v->problems == 0)
		buf_printf(&v->b, "%lu lines, %lu run%s, chain OK", v->lines, v->runs,
		           v->runs == 1 ? "" : "s");
	else if (v->first_file != NULL)
		buf_printf(&v->b, "%lu lines, chain BROKEN: %lu problem%s, first in %s at line %lu",
		           v->lines, v->problems, v->problems == 1 ? "" : "s", v->first_file,
		           v->first);
	else
		buf_printf(&v->b, "%lu lines, chain BROKEN: %lu problem%s, first at line %lu",
		           v->lines, v->problems, v->problems == 1 ? "" : "s", v->first);
	if (v->ngaps > 0)
		buf_printf(&v->b,
		           "; %llu line%s egressd could not write, named by %lu daemon line%s",
		           (unsigned long long)v->unwritten, v->unwritten == 1 ? "" : "s", v->ngaps,
		           v->ngaps == 1 ? "" : "s");
	buf_addc(&v->b, '\n');
	if (v->lines > 0)
		buf_printf(&v->b,
		           "last line hash: %s (keep it elsewhere to detect lines cut off the "
		           "end later)\n",
		           expect);
}

static void
review_verify_begin(struct review_verify *v, FILE *out, const struct review_opts *o,
                    char expect[CHAIN_HEX + 1])
{
	memset(v, 0, sizeof *v);
	v->o = o;
	v->out = out;
	v->last_seq = -1;
	buf_init(&v->b);
	buf_init(&v->gaps);
	memcpy(expect, chain_zeros, CHAIN_HEX + 1);
	if (o->json) {
		fputs("{\"file\":", out);
		json_escape_str(&v->b, o->name);
		buf_adds(&v->b, ",\"problems\":[");
		fwrite(v->b.data, 1, v->b.len, out);
		buf_reset(&v->b);
	}
}

/* The report, once every file was read (rc 0) or one could not be (-1). */
static int
review_verify_end(struct review_verify *v, int rc, const char *expect)
{
	if (rc == -1) {
		if (v->o->json)
			fputs("]}\n", v->out);
	} else {
		v->file = NULL;
		review_verify_jumps_flush(v);
		review_verify_report(v, expect);
		fwrite(v->b.data, 1, v->b.len, v->out);
		rc = v->problems > 0 ? 1 : 0;
	}
	buf_free(&v->b);
	buf_free(&v->gaps);
	return rc;
}

/*
 * Verify the chain of the files names[0..n) read in order as one log (a
 * rotated set, oldest first; "-" reads stdin): 0 when it is whole, 1 when
 * it is broken or a line is damaged, -1 when a file cannot be read.
 */
int
review_verify_set(char *const *names, size_t n, FILE *out, const struct review_opts *o)
{
	char expect[CHAIN_HEX + 1];
	struct review_verify v;
	size_t i;
	FILE *in;
	int rc = 0;

	review_verify_begin(&v, out, o, expect);
	for (i = 0; i < n && rc == 0; i++) {
		v.file = n > 1 ? names[i] : NULL;
		if (strcmp(names[i], "-") == 0)
			in = stdin;
		else if ((in = fopen(names[i], "r")) == NULL) {
			fprintf(o->err, "policyctl: %s: %s\n", names[i], strerror(errno));
			rc = -1;
			break;
		}
		rc = review_verify_file(&v, in, names[i], expect);
		if (in != stdin)
			fclose(in);
	}
	return review_verify_end(&v, rc, expect);
}

/* Verify the chain of the one file in (see review_verify_set). */
int
review_verify(FILE *in, FILE *out, const struct review_opts *o)
{
	char expect[CHAIN_HEX + 1];
	struct review_verify v;

	review_verify_begin(&v, out, o, expect);
	return review_verify_end(&v, review_verify_file(&v, in, o->name, expect), expect);
}
