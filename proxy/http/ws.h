/*
 * WebSocket frames (ws.c): the client's read into whole messages, the
 * frames egressd writes, and where the server's end. Pure code over bytes,
 * no sockets: websocket.c runs it on a connection, the tests and the fuzz
 * target on their own.
 */
#ifndef WS_H
#define WS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define WS_CONTROL_MAX     125 /* payload of a control frame */
#define WS_HEAD_MAX        14  /* 2, a 64-bit length, a mask */
#define WS_CLOSE_FRAME_MAX (WS_HEAD_MAX + WS_CONTROL_MAX)
#define WS_CLOSE_PROTOCOL  1002 /* close codes (RFC 6455 §7.4.1) */
#define WS_CLOSE_BAD_DATA  1007
#define WS_CLOSE_TOO_BIG   1009
#define WS_CLOSE_TRY_LATER 1013
#define WS_CLOSE_POLICY    4403 /* egressd refused a message */
enum ws_opcode {
	WS_OP_CONTINUATION = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa,
};
enum ws_result {
	WS_ERROR = -1, /* err and close_code set; the stream is unusable */
	WS_MORE,       /* every byte given was read: feed more */
	WS_MESSAGE,    /* a whole data message in msg */
	WS_CONTROL,    /* a control frame in ctl */
};

/* Client frames read into whole messages. */
struct ws_reader {
	size_t max; /* the longest message */
	uint8_t head[WS_HEAD_MAX];
	size_t head_len;  /* bytes of the frame head read */
	size_t head_want; /* its length, once the first two bytes tell */
	int in_payload;
	int fin;
	int opcode;
	uint8_t mask[4];
	uint64_t left;  /* payload bytes of this frame still to come */
	uint64_t pos;   /* payload bytes of this frame read */
	int msg_opcode; /* the data message being read (text, binary), or 0 */
	int msg_ready;  /* msg holds a whole message until the next feed */
	struct buf msg; /* its payload, unmasked */
	uint8_t ctl[WS_CONTROL_MAX];
	size_t ctl_len;
	int out_opcode; /* of the message or control frame handed over */
	int closed;     /* a close frame was read */
	const char *err;
	int close_code; /* the code to close with after an error */
};
/* Where the server's frames end, for a close frame of egressd's own. */
struct ws_track {
	uint8_t head[WS_HEAD_MAX];
	size_t head_len;
	size_t head_want;
	uint64_t left; /* payload bytes of this frame still to come */
};
void ws_reader_init(struct ws_reader *, size_t);
void ws_reader_free(struct ws_reader *);
enum ws_result ws_reader_feed(struct ws_reader *, const uint8_t *, size_t, size_t *);
int ws_utf8_valid(const uint8_t *, size_t);
int ws_close_code_valid(unsigned);
size_t ws_frame_head(uint8_t[WS_HEAD_MAX], int, uint64_t, const uint8_t *);
void ws_mask(uint8_t *, size_t, const uint8_t[4]);
size_t ws_close_frame(uint8_t[WS_CLOSE_FRAME_MAX], unsigned, const char *);
size_t ws_track_feed(struct ws_track *, const uint8_t *, size_t, int);
int ws_track_boundary(const struct ws_track *);

#endif
