/*
 * The host's state (seed 003 §6.4, §8.2). Under $XDG_STATE_HOME/
 * opencode-sandbox (or state.stateDir), each project has a directory of
 * its own, named for the project and a hash of its path: OpenCode's
 * session database and prompt history live there between runs, the
 * project policy the user accepted, and one directory per run whose logs/
 * holds the audit log egressd writes. A run's scratch files (the staged
 * home, the policy files sandbox-init reads) go beside it and are removed
 * at exit unless --keep. At the end one line sums the audit log up.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

/* Random lowercase letters and digits, for names that must not repeat. */
void
state_random(char *out, size_t n)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[64];
	size_t i;
	int fd;

	if (n == 0)
		return;
	if (n - 1 > sizeof raw)
		n = sizeof raw + 1;
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) == -1 ||
	    read(fd, raw, n - 1) != (ssize_t)(n - 1))
		fatal("/dev/urandom");
	close(fd);
	for (i = 0; i + 1 < n; i++)
		out[i] = chars[raw[i] % (sizeof chars - 1)];
	out[n - 1] = '\0';
}

/* The project's name as a slug: lowercase letters, digits and '-'. */
static void
state_slug(const char *project, char *slug, size_t n)
{
	const char *base = strrchr(project, '/');
	size_t o = 0;

	base = base != NULL && base[1] != '\0' ? base + 1 : project;
	for (; *base != '\0' && o + 1 < n && o < 24; base++) {
		char c = *base;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			slug[o++] = c;
		else if (o > 0 && slug[o - 1] != '-')
			slug[o++] = '-';
	}
	while (o > 0 && slug[o - 1] == '-')
		o--;
	if (o == 0)
		o = (size_t)snprintf(slug, n, "project");
	slug[o] = '\0';
}

/*
 * Where this run's state goes (nothing is made yet: --dry-run shows the
 * plan). project is the project's resolved path.
 */
int
state_plan(struct host_state *s, const struct config *cfg, const char *project, struct buf *err)
{
	char stamp[32], rnd[7], *hash;
	time_t now = time(NULL);
	struct tm tm;

	memset(s, 0, sizeof *s);
	if (cfg->wrapper.state_state_dir != NULL)
		s->root = host_expand(cfg->wrapper.state_state_dir);
	else {
		char *xdg = host_xdg("XDG_STATE_HOME", ".local/state");

		s->root = xasprintf("%s/opencode-sandbox", xdg);
		free(xdg);
	}
	if (s->root[0] != '/') {
		buf_printf(err, "state directory %s: not an absolute path", s->root);
		return -1;
	}
	s->source = xstrdup(project);
	state_slug(project, s->slug, sizeof s->slug);
	hash = host_sha256_hex(project, strlen(project));
	hash[12] = '\0';
	s->project = xasprintf("%s/projects/%s-%s", s->root, s->slug, hash);
	free(hash);
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	state_random(rnd, sizeof rnd);
	snprintf(s->run_id, sizeof s->run_id, "%s-%s", stamp, rnd);
	s->run = xasprintf("%s/runs/%s", s->project, s->run_id);
	s->logs = xasprintf("%s/logs", s->run);
	s->scratch = xasprintf("%s/scratch", s->run);
	s->audit = xasprintf("%s/%s", s->logs, HOST_AUDIT_FILE);
	return 0;
}

/*
 * Make the directories. The project's and the run's are the user's alone
 * (0700); logs/ is 0711 so that egressd, another uid in the container,
 * can open the audit file sandbox-init makes there, and list nothing.
 */
int
state_create(const struct host_state *s, struct buf *err)
{
	const char *dirs[] = {s->project, s->run, s->scratch};
	char *p;
	size_t i;

	if (host_mkdirs(s->root, 0700) == -1) {
		buf_printf(err, "%s: %s", s->root, strerror(errno));
		return -1;
	}
	for (i = 0; i < EG_NELEM(dirs); i++)
		if (host_mkdirs(dirs[i], 0700) == -1 || chmod(dirs[i], 0700) == -1) {
			buf_printf(err, "%s: %s", dirs[i], strerror(errno));
			return -1;
		}
	if (mkdir(s->logs, 0711) == -1 || chmod(s->logs, 0711) == -1) {
		buf_printf(err, "%s: %s", s->logs, strerror(errno));
		return -1;
	}
	/* Which project this is, for a person looking at the state directory. */
	p = xasprintf("%s/project", s->project);
	if (access(p, F_OK) == -1) {
		char *line = xasprintf("%s\n", s->source);

		if (host_write_file(p, line, strlen(line), 0600) == -1) {
			buf_printf(err, "%s: %s", p, strerror(errno));
			free(line);
			free(p);
			return -1;
		}
		free(line);
	}
	free(p);
	return 0;
}

void
state_free(struct host_state *s)
{
	free(s->root);
	free(s->source);
	free(s->project);
	free(s->run);
	free(s->logs);
	free(s->scratch);
	free(s->audit);
	memset(s, 0, sizeof *s);
}

/*
 * rm -r of a directory this run made, without following a symbolic link
 * anywhere in it (the payload could have placed one in the staged home).
 * 0, or -1 when something was left.
 */
static int
state_remove_at(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) == -1 && errno != ENOENT ? -1 : 0;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (state_remove_at(dirfd(d), de->d_name) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		rc = -1;
	return rc;
}

int
state_remove_tree(const char *path)
{
	return state_remove_at(AT_FDCWD, path);
}

/*
 * The audit log in numbers: requests (http, websocket and tcp lines, and
 * connect lines but for the allowed tunnels egressd intercepted, whose
 * requests have http lines of their own), and of the decisions (those and
 * tls and packet lines) how many were blocked or flagged. DNS lookups are
 * not counted: they are not requests.
 */
void
state_summarize(const char *path, struct state_summary *sum)
{
	const char *event, *action, *tls;
	char line[65536];
	int request;
	json_t *j;
	FILE *f;

	memset(sum, 0, sizeof *sum);
	if ((f = fopen(path, "re")) == NULL)
		return;
	sum->readable = 1;
	while (fgets(line, sizeof line, f) != NULL) {
		if ((j = json_loads(line, 0, NULL)) == NULL)
			continue;
		sum->lines++;
		event = json_string_value(json_object_get(j, "event"));
		action = json_string_value(json_object_get(j, "action"));
		tls = json_string_value(json_object_get(j, "tls"));
		if (event == NULL || action == NULL) {
			json_decref(j);
			continue;
		}
		request = strcmp(event, "http") == 0 || strcmp(event, "websocket") == 0 ||
		          strcmp(event, "tcp") == 0 ||
		          (strcmp(event, "connect") == 0 &&
		           !(strcmp(action, "allow") == 0 && tls != NULL &&
		             strcmp(tls, "intercept") == 0));
		if (request)
			sum->requests++;
		if (request || strcmp(event, "tls") == 0 || strcmp(event, "packet") == 0) {
			if (strcmp(action, "block") == 0)
				sum->blocked++;
			else if (strcmp(action, "flag") == 0)
				sum->flagged++;
		}
		json_decref(j);
	}
	fclose(f);
}
