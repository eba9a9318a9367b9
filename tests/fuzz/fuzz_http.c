/*
 * Fuzzes proxy/http/http.c and proxy/http/chunked.c. The first input byte picks the
 * target (request head, response head, chunked body, request head and its
 * chunked body), the second seeds the split points. Invariants, abort() on
 * violation: a head fed in random pieces reads as when fed whole; nothing
 * consumed past the input; a complete message re-serialised parses back
 * to the same method, target, status and framing; a chunked body decodes
 * to the same data however it is split, and re-chunked decodes again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define FUZZ_MAX_INPUT (32 * 1024)

static const enum http_method fuzz_methods[] = {HTTP_M_GET, HTTP_M_HEAD, HTTP_M_CONNECT,
                                                HTTP_M_POST, HTTP_M_OTHER};

static uint32_t
fuzz_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void
fuzz_check(int ok)
{
	if (!ok)
		abort();
}

/* Parse a head whole, then again as it grows in random steps. */
static enum http_parse
fuzz_parse(const char *data, size_t len, int request, enum http_method method,
           const struct http_limits *lim, struct http_msg *msg, uint32_t *seed)
{
	enum http_parse r, r2 = HTTP_PARSE_INCOMPLETE;
	struct http_msg again;
	size_t n = 0;

	http_msg_init(msg);
	if (request)
		r = http_parse_request(data, len, lim, msg);
	else
		r = http_parse_response(data, len, lim, method, msg);
	fuzz_check(r != HTTP_PARSE_DONE || (msg->head_len > 0 && msg->head_len <= len));
	fuzz_check(r != HTTP_PARSE_ERROR || (msg->error != NULL && msg->head == NULL));

	http_msg_init(&again);
	while (r2 == HTTP_PARSE_INCOMPLETE && n < len) {
		n += 1 + fuzz_rand(seed) % 64;
		if (n > len)
			n = len;
		if (request)
			r2 = http_parse_request(data, n, lim, &again);
		else
			r2 = http_parse_response(data, n, lim, method, &again);
	}
	if (len == 0)
		r2 = r;
	fuzz_check(r2 == r);
	fuzz_check(again.error_status == msg->error_status);
	fuzz_check(again.head_len == msg->head_len && again.body == msg->body &&
	           again.length == msg->length && again.status == msg->status &&
	           again.flags == msg->flags && again.nheaders == msg->nheaders);
	if (r == HTTP_PARSE_DONE && request)
		fuzz_check(strcmp(again.method, msg->method) == 0 &&
		           again.method_id == msg->method_id &&
		           strcmp(again.target, msg->target) == 0);
	http_msg_free(&again);
	return r;
}

static void
fuzz_request(const char *data, size_t len, uint32_t *seed)
{
	struct http_limits big = http_limits_default;
	struct http_msg msg, again;
	struct buf out;

	if (fuzz_parse(data, len, 1, HTTP_M_OTHER, NULL, &msg, seed) != HTTP_PARSE_DONE)
		goto out;
	buf_init(&out);
	if (http_request_serialize(&msg, msg.target, NULL, fuzz_rand(seed) % 4, &out) == 0) {
		/* Room for the fields the proxy adds. */
		big.head *= 2;
		big.headers += 4;
		http_msg_init(&again);
		fuzz_check(http_parse_request(out.data, out.len, &big, &again) == HTTP_PARSE_DONE);
		fuzz_check(again.head_len == out.len);
		fuzz_check(strcmp(again.method, msg.method) == 0 &&
		           again.method_id == msg.method_id);
		fuzz_check(strcmp(again.target, msg.target) == 0);
		fuzz_check(again.body == msg.body && again.length == msg.length);
		fuzz_check(http_msg_header(&again, "Proxy-Authorization") == NULL);
		http_msg_free(&again);
	} else
		fuzz_check(out.len == 0);
	buf_free(&out);
out:
	http_msg_free(&msg);
}

static void
fuzz_response(const char *data, size_t len, uint32_t *seed)
{
	struct http_limits big = http_limits_default;
	enum http_method method = fuzz_methods[fuzz_rand(seed) % EG_NELEM(fuzz_methods)];
	struct http_msg msg, again;
	enum http_body body, want;
	struct buf out;
	int client;

	if (fuzz_parse(data, len, 0, method, NULL, &msg, seed) != HTTP_PARSE_DONE)
		goto out;
	big.head *= 2;
	big.headers += 4;
	for (client = 10; client <= 11; client++) {
		buf_init(&out);
		if (http_response_serialize(&msg, client, fuzz_rand(seed) % 4, &out, &body) != 0) {
			fuzz_check(out.len == 0);
			buf_free(&out);
			continue;
		}
		want = msg.body;
		if (want == HTTP_BODY_CHUNKED || want == HTTP_BODY_CLOSE)
			want = client == 11 ? HTTP_BODY_CHUNKED : HTTP_BODY_CLOSE;
		fuzz_check(body == want);
		http_msg_init(&again);
		fuzz_check(http_parse_response(out.data, out.len, &big, method, &again) ==
		           HTTP_PARSE_DONE);
		fuzz_check(again.head_len == out.len && again.status == msg.status);
		fuzz_check(again.body == want && again.length == msg.length);
		fuzz_check(strcmp(again.reason, msg.reason) == 0);
		http_msg_free(&again);
		buf_free(&out);
	}
out:
	http_msg_free(&msg);
}

/*
 * Decode in pieces of random size; returns the result and appends the
 * data. *used is where the body ended.
 */
static enum chunked_result
fuzz_decode(const char *data, size_t len, uint32_t *seed, int whole, struct buf *body,
            size_t *usedp)
{
	enum chunked_result r = CHUNKED_MORE;
	struct chunked dec;
	const char *out;
	size_t off = 0, avail = 0, used, outlen;

	chunked_init(&dec, NULL);
	while (r == CHUNKED_MORE && avail < len) {
		avail = whole ? len : avail + 1 + fuzz_rand(seed) % 32;
		if (avail > len)
			avail = len;
		while (r == CHUNKED_MORE && off < avail) {
			r = chunked_feed(&dec, data + off, avail - off, &used, &out, &outlen);
			fuzz_check(used <= avail - off);
			fuzz_check(outlen == 0 ||
			           (out >= data + off && out + outlen <= data + off + used));
			fuzz_check(r != CHUNKED_MORE || used > 0);
			buf_add(body, out, outlen);
			off += used;
		}
	}
	fuzz_check(r != CHUNKED_ERROR || dec.error != NULL);
	fuzz_check(dec.body_len == body->len);
	*usedp = off;
	return r;
}

static void
fuzz_chunked(const char *data, size_t len, uint32_t *seed)
{
	enum chunked_result r, r2;
	struct buf a, b, rechunked;
	size_t used, used2, off;

	buf_init(&a);
	buf_init(&b);
	buf_init(&rechunked);
	r = fuzz_decode(data, len, seed, 1, &a, &used);
	r2 = fuzz_decode(data, len, seed, 0, &b, &used2);
	fuzz_check(r == r2 && a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
	fuzz_check(r != CHUNKED_DONE || used == used2);
	if (r == CHUNKED_DONE) {
		/* The proxy's own framing of the data decodes to the same. */
		for (off = 0; off < a.len; off += used2) {
			used2 = 1 + fuzz_rand(seed) % 100;
			if (used2 > a.len - off)
				used2 = a.len - off;
			chunked_write(&rechunked, a.data + off, used2);
		}
		chunked_write_last(&rechunked);
		buf_reset(&b);
		r2 = fuzz_decode(rechunked.data, rechunked.len, seed, 0, &b, &used2);
		fuzz_check(r2 == CHUNKED_DONE && used2 == rechunked.len && b.len == a.len);
		fuzz_check(a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
	}
	buf_free(&a);
	buf_free(&b);
	buf_free(&rechunked);
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
	const char *data = (const char *)in + 2;
	struct http_msg msg;
	uint32_t seed;
	size_t len;

	if (size < 2 || size > FUZZ_MAX_INPUT)
		return 0;
	seed = 0x9e3779b9u ^ ((uint32_t)in[1] << 8) ^ (uint32_t)size;
	len = size - 2;
	switch (in[0] % 4) {
	case 0:
		fuzz_request(data, len, &seed);
		break;
	case 1:
		fuzz_response(data, len, &seed);
		break;
	case 2:
		fuzz_chunked(data, len, &seed);
		break;
	default:
		http_msg_init(&msg);
		if (http_parse_request(data, len, NULL, &msg) == HTTP_PARSE_DONE &&
		    msg.body == HTTP_BODY_CHUNKED)
			fuzz_chunked(data + msg.head_len, len - msg.head_len, &seed);
		http_msg_free(&msg);
		break;
	}
	return 0;
}
