/*
 * Moving bytes between the two sides of a connection: the response head
 * (1xx handled, then restated for the client), request and response bodies
 * in any framing (re-chunked, never passed through raw) and CONNECT
 * tunnels, always with backpressure: a side stops being read while its
 * peer has more than RELAY_HIGH_MARK queued, and resumes from the peer's
 * write callback at RELAY_LOW_MARK.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy.h"

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

/* Backpressure: stop reading src while dst has too much queued. */
void
relay_throttle(struct conn_side *src, struct conn_side *dst)
{
	if (src->bev == NULL || dst->bev == NULL)
		return;
	if (evbuffer_get_length(bufferevent_get_output(dst->bev)) > RELAY_HIGH_MARK) {
		if (!src->throttled) {
			side_read(src, 0);
			src->throttled = 1;
		}
	} else if (src->throttled) {
		src->throttled = 0;
		side_read(src, 1);
	}
}

/*
 * A TLS side encrypts each contiguous piece of its output as one record
 * or more, at once. Pieces of whole records' size (a response head and
 * its body together, a streamed body in 16 KiB runs) make full records,
 * not one per fragment the bytes happened to arrive in.
 */
static void
relay_send_tls(struct evbuffer *out, struct evbuffer *src)
{
	size_t n;

	while ((n = evbuffer_get_length(src)) > 0) {
		if (n > RELAY_TLS_RECORD)
			n = RELAY_TLS_RECORD;
		if (evbuffer_pullup(src, (ev_ssize_t)n) == NULL ||
		    evbuffer_remove_buffer(src, out, n) <= 0) {
			evbuffer_add_buffer(out, src);
			return;
		}
	}
}

/*
 * Send bytes to a side. When nothing is queued for it, they are written to
 * the socket at once and only what the kernel does not take is queued:
 * queueing first would register the socket for writability and write on
 * the next loop iteration, two epoll_ctl calls and a round of latency for
 * every response. TLS sides write their records themselves (tlsio.c).
 */
void
relay_send_buffer(struct conn_side *s, struct evbuffer *src)
{
	struct evbuffer *out = bufferevent_get_output(s->bev);
	size_t n = evbuffer_get_length(src);

	if (n == 0)
		return;
	if (!s->plain) {
		relay_send_tls(out, src);
		return;
	}
	if (evbuffer_get_length(out) == 0)
		(void)evbuffer_write(src, bufferevent_getfd(s->bev));
	/* Whatever is left, an error included, goes through the bufferevent. */
	evbuffer_add_buffer(out, src);
}

void
relay_send(struct conn_side *s, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(s->bev);
	ssize_t w = 0;

	if (len == 0)
		return;
	if (s->plain && evbuffer_get_length(out) == 0) {
		w = write(bufferevent_getfd(s->bev), data, len);
		if (w < 0)
			w = 0;
	}
	if ((size_t)w < len)
		evbuffer_add(out, (const char *)data + w, len - (size_t)w);
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
	relay_send(&c->client, head.data, head.len);
	buf_free(&head);
	forward_tunnel(c);
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
			if (c->x->resp.status == 100 &&
			    (c->x->req.flags & HTTP_F_EXPECT_CONTINUE) &&
			    !(c->flags & CONN_F_CONTINUE_SENT)) {
				evbuffer_add_printf(bufferevent_get_output(c->client.bev),
				                    "HTTP/1.1 100 Continue\r\n\r\n");
				c->flags |= CONN_F_CONTINUE_SENT;
			}
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
void
relay_pump_head(struct conn *c, const void *head, size_t len)
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
		relay_send_buffer(&c->up, cin);
		relay_send_buffer(&c->client, uin);
		relay_throttle(&c->client, &c->up);
		relay_throttle(&c->up, &c->client);
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
		relay_send_buffer(&c->up, c->e->scratch);
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
		relay_throttle(&c->client, &c->up);
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
	relay_send_buffer(&c->client, c->e->scratch);
	if (!c->x->resp_body.done && c->up.eof) {
		c->x->error = "upstream closed during the response body";
		conn_flush_close(c);
		return;
	}
	relay_throttle(&c->up, &c->client);
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

void
relay_pump(struct conn *c)
{
	relay_pump_head(c, NULL, 0);
}

/*
 * Reading plain sockets. A socket bufferevent asks the kernel how much is
 * readable (FIONREAD) before every read, one extra system call per read;
 * for plain sockets egressd reads into the bufferevent's input itself,
 * from an event of its own, and leaves the bufferevent writing. TLS sides
 * are read and written under their bufferevent by tlsio.c.
 */
#define SIDE_READ_MAX 16384 /* as a socket bufferevent reads at most */

void
side_attach(struct conn_side *s, struct event_base *base, event_callback_fn cb)
{
	if (!s->plain || s->rd != NULL)
		return;
	bufferevent_disable(s->bev, EV_READ);
	s->rd = event_new(base, bufferevent_getfd(s->bev), EV_READ | EV_PERSIST, cb, s);
	s->rd_owned = 1;
	s->rd_on = 0;
}

/* Read a side through an event someone else owns, already added. */
void
side_attach_event(struct conn_side *s, struct event *ev)
{
	s->rd = ev;
	s->rd_owned = 0;
	s->rd_on = 1;
	s->rd_has_tmo = 0;
	s->rd_bulk = 0;
}

void
side_detach(struct conn_side *s)
{
	if (s->rd != NULL && s->rd_owned)
		event_free(s->rd);
	s->rd = NULL;
	s->rd_owned = 0;
	s->rd_on = 0;
	s->rd_has_tmo = 0;
	s->rd_bulk = 0;
}

void
side_read(struct conn_side *s, int on)
{
	if (s->rd == NULL) {
		/*
		 * A TLS side: enabling an enabled filter would still make it
		 * try to decrypt, one failed SSL_read for nothing.
		 */
		if (on == ((bufferevent_get_enabled(s->bev) & EV_READ) != 0))
			return;
		if (on)
			bufferevent_enable(s->bev, EV_READ);
		else
			bufferevent_disable(s->bev, EV_READ);
		return;
	}
	if (on == s->rd_on)
		return;
	s->rd_on = on;
	if (on)
		event_add(s->rd, s->rd_has_tmo ? &s->rd_tmo : NULL);
	else
		event_del(s->rd);
}

/* Read and write inactivity timeouts, as bufferevent_set_timeouts sets them. */
void
side_timeouts(struct conn_side *s, const struct timeval *r, const struct timeval *w)
{
	if (s->rd == NULL) {
		bufferevent_set_timeouts(s->bev, r, w);
		return;
	}
	bufferevent_set_timeouts(s->bev, NULL, w);
	if (r == NULL && !s->rd_has_tmo)
		return; /* no read timeout before or after: nothing to re-arm */
	s->rd_has_tmo = r != NULL;
	if (r != NULL)
		s->rd_tmo = *r;
	if (s->rd_on)
		event_add(s->rd, s->rd_has_tmo ? &s->rd_tmo : NULL);
}

/*
 * One read into the side's input. Returns the bytes read, 0 at EOF, -1 on
 * an error (errno set), or -2 when nothing was there after all. A read
 * goes to the stack and only what came is added to the input: reserving a
 * whole read's worth in the buffer first would allocate 16 KiB per read
 * on every connection, for requests of a few hundred bytes, and leave the
 * heap fragmented between the connections that stay open. Once a read
 * fills the whole buffer a body is streaming, and reads go straight into
 * the input instead, saving the copy, until one comes back short.
 */
int
side_read_socket(struct conn_side *s)
{
	struct evbuffer *in = bufferevent_get_input(s->bev);
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	char buf[SIDE_READ_MAX];
	size_t left;
	ssize_t n;
	int nv = 0, i, err;

	/* A bufferevent keeps the end of its input frozen except while it reads. */
	evbuffer_unfreeze(in, 0);
	if (s->rd_bulk && (nv = evbuffer_reserve_space(in, SIDE_READ_MAX, v, 2)) > 0) {
		for (i = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
		}
		n = readv(bufferevent_getfd(s->bev), iov, nv);
	} else {
		nv = 0;
		n = read(bufferevent_getfd(s->bev), buf, sizeof buf);
	}
	err = errno;
	if (n > 0 && nv > 0) {
		for (i = 0, left = (size_t)n; i < nv; i++) {
			if (v[i].iov_len > left)
				v[i].iov_len = left;
			left -= v[i].iov_len;
		}
		evbuffer_commit_space(in, v, nv);
	} else if (n > 0 && evbuffer_add(in, buf, (size_t)n) == -1)
		n = -1;
	evbuffer_freeze(in, 0);
	if (n <= 0) {
		s->rd_bulk = 0;
		errno = err;
		if (n < 0 && (err == EAGAIN || err == EINTR))
			return -2;
		return n == 0 ? 0 : -1;
	}
	s->rd_bulk = n == SIDE_READ_MAX;
	return (int)n;
}
