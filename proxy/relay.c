/*
 * Moving bytes between the two sides of a connection: the response head
 * (1xx handled, then restated for the client), request and response bodies
 * in any framing (re-chunked, never passed through raw) and CONNECT
 * tunnels, always with backpressure (side_throttle).
 */
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"

/* Move held or streamed request body bytes; returns -1 after closing. */
int
relay_body_move(struct conn *c, struct conn_body *b, struct evbuffer *in, struct evbuffer *out,
                int at_eof)
{
	enum chunked_result r;
	const char *data;
	struct buf chunk;
	size_t len, used, n;
	struct evbuffer_iovec v;

	while (!b->done) {
		switch (b->in) {
		case HTTP_BODY_NONE:
			b->done = 1;
			break;
		case HTTP_BODY_LENGTH:
			n = evbuffer_get_length(in);
			if ((uint64_t)n > b->left)
				n = (size_t)b->left;
			if (n == 0 && b->left > 0)
				return 0;
			evbuffer_remove_buffer(in, out, n);
			b->left -= n;
			b->bytes += (int64_t)n;
			if (b->left == 0)
				b->done = 1;
			break;
		case HTTP_BODY_CLOSE:
			n = evbuffer_get_length(in);
			if (n > 0) {
				if (b->out == HTTP_BODY_CHUNKED) {
					char head[CHUNKED_HEAD_MAX];

					evbuffer_add(out, head, chunked_head(head, n));
					evbuffer_remove_buffer(in, out, n);
					evbuffer_add(out, "\r\n", 2);
				} else
					evbuffer_remove_buffer(in, out, n);
				b->bytes += (int64_t)n;
			}
			if (!at_eof)
				return 0;
			if (b->out == HTTP_BODY_CHUNKED)
				evbuffer_add(out, "0\r\n\r\n", 5);
			b->done = 1;
			break;
		case HTTP_BODY_CHUNKED:
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
				return 0;
			r = chunked_feed(&b->dec, v.iov_base, v.iov_len, &used, &data, &len);
			if (r == CHUNKED_ERROR) {
				c->x->error = b->dec.error;
				return -1;
			}
			if (len > 0) {
				if (b->out == HTTP_BODY_CHUNKED) {
					buf_init(&chunk);
					chunked_write(&chunk, data, len);
					evbuffer_add(out, chunk.data, chunk.len);
					buf_free(&chunk);
				} else
					evbuffer_add(out, data, len);
				b->bytes += (int64_t)len;
			}
			evbuffer_drain(in, used);
			if (r == CHUNKED_DONE) {
				if (b->out == HTTP_BODY_CHUNKED)
					evbuffer_add(out, "0\r\n\r\n", 5);
				b->done = 1;
			}
			break;
		}
	}
	return 0;
}

/*
 * 101 to a WebSocket upgrade: the response goes to the client restating
 * the upgrade, and from then on the connection relays bytes both ways,
 * the client's through websocket.c when the decision inspects them.
 */
static void
relay_upgrade(struct conn *c)
{
	enum http_body out;
	struct buf head;

	if (c->x->decision.ws_inspect && websocket_accept(c) == -1)
		return;
	c->x->resp_parsed = 1;
	c->x->status = 101;
	buf_init(&head);
	if (http_response_serialize(&c->x->resp, c->x->req.version, HTTP_SER_UPGRADE, &head,
	                            &out) == -1) {
		buf_free(&head);
		respond_error(c, 502, "Bad Gateway", "upgrade response cannot be forwarded");
		return;
	}
	c->flags |= CONN_F_RESP_STARTED | CONN_F_CLIENT_CLOSE;
	side_send(&c->client, head.data, head.len);
	buf_free(&head);
	conn_tunnel(c);
}

/* Parse the response head; 100 Continue and other 1xx are handled here. */
void
relay_read_response(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up.bev);
	size_t len, want;
	enum http_body out;
	enum http_parse r;
	const char *data;
	struct buf head;
	int flags = 0;

	while (!c->x->resp_parsed && (len = evbuffer_get_length(in)) > 0) {
		want = len <= c->e->http.head ? len : c->e->http.head + 1;
		if ((data = (const char *)evbuffer_pullup(in, (ev_ssize_t)want)) == NULL) {
			conn_close(c, "cannot read the response head");
			return;
		}
		r = http_parse_response(data, want, &c->e->http, c->x->req.method_id, &c->x->resp);
		if (r == HTTP_PARSE_INCOMPLETE)
			return;
		if (r == HTTP_PARSE_ERROR) {
			respond_error(c, 502, "Bad Gateway", c->x->resp.error);
			return;
		}
		evbuffer_drain(in, c->x->resp.head_len);
		if (c->x->resp.status == 101 && c->x->upgrade) {
			relay_upgrade(c);
			return;
		}
		if (c->x->resp.status >= 100 && c->x->resp.status < 200) {
			/*
			 * Interim: pass 100 on when the client asked for it; drop the
			 * rest. An upstream that sends nothing else would otherwise
			 * hold the exchange open for ever, its timeout renewed each time.
			 */
			if (++c->x->interim > RELAY_MAX_INTERIM) {
				respond_error(c, 502, "Bad Gateway", "too many interim responses");
				return;
			}
			if (c->x->resp.status == 100 && (c->x->req.flags & HTTP_F_EXPECT_CONTINUE))
				respond_continue(c);
			http_msg_free(&c->x->resp);
			http_msg_init(&c->x->resp);
			continue;
		}
		c->x->resp_parsed = 1;
	}
	if (!c->x->resp_parsed)
		return;
	c->x->status = c->x->resp.status;
	if (!(c->flags & CONN_F_CLIENT_CLOSE) && (c->x->resp.flags & HTTP_F_KEEP_ALIVE) &&
	    !c->e->draining)
		flags |= HTTP_SER_KEEP_ALIVE;
	buf_init(&head);
	if (http_response_serialize(&c->x->resp, c->x->req.version, flags, &head, &out) == -1) {
		buf_free(&head);
		respond_error(c, 502, "Bad Gateway", "response cannot be forwarded to this client");
		return;
	}
	if (!(flags & HTTP_SER_KEEP_ALIVE) || out == HTTP_BODY_CLOSE)
		c->flags |= CONN_F_CLIENT_CLOSE;
	c->flags |= CONN_F_RESP_STARTED;
	memset(&c->x->resp_body, 0, sizeof c->x->resp_body);
	c->x->resp_body.in = c->x->resp.body;
	c->x->resp_body.out = out;
	c->x->resp_body.left = c->x->resp.body == HTTP_BODY_LENGTH ? c->x->resp.length : 0;
	chunked_init(&c->x->resp_body.dec, &c->e->http);
	relay_pump_head(c, head.data, head.len);
	buf_free(&head);
}

/*
 * Move what can be moved in the current state, both directions. A
 * response head (head, len) goes out in the same write as the first body
 * bytes: one segment, one system call.
 */
static void
relay_move(struct conn *c, const void *head, size_t len)
{
	struct evbuffer *cin, *uin;
	struct bufferevent *cb = c->client.bev, *ub = c->up.bev;

	if (c->state == CONN_TUNNEL && c->x->ws != NULL) {
		websocket_pump(c);
		return;
	}
	if (c->state == CONN_TUNNEL) {
		cin = bufferevent_get_input(cb);
		uin = bufferevent_get_input(ub);
		c->x->req_body.bytes += (int64_t)evbuffer_get_length(cin);
		c->x->resp_body.bytes += (int64_t)evbuffer_get_length(uin);
		side_send_buffer(&c->up, cin);
		side_send_buffer(&c->client, uin);
		side_throttle(&c->client, &c->up, conn_high_mark(c));
		side_throttle(&c->up, &c->client, conn_high_mark(c));
		return;
	}
	if (c->state != CONN_EXCHANGE)
		return;
	cin = bufferevent_get_input(cb);
	if (!c->x->req_body.done) {
		if (relay_body_move(c, &c->x->req_body, cin, c->e->scratch, c->client.eof) == -1) {
			evbuffer_drain(c->e->scratch, evbuffer_get_length(c->e->scratch));
			respond_error(c, 400, "Bad Request", "malformed chunked request body");
			return;
		}
		side_send_buffer(&c->up, c->e->scratch);
	}
	if (!c->x->req_body.done && c->client.eof) {
		conn_close(c, "client closed during the request body");
		return;
	}
	if (c->x->req_body.done) {
		/* Pipelined bytes wait for this exchange, but only so many. */
		if (evbuffer_get_length(cin) > c->e->http.head)
			side_read(&c->client, 0);
	} else
		side_throttle(&c->client, &c->up, conn_high_mark(c));
	if (!c->x->resp_parsed)
		return;
	uin = bufferevent_get_input(ub);
	if (len > 0)
		evbuffer_add(c->e->scratch, head, len);
	if (!c->x->resp_body.done &&
	    relay_body_move(c, &c->x->resp_body, uin, c->e->scratch, c->up.eof) == -1) {
		evbuffer_drain(c->e->scratch, evbuffer_get_length(c->e->scratch));
		conn_close(c, "malformed chunked response body");
		return;
	}
	side_send_buffer(&c->client, c->e->scratch);
	if (!c->x->resp_body.done && c->up.eof) {
		c->x->error = "upstream closed during the response body";
		conn_flush_close(c);
		return;
	}
	side_throttle(&c->up, &c->client, conn_high_mark(c));
	if (c->x->resp_body.done && c->x->req_body.done)
		conn_exchange_done(c);
}

/* Half-close the peer's write side once everything for it is written. */
void
relay_tunnel_eof(struct conn *c, struct conn_side *s)
{
	s->eof = 1;
	relay_pump(c);
	if (c->client.eof && c->up.eof) {
		conn_close(c, "tunnel closed");
		return;
	}
	if (!s->peer->plain) {
		/* TLS has no half-close: write what is queued, then close. */
		side_read(s, 0);
		if (evbuffer_get_length(bufferevent_get_output(s->peer->bev)) == 0)
			conn_close(c, "tunnel closed");
		else
			c->flags |= CONN_F_CLOSE_FLUSHED;
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(s->peer->bev)) == 0)
		shutdown(bufferevent_getfd(s->peer->bev), SHUT_WR);
}

/* Move what can be moved (relay_move), then count what the buffers hold. */
void
relay_pump_head(struct conn *c, const void *head, size_t len)
{
	relay_move(c, head, len);
	conn_account(c);
}

void
relay_pump(struct conn *c)
{
	relay_pump_head(c, NULL, 0);
}
