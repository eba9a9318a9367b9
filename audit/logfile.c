/*
 * The audit log's file: opened under the rules a sensitive log needs
 * (regular, 0600, no symbolic link), its hash chain continued from its
 * last line, room kept on disk ahead of the lines still to come so that a
 * full disk is known before a line is lost, its page cache released
 * behind the writer, and the file rotated (audit.maxBytes, audit.keep) or
 * reopened after an outside tool moved it (SIGUSR1). The names of a
 * rotated set are made here for the readers too (policyctl).
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>

#include "audit_int.h"

#define LOGFILE_TAIL_MAX     (4 * 1024 * 1024) /* longest last line a file may have */
#define LOGFILE_TAIL_BLOCK   65536
#define LOGFILE_TAIL_TRIES   5 /* re-reads of a tail that is still growing */
#define LOGFILE_TAIL_WAIT_MS 20

/* Where the last line of a file lies. */
struct logfile_tail {
	off_t size;
	off_t start;
	off_t end;   /* its trailing newline excluded */
	int partial; /* the file does not end with a newline */
};

/* Read exactly n bytes at off; -1 with errno 0 when the file is shorter. */
static int
logfile_pread(int fd, char *p, size_t n, off_t off)
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
logfile_err_read(char *errbuf, size_t errlen, const char *name)
{
	audit_err(errbuf, errlen, "cannot read %s: %s", name,
	          errno != 0 ? strerror(errno) : "file shrank while being read");
}

/*
 * Find the last line by reading backwards from the end in blocks. The
 * search is bounded: a last line longer than LOGFILE_TAIL_MAX cannot have
 * been written by the writer (values are capped), so the file is refused
 * rather than scanned without end.
 */
static int
logfile_tail_find(int rfd, char *blk, struct logfile_tail *t, const char *name, char *errbuf,
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
	if (logfile_pread(rfd, &last, 1, t->size - 1) == -1) {
		logfile_err_read(errbuf, errlen, name);
		return -1;
	}
	t->partial = (last != '\n');
	t->end = t->partial ? t->size : t->size - 1;
	for (pos = t->end; pos > 0; pos -= (off_t)n) {
		if (t->end - pos >= LOGFILE_TAIL_MAX) {
			audit_err(errbuf, errlen,
			          "cannot continue %s: its last line is longer than %d bytes", name,
			          LOGFILE_TAIL_MAX);
			return -1;
		}
		n = pos < LOGFILE_TAIL_BLOCK ? (size_t)pos : LOGFILE_TAIL_BLOCK;
		if (logfile_pread(rfd, blk, n, pos - (off_t)n) == -1) {
			logfile_err_read(errbuf, errlen, name);
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
	if (t->end - t->start > LOGFILE_TAIL_MAX) {
		audit_err(errbuf, errlen,
		          "cannot continue %s: its last line is longer than %d bytes", name,
		          LOGFILE_TAIL_MAX);
		return -1;
	}
	return 0;
}

/* Hash the bytes of the last line into a->prev. */
static int
logfile_tail_hash(struct audit *a, int rfd, char *blk, const struct logfile_tail *t,
                  const char *name, char *errbuf, size_t errlen)
{
	off_t pos;
	size_t n;

	chain_begin(a->chain);
	for (pos = t->start; pos < t->end; pos += (off_t)n) {
		n = t->end - pos < LOGFILE_TAIL_BLOCK ? (size_t)(t->end - pos) : LOGFILE_TAIL_BLOCK;
		if (logfile_pread(rfd, blk, n, pos) == -1) {
			logfile_err_read(errbuf, errlen, name);
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
int
logfile_resume(struct audit *a, int rfd, const char *name, char *errbuf, size_t errlen)
{
	struct timespec wait = {0, LOGFILE_TAIL_WAIT_MS * 1000000L};
	struct logfile_tail t;
	struct stat st;
	char *blk;
	int try, rc = -1;

	blk = xmalloc(LOGFILE_TAIL_BLOCK);
	for (try = 0;; try++) {
		if (logfile_tail_find(rfd, blk, &t, name, errbuf, errlen) == -1)
			goto out;
		if (!t.partial || try == LOGFILE_TAIL_TRIES)
			break;
		nanosleep(&wait, NULL);
		if (fstat(rfd, &st) == -1 || st.st_size == t.size)
			break;
	}
	if (t.size == 0) {
		rc = 0;
		goto out;
	}
	if (logfile_tail_hash(a, rfd, blk, &t, name, errbuf, errlen) == -1)
		goto out;
	memcpy(a->prev_file, a->prev, sizeof a->prev_file);
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

static void
logfile_warn_mode(const char *name, const struct stat *st)
{
	if (st->st_mode & (S_IRWXG | S_IRWXO))
		log_warnx("audit: %s is open to group or others (mode %04o); the audit log "
		          "names every host the sandbox reached",
		          name, (unsigned)(st->st_mode & 07777));
}

/*
 * Open (or create, 0600) the log file at path for appending, with its
 * stat in *st. It must be a regular file reached without following a
 * symbolic link in its last component: the log is sensitive and its
 * directory may be writable by others. Read-write, so that the chain can
 * continue from its last line. flags adds O_EXCL. -1 with errbuf set.
 */
int
logfile_open(const char *path, int flags, struct stat *st, char *errbuf, size_t errlen)
{
	int fd, fl;

	/* O_NONBLOCK: opening a FIFO or device must not hang; cleared below. */
	fd = open(path,
	          O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
	              flags,
	          0600);
	if (fd == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s%s", path, strerror(errno),
		          errno == ELOOP ? " (a symbolic link is not accepted)" : "");
		return -1;
	}
	if (fstat(fd, st) == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		audit_err(errbuf, errlen, "cannot open %s: not a regular file", path);
		goto fail;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		audit_err(errbuf, errlen, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	logfile_warn_mode(path, st);
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * Room is kept on a regular file from here on. Blocks a writer killed
 * earlier left allocated past the end are not given back here: another
 * process may be appending into them (logfile_room_release).
 */
void
logfile_room_init(struct audit *a, const struct stat *st)
{
	a->flags |= AUDIT_F_ROOM;
	a->size = st->st_size;
	a->reserved = st->st_size;
}

static int
logfile_fallocate(int fd, off_t off, off_t len)
{
	int rc;

	do
		rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len);
	while (rc == -1 && errno == EINTR);
	return rc;
}

/*
 * Have blocks allocated up to need, and AUDIT_ROOM_STEP more when there is
 * room for them. 0, or -1 with errno when the file system has no room
 * (ENOSPC, EDQUOT, EFBIG: a file size limit) or fails. A file system that
 * cannot reserve (EOPNOTSUPP) turns reserving off: its lines are then
 * known lost only when their write fails.
 */
int
logfile_reserve(struct audit *a, off_t need)
{
	if (!(a->flags & AUDIT_F_ROOM) || need <= a->reserved)
		return 0;
	if (logfile_fallocate(a->fd, a->size, need - a->size + AUDIT_ROOM_STEP) == 0) {
		a->reserved = need + AUDIT_ROOM_STEP;
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		a->flags &= ~AUDIT_F_ROOM;
		if (!(a->flags & AUDIT_F_NOROOM))
			log_warnx("audit: the file system of %s cannot reserve room "
			          "(fallocate: %s): a full disk is noticed only when a write "
			          "fails",
			          a->path != NULL ? a->path : "the log", strerror(errno));
		a->flags |= AUDIT_F_NOROOM;
		return 0;
	}
	/* Near full: the exact room, without the step. */
	if (logfile_fallocate(a->fd, a->size, need - a->size) == 0) {
		a->reserved = need;
		return 0;
	}
	return -1;
}

/*
 * Give back the blocks reserved past the end of a file this writer has
 * just moved away (rotated, or reopened after a tool moved it): truncating
 * a file to its own size frees what lies past it (ext4, xfs, tmpfs;
 * punching a hole there does nothing on ext4). A file still at the log's
 * path keeps them at close: another process appending to it (which the
 * chain does not support, but its lines must survive) could be cut by the
 * truncation, and the next writer of the file grows into them.
 */
void
logfile_room_release(struct audit *a)
{
	struct stat st;

	if (!(a->flags & AUDIT_F_ROOM) || a->reserved <= a->size)
		return;
	if (fstat(a->fd, &st) == 0)
		(void)ftruncate(a->fd, st.st_size);
	a->reserved = a->size;
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
logfile_cache_release(struct audit *a)
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

/* n more bytes were written to a regular file. */
void
logfile_cache_note(struct audit *a, size_t n)
{
	if ((a->cache_written += n) >= AUDIT_CACHE_WINDOW)
		logfile_cache_release(a);
}

/* FILE.n, the name of the nth rotated file of path. */
static char *
logfile_name(const char *path, unsigned n)
{
	char *s;

	if (asprintf(&s, "%s.%u", path, n) == -1)
		fatalx("out of memory");
	return s;
}

/* The writer's file is now fd (st): a new file, its room and cache from zero. */
static void
logfile_switch(struct audit *a, int fd, const struct stat *st)
{
	logfile_room_release(a);
	if (close(a->fd) == -1)
		log_warn("audit: close");
	a->fd = fd;
	a->flags &= ~AUDIT_F_TORN;
	a->cache_written = 0;
	a->cache_synced = 0;
	logfile_room_init(a, st);
}

/* The first line of a file that continues the chain of the one before. */
static void
logfile_mark(struct audit *a, const char *reason)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "daemon";
	ev.reason = reason;
	(void)audit_write(a, &ev);
}

/*
 * Move FILE to FILE.1 (FILE.1 to FILE.2, ..., dropping what is past
 * audit.keep) and go on in a new FILE, whose first line continues the
 * chain. The new file is made first, under a name of its own, so that a
 * directory that refuses it leaves everything as it was; the rotation is
 * then tried again from audit_tick. 0, or -1 after saying why once.
 */
int
logfile_rotate(struct audit *a)
{
	struct stat st;
	char err[512], *tmp, *from, *to;
	unsigned i;
	int fd;

	if (a->path == NULL || a->set.max_bytes == 0 || (uint64_t)a->size < a->set.max_bytes)
		return 0;
	if (asprintf(&tmp, "%s.new", a->path) == -1)
		fatalx("out of memory");
	if ((fd = logfile_open(tmp, O_EXCL, &st, err, sizeof err)) == -1 && errno == EEXIST &&
	    unlink(tmp) == 0)
		fd = logfile_open(tmp, O_EXCL, &st, err, sizeof err);
	if (fd == -1)
		goto fail;
	if (fdatasync(a->fd) == -1 && errno != EINVAL)
		log_warn("audit: fdatasync before rotating %s", a->path);
	for (i = a->set.keep; i > 0; i--) {
		from = i > 1 ? logfile_name(a->path, i - 1) : xstrdup(a->path);
		to = logfile_name(a->path, i);
		if (rename(from, to) == -1 && errno != ENOENT) {
			snprintf(err, sizeof err, "cannot rename %s to %s: %s", from, to,
			         strerror(errno));
			free(from);
			free(to);
			goto fail_tmp;
		}
		free(from);
		free(to);
	}
	if (rename(tmp, a->path) == -1) {
		snprintf(err, sizeof err, "cannot rename %s to %s: %s", tmp, a->path,
		         strerror(errno));
		goto fail_tmp;
	}
	free(tmp);
	logfile_switch(a, fd, &st);
	a->rotations++;
	if (a->rotate_failed)
		log_info("audit: %s rotated", a->path);
	a->rotate_failed = 0;
	logfile_mark(a, "rotated");
	return 0;
fail_tmp:
	close(fd);
	(void)unlink(tmp);
fail:
	free(tmp);
	if (!a->rotate_failed)
		log_warnx("audit: cannot rotate %s (%s); it grows past audit.maxBytes until it "
		          "can",
		          a->path, err);
	a->rotate_failed = 1;
	return -1;
}

/*
 * SIGUSR1: open the log's path again, for tools that move the file away
 * and make a new one (logrotate's create mode). A new or empty file
 * continues this writer's chain; a file with lines continues its own last
 * line's; the same file as before is left as it is. 0, or -1 when the path
 * cannot be opened (the log stays where it was).
 */
int
logfile_reopen(struct audit *a)
{
	struct stat st, cur;
	char err[512];
	int fd;

	if (a->path == NULL) {
		log_info("audit: SIGUSR1: the log is a descriptor, not a file: nothing to reopen");
		return 0;
	}
	(void)audit_flush(a);
	if ((fd = logfile_open(a->path, 0, &st, err, sizeof err)) == -1) {
		log_warnx("audit: reopen: %s; writing on to the file open before", err);
		return -1;
	}
	if (fstat(a->fd, &cur) == 0 && cur.st_dev == st.st_dev && cur.st_ino == st.st_ino) {
		close(fd);
		log_info("audit: reopen: %s is the file open already", a->path);
		return 0;
	}
	logfile_switch(a, fd, &st);
	if (st.st_size > 0 && logfile_resume(a, fd, a->path, err, sizeof err) == -1) {
		log_warnx("audit: reopen: %s; the chain goes on from this writer's last line", err);
		memcpy(a->prev, a->prev_file, sizeof a->prev);
	}
	log_info("audit: reopened %s", a->path);
	logfile_mark(a, "reopened");
	return 0;
}

/*
 * The files of the log at path, oldest first: every FILE.n there is, from
 * the highest n down to FILE.1, then FILE itself, listed whether it exists
 * or not. A missing number in between is left out, so that a reader
 * checking the chain finds the break where the file was. Free with
 * logfile_set_free.
 */
char **
logfile_set(const char *path, size_t *n)
{
	struct stat st;
	char **v, *name;
	unsigned k, i, top = 0, have = 0;
	unsigned char *there;

	there = xcalloc(AUDIT_KEEP_MAX + 1, 1);
	for (k = 1; k <= AUDIT_KEEP_MAX; k++) {
		name = logfile_name(path, k);
		if (stat(name, &st) == 0 && S_ISREG(st.st_mode)) {
			there[k] = 1;
			top = k;
			have++;
		}
		free(name);
	}
	v = xcalloc(have + 1, sizeof *v);
	for (k = top, i = 0; k > 0; k--)
		if (there[k])
			v[i++] = logfile_name(path, k);
	v[i] = xstrdup(path);
	*n = have + 1;
	free(there);
	return v;
}

void
logfile_set_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
