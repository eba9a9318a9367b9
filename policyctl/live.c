/*
 * The running egressd, asked over its control socket (docs/control.md):
 * which socket (--control, else $EGRESSD_CONTROL, else the image's
 * /run/opencode-sandbox/egressd.sock), one JSON request line sent, one
 * answer line read back within a time limit. A socket that is there but
 * does not answer is an error, never a reason to answer from another
 * policy; a missing one is told apart, so that explain can fall back to
 * the embedded default only where no egressd was named.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policyctl.h"

#define LIVE_ANSWER_MAX (16 * 1024 * 1024)
#define LIVE_TIMEOUT_MS 30000 /* an explain may wait for the resolver */
#define LIVE_BUSY_TRIES 6     /* egressd said "busy": try again, waiting longer each time */

/* The socket to ask; *named: the user named it (flag or environment). */
const char *
live_path(const struct policyctl *c, int *named)
{
	const char *env;

	*named = 1;
	if (c->control != NULL)
		return c->control;
	if ((env = getenv("EGRESSD_CONTROL")) != NULL && *env != '\0')
		return env;
	*named = 0;
	return LIVE_DEFAULT_PATH;
}

/* Whether something is at path (a socket, or anything connect would refuse). */
int
live_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 || errno != ENOENT;
}

static int
live_connect(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd, saved;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		snprintf(err, errlen, "the path is too long for a Unix socket");
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		saved = errno;
		snprintf(err, errlen, "connect: %s", strerror(saved));
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int64_t
live_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send the request line, read the answer line; NULL with err. */
static char *
live_exchange(int fd, const char *line, size_t len, char *err, size_t errlen)
{
	struct buf in;
	struct pollfd pfd = {fd, POLLIN, 0};
	int64_t deadline = live_now_ms() + LIVE_TIMEOUT_MS, left;
	char chunk[65536], *nl;
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		if ((n = send(fd, line + off, len - off, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "send: %s", strerror(errno));
			return NULL;
		}
		off += (size_t)n;
	}
	buf_init(&in);
	for (;;) {
		if ((left = deadline - live_now_ms()) <= 0) {
			snprintf(err, errlen, "no answer within %d seconds",
			         LIVE_TIMEOUT_MS / 1000);
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if ((n = read(fd, chunk, sizeof chunk)) < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "%s before a whole answer",
			         n == 0 ? "the connection closed" : strerror(errno));
			break;
		}
		buf_add(&in, chunk, (size_t)n);
		if ((nl = memchr(in.data, '\n', in.len)) != NULL) {
			*nl = '\0';
			return buf_release(&in);
		}
		if (in.len > LIVE_ANSWER_MAX) {
			snprintf(err, errlen, "the answer is over %d bytes", LIVE_ANSWER_MAX);
			break;
		}
	}
	buf_free(&in);
	return NULL;
}

/*
 * Ask the egressd at path: send one request line (a JSON object, without
 * its newline), return the answer's object. NULL with err when there is
 * no answer; *absent says nothing was at path at all. An answer that is
 * an error ({"ok": false}) is returned as it is, except "busy", which is
 * asked again a few times first.
 */
json_t *
live_ask(const char *path, const char *req, char *err, size_t errlen, int *absent)
{
	json_error_t jerr;
	json_t *ans = NULL, *code;
	char *line, *msg;
	int fd, i;

	*absent = 0;
	msg = xasprintf("%s\n", req);
	for (i = 0; i < LIVE_BUSY_TRIES; i++) {
		if (i > 0)
			usleep((useconds_t)(50000 << i));
		json_decref(ans);
		ans = NULL;
		if ((fd = live_connect(path, err, errlen)) == -1) {
			*absent = errno == ENOENT;
			break;
		}
		line = live_exchange(fd, msg, strlen(msg), err, errlen);
		close(fd);
		if (line == NULL)
			break;
		ans = json_loads(line, 0, &jerr);
		free(line);
		if (ans == NULL || !json_is_object(ans)) {
			snprintf(err, errlen, "the answer is not a JSON object");
			json_decref(ans);
			ans = NULL;
			break;
		}
		code = json_object_get(ans, "code");
		if (!json_is_string(code) || strcmp(json_string_value(code), "busy") != 0)
			break;
	}
	free(msg);
	return ans;
}

/* A string member, or def when it is absent or not a string. */
const char *
live_str(const json_t *o, const char *key, const char *def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : def;
}

/* An answer's error, for stderr: "CODE: message". */
void
live_print_error(const char *path, const json_t *ans)
{
	fprintf(stderr, "policyctl: egressd (%s) refused the request: %s: %s\n", path,
	        live_str(ans, "code", "error"), live_str(ans, "error", "no reason given"));
}
