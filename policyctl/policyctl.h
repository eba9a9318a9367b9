/*
 * What the files of the policyctl program share: the options of explain
 * and check, loading the policy they name, the usage text and the
 * messages. The audit review has its own header, review.h.
 */
#ifndef POLICYCTL_H
#define POLICYCTL_H

#include <stdio.h>

#include "policy.h"

#define EXIT_USAGE            2
#define POLICYCTL_MAX_HEADERS 32

struct policyctl {
	struct config_file *files;
	size_t nfiles;
	int json;
	const char *method;
	const char *body_path;
	const char *content_type;
	char *headers[POLICYCTL_MAX_HEADERS]; /* --header "Name: value", split at the colon */
	size_t nheaders;
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

/* check.c */
int check_run(struct policyctl *);

/* review_cmd.c */
int review_cmd_run(int, char **);

#endif
