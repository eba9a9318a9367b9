/*
 * The transparent listener: connections that nftables redirected here in
 * strict mode, from programs that never asked for a proxy. The original
 * destination comes from SO_ORIGINAL_DST; the first bytes, peeked and
 * left in the socket, say what the connection is: a TLS ClientHello is
 * decided by its server name like a CONNECT and intercepted the same way,
 * plain HTTP by its Host header, anything else by the original address
 * alone. The upstream is always the name egressd resolves itself, never
 * the address the client aimed at, so a forged SNI or Host reaches only
 * the host it names.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn_int.h"

#define TRANSPARENT_SO_ORIGINAL_DST6 80 /* IP6T_SO_ORIGINAL_DST */
#define TRANSPARENT_PEEK_MAX         (SNI_HELLO_MAX + 2048)
#define TRANSPARENT_RETRY_MS         10
#define TRANSPARENT_METHOD_MAX       20

/*
 * Where the client meant to go. A connection that was not redirected (made
 * to the listener directly) has no original destination of its own: its
 * "original" is the listener itself, and following it would loop.
 */
static int
transparent_original_dst(int fd, struct host *h, uint16_t *port)
{
	struct sockaddr_storage dst, self;
	socklen_t dlen = sizeof dst, slen = sizeof self;
	char text[INET6_ADDRSTRLEN + 2];
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&dst;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&dst;
	int r;

	if (getsockname(fd, (struct sockaddr *)&self, &slen) == -1)
		return -1;
	memset(&dst, 0, sizeof dst);
	if (self.ss_family == AF_INET6)
		r = getsockopt(fd, SOL_IPV6, TRANSPARENT_SO_ORIGINAL_DST6, &dst, &dlen);
	else
		r = getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &dlen);
	if (r == -1)
		return -1;
	/* The kernel does not set dlen: compare what it filled in. */
	if (dst.ss_family == self.ss_family &&
	    (dst.ss_family == AF_INET
	         ? sin->sin_port == ((struct sockaddr_in *)&self)->sin_port &&
	               sin->sin_addr.s_addr == ((struct sockaddr_in *)&self)->sin_addr.s_addr
	         : sin6->sin6_port == ((struct sockaddr_in6 *)&self)->sin6_port &&
	               memcmp(&sin6->sin6_addr, &((struct sockaddr_in6 *)&self)->sin6_addr, 16) ==
	                   0)) {
		errno = ELOOP;
		return -1;
	}
	if (dst.ss_family == AF_INET) {
		inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
		*port = ntohs(sin->sin_port);
	} else if (dst.ss_family == AF_INET6) {
		text[0] = '[';
		inet_ntop(AF_INET6, &sin6->sin6_addr, text + 1, sizeof text - 2);
		strcat(text, "]");
		*port = ntohs(sin6->sin6_port);
	} else {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return host_parse(text, strlen(text), h) == NULL ? 0 : -1;
}

/* 1: the start of an HTTP request line; 0: not one; -1: too short to say. */
static int
transparent_is_http(const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n && i <= TRANSPARENT_METHOD_MAX; i++) {
		if (b[i] == ' ')
			return i > 0;
		if (!((b[i] >= 'A' && b[i] <= 'Z') || b[i] == '-' || b[i] == '_'))
			return 0;
	}
	return i > TRANSPARENT_METHOD_MAX ? 0 : -1;
}

/*
 * A plain HTTP request redirected to the transparent listener: the host is
 * the Host header's (resolved by egressd, never the original address), the
 * port the one the client connected to. No Host: decided by the address.
 */
void
transparent_request(struct conn *c)
{
	const struct http_target *u = &c->x->req.uri;
	const char *hv = http_msg_header(&c->x->req, "Host"), *err, *end;
	size_t len;

	if (c->x->req.method_id == HTTP_M_CONNECT ||
	    (u->form != HTTP_TARGET_ORIGIN && u->form != HTTP_TARGET_ABSOLUTE)) {
		respond_error(c, 400, "Bad Request", "expected an origin-form request");
		return;
	}
	if (u->form == HTTP_TARGET_ABSOLUTE)
		hv = u->authority;
	c->x->port = c->dest->port;
	if (hv == NULL || *hv == '\0') {
		c->x->host = c->dest->host;
		c->x->authority = c->dest->host.name;
	} else {
		if (*hv == '[')
			end = strchr(hv, ']') ? strchr(hv, ']') + 1 : hv + strlen(hv);
		else
			end = strchr(hv, ':') ? strchr(hv, ':') : hv + strlen(hv);
		len = (size_t)(end - hv);
		if ((err = host_parse(hv, len, &c->x->host)) != NULL) {
			respond_error(c, 400, "Bad Request", err);
			return;
		}
		c->x->authority = hv;
	}
	request_body(c);
}

/*
 * Decide a connection the transparent listener classified: host (a name
 * from SNI, or the original address) and the original port, as a CONNECT
 * would be. kind is EXCHANGE_CONNECT for TLS and EXCHANGE_TCP for bytes
 * that are neither TLS nor HTTP (decided by address alone).
 */
void
transparent_decide(struct conn *c, const struct host *h, uint16_t port, enum exchange_kind kind)
{
	struct policy_request pr;

	conn_exchange_new(c);
	c->x->kind = kind;
	c->x->begun = 1;
	c->x->t_start = time_mono_ms();
	c->x->host = *h;
	c->x->port = port;
	c->x->req_body.done = 1;
	memset(&pr, 0, sizeof pr);
	pr.host = &c->x->host;
	pr.method = "CONNECT";
	pr.port = port;
	policy_decide(c->policy, &pr, &c->x->decision);
	/*
	 * Bytes that are neither TLS nor HTTP carry no method or name to
	 * decide by: only an address the allowlist names may receive them.
	 * The rule comes before the address guard, so a refusal of the
	 * guard's (list address) is this rule's.
	 */
	if (kind == EXCHANGE_TCP && c->x->decision.list != POLICY_LIST_ALLOWLIST &&
	    (c->x->decision.action != ACTION_BLOCK || c->x->decision.list == POLICY_LIST_ADDRESS)) {
		c->x->decision.action = ACTION_BLOCK;
		snprintf(c->x->decision.rule, sizeof c->x->decision.rule, "not-http-or-tls");
		c->x->decision.list = POLICY_LIST_NONE;
		snprintf(c->x->decision.source, sizeof c->x->decision.source, "builtin");
		snprintf(c->x->decision.reason, sizeof c->x->decision.reason,
		         "a redirected connection that is neither TLS nor HTTP goes only to an "
		         "allowlisted address");
	}
	conn_proceed(c);
}

/*
 * A connection the transparent listener cuts before deciding it, as a
 * `tcp` event with where it was going (host NULL: not known).
 */
static void
transparent_audit_cut(struct conn *c, const char *rule, const char *reason, const char *error)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "tcp";
	ev.action = "block";
	ev.rule = rule;
	ev.source = "builtin";
	ev.reason = reason;
	ev.mode = conn_mode(c);
	ev.client = c->client_addr;
	if (c->dest != NULL && c->dest->host.name[0] != '\0') {
		ev.host = c->dest->host.name;
		ev.port = c->dest->port;
	}
	ev.error = error;
	audit_write(c->e->audit, &ev);
	c->flags |= CONN_F_AUDITED;
}

/*
 * A redirected connection cut before it sent a byte (it closed, sent
 * nothing within the header timeout, or egressd stopped): with no name to
 * decide by nothing left, but the attempt is in the audit like any other.
 */
void
transparent_audit_silent(struct conn *c, const char *why)
{
	transparent_audit_cut(c, "client-silent",
	                      "a redirected connection sent nothing to decide by before it was cut",
	                      why);
}

/* Decide what the peeked bytes are; 1 when more are needed. */
static int
transparent_classify(struct conn *c, const unsigned char *b, size_t n)
{
	const char *err;
	struct host h;

	switch (sni_parse(b, n, c->dest->sni, sizeof c->dest->sni, &err)) {
	case SNI_MORE:
		if (n >= TRANSPARENT_PEEK_MAX) {
			conn_audit_tls(c, "client-hello", "ClientHello too large",
			               "ClientHello too large", NULL);
			c->flags |= CONN_F_AUDITED;
			conn_close(c, "ClientHello too large");
			return 0;
		}
		return 1;
	case SNI_FOUND:
		if ((err = host_parse(c->dest->sni, strlen(c->dest->sni), &h)) != NULL ||
		    h.kind != HOST_NAME) {
			conn_audit_tls(c, "client-hello", "the TLS server name is not a host name",
			               err ? err : "an address as server name", NULL);
			c->flags |= CONN_F_AUDITED;
			conn_close(c, "bad server name");
			return 0;
		}
		transparent_decide(c, &h, c->dest->port, EXCHANGE_CONNECT);
		return 0;
	case SNI_ABSENT:
		/* No name: the original address is all there is to decide by. */
		transparent_decide(c, &c->dest->host, c->dest->port, EXCHANGE_CONNECT);
		return 0;
	case SNI_ERROR:
		conn_audit_tls(c, "client-hello", "malformed ClientHello", err, NULL);
		c->flags |= CONN_F_AUDITED;
		conn_close(c, "malformed ClientHello");
		return 0;
	case SNI_NOT_TLS:
		break;
	}
	switch (transparent_is_http(b, n)) {
	case -1:
		return 1;
	case 1:
		conn_start(c);
		return 0;
	}
	transparent_decide(c, &c->dest->host, c->dest->port, EXCHANGE_TCP);
	return 0;
}

static void
transparent_peek_cb(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval retry = {0, TRANSPARENT_RETRY_MS * 1000};
	struct conn *c = arg;
	unsigned char b[TRANSPARENT_PEEK_MAX];
	ssize_t n;

	n = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0) {
		conn_close(c, "client closed before sending anything");
		return;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			event_add(c->peek, NULL);
		else
			conn_close(c, "client error");
		return;
	}
	/*
	 * The bytes stay in the socket and keep it readable, so waiting for
	 * the rest of a ClientHello is a short timer, not the read event.
	 */
	if (transparent_classify(c, b, (size_t)n) == 1)
		evtimer_add(c->peek_retry, &retry);
}

static void
transparent_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	event_add(c->peek, NULL);
}

void
transparent_accept(struct egressd *e, int fd, const struct sockaddr *sa)
{
	struct conn *c;
	int err;

	if ((c = conn_new(e, fd, sa)) == NULL)
		return;
	c->flags |= CONN_F_TRANSPARENT;
	c->dest = xcalloc(1, sizeof *c->dest);
	if (transparent_original_dst(fd, &c->dest->host, &c->dest->port) == -1) {
		err = errno;
		log_warnx("conn %llu: transparent listener: %s from %s: %s",
		          (unsigned long long)c->id,
		          err == ELOOP ? "a connection that was not redirected"
		                       : "no original destination",
		          c->client_addr, strerror(err));
		memset(&c->dest->host, 0, sizeof c->dest->host);
		if (err == ELOOP)
			transparent_audit_cut(
			    c, "not-redirected",
			    "a connection made to the transparent listener itself, not "
			    "redirected by the sandbox's rules, is refused: its only "
			    "destination is egressd",
			    "not redirected");
		else
			transparent_audit_cut(c, "not-redirected",
			                      "a connection on the transparent listener without an "
			                      "original destination is refused",
			                      strerror(err));
		conn_close(c, "not redirected");
		return;
	}
	c->peek = event_new(e->base, fd, EV_READ, transparent_peek_cb, c);
	c->peek_retry = evtimer_new(e->base, transparent_retry_cb, c);
	conn_set_state(c, CONN_PEEK);
	event_add(c->peek, NULL);
}
