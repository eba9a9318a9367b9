/*
 * loadgen: reading responses. The framing of each response is parsed as
 * it arrives (status line, Content-Length, chunked with trailers, or until
 * the connection closes), strictly enough that a proxy that mangles a
 * response shows up as a parse error, not as a fast request.
 */
#include "loadgen.h"

/* Whether the comma-separated list [v, end) has token tok (case-insensitive). */
static int
lg_list_has(const char *v, const char *end, const char *tok, int last_only)
{
	const char *t, *e;
	size_t n = strlen(tok);
	int found = 0;

	while (v < end) {
		for (t = v; t < end && (*t == ' ' || *t == '\t' || *t == ','); t++)
			;
		for (e = t; e < end && *e != ','; e++)
			;
		v = e;
		while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == t)
			continue;
		found = (size_t)(e - t) == n && strncasecmp(t, tok, n) == 0;
		if (found && !last_only)
			return 1;
	}
	return found;
}

/* Sets the framing flags from one header line (not NUL-terminated). -1 if malformed. */
static int
lg_parse_header(struct lg_conn *c, const char *line, size_t len, int *keep10, int *te, int64_t *cl)
{
	const char *colon, *v, *end = line + len;
	size_t nlen;
	int64_t n;

	if (len == 0 || line[0] == ' ' || line[0] == '\t')
		return -1; /* obsolete line folding is refused */
	if ((colon = memchr(line, ':', len)) == NULL || colon == line)
		return -1;
	nlen = (size_t)(colon - line);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) {
		if (v == end || end - v > 18)
			return -1;
		for (n = 0; v < end; v++) {
			if (*v < '0' || *v > '9')
				return -1;
			n = n * 10 + (*v - '0');
		}
		if (*cl >= 0 && *cl != n)
			return -1;
		*cl = n;
	} else if (nlen == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
		/* Chunked frames the body only as the last coding; otherwise read to EOF. */
		*te = lg_list_has(v, end, "chunked", 1) ? 1 : 2;
	} else if (nlen == 10 && strncasecmp(line, "connection", 10) == 0) {
		if (lg_list_has(v, end, "close", 0))
			c->reusable = 0;
		if (lg_list_has(v, end, "keep-alive", 0))
			*keep10 = 1;
	}
	return 0;
}

/*
 * Parses one complete response head of hlen bytes (ending CRLF CRLF) and
 * sets the body state. Returns 1 for an interim 1xx head, 0 or -1.
 */
static int
lg_parse_head(struct lg_conn *c, const char *p, size_t hlen)
{
	const char *end = p + hlen - 2, *eol;
	int http10, keep10 = 0, te = 0;
	int64_t cl = -1;

	if (hlen < 14 || strncmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ')
		return -1;
	if (p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (p[12] != ' ' && p[12] != '\r'))
		return -1;
	http10 = p[7] == '0';
	c->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	c->reusable = 1;
	if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
		return -1;
	for (p = eol + 2; p < end; p = eol + 2) {
		if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
			return -1;
		if (lg_parse_header(c, p, (size_t)(eol - p), &keep10, &te, &cl) == -1)
			return -1;
	}
	if (http10 && !keep10)
		c->reusable = 0;
	if (c->status == 101)
		return -1; /* never asked for an upgrade */
	if (c->status < 200)
		return 1;
	if (c->status == 204 || c->status == 304) {
		c->state = LG_BODY;
		c->left = 0;
	} else if (te == 1) {
		c->state = LG_CHUNK_SIZE;
		c->reusable = c->reusable && cl < 0;
	} else if (te == 2 || cl < 0) {
		c->state = LG_UNTIL_EOF;
		c->reusable = 0;
	} else {
		c->state = LG_BODY;
		c->left = (uint64_t)cl;
	}
	c->head_bytes = 0;
	return 0;
}

/* Reads a CRLF-terminated line of at most max bytes into buf; 0 if incomplete, -1 if too long. */
static int
lg_take_line(struct evbuffer *in, char *buf, size_t max, size_t *len)
{
	struct evbuffer_ptr pos;
	size_t eol_len;

	pos = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_CRLF_STRICT);
	if (pos.pos < 0)
		return evbuffer_get_length(in) > max ? -1 : 0;
	if ((size_t)pos.pos > max)
		return -1;
	evbuffer_remove(in, buf, (size_t)pos.pos);
	evbuffer_drain(in, eol_len);
	*len = (size_t)pos.pos;
	return 1;
}

/* Chunk-size line: hex digits, then optional extensions. */
static int
lg_parse_chunk_size(struct lg_conn *c, const char *line, size_t len)
{
	uint64_t n = 0;
	size_t i;
	int d;

	for (i = 0; i < len; i++) {
		if (line[i] >= '0' && line[i] <= '9')
			d = line[i] - '0';
		else if ((line[i] | 0x20) >= 'a' && (line[i] | 0x20) <= 'f')
			d = (line[i] | 0x20) - 'a' + 10;
		else
			break;
		if (i >= 15)
			return -1;
		n = n * 16 + (uint64_t)d;
	}
	if (i == 0 || (i < len && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
		return -1;
	c->left = n;
	c->state = n == 0 ? LG_TRAILER : LG_CHUNK_DATA;
	return 0;
}

static int
lg_parse_step_head(struct lg_conn *c, struct evbuffer *in)
{
	struct evbuffer_ptr pos;
	size_t hlen;
	int r;

	pos = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (pos.pos < 0)
		return evbuffer_get_length(in) > LG_HEAD_MAX ? -1 : 0;
	hlen = (size_t)pos.pos + 4;
	if (hlen > LG_HEAD_MAX)
		return -1;
	r = lg_parse_head(c, (const char *)evbuffer_pullup(in, (ssize_t)hlen), hlen);
	evbuffer_drain(in, hlen);
	if (r == -1)
		return -1;
	return 1; /* an interim head also means: go round again */
}

/*
 * Advances the response state machine over what has arrived. Returns 1
 * when a response is complete, 0 when more bytes are needed, -1 on a
 * framing error.
 */
int
lg_parse(struct lg_conn *c, struct evbuffer *in)
{
	char line[LG_CHUNK_LINE + 1];
	size_t len, n;
	int r;

	for (;;) {
		switch (c->state) {
		case LG_HEAD:
			if ((r = lg_parse_step_head(c, in)) <= 0)
				return r;
			break;
		case LG_BODY:
		case LG_CHUNK_DATA:
			n = evbuffer_get_length(in);
			if (n > c->left)
				n = (size_t)c->left;
			evbuffer_drain(in, n);
			c->lg->body_bytes += n;
			c->left -= n;
			if (c->left > 0)
				return 0;
			if (c->state == LG_BODY)
				return 1;
			c->state = LG_CHUNK_CRLF;
			break;
		case LG_CHUNK_CRLF:
			if (evbuffer_get_length(in) < 2)
				return 0;
			evbuffer_remove(in, line, 2);
			if (line[0] != '\r' || line[1] != '\n')
				return -1;
			c->state = LG_CHUNK_SIZE;
			break;
		case LG_CHUNK_SIZE:
			if ((r = lg_take_line(in, line, LG_CHUNK_LINE, &len)) <= 0)
				return r;
			if (lg_parse_chunk_size(c, line, len) == -1)
				return -1;
			break;
		case LG_TRAILER:
			if ((r = lg_take_line(in, line, LG_CHUNK_LINE, &len)) <= 0)
				return r;
			if (len == 0)
				return 1;
			if ((c->head_bytes += len + 2) > LG_HEAD_MAX)
				return -1;
			break;
		case LG_UNTIL_EOF:
			c->lg->body_bytes += evbuffer_get_length(in);
			evbuffer_drain(in, evbuffer_get_length(in));
			return 0;
		case LG_HOLD:
			return -1; /* nothing is owed on a parked connection */
		}
	}
}
