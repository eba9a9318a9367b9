/*
 * The resolver's engine harness: the real resolver (resolver/, every file)
 * on a real event base, between sockets the test holds, with a clock the
 * test moves by hand. In the spirit of unbound's testbound: a scenario is
 * a script of messages in and out, and nothing in it waits on real time.
 *
 * What eng_start() sets up, and a scenario uses:
 * - h->r: a resolver with the policy h->yaml and the settings h->conf
 *   (set both between eng_init() and eng_start()), serving a UDP socket
 *   and a TCP listener on 127.0.0.1, its audit log a pipe the test reads;
 * - h->nup upstreams: each a UDP socket and a TCP listener on one
 *   loopback port the test holds, given to the resolver as its upstreams
 *   in that order;
 * - a client: one UDP socket of the test's, asking with EDNS (h->edns,
 *   1232 bytes; 0 for none); eng_tcp_open() opens TCP ones;
 * - time: the resolver reads h->now (µs) through its clock seam
 *   (struct resolver_clock), and its timers are kept in h->timers instead
 *   of libevent's. Only eng_advance(h, ms) moves the time, firing the
 *   timers that fall due on the way in order, each from the event loop.
 *
 * Writing a scenario (see engine_resolver.c):
 *
 *	struct eng h;
 *	struct eng_query q;
 *
 *	eng_init(&h);                        h.nup = 2, h.conf.… to change
 *	eng_start(&h);
 *	eng_ask(&h, "www.example.test", LDNS_RR_TYPE_A);     client → resolver
 *	eng_up_recv(&h, 0, &q);                              resolver → upstream 0
 *	eng_up_answer(&h, &q, LDNS_RCODE_NOERROR, an, 0);    upstream 0 → resolver
 *	pkt = eng_client_recv(&h);                           resolver → client
 *	ev = eng_audit_expect(&h, "www.example.test", "allow", "NOERROR", 0);
 *	eng_advance(&h, 1000);                               a second passes
 *	eng_quiet(&h);                                       nothing else was sent
 *	eng_stop(&h);                                        no timer left armed
 *
 * an is a NULL-terminated list of zone-file lines ("www.example.test. 300
 * IN A 93.184.216.34"); eng_up_answer echoes the question exactly as the
 * resolver sent it (its id and 0x20 spelling), as an upstream does;
 * eng_up_send() sends bytes a scenario made itself (a forgery, garbage;
 * eng_answer_wire() makes a right answer to start from). Over TCP:
 * eng_tcp_open(), eng_tcp_ask() and eng_tcp_recv() for a client, and
 * eng_up_accept() for a question the resolver asks again over TCP, which
 * eng_up_answer() then answers on that connection.
 *
 * Why no timing: loopback delivers a datagram to its socket before sendto
 * returns, and the resolver sends from its callbacks, so once the event
 * loop has run dry everything it was going to send is there, and
 * "nothing arrived" is a fact, not a wait. eng_wait() bounds the loop in
 * real time only so that a broken resolver fails the scenario instead of
 * hanging it. Every helper asserts; a scenario reads as its script.
 */
#ifndef RESOLVER_HARNESS_H
#define RESOLVER_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <event2/event.h>
#include <jansson.h>

#include "resolver_int.h"

#define ENG_UPSTREAMS   4
#define ENG_TIMERS      64
#define ENG_WAIT_ROUNDS 2000 /* of at most 1 ms each: a failing scenario's bound */
#define ENG_SETTLE      8    /* event loop turns that leave nothing pending */
#define ENG_T0          (1000ULL * 1000 * 1000) /* the clock's start: 1000 s */

#define ENG_UNUSED __attribute__((unused))

static const char eng_default_yaml[] =
    "version: 1\n"
    "network:\n"
    "  mode: practical\n"
    "  inheritGlobal: false\n"
    "  blocklist: [\"blocked.example.test\", \"*.ads.example.test\"]\n"
    "  allowlist: [\"trusted.example.test\"]\n";

struct eng_up {
	int udp; /* where the resolver's tries arrive */
	int tcp; /* a listener on the same port, for questions asked again over TCP */
	char spec[64];
};

struct eng_timer {
	struct event *ev;
	uint64_t due; /* µs */
};

struct eng {
	const char *yaml;
	struct resolver_conf conf;
	int nup;
	struct event_base *base;
	struct policy *policy;
	struct resolver *r;
	struct audit *audit;
	int audit_rd;
	char audit_buf[65536];
	size_t audit_len;
	int client;    /* UDP, connected to the resolver */
	uint16_t edns; /* the clients' EDNS size, 0 for none */
	struct sockaddr_storage dns;
	socklen_t dns_len;
	struct eng_up up[ENG_UPSTREAMS];
	uint64_t now;
	struct eng_timer timers[ENG_TIMERS];
	size_t ntimers;
	uint16_t next_id;
};

/* A question as the resolver sent it to an upstream. */
struct eng_query {
	int up;     /* which upstream got it */
	int tcp_fd; /* -1: over UDP */
	struct sockaddr_storage from;
	socklen_t from_len;
	uint8_t wire[1024];
	size_t len;
	uint16_t id;
	ldns_pkt *pkt;
	char qname[DNS_MSG_NAME_MAX + 1]; /* as spelt on the wire, with the final dot */
	ldns_rr_type qtype;
};

/* The clock seam: the resolver's notion of now, and its timers, are ours. */
static uint64_t
eng_clock_now(void *arg)
{
	return ((struct eng *)arg)->now;
}

static void
eng_clock_add(void *arg, struct event *ev, uint64_t ms)
{
	struct eng *h = arg;
	size_t i;

	for (i = 0; i < h->ntimers; i++)
		if (h->timers[i].ev == ev)
			break;
	assert_true(i < ENG_TIMERS);
	if (i == h->ntimers)
		h->ntimers++;
	h->timers[i].ev = ev;
	h->timers[i].due = h->now + ms * 1000;
}

static void
eng_clock_del(void *arg, struct event *ev)
{
	struct eng *h = arg;
	size_t i;

	for (i = 0; i < h->ntimers; i++) {
		if (h->timers[i].ev == ev) {
			h->timers[i] = h->timers[--h->ntimers];
			return;
		}
	}
}

/* Run the loop until nothing is left to do at once. */
static ENG_UNUSED void
eng_settle(struct eng *h)
{
	int i;

	for (i = 0; i < ENG_SETTLE; i++)
		event_base_loop(h->base, EVLOOP_NONBLOCK);
}

/* Run the loop until fd is readable; fails the scenario past the bound. */
static ENG_UNUSED void
eng_wait(struct eng *h, int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	int i;

	for (i = 0; i < ENG_WAIT_ROUNDS; i++) {
		event_base_loop(h->base, EVLOOP_NONBLOCK);
		if (poll(&p, 1, i == 0 ? 0 : 1) == 1)
			return;
	}
	fail_msg("nothing arrived on fd %d", fd);
}

/* Move the clock ms forward, firing the timers due on the way, in order. */
static ENG_UNUSED void
eng_advance(struct eng *h, uint64_t ms)
{
	uint64_t target = h->now + ms * 1000;
	struct event *ev;
	size_t i, first;

	for (;;) {
		eng_settle(h);
		for (i = 0, first = h->ntimers; i < h->ntimers; i++)
			if (h->timers[i].due <= target &&
			    (first == h->ntimers || h->timers[i].due < h->timers[first].due))
				first = i;
		if (first == h->ntimers)
			break;
		if (h->timers[first].due > h->now)
			h->now = h->timers[first].due;
		ev = h->timers[first].ev;
		h->timers[first] = h->timers[--h->ntimers];
		event_active(ev, EV_TIMEOUT, 1);
	}
	h->now = target;
	eng_settle(h);
}

static ENG_UNUSED void
eng_init(struct eng *h)
{
	memset(h, 0, sizeof *h);
	h->yaml = eng_default_yaml;
	h->nup = 1;
	resolver_conf_init(&h->conf);
	h->conf.attempt_ms = 1000;
	h->conf.deadline_ms = 4000;
	h->now = ENG_T0;
	h->next_id = 0x100;
	h->edns = 1232;
	h->client = h->audit_rd = -1;
}

static ENG_UNUSED void
eng_start(struct eng *h)
{
	static const struct resolver_clock clock0 = {eng_clock_now, eng_clock_add, eng_clock_del,
	                                             NULL};
	struct resolver_clock clock = clock0;
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	struct buf errs;
	struct config *cfg;
	char err[256];
	int udp, tcp, p[2], i;

	assert_true(h->nup >= 0 && h->nup <= ENG_UPSTREAMS);
	buf_init(&errs);
	cfg = config_load_mem("engine.yaml", h->yaml, strlen(h->yaml), &errs);
	assert_non_null(cfg);
	h->policy = policy_new(cfg, &errs);
	assert_non_null(h->policy);
	buf_free(&errs);

	for (i = 0; i < h->nup; i++) {
		assert_int_equal(
		    resolver_bind("127.0.0.1:0", &h->up[i].udp, &h->up[i].tcp, err, sizeof err), 0);
		sock_local_text(h->up[i].udp, h->up[i].spec, sizeof h->up[i].spec);
		assert_null(resolver_conf_add_upstream(&h->conf, h->up[i].spec));
	}
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	h->audit_rd = p[0];
	h->audit = audit_open_fd(p[1], err, sizeof err);
	assert_non_null(h->audit);

	h->base = event_base_new();
	assert_non_null(h->base);
	h->r = resolver_new(h->base, &h->conf, h->policy, h->audit);
	clock.arg = h;
	resolver_set_clock(h->r, &clock);
	assert_int_equal(resolver_bind("127.0.0.1:0", &udp, &tcp, err, sizeof err), 0);
	assert_int_equal(getsockname(udp, (struct sockaddr *)&ss, &len), 0);
	h->dns = ss;
	h->dns_len = len;
	assert_int_equal(resolver_listen(h->r, udp, tcp), 0);

	h->client = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(h->client >= 0);
	assert_int_equal(connect(h->client, (struct sockaddr *)&h->dns, h->dns_len), 0);
}

/* Nothing left unread anywhere: client, upstreams, audit log. */
static ENG_UNUSED void
eng_quiet(struct eng *h)
{
	struct pollfd p[2 + 2 * ENG_UPSTREAMS];
	int i, n = 0;

	eng_settle(h);
	p[n++] = (struct pollfd){h->client, POLLIN, 0};
	p[n++] = (struct pollfd){h->audit_rd, POLLIN, 0};
	for (i = 0; i < h->nup; i++) {
		p[n++] = (struct pollfd){h->up[i].udp, POLLIN, 0};
		p[n++] = (struct pollfd){h->up[i].tcp, POLLIN, 0};
	}
	assert_int_equal(poll(p, (nfds_t)n, 0), 0);
	assert_int_equal(h->audit_len, 0);
}

static ENG_UNUSED void
eng_stop(struct eng *h)
{
	int i;

	resolver_free(h->r);
	audit_close(h->audit);
	close(h->audit_rd);
	close(h->client);
	for (i = 0; i < h->nup; i++) {
		close(h->up[i].udp);
		close(h->up[i].tcp);
	}
	assert_int_equal(h->ntimers, 0);
	event_base_free(h->base);
	policy_unref(h->policy);
}

/* A client's query for name (no final dot), with RD, and EDNS unless h->edns is 0. */
static ENG_UNUSED size_t
eng_query_wire(struct eng *h, const char *name, ldns_rr_type t, uint16_t *id, uint8_t *out,
               size_t cap)
{
	ldns_pkt *pkt = NULL;
	uint8_t *wire;
	size_t len;

	assert_int_equal(ldns_pkt_query_new_frm_str(&pkt, name, t, LDNS_RR_CLASS_IN, LDNS_RD),
	                 LDNS_STATUS_OK);
	*id = h->next_id++;
	ldns_pkt_set_id(pkt, *id);
	if (h->edns > 0)
		ldns_pkt_set_edns_udp_size(pkt, h->edns);
	assert_int_equal(ldns_pkt2wire(&wire, pkt, &len), LDNS_STATUS_OK);
	assert_true(len <= cap);
	memcpy(out, wire, len);
	free(wire);
	ldns_pkt_free(pkt);
	return len;
}

/* The client asks name over UDP; returns the query's id. */
static ENG_UNUSED uint16_t
eng_ask(struct eng *h, const char *name, ldns_rr_type t)
{
	uint8_t q[512];
	uint16_t id;
	size_t len = eng_query_wire(h, name, t, &id, q, sizeof q);

	assert_int_equal(send(h->client, q, len, 0), (ssize_t)len);
	return id;
}

/* The client sends bytes of its own (a malformed query). */
static ENG_UNUSED void
eng_client_send(struct eng *h, const uint8_t *msg, size_t len)
{
	assert_int_equal(send(h->client, msg, len, 0), (ssize_t)len);
}

/* The client's next answer over UDP, parsed (to free with ldns_pkt_free). */
static ENG_UNUSED ldns_pkt *
eng_client_recv(struct eng *h)
{
	uint8_t b[4096];
	ldns_pkt *pkt;
	ssize_t n;

	eng_wait(h, h->client);
	n = recv(h->client, b, sizeof b, 0);
	assert_true(n > 0);
	assert_int_equal(ldns_wire2pkt(&pkt, b, (size_t)n), LDNS_STATUS_OK);
	return pkt;
}

/* A TCP connection to the resolver, non-blocking. */
static ENG_UNUSED int
eng_tcp_open(struct eng *h)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	/* The kernel completes the handshake from the listen queue. */
	assert_int_equal(connect(fd, (struct sockaddr *)&h->dns, h->dns_len), 0);
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

/* Write a length-prefixed message on a TCP connection. */
static ENG_UNUSED void
eng_tcp_send(int fd, const uint8_t *msg, size_t len)
{
	uint8_t b[2 + 1024];

	assert_true(len <= sizeof b - 2);
	b[0] = (uint8_t)(len >> 8);
	b[1] = (uint8_t)len;
	memcpy(b + 2, msg, len);
	assert_int_equal(send(fd, b, len + 2, MSG_NOSIGNAL), (ssize_t)(len + 2));
}

/* The client asks name over TCP connection fd; returns the query's id. */
static ENG_UNUSED uint16_t
eng_tcp_ask(struct eng *h, int fd, const char *name, ldns_rr_type t)
{
	uint8_t q[512];
	uint16_t id;
	size_t len = eng_query_wire(h, name, t, &id, q, sizeof q);

	eng_tcp_send(fd, q, len);
	return id;
}

/* Read one length-prefixed message from fd into b (cap bytes); its length. */
static ENG_UNUSED size_t
eng_tcp_read(struct eng *h, int fd, uint8_t *b, size_t cap)
{
	size_t have = 0, want = 2;
	ssize_t n;
	int i;

	for (i = 0; i < ENG_WAIT_ROUNDS && have < want; i++) {
		eng_wait(h, fd);
		n = recv(fd, b + have, want - have, 0);
		assert_true(n > 0);
		have += (size_t)n;
		if (have == 2 && want == 2) {
			want = 2 + ((size_t)b[0] << 8 | b[1]);
			assert_true(want <= cap);
		}
	}
	assert_int_equal(have, want);
	memmove(b, b + 2, want - 2);
	return want - 2;
}

/* The next answer on the client's TCP connection fd, parsed. */
static ENG_UNUSED ldns_pkt *
eng_tcp_recv(struct eng *h, int fd)
{
	uint8_t b[2 + 65535];
	ldns_pkt *pkt;
	size_t n = eng_tcp_read(h, fd, b, sizeof b);

	assert_int_equal(ldns_wire2pkt(&pkt, b, n), LDNS_STATUS_OK);
	return pkt;
}

static void
eng_query_parse(struct eng_query *q)
{
	const ldns_rr *rr;
	char *s;

	assert_int_equal(ldns_wire2pkt(&q->pkt, q->wire, q->len), LDNS_STATUS_OK);
	q->id = ldns_pkt_id(q->pkt);
	assert_false(ldns_pkt_qr(q->pkt));
	assert_int_equal(ldns_pkt_qdcount(q->pkt), 1);
	rr = ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0);
	q->qtype = ldns_rr_get_type(rr);
	/* As spelt on the wire: ldns keeps the case of a name. */
	s = ldns_rdf2str(ldns_rr_owner(rr));
	assert_non_null(s);
	snprintf(q->qname, sizeof q->qname, "%s", s);
	free(s);
}

/* The next question the resolver sent upstream u over UDP, into q. */
static ENG_UNUSED void
eng_up_recv(struct eng *h, int u, struct eng_query *q)
{
	ssize_t n;

	memset(q, 0, sizeof *q);
	q->up = u;
	q->tcp_fd = -1;
	eng_wait(h, h->up[u].udp);
	q->from_len = sizeof q->from;
	n = recvfrom(h->up[u].udp, q->wire, sizeof q->wire, 0, (struct sockaddr *)&q->from,
	             &q->from_len);
	assert_true(n > 0);
	q->len = (size_t)n;
	eng_query_parse(q);
}

/* The question the resolver asks upstream u over TCP: accept, read it, into q. */
static ENG_UNUSED void
eng_up_accept(struct eng *h, int u, struct eng_query *q)
{
	memset(q, 0, sizeof *q);
	q->up = u;
	eng_wait(h, h->up[u].tcp);
	q->tcp_fd = accept4(h->up[u].tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(q->tcp_fd >= 0);
	q->len = eng_tcp_read(h, q->tcp_fd, q->wire, sizeof q->wire);
	eng_query_parse(q);
}

static ENG_UNUSED void
eng_query_free(struct eng_query *q)
{
	ldns_pkt_free(q->pkt);
	q->pkt = NULL;
	if (q->tcp_fd != -1)
		close(q->tcp_fd);
	q->tcp_fd = -1;
}

/* Add zone-file lines (NULL-terminated; NULL for none) to a section of pkt. */
static void
eng_push(ldns_pkt *pkt, ldns_pkt_section sec, const char *const *rrs)
{
	ldns_rr *rr;

	for (; rrs != NULL && *rrs != NULL; rrs++) {
		assert_int_equal(ldns_rr_new_frm_str(&rr, *rrs, 0, NULL, NULL), LDNS_STATUS_OK);
		assert_true(ldns_pkt_push_rr(pkt, sec, rr));
	}
}

/*
 * An upstream's answer to q in wire form: q's id and question as sent,
 * rcode, the answer section an and the authority section ns; tc sets the
 * truncation bit. Returns its length.
 */
static ENG_UNUSED size_t
eng_answer_wire(const struct eng_query *q, ldns_pkt_rcode rcode, const char *const *an,
                const char *const *ns, int tc, uint8_t *out, size_t cap)
{
	ldns_pkt *pkt = ldns_pkt_new();
	uint8_t *wire;
	size_t len;

	assert_non_null(pkt);
	ldns_pkt_set_id(pkt, q->id);
	ldns_pkt_set_qr(pkt, 1);
	ldns_pkt_set_rd(pkt, 1);
	ldns_pkt_set_ra(pkt, 1);
	ldns_pkt_set_tc(pkt, tc != 0);
	ldns_pkt_set_rcode(pkt, (uint8_t)rcode);
	assert_true(ldns_pkt_push_rr(pkt, LDNS_SECTION_QUESTION,
	                             ldns_rr_clone(ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0))));
	eng_push(pkt, LDNS_SECTION_ANSWER, an);
	eng_push(pkt, LDNS_SECTION_AUTHORITY, ns);
	assert_int_equal(ldns_pkt2wire(&wire, pkt, &len), LDNS_STATUS_OK);
	assert_true(len <= cap);
	memcpy(out, wire, len);
	free(wire);
	ldns_pkt_free(pkt);
	return len;
}

/* Send bytes to the resolver as q's upstream: to the try's port, or on its TCP connection. */
static ENG_UNUSED void
eng_up_send(struct eng *h, const struct eng_query *q, const uint8_t *msg, size_t len)
{
	if (q->tcp_fd != -1) {
		eng_tcp_send(q->tcp_fd, msg, len);
		return;
	}
	assert_int_equal(
	    sendto(h->up[q->up].udp, msg, len, 0, (const struct sockaddr *)&q->from, q->from_len),
	    (ssize_t)len);
}

/* Answer q as its upstream: rcode, answer records an (NULL-terminated, or NULL). */
static ENG_UNUSED void
eng_up_answer(struct eng *h, const struct eng_query *q, ldns_pkt_rcode rcode, const char *const *an,
              int tc)
{
	uint8_t b[4096];
	size_t len = eng_answer_wire(q, rcode, an, NULL, tc, b, sizeof b);

	eng_up_send(h, q, b, len);
}

/* The Extended DNS Error of a reply: its info code (-1: none) and text. */
static ENG_UNUSED int
eng_ede(const ldns_pkt *pkt, char *text, size_t tlen)
{
	ldns_edns_option_list *ol;
	ldns_edns_option *o;
	size_t i;
	int code = -1;

	text[0] = '\0';
	ol = ldns_pkt_edns_get_option_list((ldns_pkt *)pkt);
	for (i = 0; ol != NULL && i < ldns_edns_option_list_get_count(ol); i++) {
		o = ldns_edns_option_list_get_option(ol, i);
		if (ldns_edns_get_code(o) != LDNS_EDNS_EDE || ldns_edns_get_size(o) < 2)
			continue;
		code = ldns_edns_get_data(o)[0] << 8 | ldns_edns_get_data(o)[1];
		snprintf(text, tlen, "%.*s", (int)ldns_edns_get_size(o) - 2,
		         (const char *)ldns_edns_get_data(o) + 2);
	}
	return code;
}

/* The address records of a reply's answer section, as text, space-separated. */
static ENG_UNUSED void
eng_addrs(const ldns_pkt *pkt, char *out, size_t cap)
{
	const ldns_rr_list *an = ldns_pkt_answer(pkt);
	const ldns_rr *rr;
	char *s;
	size_t i, n = 0;

	out[0] = '\0';
	for (i = 0; i < ldns_rr_list_rr_count(an); i++) {
		rr = ldns_rr_list_rr(an, i);
		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_A &&
		    ldns_rr_get_type(rr) != LDNS_RR_TYPE_AAAA)
			continue;
		s = ldns_rdf2str(ldns_rr_rdf(rr, 0));
		n += (size_t)snprintf(out + n, cap - n, "%s%s", n > 0 ? " " : "", s);
		free(s);
		assert_true(n < cap);
	}
}

/* The next line of the audit log, parsed (json_decref it). */
static ENG_UNUSED json_t *
eng_audit_next(struct eng *h)
{
	json_error_t jerr;
	json_t *j;
	char *nl;
	ssize_t n;
	size_t len;

	eng_settle(h);
	while ((nl = memchr(h->audit_buf, '\n', h->audit_len)) == NULL) {
		n = read(h->audit_rd, h->audit_buf + h->audit_len,
		         sizeof h->audit_buf - h->audit_len);
		if (n <= 0)
			fail_msg("no audit line");
		h->audit_len += (size_t)n;
	}
	len = (size_t)(nl - h->audit_buf);
	j = json_loadb(h->audit_buf, len, 0, &jerr);
	assert_non_null(j);
	memmove(h->audit_buf, nl + 1, h->audit_len - len - 1);
	h->audit_len -= len + 1;
	return j;
}

/* A string field of an audit line, or "" when absent. */
static ENG_UNUSED const char *
eng_field(const json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s != NULL ? s : "";
}

/*
 * Check the next audit line: a dns event for qname with action, rcode
 * ("" for none) and cached; returns it for more checks (json_decref it).
 */
static ENG_UNUSED json_t *
eng_audit_expect(struct eng *h, const char *qname, const char *action, const char *rcode,
                 int cached)
{
	json_t *j = eng_audit_next(h);

	assert_string_equal(eng_field(j, "event"), "dns");
	assert_string_equal(eng_field(j, "qname"), qname);
	assert_string_equal(eng_field(j, "action"), action);
	assert_string_equal(eng_field(j, "rcode"), rcode);
	assert_int_equal(json_is_true(json_object_get(j, "cached")), cached);
	return j;
}

#endif
