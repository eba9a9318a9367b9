/*
 * The connection engine's own header: one client connection (struct conn)
 * and the exchange in progress on it, shared by the hub (conn.c) and its
 * phases, which include this and the lower layers (side.h, upstream.h,
 * http.h, tls.h) and nothing above. The runtime sees the engine only
 * through the entry points in proxy.h.
 */
#ifndef CONN_INT_H
#define CONN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "audit.h"
#include "common.h"
#include "http.h"
#include "policy.h"
#include "proxy.h"
#include "side.h"
#include "tls.h"
#include "upstream.h"

struct bufferevent;

/* conn.c */
#define CONN_DRAIN_SECS 5

enum conn_state {
	CONN_READ_HEAD,  /* waiting for (the rest of) a request head */
	CONN_READ_BODY,  /* buffering a body the decision needs (GraphQL) */
	CONN_CONNECTING, /* resolving and connecting upstream */
	CONN_EXCHANGE,   /* request going up, response coming down */
	CONN_TUNNEL,     /* CONNECT: bytes both ways */
	CONN_FLUSH,      /* writing a last response, then close */
	CONN_TLS_WAIT,   /* 200 to CONNECT still being written, then TLS */
	CONN_HANDSHAKE,  /* TLS handshake with the client */
	CONN_PEEK,       /* transparent: waiting for the first bytes */
};

/* How one body is moving from one side to the other. */
struct conn_body {
	enum http_body in;  /* framing read from the source */
	enum http_body out; /* framing written to the sink */
	uint64_t left;      /* HTTP_BODY_LENGTH: bytes still to read */
	struct chunked dec;
	int done;
	int64_t bytes; /* body bytes moved */
};

/*
 * Where an intercepted connection goes (the CONNECT host and port), or,
 * on the transparent listener, where the client dialled until SNI or
 * Host names it; kept apart so a plain connection does not carry it.
 */
struct conn_dest {
	struct host host;
	uint16_t port;
	char sni[256];        /* the server name the client sent, if any */
	struct tls_peer peer; /* intercepted: the handshake's view of host */
};

/* What an exchange is: the path it takes and the event its audit line is. */
enum exchange_kind {
	EXCHANGE_HTTP,    /* a request sent on as HTTP: absolute-form, inside TLS, redirected */
	EXCHANGE_CONNECT, /* a CONNECT, or a redirected ClientHello decided as one would be */
	EXCHANGE_TCP,     /* redirected bytes that are neither TLS nor HTTP */
};

/* How an allowed CONNECT is carried once its upstream is connected (the audit's `tls`). */
enum exchange_tls {
	EXCHANGE_TLS_NONE,        /* not (yet) carried */
	EXCHANGE_TLS_INTERCEPT,   /* TLS with the client, every request inside decided */
	EXCHANGE_TLS_PASSTHROUGH, /* network.passthrough: relayed untouched after the ClientHello */
	EXCHANGE_TLS_TUNNEL,      /* relayed untouched: no interception here, or not TLS */
};

/* One request and its response, from the first byte of the head on. */
struct exchange {
	struct http_msg req;
	struct http_msg resp;
	enum exchange_kind kind;
	enum exchange_tls tls;
	int begun; /* a request head read (or refused), or a stream classified: audited */
	int resp_parsed;
	int retried;           /* resent once after a stale pooled upstream */
	int interim;           /* 1xx responses seen */
	int upgrade;           /* a WebSocket upgrade was sent up */
	int admitted;          /* the audit log keeps room for its line (audit_admit) */
	const char *authority; /* host[:port] for the upstream's Host header */
	struct host host;
	uint16_t port;
	char *path;  /* no query string: it may carry secrets */
	char *query; /* within path's allocation, after its NUL */
	struct decision decision;
	struct conn_body req_body;
	struct conn_body resp_body;
	struct evbuffer *held; /* a request body held for the decision */
	struct websocket *ws;  /* a WebSocket whose client messages are read (websocket.c) */
	int held_truncated;
	uint64_t t_start;
	int status;
	const char *error;
};

struct conn {
	TAILQ_ENTRY(conn) entry;
	struct egressd *e;
	uint64_t id;
	struct policy *policy; /* the snapshot this connection started with */
	enum conn_state state;
	int flags;
#define CONN_F_CLOSED        0x1
#define CONN_F_AUDITED       0x2   /* the current exchange has its audit event */
#define CONN_F_RESP_STARTED  0x4   /* response bytes went to the client */
#define CONN_F_CLIENT_CLOSE  0x8   /* close after this exchange */
#define CONN_F_CONTINUE_SENT 0x10  /* we answered 100 Continue ourselves */
#define CONN_F_TLS           0x20  /* intercepted: the client side is TLS */
#define CONN_F_SNI_MISMATCH  0x40  /* the client's SNI named another host */
#define CONN_F_CLOSE_FLUSHED 0x80  /* tunnel: close once the peer's output is written */
#define CONN_F_TRANSPARENT   0x100 /* accepted on the transparent listener */
#define CONN_F_SERVED        0x800 /* a request was answered: idle timeout, not header */
	struct conn_side client;
	struct conn_side up;
	struct upstream *upstream;
	struct upstream_job *job;
	struct event *timer;
	struct event *peek;       /* transparent: the first bytes are readable */
	struct event *peek_retry; /* transparent: look again for the rest of a ClientHello */
	char client_addr[64];
	struct conn_dest *dest; /* intercepted or transparent connections only */
	size_t buffered;        /* what this connection adds to e->buffered */

	struct exchange *x; /* the exchange in progress; NULL between requests */
};

struct conn *conn_new(struct egressd *, int, const struct sockaddr *);
void conn_start(struct conn *);
void conn_set_state(struct conn *, enum conn_state);
void conn_close(struct conn *, const char *);
void conn_flush_close(struct conn *);
void conn_exchange_done(struct conn *);
void conn_tunnel(struct conn *);
void conn_up_detach(struct conn *, int);
const char *conn_mode(const struct conn *);
void conn_audit(struct conn *);
void conn_audit_tls(struct conn *, const char *, const char *, const char *, const char *);
void conn_exchange_new(struct conn *);
void conn_exchange_free(struct conn *);
void conn_proceed(struct conn *);
void conn_client_read_cb(struct bufferevent *, void *);
void conn_client_write_cb(struct bufferevent *, void *);
void conn_up_read_cb(struct bufferevent *, void *);
void conn_up_write_cb(struct bufferevent *, void *);
void conn_event_cb(struct bufferevent *, short, void *);
void conn_side_read(evutil_socket_t, short, void *);
void conn_account(struct conn *);
size_t conn_high_mark(const struct conn *);

/* request.c */
void request_read_head(struct conn *);
void request_hold_body(struct conn *);
void request_body(struct conn *);

/* intercept.c */
enum exchange_tls intercept_tls_mode(struct conn *);
void intercept_tls_failed(struct conn *, const char *);
void intercept_tls_start(struct conn *);
void intercept_peek_start(struct conn *);
void intercept_start(struct conn *);
void intercept_request(struct conn *);

/* respond.c */
void respond_error(struct conn *, int, const char *, const char *);
void respond_block(struct conn *);
void respond_unavailable(struct conn *);
void respond_established(struct conn *);
void respond_continue(struct conn *);

/* forward.c */
void forward_start(struct conn *);
int forward_retry(struct conn *);

/* websocket.c */
struct websocket;
int websocket_accept(struct conn *);
void websocket_pump(struct conn *);
void websocket_free(struct websocket *);
size_t websocket_held(const struct websocket *);

/* transparent.c */
void transparent_request(struct conn *);
void transparent_decide(struct conn *, const struct host *, uint16_t, enum exchange_kind);
void transparent_audit_silent(struct conn *, const char *);

/* relay.c */
#define RELAY_MAX_INTERIM 16 /* 1xx responses before the final one */
int relay_body_move(struct conn *, struct conn_body *, struct evbuffer *, struct evbuffer *, int);
void relay_pump(struct conn *);
void relay_read_response(struct conn *);
void relay_pump_head(struct conn *, const void *, size_t);
void relay_tunnel_eof(struct conn *, struct conn_side *);

#endif
