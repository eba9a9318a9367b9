/*
 * `policyctl audit --follow`: prints the events of an audit file as they
 * are appended, with tail -F semantics. The rotated files before it
 * (FILE.n ... FILE.1) are printed first, then the file is polled: what is
 * there is read, then new bytes every interval. When the path names another file
 * (moved away and recreated: rotation), the old file is read to its end and
 * the new one followed from its start; when the file shrinks (truncated),
 * it is read again from the start. A line is printed only once its newline
 * has arrived. It ends when *stop is set (SIGINT, SIGTERM), or at the end
 * of a pipe.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "review_int.h"

struct review_tail {
	const struct review_opts *o;
	FILE *out;
	const char *path;
	int fd;
	int regular;
	dev_t dev;
	ino_t ino;
	off_t off;     /* bytes read from fd */
	char last[64]; /* the bytes just before off, to notice a rewrite */
	size_t nlast;
	struct buf pending; /* the start of a line whose newline has not come */
	int skipping;       /* inside a line longer than REVIEW_LINE_MAX */
	unsigned long line; /* lines seen in this file */
	struct buf text;
};

static void
review_tail_line(struct review_tail *t, char *p, size_t len)
{
	struct review_event ev;
	const char *why;

	t->line++;
	if ((why = review_event_parse(&ev, p, len)) != NULL) {
		fprintf(t->o->err, "policyctl: %s:%lu: not an audit event (%s)\n", t->o->name,
		        t->line, why);
		review_event_clear(&ev);
		return;
	}
	ev.line = t->line;
	if (review_filter_match(&t->o->filter, &ev)) {
		buf_reset(&t->text);
		if (t->o->json) {
			review_summary_json_event(&t->text, &ev);
			buf_addc(&t->text, '\n');
		} else
			review_text_event(&t->text, &ev, t->o->color);
		fwrite(t->text.data, 1, t->text.len, t->out);
	}
	review_event_clear(&ev);
}

/* Split what was read into lines; keep an unfinished one for later. */
static void
review_tail_feed(struct review_tail *t, const char *p, size_t n)
{
	const char *nl;
	size_t len;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		len = nl != NULL ? (size_t)(nl - p) : n;
		if (!t->skipping) {
			if (t->pending.len + len > REVIEW_LINE_MAX) {
				fprintf(t->o->err,
				        "policyctl: %s:%lu: line longer than 1 MiB skipped\n",
				        t->o->name, t->line + 1);
				buf_reset(&t->pending);
				t->skipping = 1;
			} else
				buf_add(&t->pending, p, len);
		}
		if (nl == NULL)
			break;
		if (t->skipping)
			t->line++;
		else
			review_tail_line(t, t->pending.data, t->pending.len);
		buf_reset(&t->pending);
		t->skipping = 0;
		p = nl + 1;
		n -= len + 1;
	}
}

static int
review_tail_open(struct review_tail *t)
{
	struct stat st;

	if (strcmp(t->path, "-") == 0)
		t->fd = STDIN_FILENO;
	else if ((t->fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1)
		return -1;
	if (fstat(t->fd, &st) == -1) {
		if (t->fd != STDIN_FILENO)
			close(t->fd);
		return -1;
	}
	t->regular = S_ISREG(st.st_mode);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->off = 0;
	t->nlast = 0;
	t->line = 0;
	t->skipping = 0;
	buf_reset(&t->pending);
	return 0;
}

/* Read what there is; 1 at the end of a pipe, -1 on an error. */
static int
review_tail_read(struct review_tail *t, char *blk)
{
	ssize_t n;

	for (;;) {
		n = read(t->fd, blk, REVIEW_BLOCK);
		if (n > 0) {
			t->off += n;
			if ((size_t)n >= sizeof t->last) {
				memcpy(t->last, blk + n - sizeof t->last, sizeof t->last);
				t->nlast = sizeof t->last;
			} else {
				size_t keep = t->nlast + (size_t)n > sizeof t->last
				                  ? sizeof t->last - (size_t)n
				                  : t->nlast;

				memmove(t->last, t->last + t->nlast - keep, keep);
				memcpy(t->last + keep, blk, (size_t)n);
				t->nlast = keep + (size_t)n;
			}
			review_tail_feed(t, blk, (size_t)n);
			continue;
		}
		if (n == 0)
			return t->regular ? 0 : 1;
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		fprintf(t->o->err, "policyctl: %s: %s\n", t->o->name, strerror(errno));
		return -1;
	}
}

/*
 * Before reading on: a file now shorter than what was read, or whose
 * bytes before that point changed (truncated, then written past the old
 * size between two polls), is read again from its start.
 */
static int
review_tail_truncated(struct review_tail *t)
{
	char now[sizeof t->last];
	struct stat st;
	ssize_t n;

	if (fstat(t->fd, &st) == -1)
		return -1;
	if (st.st_size >= t->off) {
		if (t->nlast == 0)
			return 0;
		n = pread(t->fd, now, t->nlast, t->off - (off_t)t->nlast);
		if (n == (ssize_t)t->nlast && memcmp(now, t->last, t->nlast) == 0)
			return 0;
	}
	fprintf(t->o->err, "policyctl: %s: file truncated; reading it from the start\n",
	        t->o->name);
	if (lseek(t->fd, 0, SEEK_SET) == -1)
		return -1;
	t->off = 0;
	t->nlast = 0;
	t->line = 0;
	t->skipping = 0;
	buf_reset(&t->pending);
	return 0;
}

/* Print the lines of a rotated file whole, before the file followed. */
static void
review_tail_backlog(struct review_tail *t, const char *name, char *blk)
{
	const char *path = t->path;

	t->path = name;
	if (review_tail_open(t) == -1) {
		fprintf(t->o->err, "policyctl: %s: %s\n", name, strerror(errno));
		t->path = path;
		return;
	}
	(void)review_tail_read(t, blk);
	if (t->pending.len > 0)
		review_tail_line(t, t->pending.data, t->pending.len);
	close(t->fd);
	t->path = path;
}

/*
 * The file just finished was rotated more than once since the last poll
 * (it is FILE.k now, k > 1): the files rotated after it, FILE.k-1 down to
 * FILE.1, are printed before the new FILE is followed.
 */
static void
review_tail_between(struct review_tail *t, char *blk)
{
	dev_t dev = t->dev;
	ino_t ino = t->ino;
	struct stat st;
	char **names;
	size_t n, i, j;

	names = logfile_set(t->path, &n);
	for (j = 0; j + 1 < n; j++)
		if (stat(names[j], &st) == 0 && st.st_dev == dev && st.st_ino == ino)
			break;
	for (i = j + 1; j + 1 < n && i + 1 < n; i++)
		review_tail_backlog(t, names[i], blk);
	logfile_set_free(names, n);
}

/*
 * At the end of a regular file: when the path names another file now
 * (rotation), finish the old one and follow the new one. A path that is
 * missing for a while (moved, not yet recreated) keeps the old file
 * followed: its writer may still append to it.
 */
static int
review_tail_rotated(struct review_tail *t, char *blk)
{
	struct stat pst;

	if (stat(t->path, &pst) == -1 || (pst.st_dev == t->dev && pst.st_ino == t->ino))
		return 0;
	/* Lines appended to the old file since the last read still count. */
	if (review_tail_read(t, blk) == -1)
		return -1;
	if (t->pending.len > 0 || t->skipping)
		fprintf(t->o->err, "policyctl: %s:%lu: the rotated file ends inside a line\n",
		        t->o->name, t->line + 1);
	close(t->fd);
	review_tail_between(t, blk);
	if (review_tail_open(t) == -1) {
		/* Gone again between stat and open: wait for the next one. */
		t->fd = -1;
		return 0;
	}
	fprintf(t->o->err, "policyctl: %s: file rotated; following the new file\n", t->o->name);
	return 0;
}

/* Follow path ("-": stdin) until *stop; 0, or -1 when it cannot be read. */
int
review_follow(const char *path, FILE *out, const struct review_opts *o, volatile sig_atomic_t *stop)
{
	struct timespec ts;
	struct review_tail t;
	char *blk;
	int rc = 0, r;

	char **names = NULL;
	size_t n = 0, i;

	memset(&t, 0, sizeof t);
	t.o = o;
	t.out = out;
	t.path = path;
	buf_init(&t.pending);
	buf_init(&t.text);
	blk = xmalloc(REVIEW_BLOCK);
	if (strcmp(path, "-") != 0)
		names = logfile_set(path, &n);
	for (i = 0; i + 1 < n && !*stop; i++)
		review_tail_backlog(&t, names[i], blk);
	logfile_set_free(names, n);
	if (review_tail_open(&t) == -1) {
		fprintf(o->err, "policyctl: %s: %s\n", path, strerror(errno));
		free(blk);
		buf_free(&t.pending);
		buf_free(&t.text);
		return -1;
	}
	ts.tv_sec = o->interval_ms / 1000;
	ts.tv_nsec = (long)(o->interval_ms % 1000) * 1000000L;
	while (!*stop) {
		if (t.fd == -1 && review_tail_open(&t) == -1) {
			t.fd = -1;
			nanosleep(&ts, NULL);
			continue;
		}
		if (t.regular && review_tail_truncated(&t) == -1) {
			rc = -1;
			break;
		}
		if ((r = review_tail_read(&t, blk)) != 0) {
			rc = r == 1 ? 0 : -1;
			break;
		}
		if (fflush(out) != 0) {
			rc = -1;
			break;
		}
		if (t.regular && review_tail_rotated(&t, blk) == -1) {
			rc = -1;
			break;
		}
		/* A pipe read blocks; a FIFO opened by name does not (EAGAIN). */
		if (!*stop)
			nanosleep(&ts, NULL);
	}
	if (t.fd > STDERR_FILENO)
		close(t.fd);
	fflush(out);
	free(blk);
	buf_free(&t.pending);
	buf_free(&t.text);
	return rc;
}
