/*
 * The audit module: egressd's JSON Lines audit log, one decision a line,
 * each line chained to the one before by a hash, written whole with one
 * write(2). The proxy and the resolver hand it events; policyctl reads the
 * log back (policyctl/review*.c).
 */
#ifndef AUDIT_H
#define AUDIT_H

#include <stdint.h>

#include "policy.h"

/* audit.c */
struct audit;
struct audit_event {
	const char *event;  /* http connect tls tcp dns daemon policy */
	const char *action; /* allow flag block, or NULL */
	const char *rule;
	const char *source;
	const char *reason;
	const char *mode;
	const char *client;
	const char *host;
	int port; /* < 0: absent */
	const char *scheme;
	const char *method;
	const char *path;
	int status;                       /* < 0: absent */
	int64_t bytes_up;                 /* < 0: absent */
	int64_t bytes_down;               /* < 0: absent */
	int64_t duration_ms;              /* < 0: absent */
	const struct gql_result *graphql; /* NULL: absent */
	const char *qname;
	const char *qtype;
	const char *rcode;
	const char *error;
	/* Extra fields (v1 allows additions). */
	const char *addr;  /* the address actually connected to */
	const char *sni;   /* TLS server name the client sent */
	const char *tls;   /* intercept | passthrough | tunnel */
	const char *hint;  /* what the user can do about an error */
	int cached;        /* 1: answered from the resolver cache */
	const char *proto; /* packet events: tcp udp icmp icmpv6, or a number */
	int64_t uid;       /* packet events: the sender's uid; < 0: absent */
};
/*
 * A regular file's written lines leave the page cache behind the writer:
 * every AUDIT_CACHE_WINDOW bytes the window just written is sent to disk
 * (sync_file_range, not waited for) and the AUDIT_CACHE_RETRY windows
 * before it are dropped (POSIX_FADV_DONTNEED; pages still being written
 * stay and are tried again with the next window).
 */
#define AUDIT_CACHE_WINDOW (4 * 1024 * 1024)
#define AUDIT_CACHE_RETRY  4
void audit_event_init(struct audit_event *);
struct audit *audit_open(const char *, char *, size_t);
struct audit *audit_open_fd(int, char *, size_t);
int audit_write(struct audit *, const struct audit_event *);
void audit_set_batch(struct audit *, void (*)(void *), void *);
int audit_flush(struct audit *);
void audit_close(struct audit *);

#endif
