/*
 * loadgen's shared definitions: the connection and run state, and the
 * functions its three files call across (loadgen.c: the run, connections
 * and report; loadgen_http.c: response framing; loadgen_tls.c: CONNECT
 * tunnels and TLS).
 */
#ifndef LOADGEN_H
#define LOADGEN_H

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define LG_HEAD_MAX   (64 * 1024) /* a response head past this is a parse error */
#define LG_CHUNK_LINE 1024        /* longest chunk-size line accepted */
#define LG_URL_MAX    2048
#define LG_RETRY_MS   10 /* pause after a failed request so a dead target is not hammered */
#define LG_SUB_BITS   6
#define LG_SUB        (1 << LG_SUB_BITS)
#define LG_MAG_MAX    40 /* 2^40 ns, about 18 minutes: longer latencies share the last bucket */
#define LG_BUCKETS    (LG_SUB + (LG_MAG_MAX - LG_SUB_BITS + 1) * LG_SUB)
#define LG_HOST_MAX   253
#define LG_TLS_NOTES  3 /* TLS failures explained on stderr, so a broken setup says why */

enum lg_mode { LG_KEEPALIVE, LG_CLOSE, LG_IDLE };

enum lg_state {
	LG_HEAD,
	LG_BODY,
	LG_CHUNK_SIZE,
	LG_CHUNK_DATA,
	LG_CHUNK_CRLF,
	LG_TRAILER,
	LG_UNTIL_EOF,
	LG_HOLD, /* idle mode: one response read, connection kept open and quiet */
};

/*
 * How an https connection gets ready: TCP first (and a CONNECT exchange
 * through a proxy) on a plain bufferevent, then its descriptor moves to a
 * TLS bufferevent.
 */
enum lg_setup { LG_S_NONE, LG_S_TCP, LG_S_TUNNEL };

enum lg_err {
	LG_E_CONNECT,
	LG_E_STATUS,
	LG_E_TIMEOUT,
	LG_E_PARSE,
	LG_E_CLOSED,
	LG_E_TLS,
	LG_E_MAX
};

/* Log-linear histogram: exact below 64 ns, then 64 sub-buckets per power of two (<1.6% error). */
struct lg_hist {
	uint64_t counts[LG_BUCKETS];
	uint64_t total;
	uint64_t max;
};

struct lg_conn {
	struct loadgen *lg;
	struct bufferevent *bev;
	struct event *retry;
	enum lg_state state;
	uint64_t start_ns;
	uint64_t left;     /* body or chunk bytes still to come */
	size_t head_bytes; /* trailer bytes seen, bounded like a head */
	int status;
	int reusable;
	int connected;
	int in_flight;
	int got_bytes;       /* some of the current response has arrived */
	int resent;          /* the current request was already resent once */
	uint64_t served;     /* responses read on this TCP connection */
	enum lg_setup setup; /* not LG_S_NONE: bev is the plain bufferevent of the set-up */
	int tls_up;          /* the TLS handshake of this connection is done */
	uint64_t id;         /* --tag: the id of the request in flight; 0 between requests */
};

struct loadgen {
	struct event_base *base;
	struct event *stop_ev;
	struct event *sigint_ev;
	struct event *sigterm_ev;
	struct sockaddr_in dst; /* where TCP goes: the proxy, or the origin */
	char *request;
	size_t request_len;
	const char *tag; /* --tag: each request's path ends in /TAG-ID, ID 1, 2, 3, ... */
	size_t tag_at;   /* where in request the ID goes */
	uint64_t ids;    /* IDs handed out */
	double pace;     /* --pace: seconds a connection waits between requests */
	FILE *ids_out;   /* --ids: the ID of every request answered, one a line */
	char *tunnel;    /* the CONNECT request, for https through a proxy */
	size_t tunnel_len;
	SSL_CTX *ssl_ctx;           /* NULL for plain http */
	char host[LG_HOST_MAX + 1]; /* the https server name: SNI and certificate check */
	int host_is_ip;
	uint64_t handshakes;
	uint64_t body_bytes;
	int tls_notes;
	const char *name;
	enum lg_mode mode;
	int nconns;
	double duration;
	double timeout;
	uint64_t max_requests; /* 0: no cap */
	uint64_t issued;
	uint64_t finished;
	uint64_t completed;
	uint64_t errors[LG_E_MAX];
	uint64_t connects;
	uint64_t resends;
	int held;        /* idle mode: connections parked after one request */
	int not_kept;    /* idle mode: the peer would not keep the connection */
	int held_closed; /* idle mode: parked connections the peer closed */
	int ready;       /* idle mode: READY line printed */
	int stopping;
	uint64_t t_start;
	uint64_t t_end;
	struct lg_hist hist;
	struct lg_conn *conns;
};

/* loadgen.c */
void lg_die(const char *msg) __attribute__((noreturn));
void *lg_calloc(size_t n, size_t size);
void lg_conn_send(struct lg_conn *c);
void lg_conn_done(struct lg_conn *c, int err);
void lg_conn_response(struct lg_conn *c);
void lg_read_cb(struct bufferevent *bev, void *arg);
void lg_event_cb(struct bufferevent *bev, short what, void *arg);
const char *lg_parse_addr(const char *s, int default_port, struct sockaddr_in *sin);

/* loadgen_http.c */
int lg_parse(struct lg_conn *c, struct evbuffer *in);

/* loadgen_tls.c */
void lg_tls_note(struct loadgen *lg, struct bufferevent *bev);
void lg_conn_tls(struct lg_conn *c);
void lg_tunnel_read(struct lg_conn *c, struct evbuffer *in);
int lg_setup_https(struct loadgen *lg, const char *auth, const char *resolve, const char *url);
void lg_setup_ssl(struct loadgen *lg, const char *cafile);

#endif
