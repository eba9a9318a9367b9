/*
 * For the table-driven unit tests: the escapes their tests/data TSV
 * columns use for bytes a TSV line cannot hold (\\ \t \n \r \xHH).
 */
#ifndef TSV_H
#define TSV_H

#include <stddef.h>

#include "common.h"

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
			if (hex_value(r[2]) == -1 || hex_value(r[3]) == -1)
				fatalx("tsv: bad \\x escape in \"%s\"", s);
			*w++ = (char)(hex_value(r[2]) << 4 | hex_value(r[3]));
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
