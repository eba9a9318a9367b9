/*
 * The audit module: egressd's JSON Lines audit log, one decision a line,
 * each line chained to the one before by a hash, written whole with one
 * write(2). The proxy and the resolver hand it events; policyctl reads the
 * log back (policyctl/review*.c) with the same hash chain and the same
 * table of fields.
 */
#ifndef AUDIT_H
#define AUDIT_H

#include <stdint.h>
#include <time.h>

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
	int64_t refused;   /* daemon events: requests refused; < 0: absent */
	int64_t unwritten; /* daemon events: lines that could not be written; < 0: absent */
	const char *seqs;  /* daemon events: the seqs of those lines, "12-40,57" */
	/*
	 * Not written: the line audit_admit kept room for. Its exchange was
	 * let through, so its line is written even when the log is failing.
	 */
	int admitted;
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
/* What egressd does when lines cannot be written (audit.onError). */
enum audit_on_error {
	AUDIT_ON_ERROR_BLOCK,    /* refuse every new request until they can */
	AUDIT_ON_ERROR_CONTINUE, /* serve, and count the lines not written */
};
struct audit_settings {
	enum audit_on_error on_error;
	uint64_t max_bytes; /* rotate once the file reaches this; 0: never */
	unsigned keep;      /* rotated files kept: FILE.1 ... FILE.keep */
};
#define AUDIT_KEEP_DEFAULT  5
#define AUDIT_KEEP_MAX      1000
#define AUDIT_MAX_BYTES_MIN (64 * 1024)
void audit_event_init(struct audit_event *);
struct audit *audit_open(const char *, char *, size_t);
struct audit *audit_open_fd(int, char *, size_t);
void audit_configure(struct audit *, const struct audit_settings *);
int audit_admit(struct audit *);
void audit_release(struct audit *);
int audit_refusing(const struct audit *);
void audit_refused(struct audit *);
const char *audit_refusal(const struct audit *, char *, size_t);
int audit_write(struct audit *, const struct audit_event *);
void audit_set_batch(struct audit *, void (*)(void *), void *);
int audit_flush(struct audit *);
void audit_tick(struct audit *);
int audit_reopen(struct audit *);
void audit_close(struct audit *);
/* What the writer has done since it was opened, for status and metrics. */
struct audit_stats {
	uint64_t seq;          /* of the last line made */
	uint64_t lines;        /* lines made */
	uint64_t bytes;        /* bytes written */
	uint64_t write_errors; /* writes that failed or landed short */
	int failing;           /* lines cannot be written now */
	int error;             /* errno of why, while failing */
	enum audit_on_error on_error;
	struct timespec since; /* failing since (wall clock) */
	uint64_t refused;      /* requests refused because lines could not be written */
	uint64_t unwritten;    /* lines that could not be written */
	uint64_t failures;     /* times the log became unwritable */
	uint64_t rotations;
	uint64_t reserved; /* bytes allocated ahead of the lines */
	uint64_t owed;     /* exchanges let through whose lines are to come */
};
void audit_stats(const struct audit *, struct audit_stats *);

/* logfile.c: the files of a rotated log, for its readers too */
char **logfile_set(const char *, size_t *);
void logfile_set_free(char **, size_t);

/* chain.c */
#define CHAIN_HEX 64                          /* a link: the SHA-256 of a line, in lowercase hex */
extern const char chain_zeros[CHAIN_HEX + 1]; /* what the first line links to */
struct chain;
struct chain *chain_new(void);
void chain_free(struct chain *);
void chain_begin(struct chain *);
void chain_update(struct chain *, const void *, size_t);
void chain_end(struct chain *, char[CHAIN_HEX + 1]);
void chain_line(struct chain *, const void *, size_t, char[CHAIN_HEX + 1]);

/* fields.c */
enum audit_field {
	AUDIT_FIELD_V,
	AUDIT_FIELD_TS,
	AUDIT_FIELD_SEQ,
	AUDIT_FIELD_EVENT,
	AUDIT_FIELD_ACTION,
	AUDIT_FIELD_RULE,
	AUDIT_FIELD_SOURCE,
	AUDIT_FIELD_REASON,
	AUDIT_FIELD_MODE,
	AUDIT_FIELD_CLIENT,
	AUDIT_FIELD_HOST,
	AUDIT_FIELD_PORT,
	AUDIT_FIELD_SCHEME,
	AUDIT_FIELD_METHOD,
	AUDIT_FIELD_PATH,
	AUDIT_FIELD_STATUS,
	AUDIT_FIELD_BYTES_UP,
	AUDIT_FIELD_BYTES_DOWN,
	AUDIT_FIELD_DURATION_MS,
	AUDIT_FIELD_GRAPHQL,
	AUDIT_FIELD_QNAME,
	AUDIT_FIELD_QTYPE,
	AUDIT_FIELD_RCODE,
	AUDIT_FIELD_ERROR,
	AUDIT_FIELD_ADDR,
	AUDIT_FIELD_SNI,
	AUDIT_FIELD_TLS,
	AUDIT_FIELD_HINT,
	AUDIT_FIELD_PROTO,
	AUDIT_FIELD_UID,
	AUDIT_FIELD_REFUSED,
	AUDIT_FIELD_UNWRITTEN,
	AUDIT_FIELD_SEQS,
	AUDIT_FIELD_CACHED,
	AUDIT_FIELD_TRUNCATED,
	AUDIT_FIELD_PREV,
	AUDIT_FIELD_COUNT,
};
enum audit_value {
	AUDIT_VALUE_STRING,
	AUDIT_VALUE_INT,    /* non-negative */
	AUDIT_VALUE_TRUE,   /* present only when true */
	AUDIT_VALUE_OBJECT, /* graphql: {"operation", "name"} */
};
struct fields_entry {
	const char *name;
	size_t len;
	enum audit_value value;
};
extern const struct fields_entry fields_table[AUDIT_FIELD_COUNT];
int fields_find(const char *, size_t, int);

#endif
