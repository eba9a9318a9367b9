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

#include "common.h"
#include "policy.h"

/* http.c */
#define HTTP_LENGTH_MAX (UINT64_C(1) << 62) /* larger lengths are refused */

/* Size limits; http_limits_default holds the safe defaults. */
struct http_limits {
	size_t start_line;      /* request or status line, CRLF excluded */
	size_t header_line;     /* one field line, CRLF excluded */
	size_t head;            /* whole head with its final empty line */
	size_t headers;         /* field lines in a head, and trailer lines */
	size_t chunk_line;      /* chunk size line with its extensions */
	size_t chunk_ext_total; /* extension bytes over one whole body */
};
extern const struct http_limits http_limits_default;

enum http_parse {
	HTTP_PARSE_ERROR = -1, /* error_status and error set */
	HTTP_PARSE_INCOMPLETE, /* call again with the same bytes and more */
	HTTP_PARSE_DONE,       /* head_len bytes consumed */
};

/* How a body is delimited (RFC 9112 §6.3). */
enum http_body {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH, /* length bytes; may be 0 */
	HTTP_BODY_CHUNKED,
	HTTP_BODY_CLOSE, /* until the server closes; responses only */
};

enum http_target_form {
	HTTP_TARGET_ORIGIN,    /* /path?q */
	HTTP_TARGET_ABSOLUTE,  /* http://host[:port]/path?q */
	HTTP_TARGET_AUTHORITY, /* host:port, CONNECT only */
	HTTP_TARGET_ASTERISK,  /* *, OPTIONS only */
};

struct http_target {
	enum http_target_form form;
	char *scheme;    /* "http" or "https"; absolute-form only */
	char *authority; /* host[:port] as written; absolute and authority forms */
	char *host;      /* raw host, an IPv6 address with its brackets */
	uint16_t port;   /* explicit or the scheme's default; 0 if no authority */
	int port_explicit;
	char *path; /* path and query, at least "/"; origin and absolute forms */
	char *mem;  /* the one allocation the strings above live in */
};

/* The fields the proxy itself reads or drops, known by number once parsed. */
enum http_field {
	HF_OTHER,
	HF_CONNECTION,
	HF_KEEP_ALIVE,
	HF_PROXY_CONNECTION,
	HF_PROXY_AUTHORIZATION,
	HF_PROXY_AUTHENTICATE,
	HF_TE,
	HF_TRAILER,
	HF_TRANSFER_ENCODING,
	HF_UPGRADE,
	HF_CONTENT_LENGTH,
	HF_HOST,
	HF_VIA,
	HF_EXPECT,
	HF_CONTENT_ENCODING,
	HF_CONTENT_TYPE,
	HF_X_HTTP_METHOD_OVERRIDE, /* the three method overrides the policy reads */
	HF_X_HTTP_METHOD,
	HF_X_METHOD_OVERRIDE,
	HF_SEC_WEBSOCKET_PROTOCOL,
	HF_SEC_WEBSOCKET_EXTENSIONS, /* left out where egressd reads the frames */
	HF_COUNT
};
#define HF_BIT(id) (1u << (id))

struct http_header {
	const char *name;  /* as received */
	const char *value; /* OWS trimmed */
	size_t name_len;
	size_t value_len;
	enum http_field id;
};

struct http_msg {
	char *head;         /* copy of the head, split in place, in headers' allocation */
	size_t head_len;    /* bytes of input the head took */
	int version;        /* 10 or 11 */
	const char *method; /* requests */
	const char *target;
	struct http_target uri;
	int status; /* responses */
	const char *reason;
	struct http_header *headers;
	size_t nheaders;
	unsigned fields; /* HF_BIT of every known field present */
	enum http_body body;
	uint64_t length;     /* HTTP_BODY_LENGTH, or HTTP_F_HAS_LENGTH */
	char *codings;       /* response transfer codings besides chunked */
	const char *upgrade; /* first Upgrade value, or NULL */
	int flags;
#define HTTP_F_KEEP_ALIVE      0x1
#define HTTP_F_EXPECT_CONTINUE 0x2 /* HTTP/1.1 request with Expect: 100-continue */
#define HTTP_F_UPGRADE         0x4 /* Upgrade present and named in Connection */
#define HTTP_F_HAS_LENGTH      0x8 /* bodiless HEAD or 304 response stating a length */
	int error_status;          /* on HTTP_PARSE_ERROR: status to answer */
	const char *error;         /* on HTTP_PARSE_ERROR: static reason */
	size_t scan_pos;           /* where the search for the head's end resumes */
	size_t scan_line;
	size_t scan_lines;
	size_t scan_skip;
};

#define HTTP_SER_KEEP_ALIVE 0x1 /* keep the connection; else Connection: close */
#define HTTP_SER_UPGRADE    0x2 /* forward Upgrade and Connection: upgrade */
#define HTTP_SER_NO_WS_EXT  0x4 /* leave Sec-WebSocket-Extensions out: frames stay readable */

void http_msg_init(struct http_msg *);
void http_msg_free(struct http_msg *);
enum http_parse http_parse_request(const char *, size_t, const struct http_limits *,
                                   struct http_msg *);
enum http_parse http_parse_response(const char *, size_t, const struct http_limits *, const char *,
                                    struct http_msg *);
const char *http_msg_header(const struct http_msg *, const char *);
enum http_field http_field_id(const char *, size_t);
int http_list_has(const char *, const char *);
int http_visible(const char *);
int http_request_serialize(const struct http_msg *, const char *, const char *, int, struct buf *);
int http_response_serialize(const struct http_msg *, int, int, struct buf *, enum http_body *);

/* http_target.c */
const char *http_target_parse(const char *, const char *, struct http_target *);
void http_target_free(struct http_target *);
const char *http_target_authority(const char *, size_t, int, size_t *, uint16_t *);

/* chunked.c */
enum chunked_result {
	CHUNKED_ERROR = -1, /* error set; the body is unusable */
	CHUNKED_MORE,       /* feed the rest of the bytes, or more */
	CHUNKED_DONE,       /* last chunk and trailers read */
};

struct chunked {
	int state;
	uint64_t size;     /* the chunk size being read */
	uint64_t left;     /* data bytes left in this chunk */
	uint64_t body_len; /* data bytes so far */
	size_t digits;
	size_t line_len; /* bytes of the current size or trailer line */
	size_t ext_total;
	size_t trailer_len;
	size_t trailers;
	size_t max_line; /* from the limits */
	size_t max_ext_total;
	size_t max_field_line;
	size_t max_trailer_len;
	size_t max_trailers;
	const char *error;
};

#define CHUNKED_HEAD_MAX 19 /* 16 hex digits and CRLF, NUL */

void chunked_init(struct chunked *, const struct http_limits *);
enum chunked_result chunked_feed(struct chunked *, const char *, size_t, size_t *, const char **,
                                 size_t *);
size_t chunked_head(char[CHUNKED_HEAD_MAX], uint64_t);
void chunked_write(struct buf *, const void *, size_t);
void chunked_write_last(struct buf *);

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

/* sni.c */
#define SNI_HELLO_MAX 16384 /* bytes of ClientHello read, joined from its records */
enum sni_result {
	SNI_MORE,    /* a prefix of a ClientHello: read more */
	SNI_FOUND,   /* name holds the host_name */
	SNI_ABSENT,  /* a ClientHello without a server name */
	SNI_NOT_TLS, /* the bytes are not a TLS handshake */
	SNI_ERROR,   /* a malformed ClientHello; err says why */
};
enum sni_result sni_parse(const unsigned char *, size_t, char *, size_t, const char **);

/* tls.c */
struct tls_opts {
	const char *ca_out;
	const char *ca_bundle_out;
	const char *ca_cert;
	const char *ca_key;
	const char *upstream_ca;
	const char *system_ca; /* the system store; NULL: CA_SYSTEM_BUNDLE */
};
struct bufferevent;
struct tls *tls_new(const struct tls_opts *, const struct config *, char *, size_t);
void tls_free(struct tls *);
const char *tls_store_check(const char *);
const char *tls_store_check_full(const char *);
void tls_start(struct tls *, struct event_base *);
const char *tls_ca_path(const struct tls *);
const char *tls_bundle_path(const struct tls *);
void tls_print_trust(const struct tls *, FILE *);
struct bufferevent *tls_accept(struct tls *, struct event_base *, struct conn *,
                               struct bufferevent **);
struct bufferevent *tls_connect(struct tls *, struct event_base *, int, const struct host *);
void tls_error(struct bufferevent *, char *, size_t, int *);
int tls_error_text(unsigned long, const char *, char *, size_t);
void tls_idle(struct bufferevent *);
int tls_error_is_trust(const char *);

#endif
