/*
 * HTTPS interception of an allowed CONNECT (or a redirected ClientHello):
 * which tunnels are intercepted, the client's ClientHello read before
 * anything of the tunnel is carried (intercepted and passthrough tunnels
 * alike), the TLS handshake with the client on a leaf for the CONNECT
 * host, the requests inside (origin-form, for that host only), and the
 * `tls` audit events of what went wrong on either leg.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "conn_int.h"

#define INTERCEPT_PEEK_MAX   (SNI_HELLO_MAX + 2048) /* a ClientHello in its records */
#define INTERCEPT_RETRY_MS   10
#define INTERCEPT_METHOD_MAX 20

static void intercept_tls_accept(struct conn *);

/*
 * How an allowed CONNECT is carried: intercepted, or a byte tunnel of
 * some kind. Hosts in network.passthrough are tunnelled untouched; so are
 * allowlisted hosts on ports other than 443, where the allowlist already
 * permits everything and the protocol need not be TLS at all.
 */
enum exchange_tls
intercept_tls_mode(struct conn *c)
{
	struct domain_match m;

	if (c->x->kind == EXCHANGE_TCP)
		return EXCHANGE_TLS_TUNNEL; /* redirected bytes that are not TLS */
	if (c->x->host.kind == HOST_NAME && policy_passthrough(c->policy, &c->x->host, &m))
		return EXCHANGE_TLS_PASSTHROUGH;
	if (c->e->tls == NULL ||
	    (c->x->decision.list == POLICY_LIST_ALLOWLIST && c->x->port != 443))
		return EXCHANGE_TLS_TUNNEL;
	return EXCHANGE_TLS_INTERCEPT;
}

/* Whether the first bytes start an HTTP request line: a method, then a space. */
static int
intercept_looks_http(const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n && i <= INTERCEPT_METHOD_MAX; i++) {
		if (b[i] == ' ')
			return i > 0;
		if (!(b[i] >= 'A' && b[i] <= 'Z') && b[i] != '-' && b[i] != '_')
			return 0;
	}
	return 0;
}

/*
 * Cut a tunnel whose first bytes egressd will not carry; its connect
 * event says so. This is no policy violation that onViolation: flag
 * could let through: bytes egressd cannot read cannot be decided, so the
 * cut holds in every mode.
 */
static void
intercept_peek_refuse(struct conn *c, const char *rule, const char *reason, const char *why)
{
	struct decision *d = &c->x->decision;

	d->action = ACTION_BLOCK;
	str_copy(d->rule, sizeof d->rule, rule);
	d->list = POLICY_LIST_NONE;
	str_copy(d->source, sizeof d->source, "builtin");
	str_copy(d->reason, sizeof d->reason, reason);
	conn_close(c, why);
}

/*
 * What the first bytes of a tunnel are; 1 when more are needed. A TLS
 * ClientHello goes on with its server name noted. A name other than the
 * CONNECT host is cut: the tunnel was decided for one name, and a server
 * shared by many (a CDN) would serve the other (domain fronting). No
 * name at all goes on, since the tunnel still reaches only the address
 * of the host that was decided. Anything but TLS is cut, so a tunnel
 * cannot carry another protocol (SSH, SMTP, plain HTTP) where only TLS
 * was meant to go: past the method rules, or past the passthrough list.
 */
static int
intercept_peek_classify(struct conn *c, const unsigned char *b, size_t n)
{
	char reason[sizeof c->x->decision.reason];
	const char *err, *what;
	struct host h;

	switch (sni_parse(b, n, c->dest->sni, sizeof c->dest->sni, &err)) {
	case SNI_MORE:
		if (n < INTERCEPT_PEEK_MAX)
			return 1;
		intercept_peek_refuse(
		    c, "client-hello",
		    "the ClientHello is larger than egressd reads before it decides",
		    "ClientHello too large");
		return 0;
	case SNI_NOT_TLS:
		what = (c->flags & CONN_F_TLS) ? "a tunnel egressd intercepts"
		                               : "a passthrough tunnel";
		if (intercept_looks_http(b, n))
			snprintf(
			    reason, sizeof reason,
			    "the client sent plain HTTP into %s, which carries TLS only (plain "
			    "HTTP goes to the proxy as an http:// URL, not through CONNECT)",
			    what);
		else
			snprintf(reason, sizeof reason,
			         "the first bytes sent into %s are not a TLS ClientHello, and it "
			         "carries TLS only",
			         what);
		intercept_peek_refuse(c, "not-tls", reason, "not a TLS ClientHello");
		return 0;
	case SNI_ERROR:
		snprintf(reason, sizeof reason, "malformed ClientHello: %s", err);
		intercept_peek_refuse(c, "client-hello", reason, "malformed ClientHello");
		return 0;
	case SNI_FOUND:
		if (host_parse(c->dest->sni, strlen(c->dest->sni), &h) != NULL ||
		    h.kind != c->x->host.kind || strcmp(h.name, c->x->host.name) != 0) {
			snprintf(reason, sizeof reason,
			         "the TLS server name %s differs from the CONNECT host %s",
			         c->dest->sni, c->x->host.name);
			intercept_peek_refuse(c, "sni-mismatch", reason,
			                      "SNI differs from the CONNECT host");
			return 0;
		}
		break;
	case SNI_ABSENT:
		break;
	}
	if (c->flags & CONN_F_TLS) {
		conn_audit(c);
		conn_exchange_free(c);
		intercept_tls_accept(c);
		return 0;
	}
	/* A passthrough tunnel: relayed untouched from here on. */
	side_read(&c->up, 1);
	conn_tunnel(c);
	return 0;
}

/*
 * The client's first bytes are readable. They are peeked and left in the
 * socket, so a handshake that follows reads them itself; bytes the
 * client sent before the 200 and egressd read already are looked at
 * first. Left readable, the socket would wake the loop at once, so the
 * rest of a ClientHello that came in part is waited for with a short
 * timer. The size is bounded here, the time by the header timeout.
 */
static void
intercept_peek_cb(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval retry = {0, INTERCEPT_RETRY_MS * 1000};
	struct conn *c = arg;
	unsigned char b[INTERCEPT_PEEK_MAX];
	ev_ssize_t have;
	ssize_t n = 0;
	int eof = 0;

	have = evbuffer_copyout(bufferevent_get_input(c->client.bev), b, sizeof b);
	if (have < 0)
		have = 0;
	if ((size_t)have < sizeof b) {
		n = recv(fd, b + have, sizeof b - (size_t)have, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			eof = 1;
		else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			conn_close(c, "client error");
			return;
		} else if (n < 0)
			n = 0;
	}
	if (have + n == 0) {
		if (eof)
			conn_close(c, "client closed before its ClientHello");
		else
			event_add(c->peek, NULL);
		return;
	}
	if (intercept_peek_classify(c, b, (size_t)have + (size_t)n) == 1) {
		if (eof)
			conn_close(c, "client closed in the middle of its ClientHello");
		else
			evtimer_add(c->peek_retry, &retry);
	}
}

static void
intercept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	event_add(c->peek, NULL);
}

/*
 * The 200 to a CONNECT is out, intercepted or passthrough: read the
 * client's ClientHello before anything of the tunnel is carried. The
 * CONNECT's exchange stays open meanwhile: its audit event carries what
 * the ClientHello said.
 */
void
intercept_peek_start(struct conn *c)
{
	int fd = bufferevent_getfd(c->client.bev);

	if (c->dest == NULL) {
		c->dest = xcalloc(1, sizeof *c->dest);
		c->dest->host = c->x->host;
		c->dest->port = c->x->port;
	}
	if (c->peek == NULL) {
		c->peek = event_new(c->e->base, fd, EV_READ, intercept_peek_cb, c);
		c->peek_retry = evtimer_new(c->e->base, intercept_retry_cb, c);
	}
	side_read(&c->client, 0);
	conn_set_state(c, CONN_PEEK);
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0)
		event_active(c->peek, EV_READ, 0); /* it may all be here already */
	else
		event_add(c->peek, NULL);
}

void
intercept_tls_failed(struct conn *c, const char *error)
{
	char hint[1024];
	const char *ca = tls_ca_path(c->e->tls), *bundle = tls_bundle_path(c->e->tls);

	if (c->flags & CONN_F_SNI_MISMATCH) {
		conn_audit_tls(c, "sni-mismatch",
		               "the TLS server name differs from the CONNECT host", error, NULL);
		conn_close(c, "SNI differs from the CONNECT host");
		return;
	}
	hint[0] = '\0';
	if (tls_error_is_trust(error))
		snprintf(
		    hint, sizeof hint,
		    "the client may not trust egressd's CA: give it %s (NODE_EXTRA_CA_CERTS=%s; "
		    "SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO=%s)",
		    ca, ca, bundle != NULL ? bundle : ca);
	conn_audit_tls(c, "client-tls", "TLS handshake with the client failed", error,
	               hint[0] ? hint : NULL);
	conn_close(c, "TLS handshake failed");
}

/*
 * The 200 is out. A CONNECT's exchange is still open: its ClientHello is
 * read first (intercept_peek_start), and its audit event waits for the
 * server name. A redirected connection was read by transparent.c already.
 */
void
intercept_tls_start(struct conn *c)
{
	if (c->x != NULL) {
		intercept_peek_start(c);
		return;
	}
	intercept_tls_accept(c);
}

/* The server name in the client's handshake, which tls.c checked against the CONNECT host. */
static void
intercept_sni_cb(void *arg, const char *sni, int mismatch)
{
	struct conn *c = arg;

	str_copy(c->dest->sni, sizeof c->dest->sni, sni);
	if (mismatch)
		c->flags |= CONN_F_SNI_MISMATCH;
}

/* Answer the client's TLS with a leaf for the CONNECT host. */
static void
intercept_tls_accept(struct conn *c)
{
	struct bufferevent *bev;

	side_detach(&c->client); /* the socket goes to TLS */
	c->dest->peer.host = &c->dest->host;
	c->dest->peer.sni_cb = intercept_sni_cb;
	c->dest->peer.arg = c;
	bev = tls_accept(c->e->tls, c->e->base, &c->dest->peer, &c->client.bev);
	if (bev == NULL) {
		intercept_tls_failed(c, "cannot set up TLS for this host");
		return;
	}
	c->client.bev = bev;
	c->client.plain = 0;
	bufferevent_setcb(bev, conn_client_read_cb, conn_client_write_cb, conn_event_cb,
	                  &c->client);
	bufferevent_setwatermark(bev, EV_WRITE, SIDE_LOW_MARK, 0);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	conn_set_state(c, CONN_HANDSHAKE);
}

/*
 * An allowed CONNECT that is intercepted: 200 at once (each request
 * inside gets its own upstream and decision), the client's ClientHello
 * read and the CONNECT audited, then TLS with the client. From here on
 * the connection carries origin-form requests for the CONNECT host only.
 */
void
intercept_start(struct conn *c)
{
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0) {
		respond_error(c, 400, "Bad Request",
		              "bytes sent before the tunnel was established");
		return;
	}
	if (c->dest == NULL)
		c->dest = xcalloc(1, sizeof *c->dest);
	c->dest->host = c->x->host;
	c->dest->port = c->x->port;
	c->x->tls = EXCHANGE_TLS_INTERCEPT;
	respond_established(c);
	if (c->flags & CONN_F_TRANSPARENT) {
		/* Its ClientHello was read already: the event can carry the name now. */
		conn_audit(c);
		conn_exchange_free(c);
	}
	/* The CONNECT's own Connection header says nothing about the requests inside. */
	c->flags = (c->flags & ~CONN_F_CLIENT_CLOSE) | CONN_F_TLS;
	if (evbuffer_get_length(bufferevent_get_output(c->client.bev)) > 0) {
		side_read(&c->client, 0);
		conn_set_state(c, CONN_TLS_WAIT);
		return;
	}
	intercept_tls_start(c);
}

/*
 * Whether a Host header names the intercepted host: the same name or
 * address, and the CONNECT port (443 may be left out).
 */
static int
intercept_host_matches(const struct conn *c, const char *hv)
{
	const char *colon, *end = hv + strlen(hv);
	struct host h;
	unsigned long port = 443;
	char *pend;

	if (*hv == '[') {
		if ((colon = strchr(hv, ']')) == NULL)
			return 0;
		colon = colon[1] == ':' ? colon + 1 : colon[1] == '\0' ? NULL : end;
		if (colon == end)
			return 0;
	} else
		colon = strrchr(hv, ':');
	if (colon != NULL) {
		if (colon[1] < '0' || colon[1] > '9')
			return 0;
		port = strtoul(colon + 1, &pend, 10);
		if (*pend != '\0' || port > 65535)
			return 0;
		end = colon;
	}
	if (host_parse(hv, (size_t)(end - hv), &h) != NULL)
		return 0;
	return h.kind == c->dest->host.kind && strcmp(h.name, c->dest->host.name) == 0 &&
	       port == c->dest->port;
}

/*
 * A request inside an intercepted connection: origin-form (or absolute
 * https:// for the same host), and its Host must be the CONNECT host, so
 * a tunnel opened for one name cannot carry requests for another on the
 * same server (domain fronting).
 */
void
intercept_request(struct conn *c)
{
	const struct http_target *u = &c->x->req.uri;
	const char *hv = http_msg_header(&c->x->req, "Host");

	c->x->host = c->dest->host;
	c->x->port = c->dest->port;
	if (c->x->req.method_id == HTTP_M_CONNECT ||
	    (u->form != HTTP_TARGET_ORIGIN && u->form != HTTP_TARGET_ABSOLUTE)) {
		respond_error(c, 400, "Bad Request", "expected an origin-form request inside TLS");
		return;
	}
	if (u->form == HTTP_TARGET_ABSOLUTE &&
	    (strcmp(u->scheme, "https") != 0 || !intercept_host_matches(c, u->authority))) {
		respond_error(c, 421, "Misdirected Request",
		              "the request names another host than the CONNECT");
		return;
	}
	if (hv == NULL || !intercept_host_matches(c, hv)) {
		respond_error(c, 421, "Misdirected Request",
		              "the Host header names another host than the CONNECT");
		return;
	}
	c->x->authority = u->form == HTTP_TARGET_ABSOLUTE ? u->authority : hv;
	request_body(c);
}
