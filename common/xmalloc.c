/*
 * Allocation wrappers, and the two string helpers hot paths use instead
 * of snprintf. Running out of memory is not a condition any caller
 * can recover from sensibly, so these abort with a message instead of
 * returning NULL.
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

/*
 * Copy src into dst of size bytes, always NUL-terminated, cut if it must
 * be; returns the length copied. The hot paths use it instead of
 * snprintf("%s"), which costs a format parse per call.
 */
size_t
str_copy(char *dst, size_t size, const char *src)
{
	size_t n;

	if (size == 0)
		return 0;
	n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
	return n;
}

/* Write v in decimal to buf (room for 21 bytes) and return its length. */
size_t
str_u64(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

/*
 * Write the IPv4 address a (network order) as a.b.c.d to buf (room for 16
 * bytes) and return its length. glibc's inet_ntop formats IPv4 with
 * sprintf; audit lines and accepted connections format one each.
 */
size_t
str_ipv4(char *buf, const uint8_t a[4])
{
	size_t n = 0;
	int i;

	for (i = 0; i < 4; i++) {
		if (i > 0)
			buf[n++] = '.';
		n += str_u64(buf + n, a[i]);
	}
	return n;
}
