/*
 * The run path: OpenCode in the sandbox on one project. In order: the
 * project resolved and checked; the configuration found, read once and
 * checked; consent for project policy files the user has not accepted;
 * the model providers; the merged effective configuration; the plan
 * (mounts, environment, sandbox-init's options, the container command);
 * with --dry-run the plan printed and nothing else; otherwise the
 * runtime's checks, the state and scratch directories, the policy files
 * sandbox-init reads, the run itself, one summary line of the audit log,
 * and OpenCode's exit status returned.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

struct run {
	struct host_args *args;
	char project[PATH_MAX];
	struct conf conf;
	struct consent consent;
	struct providers providers;
	struct host_state state;
	struct config *full;    /* every file; the run's effective configuration */
	struct config *trusted; /* the trusted files alone: sandbox-init's global file */
	struct host_plan plan;
	char *oc_config; /* host: $XDG_CONFIG_HOME/opencode */
	char *oc_data;   /* host: $XDG_DATA_HOME/opencode */
	int declined;    /* project files run untrusted */
	int asked;       /* consent: the changes were shown */
};

static void
run_error(const char *msg)
{
	fprintf(stderr, HOST_PROG ": %s\n", msg);
}

/* The state root comes from the user's own files only, never from a project's. */
static int
run_state(struct run *r)
{
	struct conf own;
	struct config *cfg;
	struct buf errs;
	size_t i;
	int rc;

	memset(&own, 0, sizeof own);
	for (i = 0; i < r->conf.n; i++)
		if (r->conf.files[i].role == CONF_DEFAULTS ||
		    r->conf.files[i].role == CONF_GLOBAL || r->conf.files[i].role == CONF_FLAG)
			conf_add_text(&own, r->conf.files[i].role, r->conf.files[i].path,
			              xstrndup(r->conf.files[i].data, r->conf.files[i].len),
			              r->conf.files[i].len, 0);
	buf_init(&errs);
	if ((cfg = conf_load(&own, 1, &errs)) == NULL) {
		fputs(buf_cstr(&errs), stderr);
		buf_free(&errs);
		conf_free(&own);
		return -1;
	}
	buf_reset(&errs);
	rc = state_plan(&r->state, cfg, r->project, &errs);
	if (rc == -1)
		run_error(buf_cstr(&errs));
	config_free(cfg);
	conf_free(&own);
	buf_free(&errs);
	return rc;
}

/* The configuration as it would be with the project files swapped for the accepted copies. */
static struct config *
run_load_accepted(struct run *r, struct buf *errs)
{
	struct conf c;
	struct config *cfg;
	size_t i;

	memset(&c, 0, sizeof c);
	for (i = 0; i < r->conf.n; i++)
		if (!conf_is_project(&r->conf.files[i]))
			conf_add_text(&c, r->conf.files[i].role, r->conf.files[i].path,
			              xstrndup(r->conf.files[i].data, r->conf.files[i].len),
			              r->conf.files[i].len, 0);
	for (i = 0; i < r->consent.copies.n; i++)
		conf_add_text(&c, CONF_ACCEPTED, r->consent.paths.v[i],
		              xstrdup(r->consent.copies.v[i]), strlen(r->consent.copies.v[i]), 0);
	cfg = conf_load(&c, 0, errs);
	conf_free(&c);
	return cfg;
}

/* Declined: the project files only tighten, over the copies accepted before (trusted). */
static void
run_decline(struct run *r)
{
	size_t i;

	r->declined = 1;
	for (i = 0; i < r->conf.n; i++)
		if (conf_is_project(&r->conf.files[i]))
			r->conf.files[i].untrusted = 1;
	for (i = 0; i < r->consent.copies.n; i++)
		conf_add_text(&r->conf, CONF_ACCEPTED, r->consent.paths.v[i],
		              xstrdup(r->consent.copies.v[i]), strlen(r->consent.copies.v[i]), 0);
}

static int
run_ask(void)
{
	char line[64];

	fprintf(stderr, "Accept? Accepted, these files are trusted like your global file; "
	                "declined, they can only tighten the policy. [y/N] ");
	fflush(stderr);
	if (fgets(line, sizeof line, stdin) == NULL)
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

/*
 * Consent (see consent.c). Unchanged files are trusted. Changed ones are
 * described; then --accept-policy-changes accepts them, a terminal is
 * asked, and a run with nobody to ask refuses. A change that changes
 * nothing in effect is recorded quietly.
 */
static int
run_consent(struct run *r)
{
	struct config *old, *new;
	struct buf errs, diff;
	size_t i;
	int accept;

	consent_load(&r->consent, r->state.project, &r->conf);
	if (!r->consent.changed)
		return 0;
	buf_init(&errs);
	buf_init(&diff);
	old = run_load_accepted(r, &errs);
	new = conf_load(&r->conf, 0, &errs);
	if (old == NULL || new == NULL) {
		fputs(buf_cstr(&errs), stderr);
		config_free(old);
		config_free(new);
		buf_free(&errs);
		buf_free(&diff);
		return -1;
	}
	consent_describe(old, new, &diff);
	config_free(old);
	config_free(new);
	buf_free(&errs);
	if (diff.len == 0) {
		buf_free(&diff);
		if (!r->args->dry_run && consent_record(&r->consent, &r->conf, &errs) == -1)
			run_error(buf_cstr(&errs));
		return 0;
	}
	r->asked = 1;
	fprintf(stderr,
	        HOST_PROG ": the project's sandbox configuration is %s since you last accepted "
	                  "it:\n",
	        r->consent.accepted == NULL ? "new" : "changed");
	for (i = 0; i < r->conf.n; i++)
		if (conf_is_project(&r->conf.files[i]))
			fprintf(stderr, "  %s\n", r->conf.files[i].path);
	fprintf(stderr, "Trusting it would change:\n%s", buf_cstr(&diff));
	buf_free(&diff);
	if (r->args->accept_changes)
		accept = 1;
	else if (r->args->dry_run) {
		fprintf(stderr,
		        HOST_PROG ": a run would ask; this plan has the files only tightening "
		                  "the policy\n");
		accept = 0;
	} else if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO))
		accept = run_ask();
	else {
		fprintf(stderr, HOST_PROG
		        ": refusing to run: nobody to ask (no terminal). Review the change, "
		        "then run again in a terminal, or with --accept-policy-changes\n");
		return -1;
	}
	if (!accept) {
		run_decline(r);
		return 0;
	}
	if (!r->args->dry_run) {
		buf_init(&errs);
		if (consent_record(&r->consent, &r->conf, &errs) == -1) {
			run_error(buf_cstr(&errs));
			buf_free(&errs);
			return -1;
		}
		buf_free(&errs);
		fprintf(stderr, HOST_PROG ": accepted\n");
	}
	return 0;
}

/* The providers, found with the configuration as trusted now, as a layer of their own. */
static int
run_providers(struct run *r)
{
	struct config *cfg;
	struct buf errs;

	if (r->args->no_providers)
		return 0;
	buf_init(&errs);
	if ((cfg = conf_load(&r->conf, 0, &errs)) == NULL) {
		fputs(buf_cstr(&errs), stderr);
		buf_free(&errs);
		return -1;
	}
	buf_free(&errs);
	providers_find(&r->providers, cfg, r->oc_config, r->oc_data);
	config_free(cfg);
	if (r->providers.yaml != NULL)
		conf_add_text(&r->conf, CONF_PROVIDERS, "(providers)", xstrdup(r->providers.yaml),
		              strlen(r->providers.yaml), 0);
	return 0;
}

/*
 * The audit log always goes to the run's log directory, whatever a file
 * says: a path in the container is meaningless on the host, and a file
 * without one would send it to the terminal.
 */
static void
run_audit_path(struct config *cfg)
{
	static const struct cfg_loc here = {HOST_PROG ": the run's log directory", 1, 1};

	free(cfg->audit_path);
	cfg->audit_path = xstrdup(HOST_LOG_DIR "/" HOST_AUDIT_FILE);
	cfg->audit_path_loc = here;
}

static int
run_load(struct run *r)
{
	struct buf errs;

	conf_cli_layer(&r->conf, r->args);
	buf_init(&errs);
	r->full = conf_load(&r->conf, 1, &errs);
	if (r->full != NULL)
		r->trusted = conf_load(&r->conf, 0, &errs);
	if (r->full == NULL || r->trusted == NULL) {
		fputs(buf_cstr(&errs), stderr);
		buf_free(&errs);
		return -1;
	}
	buf_free(&errs);
	run_audit_path(r->full);
	run_audit_path(r->trusted);
	return 0;
}

/* What the configuration set that has no effect, or was not taken: said once, on stderr. */
static void
run_say_notes(const struct run *r)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	report_notes(r->full, 0, &b);
	fputs(buf_cstr(&b), stderr);
	buf_reset(&b);
	for (i = 0; i < r->providers.notes.n; i++)
		fprintf(stderr, HOST_PROG ": provider %s\n", r->providers.notes.v[i]);
	for (i = 0; i < r->plan.notes.n; i++)
		fprintf(stderr, HOST_PROG ": %s\n", r->plan.notes.v[i]);
	if (r->providers.names.n > 0) {
		fprintf(stderr, HOST_PROG ": model providers allowlisted:");
		for (i = 0; i < r->providers.names.n; i++)
			fprintf(stderr, "%s %s (%s; %s)", i > 0 ? "," : "", r->providers.names.v[i],
			        r->providers.hosts.v[i], r->providers.why.v[i]);
		fputc('\n', stderr);
	}
	buf_free(&b);
}

static void
run_summary(const struct run *r, int rc)
{
	struct state_summary s;

	state_summarize(r->state.audit, &s);
	if (!s.readable)
		fprintf(stderr, HOST_PROG ": exit %d; no audit log could be read at %s\n", rc,
		        r->state.audit);
	else
		fprintf(stderr,
		        HOST_PROG
		        ": %lu requests, %lu blocked, %lu flagged; review: policyctl audit "
		        "%s\n",
		        s.requests, s.blocked, s.flagged, r->state.audit);
}

static void
run_free(struct run *r)
{
	conf_free(&r->conf);
	consent_free(&r->consent);
	providers_free(&r->providers);
	state_free(&r->state);
	config_free(r->full);
	config_free(r->trusted);
	plan_free(&r->plan);
	free(r->oc_config);
	free(r->oc_data);
}

static char *
run_dir(const char *var, const char *fallback)
{
	char *base = host_xdg(var, fallback), *dir;

	dir = xasprintf("%s/opencode", base);
	free(base);
	return dir;
}

/* Everything a run does, from the command line to OpenCode's exit status. */
int
run_main(struct host_args *a)
{
	struct run r;
	struct buf errs;
	const char *why;
	int rc = HOST_EXIT_USAGE;

	memset(&r, 0, sizeof r);
	r.args = a;
	buf_init(&errs);
	r.oc_config = run_dir("XDG_CONFIG_HOME", ".config");
	r.oc_data = run_dir("XDG_DATA_HOME", ".local/share");
	if ((why = mounts_check_project(a->project != NULL ? a->project : ".", r.project,
	                                sizeof r.project)) != NULL) {
		run_error(why);
		goto out;
	}
	if (conf_discover(&r.conf, a, r.project, &errs) == -1) {
		fputs(buf_cstr(&errs), stderr);
		goto out;
	}
	if (run_state(&r) == -1 || run_consent(&r) == -1 || run_providers(&r) == -1 ||
	    run_load(&r) == -1)
		goto out;
	buf_reset(&errs);
	if (runtime_select(&r.plan, a->runtime, &errs) == -1) {
		run_error(buf_cstr(&errs));
		if (!a->dry_run) {
			rc = HOST_EXIT_RUNTIME;
			goto out;
		}
		/* A plan can still be shown, for the runtime that is missing. */
		r.plan.rt_path = xstrdup(a->runtime != NULL ? a->runtime : "podman");
		r.plan.rt = strstr(r.plan.rt_path, "docker") != NULL      ? HOST_RT_DOCKER
		            : strstr(r.plan.rt_path, "container") != NULL ? HOST_RT_APPLE
		                                                          : HOST_RT_PODMAN;
	}
	buf_reset(&errs);
	if (plan_build(&r.plan, a, r.full, &r.conf, &r.providers, &r.state, r.project, r.oc_config,
	               r.oc_data, &errs) == -1) {
		run_error(buf_cstr(&errs));
		goto out;
	}
	if (a->dry_run) {
		report_plan(&r.plan, r.full, &r.conf, &r.providers, &r.state, stdout);
		rc = 0;
		goto out;
	}
	run_say_notes(&r);
	if (runtime_preflight(&r.plan, &errs) == -1) {
		run_error(buf_cstr(&errs));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	buf_reset(&errs);
	if (state_create(&r.state, &errs) == -1 ||
	    stage_write(&r.plan, r.trusted, r.full, &r.conf, &r.providers, &r.state, &errs) == -1) {
		run_error(buf_cstr(&errs));
		goto out;
	}
	if (a->print_command || r.full->wrapper.container_debug) {
		buf_reset(&errs);
		redact_argv(&r.plan.argv, &errs);
		fprintf(stderr, "+ %s\n", buf_cstr(&errs));
	}
	rc = exec_run(&r.plan, !r.plan.remove);
	run_summary(&r, rc);
	if (r.plan.remove) {
		if (state_remove_tree(r.state.scratch) == -1)
			fprintf(stderr, HOST_PROG ": could not remove all of %s\n",
			        r.state.scratch);
	} else
		fprintf(stderr, HOST_PROG ": kept the container %s and the run's files in %s\n",
		        r.plan.name, r.state.run);
out:
	buf_free(&errs);
	run_free(&r);
	return rc;
}
