/*
 * WebSocket frames (RFC 6455 §5), without sockets: the client's frames read
 * strictly into whole messages, the frames egressd writes, and the
 * boundaries of the server's frames, which egressd relays untouched but
 * must know to end a connection with a close frame of its own. No extension
 * is ever negotiated on a connection egressd reads, so reserved bits are
 * errors, and a message is only handed over once it is complete, bounded
 * and (text) valid UTF-8: what goes on upstream is exactly what was checked.
 */
#include <string.h>

#include "ws.h"

#define WS_FIN    0x80
#define WS_RSV    0x70
#define WS_OPCODE 0x0f
#define WS_MASKED 0x80
#define WS_LEN7   0x7f

void
ws_reader_init(struct ws_reader *r, size_t max)
{
	memset(r, 0, sizeof *r);
	r->max = max;
	r->head_want = 2;
	buf_init(&r->msg);
	buf_reserve(&r->msg, 0); /* an empty message is "", never NULL */
}

void
ws_reader_free(struct ws_reader *r)
{
	buf_free(&r->msg);
}

static enum ws_result
ws_reader_fail(struct ws_reader *r, int code, const char *why)
{
	r->err = why;
	r->close_code = code;
	return WS_ERROR;
}

static int
ws_is_control(int opcode)
{
	return (opcode & 0x8) != 0;
}

/* Whether p holds only well-formed UTF-8 (RFC 3629). */
int
ws_utf8_valid(const uint8_t *p, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((k = text_utf8_len(p + i, n - i)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

/* A close code a peer may send (RFC 6455 §7.4): not 1004-1006, 1015 or unassigned. */
int
ws_close_code_valid(unsigned code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
	       (code >= 3000 && code <= 4999);
}

/* The first two bytes are in: what kind of frame, and how long its head is. */
static enum ws_result
ws_reader_head2(struct ws_reader *r)
{
	uint8_t b0 = r->head[0], b1 = r->head[1];
	unsigned len7 = b1 & WS_LEN7;

	r->fin = (b0 & WS_FIN) != 0;
	r->opcode = b0 & WS_OPCODE;
	if (b0 & WS_RSV)
		return ws_reader_fail(r, WS_CLOSE_PROTOCOL, "reserved bits set (no extension)");
	switch (r->opcode) {
	case WS_OP_CONTINUATION:
		if (r->msg_opcode == 0)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "continuation frame without a message");
		break;
	case WS_OP_TEXT:
	case WS_OP_BINARY:
		if (r->msg_opcode != 0)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "new message inside a fragmented one");
		break;
	case WS_OP_CLOSE:
	case WS_OP_PING:
	case WS_OP_PONG:
		if (!r->fin)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL, "fragmented control frame");
		if (len7 > WS_CONTROL_MAX)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "control frame longer than 125 bytes");
		break;
	default:
		return ws_reader_fail(r, WS_CLOSE_PROTOCOL, "unknown opcode");
	}
	/* RFC 6455 §5.1: a server closes on an unmasked client frame. */
	if (!(b1 & WS_MASKED))
		return ws_reader_fail(r, WS_CLOSE_PROTOCOL, "unmasked frame from the client");
	r->head_want = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
	return WS_MORE;
}

/* The whole head is in: the payload length, its encoding and the bound. */
static enum ws_result
ws_reader_head(struct ws_reader *r)
{
	unsigned len7 = r->head[1] & WS_LEN7;
	const uint8_t *p = r->head + 2;
	uint64_t len = len7;
	size_t i;

	if (len7 == 126) {
		len = (uint64_t)p[0] << 8 | p[1];
		if (len < 126)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "payload length not minimally encoded");
		p += 2;
	} else if (len7 == 127) {
		if (p[0] & 0x80)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "payload length with its high bit set");
		for (len = 0, i = 0; i < 8; i++)
			len = len << 8 | p[i];
		if (len <= 0xffff)
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "payload length not minimally encoded");
		p += 8;
	}
	memcpy(r->mask, p, 4);
	if (!ws_is_control(r->opcode) && len > r->max - r->msg.len)
		return ws_reader_fail(r, WS_CLOSE_TOO_BIG,
		                      "message larger than network.maxGraphqlBody");
	r->left = len;
	r->pos = 0;
	r->head_len = 0;
	r->head_want = 2;
	r->in_payload = 1;
	if (!ws_is_control(r->opcode) && r->opcode != WS_OP_CONTINUATION)
		r->msg_opcode = r->opcode;
	return WS_MORE;
}

/* A control frame is whole: a close frame's code and reason are checked. */
static enum ws_result
ws_reader_control(struct ws_reader *r)
{
	unsigned code;

	r->out_opcode = r->opcode;
	if (r->opcode != WS_OP_CLOSE)
		return WS_CONTROL;
	if (r->ctl_len == 1)
		return ws_reader_fail(r, WS_CLOSE_PROTOCOL, "close frame with a one-byte payload");
	if (r->ctl_len >= 2) {
		code = (unsigned)r->ctl[0] << 8 | r->ctl[1];
		if (!ws_close_code_valid(code))
			return ws_reader_fail(r, WS_CLOSE_PROTOCOL,
			                      "close frame with an invalid code");
		if (!ws_utf8_valid(r->ctl + 2, r->ctl_len - 2))
			return ws_reader_fail(r, WS_CLOSE_BAD_DATA,
			                      "close reason is not valid UTF-8");
	}
	r->closed = 1;
	return WS_CONTROL;
}

/* A frame's payload is all in: a control frame, or maybe the end of a message. */
static enum ws_result
ws_reader_frame_end(struct ws_reader *r)
{
	r->in_payload = 0;
	if (ws_is_control(r->opcode))
		return ws_reader_control(r);
	if (!r->fin)
		return WS_MORE;
	if (r->msg_opcode == WS_OP_TEXT && !ws_utf8_valid((const uint8_t *)r->msg.data, r->msg.len))
		return ws_reader_fail(r, WS_CLOSE_BAD_DATA, "text message is not valid UTF-8");
	r->out_opcode = r->msg_opcode;
	r->msg_opcode = 0;
	r->msg_ready = 1;
	return WS_MESSAGE;
}

/* Unmask payload bytes into the message or the control frame. */
static void
ws_reader_payload(struct ws_reader *r, const uint8_t *p, size_t n)
{
	uint8_t *dst;
	size_t i;

	if (ws_is_control(r->opcode)) {
		dst = r->ctl + r->ctl_len;
		r->ctl_len += n;
	} else {
		buf_reserve(&r->msg, n);
		dst = (uint8_t *)r->msg.data + r->msg.len;
		r->msg.len += n;
		r->msg.data[r->msg.len] = '\0';
	}
	for (i = 0; i < n; i++)
		dst[i] = p[i] ^ r->mask[(r->pos + i) & 3];
	r->pos += n;
}

/*
 * Read client bytes: *used tells how many were taken. WS_MESSAGE: a whole
 * data message is in msg (its opcode in out_opcode); WS_CONTROL: a control
 * frame is in ctl, ctl_len. Either stays there, and may be changed, until
 * the next call. WS_ERROR: err and close_code say why; the stream is
 * unusable from then on.
 */
enum ws_result
ws_reader_feed(struct ws_reader *r, const uint8_t *p, size_t n, size_t *used)
{
	enum ws_result res = WS_MORE;
	size_t i = 0, take;

	*used = 0;
	if (r->err != NULL)
		return WS_ERROR;
	if (r->msg_ready) {
		r->msg_ready = 0;
		buf_reset(&r->msg);
	}
	while (i < n && res == WS_MORE) {
		if (!r->in_payload) {
			if (r->head_len == 0)
				r->ctl_len = 0;
			r->head[r->head_len++] = p[i++];
			if (r->head_len == 2 && (res = ws_reader_head2(r)) != WS_MORE)
				break;
			if (r->head_len < r->head_want || (res = ws_reader_head(r)) != WS_MORE)
				continue;
		} else {
			take = n - i;
			if ((uint64_t)take > r->left)
				take = (size_t)r->left;
			ws_reader_payload(r, p + i, take);
			i += take;
			r->left -= take;
		}
		if (r->left == 0)
			res = ws_reader_frame_end(r);
	}
	*used = i;
	return res;
}

/*
 * The head of a final frame of len payload bytes; masked with mask
 * unless it is NULL (a server's frame). Returns its length.
 */
size_t
ws_frame_head(uint8_t out[WS_HEAD_MAX], int opcode, uint64_t len, const uint8_t *mask)
{
	size_t n = 2, i;

	out[0] = (uint8_t)(WS_FIN | (opcode & WS_OPCODE));
	if (len < 126)
		out[1] = (uint8_t)len;
	else if (len <= 0xffff) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		n = 4;
	} else {
		out[1] = 127;
		for (i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		n = 10;
	}
	if (mask != NULL) {
		out[1] |= WS_MASKED;
		memcpy(out + n, mask, 4);
		n += 4;
	}
	return n;
}

void
ws_mask(uint8_t *p, size_t n, const uint8_t mask[4])
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] ^= mask[i & 3];
}

/*
 * A server's close frame with code and a reason (cut to fit a control
 * frame at a character boundary). Returns its length.
 */
size_t
ws_close_frame(uint8_t out[WS_CLOSE_FRAME_MAX], unsigned code, const char *reason)
{
	size_t rlen = strlen(reason), k, n;

	if (rlen > WS_CONTROL_MAX - 2) {
		for (rlen = 0; reason[rlen] != '\0'; rlen += k) {
			k = text_utf8_len((const unsigned char *)reason + rlen,
			                  strlen(reason + rlen));
			if (k == 0 || rlen + k > WS_CONTROL_MAX - 2)
				break;
		}
	}
	n = ws_frame_head(out, WS_OP_CLOSE, rlen + 2, NULL);
	out[n++] = (uint8_t)(code >> 8);
	out[n++] = (uint8_t)code;
	memcpy(out + n, reason, rlen);
	return n + rlen;
}

/*
 * Follow the server's frames over n more bytes: only their heads are read,
 * for where each ends. With stop set, stops just after the frame in
 * progress ends. Returns the bytes taken.
 */
size_t
ws_track_feed(struct ws_track *t, const uint8_t *p, size_t n, int stop)
{
	size_t i = 0, take, ext;
	unsigned len7;
	uint64_t len;

	while (i < n) {
		if (t->left > 0) {
			take = n - i;
			if ((uint64_t)take > t->left)
				take = (size_t)t->left;
			t->left -= take;
			i += take;
		} else {
			t->head[t->head_len++] = p[i++];
			if (t->head_len == 2) {
				len7 = t->head[1] & WS_LEN7;
				ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
				t->head_want = 2 + ext + ((t->head[1] & WS_MASKED) ? 4 : 0);
			}
			if (t->head_len < 2 || t->head_len < t->head_want)
				continue;
			len7 = t->head[1] & WS_LEN7;
			len = len7;
			if (len7 == 126)
				len = (uint64_t)t->head[2] << 8 | t->head[3];
			else if (len7 == 127)
				for (len = 0, ext = 0; ext < 8; ext++)
					len = len << 8 | t->head[2 + ext];
			t->left = len;
			t->head_len = 0;
		}
		if (stop && ws_track_boundary(t))
			break;
	}
	return i;
}

/* Whether the bytes followed so far end with a whole frame. */
int
ws_track_boundary(const struct ws_track *t)
{
	return t->head_len == 0 && t->left == 0;
}
