/*
 * Engine scenarios for the connection engine: a client's bytes through
 * the hub and its phases (request, forward, relay, respond, intercept,
 * websocket) to what the client, the upstream and the audit log get, both
 * ends scripted byte by byte and every timeout fired by hand
 * (proxy_harness.h explains the harness and how to write a scenario).
 * Between them the scenarios enter and leave every state of enum
 * conn_state and take every way a connection closes.
 */
#include "proxy_harness.h"

#define API "api.example.test"

#define SCENARIO(f) cmocka_unit_test_setup_teardown(f, pe_setup, pe_teardown)

/* A GET to api.example.test, as the client sends it and as it goes upstream. */
#define REQ_GET(path) "GET http://" API path " HTTP/1.1\r\nHost: " API "\r\n\r\n"
#define UP_GET(path)  "GET " path " HTTP/1.1\r\nHost: " API "\r\nVia: 1.1 egressd\r\n\r\n"
#define RESP_OK       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define CLIENT_OK     "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 2\r\n\r\nok"
#define CLIENT_OK_CLOSE                                                                            \
	"HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"

/* A GraphQL request body: a query, and a mutation. */
#define GQL_QUERY    "{\"query\":\"{ viewer { login } }\"}"
#define GQL_MUTATION "{\"query\":\"mutation { addStar(id: 1) { id } }\"}"

/* Check the http audit line of one allowed GET answered with the 2 bytes "ok". */
static void
audit_get_ok(struct pe *h, const char *path)
{
	json_t *j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 2);

	assert_string_equal(pe_field(j, "host"), API);
	assert_int_equal(pe_int(j, "port"), 80);
	assert_string_equal(pe_field(j, "method"), "GET");
	assert_string_equal(pe_field(j, "path"), path);
	assert_string_equal(pe_field(j, "scheme"), "http");
	assert_string_equal(pe_field(j, "addr"), "93.184.216.34");
	assert_string_equal(pe_field(j, "error"), "");
	json_decref(j);
}

/*
 * One GET of / answered 200 "ok" on upstream u (NULL: a new connection is
 * expected); returns the upstream that carried it.
 */
static struct pe_sock *
get_ok(struct pe *h, struct pe_sock *c, struct pe_sock *u)
{
	pe_send(h, c, REQ_GET("/"));
	if (u == NULL)
		u = pe_up(h);
	else
		pe_no_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	audit_get_ok(h, "/");
	return u;
}

/*
 * A GET goes upstream in origin form with Host restated and Via added,
 * to the address the name resolved to; the Content-Length response comes
 * back restated; one http audit line; the connection then waits for the
 * next request (READ_HEAD) and the upstream stays open, pooled.
 */
static void
test_get_content_length(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_state(h, CONN_READ_HEAD);
	pe_send(h, c,
	        "GET http://" API "/a/b?token=s3cr3t HTTP/1.1\r\nHost: " API
	        "\r\nUser-Agent: t/1\r\nAccept: */*\r\n\r\n");
	u = pe_up(h);
	assert_string_equal(u->addr, "93.184.216.34:80");
	pe_expect(h, u,
	          "GET /a/b?token=s3cr3t HTTP/1.1\r\nHost: " API
	          "\r\nUser-Agent: t/1\r\nAccept: */*\r\nVia: 1.1 egressd\r\n\r\n");
	pe_state(h, CONN_EXCHANGE);
	pe_send(h, u, "HTTP/1.1 200 OK\r\nServer: o\r\nContent-Length: 5\r\n\r\nhello");
	pe_expect(
	    h, c,
	    "HTTP/1.1 200 OK\r\nServer: o\r\nVia: 1.1 egressd\r\nContent-Length: 5\r\n\r\nhello");
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 5);
	assert_string_equal(pe_field(j, "path"), "/a/b"); /* never the query: it may hold secrets */
	assert_string_equal(pe_field(j, "mode"), "practical");
	json_decref(j);
	pe_state(h, CONN_READ_HEAD);
	pe_open(h, c);
	pe_open(h, u);
	assert_int_equal(h->nqueries, 2); /* A and AAAA */
	pe_quiet(h);
	pe_stop(h);
}

/* A chunked response reaches an HTTP/1.1 client chunked, re-framed by egressd. */
static void
test_chunked_response(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n");
	pe_expect(h, c,
	          "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nTransfer-Encoding: "
	          "chunked\r\n\r\n5\r\nhello\r\n");
	pe_send(h, u, "1\r\n!\r\n0\r\nX-Trailer: t\r\n\r\n");
	pe_expect(h, c, "1\r\n!\r\n0\r\n\r\n");
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 6);
	json_decref(j);
	pe_state(h, CONN_READ_HEAD);
	pe_open(h, u); /* pooled */
	get_ok(h, c, u);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A response whose end is the upstream closing goes to an HTTP/1.1
 * client chunked, each piece as it comes, its end (the upstream's EOF) a
 * last chunk; the upstream said it closes, so the client's connection
 * ends with the response.
 */
static void
test_close_delimited_response(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, "HTTP/1.1 200 OK\r\n\r\nabc");
	pe_expect(h, c,
	          "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nConnection: close\r\n"
	          "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
	pe_audit_none(h);
	pe_send(h, u, "defg");
	pe_expect(h, c, "4\r\ndefg\r\n");
	pe_close(h, u);
	pe_expect(h, c, "0\r\n\r\n");
	pe_eof(h, c);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 7);
	json_decref(j);
	pe_gone(h);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * Keep-alive: the second request on a connection goes up on the pooled
 * upstream of the first; a second client to the same host:port gets it too
 * once it is free again.
 */
static void
test_keepalive_pool(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *c2, *u;

	pe_start(h);
	c = pe_client(h);
	u = get_ok(h, c, NULL);
	pe_state(h, CONN_READ_HEAD);
	assert_true(get_ok(h, c, u) == u);
	c2 = pe_client(h);
	assert_true(get_ok(h, c2, u) == u);
	assert_int_equal(h->nups, 1);
	assert_int_equal(h->nqueries, 2); /* the name was resolved once */
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The pool lets go of idle upstreams: one the server closes is dropped at
 * once, so a request that could not be sent twice (a body) goes on a
 * fresh connection rather than on the dead one; one idle for the pool's
 * idle timeout is closed by egressd.
 */
static void
test_pool_idle(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u, *u2;
	struct upstream *up;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "PUT http://open.example.test/f HTTP/1.1\r\nHost: open.example.test\r\n"
	        "Content-Length: 1\r\n\r\na");
	u = pe_up(h);
	pe_expect(h, u,
	          "PUT /f HTTP/1.1\r\nHost: open.example.test\r\nVia: 1.1 egressd\r\n"
	          "Content-Length: 1\r\n\r\na");
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	json_decref(pe_audit(h, "http", "allow", "open.example.test", 200, 1, 2));
	pe_close(h, u);
	pe_settle(h);

	pe_send(h, c,
	        "PUT http://open.example.test/f HTTP/1.1\r\nHost: open.example.test\r\n"
	        "Content-Length: 1\r\n\r\nb");
	u2 = pe_up(h);
	pe_expect(h, u2,
	          "PUT /f HTTP/1.1\r\nHost: open.example.test\r\nVia: 1.1 egressd\r\n"
	          "Content-Length: 1\r\n\r\nb");
	up = pe_conn(h)->upstream;
	assert_non_null(up);
	assert_int_equal(up->reused, 0);
	pe_send(h, u2, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	j = pe_audit(h, "http", "allow", "open.example.test", 200, 1, 2);
	json_decref(j);
	/* Pooled, its read event keeps no timeout of the exchange it served. */
	assert_non_null(up->rd);
	assert_int_equal(event_pending(up->rd, EV_READ, NULL), EV_READ);
	assert_int_equal(event_pending(up->rd, EV_TIMEOUT, NULL), 0);
	pe_open(h, u2);
	pe_fire(h, up->idle_timer, 30);
	pe_eof(h, u2);
	get_ok(h, c, NULL);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * Pipelining: two requests in one write. The second waits for the first
 * exchange to end, then goes up on the same upstream; the responses come
 * back in order.
 */
static void
test_pipelining(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/1") REQ_GET("/2"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/1"));
	pe_open(h, u); /* not the second one yet */
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	audit_get_ok(h, "/1");
	pe_expect(h, u, UP_GET("/2"));
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	audit_get_ok(h, "/2");
	assert_int_equal(h->nups, 1);
	pe_state(h, CONN_READ_HEAD);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A blocklisted host: 403 naming the rule and the command that explains
 * it, one block line, nothing resolved or connected; the connection stays
 * open for the next request.
 */
static void
test_blocked(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "GET http://blocked.example.test/x HTTP/1.1\r\nHost: blocked.example.test\r\n\r\n");
	pe_expect_reply(h, c, "HTTP/1.1 403 Forbidden",
	                "X-Egress-Rule: blocked.example.test\r\nConnection: keep-alive\r\n",
	                "To see why: policyctl explain blocked.example.test\n");
	j = pe_audit(h, "http", "block", "blocked.example.test", 403, 0, -1);
	assert_string_equal(pe_field(j, "host"), "blocked.example.test");
	assert_string_equal(pe_field(j, "addr"), "");
	json_decref(j);
	pe_no_up(h);
	assert_int_equal(h->nqueries, 0);
	pe_state(h, CONN_READ_HEAD);

	/* A write to an unlisted host: the method rules; the connection still serves. */
	pe_send(h, c, "DELETE http://" API "/x HTTP/1.1\r\nHost: " API "\r\n\r\n");
	pe_expect_reply(h, c, "HTTP/1.1 403 Forbidden", "X-Egress-Rule: method-not-allowed\r\n",
	                "policyctl explain --method DELETE " API "\n");
	j = pe_audit(h, "http", "block", "method-not-allowed", 403, 0, -1);
	json_decref(j);
	pe_no_up(h);
	get_ok(h, c, NULL);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A POST body the decision needs is held (READ_BODY) until whole: a
 * GraphQL query then goes up with it as Content-Length; a mutation is
 * refused 403 and nothing of it goes anywhere.
 */
static void
test_held_body(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	char req[512], up[512];
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	snprintf(req, sizeof req,
	         "POST http://" API "/graphql HTTP/1.1\r\nHost: " API
	         "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	         "%zx\r\n%.10s\r\n",
	         (size_t)10, GQL_QUERY);
	pe_send(h, c, req);
	pe_state(h, CONN_READ_BODY);
	pe_no_up(h);
	assert_int_equal(h->nqueries, 0);
	snprintf(req, sizeof req, "%zx\r\n%s\r\n0\r\n\r\n", strlen(GQL_QUERY) - 10, GQL_QUERY + 10);
	pe_send(h, c, req);
	u = pe_up(h);
	snprintf(up, sizeof up,
	         "POST /graphql HTTP/1.1\r\nHost: " API
	         "\r\nContent-Type: application/json\r\nVia: 1.1 egressd\r\nContent-Length: "
	         "%zu\r\n\r\n%s",
	         strlen(GQL_QUERY), GQL_QUERY);
	pe_expect(h, u, up);
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	j = pe_audit(h, "http", "allow", "graphql-query", 200, (long long)strlen(GQL_QUERY), 2);
	assert_string_equal(pe_field(json_object_get(j, "graphql"), "operation"), "query");
	json_decref(j);

	snprintf(req, sizeof req,
	         "POST http://" API "/graphql HTTP/1.1\r\nHost: " API
	         "\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(GQL_MUTATION), GQL_MUTATION);
	pe_send(h, c, req);
	pe_expect_reply(h, c, "HTTP/1.1 403 Forbidden", "X-Egress-Rule: graphql-mutation\r\n",
	                "--content-type 'application/json' --body FILE");
	j = pe_audit(h, "http", "block", "graphql-mutation", 403, 0, -1);
	assert_string_equal(pe_field(json_object_get(j, "graphql"), "operation"), "mutation");
	json_decref(j);
	pe_open(h, u); /* pooled, and the mutation never reached it */
	pe_no_up(h);
	pe_state(h, CONN_READ_HEAD);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * Expect: 100-continue. A body egressd holds is asked for by egressd
 * itself (its own 100) and goes up at once after the head; the 100 the
 * upstream may still send is not passed on a second time. A body that
 * streams leaves the expectation to the upstream, whose 100 is passed on.
 */
static void
test_expect_continue(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u, *u2;
	char req[512], up[512];
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	snprintf(req, sizeof req,
	         "POST http://" API "/graphql HTTP/1.1\r\nHost: " API
	         "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: "
	         "%zu\r\n\r\n",
	         strlen(GQL_QUERY));
	pe_send(h, c, req);
	pe_expect(h, c, "HTTP/1.1 100 Continue\r\n\r\n");
	pe_state(h, CONN_READ_BODY);
	pe_no_up(h);
	pe_send(h, c, GQL_QUERY);
	u = pe_up(h);
	snprintf(up, sizeof up,
	         "POST /graphql HTTP/1.1\r\nHost: " API
	         "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nVia: 1.1 "
	         "egressd\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(GQL_QUERY), GQL_QUERY);
	pe_expect(h, u, up);
	pe_send(h, u, "HTTP/1.1 100 Continue\r\n\r\n" RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	j = pe_audit(h, "http", "allow", "graphql-query", 200, (long long)strlen(GQL_QUERY), 2);
	json_decref(j);

	/* An allowlisted host: any method, the body streams, the upstream answers 100. */
	pe_send(h, c,
	        "PUT http://open.example.test/f HTTP/1.1\r\nHost: open.example.test\r\n"
	        "Expect: 100-continue\r\nContent-Length: 4\r\n\r\n");
	u2 = pe_up(h);
	assert_string_equal(u2->addr, "93.184.216.35:80");
	pe_expect(h, u2,
	          "PUT /f HTTP/1.1\r\nHost: open.example.test\r\nExpect: 100-continue\r\n"
	          "Via: 1.1 egressd\r\nContent-Length: 4\r\n\r\n");
	pe_open(h, c); /* no 100 of egressd's own */
	pe_send(h, u2, "HTTP/1.1 100 Continue\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 100 Continue\r\n\r\n");
	pe_send(h, c, "data");
	pe_expect(h, u2, "data");
	pe_send(h, u2, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 201 Created\r\nVia: 1.1 egressd\r\nContent-Length: 0\r\n\r\n");
	j = pe_audit(h, "http", "allow", "open.example.test", 201, 4, 0);
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * CONNECT to an allowlisted host on a port other than 443: a byte tunnel
 * (TUNNEL), both ways, with half-close carried across: the client's EOF
 * becomes a shutdown towards the upstream, which may still answer; the
 * upstream's close then ends it. One connect line with the bytes.
 */
static void
test_connect_tunnel(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "CONNECT open.example.test:22 HTTP/1.1\r\nHost: open.example.test:22\r\n\r\n");
	u = pe_up(h);
	assert_string_equal(u->addr, "93.184.216.35:22");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_state(h, CONN_TUNNEL);
	pe_send(h, c, "SSH-2.0-client\r\n");
	pe_expect(h, u, "SSH-2.0-client\r\n");
	pe_send(h, u, "SSH-2.0-server\r\n");
	pe_expect(h, c, "SSH-2.0-server\r\n");
	pe_shut(h, c);
	pe_eof(h, u);
	pe_open(h, c);
	pe_audit_none(h);
	pe_send(h, u, "bye");
	pe_expect(h, c, "bye");
	pe_close(h, u);
	pe_eof(h, c);
	pe_gone(h);
	j = pe_audit(h, "connect", "allow", "open.example.test", 200, 16, 19);
	assert_string_equal(pe_field(j, "tls"), "tunnel");
	assert_string_equal(pe_field(j, "method"), "CONNECT");
	assert_string_equal(pe_field(j, "host"), "open.example.test");
	assert_int_equal(pe_int(j, "port"), 22);
	assert_string_equal(pe_field(j, "error"), "");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A passthrough host: after the 200 nothing is carried (PEEK) until the
 * ClientHello is read; one naming the CONNECT host goes up byte for byte
 * and the tunnel relays from there. One naming another host is cut
 * (sni-mismatch) and nothing reaches the upstream.
 */
static void
test_passthrough(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	struct buf hello;
	json_t *j;

	pe_start(h);
	buf_init(&hello);
	pe_client_hello("pinned.example.test", &hello);
	c = pe_client(h);
	pe_send(h, c,
	        "CONNECT pinned.example.test:443 HTTP/1.1\r\nHost: pinned.example.test\r\n\r\n");
	u = pe_up(h);
	assert_string_equal(u->addr, "93.184.216.36:443");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_state(h, CONN_PEEK);
	pe_sendn(h, c, hello.data, hello.len);
	pe_expectn(h, u, hello.data, hello.len);
	pe_state(h, CONN_TUNNEL);
	pe_send(h, u, "server");
	pe_expect(h, c, "server");
	pe_close(h, c);
	pe_eof(h, u);
	pe_close(h, u);
	pe_gone(h);
	j = pe_audit(h, "connect", "allow", "unlisted-host", 200, (long long)hello.len, 6);
	assert_string_equal(pe_field(j, "tls"), "passthrough");
	assert_string_equal(pe_field(j, "sni"), "pinned.example.test");
	json_decref(j);

	buf_reset(&hello);
	pe_client_hello(API, &hello);
	c = pe_client(h);
	pe_send(h, c,
	        "CONNECT pinned.example.test:443 HTTP/1.1\r\nHost: pinned.example.test\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_sendn(h, c, hello.data, hello.len);
	pe_eof(h, c);
	pe_eof(h, u);
	pe_gone(h);
	j = pe_audit(h, "connect", "block", "sni-mismatch", 200, 0, 0);
	assert_string_equal(pe_field(j, "sni"), API);
	json_decref(j);
	buf_free(&hello);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * Interception: 200 to the CONNECT with nothing resolved or connected,
 * the ClientHello peeked (PEEK), the handshake on a leaf of the run CA
 * (HANDSHAKE), the connect line with the server name; then each request
 * inside is decided on its own and goes up over TLS verified against the
 * upstream trust store; a write inside is refused with a 403 inside TLS.
 */
static void
test_intercept(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	h->intercept = 1;
	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_state(h, CONN_PEEK);
	pe_no_up(h);
	assert_int_equal(h->nqueries, 0);
	pe_audit_none(h);
	pe_tls_client(h, c, API, 1);
	pe_state(h, CONN_HANDSHAKE);
	j = pe_audit(h, "connect", "allow", "unlisted-host", 200, 0, 0);
	assert_string_equal(pe_field(j, "tls"), "intercept");
	assert_string_equal(pe_field(j, "sni"), API);
	json_decref(j);
	pe_tls_finish(h, c);
	pe_state(h, CONN_READ_HEAD);

	pe_send(h, c, "GET /x?y=1 HTTP/1.1\r\nHost: " API "\r\n\r\n");
	u = pe_up(h);
	assert_string_equal(u->addr, "93.184.216.34:443");
	pe_tls_server(h, u, API);
	pe_expect(h, u, "GET /x?y=1 HTTP/1.1\r\nHost: " API "\r\nVia: 1.1 egressd\r\n\r\n");
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 2);
	assert_string_equal(pe_field(j, "scheme"), "https");
	assert_int_equal(pe_int(j, "port"), 443);
	assert_string_equal(pe_field(j, "path"), "/x");
	json_decref(j);

	pe_send(h, c, "POST /x HTTP/1.1\r\nHost: " API "\r\nContent-Length: 3\r\n\r\nabc");
	pe_expect_reply(h, c, "HTTP/1.1 403 Forbidden", "X-Egress-Rule: method-not-allowed\r\n",
	                "Blocked by the egress policy.");
	j = pe_audit(h, "http", "block", "method-not-allowed", 403, 0, -1);
	assert_string_equal(pe_field(j, "scheme"), "https");
	json_decref(j);
	pe_open(h, u); /* pooled; the POST never reached it */
	pe_state(h, CONN_READ_HEAD);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * An upstream whose certificate does not verify (a leaf for another
 * name) is refused: a tls event naming the certificate, and a 502 inside
 * the client's TLS saying why.
 */
static void
test_intercept_upstream_cert(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	h->intercept = 1;
	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_tls_client(h, c, API, -1);
	json_decref(pe_audit(h, "connect", "allow", "unlisted-host", 200, 0, 0));
	pe_send(h, c, "GET / HTTP/1.1\r\nHost: " API "\r\n\r\n");
	u = pe_up(h);
	pe_tls_server_as(h, u, "other.example.test", 0);
	pe_expect_reply(h, c, "HTTP/1.1 502 Bad Gateway", "Connection: close\r\n",
	                "egressd: 502 Bad Gateway: upstream TLS with " API ":443 failed: ");
	pe_eof(h, c);
	pe_gone(h);
	j = pe_audit(h, "tls", "block", "upstream-certificate", -1, -1, -1);
	assert_string_equal(pe_field(j, "host"), API);
	json_decref(j);
	j = pe_audit(h, "http", "allow", "allow-methods", 502, 0, 0);
	assert_string_equal(pe_field(j, "scheme"), "https");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A CONNECT pipelined behind a response still being written: the 200 is
 * queued behind it (TLS_WAIT) and the ClientHello is read only once the
 * client has taken all of it.
 */
static void
test_tls_wait(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	struct buf big, want;
	json_t *j;

	h->intercept = 1;
	h->client_sndbuf = 4096;
	pe_start(h);
	buf_init(&big);
	buf_init(&want);
	buf_adds(&big, "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n");
	buf_adds(&want, "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 65536\r\n\r\n");
	buf_reserve(&big, 65536);
	memset(big.data + big.len, 'x', 65536);
	big.len += 65536;
	buf_add(&want, big.data + big.len - 65536, 65536);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/") "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_sendn(h, u, big.data, big.len);
	pe_state(h, CONN_TLS_WAIT);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 65536);
	json_decref(j);
	pe_expectn(h, c, want.data, want.len);
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_state(h, CONN_PEEK);
	pe_close(h, c);
	pe_gone(h);
	j = pe_audit(h, "connect", "allow", "unlisted-host", 200, 0, 0);
	assert_string_equal(pe_field(j, "error"), "client closed before its ClientHello");
	json_decref(j);
	pe_open(h, u);
	buf_free(&big);
	buf_free(&want);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A last response larger than the client's socket takes at once: the
 * connection waits (FLUSH) until the client has read all of it, then
 * closes; the upstream is pooled meanwhile.
 */
static void
test_flush(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	struct buf big, want;
	json_t *j;

	h->client_sndbuf = 4096;
	pe_start(h);
	buf_init(&big);
	buf_init(&want);
	buf_adds(&big, "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n");
	buf_adds(&want, "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nConnection: close\r\n"
	                "Content-Length: 65536\r\n\r\n");
	buf_reserve(&big, 65536);
	memset(big.data + big.len, 'y', 65536);
	big.len += 65536;
	buf_add(&want, big.data + big.len - 65536, 65536);
	c = pe_client(h);
	pe_send(h, c, "GET http://" API "/ HTTP/1.1\r\nHost: " API "\r\nConnection: close\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_sendn(h, u, big.data, big.len);
	pe_state(h, CONN_FLUSH);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 65536);
	json_decref(j);
	pe_expectn(h, c, want.data, want.len);
	pe_eof(h, c);
	pe_gone(h);
	pe_open(h, u);
	buf_free(&big);
	buf_free(&want);
	pe_quiet(h);
	pe_stop(h);
}

/* The client's next bytes are egressd's 502 (or 504) with detail in its body, then the close. */
static void
expect_gateway_error(struct pe *h, struct pe_sock *c, int status, const char *detail)
{
	pe_expect_reply(h, c,
	                status == 502 ? "HTTP/1.1 502 Bad Gateway" : "HTTP/1.1 504 Gateway Timeout",
	                "Connection: close\r\n", detail);
	pe_eof(h, c);
	pe_gone(h);
}

/* The upstream refuses the connection: 502 saying so, the connection closed. */
static void
test_upstream_refused(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c;
	json_t *j;

	pe_start(h);
	h->refuse = 1;
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	expect_gateway_error(h, c, 502,
	                     "egressd: 502 Bad Gateway: upstream connection failed: " API
	                     ":80: Connection refused\n");
	assert_int_equal(h->nrefused, 1);
	pe_no_up(h);
	j = pe_audit(h, "http", "allow", "allow-methods", 502, 0, 0);
	assert_string_equal(pe_field(j, "error"), "upstream connection failed");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The upstream goes before a byte of the response: reset (502 "reset"),
 * or closed (502 "closed without a response"). A fresh connection is
 * not retried: the request may have been acted on.
 */
static void
test_upstream_gone_before_response(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_reset(h, u);
	expect_gateway_error(h, c, 502, "egressd: 502 Bad Gateway: upstream connection reset\n");
	j = pe_audit(h, "http", "allow", "allow-methods", 502, 0, 0);
	assert_string_equal(pe_field(j, "error"), "upstream connection reset");
	json_decref(j);
	pe_no_up(h);

	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_close(h, u);
	expect_gateway_error(h, c, 502,
	                     "egressd: 502 Bad Gateway: upstream closed without a response\n");
	j = pe_audit(h, "http", "allow", "allow-methods", 502, 0, 0);
	assert_string_equal(pe_field(j, "error"), "upstream closed without a response");
	json_decref(j);
	pe_no_up(h);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A pooled upstream the server closed just as it was reused: the request
 * goes once more on a fresh connection, and the client sees only the
 * answer. Once: a fresh connection that fails too is a 502.
 */
static void
test_stale_pool_retry(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u, *u2, *u3;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	u = get_ok(h, c, NULL);
	pe_send(h, c, REQ_GET("/"));
	pe_no_up(h);
	pe_expect(h, u, UP_GET("/")); /* the pooled one */
	pe_close(h, u);
	u2 = pe_up(h);
	pe_expect(h, u2, UP_GET("/"));
	pe_send(h, u2, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	audit_get_ok(h, "/");

	pe_send(h, c, REQ_GET("/"));
	pe_expect(h, u2, UP_GET("/"));
	pe_close(h, u2);
	u3 = pe_up(h);
	pe_expect(h, u3, UP_GET("/"));
	pe_close(h, u3);
	expect_gateway_error(h, c, 502,
	                     "egressd: 502 Bad Gateway: upstream closed without a response\n");
	j = pe_audit(h, "http", "allow", "allow-methods", 502, 0, 0);
	json_decref(j);
	pe_no_up(h);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The name is still being resolved (CONNECTING) when the client
 * half-closes after its request: the request still goes, and its
 * response comes back before the connection closes.
 */
static void
test_connecting_half_close(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;

	pe_start(h);
	h->dns_hold = 1;
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	pe_shut(h, c);
	pe_state(h, CONN_CONNECTING);
	pe_no_up(h);
	assert_int_equal(h->nheld, 2);
	pe_dns_release(h);
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK_CLOSE);
	pe_eof(h, c);
	pe_gone(h);
	audit_get_ok(h, "/");
	pe_open(h, u); /* pooled */
	pe_quiet(h);
	pe_stop(h);
}

/* The client closes in the middle of a request head: nothing audited, nothing sent. */
static void
test_client_close_mid_head(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, "GET http://" API "/ HTTP/1.1\r\nHost: ");
	pe_state(h, CONN_READ_HEAD);
	pe_close(h, c);
	pe_gone(h);
	pe_no_up(h);
	assert_int_equal(h->nqueries, 0);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The client closes in the middle of a request body: streaming, the
 * upstream got what came and then its EOF; held, nothing went up. Both
 * are audited with the bytes that left and the error.
 */
static void
test_client_close_mid_body(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "PUT http://open.example.test/f HTTP/1.1\r\nHost: open.example.test\r\n"
	        "Content-Length: 10\r\n\r\nabcd");
	u = pe_up(h);
	pe_expect(h, u,
	          "PUT /f HTTP/1.1\r\nHost: open.example.test\r\nVia: 1.1 egressd\r\n"
	          "Content-Length: 10\r\n\r\nabcd");
	pe_state(h, CONN_EXCHANGE);
	pe_close(h, c);
	pe_eof(h, u);
	pe_gone(h);
	j = pe_audit(h, "http", "allow", "open.example.test", -1, 4, 0);
	assert_string_equal(pe_field(j, "error"), "client closed during the request body");
	json_decref(j);

	c = pe_client(h);
	pe_send(h, c,
	        "POST http://" API "/graphql HTTP/1.1\r\nHost: " API
	        "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"query\"");
	pe_state(h, CONN_READ_BODY);
	pe_close(h, c);
	pe_gone(h);
	pe_no_up(h);
	j = pe_audit_next(h);
	assert_string_equal(pe_field(j, "event"), "http");
	assert_string_equal(pe_field(j, "error"), "client closed during the request body");
	assert_int_equal(pe_int(j, "bytes_up"), 0); /* held, never sent */
	assert_int_equal(pe_int(j, "status"), -1);
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The client goes in the middle of a response: egressd learns it when
 * the next bytes cannot be written, closes the connection, and closes
 * the upstream, whose response was not read to its end, rather than
 * pooling it.
 */
static void
test_client_close_mid_response(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd");
	pe_expect(h, c, "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 10\r\n\r\nabcd");
	pe_close(h, c);
	pe_state(h, CONN_EXCHANGE); /* a client may half-close and still read */
	pe_send(h, u, "ef");
	pe_eof(h, u);
	pe_gone(h);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 6);
	assert_string_equal(pe_field(j, "error"), "client error");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The upstream closes in the middle of a response body: the client gets
 * what came, then the close (its Content-Length says it is short).
 */
static void
test_upstream_close_mid_body(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_send(h, u, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd");
	pe_expect(h, c, "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 10\r\n\r\nabcd");
	pe_close(h, u);
	pe_eof(h, c);
	pe_gone(h);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 4);
	assert_string_equal(pe_field(j, "error"), "upstream closed during the response body");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * The header timeout runs from a request's first byte: a head not whole
 * in time closes the connection, and a new connection that sends nothing
 * gets the same time, not the idle timeout. Nothing is audited: no
 * request was read.
 */
static void
test_header_timeout(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c;

	pe_start(h);
	c = pe_client(h);
	pe_fire(h, pe_conn(h)->timer, 15);
	pe_eof(h, c);
	pe_gone(h);

	c = pe_client(h);
	pe_send(h, c, "GET http://" API "/ HTTP/1.1\r\n");
	pe_state(h, CONN_READ_HEAD);
	pe_fire(h, pe_conn(h)->timer, 15);
	pe_eof(h, c);
	pe_gone(h);
	pe_no_up(h);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A served keep-alive connection idles for the idle timeout, then closes;
 * its upstream stays in the pool.
 */
static void
test_idle_timeout(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;

	pe_start(h);
	c = pe_client(h);
	u = get_ok(h, c, NULL);
	pe_state(h, CONN_READ_HEAD);
	pe_fire(h, pe_conn(h)->timer, 60);
	pe_eof(h, c);
	pe_gone(h);
	pe_open(h, u);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * An upstream silent for the response timeout: 504 to the client, the
 * upstream closed, the exchange audited with the timeout.
 */
static void
test_response_timeout(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	pe_state(h, CONN_EXCHANGE);
	pe_fire(h, pe_conn(h)->upstream->rd, 120);
	expect_gateway_error(h, c, 504,
	                     "egressd: 504 Gateway Timeout: upstream response timed out\n");
	pe_eof(h, u);
	j = pe_audit(h, "http", "allow", "allow-methods", 504, 0, 0);
	assert_string_equal(pe_field(j, "error"), "upstream response timed out");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/* A tunnel without a byte either way for the tunnel idle timeout is closed on both sides. */
static void
test_tunnel_idle_timeout(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "CONNECT open.example.test:22 HTTP/1.1\r\nHost: open.example.test:22\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_send(h, c, "ping");
	pe_expect(h, u, "ping");
	pe_state(h, CONN_TUNNEL);
	pe_fire(h, pe_conn(h)->client.rd, 600);
	pe_eof(h, c);
	pe_eof(h, u);
	pe_gone(h);
	j = pe_audit(h, "connect", "allow", "open.example.test", 200, 4, 0);
	assert_string_equal(pe_field(j, "tls"), "tunnel");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A client that does not finish its TLS handshake in the header timeout
 * is cut, with a tls event saying so.
 */
static void
test_handshake_timeout(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c;
	json_t *j;

	h->intercept = 1;
	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_fire(h, pe_conn(h)->timer, 15); /* armed for the ClientHello; re-armed below */
	pe_eof(h, c);
	pe_gone(h);
	j = pe_audit(h, "connect", "allow", "unlisted-host", 200, 0, 0);
	assert_string_equal(pe_field(j, "error"), "no TLS ClientHello in time");
	json_decref(j);

	c = pe_client(h);
	pe_send(h, c, "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	pe_expect(h, c, "HTTP/1.1 200 Connection established\r\n\r\n");
	pe_tls_client(h, c, API, 1);
	pe_state(h, CONN_HANDSHAKE);
	json_decref(pe_audit(h, "connect", "allow", "unlisted-host", 200, 0, 0));
	pe_fire(h, pe_conn(h)->timer, 15);
	pe_gone(h);
	j = pe_audit(h, "tls", "block", "client-tls", -1, -1, -1);
	assert_string_equal(pe_field(j, "error"), "TLS handshake timed out");
	assert_string_equal(pe_field(j, "sni"), API);
	json_decref(j);
	pe_no_up(h);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * SIGTERM, through the runtime's own handler: connections waiting for a
 * request and idle pooled upstreams close at once; an exchange in flight
 * finishes, its response saying Connection: close; then the runtime ends
 * its loop.
 */
static void
test_sigterm_drain(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *c2, *u, *u2;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	u = get_ok(h, c, NULL);
	c2 = pe_client(h);
	pe_send(h, c2, "GET http://open.example.test/ HTTP/1.1\r\nHost: open.example.test\r\n\r\n");
	u2 = pe_up(h);
	pe_expect(h, u2, "GET / HTTP/1.1\r\nHost: open.example.test\r\nVia: 1.1 egressd\r\n\r\n");
	assert_int_equal(raise(SIGTERM), 0);
	pe_eof(h, c);
	pe_eof(h, u);
	pe_open(h, c2);
	pe_open(h, u2);
	assert_int_equal(pe_conn(h)->state, CONN_EXCHANGE);
	assert_false(h->exited);
	pe_send(h, u2, RESP_OK);
	pe_expect(h, c2, CLIENT_OK_CLOSE);
	pe_eof(h, c2);
	pe_eof(h, u2); /* not pooled while draining */
	pe_gone(h);
	j = pe_audit(h, "http", "allow", "open.example.test", 200, 0, 2);
	json_decref(j);
	assert_true(h->exited);
	pe_quiet(h);
	pe_stop(h);
}

/* An exchange still open when the grace period ends is cut, and audited so. */
static void
test_sigterm_grace(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/"));
	assert_int_equal(raise(SIGTERM), 0);
	pe_open(h, c);
	assert_false(h->exited);
	pe_fire(h, h->e->ev_grace, 10);
	pe_eof(h, c);
	pe_eof(h, u);
	pe_gone(h);
	assert_true(h->exited);
	j = pe_audit(h, "http", "allow", "allow-methods", -1, 0, 0);
	assert_string_equal(pe_field(j, "error"), "cut at shutdown");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A WebSocket upgrade to an allowlisted host is passed on with its
 * extension offer; the 101 makes the connection a byte relay (TUNNEL).
 */
static void
test_websocket_relay(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "GET http://open.example.test/ws HTTP/1.1\r\nHost: open.example.test\r\n"
	        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	        "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, u,
	          "GET /ws HTTP/1.1\r\nHost: open.example.test\r\n"
	          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	          "Sec-WebSocket-Extensions: permessage-deflate\r\nVia: 1.1 egressd\r\n"
	          "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n");
	pe_send(h, u,
	        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
	pe_expect(h, c,
	          "HTTP/1.1 101 Switching Protocols\r\n"
	          "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nVia: 1.1 egressd\r\n"
	          "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n");
	pe_state(h, CONN_TUNNEL);
	pe_send(h, c,
	        "\x81\x82\x01\x02\x03\x04"
	        "AB"); /* any bytes: not read */
	pe_expect(h, u,
	          "\x81\x82\x01\x02\x03\x04"
	          "AB");
	pe_send(h, u, "\x81\x02hi");
	pe_expect(h, c, "\x81\x02hi");
	pe_close(h, u);
	pe_eof(h, c);
	pe_close(h, c);
	pe_gone(h);
	j = pe_audit(h, "http", "allow", "open.example.test", 101, 8, 4);
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

/*
 * A GraphQL WebSocket to an unlisted host is read message by message:
 * the upgrade goes without extensions, each allowed message goes up
 * re-masked as one frame, a mutation gets close 4403 and never reaches
 * the upstream, which is closed; each operation is a websocket event.
 */
static void
test_websocket_graphql(void **state)
{
	static const char init[] = "{\"type\":\"connection_init\"}";
	static const char query[] = "{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":"
	                            "\"{ viewer { login } }\"}}";
	static const char mutation[] =
	    "{\"type\":\"subscribe\",\"id\":\"2\",\"payload\":{\"query\":"
	    "\"mutation { addStar(id: 1) { id } }\"}}";
	struct pe *h = *state;
	struct pe_sock *c, *u;
	uint8_t f[256];
	size_t n;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c,
	        "GET http://" API "/graphql HTTP/1.1\r\nHost: " API "\r\n"
	        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	        "Sec-WebSocket-Protocol: graphql-transport-ws\r\n"
	        "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
	u = pe_up(h);
	pe_expect(h, u,
	          "GET /graphql HTTP/1.1\r\nHost: " API "\r\n"
	          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	          "Sec-WebSocket-Protocol: graphql-transport-ws\r\nVia: 1.1 egressd\r\n"
	          "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n");
	pe_send(h, u,
	        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
	        "Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n");
	pe_expect(h, c,
	          "HTTP/1.1 101 Switching Protocols\r\n"
	          "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
	          "Sec-WebSocket-Protocol: graphql-transport-ws\r\nVia: 1.1 egressd\r\n"
	          "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n");
	pe_state(h, CONN_TUNNEL);

	n = pe_ws_frame(f, 0x1, init);
	pe_sendn(h, c, f, n);
	pe_ws_expect_masked(h, u, 0x1, init);
	n = pe_ws_frame(f, 0x1, query);
	pe_sendn(h, c, f, n);
	pe_ws_expect_masked(h, u, 0x1, query);
	j = pe_audit(h, "websocket", "allow", "websocket-graphql", -1, -1, -1);
	json_decref(j);
	pe_send(h, u, "\x81\x05hello");
	pe_expect(h, c, "\x81\x05hello");

	n = pe_ws_frame(f, 0x1, mutation);
	pe_sendn(h, c, f, n);
	pe_expect(h, c,
	          "\x88\x32\x11\x33"
	          "egressd: message refused (rule graphql-mutation)");
	pe_eof(h, c);
	pe_eof(h, u);
	pe_gone(h);
	j = pe_audit(h, "websocket", "block", "graphql-mutation", -1, -1, -1);
	json_decref(j);
	j = pe_audit(h, "http", "allow", "websocket-graphql", 101,
	             (long long)(6 + strlen(init) + 6 + strlen(query)), 7);
	assert_string_equal(pe_field(j, "error"), "WebSocket message refused by the policy");
	json_decref(j);
	pe_quiet(h);
	pe_stop(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    SCENARIO(test_get_content_length),
	    SCENARIO(test_chunked_response),
	    SCENARIO(test_close_delimited_response),
	    SCENARIO(test_keepalive_pool),
	    SCENARIO(test_pool_idle),
	    SCENARIO(test_pipelining),
	    SCENARIO(test_blocked),
	    SCENARIO(test_held_body),
	    SCENARIO(test_expect_continue),
	    SCENARIO(test_connect_tunnel),
	    SCENARIO(test_passthrough),
	    SCENARIO(test_intercept),
	    SCENARIO(test_intercept_upstream_cert),
	    SCENARIO(test_tls_wait),
	    SCENARIO(test_flush),
	    SCENARIO(test_upstream_refused),
	    SCENARIO(test_upstream_gone_before_response),
	    SCENARIO(test_stale_pool_retry),
	    SCENARIO(test_connecting_half_close),
	    SCENARIO(test_client_close_mid_head),
	    SCENARIO(test_client_close_mid_body),
	    SCENARIO(test_client_close_mid_response),
	    SCENARIO(test_upstream_close_mid_body),
	    SCENARIO(test_header_timeout),
	    SCENARIO(test_idle_timeout),
	    SCENARIO(test_response_timeout),
	    SCENARIO(test_tunnel_idle_timeout),
	    SCENARIO(test_handshake_timeout),
	    SCENARIO(test_sigterm_drain),
	    SCENARIO(test_sigterm_grace),
	    SCENARIO(test_websocket_relay),
	    SCENARIO(test_websocket_graphql),
	    /* Last: the scenarios above saw every state. */
	    cmocka_unit_test(pe_states_all),
	};

	/* ENGINE_ONLY=test_name (a glob) runs those scenarios alone. */
	if (getenv("ENGINE_ONLY") != NULL)
		cmocka_set_test_filter(getenv("ENGINE_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
