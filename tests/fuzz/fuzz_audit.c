/*
 * Fuzz target for the audit writer: hostile event strings (split on NUL
 * and 0x01 bytes into fields) through audit_write on a memfd, optionally
 * after a partial tail; the JSON escaping of the raw bytes and the written
 * line must both parse, and the path must never carry a query string.
 */
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "audit.h"

/* Not CHECK(): the checks have side effects and must survive NDEBUG. */
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			abort();                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy, *f[8], buf[1 << 17];
	struct audit_event ev;
	struct gql_result g;
	struct audit *a;
	json_error_t jerr;
	json_t *j;
	size_t i, n = 0;
	ssize_t r;
	int fd;

	static int init;

	if (!init) {
		log_init("fuzz", LOG_LVL_ERR);
		init = 1;
	}
	if (size > 60000)
		return 0;
	copy = malloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	f[n++] = copy;
	for (i = 0; i < size && n < 8; i++)
		if (copy[i] == '\0' || copy[i] == '\x01') {
			copy[i] = '\0';
			f[n++] = copy + i + 1;
		}
	while (n < 8)
		f[n++] = NULL;
	/* json_escape on the raw bytes. */
	{
		struct buf b;
		buf_init(&b);
		json_escape(&b, (const char *)data, size);
		j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		CHECK(j != NULL && json_is_string(j));
		json_decref(j);
		buf_free(&b);
	}
	fd = memfd_create("audit", MFD_CLOEXEC);
	CHECK(fd != -1);
	if (size > 0 && data[0] == 'P') {
		CHECK(write(fd, data, size > 100 ? 100 : size) >= 0);
		/* A partial tail costs a 20 ms settle wait: keep it rare. */
		if (size < 2 || data[1] != '!')
			CHECK(write(fd, "\n", 1) == 1);
	}
	a = audit_open_fd(fd, NULL, 0);
	CHECK(a != NULL);
	audit_event_init(&ev);
	ev.event = f[0];
	ev.host = f[1];
	ev.path = f[2];
	ev.reason = f[3];
	ev.rule = f[4];
	ev.error = f[5];
	ev.qname = f[6];
	ev.method = f[7];
	ev.port = size > 2 ? data[1] : -1;
	memset(&g, 0, sizeof g);
	g.op = size % 5;
	if (f[3] != NULL)
		snprintf(g.name, sizeof g.name, "%s", f[3]);
	ev.graphql = &g;
	CHECK(audit_write(a, &ev) == 0);
	r = pread(fd, buf, sizeof buf, 0);
	CHECK(r > 0 && buf[r - 1] == '\n');
	/* The last line is ours and must parse; the path must hold no '?'. */
	for (i = (size_t)r - 1; i > 0 && buf[i - 1] != '\n'; i--)
		;
	j = json_loadb(buf + i, (size_t)r - 1 - i, 0, &jerr);
	CHECK(j != NULL);
	if (json_object_get(j, "path"))
		CHECK(strchr(json_string_value(json_object_get(j, "path")), '?') == NULL);
	json_decref(j);
	audit_close(a);
	free(copy);
	return 0;
}
