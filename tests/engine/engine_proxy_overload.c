/*
 * Engine scenarios for egressd under a failing audit log and past its
 * memory budget (proxy_harness.h explains the harness): requests refused
 * with a 503 that says why while audit lines cannot be written, a
 * WebSocket message refused the same way, and, past --max-buffered, a
 * slow reader held to a small window while other connections go on, a
 * body to hold refused, and the episode audited as it starts and ends.
 */
#include "proxy_harness.h"

#define API "api.example.test"

#define SCENARIO(f) cmocka_unit_test_setup_teardown(f, pe_setup, pe_teardown)

#define REQ_GET(path) "GET http://" API path " HTTP/1.1\r\nHost: " API "\r\n\r\n"
#define UP_GET(path)  "GET " path " HTTP/1.1\r\nHost: " API "\r\nVia: 1.1 egressd\r\n\r\n"
#define RESP_OK       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define CLIENT_OK     "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: 2\r\n\r\nok"
#define GQL_QUERY     "{\"query\":\"{ viewer { login } }\"}"

/* The audit log's reader goes away: its next write fails (EPIPE). */
static void
pe_audit_break(struct pe *h)
{
	close(h->audit_rd);
	h->audit_rd = -1;
}

/*
 * The audit log stops taking lines (audit.onError: block, the default).
 * A pipe cannot keep room ahead, so the exchange under way when it fails
 * is the one whose line is lost (a file keeps room: test_audit_audit_full.c).
 * From then on every request is refused with a 503 that says why, and
 * nothing reaches an upstream: a GET, a CONNECT, on the same keep-alive
 * connection; each is counted.
 */
static void
test_audit_unwritable(void **state)
{
	struct pe *h = *state;
	struct pe_sock *c, *u;
	struct audit_stats st;
	json_t *j;

	pe_start(h);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/one"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/one"));
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 2);
	json_decref(j);
	pe_send(h, c, REQ_GET("/two"));
	pe_expect(h, u, UP_GET("/two"));
	pe_audit_break(h);
	pe_send(h, u, RESP_OK);
	pe_expect(h, c, CLIENT_OK);
	pe_settle(h);
	assert_true(audit_refusing(h->e->audit));

	pe_send(h, c, REQ_GET("/three"));
	pe_expect_reply(h, c, "HTTP/1.1 503 Service Unavailable", "Retry-After: 5\r\n",
	                "the audit log cannot be written (Broken pipe); egressd refuses every "
	                "request until it can be written (audit.onError: block)");
	pe_send(h, c, "CONNECT " API ":443 HTTP/1.1\r\nHost: " API ":443\r\n\r\n");
	pe_expect_reply(h, c, "HTTP/1.1 503 Service Unavailable", NULL, "audit.onError: block");
	pe_no_up(h);
	audit_stats(h->e->audit, &st);
	assert_int_equal(st.refused, 2);
	assert_int_equal(st.unwritten, 1); /* /two's line */
	assert_int_equal(st.owed, 0);
	pe_state(h, CONN_READ_HEAD);
	pe_quiet(h);
	pe_stop(h);
}

/* n bytes of a response body: 'b', with a length the client can check. */
static void
pe_body(struct buf *b, size_t n)
{
	buf_reserve(b, n);
	memset(b->data + b->len, 'b', n);
	b->len += n;
}

/*
 * Past the memory budget (--max-buffered 64 KiB here): a client that
 * reads nothing of a large response makes egressd hold what it read of
 * it, until the budget is passed; then the upstream is no longer read
 * (its bytes wait in its socket), and egressd holds little more than the
 * budget. A second client's request that needs its body held is refused
 * (503) instead of waited for, and the episode starts with a daemon line.
 * Once the first client reads, egressd relays the rest, and the next
 * tick ends the episode with a daemon line saying what was shed.
 */
static void
test_budget(void **state)
{
	const size_t total = 256 * 1024, step = 16 * 1024;
	struct pe *h = *state;
	struct pe_sock *c, *c2, *u;
	struct buf big, want;
	size_t sent;
	char req[512];
	json_t *j;

	h->conf.lim.max_buffered = 64 * 1024;
	h->client_sndbuf = 4096;
	pe_start(h);
	buf_init(&big);
	buf_init(&want);
	c = pe_client(h);
	pe_send(h, c, REQ_GET("/big"));
	u = pe_up(h);
	pe_expect(h, u, UP_GET("/big"));
	buf_printf(&big, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", total);
	buf_printf(&want, "HTTP/1.1 200 OK\r\nVia: 1.1 egressd\r\nContent-Length: %zu\r\n\r\n",
	           total);
	pe_body(&big, total);
	pe_body(&want, total);
	pe_sendn(h, u, big.data, big.len - total);
	for (sent = 0; sent < total; sent += step) {
		pe_sendn(h, u, big.data + big.len - total + sent, step);
		pe_settle(h);
	}
	/* The budget and one read past it, not the whole response. */
	assert_true(h->e->buffered > h->e->lim.max_buffered);
	assert_true(h->e->buffered <= h->e->lim.max_buffered + 2 * SIDE_TIGHT_MARK);
	assert_true(pe_conn(h)->client.peer->throttled);

	c2 = pe_client(h);
	snprintf(req, sizeof req,
	         "POST http://" API "/graphql HTTP/1.1\r\nHost: " API "\r\n"
	         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(GQL_QUERY), GQL_QUERY);
	pe_send(h, c2, req);
	pe_expect_reply(h, c2, "HTTP/1.1 503 Service Unavailable", "Retry-After: 5\r\n",
	                "egressd is over its memory budget (--max-buffered)");
	pe_eof(h, c2);
	j = pe_audit_next(h);
	assert_string_equal(pe_field(j, "event"), "daemon");
	assert_string_equal(pe_field(j, "reason"), "overload");
	assert_string_equal(pe_field(j, "rule"), "max-buffered");
	json_decref(j);
	j = pe_audit(h, "http", "block", "max-buffered", 503, 0, 0);
	assert_string_equal(
	    pe_field(j, "error"),
	    "egressd is over its memory budget (--max-buffered): try again shortly");
	json_decref(j);
	assert_int_equal(h->e->ov[OVERLOAD_MEMORY].shed, 1);
	assert_true(h->e->ov[OVERLOAD_MEMORY].on);

	/* The reader reads: the rest comes through, and the budget is clear. */
	pe_expectn(h, c, want.data, want.len);
	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, (long long)total);
	json_decref(j);
	assert_int_equal(h->e->buffered, 0);
	pe_fire(h, h->e->ev_trim, 1);
	j = pe_audit_next(h);
	assert_string_equal(pe_field(j, "reason"), "overload over");
	assert_string_equal(pe_field(j, "rule"), "max-buffered");
	assert_int_equal(pe_int(j, "refused"), 1);
	json_decref(j);
	assert_false(h->e->ov[OVERLOAD_MEMORY].on);
	buf_free(&big);
	buf_free(&want);
	pe_quiet(h);
	pe_stop(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    SCENARIO(test_audit_unwritable),
	    SCENARIO(test_budget),
	};

	if (getenv("ENGINE_ONLY") != NULL)
		cmocka_set_test_filter(getenv("ENGINE_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
