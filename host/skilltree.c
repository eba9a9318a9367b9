/*
 * A skill's files: walked, checked, copied and hashed. Two walks share
 * this code. An import (follow) reads the user's source: a symbolic link
 * is followed when it resolves inside the source root and copied as the
 * file or directory it names, and one that leads out refuses the import,
 * so that a skill cannot carry a host file into the sandbox. A run's copy
 * of imported skills (no follow) reads directories the agent can write (a
 * project's imports): nothing is followed, every entry is opened with
 * O_NOFOLLOW from its directory's descriptor, and links and special files
 * are left out with a note. Both are bounded in files, bytes and depth.
 *
 * The hash of a skill is SHA-256 over the lines `HEX  PATH` (sha256sum's
 * format) of its regular files, sorted by path: what
 *   find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
 * gives in the copied directory.
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

#include <openssl/evp.h>

#include "host.h"

#define SKILLTREE_MAX_FILES 4096
#define SKILLTREE_MAX_BYTES (64 * 1024 * 1024)
#define SKILLTREE_MAX_DEPTH 32

struct skilltree_walk {
	struct skilltree *t;
	dev_t dev[SKILLTREE_MAX_DEPTH]; /* the directories being walked: a link loop is refused */
	ino_t ino[SKILLTREE_MAX_DEPTH];
	int depth;
	struct strv lines; /* "PATH\0HEX": sorted by path, then written as sha256sum's lines */
	size_t files;
	size_t bytes;
};

static int
skilltree_fail(struct skilltree_walk *w, const char *rel, const char *why)
{
	buf_printf(w->t->err, "%s%s%s: %s", w->t->label, rel[0] != '\0' ? "/" : "", rel, why);
	return -1;
}

/* A problem with one entry: an error for an import, a note for a run's copy. */
static int
skilltree_problem(struct skilltree_walk *w, const char *rel, const char *why)
{
	if (w->t->follow)
		return skilltree_fail(w, rel, why);
	strv_addf(&w->t->notes, "%s/%s: %s, not copied", w->t->label, rel, why);
	return 0;
}

static int
skilltree_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copy (when dfd is not -1) and hash one open regular file. */
static int
skilltree_file(struct skilltree_walk *w, int fd, int dfd, const char *name, const char *rel,
               const char *replace, size_t replace_len)
{
	unsigned char md[EVP_MAX_MD_SIZE], chunk[65536];
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	EVP_MD_CTX *ctx;
	struct stat st;
	unsigned int mdlen;
	ssize_t n;
	size_t off;
	int out = -1, rc = -1;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return skilltree_problem(w, rel, "not a regular file");
	if (++w->files > SKILLTREE_MAX_FILES)
		return skilltree_fail(w, rel, "more than 4096 files in one skill");
	if (dfd != -1 &&
	    (out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	                  (st.st_mode & 0111) ? 0755 : 0644)) == -1)
		return skilltree_fail(w, rel, strerror(errno));
	if ((ctx = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatalx("EVP_DigestInit_ex");
	for (off = 0;;) {
		if (replace != NULL) {
			n = (ssize_t)(replace_len - off > sizeof chunk ? sizeof chunk
			                                               : replace_len - off);
			memcpy(chunk, replace + off, (size_t)n);
			off += (size_t)n;
		} else if ((n = read(fd, chunk, sizeof chunk)) == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			skilltree_fail(w, rel, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if ((w->bytes += (size_t)n) > SKILLTREE_MAX_BYTES) {
			skilltree_fail(w, rel, "the skill is larger than 64 MiB");
			goto out;
		}
		EVP_DigestUpdate(ctx, chunk, (size_t)n);
		if (out != -1 && write(out, chunk, (size_t)n) != n) {
			skilltree_fail(w, rel, errno != 0 ? strerror(errno) : "short write");
			goto out;
		}
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	str_hex(hex, md, mdlen);
	hex[2 * mdlen] = '\0';
	{
		size_t rl = strlen(rel);
		char *line = xmalloc(rl + 1 + 2 * mdlen + 1);

		memcpy(line, rel, rl + 1);
		memcpy(line + rl + 1, hex, 2 * mdlen + 1);
		strv_add_owned(&w->lines, line);
	}
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (out != -1 && close(out) == -1 && rc == 0)
		rc = skilltree_fail(w, rel, strerror(errno));
	return rc;
}

static int skilltree_dir(struct skilltree_walk *, int, const char *, int, const char *);

/* An entry that is a symbolic link: followed (import) only inside the root. */
static int
skilltree_link(struct skilltree_walk *w, const char *spath, int dfd, const char *name,
               const char *rel)
{
	char real[PATH_MAX], *path;
	struct stat st;
	size_t n = strlen(w->t->root);
	int fd, rc;

	if (!w->t->follow)
		return skilltree_problem(w, rel, "a symbolic link");
	path = xasprintf("%s/%s", spath, name);
	if (realpath(path, real) == NULL) {
		free(path);
		return skilltree_fail(w, rel, "a symbolic link that leads nowhere");
	}
	free(path);
	if (strncmp(real, w->t->root, n) != 0 || (real[n] != '/' && real[n] != '\0'))
		return skilltree_fail(w, rel,
		                      "a symbolic link out of the source (refused: it "
		                      "would copy a file from elsewhere into the sandbox)");
	if ((fd = open(real, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1 || fstat(fd, &st) == -1) {
		if (fd != -1)
			close(fd);
		return skilltree_fail(w, rel, strerror(errno));
	}
	if (S_ISDIR(st.st_mode))
		rc = skilltree_dir(w, fd, real, dfd == -1 ? -1 : dfd, rel);
	else
		rc = skilltree_file(w, fd, dfd, name, rel, NULL, 0);
	close(fd);
	return rc;
}

/* One directory entry: its kind decides. */
static int
skilltree_entry(struct skilltree_walk *w, int sfd, const char *spath, int dfd, const char *name,
                const char *rel)
{
	struct stat st;
	char *sub;
	int fd, rc;

	if (strchr(name, '\n') != NULL || strchr(name, '\\') != NULL)
		return skilltree_problem(w, rel, "a name with a newline or a backslash");
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return skilltree_fail(w, rel, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return skilltree_link(w, spath, dfd, name, rel);
	if (S_ISREG(st.st_mode)) {
		if ((fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) == -1)
			return skilltree_fail(w, rel, strerror(errno));
		if (strcmp(rel, "SKILL.md") == 0 && w->t->skill_md != NULL)
			rc = skilltree_file(w, fd, dfd, name, rel, w->t->skill_md,
			                    w->t->skill_md_len);
		else
			rc = skilltree_file(w, fd, dfd, name, rel, NULL, 0);
		close(fd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode))
		return skilltree_problem(w, rel, "not a regular file or a directory");
	if ((fd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return skilltree_fail(w, rel, strerror(errno));
	sub = xasprintf("%s/%s", spath, name);
	rc = skilltree_dir(w, fd, sub, dfd, rel);
	free(sub);
	close(fd);
	return rc;
}

/*
 * The directory open as sfd (at spath, for links), into the directory of
 * dfd named by the last part of rel ("" for the skill itself): made
 * there, then every entry in name order.
 */
static int
skilltree_dir(struct skilltree_walk *w, int sfd, const char *spath, int dfd, const char *rel)
{
	struct strv names;
	struct dirent *de;
	struct stat st;
	const char *base;
	char *sub;
	DIR *d;
	size_t i;
	int k, fd, out = -1, rc = 0;

	if (fstat(sfd, &st) == -1)
		return skilltree_fail(w, rel, strerror(errno));
	for (k = 0; k < w->depth; k++)
		if (w->dev[k] == st.st_dev && w->ino[k] == st.st_ino)
			return skilltree_fail(w, rel, "a symbolic link that loops");
	if (w->depth == SKILLTREE_MAX_DEPTH)
		return skilltree_fail(w, rel, "directories nested more than 32 deep");
	if (dfd != -1 && rel[0] != '\0') {
		base = strrchr(rel, '/') != NULL ? strrchr(rel, '/') + 1 : rel;
		if (mkdirat(dfd, base, 0755) == -1 ||
		    (out = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
		        -1)
			return skilltree_fail(w, rel, strerror(errno));
	} else
		out = dfd == -1 ? -1 : dup(dfd);
	w->dev[w->depth] = st.st_dev;
	w->ino[w->depth] = st.st_ino;
	w->depth++;
	memset(&names, 0, sizeof names);
	if ((fd = dup(sfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		rc = skilltree_fail(w, rel, strerror(errno));
		goto out;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			strv_add(&names, de->d_name);
	closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof *names.v, skilltree_name_cmp);
	for (i = 0; i < names.n && rc == 0; i++) {
		sub = rel[0] != '\0' ? xasprintf("%s/%s", rel, names.v[i]) : xstrdup(names.v[i]);
		rc = skilltree_entry(w, sfd, spath, out, names.v[i], sub);
		free(sub);
	}
out:
	w->depth--;
	strv_free(&names);
	if (out != -1)
		close(out);
	return rc;
}

/*
 * path, which is under the directory base, opened from base one component
 * at a time with O_NOFOLLOW: a directory the agent can write cannot turn
 * a path into one that leads elsewhere on the host. -1 with errno (ELOOP
 * for a symbolic link on the way).
 */
int
skilltree_open_under(const char *base, const char *path, int flags)
{
	size_t n = strlen(base);
	char *copy, *p, *slash;
	struct stat st;
	int fd, next, saved;

	if (strncmp(path, base, n) != 0 || (path[n] != '/' && path[n] != '\0')) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if (path[n] == '\0')
		return fd;
	copy = xstrdup(path + n + 1);
	for (p = copy; fd != -1 && p != NULL; p = slash) {
		if ((slash = strchr(p, '/')) != NULL)
			*slash++ = '\0';
		if (*p == '\0' || strcmp(p, ".") == 0)
			continue;
		if (strcmp(p, "..") == 0) {
			close(fd);
			fd = -1;
			errno = EINVAL;
			break;
		}
		next = openat(fd, p,
		              (slash != NULL ? O_RDONLY | O_DIRECTORY : flags) | O_NOFOLLOW |
		                  O_CLOEXEC);
		/* O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link: say what it is. */
		if (next == -1 && errno == ENOTDIR &&
		    fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			errno = ELOOP;
		saved = errno;
		close(fd);
		fd = next;
		errno = saved;
	}
	free(copy);
	return fd;
}

/*
 * Walk the skill at dir (copying it into the new directory dst when dst
 * is not NULL; dst must not exist): t->sha256 gets its hash, t->notes what
 * was left out (a run's copy). With t->base, dir is opened from there
 * without following a link. 0, or -1 with the reason in t->err.
 */
int
skilltree_copy(struct skilltree *t, const char *dir, const char *dst)
{
	struct skilltree_walk w;
	struct buf listing;
	size_t i;
	int sfd, dfd = -1, rc = -1;

	memset(&w, 0, sizeof w);
	w.t = t;
	free(t->sha256);
	t->sha256 = NULL;
	sfd = t->base != NULL
	          ? skilltree_open_under(t->base, dir, O_RDONLY | O_DIRECTORY)
	          : open(dir, O_RDONLY | O_DIRECTORY | (t->follow ? 0 : O_NOFOLLOW) | O_CLOEXEC);
	if (sfd == -1)
		return skilltree_fail(
		    &w, "", errno == ELOOP ? "reached through a symbolic link" : strerror(errno));
	if (dst != NULL) {
		if (mkdir(dst, 0755) == -1 ||
		    (dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
			skilltree_fail(&w, "", strerror(errno));
			goto out;
		}
	}
	if (skilltree_dir(&w, sfd, dir, dfd, "") == -1)
		goto out;
	if (w.lines.n > 1)
		qsort(w.lines.v, w.lines.n, sizeof *w.lines.v, skilltree_name_cmp);
	buf_init(&listing);
	for (i = 0; i < w.lines.n; i++)
		buf_printf(&listing, "%s  %s\n", w.lines.v[i] + strlen(w.lines.v[i]) + 1,
		           w.lines.v[i]);
	t->sha256 = host_sha256_hex(listing.data != NULL ? listing.data : "", listing.len);
	buf_free(&listing);
	rc = 0;
out:
	strv_free(&w.lines);
	close(sfd);
	if (dfd != -1)
		close(dfd);
	return rc;
}

void
skilltree_free(struct skilltree *t)
{
	free(t->sha256);
	strv_free(&t->notes);
	t->sha256 = NULL;
}
