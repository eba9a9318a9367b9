/*
 * The resolver module: egressd's DNS server. It answers clients over UDP
 * and TCP, decides every name with the same policy as the proxy, forwards
 * allowed questions upstream, caches the answers and filters them (names
 * in CNAME chains, private addresses, ECH). The proxy resolves its
 * upstream hosts through resolver_lookup(), in-process, so what the
 * payload is told and where the proxy connects agree.
 */
#ifndef RESOLVER_H
#define RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <ldns/ldns.h>

#include "audit.h"
#include "common.h"
#include "policy.h"

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
int resolver_listen(struct resolver *, int, int);
void resolver_stop(struct resolver *);
struct resolver_lookup *resolver_lookup(struct resolver *, struct policy *, const char *,
                                        resolver_lookup_cb, void *);
void resolver_lookup_cancel(struct resolver_lookup *);
const char *resolver_strerror(int);

/*
 * The rest is the module's inside: the files share these, the tests and
 * the fuzz target call them directly.
 */

/* msg.c */
#define MSG_NAME_MAX      255 /* a name in wire form */
#define MSG_KEY_MAX       (MSG_NAME_MAX + 4)
#define MSG_QUERY_HDR     12   /* the header before a query's question */
#define MSG_UDP_SIZE      1232 /* the EDNS size advertised, both ways */
#define MSG_UDP_PLAIN     512  /* what a client without EDNS can take */
#define MSG_MAX           65535
#define MSG_EDE_BLOCKED   15 /* RFC 8914 */
#define MSG_EDE_NETWORK   23
#define MSG_EDE_NO_REACH  22
#define MSG_RCODE_BADVERS 16

enum msg_rcode {
	MSG_NOERROR = 0,
	MSG_FORMERR = 1,
	MSG_SERVFAIL = 2,
	MSG_NXDOMAIN = 3,
	MSG_NOTIMP = 4,
	MSG_REFUSED = 5,
};

/* A client's query, checked; the parts a reply or a question key needs. */
struct msg_query {
	uint16_t id;
	uint8_t flags[2];
	uint16_t qtype;
	uint16_t qclass;
	int has_question;
	uint8_t qname[MSG_NAME_MAX]; /* as received, case kept */
	size_t qname_len;
	uint8_t key[MSG_KEY_MAX]; /* lowercase name, type, class */
	size_t key_len;
	char name[MSG_NAME_MAX + 1]; /* lowercase text without the final dot */
	int name_ok;                 /* only letters, digits, '-' and '_' */
	int edns;
	uint16_t udp_size;
	uint8_t edns_version;
};

/* One cached answer as clients get it under one policy. */
struct answer_served {
	uint8_t *wire; /* id 0, lowercase question, no OPT */
	size_t len;
	uint16_t *ttl_off; /* where each record's TTL sits */
	size_t nttl;
	unsigned rcode;
	int ede; /* -1: none */
	char ede_text[160];
	struct decision *verdict; /* NULL: the name's own decision stands */
};

const char *msg_parse_query(const uint8_t *, size_t, struct msg_query *, int *);
size_t msg_reply_simple(const struct msg_query *, unsigned, int, const char *, uint8_t *, size_t);
size_t msg_reply_served(const struct msg_query *, const struct answer_served *, uint32_t, size_t,
                        uint8_t *, size_t);
size_t msg_build_query(const uint8_t *, size_t, uint16_t, uint8_t *, size_t);
const char *msg_name_key(const char *, uint16_t, uint8_t *, size_t *);
extern const char msg_err_case[];
void msg_name_mix(uint8_t *, size_t, const uint8_t *, size_t);
const char *msg_check_answer(const uint8_t *, size_t, uint16_t, const uint8_t *, size_t,
                             ldns_pkt **);
int msg_name_text(const uint8_t *, size_t, char *, size_t);
int msg_ttl_offsets(const uint8_t *, size_t, struct answer_served *);
const char *msg_type_name(uint16_t, char *, size_t);
const char *msg_rcode_name(unsigned);

/* answer.c */
int answer_prepare(ldns_pkt *, const struct resolver_conf *, uint8_t **, size_t *, uint32_t *);
int answer_served_build(const uint8_t *, size_t, const struct policy *, const struct decision *,
                        struct answer_served *);
void answer_served_free(struct answer_served *);
int answer_addrs(const uint8_t *, size_t, const struct policy *, struct addr *, size_t, size_t *,
                 struct decision *);
int answer_decide(const struct policy *, const char *, struct decision *);

/* cache.c */
struct cache;
struct cache_entry {
	TAILQ_ENTRY(cache_entry) lru;
	struct cache_entry *next; /* in its hash chain */
	uint64_t hash;
	uint8_t *key;
	size_t key_len;
	uint8_t *raw; /* the answer as it came, cleaned (answer_prepare) */
	size_t raw_len;
	uint64_t t_insert; /* monotonic ms */
	uint64_t t_expire;
	int cached; /* in the table; else a one-off for a TTL 0 answer */
	uint64_t served_gen;
	int served_ok;
	struct answer_served served;
};
struct cache *cache_new(size_t, size_t);
void cache_free(struct cache *);
void cache_clear(struct cache *);
size_t cache_count(const struct cache *);
struct cache_entry *cache_get(struct cache *, const uint8_t *, size_t, uint64_t);
struct cache_entry *cache_put(struct cache *, const uint8_t *, size_t, uint8_t *, size_t, uint32_t,
                              uint64_t);
struct cache_entry *cache_entry_new(const uint8_t *, size_t, uint8_t *, size_t, uint64_t);
void cache_entry_free(struct cache_entry *);
uint64_t cache_hash(const struct cache *, const uint8_t *, size_t);
const struct answer_served *cache_served(struct cache *, struct cache_entry *, uint64_t,
                                         const struct policy *, const struct decision *);

/* listen.c */
struct listen_tcp;
struct resolver_waiter;
struct resolver_client {
	int tcp;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct listen_tcp *conn; /* TCP; NULL once the connection is gone */
	int udp_fd;              /* UDP: the socket the query came in on */
};
int listen_bind(const char *, int *, int *, char *, size_t);
int listen_start(struct resolver *, int, int);
void listen_stop(struct resolver *);
void listen_reply(struct resolver *, const struct resolver_client *, const uint8_t *, size_t);
void listen_hold(struct resolver_waiter *);
void listen_release(struct resolver_waiter *);

/* forward.c */
struct forward;
struct fwd_query;
enum resolver_wkind {
	RESOLVER_W_CLIENT, /* a client's query: answer it */
	RESOLVER_W_LOOKUP, /* half of a proxy lookup */
};
struct resolver_waiter {
	TAILQ_ENTRY(resolver_waiter) entry;    /* on its upstream question */
	TAILQ_ENTRY(resolver_waiter) cl_entry; /* on its TCP connection */
	struct fwd_query *fq;
	enum resolver_wkind kind;
	struct msg_query q;
	struct resolver_client client;
	struct resolver_lookup *lk;
	uint64_t t_start;
};
TAILQ_HEAD(resolver_waiters, resolver_waiter);
struct forward *forward_new(struct resolver *, struct event_base *, const struct resolver_conf *);
void forward_free(struct forward *);
int forward_join(struct forward *, const uint8_t *, size_t, struct resolver_waiter *);
void forward_detach(struct resolver_waiter *);
size_t forward_pending(const struct forward *);
uint16_t forward_random16(struct forward *);

/* resolver.c, for the other files */
struct listen;
TAILQ_HEAD(resolver_lookups, resolver_lookup);
struct resolver {
	struct event_base *base;
	struct resolver_conf conf;
	struct policy *policy;
	uint64_t gen; /* bumped with each policy: cached served forms go stale */
	struct audit *audit;
	struct cache *cache;
	struct forward *fwd;
	struct listen *lst[2];              /* IPv4 and IPv6 listeners */
	struct resolver_lookups done;       /* lookups whose callback is due */
	struct resolver_verdicts *verdicts; /* recent names' decisions (resolver.c) */
	uint8_t scratch[MSG_MAX + 2];
};
void resolver_query(struct resolver *, const uint8_t *, size_t, struct resolver_client *);
void resolver_answered(struct resolver *, const uint8_t *, size_t, ldns_pkt *, const char *,
                       struct resolver_waiters *);
void resolver_waiter_free(struct resolver_waiter *);

#endif
