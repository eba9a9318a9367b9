/*
 * HTTPS interception of an allowed CONNECT (or a redirected ClientHello):
 * which tunnels are intercepted, the TLS handshake with the client on a
 * leaf for the CONNECT host, the requests inside (origin-form, for that
 * host only), and the `tls` audit events of what went wrong on either leg.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy.h"

/*
 * One `tls` audit event: a handshake that did not succeed, with the client
 * or (inside an intercepted connection) with the upstream.
 */
void
intercept_audit(struct conn *c, const char *rule, const char *reason, const char *error,
                const char *hint)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "tls";
	ev.action = "block";
	ev.rule = rule;
	ev.source = rule != NULL ? "builtin" : NULL;
	ev.reason = reason;
	ev.mode = conn_mode(c);
	ev.client = c->client_addr;
	ev.host = c->dest->host.name;
	ev.port = c->dest->port;
	ev.sni = c->dest->sni[0] ? c->dest->sni : NULL;
	ev.tls = (c->flags & CONN_F_TLS) ? "intercept" : NULL;
	ev.error = error;
	ev.hint = hint;
	audit_write(c->e->audit, &ev);
}

/*
 * How an allowed CONNECT is carried: NULL to intercept it, else the kind
 * of byte tunnel. Hosts in network.passthrough are tunnelled untouched;
 * so are allowlisted hosts on ports other than 443, where the allowlist
 * already permits everything and the protocol need not be TLS at all.
 */
const char *
intercept_tunnel_kind(struct conn *c)
{
	struct domain_match m;
	const char *list = c->x->decision.list;

	if (c->x->event != NULL)
		return "tunnel"; /* transparent bytes that are not TLS */
	if (c->x->host.kind == HOST_NAME && policy_passthrough(c->policy, &c->x->host, &m))
		return "passthrough";
	if (c->e->tls == NULL ||
	    (list != NULL && strcmp(list, "allowlist") == 0 && c->x->port != 443))
		return "tunnel";
	return NULL;
}

void
intercept_tls_failed(struct conn *c, const char *error)
{
	char hint[1024];
	const char *ca = tls_ca_path(c->e->tls), *bundle = tls_bundle_path(c->e->tls);

	if (c->flags & CONN_F_SNI_MISMATCH) {
		intercept_audit(c, "sni-mismatch",
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
	intercept_audit(c, NULL, "TLS handshake with the client failed", error,
	                hint[0] ? hint : NULL);
	conn_close(c, "TLS handshake failed");
}

/* The 200 is out: answer the client's TLS with a leaf for the CONNECT host. */
void
intercept_tls_start(struct conn *c)
{
	struct bufferevent *bev;

	side_detach(&c->client); /* the socket goes to TLS */
	bev = tls_accept(c->e->tls, c->e->base, c, &c->client.bev);
	if (bev == NULL) {
		intercept_tls_failed(c, "cannot set up TLS for this host");
		return;
	}
	c->client.bev = bev;
	c->client.plain = 0;
	bufferevent_setcb(bev, conn_client_read_cb, conn_client_write_cb, conn_event_cb,
	                  &c->client);
	bufferevent_setwatermark(bev, EV_WRITE, RELAY_LOW_MARK, 0);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	conn_set_state(c, CONN_HANDSHAKE);
}

/*
 * An allowed CONNECT that is intercepted: 200 at once (each request
 * inside gets its own upstream and decision), the CONNECT audited, then
 * TLS with the client. From here on the connection carries origin-form
 * requests for the CONNECT host only.
 */
void
intercept_start(struct conn *c)
{
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0) {
		respond_error(c, 400, "Bad Request",
		              "bytes sent before the tunnel was established");
		return;
	}
	if (c->dest == NULL)
		c->dest = xcalloc(1, sizeof *c->dest);
	c->dest->host = c->x->host;
	c->dest->port = c->x->port;
	c->x->status = 200;
	c->x->tls = "intercept";
	if (!(c->flags & CONN_F_TRANSPARENT))
		relay_send(&c->client, established, sizeof established - 1);
	conn_audit(c);
	conn_exchange_free(c);
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
	if (strcmp(c->x->req.method, "CONNECT") == 0 ||
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
	conn_request_body(c, 0);
}
