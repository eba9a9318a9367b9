/*
 * A growable vector of strings it owns, kept NULL-terminated so that it is
 * an argv as it stands: every command the host runs is built in one.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

void
strv_add_owned(struct strv *s, char *p)
{
	if (s->n + 2 > s->cap) {
		s->cap = s->cap == 0 ? 16 : s->cap * 2;
		s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
	}
	s->v[s->n++] = p;
	s->v[s->n] = NULL;
}

void
strv_add(struct strv *s, const char *p)
{
	strv_add_owned(s, xstrdup(p));
}

void
strv_addf(struct strv *s, const char *fmt, ...)
{
	struct buf b;
	va_list ap;

	buf_init(&b);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	buf_add(&b, "", 0);
	strv_add_owned(s, buf_release(&b));
}

int
strv_has(const struct strv *s, const char *p)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i], p) == 0)
			return 1;
	return 0;
}

void
strv_free(struct strv *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof *s);
}
