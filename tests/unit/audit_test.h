/*
 * What the audit writer's two test programs share: a private temp dir,
 * reading a written file back as lines, recomputing the SHA-256 chain with
 * OpenSSL, and small JSON accessors.
 */
#ifndef AUDIT_TEST_H
#define AUDIT_TEST_H

#define EG_UNUSED __attribute__((unused))

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "audit.h"

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"

static char tmpdir[] = "/tmp/test_audit.XXXXXX";

struct lines {
	char **p;
	size_t *len;
	size_t n;
	char *data;
};

static EG_UNUSED int
setup_dir(void **state)
{
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static EG_UNUSED int
teardown_dir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static EG_UNUSED char *
tpath(const char *name)
{
	static char path[256];

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

static EG_UNUSED void
sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0, i;

	assert_int_equal(EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_int_equal(mdlen, 32);
	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static EG_UNUSED void
write_raw(const char *path, const void *p, size_t len)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd != -1);
	assert_int_equal(write(fd, p, len), (ssize_t)len);
	close(fd);
}

/* Read a file and split it at newlines; a last line without one counts. */
static EG_UNUSED void
read_lines(const char *path, struct lines *l)
{
	struct stat st;
	size_t i, start;
	int fd;

	memset(l, 0, sizeof *l);
	fd = open(path, O_RDONLY);
	assert_true(fd != -1);
	assert_int_equal(fstat(fd, &st), 0);
	l->data = xmalloc((size_t)st.st_size + 1);
	assert_int_equal(read(fd, l->data, (size_t)st.st_size), st.st_size);
	close(fd);
	l->data[st.st_size] = '\0';
	l->p = xcalloc((size_t)st.st_size + 1, sizeof *l->p);
	l->len = xcalloc((size_t)st.st_size + 1, sizeof *l->len);
	for (i = start = 0; i < (size_t)st.st_size; i++) {
		if (l->data[i] == '\n') {
			l->p[l->n] = l->data + start;
			l->len[l->n++] = i - start;
			start = i + 1;
		}
	}
	if (start < (size_t)st.st_size) {
		l->p[l->n] = l->data + start;
		l->len[l->n++] = (size_t)st.st_size - start;
	}
}

static EG_UNUSED void
lines_free(struct lines *l)
{
	free(l->data);
	free(l->p);
	free(l->len);
}

static EG_UNUSED json_t *
parse(const char *p, size_t len)
{
	json_error_t jerr;

	return json_loadb(p, len, JSON_PRESERVE_ORDER, &jerr);
}

/*
 * Check the chain of a whole file: line 1 holds zeros, every other line the
 * hash of the one before. Lines that are not JSON (partial) are hashed but
 * not checked. Returns the first line whose prev is wrong, or 0, and counts
 * the JSON lines in *good.
 */
static EG_UNUSED size_t
chain_break(const struct lines *l, size_t *good)
{
	char want[65] = ZEROS;
	json_t *j, *prev;
	size_t i;
	int ok;

	*good = 0;
	for (i = 0; i < l->n; i++) {
		if ((j = parse(l->p[i], l->len[i])) != NULL) {
			prev = json_object_get(j, "prev");
			ok = json_is_string(prev) && strcmp(json_string_value(prev), want) == 0;
			json_decref(j);
			if (!ok)
				return i + 1;
			(*good)++;
		}
		sha256_hex(l->p[i], l->len[i], want);
	}
	return 0;
}

/* The whole chain holds and has this many JSON lines. */
static EG_UNUSED void
assert_chain(const struct lines *l, size_t want_good)
{
	size_t good, bad;

	if ((bad = chain_break(l, &good)) != 0)
		fail_msg("line %zu: prev does not chain", bad);
	assert_int_equal(good, want_good);
}

static EG_UNUSED struct audit *
open_ok(const char *path)
{
	struct audit *a;
	char err[256] = "";

	a = audit_open(path, err, sizeof err);
	if (a == NULL)
		fail_msg("audit_open %s: %s", path, err);
	return a;
}

static EG_UNUSED void
write_simple(struct audit *a, const char *host)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "http";
	ev.action = "allow";
	ev.host = host;
	assert_int_equal(audit_write(a, &ev), 0);
}

/* Write one event to a new file and return its only line, parsed. */
static EG_UNUSED json_t *
one_line(const char *name, const struct audit_event *ev)
{
	struct audit *a;
	struct lines l;
	json_t *j;

	a = open_ok(tpath(name));
	assert_int_equal(audit_write(a, ev), 0);
	audit_close(a);
	read_lines(tpath(name), &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.data[l.len[0]], '\n');
	j = parse(l.p[0], l.len[0]);
	lines_free(&l);
	assert_non_null(j);
	return j;
}

static EG_UNUSED void
assert_keys(json_t *j, const char *const *keys, size_t n)
{
	void *it;
	size_t i = 0;

	for (it = json_object_iter(j); it != NULL; it = json_object_iter_next(j, it), i++) {
		if (i >= n)
			fail_msg("extra key %s", json_object_iter_key(it));
		if (strcmp(json_object_iter_key(it), keys[i]) != 0)
			fail_msg("key %zu is %s, want %s", i, json_object_iter_key(it), keys[i]);
	}
	assert_int_equal(i, n);
}

static EG_UNUSED const char *
sval(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static EG_UNUSED json_int_t
ival(json_t *j, const char *key)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return json_integer_value(v);
}

/* Let path grow by room more bytes (the file size limit); no limit when room < 0. */
static EG_UNUSED void
file_room(const char *path, off_t room)
{
	struct rlimit rl;
	struct stat st;

	getrlimit(RLIMIT_FSIZE, &rl);
	if (room < 0) {
		rl.rlim_cur = rl.rlim_max;
	} else {
		stat(path, &st);
		rl.rlim_cur = (rlim_t)(st.st_size + room);
	}
	setrlimit(RLIMIT_FSIZE, &rl);
}

/* The child pid exited with 0. */
static EG_UNUSED void
child_ok(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#endif
