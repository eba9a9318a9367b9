/*
 * `opencode-sandbox policy test DOMAIN|URL [--project PATH] [--method M]
 * [--json]` (seed 003 §7.6): what the policy a run enforces does with one
 * request, and which rule of which file decided. The policy is loaded as
 * a run loads it (effective.c: the defaults, the global file, --config,
 * the model providers' hosts and, with --project, the project's files,
 * those not accepted only tightening), so that rules are named with the
 * user's own files and lines; the decision, its notes, its JSON and its
 * text are policyctl explain's (policy_decide through verdict.c), so the
 * answer is the one egressd gives the run for the same request.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "host.h"

struct policytest_opts {
	const char *project;
	const char *method;
	int json;
	struct strv configs;
};

const struct args_opt policytest_opts[] = {
    {"project", ARGS_STRING, offsetof(struct policytest_opts, project), "PATH"},
    {"method", ARGS_STRING, offsetof(struct policytest_opts, method), "METHOD"},
    {"json", ARGS_BOOL, offsetof(struct policytest_opts, json), NULL},
    {"config", ARGS_LIST, offsetof(struct policytest_opts, configs), "FILE"},
};
const size_t policytest_opts_n = EG_NELEM(policytest_opts);

/*
 * The members that say which policy answered, as policyctl explain's for
 * files: every file of the merge in order, a project file not accepted as
 * "project" (it only tightens), the others as "config".
 */
static void
policytest_source(const struct effective *e, struct buf *b)
{
	size_t i;
	int first = 1;

	buf_adds(b, ",\"policy_source\":\"config\",\"policy\":{\"files\":[");
	for (i = 0; i < e->full->nfiles; i++) {
		if (strcmp(e->full->files[i], "(defaults)") == 0)
			continue;
		buf_adds(b, first ? "{\"path\":" : ",{\"path\":");
		json_escape_str(b, e->full->files[i]);
		buf_adds(b, ",\"kind\":");
		json_escape_str(b, e->full->untrusted[i] ? "project" : "config");
		buf_addc(b, '}');
		first = 0;
	}
	buf_adds(b, "],\"control\":null},\"resolved\":null,\"by_name\":null");
}

int
policytest_main(const struct strv *args)
{
	struct policytest_opts o;
	struct policy_request req;
	struct verdict v;
	struct effective e;
	struct policy *p = NULL;
	struct strv pos;
	struct buf err, b;
	struct config *cfg;
	struct url u;
	const char *why;
	struct strv rest; /* the options point into it */
	json_t *j;
	size_t at, i;
	int rc = HOST_EXIT_USAGE, parsed = 0;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&rest, 0, sizeof rest);
	memset(&e, 0, sizeof e);
	buf_init(&err);
	buf_init(&b);
	/* `policy test ...`: "test" is the command's first word. */
	for (at = 0; at < args->n && strcmp(args->v[at], "test") != 0; at++)
		;
	if (at == args->n) {
		help_hint("policy", "test?");
		goto out;
	}
	for (i = 0; i < args->n; i++)
		if (i != at)
			strv_add(&rest, args->v[i]);
	if (args_options(policytest_opts, policytest_opts_n, &o, &rest, &pos, &err) == -1)
		goto usage;
	rc = HOST_EXIT_USAGE;
	if (pos.n != 1) {
		buf_adds(&err, pos.n == 0 ? "which host or URL?" : "one host or URL at a time");
		goto usage;
	}
	if (o.method == NULL)
		o.method = "GET";
	if (strlen(o.method) > 32 || !text_http_token(o.method, strlen(o.method))) {
		buf_printf(&err, "invalid method \"%s\"", o.method);
		goto usage;
	}
	if ((why = url_parse(pos.v[0], &u)) != NULL) {
		fprintf(stderr, HOST_PROG " policy test: %s: %s\n", pos.v[0], why);
		goto out;
	}
	parsed = 1;
	if (effective_open(&e, o.project, &o.configs, EFFECTIVE_F_PROVIDERS, &err) == -1) {
		fputs(buf_cstr(&err), stderr);
		goto out;
	}
	if (e.declined)
		fprintf(stderr,
		        HOST_PROG
		        " policy test: the project's files are %s since you accepted them: "
		        "answered as a run has them until you accept them (tightening "
		        "only)\n",
		        e.consent.accepted == NULL ? "new" : "changed");
	/* The merge a run's egressd makes; the policy owns it. */
	buf_reset(&err);
	if ((cfg = conf_load(&e.conf, 1, &err)) == NULL || (p = policy_new(cfg, &err)) == NULL) {
		fputs(buf_cstr(&err), stderr);
		goto out;
	}
	verdict_request(&req, &u, o.method);
	verdict_decide(&v, p, pos.v[0], &u, &req);
	verdict_notes(&v, p, 0);
	buf_addc(&b, '{');
	verdict_json(&v, p, &b);
	policytest_source(&e, &b);
	buf_addc(&b, '}');
	if (o.json)
		printf("%s\n", buf_cstr(&b));
	else {
		if ((j = json_loads(buf_cstr(&b), 0, NULL)) == NULL)
			fatalx("policy test: verdict_json made no JSON");
		buf_reset(&err);
		verdict_text(j, &err);
		fputs(buf_cstr(&err), stdout);
		json_decref(j);
	}
	rc = 0;
	goto out;
usage:
	help_hint("policy test", buf_cstr(&err));
out:
	if (p != NULL)
		policy_unref(p);
	if (parsed)
		url_free(&u);
	effective_free(&e);
	strv_free(&o.configs);
	strv_free(&pos);
	strv_free(&rest);
	buf_free(&err);
	buf_free(&b);
	return rc;
}
