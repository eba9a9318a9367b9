/*
 * Upstream connections: asynchronous resolution, the private-address guard
 * applied to every address before connecting to it (so a name that
 * resolves into private space cannot be reached, whatever DNS says), one
 * connect attempt per allowed address in order, and a pool of idle
 * keep-alive connections per host:port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/util.h>

#include "proxy.h"
#include "resolver.h"
#include "tls.h"
#include "upstream.h"

#define UPSTREAM_MAX_ADDRS 16

#define UPSTREAM_BUCKETS 256 /* a power of two */

/*
 * Idle upstreams hang in a bucket chosen by the hash of their host:port
 * (newest first, so the warmest is reused), and on one list of them all
 * in release order, whose oldest goes when the pool is full.
 */
TAILQ_HEAD(upstream_list, upstream);
struct upstream_pool {
	struct egressd *e;
	struct upstream_list buckets[UPSTREAM_BUCKETS];
	unsigned nbucket[UPSTREAM_BUCKETS];
	struct upstream_list lru;
	unsigned nidle;
	struct slab jobs; /* struct upstream_job, apart from the long-lived heap */
	upstream_connect_fn connect;
	void *connect_arg;
};

static unsigned
upstream_bucket_of(const char *key)
{
	uint32_t h = 2166136261u;

	for (; *key != '\0'; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h & (UPSTREAM_BUCKETS - 1);
}

struct upstream_job {
	struct egressd *e;
	struct policy *policy;
	struct host host;
	uint16_t port;
	struct decision decision; /* the name's decision; the guard is applied per address */
	upstream_cb cb;
	void *arg;
	struct resolver_lookup *lookup; /* the in-process resolver's, in flight */
	int dns_err;
	int in_call;
	int sync_done;
	struct addr addrs[UPSTREAM_MAX_ADDRS];
	size_t naddrs;
	size_t next;
	struct bufferevent *bev; /* the attempt in progress */
	struct event *timer;     /* the whole resolve + connect phase */
	int last_errno;
	int any_allowed;
	int tls;        /* UPSTREAM_F_TLS */
	int tls_verify; /* the handshake failed on the certificate */
	char tls_detail[256];
	struct decision blocked; /* the guard's answer for a refused address */
};

static int upstream_try_next(struct upstream_job *);

/* "host:port", the pool's key; key has room for the longest name. */
static void
upstream_key(char key[HOST_NAME_MAXLEN + 8], const char *host, uint16_t port)
{
	size_t n = str_copy(key, HOST_NAME_MAXLEN + 1, host);

	key[n++] = ':';
	str_u64(key + n, port);
}

static void
upstream_addr_to_sockaddr(const struct addr *a, uint16_t port, struct sockaddr_storage *ss,
                          socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (a->af == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->a, 4);
		*len = sizeof *sin;
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->a, 16);
		*len = sizeof *sin6;
	}
}

static void
upstream_job_free(struct upstream_job *j)
{
	if (j->bev != NULL)
		bufferevent_free(j->bev);
	if (j->timer != NULL)
		event_free(j->timer);
	policy_unref(j->policy);
	slab_free(&j->e->pool->jobs, j);
}

/* Hand the outcome to the connection and forget the job. */
static void
upstream_finish(struct upstream_job *j, struct upstream *u, int err)
{
	upstream_cb cb = j->cb;
	void *arg = j->arg;
	struct upstream_result r;
	struct decision blocked;

	memset(&r, 0, sizeof r);
	r.u = u;
	r.err = err;
	r.sys_errno = j->last_errno;
	if (err == UPSTREAM_E_BLOCKED) {
		blocked = j->blocked;
		r.blocked = &blocked;
	}
	if (err == UPSTREAM_E_TLS) {
		r.verify = j->tls_verify;
		snprintf(r.detail, sizeof r.detail, "%s", j->tls_detail);
	}
	upstream_job_free(j);
	cb(arg, &r);
}

static void upstream_pool_drop(struct upstream_pool *, struct upstream *);

/* A plain upstream is readable: its connection reads it, or, pooled, it is done. */
static void
upstream_rd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	if (u->rd_cb != NULL) {
		u->rd_cb(fd, what, u->rd_arg);
		return;
	}
	if (u->pool != NULL)
		upstream_pool_drop(u->pool, u); /* an idle upstream that speaks or closes */
}

static struct upstream *
upstream_new(struct upstream_job *j, struct bufferevent *bev, const struct addr *a)
{
	struct upstream *u;

	u = xcalloc(1, sizeof *u);
	u->bev = bev;
	u->addr = *a;
	u->port = j->port;
	u->tls = j->tls;
	upstream_key(u->key, j->host.name, j->port);
	if (!u->tls) {
		bufferevent_disable(bev, EV_READ);
		u->rd = event_new(j->e->base, bufferevent_getfd(bev), EV_READ | EV_PERSIST,
		                  upstream_rd_cb, u);
		event_add(u->rd, NULL);
	}
	return u;
}

/* The TLS handshake with the upstream is over, one way or the other. */
static void
upstream_tls_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream_job *j = arg;
	struct upstream *u;

	if (what & BEV_EVENT_CONNECTED) {
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		u = upstream_new(j, bev, &j->addrs[j->next - 1]);
		j->bev = NULL;
		upstream_finish(j, u, 0);
		return;
	}
	/*
	 * A certificate that does not verify is not retried on the next
	 * address: it is the host's answer, and a 502 says so.
	 */
	tls_error(bev, j->tls_detail, sizeof j->tls_detail, &j->tls_verify);
	upstream_finish(j, NULL, UPSTREAM_E_TLS);
}

/* TCP is up: start TLS on the socket, verifying the host's certificate. */
static void
upstream_tls_start(struct upstream_job *j, struct bufferevent *bev)
{
	int fd = bufferevent_getfd(bev);

	bufferevent_setfd(bev, -1);
	bufferevent_free(bev);
	j->bev = tls_connect(j->e->tls, j->e->base, fd, &j->host);
	if (j->bev == NULL) {
		close(fd);
		snprintf(j->tls_detail, sizeof j->tls_detail, "cannot set up TLS");
		upstream_finish(j, NULL, UPSTREAM_E_TLS);
		return;
	}
	bufferevent_setcb(j->bev, NULL, NULL, upstream_tls_event_cb, j);
	bufferevent_enable(j->bev, EV_READ | EV_WRITE);
}

static void
upstream_connect_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream_job *j = arg;
	struct upstream *u;
	int one = 1;

	if (what & BEV_EVENT_CONNECTED) {
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		if (j->tls) {
			upstream_tls_start(j, bev);
			return;
		}
		u = upstream_new(j, bev, &j->addrs[j->next - 1]);
		j->bev = NULL;
		upstream_finish(j, u, 0);
		return;
	}
	j->last_errno = EVUTIL_SOCKET_ERROR();
	bufferevent_free(j->bev);
	j->bev = NULL;
	(void)upstream_try_next(j);
}

/*
 * Connect to the next address the guard allows. Returns 0 while an attempt
 * is in progress; -1 once none is left, after finishing (and freeing) j.
 */
static int
upstream_try_next(struct upstream_job *j)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const struct addr *a;

	while (j->next < j->naddrs) {
		a = &j->addrs[j->next++];
		if (!policy_addr_allowed(j->policy, a, &j->decision)) {
			j->blocked = j->decision;
			policy_check_addr(j->policy, a, &j->blocked);
			continue;
		}
		j->any_allowed = 1;
		upstream_addr_to_sockaddr(a, j->port, &ss, &len);
		j->bev = bufferevent_socket_new(j->e->base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (j->bev == NULL) {
			j->last_errno = ENOMEM;
			continue;
		}
		bufferevent_setcb(j->bev, NULL, NULL, upstream_connect_event_cb, j);
		if (j->e->pool->connect(j->e->pool->connect_arg, j->bev, (struct sockaddr *)&ss,
		                        (int)len) == 0)
			return 0;
		j->last_errno = EVUTIL_SOCKET_ERROR();
		bufferevent_free(j->bev);
		j->bev = NULL;
	}
	upstream_finish(j, NULL, j->any_allowed ? UPSTREAM_E_CONNECT : UPSTREAM_E_BLOCKED);
	return -1;
}

/* Take a lookup's outcome into j: the answer lives only during the callback. */
static int
upstream_take_answer(struct upstream_job *j, const struct resolver_answer *a)
{
	size_t i;

	if (a->err == RESOLVER_E_BLOCKED) {
		/* A blocked name in the CNAME chain: the resolver's decision stands. */
		j->blocked = *a->blocked;
		return UPSTREAM_E_BLOCKED;
	}
	if (a->err != RESOLVER_OK)
		return UPSTREAM_E_RESOLVE;
	for (i = 0; i < a->naddrs && j->naddrs < UPSTREAM_MAX_ADDRS; i++)
		j->addrs[j->naddrs++] = a->addrs[i];
	return UPSTREAM_OK;
}

/* Connect to what the lookup found; -1 once j is finished (and freed). */
static int
upstream_resolved(struct upstream_job *j, int err)
{
	if (err != UPSTREAM_OK) {
		upstream_finish(j, NULL, err);
		return -1;
	}
	return upstream_try_next(j);
}

static void
upstream_dns_cb(void *arg, const struct resolver_answer *a)
{
	struct upstream_job *j = arg;

	j->lookup = NULL;
	j->dns_err = upstream_take_answer(j, a);
	if (j->in_call) {
		/* Answered from the cache inside resolver_lookup: go on after it returns. */
		j->sync_done = 1;
		return;
	}
	(void)upstream_resolved(j, j->dns_err);
}

static void
upstream_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_job *j = arg;

	resolver_lookup_cancel(j->lookup);
	j->lookup = NULL;
	j->last_errno = ETIMEDOUT;
	upstream_finish(j, NULL, UPSTREAM_E_TIMEOUT);
}

static void
upstream_pool_unlink(struct upstream_pool *pool, struct upstream *u)
{
	TAILQ_REMOVE(&pool->buckets[u->bucket], u, entry);
	pool->nbucket[u->bucket]--;
	TAILQ_REMOVE(&pool->lru, u, lru_entry);
	pool->nidle--;
}

/* Take an idle pooled connection whose address the policy still allows. */
static struct upstream *
upstream_pool_take(struct upstream_pool *pool, const struct policy *p, const char *key, int tls,
                   const struct decision *d)
{
	unsigned b = upstream_bucket_of(key);
	struct upstream *u;

	TAILQ_FOREACH(u, &pool->buckets[b], entry)
	{
		if (u->tls != tls || strcmp(u->key, key) != 0)
			continue;
		if (!policy_addr_allowed(p, &u->addr, d))
			continue;
		upstream_pool_unlink(pool, u);
		event_del(u->idle_timer);
		bufferevent_setcb(u->bev, NULL, NULL, NULL, NULL);
		u->reused = 1;
		return u;
	}
	return NULL;
}

/*
 * Get a connection to host:port for a request the policy allowed (d).
 * cb runs once, later or before this returns, unless the job is cancelled;
 * returns the job to cancel, or NULL when cb already ran.
 */
struct upstream_job *
upstream_get(struct egressd *e, struct policy *p, const struct host *h, uint16_t port,
             const struct decision *d, int flags, upstream_cb cb, void *arg)
{
	struct upstream_job *j;
	struct upstream_result r;
	struct upstream *u;
	struct timeval tv = {e->lim.connect_timeout, 0};
	char key[HOST_NAME_MAXLEN + 8];

	upstream_key(key, h->name, port);
	memset(&r, 0, sizeof r);
	if (!(flags & UPSTREAM_F_FRESH) &&
	    (u = upstream_pool_take(e->pool, p, key, (flags & UPSTREAM_F_TLS) != 0, d)) != NULL) {
		r.u = u;
		cb(arg, &r);
		return NULL;
	}
	j = slab_alloc(&e->pool->jobs);
	j->e = e;
	j->policy = policy_ref(p);
	j->host = *h;
	j->port = port;
	j->decision = *d;
	j->tls = (flags & UPSTREAM_F_TLS) != 0;
	j->cb = cb;
	j->arg = arg;
	j->timer = evtimer_new(e->base, upstream_timeout_cb, j);
	evtimer_add(j->timer, &tv);
	if (h->kind == HOST_ADDR) {
		j->addrs[0] = h->addr;
		j->naddrs = 1;
		return upstream_try_next(j) == 0 ? j : NULL;
	}
	j->in_call = 1;
	j->lookup = resolver_lookup(e->resolver, p, h->name, upstream_dns_cb, j);
	j->in_call = 0;
	if (j->sync_done)
		return upstream_resolved(j, j->dns_err) == 0 ? j : NULL;
	return j;
}

/* The connection went away while waiting: drop the job without a callback. */
void
upstream_cancel(struct upstream_job *j)
{
	if (j == NULL)
		return;
	resolver_lookup_cancel(j->lookup);
	j->lookup = NULL;
	upstream_job_free(j);
}

static void
upstream_pool_drop(struct upstream_pool *pool, struct upstream *u)
{
	upstream_pool_unlink(pool, u);
	upstream_free(u);
}

/* An idle upstream that speaks or closes is of no further use. */
static void
upstream_idle_read_cb(struct bufferevent *bev, void *arg)
{
	struct upstream *u = arg;

	upstream_pool_drop(u->pool, u);
}

static void
upstream_idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream *u = arg;

	upstream_pool_drop(u->pool, u);
}

static void
upstream_idle_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	upstream_pool_drop(u->pool, u);
}

/* Keep a finished keep-alive upstream for the next request to its host:port. */
void
upstream_release(struct egressd *e, struct upstream *u, int reusable)
{
	struct upstream_pool *pool = e->pool;
	struct timeval tv = {e->lim.pool_idle_timeout, 0};
	unsigned b;

	if (u == NULL)
		return;
	if (!reusable || e->draining || evbuffer_get_length(bufferevent_get_input(u->bev)) > 0) {
		upstream_free(u);
		return;
	}
	b = upstream_bucket_of(u->key);
	if (pool->nbucket[b] >= e->lim.pool_max_idle) {
		upstream_free(u);
		return;
	}
	if (pool->nidle >= e->lim.pool_max_total)
		upstream_pool_drop(pool, TAILQ_LAST(&pool->lru, upstream_list));
	u->pool = pool;
	u->bucket = b;
	if (u->idle_timer == NULL)
		u->idle_timer = evtimer_new(e->base, upstream_idle_timeout_cb, u);
	evtimer_add(u->idle_timer, &tv);
	bufferevent_set_timeouts(u->bev, NULL, NULL);
	bufferevent_setcb(u->bev, upstream_idle_read_cb, NULL, upstream_idle_event_cb, u);
	if (u->rd != NULL) {
		u->rd_cb = NULL;
		u->rd_arg = NULL;
		/*
		 * Pending again; event_add(NULL) would keep the exchange's
		 * response timeout, so it is removed on its own (no epoll
		 * change): the pool's idle timer alone decides.
		 */
		event_add(u->rd, NULL);
		event_remove_timer(u->rd);
	} else
		bufferevent_enable(u->bev, EV_READ);
	TAILQ_INSERT_HEAD(&pool->buckets[b], u, entry);
	pool->nbucket[b]++;
	TAILQ_INSERT_HEAD(&pool->lru, u, lru_entry);
	pool->nidle++;
}

void
upstream_free(struct upstream *u)
{
	if (u == NULL)
		return;
	if (u->idle_timer != NULL)
		event_free(u->idle_timer);
	if (u->rd != NULL)
		event_free(u->rd);
	bufferevent_free(u->bev);
	free(u);
}

static int
upstream_connect_socket(void *arg, struct bufferevent *bev, const struct sockaddr *sa, int len)
{
	return bufferevent_socket_connect(bev, sa, len);
}

struct upstream_pool *
upstream_pool_new(struct egressd *e)
{
	struct upstream_pool *pool;

	unsigned i;

	pool = xcalloc(1, sizeof *pool);
	pool->e = e;
	for (i = 0; i < UPSTREAM_BUCKETS; i++)
		TAILQ_INIT(&pool->buckets[i]);
	TAILQ_INIT(&pool->lru);
	slab_init(&pool->jobs, sizeof(struct upstream_job));
	pool->connect = upstream_connect_socket;
	return pool;
}

/* Start connection attempts with fn instead (engine tests); NULL: the socket's own. */
void
upstream_pool_set_connect(struct upstream_pool *pool, upstream_connect_fn fn, void *arg)
{
	pool->connect = fn != NULL ? fn : upstream_connect_socket;
	pool->connect_arg = fn != NULL ? arg : NULL;
}

void
upstream_pool_free(struct upstream_pool *pool)
{
	struct upstream *u;

	if (pool == NULL)
		return;
	while ((u = TAILQ_FIRST(&pool->lru)) != NULL)
		upstream_pool_drop(pool, u);
	slab_release(&pool->jobs);
	free(pool);
}

/*
 * Give back the memory of connection attempts a burst left, and the TLS
 * buffers of idle pooled upstreams (the trim timer).
 */
void
upstream_pool_trim(struct upstream_pool *pool)
{
	struct upstream *u;

	slab_trim(&pool->jobs, 1);
	TAILQ_FOREACH(u, &pool->lru, lru_entry)
	{
		if (u->tls)
			tls_idle(u->bev);
	}
}

/* Close every idle upstream (SIGTERM). */
void
upstream_pool_flush(struct upstream_pool *pool)
{
	struct upstream *u;

	while ((u = TAILQ_FIRST(&pool->lru)) != NULL)
		upstream_pool_drop(pool, u);
}

const char *
upstream_strerror(int err)
{
	switch (err) {
	case UPSTREAM_E_RESOLVE:
		return "cannot resolve upstream host";
	case UPSTREAM_E_CONNECT:
		return "upstream connection failed";
	case UPSTREAM_E_TIMEOUT:
		return "upstream connect timed out";
	case UPSTREAM_E_BLOCKED:
		return "every upstream address is blocked";
	case UPSTREAM_E_TLS:
		return "upstream TLS failed";
	}
	return "ok";
}

/* Idle connections kept for reuse, for status and metrics. */
unsigned
upstream_pool_idle(const struct upstream_pool *pool)
{
	return pool->nidle;
}
