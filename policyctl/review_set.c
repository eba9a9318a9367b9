/*
 * A rotated audit log read as one: the files FILE.n ... FILE.1, FILE
 * (audit/logfile.c names them; egressd's audit.maxBytes and logrotate
 * make them), oldest first, through one stdio stream, so that the summary,
 * the suggestions and the HTML page see one log. A file that does not end
 * with a newline gets one, so its last line stays a line of its own. The
 * chain check reads the files itself, to name them (review_verify_set).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

struct review_set {
	char **names;
	size_t n;
	size_t i;
	FILE *cur;
	FILE *err;
	int last;   /* the last byte handed out; -1 before any */
	int failed; /* a file could not be read */
};

static ssize_t
review_set_read(void *cookie, char *buf, size_t size)
{
	struct review_set *s = cookie;
	size_t got;

	while (s->i < s->n) {
		if (s->cur == NULL && (s->cur = fopen(s->names[s->i], "r")) == NULL) {
			fprintf(s->err, "policyctl: %s: %s\n", s->names[s->i], strerror(errno));
			errno = EIO;
			return -1;
		}
		if ((got = fread(buf, 1, size, s->cur)) > 0) {
			s->last = (unsigned char)buf[got - 1];
			return (ssize_t)got;
		}
		if (ferror(s->cur)) {
			fprintf(s->err, "policyctl: %s: %s\n", s->names[s->i], strerror(errno));
			errno = EIO;
			return -1;
		}
		fclose(s->cur);
		s->cur = NULL;
		s->i++;
		if (s->i < s->n && s->last != -1 && s->last != '\n' && size > 0) {
			s->last = '\n';
			buf[0] = '\n';
			return 1;
		}
	}
	return 0;
}

static int
review_set_close(void *cookie)
{
	struct review_set *s = cookie;

	if (s->cur != NULL)
		fclose(s->cur);
	logfile_set_free(s->names, s->n);
	free(s);
	return 0;
}

/*
 * The log at path as one stream: the rotated files before it first, when
 * there are any (said on err). NULL with errno when path cannot be read.
 */
FILE *
review_set_open(const char *path, FILE *err)
{
	static const cookie_io_functions_t io = {
	    .read = review_set_read,
	    .close = review_set_close,
	};
	struct review_set *s;
	FILE *f;

	s = xcalloc(1, sizeof *s);
	s->names = logfile_set(path, &s->n);
	s->err = err;
	s->last = -1;
	if (s->n == 1) {
		f = fopen(path, "r");
		review_set_close(s);
		return f;
	}
	/* The newest file must be there, as a lone file must. */
	if ((s->cur = fopen(s->names[s->n - 1], "r")) == NULL) {
		review_set_close(s);
		return NULL;
	}
	fclose(s->cur);
	s->cur = NULL;
	fprintf(err, "policyctl: %s: reading its %zu rotated file%s first (%s ... %s)\n", path,
	        s->n - 1, s->n == 2 ? "" : "s", s->names[0], s->names[s->n - 2]);
	if ((f = fopencookie(s, "r", io)) == NULL)
		review_set_close(s);
	return f;
}
