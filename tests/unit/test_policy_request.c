/*
 * Unit tests for policy/request.c: which header fields the decision reads,
 * how method overrides are kept (and counted past what is kept), and how a
 * WebSocket upgrade and its offered subprotocols are recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy_int.h"

static void
hdr(struct policy_request *req, const char *name, const char *value)
{
	policy_request_header(req, name, strlen(name), value);
}

static void
test_request_kinds(void **state)
{
	assert_int_equal(policy_header_kind("x-http-method-override", 22), POLICY_HEADER_OVERRIDE);
	assert_int_equal(policy_header_kind("X-HTTP-Method", 13), POLICY_HEADER_OVERRIDE);
	assert_int_equal(policy_header_kind("X-METHOD-OVERRIDE", 17), POLICY_HEADER_OVERRIDE);
	assert_int_equal(policy_header_kind("upgrade", 7), POLICY_HEADER_UPGRADE);
	assert_int_equal(policy_header_kind("sec-websocket-protocol", 22),
	                 POLICY_HEADER_WS_PROTOCOL);
	/* A prefix or a longer name is another field. */
	assert_int_equal(policy_header_kind("X-HTTP-Method-Overrid", 21), POLICY_HEADER_OTHER);
	assert_int_equal(policy_header_kind("X-HTTP-Methods", 14), POLICY_HEADER_OTHER);
	assert_int_equal(policy_header_kind("Content-Type", 12), POLICY_HEADER_OTHER);
}

static void
test_request_overrides(void **state)
{
	struct policy_request req;

	memset(&req, 0, sizeof req);
	hdr(&req, "Accept", "*/*");
	assert_int_equal(req.noverrides, 0);
	hdr(&req, "X-HTTP-Method-Override", "DELETE");
	hdr(&req, "x-http-method", "PUT");
	hdr(&req, "X-Method-Override", "GET");
	hdr(&req, "X-HTTP-Method-Override", "PATCH");
	assert_int_equal(req.noverrides, 4);
	assert_string_equal(req.overrides[0], "DELETE");
	assert_string_equal(req.overrides[1], "PUT");
	assert_string_equal(req.overrides[2], "GET");
	assert_string_equal(req.overrides[3], "PATCH");
	/* Past what is kept, still counted: the decision can refuse the excess. */
	hdr(&req, "X-HTTP-Method-Override", "POST");
	assert_int_equal(req.noverrides, POLICY_MAX_OVERRIDES + 1);
	assert_string_equal(req.overrides[POLICY_MAX_OVERRIDES - 1], "PATCH");
}

static void
test_request_websocket(void **state)
{
	struct policy_request req;

	memset(&req, 0, sizeof req);
	hdr(&req, "Upgrade", "h2c");
	assert_int_equal(req.upgrade, POLICY_UPGRADE_NONE);
	hdr(&req, "Upgrade", " h2c ,  WebSocket ");
	assert_int_equal(req.upgrade, POLICY_UPGRADE_WEBSOCKET);
	assert_int_equal(req.ws_offer, 0);

	hdr(&req, "Sec-WebSocket-Protocol", "graphql-transport-ws, graphql-ws");
	assert_int_equal(req.ws_offer, POLICY_WS_GRAPHQL);
	hdr(&req, "Sec-WebSocket-Protocol", ",,");
	assert_int_equal(req.ws_offer, POLICY_WS_GRAPHQL);
	/* Names compare exactly: another spelling is another protocol. */
	hdr(&req, "Sec-WebSocket-Protocol", "GraphQL-WS");
	assert_int_equal(req.ws_offer, POLICY_WS_GRAPHQL | POLICY_WS_OTHER);

	memset(&req, 0, sizeof req);
	hdr(&req, "Sec-WebSocket-Protocol", "graphql-ws,chat");
	assert_int_equal(req.ws_offer, POLICY_WS_GRAPHQL | POLICY_WS_OTHER);
	memset(&req, 0, sizeof req);
	hdr(&req, "Sec-WebSocket-Protocol", "graphql-wsx");
	assert_int_equal(req.ws_offer, POLICY_WS_OTHER);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_kinds),
	    cmocka_unit_test(test_request_overrides),
	    cmocka_unit_test(test_request_websocket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
