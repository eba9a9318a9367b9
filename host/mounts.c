/*
 * What the container sees of the host, and path safety (seed 003 §10,
 * §16.1). The project is a resolved absolute directory that is neither
 * "/" nor the home directory itself; other sources are resolved too and
 * never the home directory, ~/.ssh, a socket or a runtime's control
 * socket. The user's OpenCode config goes in file by file, read-only,
 * inside a config directory of the staged home that stays writable
 * (OpenCode writes a .gitignore and installs its plugin package there at
 * every start, and exits when it cannot); auth.json and ~/.gitconfig go in
 * read-only. Its skill folders do not: a run exposes the skills the user
 * imported (skillset.c), never the whole of them. The staged home is a scratch directory of the run, so what
 * the payload writes there goes with it.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

/* Names OpenCode manages in its config directory and makes anew (its .gitignore lists them). */
static const char *const mounts_managed[] = {
    "node_modules", "package.json", "package-lock.json", "bun.lock", ".gitignore",
};

/* Skill folders of the config directory: a run exposes imported skills only. */
static const char *const mounts_skill_dirs[] = {"skills", "skill"};

/* Control sockets a sandbox must never get, even by an explicit mount. */
static const char *const mounts_sockets[] = {
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/var/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
};

/* Characters that would change the meaning of a --mount value, or of a terminal line. */
static int
mounts_bad_chars(const char *p)
{
	for (; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ',')
			return 1;
	return 0;
}

static int
mounts_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The checks every source shares, on a resolved path. */
static const char *
mounts_check_resolved(const char *abs)
{
	char home[PATH_MAX], ssh[PATH_MAX + 8];
	size_t i;

	if (strcmp(abs, "/") == 0)
		return "is the root directory";
	if (realpath(host_home(), home) != NULL) {
		if (strcmp(abs, home) == 0)
			return "is your home directory: name a project directory inside it";
		/* A directory above the home mounts it whole, ~/.ssh included. */
		if (mounts_under(home, abs))
			return "holds your home directory: name a project directory inside it";
		snprintf(ssh, sizeof ssh, "%s/.ssh", home);
		if (mounts_under(abs, ssh))
			return "is in ~/.ssh, which is never mounted";
	}
	for (i = 0; i < EG_NELEM(mounts_sockets); i++)
		if (strcmp(abs, mounts_sockets[i]) == 0)
			return "is a container runtime's control socket";
	if (mounts_bad_chars(abs))
		return "holds a ',' or a control character, which a mount cannot carry";
	return NULL;
}

/*
 * The project directory: resolved (symbolic links followed) into
 * resolved; NULL, or why it cannot be the project, naming the absolute
 * path it was taken to mean.
 */
const char *
mounts_check_project(const char *path, char *resolved, size_t size)
{
	static char why[PATH_MAX + 128];
	char abs[PATH_MAX], cwd[PATH_MAX];
	const char *err;
	struct stat st;

	if (realpath(path, abs) == NULL) {
		if (path[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
			snprintf(why, sizeof why, "project %s does not exist (%s/%s)", path, cwd,
			         path);
		else
			snprintf(why, sizeof why, "project %s does not exist", path);
		return why;
	}
	if (stat(abs, &st) == -1 || !S_ISDIR(st.st_mode)) {
		snprintf(why, sizeof why, "project %s is not a directory", abs);
		return why;
	}
	if ((err = mounts_check_resolved(abs)) != NULL) {
		snprintf(why, sizeof why, "project %s %s", abs, err);
		return why;
	}
	str_copy(resolved, size, abs);
	return NULL;
}

/* Another source path, resolved in place check; NULL when it may be mounted. */
const char *
mounts_check_source(const char *abs, int allow_file)
{
	struct stat st;

	if (stat(abs, &st) == -1)
		return "does not exist";
	if (S_ISSOCK(st.st_mode))
		return "is a socket, which is never mounted";
	if (!S_ISDIR(st.st_mode) && !(allow_file && S_ISREG(st.st_mode)))
		return allow_file ? "is not a file or a directory" : "is not a directory";
	return mounts_check_resolved(abs);
}

static int
mounts_is_managed(const char *name)
{
	size_t i;

	for (i = 0; i < EG_NELEM(mounts_managed); i++)
		if (strcmp(name, mounts_managed[i]) == 0)
			return 1;
	return 0;
}

static int
mounts_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Whether the import the note offers for a skill folder of the host would
 * do something: not when every skill found there is imported already.
 */
static int
mounts_skills_left(const struct skills *sk, const char *dir)
{
	size_t i, len = strlen(dir), found = 0;

	for (i = 0; sk != NULL && i < sk->n; i++)
		if (sk->v[i].scope == SKILL_HOST && strncmp(sk->v[i].dir, dir, len) == 0 &&
		    (sk->v[i].dir[len] == '/' || sk->v[i].dir[len] == '\0')) {
			if (sk->v[i].status != SKILL_IMPORTED)
				return 1;
			found++;
		}
	return found == 0;
}

/* Each entry of the host's OpenCode config directory, read-only, in name order. */
static void
mounts_config_dir(struct host_plan *p, const struct skills *sk, const char *dir)
{
	char abs[PATH_MAX], *path, *target;
	struct strv names;
	struct dirent *de;
	const char *err;
	size_t i;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	memset(&names, 0, sizeof names);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    !mounts_is_managed(de->d_name))
			strv_add(&names, de->d_name);
	closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof *names.v, mounts_name_cmp);
	for (i = 0; i < names.n; i++) {
		path = xasprintf("%s/%s", dir, names.v[i]);
		if (strcmp(names.v[i], mounts_skill_dirs[0]) == 0 ||
		    strcmp(names.v[i], mounts_skill_dirs[1]) == 0) {
			if (mounts_skills_left(sk, path))
				strv_addf(&p->notes,
				          "%s: not mounted: a run exposes imported skills only "
				          "(" HOST_PROG " skills import %s)",
				          path, path);
			else
				strv_addf(
				    &p->notes,
				    "%s: not mounted: a run exposes imported skills only (its "
				    "skills are imported)",
				    path);
			free(path);
			continue;
		}
		if (mounts_bad_chars(names.v[i]))
			err = "its name holds a ',' or a control character";
		else if (realpath(path, abs) == NULL)
			err = "a dangling link";
		else
			err = mounts_check_source(abs, 1);
		if (err != NULL)
			strv_addf(&p->notes, "%s: not mounted: %s", path, err);
		else {
			target = xasprintf("%s/.config/opencode/%s", HOST_HOME, names.v[i]);
			plan_mount(p, abs, target, 1, "your OpenCode config, read-only");
			free(target);
		}
		free(path);
	}
	strv_free(&names);
}

/*
 * The host's OpenCode config and credentials and ~/.gitconfig, as the
 * configuration allows; the plan's notes say what was left out and why.
 */
void
mounts_host_config(struct host_plan *p, const struct config *cfg, const struct skills *sk,
                   const char *config_dir, const char *data_dir)
{
	const struct config_wrapper *w = &cfg->wrapper;
	char abs[PATH_MAX], *path;
	struct stat st;

	if (!w->opencode_mount_host_config_loc.line || w->opencode_mount_host_config)
		mounts_config_dir(p, sk, config_dir);
	if (!w->opencode_mount_host_data_loc.line || w->opencode_mount_host_data) {
		path = xasprintf("%s/auth.json", data_dir);
		if (realpath(path, abs) != NULL && stat(abs, &st) == 0 && S_ISREG(st.st_mode) &&
		    mounts_check_resolved(abs) == NULL)
			plan_mount(p, abs, HOST_HOME "/.local/share/opencode/auth.json", 1,
			           "your OpenCode credentials, read-only");
		free(path);
	}
	path = xasprintf("%s/.gitconfig", host_home());
	if (realpath(path, abs) != NULL && stat(abs, &st) == 0 && S_ISREG(st.st_mode) &&
	    mounts_check_resolved(abs) == NULL)
		plan_mount(p, abs, HOST_HOME "/.gitconfig", 1, "your git identity, read-only");
	free(path);
}

/* project.extraMounts: "SOURCE:TARGET:ro|rw", each source checked like the project. */
int
mounts_extra(struct host_plan *p, const struct config *cfg, struct buf *err)
{
	const struct cfg_list *l = &cfg->wrapper.project_extra_mounts;
	char abs[PATH_MAX], *copy, *src, *dst, *mode, *expanded;
	const char *why;
	size_t i;

	for (i = 0; i < l->n; i++) {
		copy = xstrdup(l->items[i].value);
		src = copy;
		dst = strchr(src, ':');
		*dst++ = '\0';
		mode = strrchr(dst, ':');
		*mode++ = '\0';
		expanded = host_expand(src);
		why = realpath(expanded, abs) == NULL ? "does not exist"
		                                      : mounts_check_source(abs, 1);
		if (why == NULL && (mounts_under(dst, HOST_TARGET) ||
		                    mounts_under(dst, "/sandbox") || mounts_under(dst, HOST_HOME) ||
		                    mounts_under(dst, "/etc") || mounts_under(dst, "/usr") ||
		                    mounts_under(dst, "/run") || mounts_under(dst, "/proc") ||
		                    mounts_under(dst, "/sys") || mounts_under(dst, "/dev")))
			why = "mounts over a path the sandbox itself uses";
		if (why != NULL) {
			buf_printf(err, "%s:%u:%u: extraMounts entry %s: %s %s",
			           l->items[i].loc.file ? l->items[i].loc.file : "builtin",
			           l->items[i].loc.line, l->items[i].loc.col, l->items[i].value,
			           expanded, why);
			free(expanded);
			free(copy);
			return -1;
		}
		plan_mount(p, abs, dst, strcmp(mode, "rw") != 0, "project.extraMounts");
		free(expanded);
		free(copy);
	}
	return 0;
}

/* chown -R without following links: the tree becomes the payload's. */
static void
mounts_chown_tree(int dfd, const char *name, uid_t uid, gid_t gid)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) == -1 ||
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode))
		return;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			mounts_chown_tree(dirfd(d), de->d_name, uid, gid);
	closedir(d);
}

/* A mount point for a source: an empty file or directory of the same kind. */
static int
mounts_point(const char *path, const char *source)
{
	struct stat st;
	char *parent, *slash;
	int fd;

	parent = xstrdup(path);
	if ((slash = strrchr(parent, '/')) != NULL) {
		*slash = '\0';
		if (host_mkdirs(parent, 0755) == -1) {
			free(parent);
			return -1;
		}
	}
	free(parent);
	if (stat(source, &st) == 0 && S_ISDIR(st.st_mode))
		return mkdir(path, 0755) == -1 && errno != EEXIST ? -1 : 0;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return errno == EEXIST ? 0 : -1;
	close(fd);
	return 0;
}

/* The bind mount whose target holds target (the longest such), or NULL. */
static const struct host_mount *
mounts_parent(const struct host_plan *p, const struct host_mount *m)
{
	const struct host_mount *best = NULL;
	size_t i, n;

	for (i = 0; i < p->nmounts; i++) {
		if (&p->mounts[i] == m || p->mounts[i].tmpfs)
			continue;
		n = strlen(p->mounts[i].target);
		if (strncmp(m->target, p->mounts[i].target, n) == 0 && m->target[n] == '/' &&
		    (best == NULL || n > strlen(best->target)))
			best = &p->mounts[i];
	}
	return best;
}

/*
 * The host side of the mounts: every mount nested in another bind mount
 * (a config file in the staged home, auth.json in the session directory,
 * a list file in the policy directory) gets its mount point made here, an
 * empty file or directory in the outer mount's source, so that the
 * runtime does not make them as root. With do_chown (a root user on a
 * rootful runtime) the writable trees of the payload's home are given to
 * the payload's uid.
 */
int
mounts_stage(const struct host_plan *p, uid_t uid, gid_t gid, int do_chown, struct buf *err)
{
	const struct host_mount *m, *parent;
	size_t i, n = strlen(HOST_HOME);
	char *path;

	for (i = 0; i < p->nmounts; i++) {
		m = &p->mounts[i];
		if (m->tmpfs || (parent = mounts_parent(p, m)) == NULL)
			continue;
		path = xasprintf("%s%s", parent->source, m->target + strlen(parent->target));
		if (mounts_point(path, m->source) == -1) {
			buf_printf(err, "%s: %s", path, strerror(errno));
			free(path);
			return -1;
		}
		free(path);
	}
	for (i = 0; do_chown && i < p->nmounts; i++) {
		m = &p->mounts[i];
		if (!m->tmpfs && !m->readonly && strncmp(m->target, HOST_HOME, n) == 0 &&
		    (m->target[n] == '\0' || m->target[n] == '/'))
			mounts_chown_tree(AT_FDCWD, m->source, uid, gid);
	}
	return 0;
}
