/*
 * A WebSocket egressd reads: one the policy allowed only with every client
 * message inspected (decision.ws_inspect: a GraphQL subprotocol to a host
 * the allowlist does not name). The upgrade went up without extensions;
 * the 101 must choose a GraphQL subprotocol and no extension, so frames
 * stay readable. From then on the server's bytes reach the client
 * untouched (only where its frames end is followed) and the client's are
 * read frame by frame (ws.c): a message is held until it is whole and
 * classified, then sent on as one masked frame of egressd's own. A message
 * the policy refuses never goes up: the client gets a close frame (4403),
 * the upstream is closed, and the refusal is audited; each operation is
 * one `websocket` audit event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <openssl/rand.h>

#include "conn_int.h"
#include "ws.h"

struct websocket {
	struct ws_reader rd;  /* client to server, read into messages */
	struct ws_track down; /* server to client, relayed as it comes */
	enum gql_ws_proto proto;
};

/* The bytes of a client message being read, held until it is whole. */
size_t
websocket_held(const struct websocket *ws)
{
	return ws->rd.msg.len;
}

void
websocket_free(struct websocket *ws)
{
	if (ws == NULL)
		return;
	ws_reader_free(&ws->rd);
	free(ws);
}

/*
 * One `websocket` audit event: an operation, or a message or frame
 * refused. -1 when its line cannot be written.
 */
static int
websocket_audit(struct conn *c, const struct decision *d)
{
	struct audit_event ev;
	char addr[64];

	audit_event_init(&ev);
	ev.event = "websocket";
	ev.action = policy_action_name(d->action);
	ev.rule = d->rule;
	ev.source = d->source;
	ev.reason = d->reason;
	ev.mode = conn_mode(c);
	ev.client = c->client_addr;
	ev.host = c->x->host.name;
	ev.port = c->x->port;
	ev.scheme = (c->flags & CONN_F_TLS) ? "https" : "http";
	ev.path = c->x->path;
	if (c->upstream != NULL) {
		addr_format(&c->upstream->addr, addr, sizeof addr);
		ev.addr = addr;
	}
	if (d->graphql_present)
		ev.graphql = &d->gql;
	return audit_write(c->e->audit, &ev);
}

/*
 * The 101 to an inspected upgrade: it must choose one GraphQL subprotocol
 * (the messages are read by its rules) and no extension (none was
 * offered; a compressed frame could not be read). Returns -1 after
 * answering 502 when it does not.
 */
int
websocket_accept(struct conn *c)
{
	const struct http_msg *r = &c->x->resp;
	const struct http_header *h;
	const char *proto = NULL;
	struct websocket *ws;
	enum gql_ws_proto p;
	size_t i, n = 0;

	if (r->fields & HF_BIT(HF_SEC_WEBSOCKET_EXTENSIONS)) {
		respond_error(c, 502, "Bad Gateway",
		              "the server negotiated a WebSocket extension that was not offered");
		return -1;
	}
	for (i = 0; i < r->nheaders && (r->fields & HF_BIT(HF_SEC_WEBSOCKET_PROTOCOL)); i++) {
		h = &r->headers[i];
		if (h->id == HF_SEC_WEBSOCKET_PROTOCOL) {
			proto = h->value;
			n++;
		}
	}
	if (n != 1 || graphql_ws_proto(proto, strlen(proto), &p) == -1) {
		respond_error(c, 502, "Bad Gateway",
		              "the server chose no GraphQL WebSocket subprotocol "
		              "(graphql-transport-ws, graphql-ws)");
		return -1;
	}
	ws = xcalloc(1, sizeof *ws);
	ws_reader_init(&ws->rd, policy_config(c->policy)->max_graphql_body);
	ws->proto = p;
	c->x->ws = ws;
	return 0;
}

/* The server's bytes to the client, as they are, their frame ends followed. */
static void
websocket_down(struct conn *c)
{
	struct evbuffer *uin = bufferevent_get_input(c->up.bev);
	struct evbuffer_iovec v;

	while (evbuffer_peek(uin, -1, NULL, &v, 1) == 1 && v.iov_len > 0) {
		ws_track_feed(&c->x->ws->down, v.iov_base, v.iov_len, 0);
		c->x->resp_body.bytes += (int64_t)v.iov_len;
		evbuffer_remove_buffer(uin, c->e->scratch, v.iov_len);
	}
	side_send_buffer(&c->client, c->e->scratch);
}

/*
 * End the connection with a close frame of ours to the client. It can
 * only start where a server frame ends: the frame in progress is finished
 * with what is here of it, and if that is not enough the client sees the
 * connection cut instead. The upstream is closed at once, so nothing more
 * of the client's reaches it.
 */
static void
websocket_close(struct conn *c, unsigned code, const char *text, const char *error)
{
	struct websocket *ws = c->x->ws;
	struct evbuffer *uin = bufferevent_get_input(c->up.bev);
	uint8_t frame[WS_CLOSE_FRAME_MAX];
	struct evbuffer_iovec v;
	size_t n;

	while (!ws_track_boundary(&ws->down) && evbuffer_peek(uin, -1, NULL, &v, 1) == 1 &&
	       v.iov_len > 0) {
		n = ws_track_feed(&ws->down, v.iov_base, v.iov_len, 1);
		c->x->resp_body.bytes += (int64_t)n;
		evbuffer_remove_buffer(uin, c->e->scratch, n);
	}
	side_send_buffer(&c->client, c->e->scratch);
	if (ws_track_boundary(&ws->down))
		side_send(&c->client, frame, ws_close_frame(frame, code, text));
	c->x->error = error;
	conn_audit(c); /* the upgrade's own event, while it still has its upstream */
	conn_up_detach(c, 0);
	conn_flush_close(c);
}

/* Send a message or control frame up as one masked frame; payload is masked in place. */
static int
websocket_send(struct conn *c, int opcode, uint8_t *payload, size_t len)
{
	uint8_t head[WS_HEAD_MAX], mask[4];
	size_t n;

	/* RFC 6455 §5.3: a fresh mask the client cannot predict, for every frame. */
	if (RAND_bytes(mask, sizeof mask) != 1) {
		conn_close(c, "no random bytes for a WebSocket mask");
		return -1;
	}
	n = ws_frame_head(head, opcode, len, mask);
	ws_mask(payload, len, mask);
	evbuffer_add(c->e->scratch, head, n);
	evbuffer_add(c->e->scratch, payload, len);
	c->x->req_body.bytes += (int64_t)(n + len);
	side_send_buffer(&c->up, c->e->scratch);
	return 0;
}

/* A whole data message: decide it, audit it, send it up or refuse it. */
static int
websocket_message(struct conn *c)
{
	struct websocket *ws = c->x->ws;
	struct gql_ws_msg m;
	struct decision d;
	char text[WS_CONTROL_MAX - 1];

	if (ws->rd.out_opcode == WS_OP_BINARY) {
		memset(&m, 0, sizeof m);
		m.kind = GQL_WS_INVALID;
		m.reason = "binary message";
	} else
		graphql_ws_classify(ws->proto, ws->rd.msg.data, ws->rd.msg.len, &m);
	policy_decide_ws_message(c->policy, &m, &d);
	/* Its line comes first: a message goes up only once the log keeps it. */
	if (m.kind != GQL_WS_CONTROL &&
	    (audit_refusing(c->e->audit) ||
	     (websocket_audit(c, &d) == -1 && audit_refusing(c->e->audit)))) {
		audit_refused(c->e->audit);
		audit_refusal(c->e->audit, text, sizeof text);
		websocket_close(c, WS_CLOSE_TRY_LATER, text,
		                "WebSocket message refused: the audit log cannot be written");
		return -1;
	}
	if (d.action == ACTION_BLOCK) {
		snprintf(text, sizeof text, "egressd: message refused (rule %s)", d.rule);
		websocket_close(c, WS_CLOSE_POLICY, text,
		                "WebSocket message refused by the policy");
		return -1;
	}
	return websocket_send(c, ws->rd.out_opcode, (uint8_t *)ws->rd.msg.data, ws->rd.msg.len);
}

/* Frames egressd cannot read end the connection, whatever onViolation says. */
static void
websocket_frame_error(struct conn *c)
{
	struct ws_reader *rd = &c->x->ws->rd;
	struct decision d;

	memset(&d, 0, sizeof d);
	d.action = ACTION_BLOCK;
	str_copy(d.rule, sizeof d.rule, "websocket-frame");
	str_copy(d.source, sizeof d.source, "builtin");
	d.list = POLICY_LIST_WEBSOCKET;
	snprintf(d.reason, sizeof d.reason, "WebSocket frame refused: %s", rd->err);
	(void)websocket_audit(c, &d);
	websocket_close(c, (unsigned)rd->close_code, rd->err, rd->err);
}

/*
 * Relay both ways: the server's bytes as they come, the client's one
 * whole message at a time. The client is read only while the upstream's
 * queue is below SIDE_HIGH_MARK; a message held meanwhile is bounded by
 * network.maxGraphqlBody.
 */
void
websocket_pump(struct conn *c)
{
	struct websocket *ws = c->x->ws;
	struct evbuffer *cin = bufferevent_get_input(c->client.bev);
	struct evbuffer *uout = bufferevent_get_output(c->up.bev);
	struct evbuffer_iovec v;
	enum ws_result r;
	size_t used;

	websocket_down(c);
	while (evbuffer_get_length(uout) <= conn_high_mark(c) &&
	       evbuffer_peek(cin, -1, NULL, &v, 1) == 1 && v.iov_len > 0) {
		if (ws->rd.closed) {
			/* After its close frame a client sends nothing more (§5.5.1). */
			evbuffer_drain(cin, evbuffer_get_length(cin));
			break;
		}
		r = ws_reader_feed(&ws->rd, v.iov_base, v.iov_len, &used);
		evbuffer_drain(cin, used);
		/* Past the memory budget, a large message being read is not waited for. */
		if (ws->rd.msg.len > SIDE_TIGHT_MARK && c->e->buffered > c->e->lim.max_buffered) {
			c->e->overloaded(c->e, OVERLOAD_MEMORY);
			c->e->ov[OVERLOAD_MEMORY].shed++;
			c->e->ov[OVERLOAD_MEMORY].ep_shed++;
			websocket_close(c, WS_CLOSE_TRY_LATER, "egressd is over its memory budget",
			                "WebSocket message refused: over the memory budget");
			return;
		}
		if (r == WS_ERROR) {
			websocket_frame_error(c);
			return;
		}
		if (r == WS_CONTROL &&
		    websocket_send(c, ws->rd.out_opcode, ws->rd.ctl, ws->rd.ctl_len) == -1)
			return;
		if (r == WS_MESSAGE && websocket_message(c) == -1)
			return;
	}
	side_throttle(&c->client, &c->up, conn_high_mark(c));
	side_throttle(&c->up, &c->client, conn_high_mark(c));
}
