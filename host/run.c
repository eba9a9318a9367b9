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
	struct effective e; /* the configuration, as the commands see it too */
	struct skills skills;
	struct host_plan plan;
	int asked; /* consent: the changes were shown */
};

static void
run_error(const char *msg)
{
	fprintf(stderr, HOST_PROG ": %s\n", msg);
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

	consent_load(&r->e.consent, r->e.state.project, &r->e.conf);
	if (!r->e.consent.changed)
		return 0;
	buf_init(&errs);
	buf_init(&diff);
	old = effective_load_accepted(&r->e.conf, &r->e.consent, &errs);
	new = conf_load(&r->e.conf, 0, &errs);
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
		if (!r->args->dry_run && consent_record(&r->e.consent, &r->e.conf, &errs) == -1)
			run_error(buf_cstr(&errs));
		return 0;
	}
	r->asked = 1;
	fprintf(stderr,
	        HOST_PROG ": the project's sandbox configuration is %s since you last accepted "
	                  "it:\n",
	        r->e.consent.accepted == NULL ? "new" : "changed");
	for (i = 0; i < r->e.conf.n; i++)
		if (conf_is_project(&r->e.conf.files[i]))
			fprintf(stderr, "  %s\n", r->e.conf.files[i].path);
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
		effective_decline(&r->e.conf, &r->e.consent);
		r->e.declined = 1;
		return 0;
	}
	if (!r->args->dry_run) {
		buf_init(&errs);
		if (consent_record(&r->e.consent, &r->e.conf, &errs) == -1) {
			run_error(buf_cstr(&errs));
			buf_free(&errs);
			return -1;
		}
		buf_free(&errs);
		fprintf(stderr, HOST_PROG ": accepted\n");
	}
	return 0;
}

/* What the configuration set that has no effect, or was not taken: said once, on stderr. */
static void
run_say_notes(const struct run *r)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	report_notes(r->e.full, 0, &b);
	fputs(buf_cstr(&b), stderr);
	buf_reset(&b);
	for (i = 0; i < r->e.providers.notes.n; i++)
		fprintf(stderr, HOST_PROG ": provider %s\n", r->e.providers.notes.v[i]);
	for (i = 0; i < r->plan.notes.n; i++)
		fprintf(stderr, HOST_PROG ": %s\n", r->plan.notes.v[i]);
	if (r->e.providers.names.n > 0) {
		fprintf(stderr, HOST_PROG ": model providers allowlisted:");
		for (i = 0; i < r->e.providers.names.n; i++)
			fprintf(stderr, "%s %s (%s; %s)", i > 0 ? "," : "",
			        r->e.providers.names.v[i], r->e.providers.hosts.v[i],
			        r->e.providers.why.v[i]);
		fputc('\n', stderr);
	}
	buf_free(&b);
}

/*
 * An image built from other build inputs than this installation's may not
 * know what this run hands sandbox-init (a configuration key added since),
 * and then sandbox-init names only the key it does not know: said before
 * the run, with what to do. An image without the label (built by hand)
 * is taken as it is.
 */
static void
run_check_image(const struct host_plan *p)
{
	char *label, *dir = NULL, *digest = NULL;
	struct buf err;

	if (p->rt == HOST_RT_APPLE)
		return;
	label = image_label(p, p->image, IMAGE_LABEL_INPUTS_NAME);
	if (label == NULL || strcmp(label, "unknown") == 0) {
		free(label);
		return;
	}
	buf_init(&err);
	if ((dir = image_inputs_dir(&err)) != NULL &&
	    (digest = image_inputs_digest(dir, &err)) != NULL && strcmp(label, digest) != 0)
		fprintf(stderr,
		        HOST_PROG
		        ": the image %s was built from other build inputs than this "
		        "installation's (%.12s, installed now %.12s): if the run stops on "
		        "its configuration, rebuild it with `" HOST_PROG " image build`\n",
		        p->image, label, digest);
	buf_free(&err);
	free(label);
	free(dir);
	free(digest);
}

static void
run_summary(const struct run *r, int rc)
{
	struct state_summary s;

	state_summarize(r->e.state.audit, &s);
	if (!s.readable)
		fprintf(stderr, HOST_PROG ": exit %d; no audit log could be read at %s\n", rc,
		        r->e.state.audit);
	else
		fprintf(stderr,
		        HOST_PROG
		        ": %lu requests, %lu blocked, %lu flagged; review: policyctl audit "
		        "%s\n",
		        s.requests, s.blocked, s.flagged, r->e.state.audit);
}

/* The state directory, from the user's own files. */
static int
run_state(struct run *r)
{
	struct buf errs;
	int rc;

	buf_init(&errs);
	if ((rc = effective_state(&r->e.conf, r->e.project, &r->e.state, &r->e.own, &errs)) == -1)
		fputs(buf_cstr(&errs), stderr);
	buf_free(&errs);
	return rc;
}

/* The providers' layer (unless --no-providers), then the merge with the command line's. */
static int
run_load(struct run *r)
{
	struct buf errs;

	buf_init(&errs);
	if (!r->args->no_providers && effective_providers(&r->e.conf, r->e.oc_config, r->e.oc_data,
	                                                  &r->e.providers, &errs) == -1)
		goto err;
	conf_cli_layer(&r->e.conf, r->args);
	if (effective_merge(&r->e.conf, &r->e.full, &r->e.trusted, &errs) == -1)
		goto err;
	buf_free(&errs);
	return 0;
err:
	fputs(buf_cstr(&errs), stderr);
	buf_free(&errs);
	return -1;
}

static void
run_free(struct run *r)
{
	effective_free(&r->e);
	skills_free(&r->skills);
	plan_free(&r->plan);
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
	r.e.oc_config = effective_opencode_dir("XDG_CONFIG_HOME", ".config");
	r.e.oc_data = effective_opencode_dir("XDG_DATA_HOME", ".local/share");
	if ((why = mounts_check_project(a->project != NULL ? a->project : ".", r.e.project,
	                                sizeof r.e.project)) != NULL) {
		run_error(why);
		goto out;
	}
	if (conf_discover(&r.e.conf, a, r.e.project, &errs) == -1) {
		fputs(buf_cstr(&errs), stderr);
		goto out;
	}
	if (run_state(&r) == -1 || run_consent(&r) == -1 || run_load(&r) == -1)
		goto out;
	buf_reset(&errs);
	if (skills_find(&r.skills, &r.e, &errs) == -1) {
		fputs(buf_cstr(&errs), stderr);
		goto out;
	}
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
	if (plan_build(&r.plan, a, &r.e, &r.skills, &errs) == -1) {
		run_error(buf_cstr(&errs));
		goto out;
	}
	if (a->dry_run) {
		report_plan(&r.plan, &r.e, &r.skills, stdout);
		rc = 0;
		goto out;
	}
	run_say_notes(&r);
	if (runtime_preflight(&r.plan, &errs) == -1) {
		run_error(buf_cstr(&errs));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	run_check_image(&r.plan);
	buf_reset(&errs);
	if (state_create(&r.e.state, &errs) == -1 ||
	    stage_write(&r.plan, &r.e, &r.skills, &errs) == -1) {
		run_error(buf_cstr(&errs));
		goto out;
	}
	if (a->print_command || r.e.full->wrapper.container_debug) {
		buf_reset(&errs);
		redact_argv(&r.plan.argv, &errs);
		fprintf(stderr, "+ %s\n", buf_cstr(&errs));
	}
	rc = exec_run(&r.plan, !r.plan.remove);
	run_summary(&r, rc);
	if (r.plan.remove) {
		if (state_remove_tree(r.e.state.scratch) == -1)
			fprintf(stderr, HOST_PROG ": could not remove all of %s\n",
			        r.e.state.scratch);
	} else
		fprintf(stderr, HOST_PROG ": kept the container %s and the run's files in %s\n",
		        r.plan.name, r.e.state.run);
out:
	buf_free(&errs);
	run_free(&r);
	return rc;
}
