/*
 * egressd's own answers to a client: a short plain-text response, an error
 * that ends the connection (400, 502, 504, ...), and the 403 of a policy
 * block, which names the rule, its source and the policyctl command that
 * explains it (the one that answers as this egressd does: egressd_explain_cmd),
 * each audited with the exchange; and the interim answers it
 * gives itself: 200 to a CONNECT, 100 Continue.
 */
#include <sys/socket.h>

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"

#define RESPOND_RETRY_AFTER 5 /* seconds, in a 503: the audit log is tried every second */

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
	if (status == 503)
		evbuffer_add_printf(out, "Retry-After: %d\r\n", RESPOND_RETRY_AFTER);
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

/* Appends " --header 'NAME: VALUE'" when the field can be quoted for a shell as it is. */
static void
respond_hint_header(struct buf *b, const char *name, const char *value)
{
	if (strchr(value, '\'') != NULL || !http_visible(value) || strlen(value) > 64)
		return;
	buf_printf(b, " --header '%s: %s'", name, value);
}

/*
 * The policyctl explain command that asks about this request: its method,
 * the header fields the decision read, its body when one was held (the
 * user saves it to FILE), and the host. *body_flag says whether --body is
 * in it.
 */
static void
respond_hint(struct conn *c, struct buf *b, int *body_flag)
{
	const struct http_msg *m = &c->x->req;
	const struct http_header *h;
	const char *ct;
	size_t i;
	int v6 = c->x->host.kind == HOST_ADDR && c->x->host.addr.af == AF_INET6;

	*body_flag = 0;
	if (c->x->kind != EXCHANGE_HTTP) {
		buf_printf(b, "--method CONNECT %s%s%s:%u", v6 ? "[" : "", c->x->host.name,
		           v6 ? "]" : "", c->x->port);
		return;
	}
	if (m->method_id != HTTP_M_GET)
		buf_printf(b, " --method %s", m->method);
	if (m->flags & HTTP_F_UPGRADE && m->upgrade != NULL)
		respond_hint_header(b, "Upgrade", m->upgrade);
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (h->id == HF_X_HTTP_METHOD_OVERRIDE || h->id == HF_X_HTTP_METHOD ||
		    h->id == HF_X_METHOD_OVERRIDE ||
		    (h->id == HF_SEC_WEBSOCKET_PROTOCOL && (m->flags & HTTP_F_UPGRADE)))
			respond_hint_header(b, h->name, h->value);
	}
	if (c->x->held != NULL && evbuffer_get_length(c->x->held) > 0) {
		if ((ct = http_msg_header(m, "Content-Type")) != NULL && strchr(ct, '\'') == NULL &&
		    http_visible(ct) && strlen(ct) <= 64)
			buf_printf(b, " --content-type '%s'", ct);
		buf_adds(b, " --body FILE");
		*body_flag = 1;
	}
	/* GraphQL in the URL decides too: then the URL goes whole, quoted. */
	if (c->x->decision.graphql_present && c->x->query != NULL && c->x->path != NULL &&
	    strchr(c->x->path, '\'') == NULL && strchr(c->x->query, '\'') == NULL &&
	    strlen(c->x->path) + strlen(c->x->query) <= 512) {
		buf_printf(b, " '%s://%s%s%s:%u%s?%s'", (c->flags & CONN_F_TLS) ? "https" : "http",
		           v6 ? "[" : "", c->x->host.name, v6 ? "]" : "", c->x->port, c->x->path,
		           c->x->query);
		return;
	}
	buf_printf(b, " %s%s%s", v6 ? "[" : "", c->x->host.name, v6 ? "]" : "");
}

/* 403 naming the rule, its source and the command that explains it. */
void
respond_block(struct conn *c)
{
	const struct decision *d = &c->x->decision;
	const char *list = policy_list_name(d->list);
	char body[4096];
	struct buf hint;
	int keep, body_flag;

	if ((c->flags & CONN_F_TRANSPARENT) && !(c->flags & CONN_F_TLS) &&
	    c->x->kind != EXCHANGE_HTTP) {
		/* A redirected TLS or TCP stream cannot be answered in HTTP: cut it. */
		c->x->status = 0;
		conn_audit(c);
		conn_close(c, "blocked");
		return;
	}
	buf_init(&hint);
	respond_hint(c, &hint, &body_flag);
	snprintf(body, sizeof body,
	         "Blocked by the egress policy.\n"
	         "host: %s\nrule: %s (%s%s%s)\nreason: %s\n"
	         "To see why: policyctl explain %s%s\n%s",
	         c->x->host.name, d->rule, list ? list : "", list ? ", " : "", d->source, d->reason,
	         buf_cstr(&hint) + (buf_cstr(&hint)[0] == ' '), c->e->explain_cmd,
	         body_flag ? "(FILE: a file holding the request body)\n" : "");
	buf_free(&hint);
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

/*
 * 503 while the audit log cannot be written (audit.onError: block): the
 * request goes nowhere and has no line of its own; it is counted in the
 * daemon line written once the log can be written again.
 */
void
respond_unavailable(struct conn *c)
{
	char why[160], body[512];
	int keep;

	c->flags |= CONN_F_AUDITED;
	if ((c->flags & CONN_F_TRANSPARENT) && !(c->flags & CONN_F_TLS) &&
	    c->x->kind != EXCHANGE_HTTP) {
		conn_close(c, "the audit log cannot be written");
		return;
	}
	snprintf(body, sizeof body,
	         "egressd: 503 Service Unavailable: %s; egressd refuses every request until "
	         "it can be written (audit.onError: block)\n",
	         audit_refusal(c->e->audit, why, sizeof why));
	keep = (c->x->req.flags & HTTP_F_KEEP_ALIVE) &&
	       (c->x->req.body == HTTP_BODY_NONE || c->x->req_body.done ||
	        (c->x->req.body == HTTP_BODY_LENGTH && c->x->req.length == 0)) &&
	       !c->e->draining;
	respond_reply(c, 503, "Service Unavailable", body, keep);
	if (!keep) {
		conn_flush_close(c);
		return;
	}
	conn_exchange_done(c);
}

/*
 * The 200 to an allowed CONNECT. A redirected stream asked nothing and
 * gets no answer: its exchange only says it went on.
 */
void
respond_established(struct conn *c)
{
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	c->x->status = 200;
	if (!(c->flags & CONN_F_TRANSPARENT))
		side_send(&c->client, established, sizeof established - 1);
}

/* 100 Continue to a client that expects it, once per exchange. */
void
respond_continue(struct conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (c->flags & CONN_F_CONTINUE_SENT)
		return;
	evbuffer_add(bufferevent_get_output(c->client.bev), cont, sizeof cont - 1);
	c->flags |= CONN_F_CONTINUE_SENT;
}
