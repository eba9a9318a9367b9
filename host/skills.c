/*
 * `opencode-sandbox skills import` and `skills list` (seed 003 §7.4,
 * §7.5, §12). An import reads SOURCE (a skill, or a directory of them),
 * checks every skill before it writes anything (SKILL.md's frontmatter,
 * names unique in the set and against what is imported, links that stay
 * in the source, sizes), then copies each into the scope's directory under
 * a temporary name, swaps it in, and rewrites skills-manifest.json with
 * each skill's source and SHA-256 (skilltree.c). A project's directory is
 * the agent's to write, so it is made and written without following a
 * link on the way. `list` shows what skillset.c finds, and what a run
 * exposes.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

struct skills_opts {
	const char *scope;
	const char *project;
	struct strv include;
	struct strv exclude;
	const char *prefix;
	int dry_run;
	int json;
};

const struct args_opt skills_import_opts[] = {
    {"scope", ARGS_STRING, offsetof(struct skills_opts, scope), "global|project"},
    {"project", ARGS_STRING, offsetof(struct skills_opts, project), "PATH"},
    {"include", ARGS_LIST, offsetof(struct skills_opts, include), "GLOB"},
    {"exclude", ARGS_LIST, offsetof(struct skills_opts, exclude), "GLOB"},
    {"name-prefix", ARGS_STRING, offsetof(struct skills_opts, prefix), "PREFIX"},
    {"dry-run", ARGS_BOOL, offsetof(struct skills_opts, dry_run), NULL},
};
const size_t skills_import_opts_n = EG_NELEM(skills_import_opts);

const struct args_opt skills_list_opts[] = {
    {"json", ARGS_BOOL, offsetof(struct skills_opts, json), NULL},
    {"project", ARGS_STRING, offsetof(struct skills_opts, project), "PATH"},
};
const size_t skills_list_opts_n = EG_NELEM(skills_list_opts);

/* One skill of an import: where it is, what it will be called, its SKILL.md. */
struct skills_new {
	char *dir;  /* resolved */
	char *name; /* with the prefix */
	char *description;
	char *md; /* SKILL.md as copied (renamed with a prefix), or NULL: as it is */
	size_t md_len;
	char *sha256;
	int update; /* replaces the same source's earlier import */
};

static int
skills_glob_any(const struct strv *globs, const char *name)
{
	size_t i;

	for (i = 0; i < globs->n; i++)
		if (fnmatch(globs->v[i], name, 0) == 0)
			return 1;
	return 0;
}

/* The skill directories of SOURCE: itself, or its subdirectories; links must stay inside. */
static int
skills_sources(const char *root, struct strv *dirs, struct strv *notes, struct strv *errs)
{
	char real[PATH_MAX], *path;
	struct strv subs;
	struct stat st;
	size_t i, n = strlen(root);

	path = xasprintf("%s/SKILL.md", root);
	if (stat(path, &st) == 0) {
		free(path);
		strv_add(dirs, root);
		return 0;
	}
	free(path);
	memset(&subs, 0, sizeof subs);
	skills_subdirs(root, &subs);
	for (i = 0; i < subs.n; i++) {
		path = xasprintf("%s/%s", root, subs.v[i]);
		if (realpath(path, real) == NULL || strncmp(real, root, n) != 0 || real[n] != '/')
			strv_addf(errs,
			          "%s: a symbolic link out of the source (refused: it would copy a "
			          "directory from elsewhere into the sandbox)",
			          path);
		else if (skills_count(real) == 0)
			strv_addf(notes, "%s: no SKILL.md, not a skill (skipped)", path);
		else
			strv_add(dirs, real);
		free(path);
	}
	strv_free(&subs);
	if (dirs->n == 0 && errs->n == 0)
		strv_addf(errs,
		          "%s: no skill here (a directory with a SKILL.md, or a directory of them)",
		          root);
	return 0;
}

/* The manifest entry named name, or NULL. */
static json_t *
skills_manifest_entry(json_t *man, const char *name)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(man, "skills"), i, e)
	{
		if (json_is_object(e) &&
		    strcmp(json_string_value(json_object_get(e, "name")) != NULL
		               ? json_string_value(json_object_get(e, "name"))
		               : "",
		           name) == 0)
			return e;
	}
	return NULL;
}

/* Every check of one skill against the set, the target and the other scope. */
static void
skills_check_one(struct skills_new *k, const struct skills_new *set, size_t n, json_t *man,
                 const struct skills *have, enum skill_scope scope, const char *target,
                 struct strv *errs)
{
	const char *src;
	json_t *e;
	char *path;
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(set[i].name, k->name) == 0) {
			strv_addf(
			    errs,
			    "%s: the name %s is taken by %s in the same import (--name-prefix "
			    "imports under another name)",
			    k->dir, k->name, set[i].dir);
			return;
		}
	if ((e = skills_manifest_entry(man, k->name)) != NULL) {
		src = json_string_value(json_object_get(e, "source"));
		if (src == NULL || strcmp(src, k->dir) != 0) {
			strv_addf(
			    errs,
			    "%s: %s is already imported from %s (--name-prefix PREFIX imports this "
			    "one as PREFIX%s)",
			    k->dir, k->name, src != NULL ? src : "elsewhere", k->name);
			return;
		}
		k->update = 1;
	} else {
		path = xasprintf("%s/%s", target, k->name);
		if (access(path, F_OK) == 0)
			strv_addf(errs,
			          "%s: %s exists but is not in skills-manifest.json: remove it "
			          "first",
			          k->dir, path);
		free(path);
	}
	for (i = 0; i < have->n; i++)
		if ((have->v[i].scope == SKILL_GLOBAL || have->v[i].scope == SKILL_PROJECT) &&
		    have->v[i].scope != scope && have->v[i].name != NULL &&
		    strcmp(have->v[i].name, k->name) == 0)
			strv_addf(
			    errs,
			    "%s: %s is imported %s too (%s), and a run refuses a name in both: "
			    "--name-prefix imports it under another name",
			    k->dir, k->name, skills_scope_name(have->v[i].scope), have->v[i].dir);
}

/* Make dir (and its parents below base) without following a link; 0 or -1 with err. */
static int
skills_mkdirs(const char *base, const char *dir, struct buf *err)
{
	size_t n = base != NULL ? strlen(base) : 0, i;
	char *part;
	int fd;

	if (base == NULL || strncmp(dir, base, n) != 0 || dir[n] != '/') {
		if (host_mkdirs(dir, 0755) == 0)
			return 0;
		buf_printf(err, "%s: %s", dir, strerror(errno));
		return -1;
	}
	for (i = n + 1;; i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		part = xstrndup(dir, i);
		if ((fd = skilltree_open_under(base, part, O_RDONLY | O_DIRECTORY)) == -1 &&
		    errno == ENOENT && mkdir(part, 0755) == 0)
			fd = skilltree_open_under(base, part, O_RDONLY | O_DIRECTORY);
		if (fd == -1) {
			buf_printf(err, "%s: %s", part,
			           errno == ELOOP ? "a symbolic link: a project's skills are never "
			                            "written through one"
			                          : strerror(errno));
			free(part);
			return -1;
		}
		close(fd);
		free(part);
		if (dir[i] == '\0')
			return 0;
	}
}

/* Copy k into target under a temporary name, then swap it in; 0 or -1 with err. */
static int
skills_install(struct skills_new *k, const char *root, const char *target, struct buf *err)
{
	struct skilltree t;
	char rnd[9], *tmp, *dst, *old;
	int rc = -1;

	state_random(rnd, sizeof rnd);
	tmp = xasprintf("%s/.%s.import-%s", target, k->name, rnd);
	old = xasprintf("%s/.%s.old-%s", target, k->name, rnd);
	dst = xasprintf("%s/%s", target, k->name);
	memset(&t, 0, sizeof t);
	t.label = k->dir;
	t.root = root;
	t.follow = 1;
	t.skill_md = k->md;
	t.skill_md_len = k->md_len;
	t.err = err;
	if (skilltree_copy(&t, k->dir, tmp) == -1) {
		state_remove_tree(tmp);
		goto out;
	}
	free(k->sha256);
	k->sha256 = xstrdup(t.sha256);
	if (rename(dst, old) == -1 && errno != ENOENT) {
		buf_printf(err, "%s: %s", dst, strerror(errno));
		state_remove_tree(tmp);
		goto out;
	}
	if (rename(tmp, dst) == -1) {
		buf_printf(err, "%s: %s", dst, strerror(errno));
		state_remove_tree(tmp);
		rename(old, dst);
		goto out;
	}
	state_remove_tree(old);
	rc = 0;
out:
	skilltree_free(&t);
	free(tmp);
	free(old);
	free(dst);
	return rc;
}

static int
skills_entry_cmp(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "name"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "name"));

	return strcmp(x != NULL ? x : "", y != NULL ? y : "");
}

/* The manifest with the imported skills in it, written whole, entries in name order. */
static int
skills_manifest_write(json_t *man, const struct skills_new *set, size_t n, const char *target,
                      enum skill_scope scope, struct buf *err)
{
	json_t *arr = json_object_get(man, "skills"), *e, **v;
	char stamp[32], *path, *text, *dst;
	time_t now = time(NULL);
	struct buf shown;
	struct tm tm;
	size_t i, m;
	int rc;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_init(&shown);
	for (i = 0; i < n; i++) {
		if ((e = skills_manifest_entry(man, set[i].name)) == NULL) {
			e = json_object();
			json_array_append_new(arr, e);
		}
		dst = xasprintf("%s/%s", target, set[i].name);
		buf_reset(&shown);
		host_path_show(&shown, dst);
		free(dst);
		json_object_clear(e);
		json_object_set_new(e, "name", json_string(set[i].name));
		json_object_set_new(e, "description", json_string(set[i].description));
		json_object_set_new(e, "source", json_string(set[i].dir));
		json_object_set_new(e, "target", json_string(buf_cstr(&shown)));
		json_object_set_new(e, "scope", json_string(skills_scope_name(scope)));
		json_object_set_new(e, "sha256", json_string(set[i].sha256));
		json_object_set_new(e, "importedAt", json_string(stamp));
	}
	buf_free(&shown);
	m = json_array_size(arr);
	v = xreallocarray(NULL, m + 1, sizeof *v);
	for (i = 0; i < m; i++)
		v[i] = json_incref(json_array_get(arr, i));
	if (m > 1)
		qsort(v, m, sizeof *v, skills_entry_cmp);
	json_array_clear(arr);
	for (i = 0; i < m; i++)
		json_array_append_new(arr, v[i]);
	free(v);
	{
		json_t *out =
		    json_pack("{s:i, s:s, s:O}", "version", 1, "importedAt", stamp, "skills", arr);

		text = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(out);
	}
	path = skills_manifest_path(target);
	buf_init(&shown);
	buf_printf(&shown, "%s\n", text);
	if ((rc = host_write_file(path, shown.data, shown.len, 0644)) == -1)
		buf_printf(err, "%s: %s", path, strerror(errno));
	buf_free(&shown);
	free(path);
	free(text);
	return rc;
}

/* Read and name the candidates; checks that need nothing but SOURCE. */
static void
skills_prepare(const struct skills_opts *o, const struct strv *dirs, struct skills_new **setp,
               size_t *np, struct strv *notes, struct strv *errs)
{
	struct skills_new *set = NULL, k;
	struct skillmd m;
	const char *err;
	char *text, *name;
	size_t i, n = 0, len;

	for (i = 0; i < dirs->n; i++) {
		if ((err = skills_read_md(NULL, dirs->v[i], &m, &text, &len)) != NULL) {
			strv_addf(errs, "%s: %s", dirs->v[i], err);
			continue;
		}
		if ((o->include.n > 0 && !skills_glob_any(&o->include, m.name)) ||
		    skills_glob_any(&o->exclude, m.name)) {
			strv_addf(notes, "%s (%s): left out by --include/--exclude", m.name,
			          dirs->v[i]);
			skillmd_free(&m);
			free(text);
			continue;
		}
		memset(&k, 0, sizeof k);
		name = xasprintf("%s%s", o->prefix != NULL ? o->prefix : "", m.name);
		if ((err = skillmd_check_name(name)) != NULL) {
			strv_addf(errs, "%s: %s with the prefix: %s", dirs->v[i], name, err);
			free(name);
			skillmd_free(&m);
			free(text);
			continue;
		}
		k.dir = xstrdup(dirs->v[i]);
		k.name = name;
		k.description = xstrdup(m.description);
		if (o->prefix != NULL)
			k.md = skillmd_rename(text, len, &m, name, &k.md_len);
		skillmd_free(&m);
		free(text);
		set = xreallocarray(set, n + 1, sizeof *set);
		set[n++] = k;
	}
	*setp = set;
	*np = n;
}

static void
skills_new_free(struct skills_new *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(set[i].dir);
		free(set[i].name);
		free(set[i].description);
		free(set[i].md);
		free(set[i].sha256);
	}
	free(set);
}

/* The checks of the whole import: names, links, sizes. Nothing is written. */
static void
skills_check(struct skills_new *set, size_t n, json_t *man, const struct skills *have,
             enum skill_scope scope, const char *target, const char *root, struct strv *errs)
{
	struct skilltree t;
	struct buf err;
	size_t i;

	buf_init(&err);
	for (i = 0; i < n; i++) {
		skills_check_one(&set[i], set, i, man, have, scope, target, errs);
		memset(&t, 0, sizeof t);
		t.label = set[i].dir;
		t.root = root;
		t.follow = 1;
		t.skill_md = set[i].md;
		t.skill_md_len = set[i].md_len;
		t.err = &err;
		buf_reset(&err);
		if (skilltree_copy(&t, set[i].dir, NULL) == -1)
			strv_add(errs, buf_cstr(&err));
		else
			set[i].sha256 = xstrdup(t.sha256);
		skilltree_free(&t);
	}
	buf_free(&err);
}

static int
skills_import(const struct strv *args)
{
	struct skills_opts o;
	struct strv pos, dirs, notes, errs;
	struct skills_new *set = NULL;
	struct effective e;
	struct skills have;
	struct buf err;
	enum skill_scope scope;
	char root[PATH_MAX];
	const char *target, *base, *project;
	json_t *man = NULL;
	size_t i, n = 0;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&dirs, 0, sizeof dirs);
	memset(&notes, 0, sizeof notes);
	memset(&errs, 0, sizeof errs);
	memset(&e, 0, sizeof e);
	memset(&have, 0, sizeof have);
	buf_init(&err);
	if (args_options(skills_import_opts, EG_NELEM(skills_import_opts), &o, args, &pos, &err) ==
	    -1)
		goto usage;
	if (pos.n != 1) {
		buf_adds(&err, pos.n == 0 ? "which skills? SOURCE is a skill directory or a "
		                            "directory of them"
		                          : "one SOURCE at a time");
		goto usage;
	}
	if (o.scope != NULL && strcmp(o.scope, "global") != 0 && strcmp(o.scope, "project") != 0) {
		buf_printf(&err, "--scope %s: expected global or project", o.scope);
		goto usage;
	}
	if (o.scope != NULL && strcmp(o.scope, "global") == 0 && o.project != NULL) {
		buf_adds(&err, "--project imports into a project: not with --scope global");
		goto usage;
	}
	scope = o.project != NULL || (o.scope != NULL && strcmp(o.scope, "project") == 0)
	            ? SKILL_PROJECT
	            : SKILL_GLOBAL;
	/* A global import still checks the working directory's project for a clash, if any. */
	project = o.project != NULL ? o.project : ".";
	if (scope == SKILL_GLOBAL && mounts_check_project(project, root, sizeof root) != NULL)
		project = NULL;
	if (effective_open(&e, project, NULL, 0, &err) == -1 ||
	    skills_find(&have, &e, &err) == -1) {
		fprintf(stderr, HOST_PROG " skills import: %s", buf_cstr(&err));
		if (err.len > 0 && err.data[err.len - 1] != '\n')
			fputc('\n', stderr);
		goto out;
	}
	target = scope == SKILL_GLOBAL ? have.global_dir : have.project_dir;
	base = scope == SKILL_GLOBAL ? NULL : have.project_base;
	if (realpath(pos.v[0], root) == NULL) {
		fprintf(stderr, HOST_PROG " skills import: %s: %s\n", pos.v[0], strerror(errno));
		goto out;
	}
	skills_sources(root, &dirs, &notes, &errs);
	skills_prepare(&o, &dirs, &set, &n, &notes, &errs);
	if ((man = skills_manifest_load(base, target, &err)) == NULL) {
		strv_add(&errs, buf_cstr(&err));
		man = json_pack("{s:i, s:[]}", "version", 1, "skills");
	}
	skills_check(set, n, man, &have, scope, target, root, &errs);
	for (i = 0; i < notes.n; i++)
		fprintf(stderr, HOST_PROG " skills import: %s\n", notes.v[i]);
	if (errs.n > 0) {
		fprintf(stderr, HOST_PROG " skills import: nothing imported:\n");
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "  %s\n", errs.v[i]);
		goto out;
	}
	if (n == 0) {
		fprintf(stderr, HOST_PROG " skills import: nothing to import\n");
		goto out;
	}
	if (!o.dry_run && skills_mkdirs(base, target, &err) == -1) {
		fprintf(stderr, HOST_PROG " skills import: %s\n", buf_cstr(&err));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!o.dry_run && skills_install(&set[i], root, target, &err) == -1) {
			fprintf(stderr, HOST_PROG " skills import: %s\n", buf_cstr(&err));
			goto out;
		}
		printf("%s %s (%s) from %s into %s/%s\n",
		       o.dry_run       ? "would import"
		       : set[i].update ? "updated"
		                       : "imported",
		       set[i].name, skills_scope_name(scope), set[i].dir, target, set[i].name);
	}
	if (o.dry_run) {
		printf("dry run: nothing was written\n");
		rc = 0;
		goto out;
	}
	if (skills_manifest_write(man, set, n, target, scope, &err) == -1) {
		fprintf(stderr, HOST_PROG " skills import: %s\n", buf_cstr(&err));
		goto out;
	}
	printf("next: a run exposes them read-only (`" HOST_PROG " skills list` shows what a run "
	       "exposes)\n");
	rc = 0;
	goto out;
usage:
	help_hint("skills import", buf_cstr(&err));
out:
	json_decref(man);
	skills_new_free(set, n);
	skills_free(&have);
	effective_free(&e);
	strv_free(&o.include);
	strv_free(&o.exclude);
	strv_free(&pos);
	strv_free(&dirs);
	strv_free(&notes);
	strv_free(&errs);
	buf_free(&err);
	return rc;
}

static void
skills_list_json(const struct skills *s)
{
	json_t *o = json_object(), *arr = json_array(), *k;
	size_t i;
	char *text;

	json_object_set_new(o, "globalDir", json_string(s->global_dir));
	json_object_set_new(o, "projectDir",
	                    s->project_dir != NULL ? json_string(s->project_dir) : json_null());
	for (i = 0; i < s->n; i++) {
		k = json_object();
		json_object_set_new(k, "name",
		                    s->v[i].name != NULL ? json_string(s->v[i].name) : json_null());
		json_object_set_new(k, "description",
		                    s->v[i].description != NULL ? json_string(s->v[i].description)
		                                                : json_null());
		json_object_set_new(k, "status", json_string(skills_status_name(s->v[i].status)));
		json_object_set_new(k, "scope", json_string(skills_scope_name(s->v[i].scope)));
		json_object_set_new(k, "path", json_string(s->v[i].dir));
		json_object_set_new(k, "source",
		                    s->v[i].source != NULL ? json_string(s->v[i].source)
		                                           : json_null());
		json_object_set_new(k, "sha256",
		                    s->v[i].sha256 != NULL ? json_string(s->v[i].sha256)
		                                           : json_null());
		json_object_set_new(
		    k, "reason", s->v[i].error != NULL ? json_string(s->v[i].error) : json_null());
		json_array_append_new(arr, k);
	}
	json_object_set_new(o, "skills", arr);
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("%s\n", text);
	free(text);
	json_decref(o);
}

static void
skills_list_text(const struct skills *s)
{
	struct buf b;
	size_t i, active = 0;

	buf_init(&b);
	printf("%-22s %-10s %-15s %s\n", "NAME", "STATUS", "SCOPE", "WHERE");
	for (i = 0; i < s->n; i++) {
		const struct skill *k = &s->v[i];

		buf_reset(&b);
		host_path_show(&b, k->dir);
		if (k->error != NULL)
			buf_printf(&b, ": %s", k->error);
		printf("%-22s %-10s %-15s %s\n", k->name != NULL ? k->name : "-",
		       skills_status_name(k->status), skills_scope_name(k->scope), buf_cstr(&b));
		active += k->status == SKILL_ACTIVE || k->status == SKILL_EXPOSED;
	}
	if (s->n == 0)
		printf("(no skills)\n");
	buf_reset(&b);
	host_path_show(&b, s->global_dir);
	printf("\nA run exposes the %zu active skill%s read-only in the sandbox "
	       "(~/.config/opencode/skills); the project's own are in the mounted project.\n"
	       "Imported globally: %s",
	       active, active == 1 ? "" : "s", buf_cstr(&b));
	if (s->project_dir != NULL) {
		buf_reset(&b);
		host_path_show(&b, s->project_dir);
		printf("; into this project: %s", buf_cstr(&b));
	}
	printf(".\nTo use an available one: " HOST_PROG " skills import DIR\n");
	buf_free(&b);
}

static int
skills_list(const struct strv *args)
{
	struct skills_opts o;
	struct effective e;
	struct skills s;
	struct strv pos;
	struct buf err;
	int rc = HOST_EXIT_USAGE;

	memset(&o, 0, sizeof o);
	memset(&pos, 0, sizeof pos);
	memset(&e, 0, sizeof e);
	memset(&s, 0, sizeof s);
	buf_init(&err);
	if (args_options(skills_list_opts, EG_NELEM(skills_list_opts), &o, args, &pos, &err) == -1)
		goto usage;
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s (the project is --project PATH)",
		           pos.v[0]);
		goto usage;
	}
	if (effective_open(&e, o.project != NULL ? o.project : ".", NULL, 0, &err) == -1 ||
	    skills_find(&s, &e, &err) == -1) {
		fprintf(stderr, HOST_PROG " skills list: %s", buf_cstr(&err));
		if (err.len > 0 && err.data[err.len - 1] != '\n')
			fputc('\n', stderr);
		goto out;
	}
	if (o.json)
		skills_list_json(&s);
	else
		skills_list_text(&s);
	rc = 0;
	goto out;
usage:
	help_hint("skills list", buf_cstr(&err));
out:
	skills_free(&s);
	effective_free(&e);
	strv_free(&pos);
	buf_free(&err);
	return rc;
}

/* `skills import ...` or `skills list ...`: the first of those words is the command. */
int
skills_main(const struct strv *args)
{
	struct strv rest;
	size_t i, at;
	int rc;

	for (at = 0; at < args->n; at++)
		if (strcmp(args->v[at], "import") == 0 || strcmp(args->v[at], "list") == 0)
			break;
	if (at == args->n) {
		help_hint("skills", "import or list?");
		return HOST_EXIT_USAGE;
	}
	memset(&rest, 0, sizeof rest);
	for (i = 0; i < args->n; i++)
		if (i != at)
			strv_add(&rest, args->v[i]);
	rc = strcmp(args->v[at], "import") == 0 ? skills_import(&rest) : skills_list(&rest);
	strv_free(&rest);
	return rc;
}
