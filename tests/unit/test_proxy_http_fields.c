/*
 * Unit tests for the numbering of header fields in proxy/http/http.c: known
 * names in any case get their number and nothing else does, and the
 * hop-by-hop and restated fields are dropped from a serialised head in
 * any case.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

/* Known field names in any case get their number; anything else is HF_OTHER. */
static void
test_field_id(void **state)
{
	static const struct {
		const char *name;
		enum http_field id;
	} known[] = {
	    {"Connection", HF_CONNECTION},
	    {"Keep-Alive", HF_KEEP_ALIVE},
	    {"Proxy-Connection", HF_PROXY_CONNECTION},
	    {"Proxy-Authorization", HF_PROXY_AUTHORIZATION},
	    {"Proxy-Authenticate", HF_PROXY_AUTHENTICATE},
	    {"TE", HF_TE},
	    {"Trailer", HF_TRAILER},
	    {"Transfer-Encoding", HF_TRANSFER_ENCODING},
	    {"Upgrade", HF_UPGRADE},
	    {"Content-Length", HF_CONTENT_LENGTH},
	    {"Host", HF_HOST},
	    {"Via", HF_VIA},
	    {"Expect", HF_EXPECT},
	    {"Content-Encoding", HF_CONTENT_ENCODING},
	    {"Content-Type", HF_CONTENT_TYPE},
	    {"X-HTTP-Method-Override", HF_X_HTTP_METHOD_OVERRIDE},
	    {"X-HTTP-Method", HF_X_HTTP_METHOD},
	    {"X-Method-Override", HF_X_METHOD_OVERRIDE},
	    {"Sec-WebSocket-Protocol", HF_SEC_WEBSOCKET_PROTOCOL},
	    {"Sec-WebSocket-Extensions", HF_SEC_WEBSOCKET_EXTENSIONS},
	};
	static const char *const others[] = {
	    "Hos",
	    "Hosts",
	    "X-Host",
	    "Content-Lengt",
	    "Content-Length2",
	    "Vi",
	    "Vias",
	    "T",
	    "TEE",
	    "Connectio",
	    "Connection-",
	    "User-Agent",
	    "Date",
	    "Keep_Alive",
	    "Transfer-Encodin",
	    "Accept",
	    "Cookie",
	    "Upgrade-Insecure",
	    "X-HTTP-Methods",
	    "Sec-WebSocket-Key",
	};
	char name[64];
	size_t i, j, n;
	int seen[HF_COUNT] = {0};

	(void)state;
	for (i = 0; i < EG_NELEM(known); i++) {
		n = strlen(known[i].name);
		assert_int_equal(http_field_id(known[i].name, n), known[i].id);
		for (j = 0; j < n; j++)
			name[j] = (char)tolower((unsigned char)known[i].name[j]);
		assert_int_equal(http_field_id(name, n), known[i].id);
		for (j = 0; j < n; j++)
			name[j] =
			    (char)(j % 2 ? toupper((unsigned char)known[i].name[j]) : name[j]);
		assert_int_equal(http_field_id(name, n), known[i].id);
		/* Only the first n bytes count: a longer buffer is the name's prefix. */
		memcpy(name, known[i].name, n);
		memcpy(name + n, "XYZ", 4);
		assert_int_equal(http_field_id(name, n), known[i].id);
		seen[known[i].id]++;
	}
	for (i = HF_OTHER + 1; i < HF_COUNT; i++)
		assert_int_equal(seen[i], 1);
	for (i = 0; i < EG_NELEM(others); i++)
		assert_int_equal(http_field_id(others[i], strlen(others[i])), HF_OTHER);
}

/*
 * Hop-by-hop and restated fields are dropped in any case, also when the
 * same name comes twice or a Connection field names an end-to-end one.
 */
static void
test_fields_dropped_any_case(void **state)
{
	const char *req = "GET http://example.com/x HTTP/1.1\r\n"
	                  "host: example.com\r\n"
	                  "CONNECTION: x-secret, keep-alive\r\n"
	                  "keep-alive: timeout=5\r\n"
	                  "PROXY-authorization: Basic Zm9vOmJhcg==\r\n"
	                  "proxy-connection: keep-alive\r\n"
	                  "te: trailers\r\n"
	                  "X-Secret: 1\r\n"
	                  "via: 1.0 a\r\n"
	                  "VIA: 1.1 b\r\n"
	                  "X-Kept: yes\r\n"
	                  "\r\n";
	struct http_msg msg;
	struct buf out;

	(void)state;
	http_msg_init(&msg);
	buf_init(&out);
	assert_int_equal(http_parse_request(req, strlen(req), NULL, &msg), HTTP_PARSE_DONE);
	assert_true(msg.flags & HTTP_F_KEEP_ALIVE);
	assert_string_equal(http_msg_header(&msg, "Host"), "example.com");
	assert_string_equal(http_msg_header(&msg, "x-kept"), "yes");
	assert_null(http_msg_header(&msg, "Content-Type"));
	assert_int_equal(http_request_serialize(&msg, NULL, NULL, HTTP_SER_KEEP_ALIVE, &out), 0);
	assert_string_equal(buf_cstr(&out), "GET /x HTTP/1.1\r\n"
	                                    "Host: example.com\r\n"
	                                    "X-Kept: yes\r\n"
	                                    "Via: 1.0 a, 1.1 b, 1.1 egressd\r\n"
	                                    "\r\n");
	buf_free(&out);
	http_msg_free(&msg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_field_id),
	    cmocka_unit_test(test_fields_dropped_any_case),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
