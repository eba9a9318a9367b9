/*
 * The audit log writer: one JSON object per line (JSON Lines), each line
 * handed to the kernel whole with a single write(2) on an O_APPEND
 * descriptor, so readers never see half a line. Every line carries "prev",
 * the SHA-256 of the line before it in the file (chain.c), which lets a
 * copy of the log be checked for lines removed, inserted or edited. The
 * keys are those of fields.c, in its order; the schema for users is
 * docs/audit.md.
 *
 * A log that cannot be written is never lost silently. Room for the lines
 * of exchanges let through is kept on disk ahead of them (logfile.c), so a
 * full disk is known before a line is lost; then, with audit.onError:
 * block, every new request is refused until the log can be written again
 * (audit_admit), and with continue the lines that cannot be written are
 * counted. Either way the chain links only lines that are in the file,
 * and once the log is writable again one `daemon` line says how long it
 * was not, how many requests were refused and which seqs were not written.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit_int.h"

#define AUDIT_VALUE_MAX 8192 /* bytes of one string value that are logged */

/* A batch past this size is written at once, whatever the caller's rhythm. */
#define AUDIT_BATCH_MAX (256 * 1024)

/* An error message into the caller's buffer, when it gave one. */
void
audit_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

void
audit_event_init(struct audit_event *ev)
{
	*ev = (struct audit_event){
	    .port = -1,
	    .status = -1,
	    .bytes_up = -1,
	    .bytes_down = -1,
	    .duration_ms = -1,
	    .uid = -1,
	    .refused = -1,
	    .unwritten = -1,
	};
}

static struct audit *
audit_new(int fd, int flags)
{
	struct audit *a;

	a = xcalloc(1, sizeof *a);
	a->fd = fd;
	a->flags = flags;
	a->set.keep = AUDIT_KEEP_DEFAULT;
	memcpy(a->prev, chain_zeros, sizeof a->prev);
	memcpy(a->prev_file, chain_zeros, sizeof a->prev_file);
	a->chain = chain_new();
	buf_init(&a->pending);
	return a;
}

/* Release a writer whose setup failed, leaving its descriptor alone. */
static void
audit_discard(struct audit *a)
{
	chain_free(a->chain);
	buf_free(&a->pending);
	free(a->pend);
	free(a->path);
	free(a);
}

/*
 * Open the audit log at path, "-" for stdout (logfile_open says what a
 * path must be). The chain continues from the file's last line.
 */
struct audit *
audit_open(const char *path, char *errbuf, size_t errlen)
{
	struct audit *a;
	struct stat st;
	int fd;

	if (strcmp(path, "-") == 0)
		return audit_open_fd(STDOUT_FILENO, errbuf, errlen);
	if ((fd = logfile_open(path, 0, &st, errbuf, errlen)) == -1)
		return NULL;
	a = audit_new(fd, AUDIT_F_CLOSE | AUDIT_F_REGULAR);
	a->path = xstrdup(path);
	if (logfile_resume(a, fd, path, errbuf, errlen) == -1) {
		audit_discard(a);
		close(fd);
		return NULL;
	}
	logfile_room_init(a, &st);
	return a;
}

/*
 * A descriptor that reads the file fd writes: fd itself when it is open for
 * reading, else the same file opened again through /proc (a descriptor
 * inherited as "egressd >>log" is write-only). Returns -1 if there is none.
 */
static int
audit_reader(int fd, const struct stat *st)
{
	struct stat st2;
	char path[64];
	int fl, rfd;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		return -1;
	if ((fl & O_ACCMODE) == O_RDWR)
		return fd;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if ((rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return -1;
	if (fstat(rfd, &st2) == -1 || st2.st_dev != st->st_dev || st2.st_ino != st->st_ino) {
		close(rfd);
		return -1;
	}
	return rfd;
}

/*
 * Write the audit log to an open descriptor, which the writer then owns
 * (audit_close closes it unless it is 0, 1 or 2). On failure it is left
 * open. A regular file gets O_APPEND and its chain is continued; a pipe,
 * terminal or socket starts from zeros. A descriptor is never rotated or
 * reopened: the writer does not know its name.
 */
struct audit *
audit_open_fd(int fd, char *errbuf, size_t errlen)
{
	struct audit *a;
	struct stat st;
	char name[32];
	int fl, rfd, flags;

	if (fd == STDOUT_FILENO)
		snprintf(name, sizeof name, "stdout");
	else
		snprintf(name, sizeof name, "fd %d", fd);
	if (fstat(fd, &st) == -1 || (fl = fcntl(fd, F_GETFL)) == -1) {
		audit_err(errbuf, errlen, "cannot use %s: %s", name, strerror(errno));
		return NULL;
	}
	if ((fl & O_ACCMODE) == O_RDONLY) {
		audit_err(errbuf, errlen, "cannot use %s: not open for writing", name);
		return NULL;
	}
	flags = fd > STDERR_FILENO ? AUDIT_F_CLOSE : 0;
	if (!S_ISREG(st.st_mode))
		return audit_new(fd, flags);

	flags |= AUDIT_F_REGULAR;
	if (!(fl & O_APPEND) && fcntl(fd, F_SETFL, fl | O_APPEND) == -1) {
		audit_err(errbuf, errlen, "cannot use %s: %s", name, strerror(errno));
		return NULL;
	}
	a = audit_new(fd, flags);
	logfile_room_init(a, &st);
	if ((rfd = audit_reader(fd, &st)) == -1) {
		log_warnx("audit: cannot read back %s; its hash chain restarts from zeros", name);
		return a;
	}
	if (logfile_resume(a, rfd, name, errbuf, errlen) == -1) {
		if (rfd != fd)
			close(rfd);
		audit_discard(a);
		return NULL;
	}
	if (rfd != fd)
		close(rfd);
	return a;
}

/* audit.onError, audit.maxBytes and audit.keep: at start and at each reload. */
void
audit_configure(struct audit *a, const struct audit_settings *set)
{
	if (a == NULL)
		return;
	a->set = *set;
	if (a->set.keep > AUDIT_KEEP_MAX)
		a->set.keep = AUDIT_KEEP_MAX;
}

/*
 * ,"key": for a field of the table (fields.c): keys are the writer's own
 * constants, so no escaping is needed. The first key, "v", opens the line
 * without a comma.
 */
static inline void
audit_add_key(struct buf *b, enum audit_field f)
{
	const struct fields_entry *k = &fields_table[f];

	buf_reserve(b, k->len + 4);
	if (f != AUDIT_FIELD_V)
		b->data[b->len++] = ',';
	b->data[b->len++] = '"';
	memcpy(b->data + b->len, k->name, k->len);
	b->len += k->len;
	b->data[b->len++] = '"';
	b->data[b->len++] = ':';
	b->data[b->len] = '\0';
}

/*
 * Append ,"key":"value". Values are capped at AUDIT_VALUE_MAX bytes (cut
 * before a UTF-8 continuation byte) so every line stays far below what
 * the writer accepts as a last line.
 */
static void
audit_add_str(struct buf *b, enum audit_field f, const char *s, size_t len, int *truncated)
{
	if (len > AUDIT_VALUE_MAX) {
		len = AUDIT_VALUE_MAX;
		while (len > AUDIT_VALUE_MAX - 3 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
		*truncated = 1;
	}
	audit_add_key(b, f);
	json_escape(b, s, len);
}

static void
audit_add_cstr(struct buf *b, enum audit_field f, const char *s, int *truncated)
{
	if (s != NULL)
		audit_add_str(b, f, s, strnlen(s, AUDIT_VALUE_MAX + 1), truncated);
}

static void
audit_add_num(struct buf *b, enum audit_field f, int64_t v)
{
	char num[24];

	if (v < 0)
		return;
	audit_add_key(b, f);
	buf_add(b, num, str_u64(num, (uint64_t)v));
}

static void
audit_add_graphql(struct buf *b, const struct gql_result *g)
{
	size_t len;

	if (g == NULL || g->op == GQL_NONE)
		return;
	audit_add_key(b, AUDIT_FIELD_GRAPHQL);
	buf_adds(b, "{\"operation\":");
	json_escape_str(b, graphql_op_name(g->op));
	buf_adds(b, ",\"name\":");
	if ((len = strnlen(g->name, sizeof g->name)) > 0)
		json_escape(b, g->name, len);
	else
		buf_adds(b, "null");
	buf_addc(b, '}');
}

/*
 * The event's time: the date and time of day are formatted once a second,
 * only the milliseconds for each line.
 */
static void
audit_ts(struct audit *a, const struct timespec *now, char ts[32])
{
	long ms = (now->tv_nsec / 1000000) % 1000;

	if (a->ts_text[0] == '\0' || now->tv_sec != a->ts_sec) {
		time_rfc3339_ms(&(struct timespec){now->tv_sec, 0}, a->ts_text);
		a->ts_sec = now->tv_sec;
	}
	memcpy(ts, a->ts_text, 32);
	/* "...:SS.mmmZ": the three digits before the final Z. */
	ts[20] = (char)('0' + ms / 100);
	ts[21] = (char)('0' + ms / 10 % 10);
	ts[22] = (char)('0' + ms % 10);
}

/*
 * Append the JSON object of one event to b, without a newline. The keys
 * come in the order of the table of fields, each from it.
 */
static void
audit_build(struct audit *a, struct buf *b, const struct audit_event *ev)
{
	struct timespec now;
	char ts[32], num[24];
	int truncated = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	audit_ts(a, &now, ts);
	buf_addc(b, '{');
	audit_add_key(b, AUDIT_FIELD_V);
	buf_addc(b, '1');
	audit_add_key(b, AUDIT_FIELD_TS);
	buf_addc(b, '"');
	buf_adds(b, ts);
	buf_addc(b, '"');
	audit_add_key(b, AUDIT_FIELD_SEQ);
	buf_add(b, num, str_u64(num, a->seq));
	audit_add_cstr(b, AUDIT_FIELD_EVENT, ev->event, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_ACTION, ev->action, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_RULE, ev->rule, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_SOURCE, ev->source, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_REASON, ev->reason, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_MODE, ev->mode, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_CLIENT, ev->client, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_HOST, ev->host, &truncated);
	audit_add_num(b, AUDIT_FIELD_PORT, ev->port);
	audit_add_cstr(b, AUDIT_FIELD_SCHEME, ev->scheme, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_METHOD, ev->method, &truncated);
	/* The query string carries secrets (tokens, keys): never log it. */
	if (ev->path != NULL)
		audit_add_str(b, AUDIT_FIELD_PATH, ev->path, strcspn(ev->path, "?#"), &truncated);
	audit_add_num(b, AUDIT_FIELD_STATUS, ev->status);
	audit_add_num(b, AUDIT_FIELD_BYTES_UP, ev->bytes_up);
	audit_add_num(b, AUDIT_FIELD_BYTES_DOWN, ev->bytes_down);
	audit_add_num(b, AUDIT_FIELD_DURATION_MS, ev->duration_ms);
	audit_add_graphql(b, ev->graphql);
	audit_add_cstr(b, AUDIT_FIELD_QNAME, ev->qname, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_QTYPE, ev->qtype, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_RCODE, ev->rcode, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_ERROR, ev->error, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_ADDR, ev->addr, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_SNI, ev->sni, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_TLS, ev->tls, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_HINT, ev->hint, &truncated);
	audit_add_cstr(b, AUDIT_FIELD_PROTO, ev->proto, &truncated);
	audit_add_num(b, AUDIT_FIELD_UID, ev->uid);
	audit_add_num(b, AUDIT_FIELD_REFUSED, ev->refused);
	audit_add_num(b, AUDIT_FIELD_UNWRITTEN, ev->unwritten);
	audit_add_cstr(b, AUDIT_FIELD_SEQS, ev->seqs, &truncated);
	if (ev->cached) {
		audit_add_key(b, AUDIT_FIELD_CACHED);
		buf_adds(b, "true");
	}
	if (truncated) {
		audit_add_key(b, AUDIT_FIELD_TRUNCATED);
		buf_adds(b, "true");
	}
	audit_add_key(b, AUDIT_FIELD_PREV);
	buf_addc(b, '"');
	buf_add(b, a->prev, CHAIN_HEX);
	buf_add(b, "\"}", 2);
}

/* The seq of a line made and not written: kept in order, ranges merged. */
static void
audit_gap_add(struct audit_gap *g, uint64_t seq)
{
	unsigned i;

	g->count++;
	for (i = 0; i < g->n && g->hi[i] + 1 < seq; i++)
		;
	if (i < g->n && g->lo[i] <= seq + 1) {
		/* Touches range i: extend it, and join it to the next when they meet. */
		if (seq < g->lo[i])
			g->lo[i] = seq;
		if (seq > g->hi[i])
			g->hi[i] = seq;
		if (i + 1 < g->n && g->hi[i] + 1 >= g->lo[i + 1]) {
			g->hi[i] = g->hi[i + 1];
			memmove(&g->lo[i + 1], &g->lo[i + 2], (g->n - i - 2) * sizeof g->lo[0]);
			memmove(&g->hi[i + 1], &g->hi[i + 2], (g->n - i - 2) * sizeof g->hi[0]);
			g->n--;
		}
		return;
	}
	if (g->n == AUDIT_GAP_RANGES) {
		/* Full: the nearest range grows over it, and names written lines too. */
		if (i == g->n)
			g->hi[i - 1] = seq;
		else
			g->lo[i] = seq;
		return;
	}
	memmove(&g->lo[i + 1], &g->lo[i], (g->n - i) * sizeof g->lo[0]);
	memmove(&g->hi[i + 1], &g->hi[i], (g->n - i) * sizeof g->hi[0]);
	g->lo[i] = g->hi[i] = seq;
	g->n++;
}

/* The gap as the "seqs" of its daemon line: "12-40,57". */
static void
audit_gap_text(const struct audit_gap *g, struct buf *b)
{
	unsigned i;

	for (i = 0; i < g->n; i++) {
		if (i > 0)
			buf_addc(b, ',');
		if (g->lo[i] == g->hi[i])
			buf_printf(b, "%" PRIu64, g->lo[i]);
		else
			buf_printf(b, "%" PRIu64 "-%" PRIu64, g->lo[i], g->hi[i]);
	}
}

static void
audit_lost(struct audit *a, uint64_t seq)
{
	audit_gap_add(&a->gap, seq);
	a->unwritten++;
}

static const char *
audit_name(const struct audit *a)
{
	return a->path != NULL ? a->path : "the audit log";
}

/*
 * Lines cannot be written (err): say so once, and from now on refuse new
 * requests (audit.onError: block) or serve them and count what is lost.
 * audit_tick tries again every second.
 */
void
audit_fail(struct audit *a, int err)
{
	if (a->flags & AUDIT_F_FAILING)
		return;
	a->flags |= AUDIT_F_FAILING;
	a->fail_errno = err;
	if (a->flags & AUDIT_F_PROBING)
		return; /* still the same episode */
	a->fail_since_ms = time_mono_ms();
	clock_gettime(CLOCK_REALTIME, &a->fail_since);
	a->failures++;
	log_warnx("audit: cannot write %s: %s; %s until it can be written again "
	          "(audit.onError: %s)",
	          audit_name(a), strerror(err),
	          a->set.on_error == AUDIT_ON_ERROR_BLOCK
	              ? "refusing every new request (HTTP 503, DNS REFUSED)"
	              : "serving on and counting the lines not written",
	          a->set.on_error == AUDIT_ON_ERROR_BLOCK ? "block" : "continue");
}

/*
 * Whether a new request may go on. Room is kept for its line (written
 * when its exchange ends; the caller marks it ev.admitted), or, when lines
 * cannot be written, the request is refused (block; counted) or let
 * through (continue). 1: go on; 0: refuse it.
 */
int
audit_admit(struct audit *a)
{
	off_t need;

	if (a == NULL)
		return 1;
	if (a->flags & AUDIT_F_FAILING) {
		if (a->set.on_error == AUDIT_ON_ERROR_BLOCK) {
			a->ep_refused++;
			a->refused++;
			return 0;
		}
		a->owed++;
		return 1;
	}
	if (a->flags & AUDIT_F_ROOM) {
		need = a->size + (off_t)a->pending.len + (off_t)(a->owed + 1) * AUDIT_ROOM_LINE;
		if (need > a->reserved && logfile_reserve(a, need) == -1) {
			audit_fail(a, errno);
			if (a->set.on_error == AUDIT_ON_ERROR_BLOCK) {
				a->ep_refused++;
				a->refused++;
				return 0;
			}
		}
	}
	a->owed++;
	return 1;
}

/* An admitted request ended without its line: its room is free again. */
void
audit_release(struct audit *a)
{
	if (a != NULL && a->owed > 0)
		a->owed--;
}

/* Whether new requests are refused now (lines cannot be written; block). */
int
audit_refusing(const struct audit *a)
{
	return a != NULL && (a->flags & AUDIT_F_FAILING) && a->set.on_error == AUDIT_ON_ERROR_BLOCK;
}

/*
 * A request refused by its caller because lines cannot be written (one
 * whose line would be made at once: a DNS query, a WebSocket message).
 */
void
audit_refused(struct audit *a)
{
	if (a == NULL)
		return;
	a->ep_refused++;
	a->refused++;
}

/* Why requests are refused, for the 503 and the DNS answer's EDE text. */
const char *
audit_refusal(const struct audit *a, char *text, size_t len)
{
	snprintf(text, len, "the audit log cannot be written (%s)",
	         a != NULL ? strerror(a->fail_errno) : "no log");
	return text;
}

/*
 * Whether the line just made at the end of pending may stay. On a file
 * whose room is reserved, the bytes pending, and the lines still owed to
 * admitted exchanges, must fit the room; more is reserved when they do not.
 * While lines cannot be written, only an admitted exchange's line is still
 * tried: its request was let through.
 */
static int
audit_room(struct audit *a, int admitted)
{
	off_t need;

	if (!(a->flags & AUDIT_F_ROOM))
		return admitted || !(a->flags & AUDIT_F_FAILING);
	need = a->size + (off_t)a->pending.len + (off_t)a->owed * AUDIT_ROOM_LINE;
	if (need <= a->reserved)
		return 1;
	if (!(a->flags & AUDIT_F_FAILING)) {
		if (logfile_reserve(a, need) == 0)
			return 1;
		audit_fail(a, errno);
	}
	return admitted;
}

static void
audit_pend_push(struct audit *a, size_t start, size_t end, uint64_t seq)
{
	if (a->npend == a->pend_cap) {
		a->pend_cap = a->pend_cap ? a->pend_cap * 2 : 64;
		a->pend = xreallocarray(a->pend, a->pend_cap, sizeof *a->pend);
	}
	a->pend[a->npend++] = (struct audit_pend){start, end, seq};
}

/*
 * Record one event as one line. Unbatched, it is written at once with
 * one write(2). Batched (audit_set_batch), it joins the pending lines and
 * the owner's wakeup runs so that audit_flush writes them all with one
 * write(2) soon after: several whole lines per write, never part of one.
 * seq counts the lines made, so a line that was not written leaves a gap,
 * which the daemon line written after it names. 0 when the line is kept
 * (the room for it is there), -1 when it cannot be written.
 */
int
audit_write(struct audit *a, const struct audit_event *ev)
{
	struct buf *b = &a->pending;
	size_t mark, start, end;

	if (ev->event == NULL) {
		log_warnx("audit: an event without a type was not written");
		return -1;
	}
	if (ev->admitted && a->owed > 0)
		a->owed--;
	a->seq++;
	a->lines++;
	mark = b->len;
	if ((a->flags & AUDIT_F_TORN) && b->len == 0)
		buf_addc(b, '\n');
	start = b->len;
	audit_build(a, b, ev);
	end = b->len;
	buf_addc(b, '\n');
	if (!audit_room(a, ev->admitted)) {
		b->len = mark;
		if (b->data != NULL)
			b->data[mark] = '\0';
		audit_lost(a, a->seq);
		return -1;
	}
	chain_line(a->chain, b->data + start, end - start, a->prev);
	audit_pend_push(a, start, end, a->seq);
	if (a->wakeup == NULL)
		return audit_flush(a);
	if (a->npend == 1)
		a->wakeup(a->wakeup_arg);
	return b->len > AUDIT_BATCH_MAX ? audit_flush(a) : 0;
}

/*
 * Batch lines: wakeup(arg) runs when a line is recorded while none is
 * pending; the owner then calls audit_flush, typically once per turn of
 * its event loop. NULL turns batching off (after a flush).
 */
void
audit_set_batch(struct audit *a, void (*wakeup)(void *), void *arg)
{
	if (wakeup == NULL)
		(void)audit_flush(a);
	a->wakeup = wakeup;
	a->wakeup_arg = arg;
}

/* The longest run of whole pending lines that fits in room bytes. */
static size_t
audit_fit(const struct audit *a, off_t room)
{
	size_t k, fit = 0;

	for (k = 0; k < a->npend && (off_t)(a->pend[k].end + 1) <= room; k++)
		fit = a->pend[k].end + 1;
	return fit;
}

/*
 * n bytes of the pending lines reached the file. The lines wholly among
 * them are written; the rest are not, and the chain goes back to the last
 * bytes in the file: the link of the last whole line, or of a line the
 * write tore (a short write), whose bytes stay as a line of their own that
 * the next one, after a newline, chains from; a verifier reports exactly
 * that line.
 */
static void
audit_settle(struct audit *a, size_t n)
{
	const char *d = a->pending.data;
	const struct audit_pend *p;
	size_t k;

	if (n > 0) {
		a->size += (off_t)n;
		a->bytes += (uint64_t)n;
		if (a->flags & AUDIT_F_REGULAR)
			logfile_cache_note(a, n);
		if (d[n - 1] == '\n')
			a->flags &= ~AUDIT_F_TORN;
		else
			a->flags |= AUDIT_F_TORN;
	}
	for (k = 0; k < a->npend && a->pend[k].end + 1 <= n; k++)
		;
	if (k == a->npend) {
		memcpy(a->prev_file, a->prev, sizeof a->prev_file);
	} else {
		p = &a->pend[k];
		if (n > p->start)
			chain_line(a->chain, d + p->start, n - p->start, a->prev_file);
		else if (k > 0)
			chain_line(a->chain, d + p[-1].start, p[-1].end - p[-1].start,
			           a->prev_file);
		for (; k < a->npend; k++)
			audit_lost(a, a->pend[k].seq);
		memcpy(a->prev, a->prev_file, sizeof a->prev);
	}
	buf_reset(&a->pending);
	a->npend = 0;
}

/*
 * Write the pending lines with one write(2): 0 when every one of them
 * reached the file. A short write is never completed by a second write,
 * which another writer's line could split. When the room reserved cannot
 * grow to hold them all, the lines that fit are written and the rest are
 * not, rather than torn. A file past audit.maxBytes is rotated after.
 */
int
audit_flush(struct audit *a)
{
	size_t len, cut;
	ssize_t n = 0;

	if (a == NULL || a->pending.len == 0)
		return 0;
	len = cut = a->pending.len;
	if ((a->flags & AUDIT_F_ROOM) && a->size + (off_t)len > a->reserved &&
	    logfile_reserve(a, a->size + (off_t)len) == -1) {
		audit_fail(a, errno);
		cut = audit_fit(a, a->reserved - a->size);
	}
	if (cut > 0) {
		do
			n = write(a->fd, a->pending.data, cut);
		while (n == -1 && errno == EINTR);
		if (n == -1) {
			a->write_errors++;
			audit_fail(a, errno);
			n = 0;
		} else if ((size_t)n < cut) {
			/* A short write to a file is the disk or a size limit filling up. */
			a->write_errors++;
			audit_fail(a, ENOSPC);
		}
	}
	audit_settle(a, (size_t)n);
	if ((size_t)n != len)
		return -1;
	/* A rotation that failed is tried again from the tick, not on every write. */
	if (a->set.max_bytes > 0 && (uint64_t)a->size >= a->set.max_bytes &&
	    !(a->flags & (AUDIT_F_FAILING | AUDIT_F_PROBING)) && !a->rotate_failed)
		(void)logfile_rotate(a);
	return 0;
}

/*
 * Try the log again while lines cannot be written: the lines pending
 * first, then room for what is owed, then one `daemon` line that says for
 * how long the log could not be written, how many requests were refused
 * and which seqs were not written. Once that line is in the file, the
 * episode is over. A failed attempt stays in the same episode, its line
 * among the seqs the next attempt names.
 */
static void
audit_probe(struct audit *a)
{
	struct audit_event ev;
	struct buf seqs;
	uint64_t ms;

	a->flags = (a->flags | AUDIT_F_PROBING) & ~AUDIT_F_FAILING;
	/*
	 * Room for more than the one line, or a disk with a page left would
	 * end the episode only for the next request to start another.
	 */
	if (logfile_reserve(a, a->size + (off_t)a->pending.len + (off_t)a->owed * AUDIT_ROOM_LINE +
	                           AUDIT_ROOM_STEP) == -1)
		audit_fail(a, errno);
	else if (audit_flush(a) == 0 && !(a->flags & AUDIT_F_FAILING)) {
		buf_init(&seqs);
		audit_gap_text(&a->gap, &seqs);
		ms = time_mono_ms() - a->fail_since_ms;
		audit_event_init(&ev);
		ev.event = "daemon";
		ev.reason = "resumed";
		ev.error = strerror(a->fail_errno);
		ev.duration_ms = (int64_t)ms;
		ev.refused = (int64_t)a->ep_refused;
		ev.unwritten = (int64_t)a->gap.count;
		ev.seqs = seqs.len > 0 ? buf_cstr(&seqs) : NULL;
		(void)audit_write(a, &ev);
		(void)audit_flush(a);
		if (!(a->flags & AUDIT_F_FAILING)) {
			log_info("audit: %s can be written again after %.1f s; %" PRIu64
			         " requests refused, %" PRIu64 " lines not written%s%s%s",
			         audit_name(a), (double)ms / 1000.0, a->ep_refused, a->gap.count,
			         seqs.len > 0 ? " (seqs " : "", seqs.len > 0 ? buf_cstr(&seqs) : "",
			         seqs.len > 0 ? ")" : "");
			memset(&a->gap, 0, sizeof a->gap);
			a->ep_refused = 0;
		}
		buf_free(&seqs);
	}
	a->flags &= ~AUDIT_F_PROBING;
}

/*
 * Once a second (egressd's tick): while lines cannot be written, try
 * again; otherwise a rotation that failed, or one a reload's smaller
 * audit.maxBytes asks for, is tried.
 */
void
audit_tick(struct audit *a)
{
	if (a == NULL)
		return;
	if (a->flags & AUDIT_F_FAILING) {
		audit_probe(a);
		return;
	}
	if (a->set.max_bytes > 0 && (uint64_t)a->size >= a->set.max_bytes && audit_flush(a) == 0 &&
	    (uint64_t)a->size >= a->set.max_bytes)
		(void)logfile_rotate(a);
}

/* SIGUSR1: the file at the log's path again (logrotate's create mode). */
int
audit_reopen(struct audit *a)
{
	if (a == NULL)
		return 0;
	return logfile_reopen(a);
}

void
audit_stats(const struct audit *a, struct audit_stats *st)
{
	memset(st, 0, sizeof *st);
	if (a == NULL)
		return;
	st->seq = a->seq;
	st->lines = a->lines;
	st->bytes = a->bytes;
	st->write_errors = a->write_errors;
	st->failing = (a->flags & AUDIT_F_FAILING) != 0;
	st->error = st->failing ? a->fail_errno : 0;
	st->on_error = a->set.on_error;
	st->since = a->fail_since;
	st->refused = a->refused;
	st->unwritten = a->unwritten;
	st->failures = a->failures;
	st->rotations = a->rotations;
	st->reserved = a->reserved > a->size ? (uint64_t)(a->reserved - a->size) : 0;
	st->owed = a->owed;
}

/* Flush a regular file to disk and release the writer. */
void
audit_close(struct audit *a)
{
	if (a == NULL)
		return;
	(void)audit_flush(a);
	if ((a->flags & AUDIT_F_REGULAR) && fsync(a->fd) == -1)
		log_warn("audit: fsync");
	if ((a->flags & AUDIT_F_CLOSE) && close(a->fd) == -1)
		log_warn("audit: close");
	audit_discard(a);
}
