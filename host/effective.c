/*
 * The configuration a run would use, for the run path and for the
 * commands that show or test it without running (doctor, policy test,
 * config show, skills, image build, upgrade): the state directory from
 * the user's own files, the project files swapped for the copies the user
 * accepted when they changed since (they then only tighten, as a run
 * declined or --dry-run has them), the model providers as a layer of
 * their own, and the merge into the effective configuration and the
 * trusted one sandbox-init gets. One path, so that what the commands say
 * is what a run does.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

/*
 * The state root comes from the user's own files only, never from a
 * project's; *ownp gets those files' configuration (the caller frees it),
 * for the settings only they may make (where imported skills live).
 */
int
effective_state(const struct conf *c, const char *project, struct host_state *s,
                struct config **ownp, struct buf *err)
{
	struct conf own;
	struct config *cfg;
	size_t i;
	int rc;

	memset(&own, 0, sizeof own);
	for (i = 0; i < c->n; i++)
		if (c->files[i].role == CONF_DEFAULTS || c->files[i].role == CONF_GLOBAL ||
		    c->files[i].role == CONF_FLAG)
			conf_add_text(&own, c->files[i].role, c->files[i].path,
			              xstrndup(c->files[i].data, c->files[i].len), c->files[i].len,
			              0);
	if ((cfg = conf_load(&own, 1, err)) == NULL) {
		conf_free(&own);
		return -1;
	}
	rc = state_plan(s, cfg, project, err);
	if (rc == 0 && ownp != NULL)
		*ownp = cfg;
	else
		config_free(cfg);
	conf_free(&own);
	return rc;
}

/* The configuration as it would be with the project files swapped for the accepted copies. */
struct config *
effective_load_accepted(const struct conf *c, const struct consent *k, struct buf *err)
{
	struct conf a;
	struct config *cfg;
	size_t i;

	memset(&a, 0, sizeof a);
	for (i = 0; i < c->n; i++)
		if (!conf_is_project(&c->files[i]))
			conf_add_text(&a, c->files[i].role, c->files[i].path,
			              xstrndup(c->files[i].data, c->files[i].len), c->files[i].len,
			              0);
	for (i = 0; i < k->copies.n; i++)
		conf_add_text(&a, CONF_ACCEPTED, k->paths.v[i], xstrdup(k->copies.v[i]),
		              strlen(k->copies.v[i]), 0);
	cfg = conf_load(&a, 0, err);
	conf_free(&a);
	return cfg;
}

/* Declined: the project files only tighten, over the copies accepted before (trusted). */
void
effective_decline(struct conf *c, const struct consent *k)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (conf_is_project(&c->files[i]))
			c->files[i].untrusted = 1;
	for (i = 0; i < k->copies.n; i++)
		conf_add_text(c, CONF_ACCEPTED, k->paths.v[i], xstrdup(k->copies.v[i]),
		              strlen(k->copies.v[i]), 0);
}

/* The providers, found with the configuration as trusted now, as a layer of their own. */
int
effective_providers(struct conf *c, const char *oc_config, const char *oc_data,
                    struct providers *pv, struct buf *err)
{
	struct config *cfg;

	if ((cfg = conf_load(c, 0, err)) == NULL)
		return -1;
	providers_find(pv, cfg, oc_config, oc_data);
	config_free(cfg);
	if (pv->yaml != NULL)
		conf_add_text(c, CONF_PROVIDERS, "(providers)", xstrdup(pv->yaml), strlen(pv->yaml),
		              0);
	return 0;
}

/*
 * The audit log always goes to the run's log directory, whatever a file
 * says: a path in the container is meaningless on the host, and a file
 * without one would send it to the terminal.
 */
static void
effective_audit_path(struct config *cfg)
{
	static const struct cfg_loc here = {HOST_PROG ": the run's log directory", 1, 1};

	free(cfg->audit_path);
	cfg->audit_path = xstrdup(HOST_LOG_DIR "/" HOST_AUDIT_FILE);
	cfg->audit_path_loc = here;
}

/* The merge: every file (the run's configuration) and the trusted ones (sandbox-init's). */
int
effective_merge(const struct conf *c, struct config **full, struct config **trusted,
                struct buf *err)
{
	*trusted = NULL;
	if ((*full = conf_load(c, 1, err)) == NULL)
		return -1;
	if ((*trusted = conf_load(c, 0, err)) == NULL) {
		config_free(*full);
		*full = NULL;
		return -1;
	}
	effective_audit_path(*full);
	effective_audit_path(*trusted);
	return 0;
}

/* $XDG_CONFIG_HOME/opencode and $XDG_DATA_HOME/opencode: the host's OpenCode. */
char *
effective_opencode_dir(const char *var, const char *fallback)
{
	char *base = host_xdg(var, fallback), *dir;

	dir = xasprintf("%s/opencode", base);
	free(base);
	return dir;
}

/*
 * What a run on project (NULL: none, the global configuration alone)
 * would load, without asking anything: project files changed since the
 * user accepted them only tighten, as in --dry-run, and e->declined says
 * so; a change that changes nothing in effect is taken, as a run takes
 * it. With EFFECTIVE_F_PROVIDERS the providers' layer is in. 0, or -1
 * with every error in err.
 */
int
effective_open(struct effective *e, const char *project, const struct strv *configs, int flags,
               struct buf *err)
{
	struct host_args a;
	const char *why;

	memset(e, 0, sizeof *e);
	memset(&a, 0, sizeof a);
	e->oc_config = effective_opencode_dir("XDG_CONFIG_HOME", ".config");
	e->oc_data = effective_opencode_dir("XDG_DATA_HOME", ".local/share");
	if (project != NULL) {
		if ((why = mounts_check_project(project, e->project, sizeof e->project)) != NULL) {
			buf_printf(err, "%s\n", why);
			return -1;
		}
	}
	if (configs != NULL)
		a.configs = *configs;
	if (conf_discover(&e->conf, &a, project != NULL ? e->project : NULL, err) == -1)
		return -1;
	if (effective_state(&e->conf, project != NULL ? e->project : "/", &e->state, &e->own,
	                    err) == -1)
		return -1;
	if (project != NULL) {
		consent_load(&e->consent, e->state.project, &e->conf);
		/* A change that changes nothing in effect is taken, as a run takes it. */
		if (e->consent.changed) {
			struct buf diff;

			buf_init(&diff);
			if (effective_change(e, &diff, err) == -1) {
				buf_free(&diff);
				return -1;
			}
			if (diff.len > 0) {
				effective_decline(&e->conf, &e->consent);
				e->declined = 1;
			}
			buf_free(&diff);
		}
	}
	if ((flags & EFFECTIVE_F_PROVIDERS) &&
	    effective_providers(&e->conf, e->oc_config, e->oc_data, &e->providers, err) == -1)
		return -1;
	return effective_merge(&e->conf, &e->full, &e->trusted, err);
}

/*
 * What trusting e's changed project files would change, in consent's
 * words (empty: nothing in effect, and a run takes them without asking).
 * 0, or -1 with err.
 */
int
effective_change(const struct effective *e, struct buf *diff, struct buf *err)
{
	struct config *old, *new;
	struct conf c;
	size_t i;

	memset(&c, 0, sizeof c);
	for (i = 0; i < e->conf.n; i++)
		if (e->conf.files[i].role != CONF_ACCEPTED &&
		    e->conf.files[i].role != CONF_PROVIDERS)
			conf_add_text(&c, e->conf.files[i].role, e->conf.files[i].path,
			              xstrndup(e->conf.files[i].data, e->conf.files[i].len),
			              e->conf.files[i].len, 0);
	old = effective_load_accepted(&c, &e->consent, err);
	new = conf_load(&c, 0, err);
	conf_free(&c);
	if (old == NULL || new == NULL) {
		config_free(old);
		config_free(new);
		return -1;
	}
	consent_describe(old, new, diff);
	config_free(old);
	config_free(new);
	return 0;
}

void
effective_free(struct effective *e)
{
	conf_free(&e->conf);
	consent_free(&e->consent);
	providers_free(&e->providers);
	state_free(&e->state);
	config_free(e->own);
	config_free(e->full);
	config_free(e->trusted);
	free(e->oc_config);
	free(e->oc_data);
	memset(e, 0, sizeof *e);
}

/* The project files of e, as "PATH (how far trusted)" lines, for a message. */
void
effective_describe_files(const struct effective *e, struct buf *out)
{
	size_t i;

	for (i = 0; i < e->conf.n; i++) {
		const struct conf_file *f = &e->conf.files[i];

		if (f->role == CONF_DEFAULTS)
			continue;
		buf_printf(out, "%s %s (%s)\n", conf_role_name(f->role), f->path,
		           f->role == CONF_ACCEPTED ? "the copy you accepted last"
		           : conf_is_project(f) ? (f->untrusted ? "changed since you accepted it: "
		                                                  "tightens only"
		                                                : "accepted")
		                                : "trusted");
	}
}
