/*
 * The connection engine's harness: the real engine (proxy/, every file)
 * in a real runtime (egressd_new, egressd_start: its signal handlers and
 * its batched audit log) on its own event base, between sockets the test
 * holds, with nothing in a scenario waiting on real time. In the spirit
 * of unbound's testbound: a scenario is a script of the bytes in and out
 * on each side, and of the audit lines they make.
 *
 * What pe_start() sets up, and a scenario uses:
 * - h->e: a runtime with the policy h->yaml and the limits h->conf.lim
 *   (set both before pe_start()), its audit log a pipe the harness reads;
 *   with h->intercept set, TLS interception too (e->tls: a run CA written
 *   to a temp dir, and a test CA of the harness's own as the upstream
 *   trust store, where --upstream-ca would name one);
 * - clients: pe_client() makes a socketpair and hands one end to the
 *   engine with conn_accept(), as the proxy listener would; the test holds
 *   the other end (struct pe_sock). h->client_sndbuf shrinks egressd's
 *   end, so that a response larger than it is still being written;
 * - names: the runtime's resolver is the real one, its one upstream a UDP
 *   socket the harness answers from pe_names (an A record each; AAAA
 *   empty; any other name NXDOMAIN). With h->dns_hold set the questions
 *   wait unanswered (the connection stays CONNECTING) for pe_dns_release();
 * - upstreams: the pool's connect seam (upstream_pool_set_connect) gives
 *   each connection attempt one end of a socketpair, and pe_up() hands the
 *   test the other end, so the upstream side is scripted like the client's
 *   (s->addr: the address egressd chose). h->refuse makes the next attempts
 *   real connects to a loopback port bound and not listening (refused);
 *   pe_no_up() says no attempt was made;
 * - time: no clock moves by itself. pe_fire(h, ev, secs) checks that the
 *   timer ev is armed to expire secs seconds from now (so a scenario proves
 *   which timeout the engine set: header 15, idle 60, response 120, tunnel
 *   600, the pool's 30, the grace 10) and runs it at once, as if they had
 *   passed. The timers are the connection's c->timer, a plain side's read
 *   event (c->client.rd, c->upstream->rd), the pool's u->idle_timer and the
 *   runtime's e->ev_grace; pe_conn(h) is the one open connection. SIGTERM
 *   is raise(SIGTERM): the runtime's own handler drains;
 * - states: pe_state(h, s) asserts the open connection's state and notes
 *   it; the last scenario, pe_states_all, fails unless every state of enum
 *   conn_state was seen.
 *
 * Writing a scenario (see engine_proxy.c; cmocka_unit_test_setup_teardown
 * with pe_setup and pe_teardown, which give *state):
 *
 *	struct pe *h = *state;
 *	struct pe_sock *c, *u;
 *	json_t *j;
 *
 *	pe_start(h);                           h->yaml, h->conf.lim.… before
 *	c = pe_client(h);
 *	pe_send(h, c, "GET http://api.example.test/ HTTP/1.1\r\n"
 *	              "Host: api.example.test\r\n\r\n");       client → egressd
 *	u = pe_up(h);                                           egressd connected up
 *	pe_expect(h, u, "GET / HTTP/1.1\r\nHost: …\r\n\r\n");    egressd → upstream
 *	pe_send(h, u, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
 *	pe_expect(h, c, "HTTP/1.1 200 OK\r\n…\r\n\r\nok");        egressd → client
 *	j = pe_audit(h, "http", "allow", "allow-methods", 200, 0, 2);
 *	json_decref(j);                         event, action, rule, status, bytes
 *	pe_state(h, CONN_READ_HEAD);            waiting for the next request
 *	pe_quiet(h);                            nothing else anywhere
 *	pe_stop(h);
 *
 * pe_expect compares the next bytes exactly and consumes them (a failure
 * shows both, control bytes escaped); pe_expect_reply checks a response
 * egressd made itself (status line, fields, a piece of its body); pe_eof
 * and pe_open say whether egressd closed a side; pe_shut, pe_close and
 * pe_reset (a close with bytes unread: the peer reads a reset) end the
 * test's. pe_tls_client and pe_tls_server turn a pe_sock into TLS
 * (OpenSSL over the socketpair, verifying the run CA, or presenting a
 * leaf of the harness's upstream CA), and the same calls then read and
 * write through it; pe_client_hello makes a ClientHello in memory;
 * pe_ws_frame and pe_ws_expect_masked write and check WebSocket frames.
 * ENGINE_ONLY=glob runs the matching scenarios alone.
 *
 * Why no timing: a socketpair delivers a write to its peer before write
 * returns, and the engine acts on what is readable at its next loop pass,
 * so once the loop has run dry (pe_settle) everything the engine was going
 * to do with the bytes it has is done, and "nothing arrived" is a fact,
 * not a wait. pe_need() and pe_up() bound the loop in real time only so
 * that a broken engine fails the scenario instead of hanging it. Every
 * helper asserts; a scenario reads as its script.
 */
#ifndef PROXY_HARNESS_H
#define PROXY_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <ldns/ldns.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ca.h"
#include "conn_int.h"
#include "resolver.h"

#define PE_SOCKS       32
#define PE_NAMES       16
#define PE_HELD        16
#define PE_WAIT_ROUNDS 2000 /* of at most 1 ms each: a failing scenario's bound */
#define PE_SETTLE      8    /* event loop turns that leave nothing pending */
#define PE_TLS_ROUNDS  64   /* handshake steps, each followed by a settle */
#define PE_FIRE_SLACK  3    /* seconds a timer may have run before pe_fire looks */

#define PE_UNUSED __attribute__((unused))

/* Where the harness's resolver upstream sends each name. */
static const struct pe_name {
	const char *name;
	const char *addr;
} pe_names[] = {
    {"api.example.test", "93.184.216.34"},
    {"open.example.test", "93.184.216.35"},
    {"pinned.example.test", "93.184.216.36"},
    {"ws.example.test", "93.184.216.37"},
};

/*
 * practical mode: an unlisted host gets the method and GraphQL rules;
 * open.example.test is allowlisted, pinned.example.test passthrough.
 */
static const char pe_default_yaml[] = "version: 1\n"
                                      "network:\n"
                                      "  mode: practical\n"
                                      "  inheritGlobal: false\n"
                                      "  blocklist: [\"blocked.example.test\"]\n"
                                      "  allowlist: [\"open.example.test\"]\n"
                                      "  passthrough: [\"pinned.example.test\"]\n";

/* One end the test holds: a client, or an upstream egressd connected to. */
struct pe_sock {
	int fd;
	SSL *ssl;      /* after pe_tls_client / pe_tls_server */
	char addr[64]; /* upstreams: the address egressd connected to */
	struct buf in; /* read and not yet taken by an expectation */
	int eof;
};

/* A question held back (h->dns_hold). */
struct pe_held {
	uint8_t wire[512];
	size_t len;
	struct sockaddr_storage from;
	socklen_t from_len;
};

struct pe {
	const char *yaml;
	struct egressd_conf conf;
	int intercept;     /* set up TLS interception before pe_start */
	int client_sndbuf; /* > 0: egressd's end of the next clients writes this little */
	struct egressd *e;
	int audit_rd;
	char audit_buf[65536];
	size_t audit_len;
	int dns;           /* the resolver's upstream: UDP, answered by the harness */
	int dns_hold;      /* keep questions unanswered */
	unsigned nqueries; /* questions the resolver asked */
	struct pe_held held[PE_HELD];
	size_t nheld;
	struct pe_sock socks[PE_SOCKS];
	size_t nsocks;
	struct pe_sock *ups[PE_SOCKS]; /* upstream connections, in the order made */
	size_t nups, ups_taken;
	int refuse; /* the next connection attempts are refused */
	unsigned nrefused;
	int refuse_fd; /* a loopback port bound and not listening */
	struct sockaddr_storage refuse_addr;
	socklen_t refuse_len;
	int exited; /* the runtime asked its loop to end */
	char dir[64];
	struct ca *upca; /* the upstreams' CA (the --upstream-ca store) */
	struct ca_cache *upleaves;
	SSL_CTX *client_ctx; /* clients: trust the run CA */
	SSL_CTX *server_ctx; /* upstreams: leaves of upca */
};

/* Answer a question of the resolver's from pe_names. */
static void
pe_dns_answer(struct pe *h, const uint8_t *wire, size_t len, const struct sockaddr *from,
              socklen_t from_len)
{
	ldns_pkt *q, *a;
	const ldns_rr *qrr;
	ldns_rr *rr;
	uint8_t *out;
	size_t olen, i, n;
	char *owner, line[512];
	const char *addr = NULL;

	if (ldns_wire2pkt(&q, wire, len) != LDNS_STATUS_OK)
		return;
	qrr = ldns_rr_list_rr(ldns_pkt_question(q), 0);
	owner = ldns_rdf2str(ldns_rr_owner(qrr));
	assert_non_null(owner);
	n = strlen(owner);
	for (i = 0; i < EG_NELEM(pe_names); i++)
		if (strlen(pe_names[i].name) + 1 == n &&
		    strncasecmp(owner, pe_names[i].name, n - 1) == 0)
			addr = pe_names[i].addr;
	a = ldns_pkt_new();
	assert_non_null(a);
	ldns_pkt_set_id(a, ldns_pkt_id(q));
	ldns_pkt_set_qr(a, 1);
	ldns_pkt_set_rd(a, 1);
	ldns_pkt_set_ra(a, 1);
	ldns_pkt_set_rcode(a, addr != NULL ? LDNS_RCODE_NOERROR : LDNS_RCODE_NXDOMAIN);
	assert_true(ldns_pkt_push_rr(a, LDNS_SECTION_QUESTION, ldns_rr_clone(qrr)));
	if (addr != NULL && ldns_rr_get_type(qrr) == LDNS_RR_TYPE_A) {
		snprintf(line, sizeof line, "%s 300 IN A %s", owner, addr);
		assert_int_equal(ldns_rr_new_frm_str(&rr, line, 0, NULL, NULL), LDNS_STATUS_OK);
		assert_true(ldns_pkt_push_rr(a, LDNS_SECTION_ANSWER, rr));
	}
	assert_int_equal(ldns_pkt2wire(&out, a, &olen), LDNS_STATUS_OK);
	assert_int_equal(sendto(h->dns, out, olen, 0, from, from_len), (ssize_t)olen);
	free(out);
	free(owner);
	ldns_pkt_free(a);
	ldns_pkt_free(q);
}

/* Answer (or hold) the questions the resolver has sent. */
static void
pe_dns_serve(struct pe *h)
{
	struct pe_held q;
	ssize_t n;

	for (;;) {
		q.from_len = sizeof q.from;
		n = recvfrom(h->dns, q.wire, sizeof q.wire, MSG_DONTWAIT,
		             (struct sockaddr *)&q.from, &q.from_len);
		if (n <= 0)
			return;
		q.len = (size_t)n;
		h->nqueries++;
		if (h->dns_hold) {
			assert_true(h->nheld < PE_HELD);
			h->held[h->nheld++] = q;
			continue;
		}
		pe_dns_answer(h, q.wire, q.len, (struct sockaddr *)&q.from, q.from_len);
	}
}

/* Run the loop until nothing is left to do at once. */
static PE_UNUSED void
pe_settle(struct pe *h)
{
	int i;

	/*
	 * One pass of the loop at a time: EVLOOP_NONBLOCK alone returns only
	 * once nothing is active, so an engine that spins on an event always
	 * ready would hold the scenario inside one call (until a real timer
	 * fired) instead of failing it at the bounds of pe_need and pe_up.
	 */
	for (i = 0; i < PE_SETTLE; i++) {
		event_base_loop(h->e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (event_base_got_exit(h->e->base))
			h->exited = 1;
		pe_dns_serve(h);
	}
}

/* Answer the questions held so far, and answer from now on. */
static PE_UNUSED void
pe_dns_release(struct pe *h)
{
	size_t i;

	h->dns_hold = 0;
	for (i = 0; i < h->nheld; i++)
		pe_dns_answer(h, h->held[i].wire, h->held[i].len,
		              (struct sockaddr *)&h->held[i].from, h->held[i].from_len);
	h->nheld = 0;
	pe_settle(h);
}

static struct pe_sock *
pe_sock_new(struct pe *h, int fd)
{
	struct pe_sock *s;

	assert_true(h->nsocks < PE_SOCKS);
	s = &h->socks[h->nsocks++];
	memset(s, 0, sizeof *s);
	s->fd = fd;
	buf_init(&s->in);
	return s;
}

/* The connect seam: a socketpair for each attempt, or a refusal when asked. */
static int
pe_connect(void *arg, struct bufferevent *bev, const struct sockaddr *sa, int len)
{
	struct pe *h = arg;
	struct pe_sock *u;
	int sv[2];

	if (h->refuse > 0) {
		h->refuse--;
		h->nrefused++;
		return bufferevent_socket_connect(bev, (struct sockaddr *)&h->refuse_addr,
		                                  (int)h->refuse_len);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	u = pe_sock_new(h, sv[0]);
	sock_text((const struct sockaddr_storage *)sa, u->addr, sizeof u->addr);
	h->ups[h->nups++] = u;
	assert_int_equal(bufferevent_setfd(bev, sv[1]), 0);
	/* Already connected: the bufferevent reports it once writable, as after a connect. */
	return bufferevent_socket_connect(bev, NULL, 0);
}

/* A CA of the harness's own for the upstreams, and the TLS contexts of both test ends. */
static void
pe_tls_init(struct pe *h, struct tls_opts *o, char *ca_out, char *up_ca, size_t len)
{
	char err[256];

	snprintf(h->dir, sizeof h->dir, "/tmp/engine_proxy.XXXXXX");
	assert_non_null(mkdtemp(h->dir));
	snprintf(ca_out, len, "%s/egressd-ca.pem", h->dir);
	snprintf(up_ca, len, "%s/upstream-ca.pem", h->dir);
	h->upca = ca_new_ephemeral(3600, NULL, 0, err, sizeof err);
	assert_non_null(h->upca);
	h->upleaves = ca_cache_new(h->upca, 0);
	assert_int_equal(ca_write_cert(h->upca, up_ca), 0);
	memset(o, 0, sizeof *o);
	o->ca_out = ca_out;
	o->upstream_ca = up_ca;
	o->system_ca = up_ca;

	h->server_ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(h->server_ctx);
	h->client_ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(h->client_ctx);
	SSL_CTX_set_verify(h->client_ctx, SSL_VERIFY_PEER, NULL);
}

static PE_UNUSED void
pe_init(struct pe *h)
{
	memset(h, 0, sizeof *h);
	log_init("egressd", LOG_LVL_WARN);
	h->yaml = pe_default_yaml;
	egressd_conf_init(&h->conf);
	h->audit_rd = h->dns = h->refuse_fd = -1;
}

/* The next line of the audit log, parsed (json_decref it). */
static PE_UNUSED json_t *
pe_audit_next(struct pe *h)
{
	json_error_t jerr;
	json_t *j;
	char *nl;
	ssize_t n;
	size_t len;

	pe_settle(h);
	while ((nl = memchr(h->audit_buf, '\n', h->audit_len)) == NULL) {
		n = read(h->audit_rd, h->audit_buf + h->audit_len,
		         sizeof h->audit_buf - h->audit_len);
		if (n <= 0)
			fail_msg("no audit line");
		h->audit_len += (size_t)n;
	}
	len = (size_t)(nl - h->audit_buf);
	j = json_loadb(h->audit_buf, len, 0, &jerr);
	if (j == NULL)
		fail_msg("audit line is not JSON: %.*s", (int)len, h->audit_buf);
	memmove(h->audit_buf, nl + 1, h->audit_len - len - 1);
	h->audit_len -= len + 1;
	return j;
}

/* A string field of an audit line, or "" when absent. */
static PE_UNUSED const char *
pe_field(const json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s != NULL ? s : "";
}

/* An integer field of an audit line, or -1 when absent. */
static PE_UNUSED long long
pe_int(const json_t *j, const char *key)
{
	const json_t *v = json_object_get(j, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static PE_UNUSED void
pe_start(struct pe *h)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct resolver_conf rc;
	struct tls_opts o;
	struct buf errs;
	struct config *cfg;
	char err[256], spec[64], ca_out[128], up_ca[128];
	socklen_t len = sizeof sin;
	json_t *j;
	int p[2];

	buf_init(&errs);
	cfg = config_load_mem("engine.yaml", h->yaml, strlen(h->yaml), &errs);
	if (cfg == NULL)
		fail_msg("%s", buf_cstr(&errs));
	h->conf.policy = policy_new(cfg, &errs);
	if (h->conf.policy == NULL)
		fail_msg("%s", buf_cstr(&errs));
	buf_free(&errs);
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	h->audit_rd = p[0];
	h->conf.audit = audit_open_fd(p[1], err, sizeof err);
	assert_non_null(h->conf.audit);
	h->e = egressd_new(&h->conf);

	/* The resolver, its one upstream a socket of ours. */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->dns = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(h->dns >= 0);
	assert_int_equal(bind(h->dns, (struct sockaddr *)&sin, sizeof sin), 0);
	sock_local_text(h->dns, spec, sizeof spec);
	resolver_conf_init(&rc);
	assert_null(resolver_conf_add_upstream(&rc, spec));
	h->e->resolver = resolver_new(h->e->base, &rc, h->e->policy, h->e->audit);
	assert_non_null(h->e->resolver);

	/* A port that refuses: bound, never listening. */
	h->refuse_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(h->refuse_fd >= 0);
	assert_int_equal(bind(h->refuse_fd, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal(getsockname(h->refuse_fd, (struct sockaddr *)&h->refuse_addr, &len), 0);
	h->refuse_len = len;

	if (h->intercept) {
		pe_tls_init(h, &o, ca_out, up_ca, sizeof ca_out);
		h->e->tls = tls_new(&o, policy_config(h->e->policy), err, sizeof err);
		if (h->e->tls == NULL)
			fail_msg("tls_new: %s", err);
		assert_int_equal(
		    SSL_CTX_load_verify_locations(h->client_ctx, tls_ca_path(h->e->tls), NULL), 1);
	}
	upstream_pool_set_connect(h->e->pool, pe_connect, h);
	assert_int_equal(egressd_start(h->e), 0);
	j = pe_audit_next(h);
	assert_string_equal(pe_field(j, "event"), "daemon");
	assert_string_equal(pe_field(j, "reason"), "started");
	json_decref(j);
}

/* The one connection open now. */
static PE_UNUSED struct conn *
pe_conn(struct pe *h)
{
	assert_int_equal(h->e->nconns, 1);
	return TAILQ_FIRST(&h->e->conns);
}

/* The states scenarios have seen a connection in (pe_state), for pe_states_all. */
static unsigned pe_states_seen;

/* The one open connection is in state s. */
static PE_UNUSED void
pe_state(struct pe *h, enum conn_state s)
{
	pe_settle(h);
	assert_int_equal(pe_conn(h)->state, s);
	pe_states_seen |= 1u << s;
}

/* Every state of enum conn_state was seen by some scenario run before this. */
static PE_UNUSED void
pe_states_all(void **state)
{
	enum conn_state s;

	for (s = CONN_READ_HEAD; s <= CONN_PEEK; s++)
		if (!(pe_states_seen & (1u << s)))
			fail_msg("no scenario saw a connection in state %d", (int)s);
}

/* No connection is open. */
static PE_UNUSED void
pe_gone(struct pe *h)
{
	pe_settle(h);
	assert_int_equal(h->e->nconns, 0);
}

/* A client connection, accepted by the engine as the proxy listener would. */
static PE_UNUSED struct pe_sock *
pe_client(struct pe *h)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	if (h->client_sndbuf > 0)
		assert_int_equal(
		    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &h->client_sndbuf, sizeof(int)), 0);
	conn_accept(h->e, sv[1], NULL, 0);
	return pe_sock_new(h, sv[0]);
}

/* Read what is there now into s->in; sets s->eof at the end of the stream. */
static void
pe_fill(struct pe_sock *s)
{
	char b[16384];
	ssize_t n;
	int r, err;

	while (!s->eof) {
		if (s->ssl != NULL) {
			ERR_clear_error();
			r = SSL_read(s->ssl, b, sizeof b);
			if (r > 0) {
				buf_add(&s->in, b, (size_t)r);
				continue;
			}
			err = SSL_get_error(s->ssl, r);
			if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
				return;
			s->eof = 1; /* close_notify, or the socket closed under TLS */
			return;
		}
		n = recv(s->fd, b, sizeof b, MSG_DONTWAIT);
		if (n > 0) {
			buf_add(&s->in, b, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		s->eof = 1; /* EOF, or reset */
		return;
	}
}

/* Run the loop until s has n bytes unread (or its end); fails past the bound. */
static PE_UNUSED void
pe_need(struct pe *h, struct pe_sock *s, size_t n)
{
	struct pollfd p = {s->fd, POLLIN, 0};
	int i;

	for (i = 0; i < PE_WAIT_ROUNDS; i++) {
		pe_settle(h);
		pe_fill(s);
		if (s->in.len >= n || s->eof)
			return;
		(void)poll(&p, 1, 1);
	}
	fail_msg("%zu of %zu bytes arrived", s->in.len, n);
}

/* Take n bytes off the front of s->in. */
static void
pe_take(struct pe_sock *s, size_t n)
{
	memmove(s->in.data, s->in.data + n, s->in.len - n);
	s->in.len -= n;
}

/* Bytes as text for a failure message: lines kept, other control bytes as \\xNN. */
static void
pe_show(struct buf *b, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < 8192; i++) {
		if (p[i] == '\n' || (p[i] >= 0x20 && p[i] < 0x7f))
			buf_addc(b, p[i]);
		else if (p[i] == '\r')
			buf_adds(b, "\\r");
		else
			buf_printf(b, "\\x%02x", (unsigned char)p[i]);
	}
}

/* The next n bytes on s are exactly want. */
static PE_UNUSED void
pe_expectn(struct pe *h, struct pe_sock *s, const char *want, size_t n)
{
	struct buf w, g;
	size_t i;

	pe_need(h, s, n);
	for (i = 0; i < n && i < s->in.len && s->in.data[i] == want[i]; i++)
		;
	if (i < n) {
		buf_init(&w);
		buf_init(&g);
		pe_show(&w, want, n);
		pe_show(&g, s->in.data, s->in.len);
		fail_msg("bytes differ at %zu\n--- expected:\n%s\n--- got:\n%s", i, buf_cstr(&w),
		         buf_cstr(&g));
	}
	pe_take(s, n);
}

static PE_UNUSED void
pe_expect(struct pe *h, struct pe_sock *s, const char *want)
{
	pe_expectn(h, s, want, strlen(want));
}

/*
 * The next bytes on s are a response egressd made itself: status line
 * status_line, the fields in fields (each "Name: value\r\n", in order, as
 * a substring of the head), a Content-Length body holding body_part.
 * Returns nothing; the response is consumed.
 */
static PE_UNUSED void
pe_expect_reply(struct pe *h, struct pe_sock *s, const char *status_line, const char *fields,
                const char *body_part)
{
	char *end, *cl, head[4096], body[4096];
	size_t hlen, blen;
	int i;

	for (i = 0; i < PE_WAIT_ROUNDS; i++) {
		pe_need(h, s, s->in.len + 1);
		buf_cstr(&s->in);
		if ((end = strstr(s->in.data, "\r\n\r\n")) != NULL)
			break;
		assert_false(s->eof);
	}
	assert_non_null(end);
	hlen = (size_t)(end - s->in.data) + 4;
	assert_true(hlen < sizeof head);
	memcpy(head, s->in.data, hlen);
	head[hlen] = '\0';
	if (strncmp(head, status_line, strlen(status_line)) != 0 ||
	    head[strlen(status_line)] != '\r')
		fail_msg("status line: expected %s, got:\n%s", status_line, head);
	if (fields != NULL && strstr(head, fields) == NULL)
		fail_msg("fields:\n%s\nnot in:\n%s", fields, head);
	cl = strstr(head, "\r\nContent-Length: ");
	assert_non_null(cl);
	blen = strtoul(cl + 18, NULL, 10);
	assert_true(blen < sizeof body);
	pe_need(h, s, hlen + blen);
	assert_true(s->in.len >= hlen + blen);
	memcpy(body, s->in.data + hlen, blen);
	body[blen] = '\0';
	if (body_part != NULL && strstr(body, body_part) == NULL)
		fail_msg("body:\n%s\ndoes not hold: %s", body, body_part);
	pe_take(s, hlen + blen);
}

/* Nothing more arrived on s, and it is open. */
static PE_UNUSED void
pe_open(struct pe *h, struct pe_sock *s)
{
	pe_settle(h);
	pe_fill(s);
	if (s->in.len > 0)
		fail_msg("unexpected bytes: %.*s", (int)s->in.len, s->in.data);
	assert_false(s->eof);
}

/* Nothing more arrived on s, and egressd closed it. */
static PE_UNUSED void
pe_eof(struct pe *h, struct pe_sock *s)
{
	pe_need(h, s, s->in.len + 1);
	if (s->in.len > 0)
		fail_msg("unexpected bytes: %.*s", (int)s->in.len, s->in.data);
	assert_true(s->eof);
}

static PE_UNUSED void
pe_sendn(struct pe *h, struct pe_sock *s, const void *data, size_t len)
{
	ssize_t n;

	if (s->ssl != NULL) {
		assert_int_equal(SSL_write(s->ssl, data, (int)len), (int)len);
		return;
	}
	n = send(s->fd, data, len, MSG_NOSIGNAL);
	assert_int_equal(n, (ssize_t)len);
}

static PE_UNUSED void
pe_send(struct pe *h, struct pe_sock *s, const char *data)
{
	pe_sendn(h, s, data, strlen(data));
}

/* Half-close: the test's end writes no more. */
static PE_UNUSED void
pe_shut(struct pe *h, struct pe_sock *s)
{
	assert_int_equal(shutdown(s->fd, SHUT_WR), 0);
}

static void
pe_sock_close(struct pe_sock *s)
{
	if (s->ssl != NULL)
		SSL_free(s->ssl);
	s->ssl = NULL;
	if (s->fd != -1)
		close(s->fd);
	s->fd = -1;
}

/* Close the test's end; unread bytes in it make it a reset for the peer. */
static PE_UNUSED void
pe_close(struct pe *h, struct pe_sock *s)
{
	pe_sock_close(s);
}

/* The next upstream connection egressd made (in the order it made them). */
static PE_UNUSED struct pe_sock *
pe_up(struct pe *h)
{
	int i;

	for (i = 0; i < PE_WAIT_ROUNDS && h->ups_taken == h->nups; i++)
		pe_settle(h);
	if (h->ups_taken == h->nups)
		fail_msg("egressd made no upstream connection");
	return h->ups[h->ups_taken++];
}

/* egressd made no upstream connection since the last pe_up. */
static PE_UNUSED void
pe_no_up(struct pe *h)
{
	pe_settle(h);
	assert_int_equal(h->nups, h->ups_taken);
}

/*
 * The timer ev is armed to expire secs seconds from now: make them pass
 * for it alone. It was armed a moment ago, by the base's cached clock, and
 * event_pending reports it in wall-clock time converted from the loop's
 * monotonic one: so up to PE_FIRE_SLACK seconds less count as secs, and
 * 100 ms more. The timeouts a scenario tells apart differ by more.
 */
static PE_UNUSED void
pe_fire(struct pe *h, struct event *ev, long secs)
{
	struct timeval due, now;
	long long left;

	pe_settle(h);
	assert_non_null(ev);
	if (!event_pending(ev, EV_TIMEOUT, &due))
		fail_msg("the timer is not armed");
	gettimeofday(&now, NULL);
	left = (long long)(due.tv_sec - now.tv_sec) * 1000000 + (due.tv_usec - now.tv_usec);
	if (left <= (secs - PE_FIRE_SLACK) * 1000000LL || left > secs * 1000000LL + 100000)
		fail_msg("the timer is armed for %lld ms, not %ld s", left / 1000, secs);
	event_active(ev, EV_TIMEOUT, 1);
	pe_settle(h);
}

/* A TLS handshake step by step, the engine's loop run between the steps. */
static void
pe_tls_handshake(struct pe *h, struct pe_sock *s, int steps)
{
	int i, r, err;

	for (i = 0; steps < 0 ? i < PE_TLS_ROUNDS : i < steps; i++) {
		ERR_clear_error();
		if ((r = SSL_do_handshake(s->ssl)) == 1)
			return;
		err = SSL_get_error(s->ssl, r);
		if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
			fail_msg("TLS handshake failed: %s",
			         ERR_reason_error_string(ERR_peek_last_error()));
		pe_settle(h);
	}
	if (steps < 0)
		fail_msg("TLS handshake did not finish");
}

/*
 * The test's client speaks TLS to egressd for name, verifying the run CA;
 * steps > 0 stops after that many steps (the handshake under way), -1
 * finishes it. pe_tls_finish() finishes one stopped.
 */
static PE_UNUSED void
pe_tls_client(struct pe *h, struct pe_sock *s, const char *name, int steps)
{
	s->ssl = SSL_new(h->client_ctx);
	assert_non_null(s->ssl);
	assert_int_equal(SSL_set_fd(s->ssl, s->fd), 1);
	assert_int_equal(SSL_set_tlsext_host_name(s->ssl, name), 1);
	assert_int_equal(SSL_set1_host(s->ssl, name), 1);
	SSL_set_connect_state(s->ssl);
	pe_tls_handshake(h, s, steps);
}

static PE_UNUSED void
pe_tls_finish(struct pe *h, struct pe_sock *s)
{
	pe_tls_handshake(h, s, -1);
}

/*
 * The test's upstream answers egressd's TLS with a leaf of the upstream CA
 * for name; ok 0: the handshake must fail (egressd refuses the leaf).
 */
static PE_UNUSED void
pe_tls_server_as(struct pe *h, struct pe_sock *s, const char *name, int ok)
{
	X509 *leaf = ca_cache_get(h->upleaves, name, 0);
	int i, r, err;

	assert_non_null(leaf);
	s->ssl = SSL_new(h->server_ctx);
	assert_non_null(s->ssl);
	assert_int_equal(SSL_use_certificate(s->ssl, leaf), 1);
	assert_int_equal(SSL_use_PrivateKey(s->ssl, ca_leaf_key(h->upca)), 1);
	X509_free(leaf);
	assert_int_equal(SSL_set_fd(s->ssl, s->fd), 1);
	SSL_set_accept_state(s->ssl);
	if (ok) {
		pe_tls_handshake(h, s, -1);
		return;
	}
	for (i = 0; i < PE_TLS_ROUNDS; i++) {
		ERR_clear_error();
		if ((r = SSL_do_handshake(s->ssl)) == 1)
			fail_msg("egressd took a leaf it should have refused");
		err = SSL_get_error(s->ssl, r);
		if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
			break;
		pe_settle(h);
	}
	assert_true(i < PE_TLS_ROUNDS);
	SSL_free(s->ssl);
	s->ssl = NULL;
	s->eof = 1;
}

static PE_UNUSED void
pe_tls_server(struct pe *h, struct pe_sock *s, const char *name)
{
	pe_tls_server_as(h, s, name, 1);
}

/*
 * A TLS ClientHello for name as a client would send it, made in memory
 * (the bytes of the first flight, nothing sent anywhere), into out.
 */
static PE_UNUSED void
pe_client_hello(const char *name, struct buf *out)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *rd = BIO_new(BIO_s_mem()), *wr = BIO_new(BIO_s_mem());
	char b[4096];
	SSL *ssl;
	int n;

	assert_non_null(ctx);
	ssl = SSL_new(ctx);
	assert_non_null(ssl);
	SSL_set_bio(ssl, rd, wr);
	assert_int_equal(SSL_set_tlsext_host_name(ssl, name), 1);
	SSL_set_connect_state(ssl);
	assert_int_equal(SSL_do_handshake(ssl), -1);
	while ((n = BIO_read(wr, b, sizeof b)) > 0)
		buf_add(out, b, (size_t)n);
	assert_true(out->len > 0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

/* Close with bytes left unread: the peer's next read is a reset, as with TCP. */
static PE_UNUSED void
pe_reset(struct pe *h, struct pe_sock *s)
{
	char b;

	pe_settle(h);
	assert_int_equal(recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT), 1);
	pe_sock_close(s);
}

/* A WebSocket frame from the client: FIN, opcode, masked (payload < 126 bytes), into out. */
static PE_UNUSED size_t
pe_ws_frame(uint8_t *out, int opcode, const char *payload)
{
	static const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
	size_t i, n = strlen(payload);

	assert_true(n < 126);
	out[0] = (uint8_t)(0x80 | opcode);
	out[1] = (uint8_t)(0x80 | n);
	memcpy(out + 2, mask, 4);
	for (i = 0; i < n; i++)
		out[6 + i] = (uint8_t)payload[i] ^ mask[i % 4];
	return 6 + n;
}

/* The next bytes on s are one masked frame (FIN, opcode) carrying payload, whatever its mask. */
static PE_UNUSED void
pe_ws_expect_masked(struct pe *h, struct pe_sock *s, int opcode, const char *payload)
{
	size_t i, n = strlen(payload);
	uint8_t *f;

	assert_true(n < 126);
	pe_need(h, s, 6 + n);
	assert_true(s->in.len >= 6 + n);
	f = (uint8_t *)s->in.data;
	assert_int_equal(f[0], 0x80 | opcode);
	assert_int_equal(f[1], 0x80 | n);
	for (i = 0; i < n; i++)
		if ((f[6 + i] ^ f[2 + i % 4]) != (uint8_t)payload[i])
			fail_msg("masked payload differs at %zu", i);
	pe_take(s, 6 + n);
}

/*
 * Check the next audit line: event, action ("" for none), rule ("" for
 * none), status (-1: none), bytes_up and bytes_down (-1: not checked);
 * returns it for more checks (json_decref it).
 */
static PE_UNUSED json_t *
pe_audit(struct pe *h, const char *event, const char *action, const char *rule, int status,
         long long up, long long down)
{
	json_t *j = pe_audit_next(h);
	char *text = json_dumps(j, JSON_COMPACT);

	if (strcmp(pe_field(j, "event"), event) != 0 ||
	    strcmp(pe_field(j, "action"), action) != 0 || strcmp(pe_field(j, "rule"), rule) != 0 ||
	    pe_int(j, "status") != status || (up >= 0 && pe_int(j, "bytes_up") != up) ||
	    (down >= 0 && pe_int(j, "bytes_down") != down))
		fail_msg("audit line %s\nexpected event %s action %s rule %s status %d up %lld "
		         "down %lld",
		         text, event, action, rule, status, up, down);
	free(text);
	return j;
}

/* No audit line is waiting. */
static PE_UNUSED void
pe_audit_none(struct pe *h)
{
	char b[4096];
	ssize_t n;

	pe_settle(h);
	n = read(h->audit_rd, b, sizeof b - 1);
	if (n > 0)
		fail_msg("unexpected audit line: %.*s", (int)n, b);
	if (h->audit_len > 0)
		fail_msg("unexpected audit line: %.*s", (int)h->audit_len, h->audit_buf);
}

/* Nothing unread anywhere: the test's ends, the audit log; no upstream connection untaken. */
static PE_UNUSED void
pe_quiet(struct pe *h)
{
	size_t i;

	pe_settle(h);
	for (i = 0; i < h->nsocks; i++) {
		if (h->socks[i].fd == -1)
			continue;
		pe_fill(&h->socks[i]);
		if (h->socks[i].in.len > 0)
			fail_msg("unexpected bytes: %.*s", (int)h->socks[i].in.len,
			         h->socks[i].in.data);
	}
	assert_int_equal(h->nups, h->ups_taken);
	assert_int_equal(h->nheld, 0);
	pe_audit_none(h);
}

static PE_UNUSED void
pe_stop(struct pe *h)
{
	size_t i;
	char path[128];

	egressd_free(h->e);
	h->e = NULL;
	for (i = 0; i < h->nsocks; i++) {
		pe_sock_close(&h->socks[i]);
		buf_free(&h->socks[i].in);
	}
	close(h->audit_rd);
	close(h->dns);
	close(h->refuse_fd);
	SSL_CTX_free(h->client_ctx);
	SSL_CTX_free(h->server_ctx);
	ca_cache_free(h->upleaves);
	ca_free(h->upca);
	if (h->dir[0] != '\0') {
		snprintf(path, sizeof path, "%s/egressd-ca.pem", h->dir);
		(void)unlink(path);
		snprintf(path, sizeof path, "%s/upstream-ca.pem", h->dir);
		(void)unlink(path);
		(void)rmdir(h->dir);
	}
}

/*
 * Every scenario's setup and teardown (cmocka_unit_test_setup_teardown):
 * the harness lives on the heap, so that a scenario that failed half-way
 * (cmocka jumps out of it) leaves no runtime, and no signal handlers, to
 * the next one.
 */
static PE_UNUSED int
pe_setup(void **state)
{
	struct pe *h = xcalloc(1, sizeof *h);

	pe_init(h);
	*state = h;
	return 0;
}

static PE_UNUSED int
pe_teardown(void **state)
{
	struct pe *h = *state;

	if (h->e != NULL)
		pe_stop(h);
	free(h);
	return 0;
}

#endif
