/*
 * A growable byte buffer, always NUL-terminated so it can be handed to
 * string functions once built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap > 0)
		b->data[0] = '\0';
}

/* The slow side of buf_reserve: make room for n more bytes and the NUL. */
void
buf_grow(struct buf *b, size_t n)
{
	size_t want, cap;

	if (n > SIZE_MAX - b->len - 1)
		fatalx("buf_reserve: size overflow");
	want = b->len + n + 1;
	if (want <= b->cap)
		return;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	b->data = xreallocarray(b->data, 1, cap);
	b->cap = cap;
	b->data[b->len] = '\0';
}

void
buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	size_t room;
	int n;

	/* Format straight into the free space; only a miss formats twice. */
	buf_reserve(b, 64);
	room = b->cap - b->len;
	va_copy(ap2, ap);
	n = vsnprintf(b->data + b->len, room, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		fatalx("buf_vprintf: bad format");
	if ((size_t)n >= room) {
		buf_reserve(b, (size_t)n);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	}
	b->len += (size_t)n;
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

const char *
buf_cstr(struct buf *b)
{
	buf_reserve(b, 0);
	return b->data;
}

/* Hand the storage to the caller (never NULL) and leave the buffer empty. */
char *
buf_release(struct buf *b)
{
	char *p;

	buf_reserve(b, 0);
	p = b->data;
	buf_init(b);
	return p;
}
