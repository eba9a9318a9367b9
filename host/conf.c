/*
 * Finding, reading and merging the configuration (seed 003 §7.3, §8.1):
 * the global file under $XDG_CONFIG_HOME/opencode-sandbox, each --config,
 * the nearest .opencode-sandbox.yaml from the project upward, seed 000's
 * <project>/.opencode/sandbox.json, then the providers' hosts and the
 * command line as layers of their own. Every file is read once; the bytes
 * that are checked are the bytes handed to sandbox-init. The loading and
 * merging is the policy module's (config_load_texts), the very code
 * egressd runs, so the host and the appliance cannot disagree.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

#define CONF_MAX_SIZE (4 * 1024 * 1024) /* the policy loader's limit */

const char *
conf_role_name(enum conf_role r)
{
	switch (r) {
	case CONF_DEFAULTS:
		return "defaults";
	case CONF_GLOBAL:
		return "global";
	case CONF_PROJECT:
		return "project";
	case CONF_SEED:
		return "project (seed 000)";
	case CONF_ACCEPTED:
		return "project, as accepted";
	case CONF_FLAG:
		return "--config";
	case CONF_PROVIDERS:
		return "providers";
	case CONF_CLI:
		return "command line";
	}
	return "?";
}

int
conf_is_project(const struct conf_file *f)
{
	return f->role == CONF_PROJECT || f->role == CONF_SEED;
}

void
conf_add_text(struct conf *c, enum conf_role role, const char *path, char *data, size_t len,
              int untrusted)
{
	struct conf_file *f;

	if (c->n == CONF_MAX_FILES)
		fatalx("too many configuration files");
	f = &c->files[c->n++];
	f->role = role;
	f->path = xstrdup(path);
	f->data = data;
	f->len = len;
	f->untrusted = untrusted;
}

static int
conf_read_error(const char *path, int err, struct buf *errs)
{
	if (err == EFBIG)
		buf_printf(errs, "%s: larger than 4 MiB\n", path);
	else if (err == EINVAL)
		buf_printf(errs, "%s: not a regular file\n", path);
	else
		buf_printf(errs, "%s: cannot read: %s\n", path, strerror(err));
	return -1;
}

/* A file the user names or keeps outside the project: read as it is. */
int
conf_add_file(struct conf *c, enum conf_role role, const char *path, struct buf *errs)
{
	char abs[PATH_MAX], *data;
	size_t len;

	if (realpath(path, abs) == NULL)
		return conf_read_error(path, errno, errs);
	if (host_read_file(abs, CONF_MAX_SIZE, &data, &len) == -1)
		return conf_read_error(path, errno, errs);
	conf_add_text(c, role, abs, data, len, 0);
	return 0;
}

/*
 * A project file, which the payload may have written: it must be a
 * regular file reached without a symbolic link in the directory named or
 * as the file itself, so that a link planted in the workspace cannot make
 * the host read one of its own files and hand it into the container.
 * 0 when read, 1 when there is none, -1 on an error.
 */
static int
conf_read_project(const char *dir, const char *sub, const char *name, char **datap, size_t *lenp,
                  char **pathp, struct buf *errs)
{
	struct stat st;
	char *path;
	int dfd, sfd, fd, rc = -1;
	ssize_t n;
	struct buf b;

	path = sub != NULL ? xasprintf("%s/%s/%s", dir, sub, name) : xasprintf("%s/%s", dir, name);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		free(path);
		return 1;
	}
	sfd = dfd;
	if (sub != NULL && fstatat(dfd, sub, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		sfd = -1;
		errno = ELOOP;
	} else if (sub != NULL)
		sfd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd == -1) {
		rc = errno == ENOENT || errno == ENOTDIR ? 1 : -1;
		if (errno == ELOOP)
			buf_printf(errs,
			           "%s/%s: a symbolic link: a project's configuration must not be "
			           "reached through one\n",
			           dir, sub);
		else if (rc == -1)
			buf_printf(errs, "%s/%s: %s\n", dir, sub, strerror(errno));
		close(dfd);
		free(path);
		return rc;
	}
	fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT) {
		rc = 1;
		goto out;
	}
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		buf_printf(
		    errs,
		    "%s: a project configuration file must be a regular file, not a symbolic "
		    "link or a special file\n",
		    path);
		goto out;
	}
	buf_init(&b);
	buf_add(&b, "", 0);
	for (;;) {
		buf_reserve(&b, 65536);
		n = read(fd, b.data + b.len, 65536);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b.len += (size_t)n;
		b.data[b.len] = '\0';
		if (b.len > CONF_MAX_SIZE)
			break;
	}
	if (n == -1 || b.len > CONF_MAX_SIZE) {
		conf_read_error(path, n == -1 ? errno : EFBIG, errs);
		buf_free(&b);
		goto out;
	}
	*lenp = b.len;
	*datap = buf_release(&b);
	*pathp = path;
	path = NULL;
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (sfd != dfd)
		close(sfd);
	close(dfd);
	free(path);
	return rc;
}

/*
 * The files of a run, in the order they are merged: the global file, each
 * --config, seed 000's file and the nearest .opencode-sandbox.yaml. The
 * project files start out trusted; consent decides.
 */
int
conf_discover(struct conf *c, const struct host_args *a, const char *project, struct buf *errs)
{
	char *global, *dir, *slash, *data, *path;
	struct stat st;
	size_t i, len;
	int rc;

	/*
	 * The wrapper's defaults (seed 003 §7.2): practical mode and empty
	 * lists, like the image's own policy. A layer of its own, so that the
	 * embedded policy's lists, which apply only when no file is given,
	 * never come and go with the files a run happens to have.
	 */
	conf_add_text(c, CONF_DEFAULTS, "(defaults)",
	              xstrdup("version: 1\nnetwork:\n  mode: practical\n  blocklist: []\n"
	                      "  allowlist: []\n"),
	              strlen("version: 1\nnetwork:\n  mode: practical\n  blocklist: []\n"
	                     "  allowlist: []\n"),
	              0);
	global = host_xdg("XDG_CONFIG_HOME", ".config");
	path = xasprintf("%s/opencode-sandbox/config.yaml", global);
	free(global);
	if (stat(path, &st) == 0 && conf_add_file(c, CONF_GLOBAL, path, errs) == -1) {
		free(path);
		return -1;
	}
	free(path);
	for (i = 0; i < a->configs.n; i++)
		if (conf_add_file(c, CONF_FLAG, a->configs.v[i], errs) == -1)
			return -1;
	rc = conf_read_project(project, ".opencode", "sandbox.json", &data, &len, &path, errs);
	if (rc == -1)
		return -1;
	if (rc == 0) {
		conf_add_text(c, CONF_SEED, path, data, len, 0);
		free(path);
	}
	/* The nearest .opencode-sandbox.yaml: the project, then each parent. */
	dir = xstrdup(project);
	for (;;) {
		rc = conf_read_project(dir, NULL, ".opencode-sandbox.yaml", &data, &len, &path,
		                       errs);
		if (rc == -1) {
			free(dir);
			return -1;
		}
		if (rc == 0) {
			conf_add_text(c, CONF_PROJECT, path, data, len, 0);
			free(path);
			break;
		}
		if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
			break;
		*slash = '\0';
	}
	if (rc != 0 && strcmp(dir, "/") != 0 && dir[0] == '/') {
		rc = conf_read_project("/", NULL, ".opencode-sandbox.yaml", &data, &len, &path,
		                       errs);
		if (rc == -1) {
			free(dir);
			return -1;
		}
		if (rc == 0) {
			conf_add_text(c, CONF_PROJECT, path, data, len, 0);
			free(path);
		}
	}
	free(dir);
	return 0;
}

/* A YAML double-quoted scalar holding s exactly. */
static void
conf_quote(struct buf *b, const char *s)
{
	buf_addc(b, '"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			buf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			buf_printf(b, "\\x%02x", (unsigned char)*s);
		else
			buf_addc(b, *s);
	}
	buf_addc(b, '"');
}

/*
 * The command line's settings as one more file, merged last so that they
 * win over every configuration file (seed 003 §8.1); checked by the same
 * schema as the files, so a bad --cpus is reported like a bad cpus:.
 */
void
conf_cli_layer(struct conf *c, const struct host_args *a)
{
	struct buf b;
	size_t i;

	if (a->mode == NULL && a->allow.n == 0 && !a->readonly && a->cpus == NULL &&
	    a->memory == NULL && a->image == NULL && !a->keep && !a->debug &&
	    a->upstream_ca == NULL)
		return;
	buf_init(&b);
	buf_adds(&b, "version: 1\n");
	if (a->mode != NULL || a->allow.n > 0) {
		buf_adds(&b, "network:\n");
		if (a->mode != NULL)
			buf_printf(&b, "  mode: %s\n", a->mode);
		if (a->allow.n > 0) {
			buf_adds(&b, "  inheritGlobal: true\n  allowlist:\n");
			for (i = 0; i < a->allow.n; i++) {
				buf_adds(&b, "    - ");
				conf_quote(&b, a->allow.v[i]);
				buf_addc(&b, '\n');
			}
		}
	}
	if (a->readonly)
		buf_adds(&b, "project:\n  readonly: true\n");
	if (a->cpus != NULL || a->memory != NULL) {
		buf_adds(&b, "resources:\n");
		if (a->cpus != NULL) {
			buf_adds(&b, "  cpus: ");
			conf_quote(&b, a->cpus);
			buf_addc(&b, '\n');
		}
		if (a->memory != NULL) {
			buf_adds(&b, "  memory: ");
			conf_quote(&b, a->memory);
			buf_addc(&b, '\n');
		}
	}
	if (a->image != NULL) {
		buf_adds(&b, "image:\n  name: ");
		conf_quote(&b, a->image);
		buf_addc(&b, '\n');
	}
	if (a->keep || a->debug || a->upstream_ca != NULL) {
		buf_adds(&b, "container:\n");
		if (a->keep)
			buf_adds(&b, "  remove: false\n");
		if (a->debug)
			buf_adds(&b, "  debug: true\n");
		if (a->upstream_ca != NULL) {
			buf_adds(&b, "  upstreamCa: ");
			conf_quote(&b, a->upstream_ca);
			buf_addc(&b, '\n');
		}
	}
	conf_add_text(c, CONF_CLI, "(command line)", buf_release(&b), b.len, 0);
}

/* Where a file goes in the merge: trusted layers, then project files that only tighten, then the command line. */
static int
conf_rank(const struct conf_file *f)
{
	switch (f->role) {
	case CONF_DEFAULTS:
	case CONF_GLOBAL:
		return 0;
	case CONF_SEED:
	case CONF_ACCEPTED:
		return f->untrusted ? 5 : 1;
	case CONF_PROJECT:
		return f->untrusted ? 6 : 2;
	case CONF_FLAG:
		return 3;
	case CONF_PROVIDERS:
		return 4;
	case CONF_CLI:
		return 7;
	}
	return 8;
}

/* "(command line):3:9: cpus: ..." reads better as "command line: cpus: ...". */
static void
conf_tidy_errors(struct buf *errs, size_t from)
{
	static const char cli[] = "(command line):";
	struct buf out;
	const char *p, *q, *r;

	if (errs->len <= from || strstr(errs->data + from, cli) == NULL)
		return;
	buf_init(&out);
	buf_add(&out, errs->data, from);
	for (p = errs->data + from; *p != '\0'; p = q) {
		q = strchr(p, '\n');
		q = q != NULL ? q + 1 : p + strlen(p);
		if (strncmp(p, cli, sizeof cli - 1) == 0 && (r = strstr(p, ": ")) != NULL &&
		    r < q) {
			buf_adds(&out, "command line: ");
			buf_add(&out, r + 2, (size_t)(q - r - 2));
		} else
			buf_add(&out, p, (size_t)(q - p));
	}
	buf_free(errs);
	*errs = out;
}

/*
 * Merge the files in their order: with_untrusted 0 leaves the untrusted
 * project files out (what sandbox-init gets as its trusted policy), 1
 * merges them too, as tightening only (the run's effective policy).
 */
struct config *
conf_load(const struct conf *c, int with_untrusted, struct buf *errs)
{
	struct config_text t[CONF_MAX_FILES];
	struct config *cfg;
	size_t i, n = 0, from = errs->len;
	int rank;

	memset(t, 0, sizeof t);
	for (rank = 0; rank <= 8; rank++)
		for (i = 0; i < c->n; i++) {
			if (conf_rank(&c->files[i]) != rank)
				continue;
			if (c->files[i].untrusted && !with_untrusted)
				continue;
			t[n].file.path = c->files[i].path;
			t[n].file.flags = c->files[i].untrusted ? CONFIG_FILE_UNTRUSTED : 0;
			t[n].data = c->files[i].data;
			t[n].len = c->files[i].len;
			n++;
		}
	cfg = config_load_texts(t, n, errs);
	conf_tidy_errors(errs, from);
	return cfg;
}

void
conf_free(struct conf *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->files[i].path);
		free(c->files[i].data);
	}
	c->n = 0;
}
