/*
 * The resolver's inside: what its files share, and what the unit tests,
 * the engine tests and the fuzz target call directly. Each file's names
 * carry its prefix under dns_ (msg.c: dns_msg_, answer.c: dns_answer_,
 * cache.c: dns_cache_, listen.c: dns_listen_, forward.c: dns_forward_),
 * so that none reads like the proxy's forward_* or listener_* in the
 * same binary; resolver.c, the core, keeps the module's resolver_.
 */
#ifndef RESOLVER_INT_H
#define RESOLVER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <ldns/ldns.h>

#include "audit.h"
#include "common.h"
#include "policy.h"
#include "resolver.h"

/* msg.c */
#define DNS_MSG_NAME_MAX      255 /* a name in wire form */
#define DNS_MSG_KEY_MAX       (DNS_MSG_NAME_MAX + 4)
#define DNS_MSG_QUERY_HDR     12   /* the header before a query's question */
#define DNS_MSG_UDP_SIZE      1232 /* the EDNS size advertised, both ways */
#define DNS_MSG_UDP_PLAIN     512  /* what a client without EDNS can take */
#define DNS_MSG_MAX           65535
#define DNS_MSG_EDE_BLOCKED   15 /* RFC 8914 */
#define DNS_MSG_EDE_NETWORK   23
#define DNS_MSG_EDE_NO_REACH  22
#define DNS_MSG_EDE_NOT_READY 14
#define DNS_MSG_RCODE_BADVERS 16

enum dns_msg_rcode {
	DNS_MSG_NOERROR = 0,
	DNS_MSG_FORMERR = 1,
	DNS_MSG_SERVFAIL = 2,
	DNS_MSG_NXDOMAIN = 3,
	DNS_MSG_NOTIMP = 4,
	DNS_MSG_REFUSED = 5,
};

/* A client's query, checked; the parts a reply or a question key needs. */
struct dns_msg_query {
	uint16_t id;
	uint8_t flags[2];
	uint16_t qtype;
	uint16_t qclass;
	int has_question;
	uint8_t qname[DNS_MSG_NAME_MAX]; /* as received, case kept */
	size_t qname_len;
	uint8_t key[DNS_MSG_KEY_MAX]; /* lowercase name, type, class */
	size_t key_len;
	char name[DNS_MSG_NAME_MAX + 1]; /* lowercase text without the final dot */
	int name_ok;                     /* only letters, digits, '-' and '_' */
	int edns;
	uint16_t udp_size;
	uint8_t edns_version;
};

/* One cached answer as clients get it under one policy. */
struct dns_answer_served {
	uint8_t *wire; /* id 0, lowercase question, no OPT */
	size_t len;
	uint16_t *ttl_off; /* where each record's TTL sits */
	size_t nttl;
	unsigned rcode;
	int ede; /* -1: none */
	char ede_text[160];
	struct decision *verdict; /* NULL: the name's own decision stands */
};

const char *dns_msg_parse_query(const uint8_t *, size_t, struct dns_msg_query *, int *);
size_t dns_msg_reply_simple(const struct dns_msg_query *, unsigned, int, const char *, uint8_t *,
                            size_t);
size_t dns_msg_reply_served(const struct dns_msg_query *, const struct dns_answer_served *,
                            uint32_t, size_t, uint8_t *, size_t);
size_t dns_msg_build_query(const uint8_t *, size_t, uint16_t, uint8_t *, size_t);
const char *dns_msg_name_key(const char *, uint16_t, uint8_t *, size_t *);
extern const char dns_msg_err_case[];
void dns_msg_name_mix(uint8_t *, size_t, const uint8_t *, size_t);
const char *dns_msg_check_answer(const uint8_t *, size_t, uint16_t, const uint8_t *, size_t,
                                 ldns_pkt **);
int dns_msg_name_text(const uint8_t *, size_t, char *, size_t);
int dns_msg_ttl_offsets(const uint8_t *, size_t, struct dns_answer_served *);
const char *dns_msg_type_name(uint16_t, char *, size_t);
const char *dns_msg_rcode_name(unsigned);

/* answer.c */
int dns_answer_prepare(ldns_pkt *, const struct resolver_conf *, uint8_t **, size_t *, uint32_t *);
int dns_answer_served_build(const uint8_t *, size_t, const struct policy *, const struct decision *,
                            struct dns_answer_served *);
void dns_answer_served_free(struct dns_answer_served *);
int dns_answer_addrs(const uint8_t *, size_t, const struct policy *, struct addr *, size_t,
                     size_t *, struct decision *);
int dns_answer_decide(const struct policy *, const char *, struct decision *);

/* cache.c */
struct dns_cache;
struct dns_cache_entry {
	TAILQ_ENTRY(dns_cache_entry) lru;
	struct dns_cache_entry *next; /* in its hash chain */
	uint64_t hash;
	uint8_t *key;
	size_t key_len;
	uint8_t *raw; /* the answer as it came, cleaned (dns_answer_prepare) */
	size_t raw_len;
	uint64_t t_insert; /* monotonic ms */
	uint64_t t_expire;
	int cached; /* in the table; else a one-off for a TTL 0 answer */
	uint64_t served_gen;
	int served_ok;
	struct dns_answer_served served;
};
struct dns_cache *dns_cache_new(size_t, size_t);
void dns_cache_free(struct dns_cache *);
void dns_cache_clear(struct dns_cache *);
size_t dns_cache_count(const struct dns_cache *);
size_t dns_cache_bytes(const struct dns_cache *);
struct dns_cache_entry *dns_cache_get(struct dns_cache *, const uint8_t *, size_t, uint64_t);
struct dns_cache_entry *dns_cache_put(struct dns_cache *, const uint8_t *, size_t, uint8_t *,
                                      size_t, uint32_t, uint64_t);
struct dns_cache_entry *dns_cache_entry_new(const uint8_t *, size_t, uint8_t *, size_t, uint64_t);
void dns_cache_entry_free(struct dns_cache_entry *);
uint64_t dns_cache_hash(const struct dns_cache *, const uint8_t *, size_t);
const struct dns_answer_served *dns_cache_served(struct dns_cache *, struct dns_cache_entry *,
                                                 uint64_t, const struct policy *,
                                                 const struct decision *);

/* listen.c */
struct dns_listen_tcp;
struct resolver_client;
struct resolver_waiter;
int dns_listen_bind(const char *, int *, int *, char *, size_t);
int dns_listen_start(struct resolver *, int, int);
void dns_listen_stop(struct resolver *);
void dns_listen_reply(struct resolver *, const struct resolver_client *, const uint8_t *, size_t);
void dns_listen_hold(struct resolver_waiter *);
void dns_listen_release(struct resolver_waiter *);

/* forward.c */
struct dns_forward;
struct dns_forward_query;
struct resolver_waiters;
struct dns_forward *dns_forward_new(struct resolver *, struct event_base *,
                                    const struct resolver_conf *);
void dns_forward_free(struct dns_forward *);
int dns_forward_join(struct dns_forward *, const uint8_t *, size_t, struct resolver_waiter *);
void dns_forward_detach(struct resolver_waiter *);
size_t dns_forward_pending(const struct dns_forward *);
uint16_t dns_forward_random16(struct dns_forward *);

/* resolver.c, for the other files */
struct dns_listen;

/* Who asked a query, and where its answer goes. */
struct resolver_client {
	int tcp;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct dns_listen_tcp *conn; /* TCP; NULL once the connection is gone */
	int udp_fd;                  /* UDP: the socket the query came in on */
};

/* One query, a client's or half a proxy lookup, waiting for an upstream question. */
enum resolver_wkind {
	RESOLVER_W_CLIENT, /* a client's query: answer it */
	RESOLVER_W_LOOKUP, /* half of a proxy lookup */
};
struct resolver_waiter {
	TAILQ_ENTRY(resolver_waiter) entry;    /* on its upstream question */
	TAILQ_ENTRY(resolver_waiter) cl_entry; /* on its TCP connection */
	struct dns_forward_query *fq;
	enum resolver_wkind kind;
	struct dns_msg_query q;
	struct resolver_client client;
	struct resolver_lookup *lk;
	uint64_t t_start;
};
TAILQ_HEAD(resolver_waiters, resolver_waiter);

/*
 * The resolver's time: a monotonic clock and the one kind of timer the
 * resolver arms (an upstream question's). resolver_new() sets the real
 * ones (CLOCK_MONOTONIC, libevent timers); the engine tests
 * (tests/engine/) put a clock they move by hand in their place. The
 * timeouts of TCP connections stay with libevent's own clock.
 */
struct resolver_clock {
	uint64_t (*now_us)(void *);                          /* monotonic µs */
	void (*timer_add)(void *, struct event *, uint64_t); /* fire ev in ms */
	void (*timer_del)(void *, struct event *);
	void *arg;
};

TAILQ_HEAD(resolver_lookups, resolver_lookup);
struct resolver {
	struct event_base *base;
	struct resolver_conf conf;
	struct policy *policy;
	uint64_t gen; /* bumped with each policy: cached served forms go stale */
	struct audit *audit;
	struct dns_cache *cache;
	struct dns_forward *fwd;
	struct dns_listen *lst[2];          /* IPv4 and IPv6 listeners */
	struct resolver_lookups done;       /* lookups whose callback is due */
	struct resolver_verdicts *verdicts; /* recent names' decisions (resolver.c) */
	struct resolver_clock clock;
	uint64_t queries[3][2]; /* clients' queries by enum policy_action and cached */
	uint8_t scratch[DNS_MSG_MAX + 2];
};
void resolver_query(struct resolver *, const uint8_t *, size_t, struct resolver_client *);
void resolver_answered(struct resolver *, const uint8_t *, size_t, ldns_pkt *, const char *,
                       struct resolver_waiters *);
void resolver_waiter_free(struct resolver_waiter *);
void resolver_set_clock(struct resolver *, const struct resolver_clock *);

static inline uint64_t
resolver_now_us(const struct resolver *r)
{
	return r->clock.now_us(r->clock.arg);
}

static inline uint64_t
resolver_now_ms(const struct resolver *r)
{
	return resolver_now_us(r) / 1000;
}

#endif
