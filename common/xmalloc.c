/*
 * Allocation wrappers. Running out of memory is not a condition any
 * caller can recover from sensibly, so these abort with a message instead
 * of returning NULL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void *
xmalloc(size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatal("malloc %zu", size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatal("calloc %zu*%zu", n, size);
	return p;
}

void *
xreallocarray(void *old, size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (n > SIZE_MAX / size)
		fatalx("xreallocarray: %zu*%zu overflows", n, size);
	if ((p = realloc(old, n * size)) == NULL)
		fatal("realloc %zu", n * size);
	return p;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t len)
{
	char *p;

	p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatal("vasprintf");
	return p;
}
