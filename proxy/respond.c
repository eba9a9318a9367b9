/*
 * egressd's own answers to a client: a short plain-text response, an error
 * that ends the connection (400, 502, 504, ...), and the 403 of a policy
 * block, which names the rule, its source and the policyctl command that
 * explains it. Each is audited with the exchange.
 */
#include <sys/socket.h>

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy.h"

/* A short response of our own: errors and policy blocks. */
static void
respond_reply(struct conn *c, int status, const char *reason, const char *body, int keep)
{
	struct evbuffer *out = bufferevent_get_output(c->client.bev);

	if (c->flags & CONN_F_RESP_STARTED) {
		/* Too late for a status: the client sees the connection cut. */
		conn_close(c, c->x->error ? c->x->error : reason);
		return;
	}
	c->x->status = status;
	c->flags |= CONN_F_RESP_STARTED;
	evbuffer_add_printf(out,
	                    "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	                    "Content-Length: %zu\r\nCache-Control: no-store\r\n",
	                    status, reason, strlen(body));
	if (status == 403 && c->x->decision.rule[0] != '\0')
		evbuffer_add_printf(out, "X-Egress-Rule: %s\r\n", c->x->decision.rule);
	evbuffer_add_printf(out, "Connection: %s\r\n\r\n%s", keep ? "keep-alive" : "close", body);
	if (!keep)
		c->flags |= CONN_F_CLIENT_CLOSE;
}

void
respond_error(struct conn *c, int status, const char *reason, const char *detail)
{
	char body[512];

	if (c->x->error == NULL)
		c->x->error = detail;
	snprintf(body, sizeof body, "egressd: %d %s: %s\n", status, reason, detail);
	respond_reply(c, status, reason, body, 0);
	conn_audit(c);
	conn_flush_close(c);
}

/* 403 naming the rule, its source and the command that explains it. */
void
respond_block(struct conn *c)
{
	const struct decision *d = &c->x->decision;
	char body[1024], hint[320];
	int keep;

	if ((c->flags & CONN_F_TRANSPARENT) && !(c->flags & CONN_F_TLS) &&
	    strcmp(c->x->req.method, "CONNECT") == 0) {
		/* A redirected TLS or TCP stream cannot be answered in HTTP: cut it. */
		c->x->status = 0;
		conn_audit(c);
		conn_close(c, "blocked");
		return;
	}
	if (strcmp(c->x->req.method, "CONNECT") == 0)
		snprintf(hint, sizeof hint, "--method CONNECT %s%s%s:%u",
		         c->x->host.kind == HOST_ADDR && c->x->host.addr.af == AF_INET6 ? "[" : "",
		         c->x->host.name,
		         c->x->host.kind == HOST_ADDR && c->x->host.addr.af == AF_INET6 ? "]" : "",
		         c->x->port);
	else if (d->list != NULL && strcmp(d->list, "websocket") == 0)
		snprintf(hint, sizeof hint, "--header 'Upgrade: websocket' %s", c->x->host.name);
	else if (strcmp(c->x->req.method, "GET") != 0)
		snprintf(hint, sizeof hint, "--method %s %s", c->x->req.method, c->x->host.name);
	else
		snprintf(hint, sizeof hint, "%s", c->x->host.name);
	snprintf(body, sizeof body,
	         "Blocked by the egress policy.\n"
	         "host: %s\nrule: %s (%s%s%s)\nreason: %s\n"
	         "To see why: policyctl explain %s\n",
	         c->x->host.name, d->rule, d->list ? d->list : "", d->list ? ", " : "", d->source,
	         d->reason, hint);
	/* Keep the connection only when no request body is left unread. */
	keep = (c->x->req.flags & HTTP_F_KEEP_ALIVE) &&
	       (c->x->req.body == HTTP_BODY_NONE || c->x->req_body.done ||
	        (c->x->req.body == HTTP_BODY_LENGTH && c->x->req.length == 0)) &&
	       !c->e->draining;
	respond_reply(c, 403, "Forbidden", body, keep);
	conn_audit(c);
	if (!keep) {
		conn_flush_close(c);
		return;
	}
	conn_exchange_done(c);
}
