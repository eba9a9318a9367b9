/*
 * The review of an audit log policyctl makes (`policyctl audit`): the
 * summary, the filters, follow, the chain check, suggestions and the HTML
 * page. review_int.h holds what its files share among themselves.
 */
#ifndef REVIEW_H
#define REVIEW_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

/* review.c */
struct review_filter {
	int actions; /* REVIEW_ONLY_* bits; 0: every action */
#define REVIEW_ONLY_BLOCK 0x1
#define REVIEW_ONLY_FLAG  0x2
	const char *host_glob; /* fnmatch(3) pattern over host or qname; NULL: any */
	const char *events;    /* comma-separated event types; NULL: any */
	int64_t since_ms;      /* first ms included; INT64_MIN: no bound */
	int64_t until_ms;      /* first ms excluded; INT64_MAX: no bound */
};
struct review_opts {
	struct review_filter filter;
	const char *name; /* the input as reports name it */
	FILE *err;        /* diagnostics (bad lines in --suggest/--html, follow notices) */
	int json;
	int color;
	int interval_ms; /* --follow poll interval */
};
void review_opts_init(struct review_opts *);
const char *review_time_parse(const char *, int64_t, int64_t *);
int review_summary(FILE *, FILE *, const struct review_opts *);
int review_verify(FILE *, FILE *, const struct review_opts *);
int review_verify_set(char *const *, size_t, FILE *, const struct review_opts *);
int review_suggest(FILE *, FILE *, const struct review_opts *);
int review_html(FILE *, FILE *, const struct review_opts *);
int review_follow(const char *, FILE *, const struct review_opts *, volatile sig_atomic_t *);

/* review_set.c */
FILE *review_set_open(const char *, FILE *);

#endif
