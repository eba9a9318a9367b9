/*
 * The connection hub: one client connection, its state and the state's
 * timeout, the callbacks of both its sides, which hand each event to the
 * phase the state says (request.c reads and decides a request, forward.c
 * sends it on, relay.c moves the response and bodies, respond.c answers,
 * intercept.c and transparent.c take TLS and redirected connections), the
 * lifetime of each exchange, and its audit event. Between requests the
 * connection goes back to reading while both sides keep it alive. Every
 * exchange is audited once; every failure ends in conn_close().
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	switch (c->state) {
	case CONN_READ_HEAD:
		conn_close(c, c->x != NULL                 ? "request head timeout"
		              : (c->flags & CONN_F_SERVED) ? "idle timeout"
		                                           : "no request in time");
		return;
	case CONN_READ_BODY:
		conn_close(c, "request body timeout");
		return;
	case CONN_HANDSHAKE:
		intercept_tls_failed(c, "TLS handshake timed out");
		return;
	case CONN_PEEK:
		conn_close(c, c->x != NULL ? "no TLS ClientHello in time"
		                           : "redirected client sent nothing in time");
		return;
	default:
		conn_close(c, "timeout");
	}
}

/* Every state change goes through here: it re-arms the state's timeout. */
void
conn_set_state(struct conn *c, enum conn_state s)
{
	const struct egressd_limits *lim = &c->e->lim;
	struct timeval tv = {0, 0};
	struct timeval tmo;

	c->state = s;
	switch (s) {
	case CONN_READ_HEAD:
		/*
		 * Only a connection that was served gets to idle: a new one
		 * (or a new TLS session inside a tunnel) that sends nothing
		 * would hold a slot of --max-conns for the idle timeout.
		 */
		tv.tv_sec = c->x != NULL || !(c->flags & CONN_F_SERVED) ? lim->header_timeout
		                                                        : lim->idle_timeout;
		break;
	case CONN_READ_BODY:
		tv.tv_sec = lim->header_timeout;
		break;
	case CONN_CONNECTING:
		tv.tv_sec = lim->connect_timeout + 1; /* the job has its own timer */
		break;
	case CONN_FLUSH:
	case CONN_TLS_WAIT:
		tv.tv_sec = CONN_DRAIN_SECS;
		break;
	case CONN_HANDSHAKE:
	case CONN_PEEK:
		tv.tv_sec = lim->header_timeout;
		break;
	case CONN_EXCHANGE:
	case CONN_TUNNEL:
		/*
		 * Inactivity, through the bufferevents. In an exchange the
		 * upstream's silence is what times out (504); the client is
		 * only held to writing what it is sent.
		 */
		evtimer_del(c->timer);
		tmo.tv_sec = s == CONN_TUNNEL ? lim->tunnel_idle_timeout : lim->response_timeout;
		tmo.tv_usec = 0;
		side_timeouts(&c->client, s == CONN_TUNNEL ? &tmo : NULL, &tmo);
		if (c->up.bev != NULL)
			side_timeouts(&c->up, &tmo, &tmo);
		return;
	}
	side_timeouts(&c->client, NULL, NULL);
	evtimer_add(c->timer, &tv);
}

const char *
conn_mode(const struct conn *c)
{
	return config_mode_name(policy_mode(c->policy));
}

/* The one audit event of an exchange or a tunnel. */
void
conn_audit(struct conn *c)
{
	static const char *const events[] = {
	    [EXCHANGE_HTTP] = "http",
	    [EXCHANGE_CONNECT] = "connect",
	    [EXCHANGE_TCP] = "tcp",
	};
	static const char *const tls[] = {
	    [EXCHANGE_TLS_NONE] = NULL,
	    [EXCHANGE_TLS_INTERCEPT] = "intercept",
	    [EXCHANGE_TLS_PASSTHROUGH] = "passthrough",
	    [EXCHANGE_TLS_TUNNEL] = "tunnel",
	};
	struct audit_event ev;
	char addr[64];
	int is_connect;

	if (c->x == NULL || (c->flags & CONN_F_AUDITED) || !c->x->begun)
		return;
	/* A redirected stream was decided as a CONNECT would be, and says so. */
	is_connect = c->x->kind != EXCHANGE_HTTP;
	c->flags |= CONN_F_AUDITED;
	audit_event_init(&ev);
	ev.event = events[c->x->kind];
	if (c->x->decision.rule[0] != '\0') {
		ev.action = policy_action_name(c->x->decision.action);
		ev.rule = c->x->decision.rule;
		ev.source = c->x->decision.source;
		ev.reason = c->x->decision.reason;
	}
	ev.mode = conn_mode(c);
	ev.client = c->client_addr;
	ev.host = c->x->host.name[0] ? c->x->host.name : NULL;
	ev.port = c->x->port ? c->x->port : -1;
	ev.scheme = is_connect ? NULL : (c->flags & CONN_F_TLS) ? "https" : "http";
	ev.tls = tls[c->x->tls];
	if (is_connect && c->dest != NULL && c->dest->sni[0] != '\0')
		ev.sni = c->dest->sni;
	if (c->upstream != NULL) {
		addr_format(&c->upstream->addr, addr, sizeof addr);
		ev.addr = addr;
	}
	ev.method = is_connect ? "CONNECT" : c->x->req.method;
	ev.path = c->x->path;
	ev.status = c->x->status ? c->x->status : -1;
	/* Towards the destination only: a held body that was refused never left. */
	ev.bytes_up = c->x->req_body.bytes -
	              (c->x->held != NULL ? (int64_t)evbuffer_get_length(c->x->held) : 0);
	ev.bytes_down = c->x->resp_body.bytes;
	ev.duration_ms = (int64_t)(time_mono_ms() - c->x->t_start);
	if (c->x->decision.graphql_present)
		ev.graphql = &c->x->decision.gql;
	ev.error = c->x->error;
	ev.admitted = c->x->admitted;
	c->x->admitted = 0;
	audit_write(c->e->audit, &ev);
	/* An exchange's kind is its metrics event (checked where conn_count_kinds is). */
	if (c->x->decision.rule[0] != '\0') {
		metrics_count(&c->e->m, (int)c->x->kind, c->x->decision.action, ev.bytes_up,
		              ev.bytes_down);
		if (c->x->decision.action == ACTION_BLOCK && ev.host != NULL)
			metrics_blocked_note(&c->e->m, ev.host, &c->x->decision);
	}
}

/*
 * One `tls` audit event: a handshake that did not succeed, with the client
 * or (inside an intercepted connection) with the upstream.
 */
void
conn_audit_tls(struct conn *c, const char *rule, const char *reason, const char *error,
               const char *hint)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "tls";
	ev.action = "block";
	ev.rule = rule;
	ev.source = rule != NULL ? "builtin" : NULL;
	ev.reason = reason;
	ev.mode = conn_mode(c);
	ev.client = c->client_addr;
	ev.host = c->dest->host.name;
	ev.port = c->dest->port;
	ev.sni = c->dest->sni[0] ? c->dest->sni : NULL;
	ev.tls = (c->flags & CONN_F_TLS) ? "intercept" : NULL;
	ev.error = error;
	ev.hint = hint;
	audit_write(c->e->audit, &ev);
	metrics_count(&c->e->m, METRICS_EV_TLS, ACTION_BLOCK, 0, 0);
}

static size_t
conn_side_buffered(const struct conn_side *s)
{
	if (s->bev == NULL)
		return 0;
	return evbuffer_get_length(bufferevent_get_input(s->bev)) +
	       evbuffer_get_length(bufferevent_get_output(s->bev));
}

/*
 * What the connection holds in its buffers now, into the runtime's total
 * (the memory budget, --max-buffered): both sides' input and output, a
 * body held for the decision, a WebSocket message being read. Called
 * where they grow or drain; a handful of loads, no system call.
 */
void
conn_account(struct conn *c)
{
	size_t n;

	if (c->flags & CONN_F_CLOSED)
		return;
	n = conn_side_buffered(&c->client) + conn_side_buffered(&c->up);
	if (c->x != NULL && c->x->held != NULL)
		n += evbuffer_get_length(c->x->held);
	if (c->x != NULL && c->x->ws != NULL)
		n += websocket_held(c->x->ws);
	c->e->buffered = c->e->buffered - c->buffered + n;
	c->buffered = n;
}

/*
 * How much a side may queue for its peer before the other side stops
 * being read: SIDE_HIGH_MARK, or, while the connections together hold
 * more than the budget, little enough that each keeps moving and none
 * grows.
 */
size_t
conn_high_mark(const struct conn *c)
{
	return c->e->buffered > c->e->lim.max_buffered ? SIDE_TIGHT_MARK : SIDE_HIGH_MARK;
}

/* Free the connections closed since the last time (e->ev_reap, or at the end). */
static void
conn_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egressd *e = arg;
	struct conn *c;

	while ((c = TAILQ_FIRST(&e->closed)) != NULL) {
		TAILQ_REMOVE(&e->closed, c, entry);
		policy_unref(c->policy);
		free(c->dest);
		free(c);
	}
}

/* Start an exchange at the first byte of a request head. */
void
conn_exchange_new(struct conn *c)
{
	struct egressd *e = c->e;

	c->x = slab_alloc(&e->xslab);
	http_msg_init(&c->x->req);
	http_msg_init(&c->x->resp);
}

/*
 * End the exchange. Its state lives only while it runs, so an idle
 * keep-alive connection costs little more than its socket.
 */
void
conn_exchange_free(struct conn *c)
{
	struct exchange *x = c->x;

	c->flags &= ~(CONN_F_AUDITED | CONN_F_RESP_STARTED | CONN_F_CONTINUE_SENT);
	if (x == NULL)
		return;
	if (x->admitted)
		audit_release(c->e->audit);
	http_msg_free(&x->req);
	http_msg_free(&x->resp);
	free(x->path); /* and the query with it */
	if (x->held != NULL)
		evbuffer_free(x->held);
	websocket_free(x->ws);
	/*
	 * From a slab of its own: the 2 KiB of each request's state is not
	 * left as a hole between the objects of connections that stay open.
	 */
	slab_free(&c->e->xslab, x);
	c->x = NULL;
}

/*
 * The one teardown path: idempotent, audits the open exchange once, frees
 * both sides, and defers the final free so callers up the stack stay safe:
 * the connection waits on e->closed for the reaper, which runs once the
 * callbacks ready now are done.
 */
void
conn_close(struct conn *c, const char *why)
{
	struct egressd *e = c->e;

	if (c->flags & CONN_F_CLOSED)
		return;
	c->flags |= CONN_F_CLOSED;
	log_debug("conn %llu: close: %s", (unsigned long long)c->id, why);
	/* Redirected, cut before a byte came: timed out, closed, or shut down. */
	if (c->state == CONN_PEEK && c->x == NULL && !(c->flags & CONN_F_AUDITED))
		transparent_audit_silent(c, why);
	if (c->x != NULL && c->x->begun && !(c->flags & CONN_F_AUDITED)) {
		if (c->x->error == NULL && c->state != CONN_TUNNEL)
			c->x->error = why;
		conn_audit(c);
	}
	upstream_cancel(c->job);
	c->job = NULL;
	side_detach(&c->client);
	conn_up_detach(c, 0);
	if (c->client.bev != NULL)
		bufferevent_free(c->client.bev);
	c->client.bev = NULL;
	event_free(c->timer);
	if (c->peek != NULL)
		event_free(c->peek);
	if (c->peek_retry != NULL)
		event_free(c->peek_retry);
	c->peek = c->peek_retry = NULL;
	conn_exchange_free(c);
	e->buffered -= c->buffered;
	c->buffered = 0;
	TAILQ_REMOVE(&e->conns, c, entry);
	e->nconns--;
	TAILQ_INSERT_TAIL(&e->closed, c, entry);
	event_active(e->ev_reap, EV_TIMEOUT, 0);
	e->conn_gone(e);
}

/* Close once everything queued for the client has been written. */
void
conn_flush_close(struct conn *c)
{
	side_read(&c->client, 0);
	if (c->up.bev != NULL)
		side_read(&c->up, 0);
	conn_set_state(c, CONN_FLUSH);
	if (evbuffer_get_length(bufferevent_get_output(c->client.bev)) == 0)
		conn_close(c, "done");
}

/*
 * Act on c->x->decision: answer 403, intercept a CONNECT, or get an
 * upstream. First the audit log must keep room for the exchange's line:
 * while it cannot be written, nothing goes on (audit.onError: block).
 */
void
conn_proceed(struct conn *c)
{
	if (!audit_admit(c->e->audit)) {
		respond_unavailable(c);
		return;
	}
	c->x->admitted = 1;
	if (c->x->decision.action == ACTION_BLOCK) {
		respond_block(c);
		return;
	}
	if (c->x->kind == EXCHANGE_CONNECT && intercept_tls_mode(c) == EXCHANGE_TLS_INTERCEPT) {
		intercept_start(c);
		return;
	}
	forward_start(c);
}

/*
 * Let go of the upstream: back to the pool when reusable (and the pool
 * takes it), else closed. The side is left as a new one would be.
 */
void
conn_up_detach(struct conn *c, int reusable)
{
	side_detach(&c->up);
	if (c->upstream != NULL)
		upstream_release(c->e, c->upstream, reusable); /* frees c->up.bev unless pooled */
	c->upstream = NULL;
	c->up.bev = NULL;
	c->up.eof = 0;
	c->up.throttled = 0;
}

/* A finished exchange: audit it, pool the upstream, wait for the next request. */
void
conn_exchange_done(struct conn *c)
{
	conn_audit(c);
	if (c->upstream != NULL)
		conn_up_detach(c, c->x->resp_parsed && (c->x->resp.flags & HTTP_F_KEEP_ALIVE) &&
		                      c->x->resp.body != HTTP_BODY_CLOSE && !c->up.eof &&
		                      c->x->req_body.done);
	side_timeouts(&c->client, NULL, NULL);
	if (c->flags & CONN_F_CLIENT_CLOSE || c->client.eof || c->e->draining) {
		conn_flush_close(c);
		return;
	}
	conn_exchange_free(c);
	c->flags |= CONN_F_SERVED;
	c->client.throttled = 0;
	side_read(&c->client, 1);
	conn_set_state(c, CONN_READ_HEAD);
	/* A pipelined request may already be waiting. */
	request_read_head(c);
}

/* Relay bytes both ways from now on: a CONNECT tunnel or an upgraded exchange. */
void
conn_tunnel(struct conn *c)
{
	conn_set_state(c, CONN_TUNNEL);
	side_read(&c->client, 1);
	relay_pump(c);
}

void
conn_client_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;

	switch (c->state) {
	case CONN_READ_HEAD:
		request_read_head(c);
		break;
	case CONN_READ_BODY:
		request_hold_body(c);
		break;
	case CONN_EXCHANGE:
	case CONN_TUNNEL:
		relay_pump(c);
		break;
	case CONN_CONNECTING:
		side_read(s, 0);
		break;
	case CONN_FLUSH:
		evbuffer_drain(bufferevent_get_input(bev), (size_t)-1);
		break;
	case CONN_TLS_WAIT:
	case CONN_HANDSHAKE:
	case CONN_PEEK:
		break;
	}
}

void
conn_client_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;

	if (c->state == CONN_FLUSH || (c->flags & CONN_F_CLOSE_FLUSHED)) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_close(c, "done");
		return;
	}
	if (c->state == CONN_TLS_WAIT) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			intercept_tls_start(c);
		return;
	}
	if (c->up.throttled)
		relay_pump(c);
	else
		conn_account(c);
}

void
conn_up_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;

	if (c->state == CONN_TUNNEL) {
		relay_pump(c);
		return;
	}
	if (c->state != CONN_EXCHANGE)
		return;
	if (!c->x->resp_parsed)
		relay_read_response(c);
	else
		relay_pump(c);
}

void
conn_up_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;

	if (c->flags & CONN_F_CLOSE_FLUSHED) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_close(c, "tunnel closed");
		return;
	}
	if (c->client.throttled)
		relay_pump(c);
	else
		conn_account(c);
}

void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;
	int is_up = s == &c->up;
	char why[256];
	int verify;

	if (c->state == CONN_HANDSHAKE && !is_up) {
		if (what & BEV_EVENT_CONNECTED) {
			conn_set_state(c, CONN_READ_HEAD);
			request_read_head(c);
			return;
		}
		tls_error(bev, why, sizeof why, &verify);
		intercept_tls_failed(c, why);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		if (is_up && c->state == CONN_EXCHANGE && !c->x->resp_parsed) {
			respond_error(c, 504, "Gateway Timeout", "upstream response timed out");
			return;
		}
		conn_close(c, c->state == CONN_TUNNEL ? "tunnel idle timeout" : "timeout");
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		if (is_up && c->state == CONN_EXCHANGE && !c->x->resp_parsed) {
			if (forward_retry(c))
				return;
			respond_error(c, 502, "Bad Gateway", "upstream connection reset");
			return;
		}
		conn_close(c, is_up ? "upstream error" : "client error");
		return;
	}
	if (!(what & BEV_EVENT_EOF))
		return;
	if (c->state == CONN_TUNNEL) {
		relay_tunnel_eof(c, s);
		return;
	}
	s->eof = 1;
	if (!is_up) {
		/* The client is gone or half-closed: finish what can be finished. */
		if (c->state == CONN_READ_HEAD || c->state == CONN_FLUSH) {
			conn_close(c, "client closed");
			return;
		}
		c->flags |= CONN_F_CLIENT_CLOSE;
		if (c->state == CONN_READ_BODY) {
			conn_close(c, "client closed during the request body");
			return;
		}
		relay_pump(c);
		return;
	}
	if (c->state != CONN_EXCHANGE)
		return;
	if (!c->x->resp_parsed) {
		relay_read_response(c);
		/* It may have closed the connection or finished the exchange. */
		if ((c->flags & CONN_F_CLOSED) || c->x == NULL || c->x->resp_parsed)
			return;
		if (forward_retry(c))
			return;
		respond_error(c, 502, "Bad Gateway", "upstream closed without a response");
		return;
	}
	relay_pump(c);
}

/* A plain side is readable: read it here, then run its bufferevent's callbacks. */
void
conn_side_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn_side *s = arg;
	struct conn *c = s->conn;
	int n;

	if (what & EV_TIMEOUT) {
		conn_event_cb(s->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, s);
		return;
	}
	if ((n = side_read_socket(s)) == -2)
		return;
	if (n <= 0) {
		/* As a bufferevent does: no more reading after EOF or an error. */
		side_read(s, 0);
		conn_event_cb(s->bev,
		              BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), s);
		return;
	}
	if (s == &c->client)
		conn_client_read_cb(s->bev, s);
	else
		conn_up_read_cb(s->bev, s);
}

/*
 * The engine's state on the runtime: the exchanges' slab, the scratch
 * buffer, and the reaper of closed connections.
 */
void
conn_engine_init(struct egressd *e)
{
	TAILQ_INIT(&e->closed);
	if ((e->ev_reap = event_new(e->base, -1, 0, conn_reap_cb, e)) == NULL)
		fatalx("cannot create the connection reaper");
	slab_init(&e->xslab, sizeof(struct exchange));
	e->scratch = evbuffer_new();
}

/* Free the engine's state, and the connections closed and not yet freed. */
void
conn_engine_free(struct egressd *e)
{
	conn_reap_cb(-1, 0, e);
	if (e->ev_reap != NULL)
		event_free(e->ev_reap);
	e->ev_reap = NULL;
	slab_release(&e->xslab);
	if (e->scratch != NULL)
		evbuffer_free(e->scratch);
	e->scratch = NULL;
}

/* A connection for an accepted socket, not yet reading; NULL if none can be made. */
struct conn *
conn_new(struct egressd *e, int fd, const struct sockaddr *sa)
{
	struct conn *c;

	c = xcalloc(1, sizeof *c);
	c->e = e;
	c->id = ++e->conn_seq;
	c->policy = policy_ref(e->policy);
	if (sa != NULL && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6))
		sock_text((const struct sockaddr_storage *)sa, c->client_addr,
		          sizeof c->client_addr);
	c->client.bev = bufferevent_socket_new(e->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->client.bev == NULL) {
		close(fd);
		policy_unref(c->policy);
		free(c);
		return NULL;
	}
	c->client.conn = c->up.conn = c;
	c->client.plain = 1;
	c->client.peer = &c->up;
	c->up.peer = &c->client;
	c->timer = evtimer_new(e->base, conn_timer_cb, c);
	TAILQ_INSERT_TAIL(&e->conns, c, entry);
	e->nconns++;
	bufferevent_setcb(c->client.bev, conn_client_read_cb, conn_client_write_cb, conn_event_cb,
	                  &c->client);
	bufferevent_setwatermark(c->client.bev, EV_WRITE, SIDE_LOW_MARK, 0);
	side_attach(&c->client, e->base, conn_side_read);
	return c;
}

void
conn_accept(struct egressd *e, int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct conn *c;

	if ((c = conn_new(e, fd, sa)) == NULL)
		return;
	side_read(&c->client, 1);
	conn_set_state(c, CONN_READ_HEAD);
}

/* Start reading requests (transparent: plain HTTP was seen). */
void
conn_start(struct conn *c)
{
	side_read(&c->client, 1);
	conn_set_state(c, CONN_READ_HEAD);
	request_read_head(c);
}

/* SIGTERM: connections waiting for a request are closed now. */
void
conn_drain_idle(struct egressd *e)
{
	struct conn *c, *next;

	for (c = TAILQ_FIRST(&e->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->state == CONN_READ_HEAD && c->x == NULL)
			conn_close(c, "shutdown");
	}
	upstream_pool_flush(e->pool);
}

/* Intercepted connections waiting for their next request give TLS buffers back. */
void
conn_trim_idle(struct egressd *e)
{
	struct conn *c;

	TAILQ_FOREACH(c, &e->conns, entry)
	{
		if ((c->flags & CONN_F_TLS) && c->state == CONN_READ_HEAD && c->x == NULL &&
		    c->client.bev != NULL &&
		    evbuffer_get_length(bufferevent_get_input(c->client.bev)) == 0)
			tls_idle(c->client.bev);
	}
}

void
conn_close_all(struct egressd *e, const char *why)
{
	struct conn *c;

	while ((c = TAILQ_FIRST(&e->conns)) != NULL) {
		if (c->x != NULL)
			c->x->error = why;
		conn_close(c, why);
	}
}

_Static_assert((int)EXCHANGE_HTTP == METRICS_EV_HTTP &&
                   (int)EXCHANGE_CONNECT == METRICS_EV_CONNECT &&
                   (int)EXCHANGE_TCP == METRICS_EV_TCP,
               "an exchange's kind is counted as its metrics event");

/* The open connections by what they are doing now, for status and metrics. */
void
conn_count_kinds(struct egressd *e, uint64_t n[METRICS_CONN_COUNT])
{
	struct conn *c;

	memset(n, 0, METRICS_CONN_COUNT * sizeof n[0]);
	TAILQ_FOREACH(c, &e->conns, entry)
	{
		if (c->state == CONN_TUNNEL)
			n[METRICS_CONN_TUNNEL]++;
		else if (c->state == CONN_TLS_WAIT || c->state == CONN_HANDSHAKE ||
		         c->state == CONN_PEEK)
			n[METRICS_CONN_HANDSHAKE]++;
		else if (c->flags & CONN_F_TLS)
			n[METRICS_CONN_INTERCEPTED]++;
		else
			n[METRICS_CONN_HTTP]++;
	}
}
