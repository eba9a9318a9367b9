/*
 * egressd's runtime (egressd.c): the context every part of the proxy
 * hangs off, made by egressd_new and run by egressd_run, and what the
 * runtime drives: the listeners, the NFLOG reader and the entry points
 * of the connection engine. The engine's own types are in conn_int.h,
 * the HTTP codec in http/http.h, TLS in tls/tls.h.
 */
#ifndef PROXY_H
#define PROXY_H

#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/socket.h>

#include "common.h"
#include "http.h"
#include "policy.h"

struct audit;
struct conn;
struct control;
struct event;
struct event_base;
struct evbuffer;
struct listener;
struct metrics_http;
struct nflog;
struct resolver;
struct tls;
struct upstream_pool;

struct egressd_limits {
	unsigned max_conns;           /* client connections at once */
	size_t max_buffered;          /* bytes held in connection buffers, all together */
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

/*
 * Overload: a limit reached (connections open, or bytes held in buffers).
 * While one holds, new connections wait in the listen queue; past the
 * memory budget, connections holding more than a little stop reading and
 * requests that need a body held are refused (503). Each episode is a
 * `daemon` line when it starts and when it ends.
 */
enum overload_kind {
	OVERLOAD_CONNS,  /* --max-conns */
	OVERLOAD_MEMORY, /* --max-buffered */
	OVERLOAD_COUNT,
};
struct overload {
	int on;
	uint64_t since_ms; /* monotonic, while on */
	uint64_t episodes; /* how many began */
	uint64_t ms_total; /* time spent in the ones that ended */
	uint64_t shed;     /* requests refused (memory), accept pauses (connections) */
	uint64_t ep_shed;  /* ... in this episode */
};

/*
 * metrics.c: what egressd counts, kept in the runtime as plain integers
 * (one event loop: no locks, and an increment costs what an add costs),
 * counted where the audit events are written. Label sets are bounded:
 * no host names; the hosts blocked most are kept apart, in a small table.
 */
enum metrics_event {
	METRICS_EV_HTTP,    /* the audit's http events */
	METRICS_EV_CONNECT, /* connect */
	METRICS_EV_TCP,     /* tcp */
	METRICS_EV_TLS,     /* tls: a handshake refused or failed */
	METRICS_EV_COUNT,
};
enum metrics_conn {
	METRICS_CONN_HTTP,        /* plain HTTP requests, or waiting for one */
	METRICS_CONN_INTERCEPTED, /* TLS with the client, requests inside decided */
	METRICS_CONN_TUNNEL,      /* bytes relayed both ways */
	METRICS_CONN_HANDSHAKE,   /* a CONNECT's answer, a TLS handshake or a first peek */
	METRICS_CONN_COUNT,
};
#define METRICS_BLOCKED_MAX 64 /* hosts kept for the top blocked list */
struct metrics_blocked {
	uint64_t hash; /* of host; 0: a free slot */
	uint64_t count;
	char host[HOST_NAME_MAXLEN + 1];
	char rule[HOST_NAME_MAXLEN + 32]; /* the rule of the last block */
	enum policy_list list;
	char source[512];
};
struct metrics {
	uint64_t requests[METRICS_EV_COUNT][3]; /* by event and enum policy_action */
	uint64_t bytes_up;                      /* request bodies sent on, tunnels' bytes up */
	uint64_t bytes_down;
	uint64_t accepted[2]; /* client connections: proxy, transparent listener */
	uint64_t packets_dropped;
	uint64_t reloads[2]; /* the policy reloaded, or a reload failed */
	uint64_t control_requests;
	uint64_t control_errors;
	struct metrics_blocked *blocked; /* METRICS_BLOCKED_MAX, made with the first block */
};

/* What a runtime is made from; egressd_conf_init fills in the defaults. */
struct egressd_conf {
	struct policy *policy;           /* the first snapshot: egressd takes this reference */
	struct audit *audit;             /* egressd takes it, and closes it */
	const struct config_file *files; /* what SIGHUP reloads; outlives the runtime */
	size_t nfiles;
	struct egressd_limits lim;
	struct http_limits http;
	const char *audit_path; /* what status shows; "-" for stdout */
};

/* A file the policy was loaded from, as status shows it. */
struct egressd_source {
	char *path;
	const char *kind; /* "config", "project" (a --project-config) or "list" */
	struct timespec mtime;
	int missing; /* it could not be stat()ed when the policy was loaded */
};

struct egressd {
	struct event_base *base;
	struct resolver *resolver; /* DNS: the listener and the proxy's lookups */
	struct tls *tls;           /* interception: the CA, leaves and TLS contexts; NULL: none */
	struct policy *policy;     /* current snapshot; conns hold their own ref */
	struct audit *audit;
	const struct config_file *files; /* --config and --project-config, in order */
	size_t nfiles;
	struct listener *proxy_lst;
	struct listener *transparent_lst[2]; /* IPv4 and IPv6 */
	struct nflog *nflog;                 /* packets the sandbox's rules dropped */
	struct event *ev_hup;
	struct event *ev_term;
	struct event *ev_int;
	struct event *ev_usr1; /* reopens the audit log */
	struct event *ev_grace;
	struct event *ev_trim;
	struct event *ev_audit; /* writes the batched audit lines */
	/*
	 * Called by the engine after a connection has gone (egressd_new sets
	 * the runtime's own: resume accepting, or end a drain).
	 */
	void (*conn_gone)(struct egressd *);
	/* Called when a limit is hit (listener, engine): starts an overload episode. */
	void (*overloaded)(struct egressd *, enum overload_kind);
	TAILQ_HEAD(, conn) conns;
	TAILQ_HEAD(, conn) closed; /* closed, to be freed by ev_reap */
	struct event *ev_reap;
	unsigned nconns;
	uint64_t conn_seq;
	/* The heap trim: the activity and idle upstreams at the last tick. */
	uint64_t trim_activity;
	unsigned trim_pool_idle;
	unsigned trim_busy; /* ticks with activity since the heap was last trimmed */
	size_t buffered;    /* bytes in the connections' buffers (conn_account) */
	struct overload ov[OVERLOAD_COUNT];
	struct egressd_limits lim;
	struct http_limits http;
	struct upstream_pool *pool;
	struct evbuffer *scratch; /* bytes on their way to a side, within one call */
	struct slab xslab;        /* struct exchange */
	int draining;
	struct metrics m;
	struct control *control;        /* --control: the Unix socket; NULL: none */
	struct metrics_http *scrape;    /* --metrics: GET /metrics; NULL: none */
	struct timespec started;        /* wall clock at egressd_new */
	struct timespec loaded;         /* when the current policy was loaded */
	uint64_t generation;            /* of the policy: 1 at start, one more each reload */
	struct egressd_source *sources; /* what the current policy was loaded from */
	size_t nsources;
	char *audit_path;
	char *explain_cmd; /* what the explain command a 403 names takes after the host */
};

/* metrics.c */
/* Count one audited exchange; kind is enum metrics_event. */
static inline void
metrics_count(struct metrics *m, int kind, enum policy_action action, int64_t up, int64_t down)
{
	m->requests[kind][action]++;
	if (up > 0)
		m->bytes_up += (uint64_t)up;
	if (down > 0)
		m->bytes_down += (uint64_t)down;
}
void metrics_blocked_note(struct metrics *, const char *, const struct decision *);
size_t metrics_blocked_top(const struct metrics *, const struct metrics_blocked **, size_t);
void metrics_free(struct metrics *);
/* Everything the exposition shows, gathered at once (metrics_gather). */
struct metrics_snapshot {
	const struct metrics *m;
	const char *version;
	double start_time; /* seconds since the epoch */
	double policy_loaded;
	uint64_t generation;
	const char *mode;
	uint64_t dns[3][2]; /* client queries by enum policy_action and cached */
	uint64_t dns_cache_entries;
	uint64_t dns_cache_bytes;
	uint64_t open[METRICS_CONN_COUNT];
	struct overload m_ov[OVERLOAD_COUNT];
	uint64_t max_conns;
	uint64_t buffered;
	uint64_t max_buffered;
	uint64_t pool_idle;
	int has_ca;
	double ca_not_after;
	uint64_t leaves_minted;
	uint64_t leaves_cached;
	uint64_t audit_lines;
	uint64_t audit_bytes;
	uint64_t audit_errors;
	int audit_writable;        /* 0 while lines cannot be written */
	uint64_t audit_refused;    /* requests refused because they could not be audited */
	uint64_t audit_unwritten;  /* lines that could not be written */
	uint64_t audit_unwritable; /* times the log became unwritable */
	uint64_t audit_rotations;
	uint64_t audit_reserved; /* bytes allocated ahead of the lines */
	uint64_t control_clients;
};
void metrics_gather(struct egressd *, struct metrics_snapshot *);
void metrics_format(const struct metrics_snapshot *, struct buf *);
const char *metrics_event_name(int);
const char *metrics_conn_name(int);
struct metrics_http *metrics_http_new(struct egressd *, int);
void metrics_http_free(struct metrics_http *);

/* control.c: the control socket */
#define CONTROL_MAX_REQUEST  (2 * 1024 * 1024) /* one request line, newline included */
#define CONTROL_MAX_BODY     (1024 * 1024)     /* explain's body, decoded */
#define CONTROL_MAX_HEADERS  32
#define CONTROL_MAX_CLIENTS  64                /* connected at once; more are told "busy" */
#define CONTROL_MAX_BUFFERED (8 * 1024 * 1024) /* request bytes held for all clients */
#define CONTROL_REQUEST_SECS 5                 /* to send a whole request line */
#define CONTROL_DEFAULT_PATH "/run/opencode-sandbox/egressd.sock"
enum control_cmd {
	CONTROL_EXPLAIN,
	CONTROL_STATUS,
	CONTROL_METRICS,
	CONTROL_RELOAD,
};
/* A parsed request; its strings live in root (a jansson value) or body. */
struct control_request {
	enum control_cmd cmd;
	void *root;
	const char *target;       /* explain: HOST or URL */
	const char *method;       /* explain: default GET */
	const char *content_type; /* explain: NULL when absent */
	const char *header_names[CONTROL_MAX_HEADERS];
	const char *header_values[CONTROL_MAX_HEADERS];
	size_t nheaders;
	char *body; /* explain: decoded, NUL-terminated; NULL when absent */
	size_t body_len;
	int body_truncated; /* the client cut the body */
	char error[192];    /* why control_request_parse refused it */
};
const char *control_request_parse(const char *, size_t, struct control_request *);
void control_request_free(struct control_request *);
struct control *control_new(struct egressd *, int, const char *, int);
void control_free(struct control *);
unsigned control_clients(const struct control *);
const char *control_path(const struct control *);
int control_bind(const char *, char *, size_t);

/* dryrun.c: explain on the live policy */
struct dryrun;
/* The answer's JSON object (without "ok"), or NULL with err; valid during the call. */
typedef void (*dryrun_cb)(void *, const char *, size_t, const char *);
struct dryrun *dryrun_start(struct egressd *, struct control_request *, dryrun_cb, void *);
void dryrun_cancel(struct dryrun *);

/* status.c */
void status_json(struct egressd *, struct buf *);
void status_policy_json(struct egressd *, struct buf *);

/* egressd.c */
void egressd_conf_init(struct egressd_conf *);
struct policy *egressd_policy_load(const struct config_file *, size_t);
int egressd_reload(struct egressd *, struct buf *);
void egressd_explain_cmd(struct egressd *, const char *);
struct egressd *egressd_new(const struct egressd_conf *);
void egressd_free(struct egressd *);
int egressd_start(struct egressd *);
void egressd_run(struct egressd *);

/* listener.c */
enum listener_kind {
	LISTENER_PROXY,       /* the explicit proxy */
	LISTENER_TRANSPARENT, /* connections the sandbox's rules redirect */
	LISTENER_DNS,         /* the resolver's (bound by resolver/) */
	LISTENER_METRICS,     /* --metrics: GET /metrics */
};
struct listener *listener_new(struct egressd *, int, enum listener_kind);
void listener_free(struct listener *);
void listener_pause(struct listener *);
void listener_resume(struct listener *);
void listener_shut(struct listener *);
int listener_bind(const char *, enum listener_kind, int, char *, size_t);
int listener_private(int, const struct sockaddr_storage *, enum listener_kind, int, char *, size_t);

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
enum nflog_next nflog_next(const unsigned char **, size_t *, struct nflog_packet *, const char **);
const char *nflog_decode_packet(const unsigned char *, size_t, struct nflog_packet *);
const char *nflog_proto_name(const struct nflog_packet *, char *, size_t);
const char *nflog_reason(const struct nflog_packet *, const char **);
struct nflog *nflog_new(struct egressd *, int);
void nflog_drain(struct nflog *);
void nflog_free(struct nflog *);

/* conn.c and transparent.c: the connection engine, as the runtime drives it */
void conn_engine_init(struct egressd *);
void conn_engine_free(struct egressd *);
void conn_accept(struct egressd *, int, const struct sockaddr *, socklen_t);
void transparent_accept(struct egressd *, int, const struct sockaddr *);
void conn_drain_idle(struct egressd *);
void conn_trim_idle(struct egressd *);
void conn_close_all(struct egressd *, const char *);
void conn_count_kinds(struct egressd *, uint64_t[METRICS_CONN_COUNT]);

#endif
