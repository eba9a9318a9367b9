/*
 * The audit log writer: one JSON object per line (JSON Lines), each line
 * handed to the kernel whole with a single write(2) on an O_APPEND
 * descriptor, so readers never see half a line. Every line carries "prev",
 * the SHA-256 of the line before it in the file (chain.c), which lets a
 * copy of the log be checked for lines removed, inserted or edited. The
 * keys are those of fields.c, in its order; the schema for users is
 * docs/audit.md.
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

#include "audit.h"

#define AUDIT_VALUE_MAX    8192              /* bytes of one string value that are logged */
#define AUDIT_TAIL_MAX     (4 * 1024 * 1024) /* longest last line audit_open accepts */
#define AUDIT_TAIL_BLOCK   65536
#define AUDIT_TAIL_TRIES   5 /* re-reads of a tail that is still growing */
#define AUDIT_TAIL_WAIT_MS 20

struct audit {
	int fd;
	int flags;
#define AUDIT_F_CLOSE   0x1 /* the descriptor is ours to close */
#define AUDIT_F_REGULAR 0x2 /* a regular file: its cache released, fsync at close */
#define AUDIT_F_TORN    0x4 /* the file ends inside a line: start the next with '\n' */
	uint64_t seq;
	uint64_t lines;           /* made since open */
	uint64_t bytes;           /* written since open */
	uint64_t write_errors;    /* failed or short writes */
	char prev[CHAIN_HEX + 1]; /* the link of the last line */
	struct chain *chain;
	struct buf line;
	struct buf pending;     /* batched lines not written yet */
	time_t ts_sec;          /* the second ts_text was made for */
	char ts_text[32];       /* its RFC 3339 text, milliseconds left as .000 */
	void (*wakeup)(void *); /* batching on: lines are pending */
	void *wakeup_arg;
	/* Keeping the page cache small (audit_cache_release). */
	size_t cache_written; /* bytes written since the last release */
	off_t cache_synced;   /* writeback was started up to here */
};

/* A batch past this size is written at once, whatever the caller's rhythm. */
#define AUDIT_BATCH_MAX (256 * 1024)

/* Where the last line of a file lies. */
struct audit_tail {
	off_t size;
	off_t start;
	off_t end;   /* its trailing newline excluded */
	int partial; /* the file does not end with a newline */
};

static void audit_err(char *, size_t, const char *, ...) EG_PRINTF(3, 4);

static void
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
	};
}

/* The chain moves on past one line (or the bytes of it that landed). */
static void
audit_hash_line(struct audit *a, const char *p, size_t len)
{
	chain_line(a->chain, p, len, a->prev);
}

/* Read exactly n bytes at off; -1 with errno 0 when the file is shorter. */
static int
audit_pread(int fd, char *p, size_t n, off_t off)
{
	ssize_t r;

	while (n > 0) {
		r = pread(fd, p, n, off);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0) {
			errno = 0;
			return -1;
		}
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

static void
audit_err_read(char *errbuf, size_t errlen, const char *name)
{
	audit_err(errbuf, errlen, "cannot read %s: %s", name,
	          errno != 0 ? strerror(errno) : "file shrank while being read");
}

/*
 * Find the last line by reading backwards from the end in blocks. The
 * search is bounded: a last line longer than AUDIT_TAIL_MAX cannot have been
 * written by audit_write (values are capped), so the file is refused rather
 * than scanned without end.
 */
static int
audit_tail_find(int rfd, char *blk, struct audit_tail *t, const char *name, char *errbuf,
                size_t errlen)
{
	struct stat st;
	char last;
	off_t pos;
	size_t n, i;

	memset(t, 0, sizeof *t);
	if (fstat(rfd, &st) == -1) {
		audit_err(errbuf, errlen, "cannot stat %s: %s", name, strerror(errno));
		return -1;
	}
	if ((t->size = st.st_size) == 0)
		return 0;
	if (audit_pread(rfd, &last, 1, t->size - 1) == -1) {
		audit_err_read(errbuf, errlen, name);
		return -1;
	}
	t->partial = (last != '\n');
	t->end = t->partial ? t->size : t->size - 1;
	for (pos = t->end; pos > 0; pos -= (off_t)n) {
		if (t->end - pos >= AUDIT_TAIL_MAX) {
			audit_err(errbuf, errlen,
			          "cannot continue %s: its last line is longer than %d bytes", name,
			          AUDIT_TAIL_MAX);
			return -1;
		}
		n = pos < AUDIT_TAIL_BLOCK ? (size_t)pos : AUDIT_TAIL_BLOCK;
		if (audit_pread(rfd, blk, n, pos - (off_t)n) == -1) {
			audit_err_read(errbuf, errlen, name);
			return -1;
		}
		for (i = n; i > 0; i--) {
			if (blk[i - 1] == '\n') {
				t->start = pos - (off_t)n + (off_t)i;
				goto found;
			}
		}
	}
	t->start = 0;
found:
	if (t->end - t->start > AUDIT_TAIL_MAX) {
		audit_err(errbuf, errlen,
		          "cannot continue %s: its last line is longer than %d bytes", name,
		          AUDIT_TAIL_MAX);
		return -1;
	}
	return 0;
}

/* Hash the bytes of the last line into a->prev. */
static int
audit_tail_hash(struct audit *a, int rfd, char *blk, const struct audit_tail *t, const char *name,
                char *errbuf, size_t errlen)
{
	off_t pos;
	size_t n;

	chain_begin(a->chain);
	for (pos = t->start; pos < t->end; pos += (off_t)n) {
		n = t->end - pos < AUDIT_TAIL_BLOCK ? (size_t)(t->end - pos) : AUDIT_TAIL_BLOCK;
		if (audit_pread(rfd, blk, n, pos) == -1) {
			audit_err_read(errbuf, errlen, name);
			return -1;
		}
		chain_update(a->chain, blk, n);
	}
	chain_end(a->chain, a->prev);
	return 0;
}

/*
 * Continue the chain from the last line of the file rfd reads (the file a
 * writes). A file that ends without a newline is either a truncated copy or
 * another writer caught between two pages of one write; the second kind
 * settles within milliseconds, so the tail is re-read while the size keeps
 * changing. A partial tail that stays is kept: the next line starts with a
 * newline and chains from the partial bytes, so a verifier reports exactly
 * that line as not JSON and the chain stays whole.
 */
static int
audit_resume(struct audit *a, int rfd, const char *name, char *errbuf, size_t errlen)
{
	struct timespec wait = {0, AUDIT_TAIL_WAIT_MS * 1000000L};
	struct audit_tail t;
	struct stat st;
	char *blk;
	int try, rc = -1;

	blk = xmalloc(AUDIT_TAIL_BLOCK);
	for (try = 0;; try++) {
		if (audit_tail_find(rfd, blk, &t, name, errbuf, errlen) == -1)
			goto out;
		if (!t.partial || try == AUDIT_TAIL_TRIES)
			break;
		nanosleep(&wait, NULL);
		if (fstat(rfd, &st) == -1 || st.st_size == t.size)
			break;
	}
	if (t.size == 0) {
		rc = 0;
		goto out;
	}
	if (audit_tail_hash(a, rfd, blk, &t, name, errbuf, errlen) == -1)
		goto out;
	if (t.partial) {
		log_warnx("audit: %s ends with a partial line of %lld bytes; the next line chains "
		          "from it",
		          name, (long long)(t.end - t.start));
		a->flags |= AUDIT_F_TORN;
	}
	rc = 0;
out:
	free(blk);
	return rc;
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

static struct audit *
audit_new(int fd, int flags)
{
	struct audit *a;

	a = xcalloc(1, sizeof *a);
	a->fd = fd;
	a->flags = flags;
	memcpy(a->prev, chain_zeros, sizeof a->prev);
	a->chain = chain_new();
	buf_init(&a->line);
	return a;
}

/* Release a writer whose setup failed, leaving its descriptor alone. */
static void
audit_discard(struct audit *a)
{
	chain_free(a->chain);
	buf_free(&a->line);
	buf_free(&a->pending);
	free(a);
}

static void
audit_warn_mode(const char *name, const struct stat *st)
{
	if (st->st_mode & (S_IRWXG | S_IRWXO))
		log_warnx("audit: %s is open to group or others (mode %04o); the audit log "
		          "names every host the sandbox reached",
		          name, (unsigned)(st->st_mode & 07777));
}

/*
 * Open the audit log at path, "-" for stdout. The file is created 0600 and
 * must be a regular file reached without following a symbolic link in its
 * last component: the log is sensitive and its directory may be writable by
 * others. It is opened read-write (O_APPEND) so the chain can continue from
 * its last line.
 */
struct audit *
audit_open(const char *path, char *errbuf, size_t errlen)
{
	struct audit *a;
	struct stat st;
	int fd, fl;

	if (strcmp(path, "-") == 0)
		return audit_open_fd(STDOUT_FILENO, errbuf, errlen);
	/* O_NONBLOCK: opening a FIFO or device must not hang; cleared below. */
	fd =
	    open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
	         0600);
	if (fd == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s%s", path, strerror(errno),
		          errno == ELOOP ? " (a symbolic link is not accepted)" : "");
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		audit_err(errbuf, errlen, "cannot open %s: not a regular file", path);
		goto fail;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	audit_warn_mode(path, &st);
	a = audit_new(fd, AUDIT_F_CLOSE | AUDIT_F_REGULAR);
	if (audit_resume(a, fd, path, errbuf, errlen) == -1) {
		audit_discard(a);
		goto fail;
	}
	return a;
fail:
	close(fd);
	return NULL;
}

/*
 * Write the audit log to an open descriptor, which the writer then owns
 * (audit_close closes it unless it is 0, 1 or 2). On failure it is left
 * open. A regular file gets O_APPEND and its chain is continued; a pipe,
 * terminal or socket starts from zeros.
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
	if ((rfd = audit_reader(fd, &st)) == -1) {
		log_warnx("audit: cannot read back %s; its hash chain restarts from zeros", name);
		return a;
	}
	if (audit_resume(a, rfd, name, errbuf, errlen) == -1) {
		if (rfd != fd)
			close(rfd);
		audit_discard(a);
		return NULL;
	}
	if (rfd != fd)
		close(rfd);
	return a;
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
 * audit_open accepts as a last line.
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

/*
 * Nobody reads an audit log back while it is written, so its pages need not
 * stay in the page cache: left there they grow with the log (a gigabyte is an
 * hour of busy DNS), count against the sandbox's memory, and each new one is
 * memory the kernel has to find; in a virtual machine whose free memory goes
 * back to the host, finding it made every write several times as slow (see
 * docs/audit.md). After each AUDIT_CACHE_WINDOW bytes the window just
 * written is sent to disk without waiting, and the windows before it, whose
 * writeback started earlier, are dropped. Pages still dirty or being written
 * are left by the kernel and tried again, AUDIT_CACHE_RETRY windows long.
 * Failures change nothing but the cache, so they are ignored.
 */
static void
audit_cache_release(struct audit *a)
{
	off_t end, from;

	a->cache_written = 0;
	if ((end = lseek(a->fd, 0, SEEK_CUR)) == -1)
		return;
	if (end < a->cache_synced) /* truncated by somebody else */
		a->cache_synced = 0;
	(void)sync_file_range(a->fd, a->cache_synced, end - a->cache_synced, SYNC_FILE_RANGE_WRITE);
	from = a->cache_synced - (off_t)AUDIT_CACHE_RETRY * AUDIT_CACHE_WINDOW;
	if (from < 0)
		from = 0;
	if (a->cache_synced > from)
		(void)posix_fadvise(a->fd, from, a->cache_synced - from, POSIX_FADV_DONTNEED);
	a->cache_synced = end;
}

/*
 * Write bytes of whole lines with one write(2). A short write is never
 * completed by a second write, which another writer's line could split;
 * the torn bytes stay and the next line starts after a newline. When the
 * write tore line [start, end) of buf, the chain continues from the bytes
 * of it that landed, so a verifier reports exactly that line.
 */
static int
audit_put(struct audit *a, const char *data, size_t len, size_t last_start)
{
	ssize_t n;

	do
		n = write(a->fd, data, len);
	while (n == -1 && errno == EINTR);
	if (n == -1) {
		log_warn("audit: cannot write line %" PRIu64, a->seq);
		a->write_errors++;
		return -1;
	}
	a->bytes += (uint64_t)n;
	a->flags &= ~AUDIT_F_TORN;
	if ((a->flags & AUDIT_F_REGULAR) && (a->cache_written += (size_t)n) >= AUDIT_CACHE_WINDOW)
		audit_cache_release(a);
	if ((size_t)n == len)
		return 0;
	log_warnx("audit: short write before line %" PRIu64 " (%zd of %zu bytes)", a->seq, n, len);
	a->write_errors++;
	if (n > 0 && data[n - 1] != '\n')
		a->flags |= AUDIT_F_TORN;
	if ((size_t)n > last_start) {
		audit_hash_line(a, data + last_start, (size_t)n - last_start);
	}
	return -1;
}

/*
 * Record one event as one line. Unbatched, it is written at once with
 * one write(2). Batched (audit_set_batch), it joins the pending lines and
 * the owner's wakeup runs so that audit_flush writes them all with one
 * write(2) soon after: several whole lines per write, never part of one.
 * The chain advances as each line is made. seq counts attempts, so a line
 * that failed leaves a gap.
 */
int
audit_write(struct audit *a, const struct audit_event *ev)
{
	struct buf *b = &a->line;
	size_t start, end;
	int rc, first;

	if (ev->event == NULL) {
		log_warnx("audit: an event without a type was not written");
		return -1;
	}
	a->seq++;
	a->lines++;
	/* Batched, the line is made in place after the pending ones. */
	if (a->wakeup != NULL)
		b = &a->pending;
	else
		buf_reset(b);
	first = b->len == 0;
	if ((a->flags & AUDIT_F_TORN) && first)
		buf_addc(b, '\n');
	start = b->len;
	audit_build(a, b, ev);
	end = b->len;
	buf_addc(b, '\n');
	if (a->wakeup != NULL) {
		audit_hash_line(a, b->data + start, end - start);
		if (first)
			a->wakeup(a->wakeup_arg);
		return b->len > AUDIT_BATCH_MAX ? audit_flush(a) : 0;
	}
	if ((rc = audit_put(a, b->data, b->len, start)) == 0)
		audit_hash_line(a, b->data + start, end - start);
	return rc;
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

/* Write the pending lines with one write(2). */
int
audit_flush(struct audit *a)
{
	const char *last;
	size_t start;
	int rc;

	if (a == NULL || a->pending.len == 0)
		return 0;
	/* Where the last line starts, for a torn write's chain. */
	for (last = a->pending.data + a->pending.len - 1;
	     last > a->pending.data && last[-1] != '\n'; last--)
		;
	start = (size_t)(last - a->pending.data);
	rc = audit_put(a, a->pending.data, a->pending.len, start);
	buf_reset(&a->pending);
	return rc;
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
