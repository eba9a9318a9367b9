/*
 * URLs as browsers and curl read them, after the WHATWG URL standard for
 * the special schemes http, https, ws and wss. What matters here is which
 * host a URL really reaches: "http://allowed.com@evil.com/" reaches
 * evil.com, "http://allowed.com\@evil.com/" reaches allowed.com, and a
 * host must be read exactly as the client will read it, so the policy never
 * judges one host while the client connects to another. A URL without a
 * scheme ("host", "host:port/path") is read as an authority and a path.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy_int.h"

struct url_scheme {
	const char *name;
	uint16_t port;
};

static const struct url_scheme url_schemes[] = {
    {"http", 80},
    {"https", 443},
    {"ws", 80},
    {"wss", 443},
};

static int
url_is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
url_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Characters that end the authority of a special URL. */
static int
url_ends_authority(char c)
{
	return c == '/' || c == '\\' || c == '?' || c == '#';
}

/*
 * The input as WHATWG reads it: leading and trailing C0 controls and spaces
 * stripped, and tab, CR and LF removed wherever they are.
 */
static char *
url_clean(const char *in, size_t *lenp)
{
	const unsigned char *start = (const unsigned char *)in, *end;
	char *s;
	size_t n = 0;

	while (*start != '\0' && *start <= 0x20)
		start++;
	end = start + strlen((const char *)start);
	while (end > start && end[-1] <= 0x20)
		end--;
	s = xmalloc((size_t)(end - start) + 1);
	for (; start < end; start++) {
		if (*start != '\t' && *start != '\r' && *start != '\n')
			s[n++] = (char)*start;
	}
	s[n] = '\0';
	*lenp = n;
	return s;
}

/*
 * Finds the scheme. A word followed by ':' is a scheme when it is one of
 * ours or when '/' or '\' follows the ':'; followed by digits that run to
 * the end of the authority it is a host and a port ("localhost:8080/").
 * Returns the offset where the authority starts, or -1 for a scheme we do
 * not handle.
 */
static long
url_scheme(const char *s, size_t len, struct url *out)
{
	size_t i = 0, j, k;

	if (len == 0 || !url_is_alpha(s[0]))
		return 0;
	while (i < len && (url_is_alpha(s[i]) || url_is_digit(s[i]) || s[i] == '+' || s[i] == '-' ||
	                   s[i] == '.'))
		i++;
	if (i == len || s[i] != ':')
		return 0;
	for (k = 0; k < EG_NELEM(url_schemes); k++) {
		if (strlen(url_schemes[k].name) == i && strncasecmp(s, url_schemes[k].name, i) == 0)
			break;
	}
	if (k < EG_NELEM(url_schemes)) {
		memcpy(out->scheme, url_schemes[k].name, i + 1);
		out->port = url_schemes[k].port;
		/* Any number of '/' and '\', even none, comes before the host. */
		for (j = i + 1; j < len && (s[j] == '/' || s[j] == '\\'); j++)
			;
		return (long)j;
	}
	if (i + 1 < len && (s[i + 1] == '/' || s[i + 1] == '\\'))
		return -1;
	for (j = i + 1; j < len && url_is_digit(s[j]); j++)
		;
	if (j > i + 1 && (j == len || url_ends_authority(s[j])))
		return 0;
	return -1;
}

static const char *
url_parse_port(const char *p, size_t len, struct url *out)
{
	unsigned long v = 0;
	size_t i;

	if (len == 0)
		return NULL; /* "host:" is the default port */
	for (i = 0; i < len; i++) {
		if (!url_is_digit(p[i]))
			return "invalid port";
		v = v * 10 + (unsigned long)(p[i] - '0');
		if (v > 65535)
			return "invalid port";
	}
	if (v == 0)
		return "invalid port";
	out->port = (uint16_t)v;
	out->port_explicit = 1;
	return NULL;
}

/*
 * The host is percent-decoded before it is parsed, as browsers do: so
 * "ex%61mple.com" is example.com and "%2e" is an (invalid) ".". A bracketed
 * IPv6 literal is taken as it is.
 */
static const char *
url_parse_host(const char *p, size_t len, struct host *host)
{
	const char *error;
	char *dec;
	size_t i, n = 0;
	int hi, lo;

	if (len > 0 && p[0] == '[')
		return host_parse(p, len, host);
	dec = xmalloc(len + 1);
	for (i = 0; i < len; i++) {
		if (p[i] == '%' && i + 2 < len &&
		    (hi = text_hex_value((unsigned char)p[i + 1])) != -1 &&
		    (lo = text_hex_value((unsigned char)p[i + 2])) != -1) {
			dec[n++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			dec[n++] = p[i];
	}
	error = host_parse(dec, n, host);
	free(dec);
	return error;
}

/* Splits the authority into userinfo (dropped), host and port. */
static const char *
url_parse_authority(const char *p, size_t len, struct url *out)
{
	const char *error, *at, *colon = NULL;
	size_t i, hlen;
	int bracket = 0;

	/* Userinfo runs to the last '@': the host is what follows it. */
	for (at = p + len; at > p && at[-1] != '@'; at--)
		;
	len -= (size_t)(at - p);
	p = at;

	/*
	 * The port follows the first ':' outside brackets. Any further ':'
	 * makes the port invalid, so an unbracketed IPv6 address ("::1") can
	 * never pass as an address and a port.
	 */
	for (i = 0; i < len; i++) {
		if (p[i] == '[')
			bracket = 1;
		else if (p[i] == ']')
			bracket = 0;
		else if (p[i] == ':' && !bracket) {
			colon = p + i;
			break;
		}
	}
	hlen = colon != NULL ? (size_t)(colon - p) : len;
	if ((error = url_parse_host(p, hlen, &out->host)) != NULL)
		return error;
	if (colon != NULL)
		return url_parse_port(colon + 1, len - hlen - 1, out);
	return NULL;
}

const char *
url_parse(const char *in, struct url *out)
{
	const char *error = NULL;
	char *s, *path;
	size_t len, i, auth, end, q;
	long start;

	memset(out, 0, sizeof *out);
	s = url_clean(in, &len);
	if (len == 0) {
		error = "empty URL";
		goto out;
	}
	if ((start = url_scheme(s, len, out)) == -1) {
		error = "unsupported scheme";
		goto out;
	}
	auth = (size_t)start;
	for (end = auth; end < len && !url_ends_authority(s[end]); end++)
		;
	if ((error = url_parse_authority(s + auth, end - auth, out)) != NULL)
		goto out;

	/* The path runs to '?' or '#'; a '\' in it is a '/', as in the authority. */
	for (q = end; q < len && s[q] != '?' && s[q] != '#'; q++)
		;
	if (q == end)
		out->path = xstrdup("/");
	else {
		path = xstrndup(s + end, q - end);
		for (i = 0; path[i] != '\0'; i++) {
			if (path[i] == '\\')
				path[i] = '/';
		}
		out->path = path;
	}
	if (q < len && s[q] == '?') {
		for (end = q + 1; end < len && s[end] != '#'; end++)
			;
		out->query = xstrndup(s + q + 1, end - q - 1);
	}

out:
	free(s);
	if (error != NULL) {
		url_free(out);
		memset(out, 0, sizeof *out);
	}
	return error;
}

void
url_free(struct url *u)
{
	free(u->path);
	free(u->query);
	u->path = NULL;
	u->query = NULL;
}
