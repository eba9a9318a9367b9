/*
 * Which skills there are, and which a run exposes (seed 003 §12). Skills
 * are imported (skills.c) into the global directory
 * (~/.config/opencode-sandbox/skills, skills.importedDir of your own
 * files) or a project's (<project>/.opencode-sandbox/skills, or the
 * project file's skills.importedDir, inside the project), each directory
 * with its skills-manifest.json beside it. The manifest is what counts:
 * a run exposes the skills it lists that pass skills.include and
 * skills.exclude, copied afresh (nothing followed, each hashed against
 * the manifest) into the run's scratch directory, which is mounted
 * read-only where OpenCode looks for the user's skills
 * (~/.config/opencode/skills). A name imported both globally and into the
 * project stops the run. The project's own skills (.opencode/skills,
 * .agents/skills, .claude/skills) are OpenCode's to find in the mounted
 * project; the host's skills (~/.config/opencode/skills, ~/.claude/skills,
 * ~/.agents/skills) are only available to import, unless
 * skills.exposeGlobalSkills.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

#define SKILLSET_MAX_MD       (1024 * 1024)
#define SKILLSET_MAX_MANIFEST (4 * 1024 * 1024)

/* The host's skill folders, under the home directory: available to import. */
const char *const skills_host_dirs[] = {
    ".config/opencode/skills",
    ".config/opencode/skill",
    ".claude/skills",
    ".agents/skills",
};
const size_t skills_nhost_dirs = EG_NELEM(skills_host_dirs);

/* The project's own skill folders, which OpenCode finds in the mounted project. */
static const char *const skillset_native_dirs[] = {
    ".opencode/skills",
    ".opencode/skill",
    ".agents/skills",
    ".claude/skills",
};

const char *
skills_scope_name(enum skill_scope s)
{
	switch (s) {
	case SKILL_GLOBAL:
		return "global";
	case SKILL_PROJECT:
		return "project";
	case SKILL_NATIVE:
		return "project-native";
	case SKILL_HOST:
		return "host";
	}
	return "?";
}

const char *
skills_status_name(enum skill_status s)
{
	static const char *const names[] = {"active",   "excluded", "duplicate", "missing",
	                                    "unlisted", "project",  "available", "exposed",
	                                    "imported", "hidden",   "invalid"};

	return names[s];
}

/* A file under base (opened without following a link), or anywhere when base is NULL. */
static int
skillset_read_under(const char *base, const char *path, size_t max, char **text, size_t *len)
{
	int fd, rc, saved;

	if (base == NULL)
		return host_read_file(path, max, text, len);
	if ((fd = skilltree_open_under(base, path, O_RDONLY | O_NONBLOCK)) == -1)
		return -1;
	rc = host_read_fd(fd, max, text, len);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/*
 * A skill's SKILL.md, read (from base without following a link, when
 * base is not NULL) and parsed; NULL or why it is not a skill.
 */
const char *
skills_read_md(const char *base, const char *dir, struct skillmd *m, char **textp, size_t *lenp)
{
	static char why[320];
	const char *err;
	char *path = xasprintf("%s/SKILL.md", dir), *text;
	size_t len;

	memset(m, 0, sizeof *m);
	if (skillset_read_under(base, path, SKILLSET_MAX_MD, &text, &len) == -1) {
		snprintf(why, sizeof why, "SKILL.md: %s",
		         errno == ENOENT   ? "none: not a skill"
		         : errno == ELOOP  ? "reached through a symbolic link"
		         : errno == EFBIG  ? "larger than 1 MiB"
		         : errno == EINVAL ? "not a regular file"
		                           : strerror(errno));
		free(path);
		return why;
	}
	free(path);
	if ((err = skillmd_parse(text, len, m)) != NULL) {
		free(text);
		return err;
	}
	if (textp != NULL) {
		*textp = text;
		*lenp = len;
	} else
		free(text);
	return NULL;
}

static int
skillset_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subdirectories of dir, in name order, dot-directories left out. */
void
skills_subdirs(const char *dir, struct strv *out)
{
	struct dirent *de;
	struct stat st;
	char *path;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		path = xasprintf("%s/%s", dir, de->d_name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			strv_add(out, de->d_name);
		free(path);
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof *out->v, skillset_name_cmp);
}

/* How many skills dir holds (itself, when it has a SKILL.md). */
size_t
skills_count(const char *dir)
{
	struct strv subs;
	struct stat st;
	size_t i, n = 0;
	char *md;

	md = xasprintf("%s/SKILL.md", dir);
	if (stat(md, &st) == 0) {
		free(md);
		return 1;
	}
	free(md);
	memset(&subs, 0, sizeof subs);
	skills_subdirs(dir, &subs);
	for (i = 0; i < subs.n; i++) {
		md = xasprintf("%s/%s/SKILL.md", dir, subs.v[i]);
		n += stat(md, &st) == 0;
		free(md);
	}
	strv_free(&subs);
	return n;
}

static struct skill *
skillset_add(struct skills *s, enum skill_scope scope, const char *dir)
{
	struct skill *k;

	s->v = xreallocarray(s->v, s->n + 1, sizeof *s->v);
	k = &s->v[s->n++];
	memset(k, 0, sizeof *k);
	k->scope = scope;
	k->dir = xstrdup(dir);
	/* The project's directories are the agent's to write: nothing there is followed. */
	k->base = scope == SKILL_PROJECT ? s->project_base : NULL;
	return k;
}

/* Read the skill at k->dir: its name and description, or the error. */
static void
skillset_read(struct skill *k)
{
	struct skillmd m;
	const char *err;

	if ((err = skills_read_md(k->base, k->dir, &m, NULL, NULL)) != NULL) {
		k->status = SKILL_INVALID;
		k->error = xstrdup(err);
		return;
	}
	if (k->name == NULL)
		k->name = xstrdup(m.name);
	else if (strcmp(k->name, m.name) != 0) {
		k->status = SKILL_INVALID;
		k->error = xasprintf("SKILL.md names it %s, the manifest %s", m.name, k->name);
	}
	k->description = xstrdup(m.description);
	skillmd_free(&m);
}

/* Whether the configured include and exclude globs let name through. */
static int
skillset_selected(const struct config *cfg, const char *name)
{
	const struct cfg_list *inc = &cfg->wrapper.skills_include;
	const struct cfg_list *exc = &cfg->wrapper.skills_exclude;
	size_t i;
	int in = !inc->set;

	for (i = 0; i < inc->n && !in; i++)
		in = fnmatch(inc->items[i].value, name, 0) == 0;
	for (i = 0; in && i < exc->n; i++)
		if (fnmatch(exc->items[i].value, name, 0) == 0)
			in = 0;
	return in;
}

/* The manifest beside dir ("DIR/../skills-manifest.json"). */
char *
skills_manifest_path(const char *dir)
{
	char *copy = xstrdup(dir), *slash = strrchr(copy, '/'), *path;

	if (slash != NULL && slash != copy)
		*slash = '\0';
	path = xasprintf("%s/skills-manifest.json", copy);
	free(copy);
	return path;
}

/*
 * The manifest of dir as JSON: an empty one when there is none; NULL
 * with err when it cannot be read or is not one.
 */
json_t *
skills_manifest_load(const char *base, const char *dir, struct buf *err)
{
	char *path = skills_manifest_path(dir), *text;
	json_error_t jerr;
	json_t *j;
	size_t len;

	if (skillset_read_under(base, path, SKILLSET_MAX_MANIFEST, &text, &len) == -1) {
		if (errno == ENOENT) {
			free(path);
			return json_pack("{s:i, s:[]}", "version", 1, "skills");
		}
		buf_printf(err, "%s: %s", path,
		           errno == ELOOP ? "reached through a symbolic link" : strerror(errno));
		free(path);
		return NULL;
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (j == NULL || !json_is_object(j) || !json_is_array(json_object_get(j, "skills"))) {
		buf_printf(err, "%s: not a skills manifest%s%s", path, j == NULL ? ": " : "",
		           j == NULL ? jerr.text : "");
		json_decref(j);
		free(path);
		return NULL;
	}
	free(path);
	return j;
}

/* The imported skills of one directory: its manifest's, then its other directories. */
static int
skillset_imported(struct skills *s, const char *dir, enum skill_scope scope,
                  const struct config *cfg, struct buf *err)
{
	const char *base = scope == SKILL_PROJECT ? s->project_base : NULL;
	struct strv subs, listed;
	struct skill *k;
	json_t *man, *e;
	const char *name;
	char *path;
	size_t i;

	if ((man = skills_manifest_load(base, dir, err)) == NULL)
		return -1;
	memset(&subs, 0, sizeof subs);
	memset(&listed, 0, sizeof listed);
	json_array_foreach(json_object_get(man, "skills"), i, e)
	{
		name = json_string_value(json_object_get(e, "name"));
		if (name == NULL || skillmd_check_name(name) != NULL)
			continue;
		path = xasprintf("%s/%s", dir, name);
		k = skillset_add(s, scope, path);
		free(path);
		k->name = xstrdup(name);
		k->source = xstrdup(json_string_value(json_object_get(e, "source")) != NULL
		                        ? json_string_value(json_object_get(e, "source"))
		                        : "");
		if (json_string_value(json_object_get(e, "sha256")) != NULL)
			k->sha256 = xstrdup(json_string_value(json_object_get(e, "sha256")));
		strv_add(&listed, name);
		if (access(k->dir, F_OK) == -1) {
			k->status = SKILL_MISSING;
			k->error = xstrdup("listed in the manifest, but its directory is gone");
			continue;
		}
		skillset_read(k);
		if (k->status == SKILL_ACTIVE && !skillset_selected(cfg, k->name))
			k->status = SKILL_EXCLUDED;
	}
	json_decref(man);
	skills_subdirs(dir, &subs);
	for (i = 0; i < subs.n; i++) {
		if (strv_has(&listed, subs.v[i]))
			continue;
		path = xasprintf("%s/%s", dir, subs.v[i]);
		k = skillset_add(s, scope, path);
		free(path);
		k->name = xstrdup(subs.v[i]);
		k->status = SKILL_UNLISTED;
		k->error = xstrdup("not in skills-manifest.json: not exposed (import it)");
	}
	strv_free(&subs);
	strv_free(&listed);
	return 0;
}

/* Skills found in a folder of skills (or that is one): the project's own, the host's. */
static void
skillset_folder(struct skills *s, const char *dir, enum skill_scope scope, enum skill_status status)
{
	struct strv subs;
	struct skill *k;
	char *md, *path;
	size_t i;

	md = xasprintf("%s/SKILL.md", dir);
	if (access(md, F_OK) == 0) {
		k = skillset_add(s, scope, dir);
		k->status = status;
		skillset_read(k);
		free(md);
		return;
	}
	free(md);
	memset(&subs, 0, sizeof subs);
	skills_subdirs(dir, &subs);
	for (i = 0; i < subs.n; i++) {
		path = xasprintf("%s/%s", dir, subs.v[i]);
		md = xasprintf("%s/SKILL.md", path);
		if (access(md, F_OK) == 0) {
			k = skillset_add(s, scope, path);
			k->status = status;
			skillset_read(k);
		}
		free(md);
		free(path);
	}
	strv_free(&subs);
}

/*
 * The directories of imported skills: the global one from your own files
 * (state.configDir/skills, or skills.importedDir of the global file or a
 * --config), the project's from a trusted project file's
 * skills.importedDir, which must stay under that file's directory, else
 * <project>/.opencode-sandbox/skills.
 */
int
skills_dirs(struct skills *s, const struct effective *e, struct buf *err)
{
	const struct config_wrapper *own = &e->own->wrapper, *w = &e->full->wrapper;
	const char *f = w->skills_imported_dir_loc.file;
	char *xdg, *fdir, *slash;
	size_t i;

	if (own->skills_imported_dir != NULL)
		s->global_dir = host_expand(own->skills_imported_dir);
	else if (own->state_config_dir != NULL) {
		xdg = host_expand(own->state_config_dir);
		s->global_dir = xasprintf("%s/skills", xdg);
		free(xdg);
	} else {
		xdg = host_xdg("XDG_CONFIG_HOME", ".config");
		s->global_dir = xasprintf("%s/opencode-sandbox/skills", xdg);
		free(xdg);
	}
	if (e->project[0] == '\0')
		return 0;
	for (i = 0; f != NULL && i < e->conf.n; i++) {
		if (!conf_is_project(&e->conf.files[i]) && e->conf.files[i].role != CONF_ACCEPTED)
			continue;
		if (strcmp(e->conf.files[i].path, f) != 0)
			continue;
		fdir = xstrdup(f);
		if ((slash = strrchr(fdir, '/')) != NULL)
			*slash = '\0';
		if (w->skills_imported_dir[0] == '~' ||
		    strncmp(w->skills_imported_dir, fdir, strlen(fdir)) != 0 ||
		    w->skills_imported_dir[strlen(fdir)] != '/') {
			buf_printf(err,
			           "%s:%u:%u: skills.importedDir %s: a project's imported skills "
			           "must be under its directory %s\n",
			           f, w->skills_imported_dir_loc.line,
			           w->skills_imported_dir_loc.col, w->skills_imported_dir, fdir);
			free(fdir);
			return -1;
		}
		s->project_dir = xstrdup(w->skills_imported_dir);
		s->project_base = fdir;
		return 0;
	}
	s->project_dir = xasprintf("%s/.opencode-sandbox/skills", e->project);
	s->project_base = xstrdup(e->project);
	return 0;
}

/*
 * A host skill already imported (the source of an imported one) is no
 * longer one to import: it says under which name and scope it is.
 */
static void
skillset_mark_imported(struct skills *s, struct skill *k)
{
	char real[PATH_MAX];
	size_t i;

	if (realpath(k->dir, real) == NULL)
		return;
	for (i = 0; i < s->n; i++)
		if ((s->v[i].scope == SKILL_GLOBAL || s->v[i].scope == SKILL_PROJECT) &&
		    s->v[i].source != NULL && strcmp(s->v[i].source, real) == 0) {
			k->status = SKILL_IMPORTED;
			free(k->error);
			k->error = xasprintf("imported as %s (%s)", s->v[i].name,
			                     skills_scope_name(s->v[i].scope));
			return;
		}
}

/*
 * Every skill of e's configuration: imported (global, then the project's),
 * the project's own and the host's, each with its status; a name
 * imported in both scopes marks both SKILL_DUPLICATE.
 */
int
skills_find(struct skills *s, const struct effective *e, struct buf *err)
{
	const struct config_wrapper *w = &e->full->wrapper;
	int expose_global =
	    w->skills_expose_global_skills_loc.line && w->skills_expose_global_skills;
	int hide_external =
	    w->skills_expose_project_skills_loc.line && !w->skills_expose_project_skills;
	size_t i, j, first;
	char *path;

	memset(s, 0, sizeof *s);
	if (skills_dirs(s, e, err) == -1 ||
	    skillset_imported(s, s->global_dir, SKILL_GLOBAL, e->full, err) == -1)
		return -1;
	if (s->project_dir != NULL &&
	    skillset_imported(s, s->project_dir, SKILL_PROJECT, e->full, err) == -1)
		return -1;
	for (i = 0; i < s->n; i++)
		for (j = i + 1; j < s->n; j++)
			if (s->v[i].scope != s->v[j].scope && s->v[i].status == SKILL_ACTIVE &&
			    s->v[j].status == SKILL_ACTIVE &&
			    strcmp(s->v[i].name, s->v[j].name) == 0)
				s->v[i].status = s->v[j].status = SKILL_DUPLICATE;
	for (i = 0; e->project[0] != '\0' && i < EG_NELEM(skillset_native_dirs); i++) {
		path = xasprintf("%s/%s", e->project, skillset_native_dirs[i]);
		first = s->n;
		skillset_folder(s, path, SKILL_NATIVE,
		                hide_external && i >= 2 ? SKILL_HIDDEN : SKILL_PROJECT_OWN);
		for (j = first; j < s->n; j++)
			if (s->v[j].status == SKILL_HIDDEN)
				s->v[j].error = xstrdup("skills.exposeProjectSkills: false");
		free(path);
	}
	for (i = 0; i < skills_nhost_dirs; i++) {
		path = xasprintf("%s/%s", host_home(), skills_host_dirs[i]);
		first = s->n;
		skillset_folder(s, path, SKILL_HOST,
		                expose_global ? SKILL_EXPOSED : SKILL_AVAILABLE);
		for (j = first; j < s->n; j++)
			if (s->v[j].status == SKILL_AVAILABLE)
				skillset_mark_imported(s, &s->v[j]);
		free(path);
	}
	return 0;
}

/*
 * The run's skills: the active imported ones (and the host's with
 * skills.exposeGlobalSkills), copied into dst, each hashed against its
 * manifest. A name exposed twice stops the run. notes gets what a person
 * should know: a skill changed since it was imported, files left out.
 * Returns how many were copied, or -1 with err.
 */
int
skills_stage(const struct skills *s, const char *dst, struct strv *notes, struct buf *err)
{
	struct strv names;
	struct skilltree t;
	const struct skill *k;
	char *to;
	size_t i, j;
	int n = 0;

	memset(&names, 0, sizeof names);
	for (i = 0; i < s->n; i++) {
		k = &s->v[i];
		if (k->status == SKILL_DUPLICATE) {
			buf_printf(err,
			           "skill %s is imported both globally (%s) and into the project "
			           "(%s): remove one, or import one again with --name-prefix",
			           k->name, s->global_dir, s->project_dir);
			strv_free(&names);
			return -1;
		}
		if (k->status != SKILL_ACTIVE && k->status != SKILL_EXPOSED)
			continue;
		if (strv_has(&names, k->name)) {
			strv_addf(notes,
			          "skill %s (%s): another skill of that name is exposed; not "
			          "this one",
			          k->name, k->dir);
			continue;
		}
		if (n == 0 && dst != NULL && host_mkdirs(dst, 0755) == -1) {
			buf_printf(err, "%s: %s", dst, strerror(errno));
			strv_free(&names);
			return -1;
		}
		memset(&t, 0, sizeof t);
		t.label = k->name;
		t.follow = k->scope == SKILL_HOST;
		t.root = k->dir;
		t.base = k->base;
		t.err = err;
		to = dst != NULL ? xasprintf("%s/%s", dst, k->name) : NULL;
		if (skilltree_copy(&t, k->dir, to) == -1) {
			free(to);
			skilltree_free(&t);
			strv_free(&names);
			return -1;
		}
		free(to);
		for (j = 0; j < t.notes.n; j++)
			strv_add(notes, t.notes.v[j]);
		if (k->sha256 != NULL && strcmp(k->sha256, t.sha256) != 0)
			strv_addf(
			    notes,
			    "skill %s changed since it was imported (its files' SHA-256 is not "
			    "the manifest's): exposed as it is now",
			    k->name);
		skilltree_free(&t);
		strv_add(&names, k->name);
		n++;
	}
	strv_free(&names);
	return n;
}

void
skills_free(struct skills *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].description);
		free(s->v[i].dir);
		free(s->v[i].source);
		free(s->v[i].sha256);
		free(s->v[i].error);
	}
	free(s->v);
	free(s->global_dir);
	free(s->project_dir);
	free(s->project_base);
	memset(s, 0, sizeof *s);
}
