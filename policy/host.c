/*
 * Host normalisation: turns a host as a client or a user wrote it into the
 * one form the policy matches on. Names become lowercase ASCII (IDNA via
 * libidn2), and anything a browser or curl would read as an IP address
 * (including "2130706433", "0x7f.1" and "[::1]") becomes an address, so it
 * can never be matched as a domain name. Every conversion is followed by a
 * validation of its result: a conversion must never turn an invalid name
 * into a valid one. A label that is already an A-label ("xn--...") must be
 * one IDNA could have made, as UTS #46 and the WHATWG URL parser require.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <idn2.h>

#include "policy_int.h"

/* Longer input cannot become a name of 253 bytes, even fully non-ASCII. */
#define HOST_INPUT_MAX 1024

/* A name while it is built: room for 253 bytes, a trailing dot and a NUL. */
struct host_out {
	char s[HOST_NAME_MAXLEN + 2];
	size_t len;
	int overflow;
};

static int
host_char_valid(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int
host_is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

/*
 * The label at p (up to the next '.' within left bytes) starts with
 * "xn--": it must decode as punycode to a valid U-label that converts back
 * to the very same A-label (UTS #46 §4 step 4, as the WHATWG URL parser
 * applies it). "xn--a" decodes to a control character; a U-label that is
 * not what its own conversion gives (mapped, not NFC, disallowed) is one
 * that another parser may read as a different name or refuse. A label too
 * long is left to the caller's length check.
 */
static const char *
host_alabel_check(const char *p, size_t left)
{
	char buf[HOST_LABEL_MAXLEN + 1], *u = NULL, *a = NULL;
	const char *dot = memchr(p, '.', left);
	size_t len = dot != NULL ? (size_t)(dot - p) : left;
	int ok;

	if (len > HOST_LABEL_MAXLEN)
		return NULL;
	memcpy(buf, p, len);
	buf[len] = '\0';
	ok = idn2_to_unicode_8z8z(buf, &u, 0) == IDN2_OK && u != NULL &&
	     idn2_to_ascii_8z(u, &a, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT) == IDN2_OK &&
	     a != NULL && strcmp(a, buf) == 0;
	free(u);
	free(a);
	return ok ? NULL
	          : "invalid A-label: an \"xn--\" label must be the punycode of a valid "
	            "international name";
}

const char *
host_name_check(const char *name, size_t len)
{
	const char *error;
	size_t i, label = 0;

	if (len == 0)
		return "empty host";
	if (len > HOST_NAME_MAXLEN)
		return "host too long";
	for (i = 0; i < len; i++) {
		if (name[i] == '.') {
			if (label == 0)
				return "empty label";
			label = 0;
			continue;
		}
		if (!host_char_valid((unsigned char)name[i]))
			return "invalid character in host";
		if (label == 0 && len - i >= 4 && memcmp(name + i, "xn--", 4) == 0 &&
		    (error = host_alabel_check(name + i, len - i)) != NULL)
			return error;
		if (++label > HOST_LABEL_MAXLEN)
			return "label too long";
	}
	if (label == 0)
		return "empty label";
	return NULL;
}

static void
host_out_add(struct host_out *o, const char *s, size_t len)
{
	if (o->overflow || len > sizeof o->s - 1 - o->len) {
		o->overflow = 1;
		return;
	}
	memcpy(o->s + o->len, s, len);
	o->len += len;
	o->s[o->len] = '\0';
}

/*
 * The length of a label separator at p: '.' or one of the full stops that
 * UTS#46 maps to '.' (ideographic U+3002, fullwidth U+FF0E, halfwidth
 * ideographic U+FF61). Splitting on them here lets each label be converted
 * on its own.
 */
static size_t
host_dot_len(const unsigned char *p, size_t left)
{
	if (p[0] == '.')
		return 1;
	if (left < 3)
		return 0;
	if ((p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x82) ||
	    (p[0] == 0xef && p[1] == 0xbc && p[2] == 0x8e) ||
	    (p[0] == 0xef && p[1] == 0xbd && p[2] == 0xa1))
		return 3;
	return 0;
}

/*
 * One label to ASCII. ASCII labels are only lowercased (all UTS#46 does to
 * them), so "Ab--c" and "ab--c" stay the same name whatever the other labels
 * hold. Other labels go through libidn2 without the STD3 rules: with them,
 * libidn2 silently drops characters such as ' ' and '_', while without them
 * it keeps what it cannot map and the final check rejects it.
 */
static const char *
host_label_to_ascii(const char *p, size_t len, struct host_out *o)
{
	char buf[HOST_INPUT_MAX + 1], *ascii = NULL;
	int nonascii = 0, rc;
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 0x80)
			nonascii = 1;
		else if (!host_char_valid(c) && !host_is_upper(c))
			return "invalid character in host";
		buf[i] = host_is_upper(c) ? (char)(c - 'A' + 'a') : (char)c;
	}
	buf[len] = '\0';
	if (!nonascii) {
		host_out_add(o, buf, len);
		return NULL;
	}
	rc = idn2_to_ascii_8z(buf, &ascii, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
	if (rc != IDN2_OK || ascii == NULL) {
		free(ascii);
		return "invalid international domain name";
	}
	host_out_add(o, ascii, strlen(ascii));
	free(ascii);
	return NULL;
}

static const char *
host_to_ascii(const char *in, size_t len, struct host_out *o)
{
	const unsigned char *u = (const unsigned char *)in;
	const char *error;
	size_t start = 0, i = 0, dot;

	while (i <= len) {
		dot = i < len ? host_dot_len(u + i, len - i) : 0;
		if (i < len && dot == 0) {
			i++;
			continue;
		}
		if ((error = host_label_to_ascii(in + start, i - start, o)) != NULL)
			return error;
		if (i == len)
			break;
		host_out_add(o, ".", 1);
		i += dot;
		start = i;
	}
	if (o->overflow)
		return "host too long";
	return NULL;
}

/* One part of a WHATWG IPv4 address: decimal, octal (0...) or hex (0x...). */
static int
host_v4_number(const char *p, size_t len, uint64_t *out)
{
	unsigned base = 10, d;
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return -1;
	if (len >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		len -= 2;
	} else if (len >= 2 && p[0] == '0') {
		base = 8;
		p++;
		len--;
	}
	for (i = 0; i < len; i++) {
		if (p[i] >= '0' && p[i] <= '9')
			d = (unsigned)(p[i] - '0');
		else if (p[i] >= 'a' && p[i] <= 'f')
			d = (unsigned)(p[i] - 'a' + 10);
		else if (p[i] >= 'A' && p[i] <= 'F')
			d = (unsigned)(p[i] - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		v = v * base + d;
		if (v > 0xffffffffULL)
			v = 0x100000000ULL; /* saturate: too large either way */
	}
	*out = v;
	return 0;
}

/* Whether the last label is a number: then the name is an IPv4 address. */
static int
host_ends_in_number(const char *s, size_t len)
{
	const char *last = s + len;
	size_t n, i;

	while (last > s && last[-1] != '.')
		last--;
	n = (size_t)(s + len - last);
	if (n == 0)
		return 0;
	if (n >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
		for (i = 2; i < n; i++) {
			if (strchr("0123456789abcdefABCDEF", last[i]) == NULL)
				return 0;
		}
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (last[i] < '0' || last[i] > '9')
			return 0;
	}
	return 1;
}

/*
 * The WHATWG URL standard's IPv4 parser: 1 to 4 parts, the last one filling
 * the remaining bytes. This is how browsers and curl read such hosts.
 */
static const char *
host_parse_v4(const char *s, size_t len, struct addr *out)
{
	uint64_t parts[4], v;
	size_t n = 0, i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (n == 4 || host_v4_number(s + start, i - start, &parts[n]) == -1)
			return "invalid IPv4 address";
		n++;
		start = i + 1;
	}
	for (i = 0; i + 1 < n; i++) {
		if (parts[i] > 255)
			return "invalid IPv4 address";
	}
	if (parts[n - 1] >= (1ULL << (8 * (5 - n))))
		return "invalid IPv4 address";
	v = parts[n - 1];
	for (i = 0; i + 1 < n; i++)
		v += parts[i] << (8 * (3 - i));
	memset(out, 0, sizeof *out);
	out->af = AF_INET;
	out->a[0] = (uint8_t)(v >> 24);
	out->a[1] = (uint8_t)(v >> 16);
	out->a[2] = (uint8_t)(v >> 8);
	out->a[3] = (uint8_t)v;
	return NULL;
}

static const char *
host_parse_v6(const char *s, size_t len, struct host *out)
{
	char text[INET6_ADDRSTRLEN];

	/* No zone ids: "%eth0" names an interface of this machine. */
	if (len == 0 || len >= sizeof text || memchr(s, '%', len) != NULL)
		return "invalid IPv6 address";
	memcpy(text, s, len);
	text[len] = '\0';
	if (inet_pton(AF_INET6, text, out->addr.a) != 1)
		return "invalid IPv6 address";
	out->addr.af = AF_INET6;
	out->kind = HOST_ADDR;
	addr_format(&out->addr, out->name, sizeof out->name);
	return NULL;
}

static const char *
host_parse_ascii(const char *in, size_t len, struct host *out)
{
	struct host_out o;
	const char *error;

	memset(&o, 0, sizeof o);
	if ((error = host_to_ascii(in, len, &o)) != NULL)
		return error;
	if (o.len > 0 && o.s[o.len - 1] == '.')
		o.s[--o.len] = '\0';
	if (o.len == 0)
		return "empty host";
	if (host_ends_in_number(o.s, o.len)) {
		if ((error = host_parse_v4(o.s, o.len, &out->addr)) != NULL)
			return error;
		out->kind = HOST_ADDR;
		addr_format(&out->addr, out->name, sizeof out->name);
		return NULL;
	}
	if ((error = host_name_check(o.s, o.len)) != NULL)
		return error;
	out->kind = HOST_NAME;
	memcpy(out->name, o.s, o.len + 1);
	return NULL;
}

const char *
host_parse(const char *in, size_t len, struct host *out)
{
	const char *error;
	size_t i;

	memset(out, 0, sizeof *out);
	if (len == 0)
		return "empty host";
	if (len > HOST_INPUT_MAX)
		return "host too long";
	for (i = 0; i < len; i++) {
		if ((unsigned char)in[i] < 0x20 || in[i] == 0x7f)
			return "invalid character in host";
	}
	if (in[0] == '[') {
		if (len < 2 || in[len - 1] != ']')
			error = "invalid IPv6 address";
		else
			error = host_parse_v6(in + 1, len - 2, out);
	} else if (memchr(in, ':', len) != NULL)
		error = host_parse_v6(in, len, out);
	else
		error = host_parse_ascii(in, len, out);
	if (error != NULL)
		memset(out, 0, sizeof *out);
	return error;
}
