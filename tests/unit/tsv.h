/*
 * For the table-driven unit tests: one reader of their tests/data tables
 * (a case a line, fields separated by one tab, "#" lines and blank lines
 * skipped), and the escapes their columns use for bytes a TSV line cannot
 * hold (\\ \t \n \r \xHH). A test reads its table as
 *
 *	struct tsv t;
 *	char **f;
 *
 *	tsv_open(&t, "url.tsv", 3, 7);
 *	while ((f = tsv_next(&t)) != NULL)
 *		check f[0] .. f[t.nf - 1], naming t.lineno when a case fails;
 *	assert_true(t.rows >= 50);
 *
 * so its loop body stays where its checks are.
 */
#ifndef TSV_H
#define TSV_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"

#define TSV_FIELDS_MAX 16

struct tsv {
	FILE *fp;       /* NULL once the table is read */
	char name[256]; /* below tests/data, for messages */
	char *line;     /* the current row, split in place */
	size_t cap;
	int min, max; /* fields a row must have */
	char *f[TSV_FIELDS_MAX];
	int nf;          /* fields of the current row */
	unsigned lineno; /* of the current row, from 1 */
	unsigned rows;   /* rows returned so far */
};

/*
 * Opens tests/data/NAME, whose rows have min to max fields; a table that
 * cannot be opened fails the test.
 */
static inline void
tsv_open(struct tsv *t, const char *name, int min, int max)
{
	char path[1024];

	memset(t, 0, sizeof *t);
	if (min < 1 || max < min || max > TSV_FIELDS_MAX)
		fail_msg("tsv_open %s: bad field counts %d..%d", name, min, max);
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(path, sizeof path, "%s/%s", TEST_DATA_DIR, name);
	if ((t->fp = fopen(path, "r")) == NULL)
		fail_msg("cannot open %s", path);
	t->min = min;
	t->max = max;
}

/*
 * The next row's fields (t->nf of them; empty fields kept), valid until
 * the next call; NULL at the end of the table, when the file is closed.
 * A row with too few or too many fields fails the test with NAME:LINE.
 */
static inline char **
tsv_next(struct tsv *t)
{
	ssize_t len;
	char *p;

	while (t->fp != NULL) {
		if ((len = getline(&t->line, &t->cap, t->fp)) == -1) {
			fclose(t->fp);
			t->fp = NULL;
			free(t->line);
			t->line = NULL;
			break;
		}
		t->lineno++;
		if (len > 0 && t->line[len - 1] == '\n')
			t->line[--len] = '\0';
		if (len > 0 && t->line[len - 1] == '\r')
			t->line[--len] = '\0';
		if (t->line[0] == '#' || t->line[0] == '\0')
			continue;
		for (t->nf = 0, p = t->line; p != NULL && t->nf < t->max; t->nf++)
			t->f[t->nf] = strsep(&p, "\t");
		if (p != NULL || t->nf < t->min)
			fail_msg("%s:%u: %s fields, want %d..%d", t->name, t->lineno,
			         p != NULL ? "too many" : "too few", t->min, t->max);
		t->rows++;
		return t->f;
	}
	return NULL;
}

/* Decode the escapes of s in place; returns the decoded length. */
static inline size_t
tsv_unescape(char *s)
{
	char *r = s, *w = s;

	while (*r != '\0') {
		if (r[0] != '\\' || r[1] == '\0') {
			*w++ = *r++;
			continue;
		}
		switch (r[1]) {
		case 't':
			*w++ = '\t';
			break;
		case 'n':
			*w++ = '\n';
			break;
		case 'r':
			*w++ = '\r';
			break;
		case 'x':
			if (text_hex_value(r[2]) == -1 || text_hex_value(r[3]) == -1)
				fatalx("tsv: bad \\x escape in \"%s\"", s);
			*w++ = (char)(text_hex_value(r[2]) << 4 | text_hex_value(r[3]));
			r += 2;
			break;
		default:
			*w++ = r[1];
			break;
		}
		r += 2;
	}
	*w = '\0';
	return (size_t)(w - s);
}

#endif
