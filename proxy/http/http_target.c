/*
 * Request targets (RFC 9112 §3.2): origin, absolute, authority and
 * asterisk form, split into scheme, authority, host, port and path, and
 * the authority check that Host fields share. The parts of one target
 * live in one allocation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/*
 * Check an authority: host [":" port], no userinfo. A host is a name of
 * letters, digits, '-', '.' and '_' or a bracketed IPv6 address; the other
 * reg-name characters of RFC 3986 (percent escapes, sub-delims) name no
 * real host and only leave room for two readers to disagree.
 */
const char *
http_target_authority(const char *s, size_t len, int port_required, size_t *hostlen, uint16_t *port)
{
	const char *p, *end = s + len;
	unsigned long v = 0;
	unsigned char c;

	if (memchr(s, '@', len) != NULL)
		return "userinfo in authority";
	p = s;
	if (p < end && *p == '[') {
		for (p++; p < end && *p != ']'; p++) {
			c = (unsigned char)*p;
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			      (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
				return "invalid IPv6 address";
		}
		if (p == end || p == s + 1)
			return "invalid IPv6 address";
		p++;
	} else {
		for (; p < end && *p != ':'; p++) {
			c = (unsigned char)*p;
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			      (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '_'))
				return "invalid character in host";
		}
		if (p == s)
			return "empty host";
	}
	*hostlen = (size_t)(p - s);
	*port = 0;
	if (p == end)
		return port_required ? "port required" : NULL;
	if (*p++ != ':' || p == end || end - p > 5)
		return "invalid port";
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return "invalid port";
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return "invalid port";
	*port = (uint16_t)v;
	return NULL;
}

void
http_target_free(struct http_target *t)
{
	free(t->mem);
	memset(t, 0, sizeof *t);
}

/* Copy len bytes of s and a NUL to *at, advancing it; the copy. */
static char *
http_target_put(char **at, const char *s, size_t len)
{
	char *p = *at;

	memcpy(p, s, len);
	p[len] = '\0';
	*at = p + len + 1;
	return p;
}

/*
 * The authority and what follows it, after "scheme://" (slen bytes of
 * scheme). The scheme, authority, host and path go into one allocation.
 */
static const char *
http_target_absolute(const char *scheme, size_t slen, const char *s, struct http_target *out)
{
	const char *error, *rest;
	size_t hostlen, alen, plen;
	char *at;

	rest = s + strcspn(s, "/?");
	alen = (size_t)(rest - s);
	error = http_target_authority(s, alen, 0, &hostlen, &out->port);
	if (error != NULL)
		return error;
	plen = strlen(rest);
	out->mem = at = xmalloc(slen + 1 + alen + 1 + hostlen + 1 + plen + 2);
	out->scheme = http_target_put(&at, scheme, slen);
	out->authority = http_target_put(&at, s, alen);
	out->host = http_target_put(&at, s, hostlen);
	out->port_explicit = out->port != 0;
	if (out->port == 0)
		out->port = slen == 5 ? 443 : 80;
	out->path = at;
	if (*rest != '/')
		*at++ = '/';
	http_target_put(&at, rest, plen);
	return NULL;
}

/*
 * Classify a request target (RFC 9112 §3.2) against its method and split
 * it. The host is returned as written; normalising it is the caller's.
 */
const char *
http_target_parse(enum http_method method, const char *target, struct http_target *out)
{
	const char *error = NULL;
	size_t hostlen, n;
	char *at;

	memset(out, 0, sizeof *out);
	if (!http_visible(target))
		return "invalid character in target";
	if (strchr(target, '#') != NULL)
		return "fragment in target";
	if (method == HTTP_M_CONNECT) {
		out->form = HTTP_TARGET_AUTHORITY;
		n = strlen(target);
		error = http_target_authority(target, n, 1, &hostlen, &out->port);
		if (error != NULL)
			return error;
		out->mem = at = xmalloc(n + 1 + hostlen + 1);
		out->authority = http_target_put(&at, target, n);
		out->host = http_target_put(&at, target, hostlen);
		out->port_explicit = 1;
		return NULL;
	}
	if (strcmp(target, "*") == 0) {
		if (method != HTTP_M_OPTIONS)
			return "asterisk-form without OPTIONS";
		out->form = HTTP_TARGET_ASTERISK;
		return NULL;
	}
	if (target[0] == '/') {
		out->form = HTTP_TARGET_ORIGIN;
		out->path = out->mem = xstrdup(target);
		return NULL;
	}
	out->form = HTTP_TARGET_ABSOLUTE;
	n = strcspn(target, ":");
	if (!(n == 4 && strncasecmp(target, "http", 4) == 0) &&
	    !(n == 5 && strncasecmp(target, "https", 5) == 0))
		return "unsupported target";
	if (strncmp(target + n, "://", 3) != 0)
		error = "unsupported target";
	else
		error = http_target_absolute(n == 5 ? "https" : "http", n, target + n + 3, out);
	if (error != NULL)
		http_target_free(out);
	return error;
}
