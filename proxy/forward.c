/*
 * A decided request on its way out: an upstream is got (from the pool, or
 * resolved, guarded and connected), the request is sent re-serialised from
 * its parsed form with what is already here of its body, a CONNECT or an
 * upgraded exchange becomes a byte relay, and a request that met a pooled
 * connection the server had just closed is sent once more on a fresh one.
 */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"

static void forward_upstream_cb(void *, struct upstream_result *);

/* Get an upstream for the decided request: pooled, or resolved, guarded and connected. */
void
forward_start(struct conn *c)
{
	/*
	 * The client stays readable: bytes that come while connecting make
	 * the read callback stop reading. Toggling it here would cost two
	 * epoll_ctl calls on every request a pooled upstream serves at once.
	 */
	conn_set_state(c, CONN_CONNECTING);
	c->job = upstream_get(c->e, c->policy, &c->x->host, c->x->port, &c->x->decision,
	                      (c->flags & CONN_F_TLS) ? UPSTREAM_F_TLS : 0, forward_upstream_cb, c);
}

/*
 * A pooled upstream may have been closed by the server just as it was
 * reused. When nothing of the response came and no request body was
 * consumed, send the request once more on a fresh connection.
 */
int
forward_retry(struct conn *c)
{
	if (c->upstream == NULL || !c->upstream->reused || c->x->retried ||
	    c->x->req.body != HTTP_BODY_NONE || c->x->held != NULL ||
	    evbuffer_get_length(bufferevent_get_input(c->up.bev)) > 0)
		return 0;
	c->x->retried = 1;
	conn_up_detach(c, 0);
	http_msg_free(&c->x->resp);
	http_msg_init(&c->x->resp);
	conn_set_state(c, CONN_CONNECTING);
	side_read(&c->client, 0);
	c->job = upstream_get(c->e, c->policy, &c->x->host, c->x->port, &c->x->decision,
	                      UPSTREAM_F_FRESH | ((c->flags & CONN_F_TLS) ? UPSTREAM_F_TLS : 0),
	                      forward_upstream_cb, c);
	return 1;
}

static void
forward_attach(struct conn *c, struct upstream *u)
{
	c->upstream = u;
	c->up.bev = u->bev;
	c->up.eof = 0;
	c->up.throttled = 0;
	c->up.plain = !u->tls;
	bufferevent_setcb(u->bev, conn_up_read_cb, conn_up_write_cb, conn_event_cb, &c->up);
	bufferevent_setwatermark(u->bev, EV_WRITE, SIDE_LOW_MARK, 0);
	/*
	 * Writing is enabled on a socket bufferevent from its creation;
	 * enabling it again would register the socket for writability (and
	 * unregister it after) for every request a pooled upstream carries.
	 */
	if (u->rd != NULL) {
		u->rd_cb = conn_side_read;
		u->rd_arg = &c->up;
		side_attach_event(&c->up, u->rd);
	} else
		side_read(&c->up, 1);
}

/*
 * An allowed GET asking to become a WebSocket: the upgrade is passed on,
 * and a 101 turns the connection into a byte relay. Other upgrades (h2c)
 * are dropped and the request is served as plain HTTP/1.1.
 */
static int
forward_is_websocket(const struct conn *c)
{
	return (c->x->req.flags & HTTP_F_UPGRADE) && c->x->req.method_id == HTTP_M_GET &&
	       http_list_has(c->x->req.upgrade, "websocket");
}

/*
 * An upgrade whose client messages egressd will read: sent without
 * Sec-WebSocket-Extensions, so no compression hides a payload, and only
 * without a body, which the handshake does not have and nothing would
 * inspect. Returns -1 after refusing it.
 */
static int
forward_websocket_inspect(struct conn *c, int *flags)
{
	if (c->x->req.body != HTTP_BODY_NONE &&
	    !(c->x->req.body == HTTP_BODY_LENGTH && c->x->req.length == 0)) {
		respond_error(c, 400, "Bad Request", "a WebSocket upgrade carries no body");
		return -1;
	}
	*flags |= HTTP_SER_NO_WS_EXT;
	return 0;
}

/* Send the request head and what is already here of its body. */
static void
forward_send(struct conn *c)
{
	struct buf head;
	int flags = HTTP_SER_KEEP_ALIVE;

	if (c->flags & CONN_F_CONTINUE_SENT) {
		/* We answered the expectation; the upstream gets the body at once. */
		c->x->req.flags &= ~HTTP_F_EXPECT_CONTINUE;
	}
	if (forward_is_websocket(c)) {
		flags |= HTTP_SER_UPGRADE;
		c->x->upgrade = 1;
		if (c->x->decision.ws_inspect && forward_websocket_inspect(c, &flags) == -1)
			return;
	}
	buf_init(&head);
	if (http_request_serialize(&c->x->req, c->x->req.uri.path, c->x->authority, flags, &head) ==
	    -1) {
		buf_free(&head);
		respond_error(c, 400, "Bad Request", "request cannot be forwarded");
		return;
	}
	side_send(&c->up, head.data, head.len);
	buf_free(&head);
	if (c->x->held != NULL) {
		struct evbuffer *uout = bufferevent_get_output(c->up.bev);
		size_t n = evbuffer_get_length(c->x->held);
		char ch[CHUNKED_HEAD_MAX];

		/*
		 * A body held whole goes as Content-Length. A truncated one
		 * continues as a stream in its own framing: held chunked data
		 * was de-chunked, so it goes first as one chunk of ours.
		 */
		c->x->req_body.out = c->x->req_body.in;
		if (c->x->req_body.in == HTTP_BODY_CHUNKED && !c->x->req_body.done && n > 0) {
			evbuffer_add(uout, ch, chunked_head(ch, n));
			evbuffer_add_buffer(uout, c->x->held);
			evbuffer_add(uout, "\r\n", 2);
		} else
			evbuffer_add_buffer(uout, c->x->held);
	}
	conn_set_state(c, CONN_EXCHANGE);
	side_read(&c->client, 1);
	relay_pump(c);
}

static void
forward_upstream_cb(void *arg, struct upstream_result *r)
{
	struct conn *c = arg;
	char detail[256];

	c->job = NULL;
	if (r->err == UPSTREAM_E_BLOCKED) {
		c->x->decision = *r->blocked;
		respond_block(c);
		return;
	}
	if (r->err == UPSTREAM_E_TLS) {
		snprintf(detail, sizeof detail, "upstream TLS with %s:%u failed: %s",
		         c->x->host.name, c->x->port, r->detail);
		conn_audit_tls(c, r->verify ? "upstream-certificate" : "upstream-tls",
		               r->verify ? "the upstream's certificate did not verify"
		                         : "TLS with the upstream failed",
		               r->detail, NULL);
		respond_error(c, 502, "Bad Gateway", detail);
		return;
	}
	if (r->err != UPSTREAM_OK) {
		snprintf(detail, sizeof detail, "%s: %s:%u%s%s", upstream_strerror(r->err),
		         c->x->host.name, c->x->port, r->sys_errno ? ": " : "",
		         r->sys_errno ? strerror(r->sys_errno) : "");
		c->x->error = upstream_strerror(r->err);
		if (r->err == UPSTREAM_E_TIMEOUT)
			respond_error(c, 504, "Gateway Timeout", detail);
		else
			respond_error(c, 502, "Bad Gateway", detail);
		return;
	}
	/* The guard allowed the address: the decision stands as it was. */
	forward_attach(c, r->u);
	if (c->x->kind != EXCHANGE_HTTP) {
		c->x->tls = intercept_tls_mode(c);
		respond_established(c);
		c->flags |= CONN_F_RESP_STARTED;
		if (!(c->flags & CONN_F_TRANSPARENT) && c->x->tls == EXCHANGE_TLS_PASSTHROUGH) {
			/* Nothing is carried either way before the ClientHello is read. */
			side_read(&c->up, 0);
			intercept_peek_start(c);
			return;
		}
		conn_tunnel(c);
		return;
	}
	forward_send(c);
}
