/*
 * The proxy module: egressd's HTTP/1.1 parser, its runtime context,
 * listeners, connections, relays and upstreams. It asks policy/ for
 * decisions and writes audit events.
 */
#ifndef PROXY_H
#define PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "audit.h"
#include "common.h"
#include "http.h"
#include "policy.h"
#include "tls.h"

/* egressd's runtime: the context every part hangs off. */
struct conn;
struct upstream;
struct evconnlistener;
struct resolver;
struct tls;

struct egressd_limits {
	unsigned max_conns;           /* client connections at once */
	unsigned header_timeout;      /* seconds to send a whole request head */
	unsigned idle_timeout;        /* seconds a keep-alive client may idle */
	unsigned connect_timeout;     /* seconds to resolve and connect upstream */
	unsigned response_timeout;    /* seconds without upstream bytes */
	unsigned tunnel_idle_timeout; /* seconds without bytes in a tunnel */
	unsigned grace;               /* seconds to finish exchanges on SIGTERM */
	unsigned pool_idle_timeout;   /* seconds an idle upstream is kept */
	unsigned pool_max_idle;       /* idle upstreams kept per host:port */
	unsigned pool_max_total;      /* idle upstreams kept in all */
};

struct egressd {
	struct event_base *base;
	struct resolver *resolver; /* DNS: the listener and the proxy's lookups */
	struct tls *tls;           /* interception: the CA, leaves and TLS contexts */
	struct policy *policy;     /* current snapshot; conns hold their own ref */
	struct audit *audit;
	struct config_file *files; /* --config and --project-config, in order */
	size_t nfiles;
	struct listener *proxy_lst;
	struct listener *transparent_lst[2]; /* IPv4 and IPv6 */
	struct nflog *nflog;                 /* packets the sandbox's rules dropped */
	struct event *ev_hup;
	struct event *ev_term;
	struct event *ev_int;
	struct event *ev_grace;
	struct event *ev_trim;
	struct event *ev_audit; /* writes the batched audit lines */
	TAILQ_HEAD(, conn) conns;
	unsigned nconns;
	uint64_t conn_seq;
	struct egressd_limits lim;
	struct http_limits http;
	struct upstream_pool *pool;
	struct evbuffer *scratch; /* bytes on their way to a side, within one call */
	struct slab xslab;        /* struct exchange */
	int draining;
};

/* main.c */
void egressd_conn_gone(struct egressd *);

/* nflog.c */
struct nflog_packet {
	char prefix[64]; /* the log rule's prefix: which rule dropped it */
	int64_t uid;     /* the sending socket's uid; -1: none (kernel) */
	int family;      /* 4 or 6 */
	int proto;       /* IP protocol number; -1: not known */
	char src[46], dst[46];
	int sport, dport;             /* TCP and UDP; -1 otherwise */
	int icmp_type;                /* ICMP and ICMPv6; -1 otherwise */
	const unsigned char *payload; /* the packet, network header first */
	size_t payload_len;
};
enum nflog_next {
	NFLOG_NEXT_END,
	NFLOG_NEXT_PACKET,
	NFLOG_NEXT_SKIP,
	NFLOG_NEXT_ERROR,
};
struct nflog;
enum nflog_next nflog_next(const unsigned char **, size_t *, struct nflog_packet *, const char **);
const char *nflog_decode_packet(const unsigned char *, size_t, struct nflog_packet *);
const char *nflog_proto_name(const struct nflog_packet *, char *, size_t);
const char *nflog_reason(const struct nflog_packet *, const char **);
struct nflog *nflog_new(struct egressd *, int);
void nflog_drain(struct nflog *);
void nflog_free(struct nflog *);

/* listener.c */
struct listener;
struct listener *listener_new(struct egressd *, int, int);
void listener_free(struct listener *);
void listener_pause(struct listener *);
void listener_resume(struct listener *);
int listener_bind(const char *, int, char *, size_t);

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

struct conn_side {
	struct bufferevent *bev;
	struct conn *conn;
	struct conn_side *peer;
	int eof;
	int throttled;    /* reading stopped for backpressure */
	int plain;        /* a plain socket: relay_send may write to it directly */
	struct event *rd; /* plain: our read event (the bufferevent's own stays off) */
	int rd_owned;     /* rd is ours to free (else the upstream's) */
	struct timeval rd_tmo;
	int rd_has_tmo;
	int rd_on;
	int rd_bulk; /* the last read filled its buffer: a body is streaming */
};

/*
 * Where an intercepted connection goes (the CONNECT host and port), or,
 * on the transparent listener, where the client dialled until SNI or
 * Host names it; kept apart so a plain connection does not carry it.
 */
struct conn_dest {
	struct host host;
	uint16_t port;
	char sni[256]; /* the server name the client sent, if any */
};

/* One request and its response, from the first byte of the head on. */
struct exchange {
	struct http_msg req;
	struct http_msg resp;
	int req_parsed;
	int resp_parsed;
	int retried;           /* resent once after a stale pooled upstream */
	int interim;           /* 1xx responses seen */
	int upgrade;           /* a WebSocket upgrade was sent up */
	const char *authority; /* host[:port] for the upstream's Host header */
	const char *tls;       /* CONNECT: intercept, passthrough or tunnel */
	const char *event;     /* audit event type when not http/connect (tcp) */
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

	struct exchange *x; /* the exchange in progress; NULL between requests */
};

struct conn *conn_new(struct egressd *, int, const struct sockaddr *);
void conn_accept(struct egressd *, int, const struct sockaddr *, socklen_t);
void conn_start(struct conn *);
void conn_close(struct conn *, const char *);
void conn_drain_idle(struct egressd *);
void conn_trim_idle(struct egressd *);
void conn_close_all(struct egressd *, const char *);
void conn_flush_close(struct conn *);
void conn_exchange_done(struct conn *);
const char *conn_mode(const struct conn *);
void conn_audit(struct conn *);
void conn_exchange_new(struct conn *);
void conn_exchange_free(struct conn *);
void conn_request_body(struct conn *, int);
void conn_proceed(struct conn *);
struct bufferevent;
void conn_client_read_cb(struct bufferevent *, void *);
void conn_client_write_cb(struct bufferevent *, void *);
void conn_event_cb(struct bufferevent *, short, void *);

/* intercept.c */
void intercept_audit(struct conn *, const char *, const char *, const char *, const char *);
const char *intercept_tunnel_kind(struct conn *);
void intercept_tls_failed(struct conn *, const char *);
void intercept_tls_start(struct conn *);
void intercept_peek_start(struct conn *);
void intercept_start(struct conn *);
void intercept_request(struct conn *);
void conn_set_state(struct conn *, enum conn_state);
void conn_side_read(evutil_socket_t, short, void *);
void conn_up_read_cb(struct bufferevent *, void *);
void conn_up_write_cb(struct bufferevent *, void *);

/* respond.c */
void respond_error(struct conn *, int, const char *, const char *);
void respond_block(struct conn *);

/* forward.c */
void forward_start(struct conn *);
int forward_retry(struct conn *);
void forward_tunnel(struct conn *);

/* websocket.c */
struct websocket;
int websocket_accept(struct conn *);
void websocket_pump(struct conn *);
void websocket_free(struct websocket *);

/* transparent.c */
void transparent_accept(struct egressd *, int, const struct sockaddr *);
void transparent_request(struct conn *);
void transparent_decide(struct conn *, const struct host *, uint16_t, const char *);
void transparent_audit_silent(struct conn *, const char *);

/* relay.c */
#define RELAY_HIGH_MARK   (256 * 1024) /* stop reading a side past this much queued */
#define RELAY_LOW_MARK    (64 * 1024)  /* resume below this */
#define RELAY_MAX_INTERIM 16           /* 1xx responses before the final one */
#define RELAY_TLS_RECORD  16384        /* plaintext of a full TLS record */
int relay_body_move(struct conn *, struct conn_body *, struct evbuffer *, struct evbuffer *, int);
void relay_pump(struct conn *);
void relay_read_response(struct conn *);
void relay_pump_head(struct conn *, const void *, size_t);
void relay_send(struct conn_side *, const void *, size_t);
void relay_send_buffer(struct conn_side *, struct evbuffer *);
void relay_tunnel_eof(struct conn *, struct conn_side *);
void relay_throttle(struct conn_side *, struct conn_side *);
void side_attach(struct conn_side *, struct event_base *, event_callback_fn);
void side_attach_event(struct conn_side *, struct event *);
void side_detach(struct conn_side *);
void side_read(struct conn_side *, int);
void side_timeouts(struct conn_side *, const struct timeval *, const struct timeval *);
int side_read_socket(struct conn_side *);

/* upstream.c */
struct upstream {
	TAILQ_ENTRY(upstream) entry;     /* in its pool bucket while idle */
	TAILQ_ENTRY(upstream) lru_entry; /* in the pool's release order while idle */
	unsigned bucket;
	struct bufferevent *bev;
	struct addr addr; /* the address connected to */
	uint16_t port;
	char key[HOST_NAME_MAXLEN + 8]; /* host:port */
	struct event *idle_timer;
	struct upstream_pool *pool;
	int reused; /* came from the pool */
	int tls;    /* TLS to the upstream, verified */
	/*
	 * Plain upstreams are read through this event for their whole life,
	 * by the connection they serve (side) or, while pooled, by the pool:
	 * no epoll change as a connection takes one from the pool and gives
	 * it back.
	 */
	struct event *rd;
	struct conn_side *side;
};
enum upstream_err {
	UPSTREAM_OK,
	UPSTREAM_E_RESOLVE,
	UPSTREAM_E_CONNECT,
	UPSTREAM_E_TIMEOUT,
	UPSTREAM_E_BLOCKED, /* the guard refused every address */
	UPSTREAM_E_TLS,     /* handshake failed; detail says why */
};
struct upstream_result {
	struct upstream *u; /* NULL on error */
	int err;
	int sys_errno;
	const struct decision *blocked; /* UPSTREAM_E_BLOCKED: the guard's answer */
	int verify;                     /* UPSTREAM_E_TLS: the certificate was refused */
	char detail[256];               /* UPSTREAM_E_TLS */
};
typedef void (*upstream_cb)(void *, struct upstream_result *);
struct upstream_job;
struct upstream_pool *upstream_pool_new(struct egressd *);
void upstream_pool_free(struct upstream_pool *);
void upstream_pool_flush(struct upstream_pool *);
void upstream_pool_trim(struct upstream_pool *);
#define UPSTREAM_F_FRESH 0x1 /* a new connection, not one from the pool */
#define UPSTREAM_F_TLS   0x2 /* TLS to the upstream (intercepted requests) */
struct upstream_job *upstream_get(struct egressd *, struct policy *, const struct host *, uint16_t,
                                  const struct decision *, int, upstream_cb, void *);
void upstream_cancel(struct upstream_job *);
void upstream_release(struct egressd *, struct upstream *, int);
void upstream_free(struct upstream *);
const char *upstream_strerror(int);

#endif
