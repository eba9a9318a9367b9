/*
 * `opencode-sandbox init [--project PATH] [--global] [--force]`: the
 * configuration files of seed 003 §7.2. Every key of the seed's template
 * is written with the value in force without the file being written (the
 * defaults, for the global file; the global file's, for a project), so
 * that what init writes changes nothing until the user edits it: a run
 * takes a new project file without asking, and `policyctl check` loads it
 * without a warning. Comments say what init found (OpenCode's config
 * files, skill folders, the model providers a run allowlists) and show,
 * commented out, how to open writes and turn strict mode on. An existing
 * file is never replaced without --force, and then kept as FILE.bak.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

struct init_opts {
	const char *project;
	int global;
	int force;
};

const struct args_opt init_opts[] = {
    {"project", ARGS_STRING, offsetof(struct init_opts, project), "PATH"},
    {"global", ARGS_BOOL, offsetof(struct init_opts, global), NULL},
    {"force", ARGS_BOOL, offsetof(struct init_opts, force), NULL},
};
const size_t init_opts_n = EG_NELEM(init_opts);

static int
init_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* "# ..." lines about what was found: OpenCode's files and skill folders. */
static void
init_found(struct buf *b, const struct effective *e, const char *project)
{
	static const char *const config_names[] = {"opencode.json", "opencode.jsonc",
	                                           "config.json"};
	static const char *const project_skills[] = {".opencode/skills", ".opencode/skill",
	                                             ".agents/skills", ".claude/skills"};
	const char *home = host_home();
	char *path;
	size_t i, n;
	int any = 0;

	buf_adds(b, "# What init found:\n");
	for (i = 0; i < EG_NELEM(config_names); i++) {
		path = xasprintf("%s/%s", e->oc_config, config_names[i]);
		if (init_exists(path)) {
			buf_adds(b, "#   ");
			host_path_show(b, path);
			buf_adds(b, ": your OpenCode config; a run mounts it read-only "
			            "(opencode.mountHostConfig)\n");
			any = 1;
		}
		free(path);
	}
	path = xasprintf("%s/auth.json", e->oc_data);
	if (init_exists(path)) {
		buf_adds(b, "#   ");
		host_path_show(b, path);
		buf_adds(b, ": your OpenCode credentials; a run mounts them read-only "
		            "(opencode.mountHostData)\n");
		any = 1;
	}
	free(path);
	for (i = 0; project != NULL && i < 2; i++) {
		path = xasprintf("%s/%s", project, config_names[i]);
		if (init_exists(path)) {
			buf_printf(b,
			           "#   %s in the project: OpenCode reads it in the sandbox, over "
			           "your own config\n",
			           config_names[i]);
			any = 1;
		}
		free(path);
	}
	for (i = 0; project != NULL && i < EG_NELEM(project_skills); i++) {
		path = xasprintf("%s/%s", project, project_skills[i]);
		if ((n = skills_count(path)) > 0) {
			buf_printf(
			    b,
			    "#   %s: %zu skill%s of the project, which OpenCode finds in the "
			    "mounted project\n",
			    project_skills[i], n, n == 1 ? "" : "s");
			any = 1;
		}
		free(path);
	}
	for (i = 0; i < skills_nhost_dirs; i++) {
		path = xasprintf("%s/%s", home, skills_host_dirs[i]);
		if ((n = skills_count(path)) > 0) {
			buf_printf(
			    b, "#   ~/%s: %zu skill%s, not exposed in the sandbox; to use them: ",
			    skills_host_dirs[i], n, n == 1 ? "" : "s");
			buf_printf(b, HOST_PROG " skills import ~/%s\n", skills_host_dirs[i]);
			any = 1;
		}
		free(path);
	}
	if (!any)
		buf_adds(b, "#   no OpenCode config, credentials or skills\n");
}

/* "# ..." lines: the model providers a run allowlists, and why. */
static void
init_providers(struct buf *b, const struct providers *pv)
{
	size_t i;

	if (pv->names.n == 0)
		buf_adds(b, "# A run allowlists no model provider.\n");
	else
		buf_adds(b, "# The model providers a run allowlists (every method to their API "
		            "hosts):\n");
	for (i = 0; i < pv->names.n; i++)
		buf_printf(b, "#   %s: %s (%s)\n", pv->names.v[i], pv->hosts.v[i], pv->why.v[i]);
	for (i = 0; i < pv->notes.n; i++)
		buf_printf(b, "#   not allowlisted: %s\n", pv->notes.v[i]);
}

/* A YAML list of strings, as a flow sequence: ["*"] or []. */
static void
init_list(struct buf *b, const struct cfg_list *l, const char *dflt)
{
	size_t i;

	if (!l->set) {
		buf_adds(b, dflt);
		return;
	}
	buf_addc(b, '[');
	for (i = 0; i < l->n; i++)
		buf_printf(b, "%s\"%s\"", i > 0 ? ", " : "", l->items[i].value);
	buf_addc(b, ']');
}

static const char *
init_bool(int set, int value, int dflt)
{
	return (set ? value : dflt) ? "true" : "false";
}

/* The network section, with the commented ways to open it up or close it down. */
static void
init_network(struct buf *b, const struct config *cfg, int global)
{
	buf_adds(b, "network:\n");
	if (!global)
		buf_adds(b, "  # Inherit global network defaults and add project-specific rules "
		            "here.\n  inheritGlobal: true\n");
	buf_printf(b,
	           "  # practical: egressd decides what goes through the proxy; strict forces\n"
	           "  # every packet through it (sandbox-init gets CAP_NET_ADMIN for its\n"
	           "  # nftables rules); off: no network. To turn strict mode on:\n"
	           "  #   mode: strict\n"
	           "  mode: %s\n",
	           config_mode_name(cfg->mode));
	buf_adds(b, "  # Blocked hosts, like \"*.segment.io\" or \"telemetry.example.com\":\n"
	            "  blocklist: []\n"
	            "  # Practical mode lets GET, HEAD and OPTIONS through to hosts on no list;\n"
	            "  # an allowlisted host gets every method:\n"
	            "  #   allowlist: [\"api.github.com\"]\n"
	            "  allowlist: []\n"
	            "  # To open writes to every host that is not blocked:\n"
	            "  #   allowMethods: [GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE]\n");
	if (global)
		buf_printf(b, "  proxyPort: %d\n  dnsPort: %d\n  failClosed: %s\n", cfg->proxy_port,
		           cfg->dns_port, cfg->fail_closed ? "true" : "false");
	buf_addc(b, '\n');
}

/*
 * The file's text: seed 003 §7.2's template with the values of cfg (the
 * configuration in force without this file).
 */
static void
init_render(struct buf *b, const struct config *cfg, const struct effective *e, const char *project,
            int global)
{
	const struct config_wrapper *w = &cfg->wrapper;
	const char *image = getenv("OPENCODE_SANDBOX_IMAGE");
	char cpus[16];

	plan_default_cpus(cpus, sizeof cpus);
	buf_printf(b, "# %s, written by `" HOST_PROG " init%s`.\n",
	           global ? "opencode-sandbox's global configuration"
	                  : "This project's opencode-sandbox configuration",
	           global ? " --global" : "");
	if (global)
		buf_adds(b, "# Each project's .opencode-sandbox.yaml is merged over it.\n");
	else
		buf_adds(
		    b, "# Its values win over the global file's for this project; a run asks you\n"
		       "# to accept each change of it (the agent can write the project).\n");
	buf_adds(b, "# `" HOST_PROG " config show` prints what is in force; docs/config.md "
	            "has every key.\n#\n");
	init_found(b, e, project);
	buf_adds(b, "#\n");
	init_providers(b, &e->providers);
	buf_adds(b, "\nversion: 1\n\nimage:\n  name: ");
	buf_adds(b, w->image_name != NULL               ? w->image_name
	            : image != NULL && image[0] != '\0' ? image
	                                                : HOST_DEFAULT_IMAGE);
	buf_adds(b, "\n  # Images are built only by `" HOST_PROG " image build`.\n"
	            "  autoBuild: false\n\n");
	if (!global)
		buf_printf(b, "project:\n  target: %s\n  readonly: %s\n\n",
		           w->project_target != NULL ? w->project_target : HOST_TARGET,
		           init_bool(w->project_readonly_loc.line, w->project_readonly, 0));
	buf_printf(
	    b,
	    "opencode:\n  mountHostConfig: %s\n  mountHostData: %s\n  generatedConfig: %s\n"
	    "  autoupdate: %s\n\n",
	    init_bool(w->opencode_mount_host_config_loc.line, w->opencode_mount_host_config, 1),
	    init_bool(w->opencode_mount_host_data_loc.line, w->opencode_mount_host_data, 1),
	    init_bool(w->opencode_generated_config_loc.line, w->opencode_generated_config, 1),
	    init_bool(w->opencode_autoupdate_loc.line, w->opencode_autoupdate, 0));
	buf_printf(b,
	           "skills:\n  # `" HOST_PROG " skills import` copies skills here.\n"
	           "  importedDir: %s\n  include: ",
	           global ? "~/.config/opencode-sandbox/skills" : ".opencode-sandbox/skills");
	init_list(b, &w->skills_include, "[\"*\"]");
	buf_adds(b, "\n  exclude: ");
	init_list(b, &w->skills_exclude, "[]");
	buf_adds(b, "\n\n");
	init_network(b, cfg, global);
	buf_printf(b, "resources:\n  cpus: %s\n  memory: %s\n",
	           w->resources_cpus != NULL ? w->resources_cpus : cpus,
	           w->resources_memory != NULL ? w->resources_memory : "4g");
	if (!global)
		buf_printf(b, "\ncontainer:\n  namePrefix: %s\n  remove: %s\n",
		           w->container_name_prefix != NULL ? w->container_name_prefix
		                                            : "opencode-sandbox",
		           init_bool(w->container_remove_loc.line, w->container_remove, 1));
}

/*
 * The configuration in force without the file init writes: for the
 * global file the defaults (and --config files are not init's), for a
 * project the files of a run but the project's .opencode-sandbox.yaml.
 */
static struct config *
init_base(const struct effective *e, int global, struct buf *err)
{
	struct conf c;
	struct config *cfg;
	size_t i;

	memset(&c, 0, sizeof c);
	for (i = 0; i < e->conf.n; i++) {
		const struct conf_file *f = &e->conf.files[i];

		if (f->role == CONF_PROVIDERS || f->role == CONF_ACCEPTED ||
		    f->role == CONF_PROJECT || (global && f->role != CONF_DEFAULTS))
			continue;
		conf_add_text(&c, f->role, f->path, xstrndup(f->data, f->len), f->len, 0);
	}
	cfg = conf_load(&c, 1, err);
	conf_free(&c);
	return cfg;
}

/* Write path: refused when it exists, unless force, which keeps the old one as path.bak. */
static int
init_write(const char *path, const struct buf *text, int force)
{
	char *bak;

	if (init_exists(path)) {
		if (!force) {
			fprintf(stderr,
			        HOST_PROG
			        " init: %s exists; not replacing it (--force replaces it, "
			        "keeping it as %s.bak)\n",
			        path, path);
			return -1;
		}
		bak = xasprintf("%s.bak", path);
		if (rename(path, bak) == -1) {
			fprintf(stderr, HOST_PROG " init: %s: %s\n", bak, strerror(errno));
			free(bak);
			return -1;
		}
		fprintf(stderr, HOST_PROG " init: kept the old file as %s\n", bak);
		free(bak);
	}
	if (host_write_file(path, text->data, text->len, 0644) == -1) {
		fprintf(stderr, HOST_PROG " init: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int
init_main(const struct strv *args)
{
	struct init_opts o;
	struct effective e;
	struct strv pos;
	struct buf err, text;
	struct config *base = NULL;
	char *dir = NULL, *path = NULL;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&e, 0, sizeof e);
	buf_init(&err);
	buf_init(&text);
	if (args_options(init_opts, EG_NELEM(init_opts), &o, args, &pos, &err) == -1)
		goto usage;
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s (the project is --project PATH)",
		           pos.v[0]);
		goto usage;
	}
	if (o.global && o.project != NULL) {
		buf_adds(&err, "--global and --project: one file at a time");
		goto usage;
	}
	if (effective_open(&e,
	                   o.global            ? NULL
	                   : o.project != NULL ? o.project
	                                       : ".",
	                   NULL, EFFECTIVE_F_PROVIDERS, &err) == -1 ||
	    (base = init_base(&e, o.global, &err)) == NULL) {
		fprintf(stderr, "%s", buf_cstr(&err));
		goto out;
	}
	if (o.global) {
		char *xdg = host_xdg("XDG_CONFIG_HOME", ".config");

		dir = xasprintf("%s/opencode-sandbox", xdg);
		free(xdg);
		path = xasprintf("%s/config.yaml", dir);
		if (host_mkdirs(dir, 0755) == -1) {
			fprintf(stderr, HOST_PROG " init: %s: %s\n", dir, strerror(errno));
			goto out;
		}
	} else
		path = xasprintf("%s/.opencode-sandbox.yaml", e.project);
	init_render(&text, base, &e, o.global ? NULL : e.project, o.global);
	if (init_write(path, &text, o.force) == -1)
		goto out;
	printf("wrote %s\n", path);
	if (o.global)
		printf("next: `" HOST_PROG " init` in a project, or `" HOST_PROG
		       " doctor` to check the setup\n");
	else
		printf("next: `" HOST_PROG "` runs OpenCode on %s (`" HOST_PROG
		       " config show` shows the configuration in force)\n",
		       e.project);
	rc = 0;
	goto out;
usage:
	help_hint("init", buf_cstr(&err));
out:
	config_free(base);
	effective_free(&e);
	strv_free(&pos);
	buf_free(&err);
	buf_free(&text);
	free(dir);
	free(path);
	return rc;
}
