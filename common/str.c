/*
 * Writing numbers, addresses and bytes as text into a caller's buffer:
 * the helpers hot paths use instead of snprintf, which parses its format
 * on every call. Each returns the length it wrote and leaves dst
 * NUL-terminated. The one table of hex digits lives here.
 */
#include <string.h>

#include "common.h"

static const char str_hex_digits[] = "0123456789abcdef";

/*
 * Copy src into dst of size bytes, always NUL-terminated, cut if it must
 * be; returns the length copied.
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

/* Write n bytes as 2n lowercase hex digits to buf (room for 2n + 1). */
size_t
str_hex(char *buf, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		buf[2 * i] = str_hex_digits[b[i] >> 4];
		buf[2 * i + 1] = str_hex_digits[b[i] & 0xf];
	}
	buf[2 * n] = '\0';
	return 2 * n;
}
