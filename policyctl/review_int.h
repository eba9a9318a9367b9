/*
 * What the review_*.c files of `policyctl audit` share: the line reader
 * that streams an audit file (hashing each line for the chain check), one
 * parsed event, the per-host tally and the escaping of untrusted strings
 * for a terminal. Nothing here is for other modules; review.h has the
 * entry points.
 */
#ifndef REVIEW_INT_H
#define REVIEW_INT_H

#include <stdio.h>

#include <jansson.h>

#include "audit.h"
#include "policy.h"
#include "review.h"

#define REVIEW_LINE_MAX  (1024 * 1024) /* bytes of a line that are parsed */
#define REVIEW_BLOCK     65536
#define REVIEW_SHOW_BAD  10 /* line numbers of bad lines shown */
#define REVIEW_METHODS   8  /* distinct methods kept per host */
#define REVIEW_METHOD_SZ 16

enum review_act {
	REVIEW_ACT_NONE,
	REVIEW_ACT_ALLOW,
	REVIEW_ACT_FLAG,
	REVIEW_ACT_BLOCK,
};

/* Streams a file line by line; lines past REVIEW_LINE_MAX keep their head. */
struct review_reader {
	FILE *f;
	char *blk;
	size_t pos;
	size_t end;
	struct buf line; /* the current line, without its newline */
	unsigned long lineno;
	uint64_t size;       /* all bytes of the current line */
	int overlong;        /* line.len < size */
	int partial;         /* the line ended at end of file, not at a newline */
	int error;           /* errno of a failed read, else 0 */
	struct chain *chain; /* hash every line when set */
	char hash[CHAIN_HEX + 1];
};
void review_reader_init(struct review_reader *, FILE *, int);
void review_reader_free(struct review_reader *);
int review_reader_next(struct review_reader *);

struct review_tally;

/* One audit line; the strings live in root until review_event_clear. */
struct review_event {
	json_t *root;
	unsigned long line;
	int64_t ts_ms;
	const char *ts;
	int64_t seq;
	const char *event;
	enum review_act act;
	const char *action;
	const char *rule;
	const char *source;
	const char *reason;
	const char *host; /* host, or qname for DNS */
	const char *qname;
	int has_v;
	const char *method;
	const char *scheme;
	const char *path;
	const char *qtype;
	const char *rcode;
	const char *error;
	const char *prev;
	int dns;
	int64_t port;
	int64_t status;
	int64_t bytes_up;
	int64_t bytes_down;
	int64_t duration_ms;
	const char *seqs; /* daemon lines: the seqs egressd could not write */
	int64_t refused;
	int64_t unwritten;
};
const char *review_event_parse(struct review_event *, char *, size_t);
const char *review_event_parse_json(struct review_event *, const char *, size_t);
void review_event_clear(struct review_event *);
int review_filter_match(const struct review_filter *, const struct review_event *);
int review_scan(FILE *, const struct review_opts *, struct review_tally *,
                void (*)(const struct review_event *, void *), void *);
const char *review_act_name(enum review_act);

/* review_fast.c */
int review_fast_parse(struct review_event *, char *, size_t);

/* review_tally.c */
struct review_host {
	char *name;
	uint64_t n;
	uint64_t dns;
	uint64_t count[4]; /* by enum review_act */
	uint64_t up;
	uint64_t down;
	char methods[REVIEW_METHODS][REVIEW_METHOD_SZ];
	unsigned nmethods;
	int more_methods;
	char *rule; /* the rule of its first block or flag */
};
struct review_tally {
	const char *name;
	unsigned long lines;
	unsigned long events; /* lines that passed the filter */
	unsigned long bad;
	unsigned long bad_lines[REVIEW_SHOW_BAD];
	const char *bad_why[REVIEW_SHOW_BAD];
	int partial_tail;
	int64_t first_ms;
	int64_t last_ms;
	char first_ts[40];
	char last_ts[40];
	uint64_t count[4];
	char types[16][16];
	uint64_t type_n[16];
	unsigned ntypes;
	uint64_t other_types;
	struct review_host **hosts; /* open addressing, power of two */
	size_t hcap;
	size_t nhosts;
	unsigned long nviol;
	/* Daemon lines that say the log could not be written for a while. */
	unsigned long gaps;
	uint64_t unwritten;
	uint64_t refused;
};
void review_tally_init(struct review_tally *, const char *);
void review_tally_free(struct review_tally *);
void review_tally_bad(struct review_tally *, unsigned long, const char *);
void review_tally_add(struct review_tally *, const struct review_event *);
struct review_host *review_tally_find(const struct review_tally *, const char *);
struct review_host **review_tally_sorted(const struct review_tally *);

/* review_summary.c */
void review_summary_json_event(struct buf *, const struct review_event *);

/* review_text.c */
void review_text_escape(struct buf *, const char *, size_t);
void review_text_bytes(char *, size_t, uint64_t);
void review_text_event(struct buf *, const struct review_event *, int);
int review_text_summary(FILE *, const struct review_tally *, FILE *, int);

#endif
