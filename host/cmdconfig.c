/*
 * `opencode-sandbox config path` and `config show` (seed 003 §7.7): where
 * the configuration files are, and the configuration a run on a project
 * would use, read as the run reads it (effective.c): each file and how
 * far it is trusted, the effective policy as `policyctl check` prints it
 * (every value with the file and line that set it), every wrapper setting
 * with its source or "default", the model providers allowlisted and the
 * variables passed by name. Nothing secret is printed: a variable's value
 * never, and a value that looks like one (a password in a URL, NAME=VALUE
 * with a secret's NAME) is redacted.
 */
#include <sys/stat.h>

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

struct cmdconfig_opts {
	int global;
	int json;
	const char *project;
	struct strv configs;
};

const struct args_opt cmdconfig_path_opts[] = {
    {"global", ARGS_BOOL, offsetof(struct cmdconfig_opts, global), NULL},
    {"project", ARGS_STRING, offsetof(struct cmdconfig_opts, project), "PATH"},
};
const size_t cmdconfig_path_opts_n = EG_NELEM(cmdconfig_path_opts);

const struct args_opt cmdconfig_show_opts[] = {
    {"project", ARGS_STRING, offsetof(struct cmdconfig_opts, project), "PATH"},
    {"json", ARGS_BOOL, offsetof(struct cmdconfig_opts, json), NULL},
    {"config", ARGS_LIST, offsetof(struct cmdconfig_opts, configs), "FILE"},
};
const size_t cmdconfig_show_opts_n = EG_NELEM(cmdconfig_show_opts);

/*
 * A value as it may be printed: a URL's password and the value of a
 * NAME=VALUE whose NAME says it is a secret become <redacted>.
 */
char *
cmdconfig_redact(const char *v)
{
	const char *scheme = strstr(v, "://"), *at, *colon, *slash, *eq = strchr(v, '=');

	if (scheme != NULL) {
		slash = strchr(scheme + 3, '/');
		at = strchr(scheme + 3, '@');
		colon = strchr(scheme + 3, ':');
		if (at != NULL && (slash == NULL || at < slash) && colon != NULL && colon < at)
			return xasprintf("%.*s<redacted>%s", (int)(colon + 1 - v), v, at);
	}
	if (eq != NULL && eq != v && redact_is_secret_name(v, (size_t)(eq - v)))
		return xasprintf("%.*s<redacted>", (int)(eq + 1 - v), v);
	return xstrdup(v);
}

/* The wrapper settings, each with the value a run uses and where it came from. */
struct cmdconfig_item {
	const char *key;
	size_t loc;         /* offsetof the setting's cfg_loc, or of its cfg_list */
	int list;           /* a cfg_list */
	char *value;        /* as shown */
	const char *source; /* not NULL: the source, as shown */
};

static char *
cmdconfig_list(const struct cfg_list *l, const char *dflt)
{
	struct buf b;
	char *r;
	size_t i;

	if (!l->set)
		return xstrdup(dflt);
	buf_init(&b);
	buf_addc(&b, '[');
	for (i = 0; i < l->n; i++) {
		r = cmdconfig_redact(l->items[i].value);
		buf_printf(&b, "%s\"%s\"", i > 0 ? ", " : "", r);
		free(r);
	}
	buf_addc(&b, ']');
	return buf_release(&b);
}

static char *
cmdconfig_bool(int set, int v, int dflt)
{
	return xstrdup((set ? v : dflt) ? "true" : "false");
}

static char *
cmdconfig_str(const char *v, const char *dflt)
{
	return v != NULL ? cmdconfig_redact(v) : xstrdup(dflt);
}

/* A source as shown, for a setting read from another configuration than the run's. */
static const char *
cmdconfig_loc(const struct cfg_loc *loc)
{
	static char out[PATH_MAX + 16];

	if (loc->line == 0)
		return "default";
	snprintf(out, sizeof out, "%s:%u", loc->file != NULL ? loc->file : "builtin", loc->line);
	return out;
}

#define W(field)  offsetof(struct config, wrapper.field##_loc)
#define WL(field) offsetof(struct config, wrapper.field)

/* Every setting of the wrapper's sections, with the values a run would use. */
static size_t
cmdconfig_items(const struct effective *e, const struct skills *sk, struct cmdconfig_item *it)
{
	const struct config_wrapper *w = &e->full->wrapper;
	const char *env = getenv("OPENCODE_SANDBOX_IMAGE");
	char cpus[16];
	size_t k = 0;

	plan_default_cpus(cpus, sizeof cpus);
#define ITEM(name, off, islist, val)                                                               \
	do {                                                                                       \
		it[k].key = name;                                                                  \
		it[k].loc = off;                                                                   \
		it[k].list = islist;                                                               \
		it[k].value = val;                                                                 \
		it[k].source = NULL;                                                               \
		k++;                                                                               \
	} while (0)
	ITEM("state.stateDir", W(state_state_dir), 0, xstrdup(e->state.root));
	ITEM(
	    "image.name", W(image_name), 0,
	    cmdconfig_str(w->image_name, env != NULL && env[0] != '\0' ? env : HOST_DEFAULT_IMAGE));
	ITEM("image.base", W(image_base), 0, cmdconfig_str(w->image_base, "debian:bookworm-slim"));
	ITEM("project.target", W(project_target), 0, cmdconfig_str(w->project_target, HOST_TARGET));
	ITEM("project.readonly", W(project_readonly), 0,
	     cmdconfig_bool(w->project_readonly_loc.line, w->project_readonly, 0));
	ITEM("project.extraMounts", WL(project_extra_mounts), 1,
	     cmdconfig_list(&w->project_extra_mounts, "[]"));
	ITEM("opencode.mountHostConfig", W(opencode_mount_host_config), 0,
	     cmdconfig_bool(w->opencode_mount_host_config_loc.line, w->opencode_mount_host_config,
	                    1));
	ITEM("opencode.mountHostData", W(opencode_mount_host_data), 0,
	     cmdconfig_bool(w->opencode_mount_host_data_loc.line, w->opencode_mount_host_data, 1));
	ITEM(
	    "opencode.generatedConfig", W(opencode_generated_config), 0,
	    cmdconfig_bool(w->opencode_generated_config_loc.line, w->opencode_generated_config, 1));
	ITEM("opencode.autoupdate", W(opencode_autoupdate), 0,
	     cmdconfig_bool(w->opencode_autoupdate_loc.line, w->opencode_autoupdate, 0));
	ITEM("opencode.enabledProviders", WL(opencode_enabled_providers), 1,
	     cmdconfig_list(&w->opencode_enabled_providers, "(the providers allowlisted)"));
	ITEM("opencode.disabledProviders", WL(opencode_disabled_providers), 1,
	     cmdconfig_list(&w->opencode_disabled_providers, "[]"));
	ITEM("opencode.permission.edit", W(opencode_permission_edit), 0,
	     xstrdup(w->opencode_permission_edit_loc.line
	                 ? config_permission_name(w->opencode_permission_edit)
	                 : "(OpenCode's)"));
	ITEM("opencode.permission.bash", W(opencode_permission_bash), 0,
	     xstrdup(w->opencode_permission_bash_loc.line
	                 ? config_permission_name(w->opencode_permission_bash)
	                 : "(OpenCode's)"));
	ITEM("skills.importedDir (global)", W(skills_imported_dir), 0, xstrdup(sk->global_dir));
	it[k - 1].source = cmdconfig_loc(&e->own->wrapper.skills_imported_dir_loc);
	ITEM("skills.importedDir (project)", W(skills_imported_dir), 0,
	     xstrdup(sk->project_dir != NULL ? sk->project_dir : "(no project)"));
	/* The project's is a project file's setting, or the default beside the project. */
	if (sk->project_dir == NULL || w->skills_imported_dir == NULL ||
	    strcmp(sk->project_dir, w->skills_imported_dir) != 0)
		it[k - 1].source = "default";
	ITEM("skills.include", WL(skills_include), 1,
	     cmdconfig_list(&w->skills_include, "[\"*\"]"));
	ITEM("skills.exclude", WL(skills_exclude), 1, cmdconfig_list(&w->skills_exclude, "[]"));
	ITEM("skills.exposeProjectSkills", W(skills_expose_project_skills), 0,
	     cmdconfig_bool(w->skills_expose_project_skills_loc.line,
	                    w->skills_expose_project_skills, 1));
	ITEM("skills.exposeGlobalSkills", W(skills_expose_global_skills), 0,
	     cmdconfig_bool(w->skills_expose_global_skills_loc.line, w->skills_expose_global_skills,
	                    0));
	ITEM("resources.cpus", W(resources_cpus), 0, cmdconfig_str(w->resources_cpus, cpus));
	ITEM("resources.memory", W(resources_memory), 0, cmdconfig_str(w->resources_memory, "4g"));
	ITEM("container.namePrefix", W(container_name_prefix), 0,
	     cmdconfig_str(w->container_name_prefix, "opencode-sandbox"));
	ITEM("container.remove", W(container_remove), 0,
	     cmdconfig_bool(w->container_remove_loc.line, w->container_remove, 1));
	ITEM("container.debug", W(container_debug), 0,
	     cmdconfig_bool(w->container_debug_loc.line, w->container_debug, 0));
	ITEM("container.upstreamCa", W(container_upstream_ca), 0,
	     cmdconfig_str(w->container_upstream_ca, "(none)"));
#undef ITEM
	return k;
}

#undef W
#undef WL

/* Where an item's value came from: FILE:LINE, or "default". */
static void
cmdconfig_source(const struct effective *e, const struct cmdconfig_item *it, struct buf *out)
{
	const struct cfg_loc *loc;

	if (it->source != NULL) {
		buf_adds(out, it->source);
		return;
	}
	if (it->list)
		loc = &((const struct cfg_list *)((const char *)e->full + it->loc))->loc;
	else
		loc = (const struct cfg_loc *)((const char *)e->full + it->loc);
	if (it->list && !((const struct cfg_list *)((const char *)e->full + it->loc))->set)
		buf_adds(out, "default");
	else if (!it->list && loc->line == 0)
		buf_adds(out, "default");
	else
		buf_printf(out, "%s:%u", loc->file != NULL ? loc->file : "builtin", loc->line);
}

static void
cmdconfig_show_text(const struct effective *e, struct cmdconfig_item *it, size_t n)
{
	const struct providers *pv = &e->providers;
	struct buf b;
	size_t i;

	buf_init(&b);
	printf("# the configuration a run on %s would use\n",
	       e->project[0] != '\0' ? e->project : "(no project)");
	printf("files:\n");
	effective_describe_files(e, &b);
	for (const char *p = buf_cstr(&b), *nl; *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		printf("  %.*s\n", (int)(nl - p), p);
	}
	printf("\nwrapper settings (a run's values; the source of each):\n");
	for (i = 0; i < n; i++) {
		buf_reset(&b);
		cmdconfig_source(e, &it[i], &b);
		printf("  %s: %s  # %s\n", it[i].key, it[i].value, buf_cstr(&b));
	}
	printf("\nmodel providers allowlisted:\n");
	if (pv->names.n == 0)
		printf("  none\n");
	for (i = 0; i < pv->names.n; i++)
		printf("  %s: %s (%s)\n", pv->names.v[i], pv->hosts.v[i], pv->why.v[i]);
	for (i = 0; i < pv->notes.n; i++)
		printf("  not allowlisted: %s\n", pv->notes.v[i]);
	printf("\nvariables passed by name (their values are never printed):%s\n",
	       pv->env.n == 0 ? " none" : "");
	for (i = 0; i < pv->env.n; i++)
		printf("  %s=<redacted>\n", pv->env.v[i]);
	buf_reset(&b);
	config_dump(e->full, &b);
	printf("\neffective policy (what egressd enforces), each value with its source:\n");
	for (const char *p = buf_cstr(&b), *nl; *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		printf("  %.*s\n", (int)(nl - p), p);
	}
	buf_reset(&b);
	report_notes(e->full, 1, &b);
	if (b.len > 0)
		printf("\nnot taken, or without effect:\n%s", buf_cstr(&b));
	buf_free(&b);
}

/* The policy's values as JSON, each {"value", "source"}: what `policyctl check --json` has. */
static json_t *
cmdconfig_value(json_t *v, const struct cfg_loc *loc)
{
	char src[PATH_MAX + 32];

	if (loc->file == NULL)
		snprintf(src, sizeof src, "builtin");
	else
		snprintf(src, sizeof src, "%s:%u", loc->file, loc->line);
	return json_pack("{s:o, s:s}", "value", v, "source", src);
}

static json_t *
cmdconfig_json_list(const struct cfg_list *l)
{
	json_t *a = json_array();
	char *r;
	size_t i;

	for (i = 0; i < l->n; i++) {
		r = cmdconfig_redact(l->items[i].value);
		json_array_append_new(a, cmdconfig_value(json_string(r), &l->items[i].loc));
		free(r);
	}
	return a;
}

static void
cmdconfig_show_json(const struct effective *e, struct cmdconfig_item *it, size_t n)
{
	const struct config *c = e->full;
	const struct providers *pv = &e->providers;
	json_t *o = json_object(), *files = json_array(), *w = json_object(), *net, *p, *env;
	struct buf b;
	char *text;
	size_t i;

	buf_init(&b);
	for (i = 0; i < e->conf.n; i++) {
		const struct conf_file *f = &e->conf.files[i];

		json_array_append_new(files,
		                      json_pack("{s:s, s:s, s:b}", "role", conf_role_name(f->role),
		                                "path", f->path, "trusted", !f->untrusted));
	}
	json_object_set_new(o, "project",
	                    e->project[0] != '\0' ? json_string(e->project) : json_null());
	json_object_set_new(o, "files", files);
	for (i = 0; i < n; i++) {
		buf_reset(&b);
		cmdconfig_source(e, &it[i], &b);
		json_object_set_new(
		    w, it[i].key,
		    json_pack("{s:s, s:s}", "value", it[i].value, "source", buf_cstr(&b)));
	}
	json_object_set_new(o, "wrapper", w);
	net = json_object();
	json_object_set_new(net, "mode",
	                    cmdconfig_value(json_string(config_mode_name(c->mode)), &c->mode_loc));
	json_object_set_new(
	    net, "inheritGlobal",
	    cmdconfig_value(json_boolean(c->inherit_global), &c->inherit_global_loc));
	json_object_set_new(net, "blocklist", cmdconfig_json_list(&c->blocklist));
	json_object_set_new(net, "allowlist", cmdconfig_json_list(&c->allowlist));
	json_object_set_new(net, "passthrough", cmdconfig_json_list(&c->passthrough));
	json_object_set_new(net, "blocklistFiles", cmdconfig_json_list(&c->blocklist_files));
	json_object_set_new(net, "allowMethods", cmdconfig_json_list(&c->allow_methods));
	json_object_set_new(
	    net, "allowGraphqlQueries",
	    cmdconfig_value(json_boolean(c->allow_graphql_queries), &c->allow_graphql_queries_loc));
	json_object_set_new(
	    net, "onViolation",
	    cmdconfig_value(json_string(c->on_violation == VIOLATION_FLAG ? "flag" : "block"),
	                    &c->on_violation_loc));
	json_object_set_new(net, "failClosed",
	                    cmdconfig_value(json_boolean(c->fail_closed), &c->fail_closed_loc));
	json_object_set_new(o, "network", net);
	p = json_array();
	for (i = 0; i < pv->names.n; i++)
		json_array_append_new(p, json_pack("{s:s, s:s, s:s}", "name", pv->names.v[i],
		                                   "hosts", pv->hosts.v[i], "why", pv->why.v[i]));
	json_object_set_new(o, "providers", p);
	env = json_array();
	for (i = 0; i < pv->env.n; i++)
		json_array_append_new(env, json_string(pv->env.v[i]));
	json_object_set_new(o, "environment", env);
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(o);
	buf_free(&b);
}

static int
cmdconfig_show(const struct strv *args)
{
	struct cmdconfig_item items[40];
	struct cmdconfig_opts o;
	struct effective e;
	struct skills sk;
	struct strv pos;
	struct buf err;
	char resolved[PATH_MAX];
	const char *project;
	size_t n = 0, i;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&e, 0, sizeof e);
	memset(&sk, 0, sizeof sk);
	buf_init(&err);
	if (args_options(cmdconfig_show_opts, EG_NELEM(cmdconfig_show_opts), &o, args, &pos,
	                 &err) == -1)
		goto usage;
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s (the project is --project PATH)",
		           pos.v[0]);
		goto usage;
	}
	project = o.project;
	if (project == NULL && mounts_check_project(".", resolved, sizeof resolved) == NULL)
		project = ".";
	if (effective_open(&e, project, &o.configs, EFFECTIVE_F_PROVIDERS, &err) == -1 ||
	    skills_dirs(&sk, &e, &err) == -1) {
		fputs(buf_cstr(&err), stderr);
		if (err.len > 0 && err.data[err.len - 1] != '\n')
			fputc('\n', stderr);
		goto out;
	}
	if (e.declined)
		fprintf(stderr,
		        HOST_PROG
		        " config show: the project's files are %s since you accepted them: "
		        "shown as a run has them until you accept them (tightening only)\n",
		        e.consent.accepted == NULL ? "new" : "changed");
	n = cmdconfig_items(&e, &sk, items);
	if (o.json)
		cmdconfig_show_json(&e, items, n);
	else
		cmdconfig_show_text(&e, items, n);
	rc = 0;
	goto out;
usage:
	help_hint("config show", buf_cstr(&err));
out:
	for (i = 0; i < n; i++)
		free(items[i].value);
	skills_free(&sk);
	effective_free(&e);
	strv_free(&o.configs);
	strv_free(&pos);
	buf_free(&err);
	return rc;
}

static int
cmdconfig_path(const struct strv *args)
{
	struct cmdconfig_opts o;
	struct strv pos, none;
	struct host_args a;
	struct conf c;
	struct buf err;
	char resolved[PATH_MAX], *xdg, *global;
	const char *why;
	size_t i, found = 0;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&none, 0, sizeof none);
	memset(&a, 0, sizeof a);
	memset(&c, 0, sizeof c);
	buf_init(&err);
	xdg = host_xdg("XDG_CONFIG_HOME", ".config");
	global = xasprintf("%s/opencode-sandbox/config.yaml", xdg);
	free(xdg);
	if (args_options(cmdconfig_path_opts, EG_NELEM(cmdconfig_path_opts), &o, args, &pos,
	                 &err) == -1)
		goto usage;
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s (the project is --project PATH)",
		           pos.v[0]);
		goto usage;
	}
	if (o.global && o.project == NULL) {
		printf("%s\n", global);
		rc = 0;
		goto out;
	}
	if ((why = mounts_check_project(o.project != NULL ? o.project : ".", resolved,
	                                sizeof resolved)) != NULL) {
		fprintf(stderr, HOST_PROG " config path: %s\n", why);
		goto out;
	}
	if (conf_discover(&c, &a, resolved, &err) == -1) {
		fputs(buf_cstr(&err), stderr);
		goto out;
	}
	if (o.global)
		printf("%s\n", global);
	else if (o.project == NULL)
		printf("global: %s%s\n", global, access(global, F_OK) == 0 ? "" : " (none yet)");
	for (i = 0; i < c.n; i++)
		if (conf_is_project(&c.files[i])) {
			printf(o.project != NULL ? "%s\n" : "project: %s\n", c.files[i].path);
			found++;
		}
	rc = 0;
	if (found == 0 && o.project == NULL)
		printf("project: none for %s (`" HOST_PROG
		       " init` writes %s/.opencode-sandbox.yaml)\n",
		       resolved, resolved);
	else if (found == 0) {
		fprintf(stderr,
		        HOST_PROG " config path: no project file for %s (`" HOST_PROG
		                  " init --project %s` writes one)\n",
		        resolved, resolved);
		rc = 1;
	}
	goto out;
usage:
	help_hint("config path", buf_cstr(&err));
out:
	conf_free(&c);
	strv_free(&pos);
	buf_free(&err);
	free(global);
	return rc;
}

int
cmdconfig_main(const struct strv *args)
{
	struct strv rest;
	size_t i, at;
	int rc;

	for (at = 0; at < args->n; at++)
		if (strcmp(args->v[at], "path") == 0 || strcmp(args->v[at], "show") == 0)
			break;
	if (at == args->n) {
		help_hint("config", "path or show?");
		return HOST_EXIT_USAGE;
	}
	memset(&rest, 0, sizeof rest);
	for (i = 0; i < args->n; i++)
		if (i != at)
			strv_add(&rest, args->v[i]);
	rc = strcmp(args->v[at], "path") == 0 ? cmdconfig_path(&rest) : cmdconfig_show(&rest);
	strv_free(&rest);
	return rc;
}
