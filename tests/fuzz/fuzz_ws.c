/*
 * Fuzzes the WebSocket frame reader (proxy/http/ws.c) and the GraphQL-over-
 * WebSocket message classifier (policy/graphql_ws.c). The first byte picks
 * what the rest is: client frames (fed in pieces the second byte sizes,
 * with a message bound from the third), server frames for the boundary
 * follower, one graphql-transport-ws or graphql-ws message, or client
 * frames whose text messages are classified as egressd does. Checks:
 * every byte given is read or an error stops the reader for good, a
 * message is within its bound and (text) valid UTF-8, a control frame is
 * at most 125 bytes, a message written back as a frame of ours reads back
 * the same, the boundary follower agrees fed whole and byte by byte, and a
 * message's class is a known one and stable.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "ws.h"

#define FUZZ_MAX_INPUT (64 * 1024)

static const uint8_t fuzz_mask[4] = {0xa5, 0x01, 0x7e, 0xc3};

static void
fuzz_classify(enum gql_ws_proto proto, const char *s, size_t len)
{
	struct gql_ws_msg m1, m2;
	enum gql_ws_kind k;

	k = graphql_ws_classify(proto, s, len, &m1);
	if (k != m1.kind || (unsigned)k > GQL_WS_OPERATION || m1.reason == NULL ||
	    (unsigned)m1.gql.op > GQL_UNKNOWN ||
	    memchr(m1.gql.name, '\0', sizeof m1.gql.name) == NULL)
		abort();
	if (k != GQL_WS_OPERATION && m1.gql.op != GQL_NONE)
		abort();
	if (k == GQL_WS_OPERATION && m1.gql.op == GQL_NONE)
		abort();
	if (graphql_ws_classify(proto, s, len, &m2) != k || m2.gql.op != m1.gql.op ||
	    strcmp(m1.gql.name, m2.gql.name) != 0)
		abort();
}

/* A message handed over, written as a frame of ours, reads back the same. */
static void
fuzz_roundtrip(int opcode, const uint8_t *p, size_t n)
{
	uint8_t head[WS_HEAD_MAX], *copy;
	struct ws_reader r;
	size_t hn, used;

	copy = xmalloc(n + 1);
	memcpy(copy, p, n);
	ws_mask(copy, n, fuzz_mask);
	hn = ws_frame_head(head, opcode, n, fuzz_mask);
	ws_reader_init(&r, n);
	if (ws_reader_feed(&r, head, hn, &used) != (n == 0 ? WS_MESSAGE : WS_MORE) || used != hn)
		abort();
	if (n > 0 && (ws_reader_feed(&r, copy, n, &used) != WS_MESSAGE || used != n))
		abort();
	if (r.out_opcode != opcode || r.msg.len != n || (n > 0 && memcmp(r.msg.data, p, n) != 0))
		abort();
	ws_reader_free(&r);
	free(copy);
}

static void
fuzz_frames(const uint8_t *p, size_t n, size_t chunk, size_t max, int classify)
{
	struct ws_reader r;
	enum ws_result res;
	size_t off = 0, end, used;

	ws_reader_init(&r, max);
	while (off < n) {
		end = n - off < chunk ? n : off + chunk;
		res = ws_reader_feed(&r, p + off, end - off, &used);
		if (used > end - off)
			abort();
		off += used;
		if (res == WS_ERROR) {
			if (r.err == NULL || r.close_code < 1000 ||
			    ws_reader_feed(&r, p, n, &used) != WS_ERROR || used != 0)
				abort();
			break;
		}
		if (res == WS_MORE && off != end)
			abort();
		if (res == WS_CONTROL && (r.ctl_len > WS_CONTROL_MAX || r.out_opcode < WS_OP_CLOSE))
			abort();
		if (res != WS_MESSAGE)
			continue;
		if (r.msg.len > max || (r.out_opcode != WS_OP_TEXT && r.out_opcode != WS_OP_BINARY))
			abort();
		if (r.out_opcode == WS_OP_TEXT &&
		    !ws_utf8_valid((const uint8_t *)r.msg.data, r.msg.len))
			abort();
		fuzz_roundtrip(r.out_opcode, (const uint8_t *)r.msg.data, r.msg.len);
		if (classify && r.out_opcode == WS_OP_TEXT)
			fuzz_classify(GQL_WS_TRANSPORT, r.msg.data, r.msg.len);
	}
	ws_reader_free(&r);
}

static void
fuzz_track(const uint8_t *p, size_t n)
{
	struct ws_track a, b;
	size_t i, off;

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	if (ws_track_feed(&a, p, n, 0) != n)
		abort();
	for (i = 0; i < n; i++)
		if (ws_track_feed(&b, p + i, 1, 0) != 1)
			abort();
	if (ws_track_boundary(&a) != ws_track_boundary(&b) || a.left != b.left)
		abort();
	/* Stopping at each end takes the same bytes in more calls. */
	memset(&b, 0, sizeof b);
	for (off = 0; off < n;) {
		i = ws_track_feed(&b, p + off, n - off, 1);
		if (i == 0 || (off + i < n && !ws_track_boundary(&b)))
			abort();
		off += i;
	}
	if (ws_track_boundary(&a) != ws_track_boundary(&b))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 3 || size > FUZZ_MAX_INPUT)
		return 0;
	/* An exact-size copy, so reading one byte too far is caught. */
	s = xmalloc(size - 3 > 0 ? size - 3 : 1);
	memcpy(s, data + 3, size - 3);
	switch (data[0] % 5) {
	case 0:
		fuzz_frames((const uint8_t *)s, size - 3, (size_t)data[1] + 1, (size_t)data[2] * 64,
		            0);
		break;
	case 1:
		fuzz_track((const uint8_t *)s, size - 3);
		break;
	case 2:
		fuzz_classify(GQL_WS_TRANSPORT, s, size - 3);
		break;
	case 3:
		fuzz_classify(GQL_WS_LEGACY, s, size - 3);
		break;
	default:
		fuzz_frames((const uint8_t *)s, size - 3, (size_t)data[1] + 1, FUZZ_MAX_INPUT, 1);
		break;
	}
	free(s);
	return 0;
}
