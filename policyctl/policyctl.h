/*
 * What the files of the policyctl program share: the options of explain
 * and check, loading the policy they name, the usage text and the
 * messages. The audit review has its own header, review.h.
 */
#ifndef POLICYCTL_H
#define POLICYCTL_H

#include <stdio.h>

#include <jansson.h>

#include "policy.h"

#define EXIT_USAGE            2
#define POLICYCTL_MAX_HEADERS 32
#define LIVE_DEFAULT_PATH     "/run/opencode-sandbox/egressd.sock" /* the image's */
#define LIVE_MAX_BODY         (1024 * 1024) /* explain's body, as egressd takes it */

struct policyctl {
	struct config_file *files;
	size_t nfiles;
	int json;
	const char *method;
	const char *body_path;
	const char *content_type;
	char *headers[POLICYCTL_MAX_HEADERS]; /* --header "Name: value", split at the colon */
	size_t nheaders;
	const char *control; /* --control PATH */
	int prometheus;      /* status --prometheus */
};

/* policyctl.c */
void policyctl_usage(FILE *);
void policyctl_errors(const char *);
void policyctl_ignored_warn(const struct config *);
struct policy *policyctl_load(struct policyctl *, struct buf *);
void policyctl_json_key(struct buf *, const char *, int);

/* explain.c */
int explain_add_header(struct policyctl *, const char *);
int explain_run(struct policyctl *, const char *);

/* live.c */
const char *live_path(const struct policyctl *, int *);
int live_exists(const char *);
json_t *live_ask(const char *, const char *, char *, size_t, int *);
const char *live_str(const json_t *, const char *, const char *);
void live_print_error(const char *, const json_t *);

/* status.c */
int status_run(struct policyctl *);
int status_reload(struct policyctl *);

/* check.c */
int check_run(struct policyctl *);

/* review_cmd.c */
int review_cmd_run(int, char **);

#endif
