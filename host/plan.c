/*
 * The plan of a run (seed 003 §10, §11, §15): from the effective
 * configuration to what the container gets. The mounts (the project at
 * /workspace, the run's log directory, the policy files and the OpenCode
 * overlay read-only, the staged home with the session state inside it,
 * the host's OpenCode files read-only), the environment, the published
 * ports, sandbox-init's options and OpenCode's command line; then the
 * files written for it, and --dry-run's account of all of it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

#define PLAN_SERVE_PORT 4096 /* OpenCode picks a random port; a published one must be known */

void
plan_mount(struct host_plan *p, const char *source, const char *target, int readonly,
           const char *why)
{
	struct host_mount *m;

	p->mounts = xreallocarray(p->mounts, p->nmounts + 1, sizeof *p->mounts);
	m = &p->mounts[p->nmounts++];
	memset(m, 0, sizeof *m);
	m->source = source != NULL ? xstrdup(source) : NULL;
	m->tmpfs = source == NULL;
	m->target = xstrdup(target);
	m->readonly = readonly;
	m->why = why;
}

void
plan_env(struct host_plan *p, const char *name, const char *value, const char *why)
{
	struct host_env *e;

	p->env = xreallocarray(p->env, p->nenv + 1, sizeof *p->env);
	e = &p->env[p->nenv++];
	e->name = xstrdup(name);
	e->value = value != NULL ? xstrdup(value) : NULL;
	e->why = why;
}

void
plan_free(struct host_plan *p)
{
	size_t i;

	free(p->rt_path);
	free(p->image);
	free(p->name);
	free(p->cpus);
	free(p->memory);
	free(p->workdir);
	free(p->userns);
	for (i = 0; i < p->nmounts; i++) {
		free(p->mounts[i].source);
		free(p->mounts[i].target);
	}
	free(p->mounts);
	for (i = 0; i < p->nenv; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	strv_free(&p->publish);
	strv_free(&p->init);
	strv_free(&p->notes);
	strv_free(&p->oc);
	strv_free(&p->argv);
}

/* OpenCode's options that take a value: their value is not a subcommand. */
static const char *const plan_valued[] = {
    "--port",  "--hostname", "--log-level", "--mdns-domain", "--cors",  "-m",
    "--model", "-s",         "--session",   "--prompt",      "--agent", "--replay-limit",
};

static int
plan_valued_opt(const char *a)
{
	size_t i;

	for (i = 0; i < EG_NELEM(plan_valued); i++)
		if (strcmp(a, plan_valued[i]) == 0)
			return 1;
	return 0;
}

/*
 * `opencode serve` and `opencode web` listen on a port the host must reach:
 * it is published on 127.0.0.1 only. OpenCode's own defaults (a random
 * port on 127.0.0.1 in the container) cannot be reached through a
 * published port, so --port 4096 and --hostname 0.0.0.0 are added when not
 * given: the container's own address, reachable from the host only
 * through 127.0.0.1:PORT. 0, or -1 with a bad --port in err.
 */
int
plan_serve_ports(const struct strv *in, struct strv *out, int *port)
{
	const char *cmd = NULL, *p = NULL;
	int has_host = 0;
	size_t i;
	long v;
	char *end;

	*port = 0;
	for (i = 0; i < in->n; i++) {
		const char *a = in->v[i];

		if (strcmp(a, "--port") == 0 && i + 1 < in->n)
			p = in->v[i + 1];
		else if (strncmp(a, "--port=", 7) == 0)
			p = a + 7;
		if (strcmp(a, "--hostname") == 0 || strncmp(a, "--hostname=", 11) == 0)
			has_host = 1;
		if (cmd == NULL && a[0] != '-' && (i == 0 || !plan_valued_opt(in->v[i - 1])))
			cmd = a;
	}
	for (i = 0; i < in->n; i++)
		strv_add(out, in->v[i]);
	if (cmd == NULL || (strcmp(cmd, "serve") != 0 && strcmp(cmd, "web") != 0))
		return 0;
	if (p != NULL) {
		v = strtol(p, &end, 10);
		if (*p == '\0' || *end != '\0' || v < 0 || v > 65535)
			return -1;
		*port = (int)v;
	}
	if (*port == 0) {
		*port = PLAN_SERVE_PORT;
		strv_add(out, "--port");
		strv_addf(out, "%d", *port);
	}
	if (!has_host) {
		strv_add(out, "--hostname");
		strv_add(out, "0.0.0.0");
	}
	return 0;
}

/* The default of resources.cpus: 4, or the machine's CPUs when fewer. */
void
plan_default_cpus(char *out, size_t size)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(out, size, "%ld", n < 1 ? 1 : n > 4 ? 4 : n);
}

/*
 * Who the payload is, so that what it writes in the project is the
 * invoking user's: rootless podman maps the user onto the image's payload
 * uid (keep-id); a rootful runtime gets the user's own uid for the
 * payload; root, who cannot be the payload, gives the project's owner
 * (or the image's user when root owns it) and hands it the home.
 */
static void
plan_user(struct host_plan *p, const char *project)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	struct stat st;

	p->uid = HOST_PAYLOAD_UID;
	p->gid = HOST_PAYLOAD_GID;
	if (p->rt == HOST_RT_APPLE)
		return;
	if (uid != 0 && p->rt == HOST_RT_PODMAN) {
		p->userns = xasprintf("keep-id:uid=%u,gid=%u", HOST_PAYLOAD_UID, HOST_PAYLOAD_GID);
		p->audit_owner = 1;
		return;
	}
	if (uid == 0) {
		if (stat(project, &st) == 0 && st.st_uid != 0) {
			p->uid = st.st_uid;
			p->gid = st.st_gid;
			p->set_user = 1;
		}
		p->chown = 1;
		return;
	}
	p->uid = uid;
	p->gid = gid;
	p->set_user = 1;
	p->audit_owner = 1;
}

static char *
plan_path(const char *a, const char *b)
{
	return xasprintf("%s/%s", a, b);
}

static void
plan_init_args(struct host_plan *p, const struct conf *c, const struct config *full, int serve_port)
{
	size_t i, k = 0;

	strv_add(&p->init, "--global-config");
	strv_add(&p->init, HOST_CONFIG_DIR "/policy.yaml");
	for (i = 0; i < c->n; i++)
		if (c->files[i].untrusted) {
			strv_add(&p->init, "--project-config");
			strv_addf(&p->init, HOST_CONFIG_DIR "/project-%zu.yaml", ++k);
		}
	if (k == 0) {
		strv_add(&p->init, "--project-config");
		strv_add(&p->init, "none");
	}
	strv_add(&p->init, "--mode");
	strv_add(&p->init, config_mode_name(full->mode));
	if (p->set_user) {
		strv_add(&p->init, "--user");
		strv_addf(&p->init, "%u:%u", (unsigned)p->uid, (unsigned)p->gid);
		strv_add(&p->init, "--home");
		strv_add(&p->init, HOST_HOME);
	}
	if (p->audit_owner) {
		strv_add(&p->init, "--audit-owner");
		strv_addf(&p->init, "%u:%u", (unsigned)p->uid, (unsigned)p->gid);
	}
	if (full->wrapper.container_upstream_ca != NULL) {
		strv_add(&p->init, "--upstream-ca");
		strv_add(&p->init, HOST_CONFIG_DIR "/upstream-ca.pem");
	}
	if (serve_port > 0) {
		strv_add(&p->init, "--serve-port");
		strv_addf(&p->init, "%d", serve_port);
	}
	if (full->wrapper.container_debug) {
		strv_add(&p->init, "--verbose");
		strv_add(&p->init, "--egressd-arg=--verbose");
	}
}

/* How many skills the run exposes (skillset.c copies them at staging time). */
static size_t
plan_skills(const struct skills *sk)
{
	size_t i, n = 0;

	for (i = 0; i < sk->n; i++)
		n += sk->v[i].status == SKILL_ACTIVE || sk->v[i].status == SKILL_EXPOSED;
	return n;
}

static void
plan_env_all(struct host_plan *p, const struct config *full, const struct providers *pv)
{
	const struct config_wrapper *w = &full->wrapper;
	size_t i;

	plan_env(p, "OPENCODE_SANDBOX_NETWORK_MODE", config_mode_name(full->mode),
	         "the network mode in force");
	if (!w->opencode_generated_config_loc.line || w->opencode_generated_config)
		plan_env(p, "OPENCODE_CONFIG", HOST_OVERLAY_DIR "/opencode.json",
		         "the sandbox's OpenCode overlay");
	if (getenv("TERM") != NULL)
		plan_env(p, "TERM", NULL, "your terminal");
	if (getenv("COLORTERM") != NULL)
		plan_env(p, "COLORTERM", NULL, "your terminal");
	for (i = 0; i < pv->env.n; i++)
		plan_env(p, pv->env.v[i], NULL, "a model provider's key, from your environment");
	if (w->skills_expose_project_skills_loc.line && !w->skills_expose_project_skills)
		plan_env(p, "OPENCODE_DISABLE_EXTERNAL_SKILLS", "1",
		         "skills.exposeProjectSkills: false (.agents and .claude skills hidden)");
}

/* Every mount of the run, in the order the runtime gets them (outer before inner). */
static int
plan_mounts(struct host_plan *p, const struct effective *e, const struct skills *sk,
            struct buf *err)
{
	const struct config *full = e->full;
	const struct host_state *s = &e->state;
	const struct config_wrapper *w = &full->wrapper;
	const char *project = e->project;
	char *a, *b;

	plan_mount(p, project, p->workdir, w->project_readonly, "the project");
	plan_mount(p, s->logs, HOST_LOG_DIR, 0,
	           "this run's audit log (egressd's; not the payload's)");
	a = plan_path(s->scratch, "config");
	plan_mount(p, a, HOST_CONFIG_DIR, 1, "the policy sandbox-init enforces");
	free(a);
	if (!w->opencode_generated_config_loc.line || w->opencode_generated_config) {
		a = plan_path(s->scratch, "opencode");
		plan_mount(p, a, HOST_OVERLAY_DIR, 1, "the sandbox's OpenCode overlay");
		free(a);
	}
	a = plan_path(s->scratch, "home");
	plan_mount(p, a, HOST_HOME, 0, "a fresh home for this run");
	free(a);
	a = plan_path(s->project, "opencode/share");
	b = plan_path(s->project, "opencode/state");
	plan_mount(p, a, HOST_HOME "/.local/share/opencode", 0,
	           "this project's OpenCode sessions (kept between runs)");
	plan_mount(p, b, HOST_HOME "/.local/state/opencode", 0,
	           "this project's prompt history (kept between runs)");
	free(a);
	free(b);
	mounts_host_config(p, full, sk, e->oc_config, e->oc_data);
	if (plan_skills(sk) > 0) {
		a = plan_path(s->scratch, "skills");
		plan_mount(p, a, HOST_HOME "/.config/opencode/skills", 1,
		           "the imported skills, read-only (skills list)");
		free(a);
	}
	return mounts_extra(p, full, err);
}

/*
 * The plan from the effective configuration (every file merged), for the
 * runtime runtime_select chose.
 */
int
plan_build(struct host_plan *p, const struct host_args *a, const struct effective *e,
           const struct skills *sk, struct buf *err)
{
	const struct config *full = e->full;
	const struct host_state *s = &e->state;
	const struct config_wrapper *w = &full->wrapper;
	const char *image = getenv("OPENCODE_SANDBOX_IMAGE");
	struct strv oc;
	char rnd[9], cpus[16];
	int port = 0;
	size_t i;

	memset(&oc, 0, sizeof oc);
	p->image = xstrdup(w->image_name != NULL               ? w->image_name
	                   : image != NULL && image[0] != '\0' ? image
	                                                       : HOST_DEFAULT_IMAGE);
	p->mode = full->mode;
	p->net_admin = full->mode != MODE_PRACTICAL;
	p->tty = isatty(STDIN_FILENO);
	p->remove = !w->container_remove_loc.line || w->container_remove;
	state_random(rnd, sizeof rnd);
	p->name = xasprintf("%s-%s-%s",
	                    w->container_name_prefix != NULL ? w->container_name_prefix
	                                                     : "opencode-sandbox",
	                    s->slug, rnd);
	plan_default_cpus(cpus, sizeof cpus);
	p->cpus = xstrdup(w->resources_cpus != NULL ? w->resources_cpus : cpus);
	p->memory = xstrdup(w->resources_memory != NULL ? w->resources_memory : "4g");
	p->workdir = xstrdup(w->project_target != NULL ? w->project_target : HOST_TARGET);
	plan_user(p, e->project);
	if (plan_mounts(p, e, sk, err) == -1)
		return -1;
	plan_env_all(p, full, &e->providers);
	if (plan_serve_ports(&a->oc, &p->oc, &port) == -1) {
		buf_adds(err, "--port: expected a port number (1-65535)");
		return -1;
	}
	if (port > 0)
		strv_addf(&p->publish, "127.0.0.1:%d:%d", port, port);
	/* Always `opencode` first: the image's CMD is replaced, never extended. */
	strv_add(&oc, "opencode");
	for (i = 0; i < p->oc.n; i++)
		strv_add(&oc, p->oc.v[i]);
	strv_free(&p->oc);
	p->oc = oc;
	plan_init_args(p, &e->conf, full, port);
	runtime_argv(p);
	return 0;
}
