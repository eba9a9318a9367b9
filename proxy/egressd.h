/*
 * egressd's runtime: the context every part hangs off, connections,
 * listeners and upstreams.
 */
#ifndef EGRESSD_H
#define EGRESSD_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "policy.h"
#include "proxy.h"

struct conn;
struct upstream;
struct evconnlistener;
struct evdns_base;

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
};

struct egressd {
	struct event_base *base;
	struct evdns_base *dns;
	struct policy *policy; /* current snapshot; conns hold their own ref */
	struct audit *audit;
	char **files; /* --config, in order */
	size_t nfiles;
	struct listener *proxy_lst;
	struct event *ev_hup;
	struct event *ev_term;
	struct event *ev_int;
	struct event *ev_grace;
	TAILQ_HEAD(, conn) conns;
	unsigned nconns;
	uint64_t conn_seq;
	struct egressd_limits lim;
	struct http_limits http;
	struct upstream_pool *pool;
	int draining;
};

/* main.c */
void egressd_conn_gone(struct egressd *);

/* listener.c */
struct listener;
struct listener *listener_new(struct egressd *, int);
void listener_free(struct listener *);
void listener_pause(struct listener *);
void listener_resume(struct listener *);
int listener_bind(const char *, int, char *, size_t);
int listener_inherited(const char *);
int listener_is_loopback(int);

/* conn.c */
void conn_accept(struct egressd *, int, const struct sockaddr *, socklen_t);
void conn_close(struct conn *, const char *);
void conn_drain_idle(struct egressd *);
void conn_close_all(struct egressd *, const char *);

/* upstream.c */
struct upstream {
	TAILQ_ENTRY(upstream) entry; /* in the pool while idle */
	struct bufferevent *bev;
	struct addr addr; /* the address connected to */
	uint16_t port;
	char key[HOST_NAME_MAXLEN + 8]; /* host:port */
	struct event *idle_timer;
	struct upstream_pool *pool;
	int reused; /* came from the pool */
};
enum upstream_err {
	UPSTREAM_OK,
	UPSTREAM_E_RESOLVE,
	UPSTREAM_E_CONNECT,
	UPSTREAM_E_TIMEOUT,
	UPSTREAM_E_BLOCKED, /* the guard refused every address */
};
struct upstream_result {
	struct upstream *u; /* NULL on error */
	int err;
	int sys_errno;
	struct decision decision; /* with the guard applied to the address */
};
typedef void (*upstream_cb)(void *, struct upstream_result *);
struct upstream_job;
struct upstream_pool *upstream_pool_new(struct egressd *);
void upstream_pool_free(struct upstream_pool *);
void upstream_pool_flush(struct upstream_pool *);
#define UPSTREAM_F_FRESH 0x1 /* a new connection, not one from the pool */
struct upstream_job *upstream_get(struct egressd *, struct policy *, const struct host *, uint16_t,
                                  const struct decision *, int, upstream_cb, void *);
void upstream_cancel(struct upstream_job *);
void upstream_release(struct egressd *, struct upstream *, int);
void upstream_free(struct upstream *);
const char *upstream_strerror(int);

#endif
