/*
 * HTTP/1.1 message heads (RFC 9112), read strictly and written back out in
 * a normal form. egressd never forwards a head as it arrived: it parses it,
 * refuses anything two implementations could read differently (the roots
 * of request smuggling: conflicting or malformed framing, bare CR or LF,
 * obs-fold, NUL), and serialises a fresh head from the parsed form with
 * framing headers of its own (http_serialize.c). Works on contiguous
 * bytes; the caller frames bodies (chunked.c decodes chunked ones);
 * request targets are split by http_target.c.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"

const struct http_limits http_limits_default = {
    .start_line = 8192,
    .header_line = 8192,
    .head = 65536,
    .headers = 100,
    .chunk_line = 4096,
    .chunk_ext_total = 65536,
};

/* The names of enum http_field, as a head usually spells them. */
#define HF_NAME(s)                                                                                 \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}
static const struct {
	const char *name;
	size_t len;
} http_field_names[HF_COUNT] = {
    [HF_OTHER] = HF_NAME(""),
    [HF_CONNECTION] = HF_NAME("Connection"),
    [HF_KEEP_ALIVE] = HF_NAME("Keep-Alive"),
    [HF_PROXY_CONNECTION] = HF_NAME("Proxy-Connection"),
    [HF_PROXY_AUTHORIZATION] = HF_NAME("Proxy-Authorization"),
    [HF_PROXY_AUTHENTICATE] = HF_NAME("Proxy-Authenticate"),
    [HF_TE] = HF_NAME("TE"),
    [HF_TRAILER] = HF_NAME("Trailer"),
    [HF_TRANSFER_ENCODING] = HF_NAME("Transfer-Encoding"),
    [HF_UPGRADE] = HF_NAME("Upgrade"),
    [HF_CONTENT_LENGTH] = HF_NAME("Content-Length"),
    [HF_HOST] = HF_NAME("Host"),
    [HF_VIA] = HF_NAME("Via"),
    [HF_EXPECT] = HF_NAME("Expect"),
    [HF_CONTENT_ENCODING] = HF_NAME("Content-Encoding"),
    [HF_CONTENT_TYPE] = HF_NAME("Content-Type"),
    [HF_X_HTTP_METHOD_OVERRIDE] = HF_NAME("X-HTTP-Method-Override"),
    [HF_X_HTTP_METHOD] = HF_NAME("X-HTTP-Method"),
    [HF_X_METHOD_OVERRIDE] = HF_NAME("X-Method-Override"),
    [HF_SEC_WEBSOCKET_PROTOCOL] = HF_NAME("Sec-WebSocket-Protocol"),
    [HF_SEC_WEBSOCKET_EXTENSIONS] = HF_NAME("Sec-WebSocket-Extensions"),
};

static int
http_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* A non-empty string of visible ASCII: no space, control or obs-text. */
int
http_visible(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	}
	return 1;
}

/* The method a token names; methods are case-sensitive (RFC 9110 §9.1). */
enum http_method
http_method_id(const char *s, size_t n)
{
	static const struct {
		const char *name;
		size_t len;
		enum http_method id;
	} methods[] = {
	    {"GET", 3, HTTP_M_GET},         {"HEAD", 4, HTTP_M_HEAD},
	    {"POST", 4, HTTP_M_POST},       {"PUT", 3, HTTP_M_PUT},
	    {"DELETE", 6, HTTP_M_DELETE},   {"CONNECT", 7, HTTP_M_CONNECT},
	    {"OPTIONS", 7, HTTP_M_OPTIONS}, {"TRACE", 5, HTTP_M_TRACE},
	    {"PATCH", 5, HTTP_M_PATCH},
	};
	size_t i;

	for (i = 0; i < EG_NELEM(methods); i++) {
		if (methods[i].len == n && memcmp(methods[i].name, s, n) == 0)
			return methods[i].id;
	}
	return HTTP_M_OTHER;
}

void
http_msg_init(struct http_msg *msg)
{
	memset(msg, 0, sizeof *msg);
}

void
http_msg_free(struct http_msg *msg)
{
	free(msg->headers); /* and the head, in the same allocation */
	free(msg->codings);
	http_target_free(&msg->uri);
	http_msg_init(msg);
}

/* Drop whatever was parsed and keep only the error. */
static enum http_parse
http_fail(struct http_msg *msg, int status, const char *why)
{
	http_msg_free(msg);
	msg->error_status = status;
	msg->error = why;
	return HTTP_PARSE_ERROR;
}

/*
 * Which known field a name of len bytes is, case-insensitively; HF_OTHER
 * for any other. Run once per field of every head, so the length and the
 * first letter rule out most names before any comparison.
 */
enum http_field
http_field_id(const char *name, size_t len)
{
	const char *k;
	int id;

	for (id = HF_OTHER + 1; id < HF_COUNT; id++) {
		k = http_field_names[id].name;
		if (http_field_names[id].len == len &&
		    ((unsigned char)k[0] | 0x20) == ((unsigned char)name[0] | 0x20) &&
		    strncasecmp(k, name, len) == 0)
			return (enum http_field)id;
	}
	return HF_OTHER;
}

/* The value of the first field of a known kind, or NULL. */
const char *
http_field_value(const struct http_msg *msg, enum http_field id)
{
	size_t i;

	if (!(msg->fields & HF_BIT(id)))
		return NULL;
	for (i = 0; i < msg->nheaders; i++) {
		if (msg->headers[i].id == id)
			return msg->headers[i].value;
	}
	return NULL;
}

/* The value of the first field of a name, or NULL. */
const char *
http_msg_header(const struct http_msg *msg, const char *name)
{
	enum http_field id = http_field_id(name, strlen(name));
	size_t i;

	if (id != HF_OTHER)
		return http_field_value(msg, id);
	for (i = 0; i < msg->nheaders; i++) {
		if (strcasecmp(msg->headers[i].name, name) == 0)
			return msg->headers[i].value;
	}
	return NULL;
}

/* Whether a comma-separated list value holds a token, case-insensitively. */
int
http_list_has(const char *value, const char *token)
{
	const char *p = value, *end;
	size_t n = strlen(token);

	while (*p != '\0') {
		while (http_ows(*p) || *p == ',')
			p++;
		end = p;
		while (*end != '\0' && *end != ',')
			end++;
		if ((size_t)(end - p) >= n && strncasecmp(p, token, n) == 0) {
			p += n;
			while (p < end && http_ows(*p))
				p++;
			if (p == end)
				return 1;
		}
		p = end;
	}
	return 0;
}

/*
 * Looks for the empty line that ends the head, from where the last call
 * stopped, so a head arriving a byte at a time costs linear time. Line
 * ends, control bytes and sizes are checked as soon as the bytes are in,
 * so a peer cannot make the proxy hold a large buffer of junk.
 */
#define HS(c)   ((c) < 0x20 && (c) != '\t') || (c) == 0x7f
#define HS4(c)  HS(c), HS((c) + 1), HS((c) + 2), HS((c) + 3)
#define HS16(c) HS4(c), HS4((c) + 4), HS4((c) + 8), HS4((c) + 12)
#define HS64(c) HS16(c), HS16((c) + 16), HS16((c) + 32), HS16((c) + 48)
/* Bytes the scan must look at: CR, LF and the other control characters. */
static const unsigned char http_special[256] = {HS64(0), HS64(64), HS64(128), HS64(192)};

static enum http_parse
http_scan(struct http_msg *msg, const char *data, size_t len, const struct http_limits *lim,
          int request)
{
	unsigned char c;
	size_t pos, from, linelen, max, stop;

	stop = len < lim->head ? len : lim->head;
	for (pos = msg->scan_pos; pos < len; pos++) {
		/*
		 * The run of ordinary bytes up to the next special one or the
		 * head limit, all on one line, then checked as if byte by byte:
		 * a line is too long once a byte lies max or more past its start.
		 */
		max = msg->scan_lines == 0 ? lim->start_line : lim->header_line;
		for (from = pos; pos < stop && !http_special[(unsigned char)data[pos]]; pos++)
			;
		if (pos > from && pos - 1 - msg->scan_line >= max) {
			if (msg->scan_lines > 0)
				return http_fail(msg, 431, "header line too long");
			return http_fail(msg, request ? 414 : 400, "start line too long");
		}
		if (pos == len)
			break;
		c = (unsigned char)data[pos];
		if (pos >= lim->head)
			return http_fail(msg, 431, "head too large");
		if (c == '\r') {
			if (pos + 1 == len)
				break;
			if (data[pos + 1] != '\n')
				return http_fail(msg, 400, "bare CR");
			continue;
		}
		/* Any other special byte is a control character. */
		if (c != '\n')
			return http_fail(msg, 400, "control character in head");
		linelen = pos - msg->scan_line;
		if (pos == 0 || data[pos - 1] != '\r')
			return http_fail(msg, 400, "bare LF");
		msg->scan_line = pos + 1;
		if (linelen > 1) {
			if (++msg->scan_lines > lim->headers + 1)
				return http_fail(msg, 431, "too many header fields");
			continue;
		}
		if (msg->scan_lines > 0) {
			msg->scan_pos = msg->head_len = pos + 1;
			return HTTP_PARSE_DONE;
		}
		/* RFC 9112 §2.2: one CRLF before a request line is ignored. */
		if (!request || msg->scan_skip > 0)
			return http_fail(msg, 400, "empty line before start line");
		msg->scan_skip = pos + 1;
	}
	msg->scan_pos = pos;
	return HTTP_PARSE_INCOMPLETE;
}

/* Split one field line, which ends at eol, in place into a name and a trimmed value. */
static const char *
http_field(char *line, char *eol, struct http_header *h)
{
	char *p, *end;

	if (http_ows(*line))
		return "obs-fold or whitespace before a field";
	for (p = line; text_http_tchar((unsigned char)*p); p++)
		;
	if (*p != ':') {
		if (http_ows(*p))
			return "whitespace before colon";
		return "invalid field name";
	}
	if (p == line)
		return "empty field name";
	h->name_len = (size_t)(p - line);
	h->id = http_field_id(line, h->name_len);
	*p++ = '\0';
	while (http_ows(*p))
		p++;
	end = eol;
	while (end > p && http_ows(end[-1]))
		end--;
	*end = '\0';
	h->name = line;
	h->value = p;
	h->value_len = (size_t)(end - p);
	return NULL;
}

/*
 * Copy the complete head, split it into lines and fields. Returns the
 * start line, or NULL with the error set.
 */
static char *
http_split(struct http_msg *msg, const char *data, int request)
{
	const char *error;
	char *line, *cr, *first;
	size_t n, i, hsize;

	/* One allocation: the field array, then the copy of the head. */
	n = msg->head_len - msg->scan_skip;
	msg->nheaders = msg->scan_lines - 1;
	hsize = (msg->nheaders + 1) * sizeof *msg->headers;
	msg->headers = xmalloc(hsize + n + 1);
	memset(msg->headers, 0, hsize);
	msg->head = (char *)msg->headers + hsize;
	memcpy(msg->head, data + msg->scan_skip, n);
	msg->head[n] = '\0';

	/* The scan saw every CR followed by LF, so lines end at each CR. */
	first = msg->head;
	cr = strchr(first, '\r');
	*cr = '\0';
	line = cr + 2;
	for (i = 0; i < msg->nheaders; i++) {
		cr = strchr(line, '\r');
		*cr = '\0';
		if ((error = http_field(line, cr, &msg->headers[i])) != NULL) {
			http_fail(msg, request ? 400 : 502, error);
			return NULL;
		}
		msg->fields |= HF_BIT(msg->headers[i].id);
		line = cr + 2;
	}
	return first;
}

/* "HTTP/1.0" or "HTTP/1.1" → 10 or 11; another HTTP/d.d → 0; else -1. */
static int
http_version(const char *s)
{
	if (strncmp(s, "HTTP/", 5) != 0 || s[5] < '0' || s[5] > '9' || s[6] != '.' || s[7] < '0' ||
	    s[7] > '9')
		return -1;
	if (s[5] == '1' && (s[7] == '0' || s[7] == '1'))
		return 10 + s[7] - '0';
	return 0;
}

/* Content-Length: digits only, one value, at most HTTP_LENGTH_MAX. */
static int
http_length(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (HTTP_LENGTH_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* method SP target SP HTTP-version, single spaces. */
static enum http_parse
http_request_line(struct http_msg *msg, char *line)
{
	char *sp1, *sp2, *p;
	const char *error;
	int v;

	if ((sp1 = strchr(line, ' ')) == NULL || (sp2 = strchr(sp1 + 1, ' ')) == NULL ||
	    strchr(sp2 + 1, ' ') != NULL)
		return http_fail(msg, 400, "malformed request line");
	*sp1 = *sp2 = '\0';
	if (*line == '\0')
		return http_fail(msg, 400, "empty method");
	for (p = line; *p != '\0'; p++) {
		if (!text_http_tchar((unsigned char)*p))
			return http_fail(msg, 400, "invalid method");
	}
	if ((v = http_version(sp2 + 1)) == -1 || sp2[9] != '\0')
		return http_fail(msg, 400, "malformed HTTP version");
	if (v == 0)
		return http_fail(msg, 505, "unsupported HTTP version");
	msg->version = v;
	msg->method = line;
	msg->method_id = http_method_id(line, (size_t)(p - line));
	msg->target = sp1 + 1;
	if ((error = http_target_parse(msg->method_id, msg->target, &msg->uri)) != NULL)
		return http_fail(msg, 400, error);
	return HTTP_PARSE_DONE;
}

/* Keep-alive from the version default and the Connection tokens. */
static void
http_connection(struct http_msg *msg)
{
	int keep = msg->version == 11, upgrade = 0, close = 0;
	const struct http_header *h;
	size_t i;

	/* Most heads have neither field: no loop. */
	for (i = 0;
	     i < msg->nheaders && (msg->fields & (HF_BIT(HF_CONNECTION) | HF_BIT(HF_UPGRADE)));
	     i++) {
		h = &msg->headers[i];
		if (h->id == HF_CONNECTION) {
			keep |= http_list_has(h->value, "keep-alive");
			upgrade |= http_list_has(h->value, "upgrade");
			close |= http_list_has(h->value, "close");
		} else if (h->id == HF_UPGRADE && msg->upgrade == NULL)
			msg->upgrade = h->value;
	}
	/* close wins over keep-alive, in whichever field or order. */
	if (keep && !close)
		msg->flags |= HTTP_F_KEEP_ALIVE;
	if (upgrade && msg->upgrade != NULL)
		msg->flags |= HTTP_F_UPGRADE;
}

/* How many fields of a kind there are; *value is the last one's. */
static size_t
http_count(const struct http_msg *msg, enum http_field id, const char **value)
{
	size_t i, n = 0;

	*value = NULL;
	if (!(msg->fields & HF_BIT(id)))
		return 0;
	for (i = 0; i < msg->nheaders; i++) {
		if (msg->headers[i].id == id) {
			*value = msg->headers[i].value;
			n++;
		}
	}
	return n;
}

/* Framing and Host of a request: anything ambiguous is refused. */
static enum http_parse
http_request_fields(struct http_msg *msg)
{
	const char *te, *cl, *host, *expect;
	size_t nte, ncl, nhost, hostlen;
	uint16_t port;

	nte = http_count(msg, HF_TRANSFER_ENCODING, &te);
	ncl = http_count(msg, HF_CONTENT_LENGTH, &cl);
	nhost = http_count(msg, HF_HOST, &host);
	if (nte > 0) {
		if (msg->version == 10)
			return http_fail(msg, 400, "Transfer-Encoding in HTTP/1.0");
		if (ncl > 0)
			return http_fail(msg, 400, "Transfer-Encoding with Content-Length");
		/* Only a lone "chunked": no other coding, not twice. */
		if (nte > 1 || strcasecmp(te, "chunked") != 0)
			return http_fail(msg, 501, "unsupported transfer coding");
		msg->body = HTTP_BODY_CHUNKED;
	} else if (ncl > 0) {
		if (ncl > 1)
			return http_fail(msg, 400, "duplicate Content-Length");
		if (http_length(cl, &msg->length) == -1)
			return http_fail(msg, 400, "invalid Content-Length");
		msg->body = HTTP_BODY_LENGTH;
	}
	if (msg->uri.form == HTTP_TARGET_AUTHORITY &&
	    (msg->body == HTTP_BODY_CHUNKED || msg->length > 0))
		return http_fail(msg, 400, "CONNECT with a body");
	if (msg->uri.form == HTTP_TARGET_AUTHORITY)
		msg->body = HTTP_BODY_NONE;
	if (nhost > 1)
		return http_fail(msg, 400, "duplicate Host");
	if (nhost == 0 && msg->version == 11)
		return http_fail(msg, 400, "missing Host");
	if (nhost == 1 && http_target_authority(host, strlen(host), 0, &hostlen, &port) != NULL)
		return http_fail(msg, 400, "invalid Host");
	http_connection(msg);
	expect = http_field_value(msg, HF_EXPECT);
	if (msg->version == 11 && expect != NULL && strcasecmp(expect, "100-continue") == 0)
		msg->flags |= HTTP_F_EXPECT_CONTINUE;
	return HTTP_PARSE_DONE;
}

/*
 * Parse one request head if it is complete. msg must come from
 * http_msg_init, or from a call that returned HTTP_PARSE_INCOMPLETE for the
 * same bytes (the search for the head's end resumes where it stopped); a
 * msg already parsed or failed returns the same again. Error statuses:
 * 400, 414, 431, 501, 505.
 */
enum http_parse
http_parse_request(const char *data, size_t len, const struct http_limits *lim,
                   struct http_msg *msg)
{
	enum http_parse r;
	char *line;

	if (msg->error != NULL || msg->head != NULL)
		return msg->error != NULL ? HTTP_PARSE_ERROR : HTTP_PARSE_DONE;
	if (lim == NULL)
		lim = &http_limits_default;
	if ((r = http_scan(msg, data, len, lim, 1)) != HTTP_PARSE_DONE)
		return r;
	if ((line = http_split(msg, data, 1)) == NULL)
		return HTTP_PARSE_ERROR;
	if (http_request_line(msg, line) == HTTP_PARSE_ERROR)
		return HTTP_PARSE_ERROR;
	return http_request_fields(msg);
}

/*
 * Response transfer codings: a list of tokens where chunked, if present,
 * is last and once. The others are kept in msg->codings to be re-stated.
 */
static const char *
http_codings(struct http_msg *msg, int *chunkedp)
{
	const char *p, *start, *end, *e, *error = NULL;
	struct buf b;
	size_t i;
	int chunked = 0;

	buf_init(&b);
	for (i = 0; i < msg->nheaders && error == NULL; i++) {
		if (msg->headers[i].id != HF_TRANSFER_ENCODING)
			continue;
		for (p = msg->headers[i].value; error == NULL; p = end + 1) {
			while (http_ows(*p))
				p++;
			start = p;
			end = p + strcspn(p, ",");
			for (e = end; e > start && http_ows(e[-1]); e--)
				;
			if (e == start)
				error = "empty transfer coding";
			else if (chunked)
				error = "chunked before another coding";
			for (p = start; p < e && error == NULL; p++) {
				if (!text_http_tchar((unsigned char)*p))
					error = "invalid transfer coding";
			}
			if (error != NULL)
				break;
			if (e - start == 7 && strncasecmp(start, "chunked", 7) == 0)
				chunked = 1;
			else {
				if (b.len > 0)
					buf_adds(&b, ", ");
				buf_add(&b, start, (size_t)(e - start));
			}
			if (*end == '\0')
				break;
		}
	}
	if (error == NULL && b.len > 0)
		msg->codings = buf_release(&b);
	buf_free(&b);
	*chunkedp = chunked;
	return error;
}

/* HTTP-version SP 3DIGIT [SP reason-phrase]; the reason may be absent. */
static enum http_parse
http_status_line(struct http_msg *msg, char *line)
{
	int v;

	if ((v = http_version(line)) == -1 || line[8] != ' ')
		return http_fail(msg, 502, "malformed status line");
	if (v == 0)
		return http_fail(msg, 502, "unsupported HTTP version");
	if (line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9' || line[11] < '0' ||
	    line[11] > '9' || (line[12] != ' ' && line[12] != '\0'))
		return http_fail(msg, 502, "malformed status code");
	msg->version = v;
	msg->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	msg->reason = line[12] == ' ' ? line + 13 : "";
	return HTTP_PARSE_DONE;
}

/* Response framing, RFC 9112 §6.3 in its order. */
static enum http_parse
http_response_fields(struct http_msg *msg, enum http_method method)
{
	const char *te, *cl, *error;
	size_t nte, ncl;
	int chunked, bodiless, connect_ok;

	nte = http_count(msg, HF_TRANSFER_ENCODING, &te);
	ncl = http_count(msg, HF_CONTENT_LENGTH, &cl);
	connect_ok = method == HTTP_M_CONNECT && msg->status / 100 == 2;
	bodiless = msg->status < 200 || msg->status == 204 || msg->status == 304 || connect_ok ||
	           method == HTTP_M_HEAD;
	if (nte > 0) {
		if (msg->version == 10)
			return http_fail(msg, 502, "Transfer-Encoding in HTTP/1.0");
		if ((error = http_codings(msg, &chunked)) != NULL)
			return http_fail(msg, 502, error);
		/* Transfer-Encoding overrides Content-Length, which is dropped. */
		msg->body = chunked ? HTTP_BODY_CHUNKED : HTTP_BODY_CLOSE;
	} else if (ncl > 0) {
		if (ncl > 1)
			return http_fail(msg, 502, "duplicate Content-Length");
		if (http_length(cl, &msg->length) == -1)
			return http_fail(msg, 502, "invalid Content-Length");
		msg->body = HTTP_BODY_LENGTH;
	} else
		msg->body = HTTP_BODY_CLOSE;
	if (bodiless) {
		/* A HEAD or 304 response's length describes the resource. */
		if (msg->body == HTTP_BODY_LENGTH && msg->status >= 200 && msg->status != 204 &&
		    !connect_ok)
			msg->flags |= HTTP_F_HAS_LENGTH;
		else
			msg->length = 0;
		msg->body = HTTP_BODY_NONE;
		free(msg->codings);
		msg->codings = NULL;
	}
	http_connection(msg);
	if (msg->body == HTTP_BODY_CLOSE)
		msg->flags &= ~HTTP_F_KEEP_ALIVE;
	if (msg->status != 101)
		msg->flags &= ~HTTP_F_UPGRADE;
	return HTTP_PARSE_DONE;
}

/*
 * Parse one response head if it is complete; method is the request's
 * (HEAD and CONNECT change the framing). Every error
 * has status 502: the client is answered Bad Gateway.
 */
enum http_parse
http_parse_response(const char *data, size_t len, const struct http_limits *lim,
                    enum http_method method, struct http_msg *msg)
{
	enum http_parse r;
	char *line;

	if (msg->error != NULL || msg->head != NULL)
		return msg->error != NULL ? HTTP_PARSE_ERROR : HTTP_PARSE_DONE;
	if (lim == NULL)
		lim = &http_limits_default;
	if ((r = http_scan(msg, data, len, lim, 0)) == HTTP_PARSE_ERROR)
		msg->error_status = 502;
	if (r != HTTP_PARSE_DONE)
		return r;
	if ((line = http_split(msg, data, 0)) == NULL)
		return HTTP_PARSE_ERROR;
	if (http_status_line(msg, line) == HTTP_PARSE_ERROR)
		return HTTP_PARSE_ERROR;
	return http_response_fields(msg, method);
}
