/*
 * `opencode-sandbox doctor [--json]` (seed 003 §7.1): what a run needs,
 * checked without changing anything, each check `pass`, `warn`, `fail` or
 * `skip` with a message that says what to do. The host, the runtime
 * (found, its version, its daemon, service or storage answering), the
 * image (present, its OpenCode version, built from the build inputs
 * installed now), strict mode on this runtime, the user's OpenCode config
 * and credentials, the global and project configuration (every error with
 * its file, line and column), the imported skills, the state directories
 * and the model providers a run allowlists. The seed's macOS checks are
 * kept for Apple's container and skipped elsewhere with the reason. The
 * configuration is read as a run reads it (effective.c); the runtime is
 * only asked questions.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

enum doctor_status {
	DOCTOR_PASS,
	DOCTOR_WARN,
	DOCTOR_FAIL,
	DOCTOR_SKIP,
};

static const char *const doctor_status_names[] = {"pass", "warn", "fail", "skip"};

struct doctor_check {
	const char *id;
	enum doctor_status status;
	char *message;
};

struct doctor {
	struct doctor_check checks[32];
	size_t n;
	struct host_plan plan; /* rt and rt_path when a runtime was found */
	int have_rt;           /* a runtime was found */
	int rt_ok;             /* ... and its service answers */
	int have_image;
	const char *image;
	struct effective e;
	int have_config; /* the configuration loads */
};

struct doctor_opts {
	int json;
	const char *project;
	const char *runtime;
	const char *image;
	struct strv configs;
};

const struct args_opt doctor_opts[] = {
    {"json", ARGS_BOOL, offsetof(struct doctor_opts, json), NULL},
    {"project", ARGS_STRING, offsetof(struct doctor_opts, project), "PATH"},
    {"runtime", ARGS_STRING, offsetof(struct doctor_opts, runtime), "NAME"},
    {"image", ARGS_STRING, offsetof(struct doctor_opts, image), "NAME"},
    {"config", ARGS_LIST, offsetof(struct doctor_opts, configs), "FILE"},
};
const size_t doctor_opts_n = EG_NELEM(doctor_opts);

static void doctor_add(struct doctor *, const char *, enum doctor_status, const char *, ...)
    EG_PRINTF(4, 5);

static void
doctor_add(struct doctor *d, const char *id, enum doctor_status st, const char *fmt, ...)
{
	struct doctor_check *c;
	struct buf b;
	va_list ap;

	if (d->n == EG_NELEM(d->checks))
		fatalx("doctor: too many checks");
	c = &d->checks[d->n++];
	c->id = id;
	c->status = st;
	buf_init(&b);
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	/* One message, without a line break at its end. */
	while (b.len > 0 && b.data[b.len - 1] == '\n')
		b.data[--b.len] = '\0';
	c->message = buf_release(&b);
}

/* A path for a message: under the home directory as "~/...". */
static const char *
doctor_path(const char *path)
{
	static char out[2][PATH_MAX + 2];
	static int k;
	const char *home = host_home();
	size_t n = strlen(home);

	k ^= 1;
	if (strcmp(home, "/") != 0 && strncmp(path, home, n) == 0 &&
	    (path[n] == '/' || path[n] == '\0'))
		snprintf(out[k], sizeof out[k], "~%s", path + n);
	else
		snprintf(out[k], sizeof out[k], "%s", path);
	return out[k];
}

/* The first line of out, for a message. */
static const char *
doctor_line(struct buf *out)
{
	char *nl;

	buf_cstr(out);
	if ((nl = strchr(out->data, '\n')) != NULL)
		*nl = '\0';
	return out->len > 0 && out->data[0] != '\0' ? out->data : "no output";
}

/* host.os, and the seed's macOS checks for Apple's container. */
static void
doctor_host(struct doctor *d)
{
	const char *ver[] = {"-productVersion", NULL};
	struct utsname u;
	struct strv a;
	struct buf out;
	int apple = d->have_rt && d->plan.rt == HOST_RT_APPLE;
	long major;

	if (uname(&u) == -1) {
		doctor_add(d, "host.os", DOCTOR_WARN, "uname: %s", strerror(errno));
		return;
	}
	doctor_add(d, "host.os", DOCTOR_PASS, "%s %s %s", u.sysname, u.release, u.machine);
	if (strcmp(u.sysname, "Darwin") != 0) {
		doctor_add(d, "macos.version", DOCTOR_SKIP,
		           "not macOS: only Apple's container needs it (macOS 26 or later)");
		doctor_add(d, "macos.arch", DOCTOR_SKIP,
		           "not macOS: only Apple's container needs Apple silicon");
		return;
	}
	memset(&a, 0, sizeof a);
	buf_init(&out);
	strv_add(&a, "sw_vers");
	strv_add(&a, ver[0]);
	if (exec_capture(a.v, &out, 0) != 0)
		doctor_add(d, "macos.version", DOCTOR_WARN, "sw_vers: %s", doctor_line(&out));
	else {
		major = strtol(doctor_line(&out), NULL, 10);
		doctor_add(d, "macos.version",
		           major >= 26   ? DOCTOR_PASS
		           : major >= 15 ? DOCTOR_WARN
		           : apple       ? DOCTOR_FAIL
		                         : DOCTOR_WARN,
		           "macOS %s%s", doctor_line(&out),
		           major >= 26 ? ""
		           : major >= 15
		               ? ": Apple's container works, with limits on custom networks "
		                 "(macOS 26 recommended)"
		               : ": Apple's container needs macOS 15 or later");
	}
	doctor_add(d, "macos.arch",
	           strcmp(u.machine, "arm64") == 0 ? DOCTOR_PASS
	           : apple                         ? DOCTOR_FAIL
	                                           : DOCTOR_SKIP,
	           "%s%s", u.machine,
	           strcmp(u.machine, "arm64") == 0 ? ": Apple silicon"
	                                           : ": Apple's container needs Apple silicon");
	strv_free(&a);
	buf_free(&out);
}

/* runtime.binary, runtime.version, runtime.service. */
static void
doctor_runtime(struct doctor *d, const char *want)
{
	const char *podman_ver[] = {"version", "--format", "{{.Client.Version}}", NULL};
	const char *apple_ver[] = {"--version", NULL};
	const char *podman_info[] = {"info", "--format", "{{.Store.GraphRoot}}", NULL};
	struct buf err, out;
	const char *rt;

	buf_init(&err);
	buf_init(&out);
	if (runtime_select(&d->plan, want, &err) == -1) {
		doctor_add(d, "runtime.binary", DOCTOR_FAIL, "%s", buf_cstr(&err));
		doctor_add(d, "runtime.version", DOCTOR_SKIP, "no runtime");
		doctor_add(d, "runtime.service", DOCTOR_SKIP, "no runtime");
		goto out;
	}
	d->have_rt = 1;
	rt = runtime_name(d->plan.rt);
	doctor_add(d, "runtime.binary", DOCTOR_PASS, "%s found at %s", rt, d->plan.rt_path);
	if (runtime_query(&d->plan, d->plan.rt == HOST_RT_APPLE ? apple_ver : podman_ver, &out) ==
	    0)
		doctor_add(d, "runtime.version", DOCTOR_PASS, "%s %s", rt, doctor_line(&out));
	else
		doctor_add(d, "runtime.version", DOCTOR_FAIL, "`%s version` failed: %s", rt,
		           doctor_line(&out));
	if (d->plan.rt == HOST_RT_PODMAN) {
		if (runtime_query(&d->plan, podman_info, &out) == 0) {
			doctor_add(d, "runtime.service", DOCTOR_PASS,
			           "podman's storage answers (%s)", doctor_line(&out));
			d->rt_ok = 1;
		} else
			doctor_add(
			    d, "runtime.service", DOCTOR_FAIL,
			    "`podman info` failed (%s): podman cannot reach its storage or "
			    "service; on macOS start the machine with `podman machine start`",
			    doctor_line(&out));
	} else if (runtime_service(&d->plan, &err) == -1)
		doctor_add(d, "runtime.service", DOCTOR_FAIL, "%s", buf_cstr(&err));
	else {
		doctor_add(d, "runtime.service", DOCTOR_PASS,
		           d->plan.rt == HOST_RT_DOCKER ? "the Docker daemon answers"
		                                        : "Apple's container service is running");
		d->rt_ok = 1;
	}
out:
	buf_free(&err);
	buf_free(&out);
}

/* image.present, image.opencode, image.build. */
static void
doctor_image(struct doctor *d)
{
	char *version = NULL, *label = NULL, *dir = NULL, *digest = NULL, *osb = NULL, *what;
	const char *rt = d->have_rt ? runtime_name(d->plan.rt) : "";
	struct buf err;
	int rc;

	buf_init(&err);
	if (!d->rt_ok) {
		doctor_add(d, "image.present", DOCTOR_SKIP, "the runtime does not answer");
		doctor_add(d, "image.opencode", DOCTOR_SKIP, "the runtime does not answer");
		doctor_add(d, "image.build", DOCTOR_SKIP, "the runtime does not answer");
		goto out;
	}
	if ((rc = runtime_image(&d->plan, d->image, &err)) != 1) {
		doctor_add(d, "image.present", DOCTOR_FAIL, "%s", rc == -1 ? buf_cstr(&err) : "");
		if (rc == 0) {
			free(d->checks[d->n - 1].message);
			d->checks[d->n - 1].message = xasprintf(
			    "image %s not found in %s: build it with `" HOST_PROG " image build`",
			    d->image, rt);
		}
		doctor_add(d, "image.opencode", DOCTOR_SKIP, "no image");
		doctor_add(d, "image.build", DOCTOR_SKIP, "no image");
		goto out;
	}
	d->have_image = 1;
	doctor_add(d, "image.present", DOCTOR_PASS, "%s is in %s", d->image, rt);
	if (d->plan.rt == HOST_RT_APPLE) {
		doctor_add(d, "image.opencode", DOCTOR_SKIP,
		           "Apple's container does not report the image's labels");
		doctor_add(d, "image.build", DOCTOR_SKIP,
		           "Apple's container does not report the image's labels");
		goto out;
	}
	if ((version = image_label(&d->plan, d->image, "ai.opencode.version")) != NULL)
		doctor_add(d, "image.opencode", DOCTOR_PASS, "OpenCode %s", version);
	else
		doctor_add(d, "image.opencode", DOCTOR_WARN,
		           "the image has no ai.opencode.version label: not built from the "
		           "project's Containerfile?");
	label = image_label(&d->plan, d->image, IMAGE_LABEL_INPUTS_NAME);
	osb = image_label(&d->plan, d->image, IMAGE_LABEL_VERSION_NAME);
	/* The egressd in the image is the project's version its label names. */
	what = osb != NULL && strcmp(osb, "unknown") != 0 ? xasprintf("egressd %s, ", osb)
	                                                  : xstrdup("");
	if ((dir = image_inputs_dir(&err)) == NULL ||
	    (digest = image_inputs_digest(dir, &err)) == NULL)
		doctor_add(d, "image.build", DOCTOR_WARN,
		           "cannot tell what the image was built from: %s", buf_cstr(&err));
	else if (label == NULL || strcmp(label, "unknown") == 0)
		doctor_add(d, "image.build", DOCTOR_WARN,
		           "the image does not say which build inputs it came from (built without "
		           "`" HOST_PROG " image build`); rebuild it with `" HOST_PROG
		           " image build`");
	else if (strcmp(label, digest) != 0)
		doctor_add(d, "image.build", DOCTOR_WARN,
		           "%sbuilt from other build inputs (the image's %.12s, installed now "
		           "%.12s in %s): "
		           "rebuild it with `" HOST_PROG " image build`",
		           what, label, digest, dir);
	else
		doctor_add(d, "image.build", DOCTOR_PASS,
		           "%sbuilt from the build inputs installed now (%.12s, %s)", what, digest,
		           dir);
	free(what);
out:
	buf_free(&err);
	free(version);
	free(label);
	free(dir);
	free(digest);
	free(osb);
}

/* strict.support and strict.init-image. */
static void
doctor_strict(struct doctor *d)
{
	const struct config *cfg = d->have_config ? d->e.full : NULL;
	int wants = cfg != NULL && cfg->mode != MODE_PRACTICAL;

	if (!d->have_rt)
		doctor_add(d, "strict.support", DOCTOR_SKIP, "no runtime");
	else if (runtime_cap_add(&d->plan))
		doctor_add(
		    d, "strict.support", DOCTOR_PASS,
		    "%s grants CAP_NET_ADMIN (--cap-add): strict and off mode can be enforced",
		    runtime_name(d->plan.rt));
	else
		doctor_add(d, "strict.support", wants ? DOCTOR_FAIL : DOCTOR_WARN,
		           "%s's `run` has no --cap-add: strict and off mode cannot be enforced%s",
		           runtime_name(d->plan.rt),
		           wants ? " (network.mode asks for it): update the runtime, or set "
		                   "network.mode: practical"
		                 : "; practical mode works");
	if (cfg != NULL && cfg->wrapper.image_strict_init_image != NULL)
		doctor_add(d, "strict.init-image", DOCTOR_WARN,
		           "image.strictInitImage has no effect: sandbox-init enforces strict mode "
		           "inside the container");
	else
		doctor_add(d, "strict.init-image", DOCTOR_SKIP,
		           "no init image is needed: sandbox-init enforces strict mode inside the "
		           "container");
}

/* opencode.config and opencode.auth: present or absent, explained; never a key printed. */
static void
doctor_opencode(struct doctor *d)
{
	static const char *const names[] = {"opencode.json", "opencode.jsonc", "config.json"};
	const struct config_wrapper *w = d->have_config ? &d->e.full->wrapper : NULL;
	char *oc = effective_opencode_dir("XDG_CONFIG_HOME", ".config");
	char *data = effective_opencode_dir("XDG_DATA_HOME", ".local/share");
	char *path, *text, *plain;
	struct buf keys;
	const char *key;
	json_t *j, *v;
	struct stat st;
	size_t i, len;
	int found = 0;

	buf_init(&keys);
	if (w != NULL && w->opencode_mount_host_config_loc.line && !w->opencode_mount_host_config)
		doctor_add(d, "opencode.config", DOCTOR_SKIP,
		           "opencode.mountHostConfig: false: your OpenCode config is not mounted");
	else if (stat(oc, &st) == -1)
		doctor_add(d, "opencode.config", DOCTOR_PASS,
		           "no %s: OpenCode runs with its defaults and the image's config",
		           doctor_path(oc));
	else {
		for (i = 0; i < EG_NELEM(names) && !found; i++) {
			path = xasprintf("%s/%s", oc, names[i]);
			if (host_read_file(path, 1024 * 1024, &text, &len) == 0) {
				found = 1;
				plain = providers_strip_jsonc(text, len);
				j = json_loads(plain, JSON_REJECT_DUPLICATES, NULL);
				if (j == NULL)
					doctor_add(
					    d, "opencode.config", DOCTOR_WARN,
					    "%s is not valid JSON: OpenCode refuses it, and its "
					    "providers are not allowlisted",
					    doctor_path(path));
				else
					doctor_add(
					    d, "opencode.config", DOCTOR_PASS,
					    "%s: a run mounts each entry of %s read-only (its "
					    "skill folders excepted: import them)",
					    doctor_path(path), doctor_path(oc));
				json_decref(j);
				free(plain);
				free(text);
			}
			free(path);
		}
		if (!found)
			doctor_add(
			    d, "opencode.config", DOCTOR_PASS,
			    "%s has no opencode.json: its other entries are mounted read-only",
			    doctor_path(oc));
	}
	path = xasprintf("%s/auth.json", data);
	if (w != NULL && w->opencode_mount_host_data_loc.line && !w->opencode_mount_host_data)
		doctor_add(
		    d, "opencode.auth", DOCTOR_SKIP,
		    "opencode.mountHostData: false: your OpenCode credentials are not mounted");
	else if (host_read_file(path, 1024 * 1024, &text, &len) == -1)
		doctor_add(
		    d, "opencode.auth", DOCTOR_PASS,
		    "no %s: log in on the host (`opencode auth login`) or set a provider's API "
		    "key variable; without either OpenCode uses its own free models",
		    doctor_path(path));
	else {
		if ((j = json_loads(text, 0, NULL)) == NULL || !json_is_object(j))
			doctor_add(d, "opencode.auth", DOCTOR_WARN, "%s is not a JSON object",
			           doctor_path(path));
		else {
			json_object_foreach(j, key, v)
			{
				buf_printf(&keys, "%s%s", keys.len > 0 ? ", " : "", key);
			}
			doctor_add(d, "opencode.auth", DOCTOR_PASS,
			           "%s: credentials for %s, mounted read-only", doctor_path(path),
			           keys.len > 0 ? buf_cstr(&keys) : "no provider");
		}
		json_decref(j);
		free(text);
	}
	free(path);
	free(oc);
	free(data);
	buf_free(&keys);
}

/* config.global and config.project: each error with its place; the project's acceptance. */
static void
doctor_config(struct doctor *d, const char *project, const struct strv *configs)
{
	char *xdg = host_xdg("XDG_CONFIG_HOME", ".config"), *global;
	struct effective g;
	struct buf err, files, diff;
	struct stat st;
	size_t i;
	int nproject = 0;

	buf_init(&err);
	buf_init(&files);
	buf_init(&diff);
	global = xasprintf("%s/opencode-sandbox/config.yaml", xdg);
	free(xdg);
	if (effective_open(&g, NULL, configs, 0, &err) == -1)
		doctor_add(d, "config.global", DOCTOR_FAIL, "%s", buf_cstr(&err));
	else if (stat(global, &st) == -1)
		doctor_add(d, "config.global", DOCTOR_PASS,
		           "no %s: the defaults apply (`" HOST_PROG " init --global` writes one)",
		           doctor_path(global));
	else
		doctor_add(d, "config.global", DOCTOR_PASS, "%s: valid", doctor_path(global));
	effective_free(&g);
	buf_reset(&err);
	if (effective_open(&d->e, project, configs, EFFECTIVE_F_PROVIDERS, &err) == -1) {
		doctor_add(d, "config.project", DOCTOR_FAIL, "%s", buf_cstr(&err));
		goto out;
	}
	d->have_config = 1;
	for (i = 0; i < d->e.conf.n; i++)
		if (conf_is_project(&d->e.conf.files[i])) {
			buf_printf(&files, "%s%s", nproject > 0 ? ", " : "",
			           doctor_path(d->e.conf.files[i].path));
			nproject++;
		}
	if (nproject == 0)
		doctor_add(d, "config.project", DOCTOR_PASS,
		           "no project file for %s (`" HOST_PROG " init` writes one)",
		           doctor_path(d->e.project));
	else if (!d->e.declined && d->e.consent.changed)
		doctor_add(d, "config.project", DOCTOR_PASS,
		           "%s: valid; %s, but changes nothing in effect: a run takes it without "
		           "asking",
		           buf_cstr(&files), d->e.consent.accepted == NULL ? "new" : "changed");
	else if (d->e.declined && effective_change(&d->e, &diff, &err) == 0)
		doctor_add(d, "config.project", DOCTOR_WARN,
		           "%s: valid, but %s since you accepted it: the next run shows what it "
		           "would change and asks (until then it only tightens the policy):\n%s",
		           buf_cstr(&files), d->e.consent.accepted == NULL ? "new" : "changed",
		           buf_cstr(&diff));
	else
		doctor_add(d, "config.project", DOCTOR_PASS, "%s: valid, accepted",
		           buf_cstr(&files));
out:
	free(global);
	buf_free(&err);
	buf_free(&files);
	buf_free(&diff);
}

/* skills: what a run exposes; a name in both scopes would stop it. */
static void
doctor_skills(struct doctor *d)
{
	struct skills s;
	struct buf err, bad;
	size_t i, active = 0, dup = 0;

	buf_init(&err);
	buf_init(&bad);
	if (!d->have_config) {
		doctor_add(d, "skills", DOCTOR_SKIP, "the configuration has errors");
		goto out;
	}
	if (skills_find(&s, &d->e, &err) == -1) {
		doctor_add(d, "skills", DOCTOR_FAIL, "%s", buf_cstr(&err));
		goto out;
	}
	for (i = 0; i < s.n; i++) {
		const struct skill *k = &s.v[i];

		if (k->status == SKILL_ACTIVE || k->status == SKILL_EXPOSED)
			active++;
		else if (k->status == SKILL_DUPLICATE)
			dup++;
		if ((k->scope == SKILL_GLOBAL || k->scope == SKILL_PROJECT) &&
		    (k->status == SKILL_INVALID || k->status == SKILL_MISSING ||
		     k->status == SKILL_UNLISTED || k->status == SKILL_DUPLICATE))
			buf_printf(&bad, "; %s (%s): %s", k->name != NULL ? k->name : k->dir,
			           skills_status_name(k->status),
			           k->error != NULL ? k->error
			                            : "imported globally and into the project");
	}
	doctor_add(d, "skills",
	           dup > 0       ? DOCTOR_FAIL
	           : bad.len > 0 ? DOCTOR_WARN
	                         : DOCTOR_PASS,
	           "%zu imported skill%s exposed by a run%s%s", active, active == 1 ? "" : "s",
	           dup > 0 ? ", and a run refuses a name imported in both scopes" : "",
	           buf_cstr(&bad));
	skills_free(&s);
out:
	buf_free(&err);
	buf_free(&bad);
}

/* Whether path could be made: it, or its nearest existing parent, is a writable directory. */
static const char *
doctor_writable(const char *path)
{
	char *p = xstrdup(path), *slash;
	struct stat st;
	const char *why = NULL;

	while (stat(p, &st) == -1 && (slash = strrchr(p, '/')) != NULL && slash != p)
		*slash = '\0';
	if (stat(p, &st) == -1)
		why = "cannot be made";
	else if (!S_ISDIR(st.st_mode))
		why = "has a file where a directory must be";
	else if (access(p, W_OK | X_OK) == -1)
		why = "is not writable";
	free(p);
	return why;
}

/* state.dirs: the state root (the runs' logs and sessions) and the global config directory. */
static void
doctor_state(struct doctor *d)
{
	char *xdg = host_xdg("XDG_CONFIG_HOME", ".config"), *cfgdir;
	const char *why, *why2;

	cfgdir = xasprintf("%s/opencode-sandbox", xdg);
	free(xdg);
	if (!d->have_config) {
		doctor_add(d, "state.dirs", DOCTOR_SKIP, "the configuration has errors");
		free(cfgdir);
		return;
	}
	why = doctor_writable(d->e.state.root);
	why2 = doctor_writable(cfgdir);
	if (why != NULL)
		doctor_add(d, "state.dirs", DOCTOR_FAIL,
		           "%s %s: a run keeps its audit log and sessions there (state.stateDir "
		           "names another place)",
		           doctor_path(d->e.state.root), why);
	else if (why2 != NULL)
		doctor_add(d, "state.dirs", DOCTOR_WARN,
		           "%s %s: init --global and skills import write there",
		           doctor_path(cfgdir), why2);
	else
		doctor_add(d, "state.dirs", DOCTOR_PASS, "%s and %s are writable",
		           doctor_path(d->e.state.root), doctor_path(cfgdir));
	free(cfgdir);
}

/* providers: what a run allowlists, and what it cannot. */
static void
doctor_providers(struct doctor *d)
{
	const struct providers *pv = &d->e.providers;
	struct buf b;
	size_t i;

	if (!d->have_config) {
		doctor_add(d, "providers", DOCTOR_SKIP, "the configuration has errors");
		return;
	}
	buf_init(&b);
	for (i = 0; i < pv->names.n; i++)
		buf_printf(&b, "%s%s (%s; %s)", i > 0 ? ", " : "", pv->names.v[i], pv->hosts.v[i],
		           pv->why.v[i]);
	for (i = 0; i < pv->notes.n; i++)
		buf_printf(&b, "; not allowlisted: %s", pv->notes.v[i]);
	doctor_add(d, "providers", pv->notes.n > 0 ? DOCTOR_WARN : DOCTOR_PASS,
	           "a run allowlists %s", b.len > 0 ? buf_cstr(&b) : "no model provider");
	buf_free(&b);
}

/* The order checks are shown in: the host first, what a run needs last. */
static const char *const doctor_order[] = {
    "host.os",         "macos.version",   "macos.arch",        "runtime.binary",
    "runtime.version", "runtime.service", "image.present",     "image.opencode",
    "image.build",     "strict.support",  "strict.init-image", "opencode.config",
    "opencode.auth",   "config.global",   "config.project",    "skills",
    "state.dirs",      "providers",
};

static size_t
doctor_rank(const char *id)
{
	size_t i;

	for (i = 0; i < EG_NELEM(doctor_order); i++)
		if (strcmp(doctor_order[i], id) == 0)
			return i;
	return EG_NELEM(doctor_order);
}

static int
doctor_cmp(const void *a, const void *b)
{
	size_t x = doctor_rank(((const struct doctor_check *)a)->id);
	size_t y = doctor_rank(((const struct doctor_check *)b)->id);

	return x < y ? -1 : x > y;
}

static void
doctor_print(struct doctor *d, int json)
{
	size_t i, count[4] = {0, 0, 0, 0};
	const char *p, *nl;
	json_t *o, *arr;
	char *text;

	qsort(d->checks, d->n, sizeof *d->checks, doctor_cmp);
	for (i = 0; i < d->n; i++)
		count[d->checks[i].status]++;
	if (json) {
		arr = json_array();
		for (i = 0; i < d->n; i++)
			json_array_append_new(
			    arr, json_pack("{s:s, s:s, s:s}", "id", d->checks[i].id, "status",
			                   doctor_status_names[d->checks[i].status], "message",
			                   d->checks[i].message));
		o = json_pack("{s:b, s:o}", "ok", count[DOCTOR_FAIL] == 0, "checks", arr);
		text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", text);
		free(text);
		json_decref(o);
		return;
	}
	for (i = 0; i < d->n; i++) {
		printf("%s  %-18s ", doctor_status_names[d->checks[i].status], d->checks[i].id);
		/* Continuation lines (a list of errors) under the message. */
		for (p = d->checks[i].message; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
			printf("%.*s\n%25s", (int)(nl - p), p, "");
		printf("%s\n", p);
	}
	printf("\n" HOST_PROG " doctor: %zu pass, %zu warn, %zu fail, %zu skip%s\n",
	       count[DOCTOR_PASS], count[DOCTOR_WARN], count[DOCTOR_FAIL], count[DOCTOR_SKIP],
	       count[DOCTOR_FAIL] > 0 ? ": a run needs each failure fixed" : ": ready to run");
}

int
doctor_main(const struct strv *args)
{
	struct doctor_opts o;
	struct doctor *d;
	struct strv pos;
	struct buf err;
	const char *env = getenv("OPENCODE_SANDBOX_IMAGE");
	char resolved[PATH_MAX];
	const char *project;
	size_t i;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	buf_init(&err);
	d = xcalloc(1, sizeof *d);
	if (args_options(doctor_opts, EG_NELEM(doctor_opts), &o, args, &pos, &err) == -1) {
		help_hint("doctor", buf_cstr(&err));
		goto out;
	}
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s (the project is --project PATH)",
		           pos.v[0]);
		help_hint("doctor", buf_cstr(&err));
		goto out;
	}
	/* The working directory is the project when it can be one (not / or the home). */
	project = o.project;
	if (project == NULL && mounts_check_project(".", resolved, sizeof resolved) == NULL)
		project = ".";
	doctor_config(d, project, &o.configs);
	d->image = o.image != NULL ? o.image
	           : d->have_config && d->e.full->wrapper.image_name != NULL
	               ? d->e.full->wrapper.image_name
	           : env != NULL && env[0] != '\0' ? env
	                                           : HOST_DEFAULT_IMAGE;
	doctor_runtime(d, o.runtime);
	doctor_host(d);
	doctor_image(d);
	doctor_strict(d);
	doctor_opencode(d);
	doctor_skills(d);
	doctor_state(d);
	doctor_providers(d);
	doctor_print(d, o.json);
	rc = 0;
	for (i = 0; i < d->n; i++)
		if (d->checks[i].status == DOCTOR_FAIL)
			rc = 1;
out:
	for (i = 0; i < d->n; i++)
		free(d->checks[i].message);
	effective_free(&d->e);
	plan_free(&d->plan);
	free(d);
	strv_free(&o.configs);
	strv_free(&pos);
	buf_free(&err);
	return rc;
}
