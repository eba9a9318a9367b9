/*
 * Unit tests for proxy/http/http.c and proxy/http/chunked.c: the request and response
 * vectors of tests/data/http/ (smuggling attempts among them), each parsed
 * whole and a byte at a time with the same outcome; serialisation (hop-by-hop fields gone, Via added, Host from the target,
 * framing re-stated) and round trips through the parser; the chunked
 * decoder over every split of its input and the chunk writer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"
#include "tsv.h"

/* A request method's id, as the engine passes it to the response parser. */
static enum http_method
method_of(const char *name)
{
	return http_method_id(name, strlen(name));
}

/* Append the unescaped form of s[0..len) (see the .tsv headers). */
static void
unescape(struct buf *out, const char *s, size_t len)
{
	const char *end = s + len, *p, *text;
	unsigned long n, i;
	unsigned int x;
	int depth;
	char *num;

	while (s < end) {
		if (*s != '\\') {
			buf_addc(out, *s++);
			continue;
		}
		s++;
		switch (*s) {
		case 'r':
			buf_addc(out, '\r');
			break;
		case 'n':
			buf_addc(out, '\n');
			break;
		case 't':
			buf_addc(out, '\t');
			break;
		case '0':
			buf_addc(out, '\0');
			break;
		case 'x':
			assert_int_equal(sscanf(s + 1, "%2x", &x), 1);
			buf_addc(out, (char)x);
			s += 2;
			break;
		case '{':
			n = strtoul(s + 1, &num, 10);
			assert_int_equal(*num, ':');
			text = num + 1;
			for (p = text, depth = 1; depth > 0; p++) {
				assert_true(p < end);
				if (p[0] == '\\' && p[1] == '{') {
					depth++;
					p++;
				} else if (p[0] == '\\')
					p++;
				else if (p[0] == '}')
					depth--;
			}
			for (i = 0; i < n; i++)
				unescape(out, text, (size_t)(p - 1 - text));
			s = p - 1;
			break;
		default:
			buf_addc(out, *s);
			break;
		}
		s++;
	}
}

/* Read a .tsv of tests/data/http into rows of nfields fields. */
static char ***
load(const char *name, size_t nfields, size_t *nrows)
{
	char path[512], ***rows = NULL, **f;
	size_t n = 0, i;
	struct tsv t;

	snprintf(path, sizeof path, "http/%s", name);
	tsv_open(&t, path, (int)nfields, (int)nfields);
	while ((f = tsv_next(&t)) != NULL) {
		rows = xreallocarray(rows, n + 1, sizeof *rows);
		rows[n] = xcalloc(nfields, sizeof **rows);
		for (i = 0; i < nfields; i++)
			rows[n][i] = xstrdup(f[i]);
		n++;
	}
	*nrows = n;
	return rows;
}

static void
rows_free(char ***rows, size_t n, size_t nfields)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < nfields; j++)
			free(rows[i][j]);
		free(rows[i]);
	}
	free(rows);
}

/* The buffer as a string, terminated even when nothing was added. */
static const char *
str(struct buf *b)
{
	buf_add(b, "", 0);
	return b->data;
}

static const char *
framing_name(const struct http_msg *msg, char *tmp, size_t len)
{
	switch (msg->body) {
	case HTTP_BODY_NONE:
		return "none";
	case HTTP_BODY_LENGTH:
		snprintf(tmp, len, "length:%llu", (unsigned long long)msg->length);
		return tmp;
	case HTTP_BODY_CHUNKED:
		return "chunked";
	default:
		return "close";
	}
}

/*
 * Decode a chunked body fed in pieces of at most step bytes. Returns 200
 * when done, 0 when more is needed, 400 on an error.
 */
static int
decode(const char *data, size_t len, size_t step, struct buf *body)
{
	enum chunked_result r = CHUNKED_MORE;
	struct chunked dec;
	const char *out;
	size_t off = 0, piece, used, outlen, avail = 0;

	chunked_init(&dec, NULL);
	while (r == CHUNKED_MORE && avail < len) {
		/* The caller's buffer grows by step bytes; unused bytes stay in it. */
		avail = avail + step > len ? len : avail + step;
		while (r == CHUNKED_MORE && off < avail) {
			piece = avail - off;
			r = chunked_feed(&dec, data + off, piece, &used, &out, &outlen);
			assert_true(used <= piece);
			if (outlen > 0) {
				assert_true(out >= data + off && out + outlen <= data + off + used);
				buf_add(body, out, outlen);
			}
			off += used;
			if (r == CHUNKED_MORE && used == 0)
				fail_msg("no progress");
		}
	}
	if (r == CHUNKED_ERROR) {
		assert_non_null(dec.error);
		return 400;
	}
	if (r == CHUNKED_DONE)
		assert_int_equal(dec.body_len, body->len);
	return r == CHUNKED_DONE ? 200 : 0;
}

/* Parse a request and its body; returns the outcome as a status. */
static int
run_request(const char *data, size_t len, int bytewise, struct http_msg *msg, struct buf *body)
{
	enum http_parse r = HTTP_PARSE_INCOMPLETE;
	char *copy;
	size_t n;

	http_msg_init(msg);
	if (bytewise) {
		/* A fresh copy each time: the parser keeps offsets, not pointers. */
		for (n = 0; n <= len && r == HTTP_PARSE_INCOMPLETE; n++) {
			copy = xmalloc(n + 1);
			memcpy(copy, data, n);
			r = http_parse_request(copy, n, NULL, msg);
			free(copy);
		}
	} else
		r = http_parse_request(data, len, NULL, msg);
	if (r == HTTP_PARSE_ERROR) {
		assert_non_null(msg->error);
		assert_null(msg->head);
		return msg->error_status;
	}
	if (r == HTTP_PARSE_INCOMPLETE)
		return 0;
	assert_true(msg->head_len <= len);
	data += msg->head_len;
	len -= msg->head_len;
	if (msg->body == HTTP_BODY_CHUNKED)
		return decode(data, len, bytewise ? 1 : len, body);
	if (msg->body == HTTP_BODY_LENGTH) {
		if (len < msg->length)
			return 0;
		buf_add(body, data, (size_t)msg->length);
	}
	return 200;
}

static void
test_request_vectors(void **state)
{
	struct http_msg whole, bytes;
	struct buf in, body, body2;
	char ***rows, tmp[64];
	size_t n, i, smuggle = 0;
	int st, st2;

	rows = load("requests.tsv", 5, &n);
	assert_true(n >= 40);
	for (i = 0; i < n; i++) {
		buf_init(&in);
		buf_init(&body);
		buf_init(&body2);
		unescape(&in, rows[i][4], strlen(rows[i][4]));
		st = run_request(in.data, in.len, 0, &whole, &body);
		if (st != atoi(rows[i][1]))
			fail_msg("%s: status %d, want %s (%s)", rows[i][0], st, rows[i][1],
			         whole.error != NULL ? whole.error : "no error");
		if (strcmp(rows[i][2], "-") != 0 && whole.error == NULL &&
		    strcmp(framing_name(&whole, tmp, sizeof tmp), rows[i][2]) != 0)
			fail_msg("%s: framing %s, want %s", rows[i][0], tmp, rows[i][2]);
		if (strcmp(rows[i][3], "-") != 0 && strcmp(str(&body), rows[i][3]) != 0)
			fail_msg("%s: body \"%s\"", rows[i][0], str(&body));

		/* The same bytes arriving one at a time read the same way. */
		st2 = run_request(in.data, in.len, 1, &bytes, &body2);
		if (st2 != st)
			fail_msg("%s: bytewise status %d, whole %d", rows[i][0], st2, st);
		assert_int_equal(bytes.head_len, whole.head_len);
		assert_int_equal(bytes.body, whole.body);
		assert_int_equal(bytes.length, whole.length);
		if (whole.method != NULL) {
			assert_string_equal(bytes.method, whole.method);
			assert_string_equal(bytes.target, whole.target);
			assert_int_equal(bytes.method_id, whole.method_id);
			assert_int_equal(whole.method_id, method_of(whole.method));
		}
		assert_int_equal(body2.len, body.len);
		if (body.len > 0)
			assert_memory_equal(body2.data, body.data, body.len);
		if (strncmp(rows[i][0], "smuggle_", 8) == 0) {
			assert_true(st >= 400);
			smuggle++;
		}
		http_msg_free(&whole);
		http_msg_free(&bytes);
		buf_free(&in);
		buf_free(&body);
		buf_free(&body2);
	}
	assert_true(smuggle >= 20);
	rows_free(rows, n, 5);
}

static void
test_response_vectors(void **state)
{
	struct http_msg whole, bytes;
	enum http_parse r, r2;
	char ***rows, tmp[64];
	struct buf in;
	size_t n, i, k;
	int st;

	rows = load("responses.tsv", 6, &n);
	assert_true(n >= 20);
	for (i = 0; i < n; i++) {
		buf_init(&in);
		unescape(&in, rows[i][5], strlen(rows[i][5]));
		http_msg_init(&whole);
		r = http_parse_response(in.data, in.len, NULL, method_of(rows[i][1]), &whole);
		st = r == HTTP_PARSE_DONE ? 200 : r == HTTP_PARSE_ERROR ? whole.error_status : 0;
		if (st != atoi(rows[i][2]))
			fail_msg("%s: status %d, want %s (%s)", rows[i][0], st, rows[i][2],
			         whole.error != NULL ? whole.error : "no error");
		if (r == HTTP_PARSE_DONE) {
			if (strcmp(framing_name(&whole, tmp, sizeof tmp), rows[i][3]) != 0)
				fail_msg("%s: framing %s, want %s", rows[i][0], tmp, rows[i][3]);
			if (strcmp(rows[i][4], "-") != 0)
				assert_int_equal(!!(whole.flags & HTTP_F_KEEP_ALIVE),
				                 atoi(rows[i][4]));
		}
		http_msg_init(&bytes);
		r2 = HTTP_PARSE_INCOMPLETE;
		for (k = 0; k <= in.len && r2 == HTTP_PARSE_INCOMPLETE; k++)
			r2 = http_parse_response(in.data, k, NULL, method_of(rows[i][1]), &bytes);
		assert_int_equal(r2, r);
		assert_int_equal(bytes.error_status, whole.error_status);
		assert_int_equal(bytes.body, whole.body);
		assert_int_equal(bytes.status, whole.status);
		http_msg_free(&whole);
		http_msg_free(&bytes);
		buf_free(&in);
	}
	rows_free(rows, n, 6);
}

/* Parse a complete request head that must be valid. */
static void
parse_ok(const char *text, struct http_msg *msg)
{
	http_msg_init(msg);
	if (http_parse_request(text, strlen(text), NULL, msg) != HTTP_PARSE_DONE)
		fail_msg("%s: %s", text, msg->error);
}

static void
test_serialize_request(void **state)
{
	struct http_msg msg;
	struct buf out;

	parse_ok("GET http://up.example:8080/p?q=1 HTTP/1.1\r\n"
	         "Host: client-said.example\r\n"
	         "User-Agent: t\r\n"
	         "Connection: keep-alive, X-Secret\r\n"
	         "X-Secret: 1\r\n"
	         "Keep-Alive: timeout=5\r\n"
	         "Proxy-Connection: keep-alive\r\n"
	         "Proxy-Authorization: Basic eA==\r\n"
	         "TE: trailers\r\n"
	         "Trailer: X-Sum\r\n"
	         "Upgrade: websocket\r\n"
	         "Via: 1.0 other\r\n"
	         "Accept: */*\r\n"
	         "Via: 1.1 third\r\n"
	         "\r\n",
	         &msg);
	assert_true(msg.flags & HTTP_F_KEEP_ALIVE);
	assert_false(msg.flags & HTTP_F_UPGRADE);
	buf_init(&out);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_KEEP_ALIVE, &out), 0);
	assert_string_equal(str(&out), "GET /p?q=1 HTTP/1.1\r\n"
	                               "Host: up.example:8080\r\n"
	                               "User-Agent: t\r\n"
	                               "Accept: */*\r\n"
	                               "Via: 1.0 other, 1.1 third, 1.1 egressd\r\n"
	                               "\r\n");
	/* The caller's target and host win; without keep-alive, close. */
	buf_reset(&out);
	assert_int_equal(http_request_serialize(&msg, "/other", "h.example", 0, &out), 0);
	assert_true(strncmp(out.data, "GET /other HTTP/1.1\r\nHost: h.example\r\n", 38) == 0);
	assert_non_null(strstr(out.data, "\r\nConnection: close\r\n\r\n"));
	/* Values that would split the head are refused, nothing appended. */
	buf_reset(&out);
	assert_int_equal(http_request_serialize(&msg, "/a\r\nX: 1", NULL, 0, &out), -1);
	assert_int_equal(http_request_serialize(&msg, NULL, "a b", 0, &out), -1);
	assert_int_equal(http_request_serialize(&msg, "", NULL, 0, &out), -1);
	assert_int_equal(out.len, 0);
	http_msg_free(&msg);
	buf_free(&out);
}

static void
test_serialize_request_framing(void **state)
{
	struct http_msg msg;
	struct buf out;

	buf_init(&out);
	parse_ok("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	         "Expect: 100-continue\r\n\r\n",
	         &msg);
	assert_true(msg.flags & HTTP_F_EXPECT_CONTINUE);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_KEEP_ALIVE, &out), 0);
	assert_string_equal(str(&out), "POST / HTTP/1.1\r\nHost: a\r\n"
	                               "Expect: 100-continue\r\n"
	                               "Via: 1.1 egressd\r\n"
	                               "Transfer-Encoding: chunked\r\n\r\n");
	http_msg_free(&msg);

	/* HTTP/1.0: Host from the target, expectation dropped, length kept. */
	buf_reset(&out);
	parse_ok("PUT http://b:81/x HTTP/1.0\r\nContent-Length: 000012\r\n"
	         "Expect: 100-continue\r\n\r\n",
	         &msg);
	assert_false(msg.flags & HTTP_F_EXPECT_CONTINUE);
	assert_false(msg.flags & HTTP_F_KEEP_ALIVE);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, 0, &out), 0);
	assert_string_equal(str(&out), "PUT /x HTTP/1.1\r\nHost: b:81\r\n"
	                               "Via: 1.0 egressd\r\n"
	                               "Connection: close\r\n"
	                               "Content-Length: 12\r\n\r\n");
	http_msg_free(&msg);

	/* Origin-form without a Host to go by cannot be sent. */
	buf_reset(&out);
	parse_ok("GET /x HTTP/1.0\r\n\r\n", &msg);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, 0, &out), -1);
	assert_int_equal(http_request_serialize(&msg, NULL, "c", 0, &out), 0);
	assert_true(strncmp(out.data, "GET /x HTTP/1.1\r\nHost: c\r\n", 26) == 0);
	http_msg_free(&msg);

	/* Origin-form inside TLS: Host comes from the client's field. */
	buf_reset(&out);
	parse_ok("GET /y HTTP/1.1\r\nHost: d.example\r\n\r\n", &msg);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_KEEP_ALIVE, &out), 0);
	assert_string_equal(str(&out),
	                    "GET /y HTTP/1.1\r\nHost: d.example\r\nVia: 1.1 egressd\r\n\r\n");
	http_msg_free(&msg);
	buf_free(&out);
}

static void
test_serialize_upgrade(void **state)
{
	struct http_msg msg;
	struct buf out;
	enum http_body body;
	const char *text;

	buf_init(&out);
	parse_ok("GET http://a/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
	         "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n",
	         &msg);
	assert_true(msg.flags & HTTP_F_UPGRADE);
	assert_string_equal(msg.upgrade, "websocket");
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_UPGRADE, &out), 0);
	assert_string_equal(str(&out), "GET /ws HTTP/1.1\r\nHost: a\r\n"
	                               "Sec-WebSocket-Key: k\r\n"
	                               "Via: 1.1 egressd\r\n"
	                               "Upgrade: websocket\r\n"
	                               "Connection: upgrade\r\n\r\n");
	/* Not asked for: the upgrade is stripped. */
	buf_reset(&out);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_KEEP_ALIVE, &out), 0);
	assert_null(strstr(out.data, "pgrade"));
	http_msg_free(&msg);

	/* Where egressd reads the frames, no extension is offered (permessage-deflate). */
	buf_reset(&out);
	parse_ok("GET http://a/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
	         "Upgrade: websocket\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
	         "Sec-WebSocket-Protocol: graphql-ws\r\n\r\n",
	         &msg);
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_UPGRADE, &out), 0);
	assert_non_null(strstr(out.data, "Sec-WebSocket-Extensions: permessage-deflate\r\n"));
	buf_reset(&out);
	assert_int_equal(
	    http_request_serialize(&msg, NULL, NULL, HTTP_SER_UPGRADE | HTTP_SER_NO_WS_EXT, &out),
	    0);
	assert_string_equal(str(&out), "GET /ws HTTP/1.1\r\nHost: a\r\n"
	                               "Sec-WebSocket-Protocol: graphql-ws\r\n"
	                               "Via: 1.1 egressd\r\n"
	                               "Upgrade: websocket\r\n"
	                               "Connection: upgrade\r\n\r\n");
	http_msg_free(&msg);

	buf_reset(&out);
	http_msg_init(&msg);
	text = "HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\n"
	       "Connection: upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";
	assert_int_equal(http_parse_response(text, strlen(text), NULL, HTTP_M_GET, &msg),
	                 HTTP_PARSE_DONE);
	assert_true(msg.flags & HTTP_F_UPGRADE);
	assert_int_equal(http_response_serialize(&msg, 11, HTTP_SER_UPGRADE, &out, &body), 0);
	assert_string_equal(str(&out), "HTTP/1.1 101 Switching\r\n"
	                               "Sec-WebSocket-Accept: x\r\n"
	                               "Via: 1.1 egressd\r\n"
	                               "Upgrade: websocket\r\n"
	                               "Connection: upgrade\r\n\r\n");
	assert_int_equal(body, HTTP_BODY_NONE);
	http_msg_free(&msg);
	buf_free(&out);
}

/* Serialise a response for a client version; check the head and framing. */
static void
response_case(const char *text, const char *method, int client, int flags, int want_rc,
              const char *want, enum http_body want_body)
{
	struct http_msg msg;
	struct buf out;
	enum http_body body = HTTP_BODY_NONE;

	http_msg_init(&msg);
	if (http_parse_response(text, strlen(text), NULL, method_of(method), &msg) !=
	    HTTP_PARSE_DONE)
		fail_msg("%s: %s", text, msg.error);
	buf_init(&out);
	assert_int_equal(http_response_serialize(&msg, client, flags, &out, &body), want_rc);
	if (want_rc == 0) {
		assert_string_equal(str(&out), want);
		assert_int_equal(body, want_body);
	} else
		assert_int_equal(out.len, 0);
	http_msg_free(&msg);
	buf_free(&out);
}

static void
test_serialize_response(void **state)
{
	const char *close_delim = "HTTP/1.1 200 OK\r\nServer: s\r\nKeep-Alive: x\r\n\r\n";
	const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	                      "Content-Length: 3\r\nTrailer: X\r\n\r\n";

	/* Close-delimited: chunked to HTTP/1.1 clients, which may keep going. */
	response_case(close_delim, "GET", 11, HTTP_SER_KEEP_ALIVE, 0,
	              "HTTP/1.1 200 OK\r\nServer: s\r\nVia: 1.1 egressd\r\n"
	              "Transfer-Encoding: chunked\r\n\r\n",
	              HTTP_BODY_CHUNKED);
	/* ... and close-delimited to HTTP/1.0 ones, whatever was asked. */
	response_case(
	    close_delim, "GET", 10, HTTP_SER_KEEP_ALIVE, 0,
	    "HTTP/1.1 200 OK\r\nServer: s\r\nVia: 1.1 egressd\r\nConnection: close\r\n\r\n",
	    HTTP_BODY_CLOSE);
	response_case(chunked, "GET", 11, 0, 0,
	              "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nConnection: close\r\n"
	              "Transfer-Encoding: chunked\r\n\r\n",
	              HTTP_BODY_CHUNKED);
	response_case(chunked, "GET", 10, HTTP_SER_KEEP_ALIVE, 0,
	              "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nConnection: close\r\n\r\n",
	              HTTP_BODY_CLOSE);
	/* Length, keep-alive to an HTTP/1.0 client said out loud. */
	response_case("HTTP/1.0 404 Not Found\r\nContent-Length: 2\r\nVia: 1.1 up\r\n\r\n", "GET",
	              10, HTTP_SER_KEEP_ALIVE, 0,
	              "HTTP/1.1 404 Not Found\r\nVia: 1.1 up, 1.0 egressd\r\n"
	              "Connection: keep-alive\r\nContent-Length: 2\r\n\r\n",
	              HTTP_BODY_LENGTH);
	/* HEAD and 304 keep their length; 204 has none. */
	response_case(
	    "HTTP/1.1 200 OK\r\nContent-Length: 77\r\n\r\n", "HEAD", 11, HTTP_SER_KEEP_ALIVE, 0,
	    "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 77\r\n\r\n", HTTP_BODY_NONE);
	response_case("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nETag: \"e\"\r\n\r\n",
	              "GET", 11, HTTP_SER_KEEP_ALIVE, 0,
	              "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nVia: 1.1 "
	              "egressd\r\nContent-Length: 5\r\n\r\n",
	              HTTP_BODY_NONE);
	response_case("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", "GET", 11,
	              HTTP_SER_KEEP_ALIVE, 0, "HTTP/1.1 204 No Content\r\nVia: 1.1 egressd\r\n\r\n",
	              HTTP_BODY_NONE);
	/* Interim responses carry no Connection; none reach an HTTP/1.0 client. */
	response_case("HTTP/1.1 100 Continue\r\n\r\n", "POST", 11, 0, 0,
	              "HTTP/1.1 100 Continue\r\nVia: 1.1 egressd\r\n\r\n", HTTP_BODY_NONE);
	response_case("HTTP/1.1 100 Continue\r\n\r\n", "POST", 10, 0, -1, NULL, HTTP_BODY_NONE);
	/* Transfer codings are re-stated before chunked; 1.0 cannot take them. */
	response_case(
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", 11, HTTP_SER_KEEP_ALIVE, 0,
	    "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    HTTP_BODY_CHUNKED);
	response_case("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "GET", 10, 0,
	              -1, NULL, HTTP_BODY_NONE);
	/* A status line without a reason gets an empty one. */
	response_case("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "GET", 11, HTTP_SER_KEEP_ALIVE,
	              0, "HTTP/1.1 200 \r\nVia: 1.1 egressd\r\nContent-Length: 0\r\n\r\n",
	              HTTP_BODY_LENGTH);
}

/* Serialised requests parse back to the same method, target and framing. */
static void
test_roundtrip(void **state)
{
	static const char *const reqs[] = {
	    "GET http://a.example/x?y HTTP/1.1\r\nHost: a.example\r\nX: 1\r\n\r\n",
	    "POST http://a.example:81/ HTTP/1.1\r\nHost: z\r\nContent-Length: 3\r\n\r\n",
	    ("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: "
	     "Transfer-Encoding\r\n\r\n"),
	    "PUT https://[::1]:8443/p HTTP/1.0\r\nContent-Length: 0\r\nVia: 1.0 x\r\n\r\n",
	    "OPTIONS * HTTP/1.1\r\nHost: a:1\r\n\r\n",
	    "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nProxy-Authorization: x\r\n\r\n",
	    "DELETE /r HTTP/1.1\r\nHost: h\r\nConnection: host\r\n\r\n",
	};
	struct http_msg msg, again;
	struct buf out;
	size_t i;

	for (i = 0; i < EG_NELEM(reqs); i++) {
		parse_ok(reqs[i], &msg);
		buf_init(&out);
		assert_int_equal(http_request_serialize(&msg, msg.target, NULL, 0, &out), 0);
		parse_ok(out.data, &again);
		assert_int_equal(again.head_len, out.len);
		assert_string_equal(again.method, msg.method);
		assert_string_equal(again.target, msg.target);
		assert_int_equal(again.body, msg.body);
		assert_int_equal(again.length, msg.length);
		assert_int_equal(again.version, 11);
		assert_false(again.flags & HTTP_F_KEEP_ALIVE);
		assert_non_null(http_msg_header(&again, "via"));
		assert_null(http_msg_header(&again, "Proxy-Authorization"));
		http_msg_free(&again);
		http_msg_free(&msg);
		buf_free(&out);
	}
}

static void
test_header_lookup(void **state)
{
	struct http_msg msg;

	parse_ok("GET http://a/ HTTP/1.1\r\nHost: a\r\nx-One:  v 1 \t\r\nX-ONE: v2\r\n"
	         "Connection: foo ,\tClose\r\n\r\n",
	         &msg);
	assert_string_equal(http_msg_header(&msg, "X-One"), "v 1");
	assert_string_equal(http_msg_header(&msg, "host"), "a");
	assert_null(http_msg_header(&msg, "X-Two"));
	assert_int_equal(msg.nheaders, 4);
	assert_string_equal(msg.headers[2].name, "X-ONE");
	assert_false(msg.flags & HTTP_F_KEEP_ALIVE);
	http_msg_free(&msg);

	assert_true(http_list_has("a, b ,c", "b"));
	assert_true(http_list_has(",,KEEP-alive", "keep-alive"));
	assert_false(http_list_has("closed", "close"));
	assert_false(http_list_has("x close", "close"));
	assert_false(http_list_has("", "close"));
}

/* A parsed or failed msg answers the same again and never reads further. */
static void
test_parse_again(void **state)
{
	const char *text = "GET /x HTTP/1.1\r\nHost: a\r\n\r\nGET /y HTTP/1.1\r\n";
	struct http_msg msg;

	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), NULL, &msg), HTTP_PARSE_DONE);
	assert_int_equal(msg.head_len, 28);
	assert_int_equal(http_parse_request(text, strlen(text), NULL, &msg), HTTP_PARSE_DONE);
	assert_int_equal(msg.head_len, 28);
	assert_string_equal(msg.target, "/x");
	http_msg_free(&msg);
	assert_null(msg.head);

	http_msg_init(&msg);
	assert_int_equal(http_parse_request("GET\n", 4, NULL, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(http_parse_request(text, strlen(text), NULL, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 400);
	assert_string_equal(msg.error, "bare LF");
	http_msg_free(&msg);

	http_msg_init(&msg);
	assert_int_equal(
	    http_parse_response("HTTP/1.1 200 OK\r\n\r\n", 19, NULL, HTTP_M_OTHER, &msg),
	    HTTP_PARSE_DONE);
	assert_int_equal(msg.body, HTTP_BODY_CLOSE);
	assert_int_equal(http_parse_response("xx", 2, NULL, HTTP_M_OTHER, &msg), HTTP_PARSE_DONE);
	http_msg_free(&msg);
}

/* Methods are known by number once parsed: exact, case-sensitive tokens only. */
static void
test_method_id(void **state)
{
	static const struct {
		const char *name;
		enum http_method id;
	} cases[] = {
	    {"GET", HTTP_M_GET},         {"HEAD", HTTP_M_HEAD},      {"POST", HTTP_M_POST},
	    {"PUT", HTTP_M_PUT},         {"DELETE", HTTP_M_DELETE},  {"CONNECT", HTTP_M_CONNECT},
	    {"OPTIONS", HTTP_M_OPTIONS}, {"TRACE", HTTP_M_TRACE},    {"PATCH", HTTP_M_PATCH},
	    {"get", HTTP_M_OTHER},       {"Connect", HTTP_M_OTHER},  {"GETS", HTTP_M_OTHER},
	    {"GE", HTTP_M_OTHER},        {"PROPFIND", HTTP_M_OTHER}, {"CONNECTX", HTTP_M_OTHER},
	};
	struct http_msg msg;
	char text[128];
	size_t i;

	for (i = 0; i < EG_NELEM(cases); i++) {
		assert_int_equal(method_of(cases[i].name), cases[i].id);
		snprintf(text, sizeof text, "%s %s HTTP/1.1\r\nHost: a:1\r\n\r\n", cases[i].name,
		         cases[i].id == HTTP_M_CONNECT ? "a:1" : "/x");
		parse_ok(text, &msg);
		assert_int_equal(msg.method_id, cases[i].id);
		assert_string_equal(msg.method, cases[i].name);
		http_msg_free(&msg);
	}
}

static void
test_keep_alive(void **state)
{
	static const struct {
		const char *text;
		int keep;
	} cases[] = {
	    {"GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 1},
	    {"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 0},
	    {"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
	     0},
	    {"GET /x HTTP/1.0\r\n\r\n", 0},
	    {"GET /x HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1},
	    {"GET /x HTTP/1.0\r\nConnection: te, KEEP-ALIVE\r\n\r\n", 1},
	    {"GET /x HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n", 0},
	};
	struct http_msg msg;
	size_t i;

	for (i = 0; i < EG_NELEM(cases); i++) {
		parse_ok(cases[i].text, &msg);
		assert_int_equal(!!(msg.flags & HTTP_F_KEEP_ALIVE), cases[i].keep);
		http_msg_free(&msg);
	}
}

static void
test_limits(void **state)
{
	struct http_limits lim = http_limits_default;
	const char *text = "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: 12345\r\n\r\n";
	struct http_msg msg;
	struct buf big;
	size_t i;

	lim.headers = 1;
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 431);
	lim = http_limits_default;
	lim.header_line = 7;
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 431);
	lim.header_line = 8;
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_DONE);
	http_msg_free(&msg);
	lim = http_limits_default;
	lim.start_line = 21;
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 414);
	lim.start_line = 22;
	lim.head = strlen(text);
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_DONE);
	http_msg_free(&msg);
	lim.head--;
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(text, strlen(text), &lim, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 431);

	/* An unfinished head past the limit is refused without its end. */
	buf_init(&big);
	buf_adds(&big, "GET http://a/ HTTP/1.1\r\n");
	for (i = 0; big.len <= http_limits_default.head; i++)
		buf_adds(&big, "X-Filler: 0123456789012345678901234567890123456789\r\n");
	http_msg_init(&msg);
	assert_int_equal(http_parse_request(big.data, big.len, NULL, &msg), HTTP_PARSE_ERROR);
	assert_int_equal(msg.error_status, 431);
	buf_free(&big);
}

/* Each split of a chunked body decodes to the same data. */
static void
test_chunked_splits(void **state)
{
	const char *in = "4;a=\"b\"\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n"
	                 "0\r\nX-T: v\r\n\r\nNEXT";
	struct chunked dec;
	const char *out;
	struct buf whole, part;
	size_t len = strlen(in), cut, off, used, outlen;
	enum chunked_result r;

	buf_init(&whole);
	assert_int_equal(decode(in, len, len, &whole), 200);
	assert_string_equal(str(&whole), "Wikipedia in\r\n\r\nchunks.");
	for (cut = 0; cut <= len; cut++) {
		buf_init(&part);
		chunked_init(&dec, NULL);
		off = 0;
		r = CHUNKED_MORE;
		while (r == CHUNKED_MORE && off < cut) {
			r = chunked_feed(&dec, in + off, cut - off, &used, &out, &outlen);
			buf_add(&part, out, outlen);
			off += used;
		}
		while (r == CHUNKED_MORE && off < len) {
			r = chunked_feed(&dec, in + off, len - off, &used, &out, &outlen);
			buf_add(&part, out, outlen);
			off += used;
		}
		assert_int_equal(r, CHUNKED_DONE);
		/* The bytes of the next message are left alone. */
		assert_string_equal(in + off, "NEXT");
		assert_string_equal(str(&part), whole.data);
		/* Done stays done. */
		assert_int_equal(chunked_feed(&dec, "x", 1, &used, &out, &outlen), CHUNKED_DONE);
		assert_int_equal(used, 0);
		buf_free(&part);
	}
	/* An error is sticky. */
	chunked_init(&dec, NULL);
	assert_int_equal(chunked_feed(&dec, "z\r\n", 3, &used, &out, &outlen), CHUNKED_ERROR);
	assert_string_equal(dec.error, "invalid chunk size");
	assert_int_equal(chunked_feed(&dec, "0\r\n\r\n", 5, &used, &out, &outlen), CHUNKED_ERROR);
	buf_free(&whole);
}

static void
test_chunked_write(void **state)
{
	char head[CHUNKED_HEAD_MAX], data[300];
	struct buf out, back;

	assert_int_equal(chunked_head(head, 0x1a), 4);
	assert_string_equal(head, "1a\r\n");
	assert_int_equal(chunked_head(head, UINT64_MAX), 18);
	memset(data, 'q', sizeof data);
	buf_init(&out);
	buf_init(&back);
	chunked_write(&out, "abc", 3);
	chunked_write(&out, "", 0);
	chunked_write(&out, data, sizeof data);
	chunked_write_last(&out);
	assert_true(strncmp(out.data, "3\r\nabc\r\n12c\r\nqq", 15) == 0);
	assert_int_equal(decode(out.data, out.len, 7, &back), 200);
	assert_int_equal(back.len, 3 + sizeof data);
	buf_free(&out);
	buf_free(&back);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_vectors),
	    cmocka_unit_test(test_response_vectors),
	    cmocka_unit_test(test_serialize_request),
	    cmocka_unit_test(test_serialize_request_framing),
	    cmocka_unit_test(test_serialize_upgrade),
	    cmocka_unit_test(test_serialize_response),
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_header_lookup),
	    cmocka_unit_test(test_parse_again),
	    cmocka_unit_test(test_method_id),
	    cmocka_unit_test(test_keep_alive),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_chunked_splits),
	    cmocka_unit_test(test_chunked_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
