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
struct event;
struct event_base;
struct evbuffer;
struct listener;
struct nflog;
struct resolver;
struct tls;
struct upstream_pool;

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

/* What a runtime is made from; egressd_conf_init fills in the defaults. */
struct egressd_conf {
	struct policy *policy;           /* the first snapshot: egressd takes this reference */
	struct audit *audit;             /* egressd takes it, and closes it */
	const struct config_file *files; /* what SIGHUP reloads; outlives the runtime */
	size_t nfiles;
	struct egressd_limits lim;
	struct http_limits http;
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
	struct event *ev_grace;
	struct event *ev_trim;
	struct event *ev_audit; /* writes the batched audit lines */
	/*
	 * Called by the engine after a connection has gone (egressd_new sets
	 * the runtime's own: resume accepting, or end a drain).
	 */
	void (*conn_gone)(struct egressd *);
	TAILQ_HEAD(, conn) conns;
	TAILQ_HEAD(, conn) closed; /* closed, to be freed by ev_reap */
	struct event *ev_reap;
	unsigned nconns;
	uint64_t conn_seq;
	struct egressd_limits lim;
	struct http_limits http;
	struct upstream_pool *pool;
	struct evbuffer *scratch; /* bytes on their way to a side, within one call */
	struct slab xslab;        /* struct exchange */
	int draining;
};

/* egressd.c */
void egressd_conf_init(struct egressd_conf *);
struct policy *egressd_policy_load(const struct config_file *, size_t);
struct egressd *egressd_new(const struct egressd_conf *);
void egressd_free(struct egressd *);
int egressd_start(struct egressd *);
void egressd_run(struct egressd *);

/* listener.c */
enum listener_kind {
	LISTENER_PROXY,       /* the explicit proxy */
	LISTENER_TRANSPARENT, /* connections the sandbox's rules redirect */
	LISTENER_DNS,         /* the resolver's (bound by resolver/) */
};
struct listener *listener_new(struct egressd *, int, enum listener_kind);
void listener_free(struct listener *);
void listener_pause(struct listener *);
void listener_resume(struct listener *);
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

#endif
