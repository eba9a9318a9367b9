/*
 * Upstream connections (upstream.c): resolved, guarded and connected for a
 * decided request, or taken from the pool of idle keep-alive connections
 * per host:port. Each request gets its result through a callback; a plain
 * upstream's socket is read through an event the upstream keeps for its
 * whole life, whose readiness goes to the reader attached to it.
 */
#ifndef UPSTREAM_H
#define UPSTREAM_H

#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "policy.h"

struct bufferevent;
struct egressd;
struct upstream_pool;

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
	 * by the connection they serve (rd_cb, rd_arg) or, while pooled, by
	 * the pool: no epoll change as a connection takes one from the pool
	 * and gives it back.
	 */
	struct event *rd;
	event_callback_fn rd_cb; /* NULL while pooled */
	void *rd_arg;
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
/*
 * How a connection attempt starts: bufferevent_socket_connect, unless an
 * engine test (tests/engine/) hands the connections in itself.
 */
typedef int (*upstream_connect_fn)(void *, struct bufferevent *, const struct sockaddr *, int);
struct upstream_job;
struct upstream_pool *upstream_pool_new(struct egressd *);
void upstream_pool_set_connect(struct upstream_pool *, upstream_connect_fn, void *);
void upstream_pool_free(struct upstream_pool *);
void upstream_pool_flush(struct upstream_pool *);
void upstream_pool_trim(struct upstream_pool *);
unsigned upstream_pool_idle(const struct upstream_pool *);
#define UPSTREAM_F_FRESH 0x1 /* a new connection, not one from the pool */
#define UPSTREAM_F_TLS   0x2 /* TLS to the upstream (intercepted requests) */
struct upstream_job *upstream_get(struct egressd *, struct policy *, const struct host *, uint16_t,
                                  const struct decision *, int, upstream_cb, void *);
void upstream_cancel(struct upstream_job *);
void upstream_release(struct egressd *, struct upstream *, int);
void upstream_free(struct upstream *);
const char *upstream_strerror(int);

#endif
