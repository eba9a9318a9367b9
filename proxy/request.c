/*
 * A request from its first byte to its decision: the head parsed, the
 * target checked (an absolute-form URL or a CONNECT here; the requests
 * inside intercepted TLS and on the transparent listener are checked by
 * intercept.c and transparent.c), the request as the policy sees it, and
 * the body the decision needs held first when it needs one. The decision
 * goes to the hub (conn_proceed).
 */
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"

/* The fields the policy reads that the parser knows by number. */
#define REQUEST_POLICY_FIELDS                                                                      \
	(HF_BIT(HF_X_HTTP_METHOD_OVERRIDE) | HF_BIT(HF_X_HTTP_METHOD) |                            \
	 HF_BIT(HF_X_METHOD_OVERRIDE) | HF_BIT(HF_SEC_WEBSOCKET_PROTOCOL))

/*
 * The request as the policy sees it, without its body. Header fields are
 * looked at only when the parser saw one the policy reads, so a plain
 * request costs one test of a bit mask.
 */
static void
request_policy(struct conn *c, struct policy_request *pr)
{
	const struct http_msg *m = &c->x->req;
	const struct http_header *h;
	size_t i;

	memset(pr, 0, sizeof *pr);
	pr->host = &c->x->host;
	pr->method = m->method;
	pr->port = c->x->port;
	pr->query = c->x->query;
	if (m->flags & HTTP_F_UPGRADE)
		policy_request_header(pr, "Upgrade", 7, m->upgrade);
	if (!(m->fields & REQUEST_POLICY_FIELDS))
		return;
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (HF_BIT(h->id) & REQUEST_POLICY_FIELDS)
			policy_request_header(pr, h->name, h->name_len, h->value);
	}
}

/*
 * Whether the decision needs the request body, deciding without it into
 * c->x->decision on the way. When the host lists and modes leave it to
 * the method and GraphQL rules (step 4; decision.body_matters), any body
 * may turn a read into a GraphQL mutation or a POST into an allowed
 * query, so it is held (up to maxGraphqlBody) and classified whatever its
 * type: a lenient server may read a form, a multipart body or untyped
 * JSON. Otherwise the decision made here stands.
 */
static int
request_body_needed(struct conn *c)
{
	struct policy_request pr;

	request_policy(c, &pr);
	policy_decide(c->policy, &pr, &c->x->decision);
	return c->x->decision.body_matters;
}

/* The most a body held for the decision may take: its length, or maxGraphqlBody. */
static size_t
request_body_want(const struct conn *c)
{
	size_t max = policy_config(c->policy)->max_graphql_body;

	if (c->x->req.body == HTTP_BODY_LENGTH && c->x->req.length < max)
		return (size_t)c->x->req.length;
	return max;
}

/*
 * Past the memory budget, a body to hold is refused, not waited for: a
 * block by the built-in rule max-buffered, answered 503.
 */
static void
request_shed(struct conn *c)
{
	struct decision *d = &c->x->decision;

	c->e->overloaded(c->e, OVERLOAD_MEMORY);
	c->e->ov[OVERLOAD_MEMORY].shed++;
	c->e->ov[OVERLOAD_MEMORY].ep_shed++;
	memset(d, 0, sizeof *d);
	d->action = ACTION_BLOCK;
	str_copy(d->rule, sizeof d->rule, "max-buffered");
	str_copy(d->source, sizeof d->source, "builtin");
	str_copy(d->reason, sizeof d->reason,
	         "egressd is over its memory budget: a body to hold for the decision was not "
	         "read");
	respond_error(c, 503, "Service Unavailable",
	              "egressd is over its memory budget (--max-buffered): try again shortly");
}

/* A Content-Encoding other than identity: the held bytes cannot be read. */
static int
request_body_encoded(const struct conn *c)
{
	const char *ce = http_msg_header(&c->x->req, "Content-Encoding");

	return ce != NULL && *ce != '\0' && strcasecmp(ce, "identity") != 0;
}

static void
request_decide(struct conn *c)
{
	struct policy_request pr;
	char *body = NULL;
	size_t len = 0;

	request_policy(c, &pr);
	pr.content_type = http_msg_header(&c->x->req, "Content-Type");
	if (c->x->held != NULL) {
		len = evbuffer_get_length(c->x->held);
		body = (char *)evbuffer_pullup(c->x->held, -1);
		pr.body = body ? body : "";
		pr.body_len = len;
		pr.body_truncated = c->x->held_truncated;
		pr.body_encoded = request_body_encoded(c);
	}
	policy_decide(c->policy, &pr, &c->x->decision);
	conn_proceed(c);
}

/* Read the body the decision needs into c->x->held, up to maxGraphqlBody. */
void
request_hold_body(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	size_t max = policy_config(c->policy)->max_graphql_body;
	struct conn_body *b = &c->x->req_body;

	if (relay_body_move(c, b, in, c->x->held, 0) == -1) {
		respond_error(c, 400, "Bad Request", "malformed chunked request body");
		return;
	}
	conn_account(c);
	if (evbuffer_get_length(c->x->held) > max)
		c->x->held_truncated = 1; /* not provably a query: decided as such */
	else if (!b->done)
		return; /* wait for more */
	/* The held bytes are sent as they are: restate their framing. */
	if (b->done) {
		c->x->req.body = HTTP_BODY_LENGTH;
		c->x->req.length = (uint64_t)evbuffer_get_length(c->x->held);
	}
	request_decide(c);
}

/* The head of a request is in: parse its target and decide or hold its body. */
static void
request_start(struct conn *c)
{
	const char *err;
	int is_connect = c->x->kind == EXCHANGE_CONNECT;

	c->x->t_start = time_mono_ms();
	if (c->flags & CONN_F_TLS) {
		intercept_request(c);
		return;
	}
	if (c->flags & CONN_F_TRANSPARENT) {
		transparent_request(c);
		return;
	}
	if (!is_connect && c->x->req.uri.form != HTTP_TARGET_ABSOLUTE) {
		respond_error(
		    c, 400, "Bad Request",
		    "this is a proxy: send absolute-form requests (http://host/path) or CONNECT");
		return;
	}
	if (!is_connect && strcmp(c->x->req.uri.scheme, "http") != 0) {
		respond_error(c, 400, "Bad Request",
		              "https:// requests go through CONNECT, not as a plain proxy request");
		return;
	}
	if ((err = host_parse(c->x->req.uri.host, strlen(c->x->req.uri.host), &c->x->host)) !=
	    NULL) {
		respond_error(c, 400, "Bad Request", err);
		return;
	}
	c->x->port = c->x->req.uri.port;
	c->x->authority = c->x->req.uri.authority;
	request_body(c);
}

/* Set up the request body's framing, then decide or hold the body. */
void
request_body(struct conn *c)
{
	int is_connect = c->x->kind == EXCHANGE_CONNECT;
	char *q;

	if (!is_connect) {
		/* One copy, split at '?': the query lives in the path's allocation. */
		c->x->path = xstrdup(c->x->req.uri.path);
		if ((q = strchr(c->x->path, '?')) != NULL) {
			*q = '\0';
			c->x->query = q + 1;
		}
	}
	memset(&c->x->req_body, 0, sizeof c->x->req_body);
	c->x->req_body.in = c->x->req.body;
	c->x->req_body.out = c->x->req.body;
	c->x->req_body.left = c->x->req.body == HTTP_BODY_LENGTH ? c->x->req.length : 0;
	chunked_init(&c->x->req_body.dec, &c->e->http);
	if (is_connect) {
		c->x->req_body.in = c->x->req_body.out = HTTP_BODY_NONE;
		c->x->req_body.done = 1;
	} else if (c->x->req.body == HTTP_BODY_NONE ||
	           (c->x->req.body == HTTP_BODY_LENGTH && c->x->req.length == 0)) {
		c->x->req_body.done = 1;
	}
	if (!is_connect && !c->x->req_body.done) {
		if (!request_body_needed(c)) {
			conn_proceed(c);
			return;
		}
		if (c->e->buffered + request_body_want(c) > c->e->lim.max_buffered) {
			request_shed(c);
			return;
		}
		c->x->held = evbuffer_new();
		c->x->req_body.out = HTTP_BODY_NONE; /* raw data into held */
		if (c->x->req.flags & HTTP_F_EXPECT_CONTINUE)
			respond_continue(c);
		conn_set_state(c, CONN_READ_BODY);
		request_hold_body(c);
		return;
	}
	request_decide(c);
}

void
request_read_head(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	size_t len = evbuffer_get_length(in);
	size_t want = len <= c->e->http.head ? len : c->e->http.head + 1;
	enum http_parse r;
	const char *data;

	if (len == 0)
		return;
	if (c->x == NULL) {
		/* The head timeout runs from its first byte: trickling cannot extend it. */
		conn_exchange_new(c);
		conn_set_state(c, CONN_READ_HEAD);
	}
	if ((data = (const char *)evbuffer_pullup(in, (ev_ssize_t)want)) == NULL) {
		conn_close(c, "cannot read the request head");
		return;
	}
	r = http_parse_request(data, want, &c->e->http, &c->x->req);
	if (r == HTTP_PARSE_INCOMPLETE) {
		conn_account(c);
		return;
	}
	c->x->begun = 1;
	c->x->kind = c->x->req.method_id == HTTP_M_CONNECT ? EXCHANGE_CONNECT : EXCHANGE_HTTP;
	if (r == HTTP_PARSE_ERROR) {
		c->x->req.method = c->x->req.method ? c->x->req.method : "-";
		c->x->t_start = time_mono_ms();
		c->x->error = c->x->req.error;
		respond_error(c, c->x->req.error_status,
		              c->x->req.error_status == 431   ? "Request Header Fields Too Large"
		              : c->x->req.error_status == 414 ? "URI Too Long"
		              : c->x->req.error_status == 501 ? "Not Implemented"
		              : c->x->req.error_status == 505 ? "HTTP Version Not Supported"
		                                              : "Bad Request",
		              c->x->req.error);
		return;
	}
	evbuffer_drain(in, c->x->req.head_len);
	if (!(c->x->req.flags & HTTP_F_KEEP_ALIVE) || c->e->draining)
		c->flags |= CONN_F_CLIENT_CLOSE;
	request_start(c);
}
