/*
 * The resolver module: egressd's DNS server. It answers clients over UDP
 * and TCP, decides every name with the same policy as the proxy, forwards
 * allowed questions upstream, caches the answers and filters them (names
 * in CNAME chains, private addresses, ECH). The proxy resolves its
 * upstream hosts through resolver_lookup(), in-process, so what the
 * payload is told and where the proxy connects agree. This header is what
 * egressd uses; the module's inside is in resolver_int.h.
 */
#ifndef RESOLVER_H
#define RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

struct addr;
struct audit;
struct decision;
struct event_base;
struct policy;

#define RESOLVER_MAX_UPSTREAMS 8
#define RESOLVER_MAX_ADDRS     16 /* addresses a lookup returns */
#define RESOLVER_DEFAULT_PORT  53

/* The resolver's settings; resolver_conf_init() fills the defaults. */
struct resolver_conf {
	struct sockaddr_storage upstream[RESOLVER_MAX_UPSTREAMS];
	socklen_t upstream_len[RESOLVER_MAX_UPSTREAMS];
	size_t nupstream;
	unsigned attempt_ms;    /* one try at one upstream */
	unsigned deadline_ms;   /* a whole question, every try included */
	unsigned tcp_idle_secs; /* a client TCP connection with nothing in flight */
	unsigned max_tcp_conns; /* client TCP connections at once */
	unsigned max_pending;   /* questions in flight upstream */
	unsigned max_waiters;   /* queries waiting for them, all questions together */
	size_t cache_entries;   /* answers kept */
	size_t cache_bytes;     /* and the bytes they may take */
	uint32_t max_ttl;       /* seconds a positive answer is kept at most */
	uint32_t max_neg_ttl;   /* ... and a negative one (RFC 2308) */
	int audit_cached;       /* audit answers served from the cache too */
};

/* What a lookup found, handed to its callback. */
enum resolver_err {
	RESOLVER_OK,
	RESOLVER_E_NONAME,  /* NXDOMAIN, or no address of either family */
	RESOLVER_E_FAIL,    /* every upstream failed or timed out */
	RESOLVER_E_BLOCKED, /* a name of the CNAME chain is blocked: see blocked */
};
struct resolver_answer {
	int err;
	const struct addr *addrs; /* IPv4 first, unfiltered by the address guard */
	size_t naddrs;
	const struct decision *blocked; /* RESOLVER_E_BLOCKED */
};
typedef void (*resolver_lookup_cb)(void *, const struct resolver_answer *);

/* What the resolver has done, for status and metrics. */
struct resolver_stats {
	uint64_t queries[3][2]; /* clients' queries by enum policy_action and cached */
	size_t cache_entries;
	size_t cache_bytes;
};

/* resolver.c */
struct resolver;
struct resolver_lookup;
void resolver_conf_init(struct resolver_conf *);
const char *resolver_conf_add_upstream(struct resolver_conf *, const char *);
const char *resolver_conf_resolv(struct resolver_conf *, const char *);
struct resolver *resolver_new(struct event_base *, const struct resolver_conf *, struct policy *,
                              struct audit *);
void resolver_free(struct resolver *);
void resolver_set_policy(struct resolver *, struct policy *);
int resolver_bind(const char *, int *, int *, char *, size_t);
int resolver_listen(struct resolver *, int, int);
void resolver_stop(struct resolver *);
struct resolver_lookup *resolver_lookup(struct resolver *, struct policy *, const char *,
                                        resolver_lookup_cb, void *);
void resolver_lookup_cancel(struct resolver_lookup *);
const char *resolver_strerror(int);
void resolver_stats(const struct resolver *, struct resolver_stats *);

#endif
