/*
 * The chunked transfer coding (RFC 9112 §7.1): an incremental decoder fed
 * bytes as they arrive, which hands back ranges of body data, and the
 * writer for the framing the proxy puts around those ranges itself. The
 * client's framing is never copied: chunk extensions are read and dropped,
 * and so are trailer fields (checked like header fields, never forwarded,
 * since the proxy removes TE and Trailer and cannot vouch for them). Sizes
 * are read strictly: hex digits only, no sign, prefix or whitespace, at
 * most 16 digits and HTTP_LENGTH_MAX.
 */
#include <stdio.h>
#include <string.h>

#include "http.h"

enum chunked_state {
	CH_SIZE, /* chunk size digits */
	CH_EXT,  /* after ';' up to CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_FIELD, /* start of a trailer line, or the final CRLF */
	CH_NAME,
	CH_VALUE,
	CH_FIELD_LF,
	CH_END_LF,
	CH_DONE,
	CH_FAILED,
};

void
chunked_init(struct chunked *dec, const struct http_limits *lim)
{
	if (lim == NULL)
		lim = &http_limits_default;
	memset(dec, 0, sizeof *dec);
	dec->state = CH_SIZE;
	dec->max_line = lim->chunk_line;
	dec->max_ext_total = lim->chunk_ext_total;
	dec->max_field_line = lim->header_line;
	dec->max_trailer_len = lim->head;
	dec->max_trailers = lim->headers;
}

static enum chunked_result
chunked_fail(struct chunked *dec, const char *why)
{
	dec->state = CH_FAILED;
	dec->error = why;
	return CHUNKED_ERROR;
}

/* One byte of the chunk size line. */
static enum chunked_result
chunked_size_byte(struct chunked *dec, unsigned char c)
{
	int v;

	if (++dec->line_len > dec->max_line)
		return chunked_fail(dec, "chunk size line too long");
	switch (dec->state) {
	case CH_SIZE:
		if ((v = text_hex_value(c)) != -1) {
			if (++dec->digits > 16)
				return chunked_fail(dec, "chunk size too long");
			if (dec->size > (HTTP_LENGTH_MAX - (uint64_t)v) / 16)
				return chunked_fail(dec, "chunk size too large");
			dec->size = dec->size * 16 + (uint64_t)v;
			return CHUNKED_MORE;
		}
		if (dec->digits == 0)
			return chunked_fail(dec, "invalid chunk size");
		if (c == ';')
			dec->state = CH_EXT;
		else if (c == '\r')
			dec->state = CH_SIZE_LF;
		else
			return chunked_fail(dec, "invalid chunk size");
		return CHUNKED_MORE;
	case CH_EXT:
		/* Extensions are dropped, so only their bytes are checked. */
		if (c == '\r') {
			dec->state = CH_SIZE_LF;
			return CHUNKED_MORE;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return chunked_fail(dec, "control character in chunk extension");
		if (++dec->ext_total > dec->max_ext_total)
			return chunked_fail(dec, "too many chunk extension bytes");
		return CHUNKED_MORE;
	default: /* CH_SIZE_LF */
		if (c != '\n')
			return chunked_fail(dec, "bare CR in chunk size line");
		dec->line_len = 0;
		dec->left = dec->size;
		dec->state = dec->size == 0 ? CH_FIELD : CH_DATA;
		return CHUNKED_MORE;
	}
}

/* One byte of the trailer section, read like header fields. */
static enum chunked_result
chunked_trailer_byte(struct chunked *dec, unsigned char c)
{
	if (++dec->trailer_len > dec->max_trailer_len)
		return chunked_fail(dec, "trailers too large");
	if (++dec->line_len > dec->max_field_line + 2)
		return chunked_fail(dec, "trailer line too long");
	switch (dec->state) {
	case CH_FIELD:
		if (c == '\r') {
			dec->state = CH_END_LF;
			return CHUNKED_MORE;
		}
		if (!text_http_tchar(c))
			return chunked_fail(dec, "invalid trailer field");
		if (++dec->trailers > dec->max_trailers)
			return chunked_fail(dec, "too many trailer fields");
		dec->state = CH_NAME;
		return CHUNKED_MORE;
	case CH_NAME:
		if (c == ':')
			dec->state = CH_VALUE;
		else if (!text_http_tchar(c))
			return chunked_fail(dec, "invalid trailer field");
		return CHUNKED_MORE;
	case CH_VALUE:
		if (c == '\r')
			dec->state = CH_FIELD_LF;
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			return chunked_fail(dec, "control character in trailer");
		return CHUNKED_MORE;
	case CH_FIELD_LF:
		if (c != '\n')
			return chunked_fail(dec, "bare CR in trailer");
		dec->line_len = 0;
		dec->state = CH_FIELD;
		return CHUNKED_MORE;
	default: /* CH_END_LF */
		if (c != '\n')
			return chunked_fail(dec, "bare CR after trailers");
		dec->state = CH_DONE;
		return CHUNKED_DONE;
	}
}

/*
 * Feed body bytes. Sets *consumed to the bytes used and *out, *outlen to a
 * range of body data inside data (*outlen 0 when there is none). It stops
 * after one data range, at the end of the body or at an error: while it
 * returns CHUNKED_MORE with bytes left over, call it again with the rest.
 * On CHUNKED_DONE, bytes past *consumed belong to the next message.
 */
enum chunked_result
chunked_feed(struct chunked *dec, const char *data, size_t len, size_t *consumed, const char **out,
             size_t *outlen)
{
	enum chunked_result r = CHUNKED_MORE;
	unsigned char c;
	size_t i = 0, n;

	*consumed = 0;
	*out = NULL;
	*outlen = 0;
	if (dec->state == CH_FAILED)
		r = CHUNKED_ERROR;
	else if (dec->state == CH_DONE)
		r = CHUNKED_DONE;
	while (r == CHUNKED_MORE && i < len) {
		c = (unsigned char)data[i];
		switch (dec->state) {
		case CH_SIZE:
		case CH_EXT:
		case CH_SIZE_LF:
			r = chunked_size_byte(dec, c);
			i++;
			break;
		case CH_DATA:
			n = len - i;
			if (n > dec->left)
				n = (size_t)dec->left;
			*out = data + i;
			*outlen = n;
			dec->left -= n;
			dec->body_len += n;
			if (dec->left == 0)
				dec->state = CH_DATA_CR;
			*consumed = i + n;
			return CHUNKED_MORE;
		case CH_DATA_CR:
			if (c != '\r')
				return chunked_fail(dec, "no CRLF after chunk data");
			dec->state = CH_DATA_LF;
			i++;
			break;
		case CH_DATA_LF:
			if (c != '\n')
				return chunked_fail(dec, "no CRLF after chunk data");
			dec->state = CH_SIZE;
			dec->size = 0;
			dec->digits = 0;
			i++;
			break;
		default:
			r = chunked_trailer_byte(dec, c);
			i++;
			break;
		}
	}
	*consumed = r == CHUNKED_ERROR ? 0 : i;
	return r;
}

/* Write the size line of a chunk of len bytes; returns its length. */
size_t
chunked_head(char out[CHUNKED_HEAD_MAX], uint64_t len)
{
	return (size_t)snprintf(out, CHUNKED_HEAD_MAX, "%llx\r\n", (unsigned long long)len);
}

/* Append one chunk; nothing for len 0, which would end the body. */
void
chunked_write(struct buf *out, const void *data, size_t len)
{
	char head[CHUNKED_HEAD_MAX];

	if (len == 0)
		return;
	buf_add(out, head, chunked_head(head, len));
	buf_add(out, data, len);
	buf_adds(out, "\r\n");
}

/* Append the last chunk and the empty trailer section. */
void
chunked_write_last(struct buf *out)
{
	buf_adds(out, "0\r\n\r\n");
}
