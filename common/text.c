/*
 * Reading text byte by byte: well-formed UTF-8 sequences, hexadecimal
 * digits, and the token characters of HTTP (RFC 9110), which the HTTP
 * codec, the JSON writer, the config schema and policyctl all check the
 * same way. Tables, not branches: these run on every byte of a request
 * head.
 */
#include "common.h"

/*
 * Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs,
 * surrogates or code points past U+10FFFF), or 0 if it is not one.
 */
size_t
text_utf8_len(const unsigned char *p, size_t left)
{
	unsigned char c = p[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else
		return 0;
	if (left < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The value of a hexadecimal digit, or -1. */
int
text_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* RFC 9110 tchars, the characters of methods and header names, by table. */
#define TC(c)                                                                                      \
	(((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || \
	 (c) == '!' || (c) == '#' || (c) == '$' || (c) == '%' || (c) == '&' || (c) == '\'' ||      \
	 (c) == '*' || (c) == '+' || (c) == '-' || (c) == '.' || (c) == '^' || (c) == '_' ||       \
	 (c) == '`' || (c) == '|' || (c) == '~')
#define TC4(c)  TC(c), TC((c) + 1), TC((c) + 2), TC((c) + 3)
#define TC16(c) TC4(c), TC4((c) + 4), TC4((c) + 8), TC4((c) + 12)
#define TC64(c) TC16(c), TC16((c) + 16), TC16((c) + 32), TC16((c) + 48)
static const unsigned char text_tchars[256] = {TC64(0), TC64(64), TC64(128), TC64(192)};

int
text_http_tchar(int c)
{
	return c >= 0 && c < 256 && text_tchars[c];
}

/* Whether s[0..len) is a non-empty RFC 9110 token. */
int
text_http_token(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!text_http_tchar((unsigned char)s[i]))
			return 0;
	return len > 0;
}
