/*
 * Small things every part of the host command needs: the user's home and
 * XDG directories, "~/" in configured paths, whole-file reads with a
 * limit, files written whole (temporary name, then rename), directory
 * trees made with a mode, and SHA-256 as hex.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "host.h"

/* $HOME, else the password file's; "/" when there is neither. */
const char *
host_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && h[0] == '/')
		return h;
	if ((pw = getpwuid(getuid())) != NULL && pw->pw_dir != NULL && pw->pw_dir[0] == '/')
		return pw->pw_dir;
	return "/";
}

/* A path for people: under the home directory as "~/...". */
void
host_path_show(struct buf *b, const char *path)
{
	const char *home = host_home();
	size_t n = strlen(home);

	if (strcmp(home, "/") != 0 && strncmp(path, home, n) == 0 && path[n] == '/')
		buf_printf(b, "~%s", path + n);
	else
		buf_adds(b, path);
}

/*
 * An XDG base directory: the variable when it holds an absolute path (the
 * specification says to ignore a relative one), else HOME/fallback.
 */
char *
host_xdg(const char *var, const char *fallback)
{
	const char *v = getenv(var);

	if (v != NULL && v[0] == '/')
		return xstrdup(v);
	return xasprintf("%s/%s", host_home(), fallback);
}

/* "~" and "~/..." are the user's home; any other path is kept as it is. */
char *
host_expand(const char *path)
{
	if (strcmp(path, "~") == 0)
		return xstrdup(host_home());
	if (strncmp(path, "~/", 2) == 0)
		return xasprintf("%s/%s", host_home(), path + 2);
	return xstrdup(path);
}

char *
host_sha256_hex(const void *data, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char *hex;

	if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1)
		fatalx("SHA-256 failed");
	hex = xmalloc(2 * n + 1);
	str_hex(hex, md, n);
	hex[2 * n] = '\0';
	return hex;
}

/*
 * A whole regular file from an open descriptor, at most max bytes (-1
 * with EFBIG past it). The text is NUL-terminated for the parsers; *lenp
 * has its length. The descriptor is left open.
 */
int
host_read_fd(int fd, size_t max, char **datap, size_t *lenp)
{
	struct stat st;
	struct buf b;
	ssize_t n;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	buf_init(&b);
	buf_add(&b, "", 0);
	for (;;) {
		buf_reserve(&b, 65536);
		n = read(fd, b.data + b.len, 65536);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			buf_free(&b);
			return -1;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		b.data[b.len] = '\0';
		if (b.len > max) {
			buf_free(&b);
			errno = EFBIG;
			return -1;
		}
	}
	*lenp = b.len;
	*datap = buf_release(&b);
	return 0;
}

/* A whole regular file by its path, as host_read_fd. */
int
host_read_file(const char *path, size_t max, char **datap, size_t *lenp)
{
	int fd, rc, saved;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	rc = host_read_fd(fd, max, datap, lenp);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* Write a file whole: a temporary file beside it, then rename. */
int
host_write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	ssize_t n;
	size_t off = 0;
	int fd, saved;

	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)) == -1) {
		free(tmp);
		return -1;
	}
	while (off < len) {
		n = write(fd, data + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto err;
		off += (size_t)n;
	}
	if (fchmod(fd, mode) == -1 || close(fd) == -1) {
		fd = -1;
		goto err;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto err;
	free(tmp);
	return 0;
err:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	errno = saved;
	return -1;
}

/* mkdir -p: every missing directory of path made with mode. */
int
host_mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	struct stat st;
	size_t i;

	if (strlen(path) >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	str_copy(tmp, sizeof tmp, path);
	for (i = 1; tmp[i] != '\0'; i++) {
		if (tmp[i] != '/')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, mode) == -1 && errno != EEXIST)
			return -1;
		tmp[i] = '/';
	}
	if (mkdir(tmp, mode) == -1 && errno != EEXIST)
		return -1;
	if (stat(tmp, &st) == -1)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}
