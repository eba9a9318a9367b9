/*
 * Tests for proxy/http/ws.c, the WebSocket frame code. Client frames come from
 * tests/data/ws_frames.tsv (messages, fragments, control frames, each
 * protocol error with its close code), each case fed whole, byte by byte
 * and in small chunks, which must all give the same events. The frames
 * egressd writes (heads, masks, close frames) and the following of a
 * server's frame boundaries are tested here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ws.h"
#include "tsv.h"

static const uint8_t test_mask[4] = {0x37, 0xfa, 0x21, 0x3d};

/* Append one frame described by a TSV token (see ws_frames.tsv) to out. */
static void
test_frame(struct buf *out, char *tok)
{
	char *colon = strchr(tok, ':'), *spec = tok, *pl;
	uint8_t head[WS_HEAD_MAX + 8], *body;
	int opcode, fin = 1, masked = 1, rsv = 0, width = 0, high = 0;
	size_t len, n, i;

	if (colon == NULL)
		fail_msg("bad frame token '%s'", tok);
	*colon = '\0';
	pl = colon + 1;
	if (strcmp(spec, "raw") == 0) {
		for (i = 0; pl[i] != '\0' && pl[i + 1] != '\0'; i += 2)
			buf_addc(out,
			         (char)(text_hex_value(pl[i]) << 4 | text_hex_value(pl[i + 1])));
		return;
	}
	opcode = text_hex_value(spec[0]);
	len = tsv_unescape(pl);
	for (spec++; *spec != '\0'; spec++) {
		switch (*spec) {
		case 'n':
			fin = 0;
			break;
		case 'u':
			masked = 0;
			break;
		case 'r':
			rsv = 0x40;
			break;
		case 'w':
			width = 16;
			break;
		case 'W':
			width = 64;
			break;
		case 'H':
			high = 1;
			break;
		case 'z':
			break;
		default:
			fail_msg("bad frame flag '%c'", *spec);
		}
	}
	if (strchr(tok, 'z') != NULL) {
		len = strtoul(pl, NULL, 10);
		body = xmalloc(len + 1);
		memset(body, 'a', len);
	} else
		body = (uint8_t *)xstrndup(pl, len);
	n = ws_frame_head(head, opcode, len, NULL);
	if (width == 16 || (width == 64 || high)) {
		n = 2;
		if (width == 16) {
			head[1] = 126;
			head[n++] = (uint8_t)(len >> 8);
			head[n++] = (uint8_t)len;
		} else {
			head[1] = 127;
			for (i = 0; i < 8; i++)
				head[n++] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
			if (high)
				head[2] |= 0x80;
		}
	}
	head[0] = (uint8_t)((fin ? 0x80 : 0) | rsv | opcode);
	if (masked) {
		head[1] |= 0x80;
		memcpy(head + n, test_mask, 4);
		n += 4;
		ws_mask(body, len, test_mask);
	}
	buf_add(out, head, n);
	buf_add(out, body, len);
	free(body);
}

/* Bytes as a TSV payload is written: printable ASCII as is, the rest \xHH. */
static void
test_show(struct buf *b, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '|')
			buf_addc(b, (char)p[i]);
		else
			buf_printf(b, "\\x%02x", p[i]);
	}
}

static void
test_event(struct buf *ev, const char *kind, int opcode, const uint8_t *p, size_t n)
{
	if (ev->len > 0)
		buf_addc(ev, '|');
	if (n > 32) {
		buf_printf(ev, "%s%d#%zu", kind, opcode, n);
		return;
	}
	buf_printf(ev, "%s%d:", kind, opcode);
	test_show(ev, p, n);
}

/* Feed in pieces of chunk bytes (0: all at once); the events as one string. */
static void
test_feed(const struct buf *in, size_t max, size_t chunk, struct buf *ev)
{
	const uint8_t *p = (const uint8_t *)in->data;
	struct ws_reader r;
	size_t off = 0, end, used;
	enum ws_result res;

	ws_reader_init(&r, max);
	buf_reset(ev);
	while (off < in->len) {
		end = chunk == 0 || in->len - off < chunk ? in->len : off + chunk;
		while (off < end) {
			res = ws_reader_feed(&r, p + off, end - off, &used);
			assert_true(used <= end - off);
			off += used;
			if (res == WS_ERROR) {
				if (ev->len > 0)
					buf_addc(ev, '|');
				buf_printf(ev, "err%d:%s", r.close_code, r.err);
				/* Sticky: nothing more is read. */
				assert_int_equal(ws_reader_feed(&r, p, in->len, &used), WS_ERROR);
				assert_int_equal(used, 0);
				ws_reader_free(&r);
				return;
			}
			if (res == WS_MESSAGE) {
				assert_true(r.msg.len <= max);
				test_event(ev, "msg", r.out_opcode, (const uint8_t *)r.msg.data,
				           r.msg.len);
			} else if (res == WS_CONTROL)
				test_event(ev, "ctl", r.out_opcode, r.ctl, r.ctl_len);
			else
				assert_int_equal(off, end); /* WS_MORE: every byte read */
		}
	}
	ws_reader_free(&r);
}

/* Whether got matches want: events equal, an error's reason a substring. */
static int
test_events_match(const char *got, const char *want)
{
	const char *g = strrchr(got, '|'), *w = strrchr(want, '|'), *gc, *wc;

	if (strcmp(want, "-") == 0)
		return got[0] == '\0';
	g = g ? g + 1 : got;
	w = w ? w + 1 : want;
	if (strncmp(w, "err", 3) != 0)
		return strcmp(got, want) == 0;
	if ((size_t)(g - got) != (size_t)(w - want) || strncmp(got, want, (size_t)(g - got)) != 0)
		return 0;
	gc = strchr(g, ':');
	wc = strchr(w, ':');
	return gc != NULL && wc != NULL && gc - g == wc - w &&
	       strncmp(g, w, (size_t)(gc - g)) == 0 && strstr(gc + 1, wc + 1) != NULL;
}

static void
test_table(void **state)
{
	static const size_t chunks[] = {0, 1, 3};
	char **f, *p, *tok;
	unsigned lineno;
	struct buf in, ev;
	size_t i;
	struct tsv t;

	(void)state;
	buf_init(&in);
	buf_init(&ev);
	tsv_open(&t, "ws_frames.tsv", 3, 3);
	while ((f = tsv_next(&t)) != NULL) {
		lineno = t.lineno;
		buf_reset(&in);
		for (p = f[1]; (tok = strsep(&p, "|")) != NULL;)
			test_frame(&in, tok);
		for (i = 0; i < EG_NELEM(chunks); i++) {
			test_feed(&in, strtoul(f[0], NULL, 10), chunks[i], &ev);
			if (!test_events_match(buf_cstr(&ev), f[2]))
				fail_msg("ws_frames.tsv:%u (chunks of %zu): got '%s', want '%s'",
				         lineno, chunks[i], buf_cstr(&ev), f[2]);
		}
	}
	buf_free(&in);
	buf_free(&ev);
	print_message("%u table cases\n", t.rows);
	assert_true(t.rows >= 60);
}

/* Frames egressd writes: the shortest length encoding, then read back. */
static void
test_write(void **state)
{
	static const uint64_t lens[] = {0, 1, 125, 126, 65535, 65536, 100000};
	static const size_t heads[] = {2, 2, 2, 4, 4, 10, 10};
	uint8_t head[WS_HEAD_MAX], frame[WS_CLOSE_FRAME_MAX];
	struct ws_reader r;
	struct buf b;
	uint8_t *payload;
	size_t i, n, used;

	(void)state;
	for (i = 0; i < EG_NELEM(lens); i++) {
		assert_int_equal(ws_frame_head(head, WS_OP_TEXT, lens[i], NULL), heads[i]);
		assert_int_equal(head[0], 0x81);
		assert_int_equal(head[1] & 0x80, 0);
		n = ws_frame_head(head, WS_OP_BINARY, lens[i], test_mask);
		assert_int_equal(n, heads[i] + 4);
		assert_int_equal(head[1] & 0x80, 0x80);
		assert_memory_equal(head + n - 4, test_mask, 4);
		/* A masked frame of ours reads back as the payload it carried. */
		payload = xmalloc(lens[i] + 1);
		memset(payload, 'x', lens[i]);
		buf_init(&b);
		buf_add(&b, head, n);
		ws_mask(payload, lens[i], test_mask);
		buf_add(&b, payload, lens[i]);
		ws_reader_init(&r, 100000);
		assert_int_equal(ws_reader_feed(&r, (uint8_t *)b.data, b.len, &used), WS_MESSAGE);
		assert_int_equal(used, b.len);
		assert_int_equal(r.out_opcode, WS_OP_BINARY);
		assert_int_equal(r.msg.len, lens[i]);
		assert_true(lens[i] == 0 ||
		            (r.msg.data[0] == 'x' && r.msg.data[lens[i] - 1] == 'x'));
		ws_reader_free(&r);
		buf_free(&b);
		free(payload);
	}

	/* The close frame egressd sends: unmasked, code first, reason after. */
	n = ws_close_frame(frame, WS_CLOSE_POLICY, "refused");
	assert_int_equal(n, 2 + 2 + 7);
	assert_memory_equal(frame, "\x88\x09\x11\x33refused", n);
	/* A reason too long for a control frame is cut at a character boundary. */
	buf_init(&b);
	for (i = 0; i < 80; i++)
		buf_adds(&b, "\xc3\xa9");
	n = ws_close_frame(frame, 1000, b.data);
	assert_int_equal(frame[1], 2 + 122);
	assert_int_equal(n, 2 + 2 + 122);
	assert_true(ws_utf8_valid(frame + 4, n - 4));
	buf_free(&b);
	assert_true(ws_close_code_valid(1000));
	assert_true(ws_close_code_valid(4403));
	assert_false(ws_close_code_valid(1005));
	assert_false(ws_close_code_valid(999));
}

/* A server's frames: where each ends, fed whole, by bytes, and stopping at ends. */
static void
test_track(void **state)
{
	static const uint64_t lens[] = {0, 3, 125, 126, 300, 65536};
	struct ws_track t;
	uint8_t head[WS_HEAD_MAX];
	struct buf b;
	size_t ends[EG_NELEM(lens)], i, n, off, nends;

	(void)state;
	buf_init(&b);
	for (i = 0; i < EG_NELEM(lens); i++) {
		/* Unmasked as servers send, but a masked one is followed too. */
		n = ws_frame_head(head, WS_OP_TEXT, lens[i], i == 2 ? test_mask : NULL);
		buf_add(&b, head, n);
		for (off = 0; off < lens[i]; off++)
			buf_addc(&b, 'y');
		ends[i] = b.len;
	}
	memset(&t, 0, sizeof t);
	assert_true(ws_track_boundary(&t));
	assert_int_equal(ws_track_feed(&t, (uint8_t *)b.data, b.len, 0), b.len);
	assert_true(ws_track_boundary(&t));

	memset(&t, 0, sizeof t);
	for (off = 0, nends = 0; off < b.len; off++) {
		assert_int_equal(ws_track_feed(&t, (uint8_t *)b.data + off, 1, 0), 1);
		if (nends < EG_NELEM(ends) && off + 1 == ends[nends]) {
			assert_true(ws_track_boundary(&t));
			nends++;
		} else
			assert_false(ws_track_boundary(&t));
	}
	assert_int_equal(nends, EG_NELEM(ends));

	/* Stopping: each call ends where a frame does. */
	memset(&t, 0, sizeof t);
	for (off = 0, i = 0; off < b.len; i++) {
		off += ws_track_feed(&t, (uint8_t *)b.data + off, b.len - off, 1);
		assert_int_equal(off, ends[i]);
		assert_true(ws_track_boundary(&t));
	}
	/* Inside a frame, a stop leaves it unfinished when the bytes run out. */
	memset(&t, 0, sizeof t);
	assert_int_equal(ws_track_feed(&t, (uint8_t *)b.data + ends[0], 3, 1), 3);
	assert_false(ws_track_boundary(&t));
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_write),
	    cmocka_unit_test(test_track),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
