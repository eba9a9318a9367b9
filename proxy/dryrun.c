/*
 * `explain` on the control socket: what the running egressd would do with
 * one request, without sending it. The request is decided on the live
 * policy snapshot through policy_decide() and rendered through
 * verdict_json(), exactly as `policyctl explain` decides and renders from
 * files; then the part only a live egressd can answer: the name is
 * resolved through egressd's own resolver and cache (resolver_lookup, as
 * the proxy resolves an upstream) and the address guard judges each
 * address, so a public name that resolves to a private address is
 * explained as the block the proxy would give, not as "allowed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "proxy.h"
#include "resolver.h"

/* What resolving the name found, as the answer's "resolved" says it. */
enum dryrun_res {
	DRYRUN_RES_OK,
	DRYRUN_RES_NONAME,
	DRYRUN_RES_FAIL,
	DRYRUN_RES_CNAME,   /* a blocked name in the CNAME chain */
	DRYRUN_RES_TIMEOUT, /* not within the upstream connect timeout */
	DRYRUN_RES_LITERAL, /* an address literal: nothing to resolve */
	DRYRUN_RES_BLOCKED, /* blocked by name: egressd does not resolve it */
	DRYRUN_RES_NONE,    /* no resolver in this egressd */
};

static const char *const dryrun_res_names[] = {
    [DRYRUN_RES_OK] = "ok",
    [DRYRUN_RES_NONAME] = "no-such-name",
    [DRYRUN_RES_FAIL] = "failed",
    [DRYRUN_RES_CNAME] = "cname-blocked",
    [DRYRUN_RES_TIMEOUT] = "timeout",
    [DRYRUN_RES_LITERAL] = "address-literal",
    [DRYRUN_RES_BLOCKED] = "not-resolved-blocked",
    [DRYRUN_RES_NONE] = "no-resolver",
};

struct dryrun_addr {
	struct addr addr;
	int allowed;
	struct decision d; /* the guard's refusal when not allowed */
};

struct dryrun {
	struct egressd *e;
	struct policy *policy; /* the snapshot decided on */
	struct control_request req_in;
	struct url url;
	struct policy_request req;
	char *values[CONTROL_MAX_HEADERS]; /* header values, whitespace trimmed */
	struct verdict v;
	struct decision by_name; /* before the guard, when it changed the answer */
	int guard_changed;
	enum dryrun_res res;
	struct dryrun_addr addrs[RESOLVER_MAX_ADDRS];
	size_t naddrs;
	struct resolver_lookup *lookup;
	struct event *timer;
	int in_call; /* inside resolver_lookup: a cached answer comes at once */
	int sync_done;
	dryrun_cb cb;
	void *arg;
};

static void
dryrun_free(struct dryrun *dr)
{
	size_t i;

	resolver_lookup_cancel(dr->lookup);
	if (dr->timer != NULL)
		event_free(dr->timer);
	for (i = 0; i < dr->req_in.nheaders; i++)
		free(dr->values[i]);
	url_free(&dr->url);
	control_request_free(&dr->req_in);
	policy_unref(dr->policy);
	free(dr);
}

static void
dryrun_addr_json(struct buf *b, const struct dryrun_addr *a)
{
	char text[64];

	addr_format(&a->addr, text, sizeof text);
	buf_adds(b, "{\"address\":");
	json_escape_str(b, text);
	buf_adds(b, a->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
	if (!a->allowed) {
		buf_addc(b, ',');
		verdict_json_decision(&a->d, b, 1);
	}
	buf_addc(b, '}');
}

/* The members only a live egressd gives: where the policy is, what resolving found. */
static void
dryrun_json_live(struct dryrun *dr, struct buf *b)
{
	size_t i;

	buf_adds(b, ",\"policy_source\":\"egressd\",\"policy\":");
	status_policy_json(dr->e, b);
	buf_adds(b, ",\"resolved\":{\"status\":");
	json_escape_str(b, dryrun_res_names[dr->res]);
	buf_adds(b, ",\"resolver\":\"egressd\",\"addresses\":[");
	for (i = 0; i < dr->naddrs; i++) {
		if (i > 0)
			buf_addc(b, ',');
		dryrun_addr_json(b, &dr->addrs[i]);
	}
	buf_adds(b, "]},\"by_name\":");
	if (dr->guard_changed) {
		buf_addc(b, '{');
		verdict_json_decision(&dr->by_name, b, 1);
		buf_addc(b, '}');
	} else
		buf_adds(b, "null");
}

/* What the resolver's answer means for the request, as notes a person reads. */
static void
dryrun_notes(struct dryrun *dr)
{
	size_t i, allowed = 0;

	for (i = 0; i < dr->naddrs; i++)
		allowed += dr->addrs[i].allowed;
	switch (dr->res) {
	case DRYRUN_RES_OK:
		if (allowed == 0)
			verdict_note(
			    &dr->v,
			    "the name is allowed as written, but the address guard refuses "
			    "every address egressd's resolver gives for it: egressd refuses "
			    "the request (the 403 names the address's rule)");
		else
			verdict_note(
			    &dr->v,
			    "egressd's resolver gives %zu address%s, %zu of them allowed by "
			    "the address guard: egressd would connect to one of those",
			    dr->naddrs, dr->naddrs == 1 ? "" : "es", allowed);
		break;
	case DRYRUN_RES_NONAME:
	case DRYRUN_RES_FAIL:
		verdict_note(&dr->v,
		             "egressd's resolver found no address (%s): the request would fail "
		             "with 502 and be audited with this decision",
		             dr->res == DRYRUN_RES_NONAME ? "no such name"
		                                          : "no upstream answered");
		break;
	case DRYRUN_RES_TIMEOUT:
		verdict_note(&dr->v,
		             "egressd's resolver did not answer within the connect timeout "
		             "(%us): the request would fail with 504",
		             dr->e->lim.connect_timeout);
		break;
	case DRYRUN_RES_CNAME:
		verdict_note(&dr->v,
		             "the name's CNAME chain leads to a blocked name: egressd refuses "
		             "the request");
		break;
	case DRYRUN_RES_LITERAL:
	case DRYRUN_RES_BLOCKED:
	case DRYRUN_RES_NONE:
		break;
	}
	if (dr->req_in.body_truncated &&
	    dr->req.body_len < policy_config(dr->policy)->max_graphql_body)
		verdict_note(
		    &dr->v,
		    "the body was cut at %zu bytes before egressd saw it, but egressd reads "
		    "up to %zu (network.maxGraphqlBody): a whole body could be answered "
		    "differently",
		    dr->req.body_len, policy_config(dr->policy)->max_graphql_body);
}

/* Answer the client and free the run. */
static void
dryrun_finish(struct dryrun *dr)
{
	struct buf b;

	verdict_notes(&dr->v, dr->policy, VERDICT_F_RESOLVED);
	dryrun_notes(dr);
	buf_init(&b);
	buf_addc(&b, '{');
	verdict_json(&dr->v, dr->policy, &b);
	dryrun_json_live(dr, &b);
	buf_addc(&b, '}');
	dr->cb(dr->arg, b.data, b.len, NULL);
	buf_free(&b);
	dryrun_free(dr);
}

/*
 * The guard on each address, as upstream.c applies it before connecting:
 * the request goes on when one address is allowed; when none is, the
 * proxy refuses it with the guard's answer for the last address tried.
 */
static void
dryrun_guard(struct dryrun *dr, const struct resolver_answer *a)
{
	struct dryrun_addr *da;
	const struct decision *refused = NULL;
	size_t i;

	if (a->err == RESOLVER_E_BLOCKED) {
		dr->res = DRYRUN_RES_CNAME;
		dr->by_name = dr->v.d;
		dr->guard_changed = 1;
		dr->v.d = *a->blocked;
		return;
	}
	if (a->err != RESOLVER_OK) {
		dr->res = a->err == RESOLVER_E_NONAME ? DRYRUN_RES_NONAME : DRYRUN_RES_FAIL;
		return;
	}
	dr->res = DRYRUN_RES_OK;
	for (i = 0; i < a->naddrs && dr->naddrs < RESOLVER_MAX_ADDRS; i++) {
		da = &dr->addrs[dr->naddrs++];
		da->addr = a->addrs[i];
		da->allowed = policy_addr_allowed(dr->policy, &da->addr, &dr->v.d);
		if (da->allowed)
			continue;
		da->d = dr->v.d;
		policy_check_addr(dr->policy, &da->addr, &da->d);
		refused = &da->d;
	}
	for (i = 0; i < dr->naddrs; i++)
		if (dr->addrs[i].allowed)
			return;
	if (refused != NULL) {
		dr->by_name = dr->v.d;
		dr->guard_changed = 1;
		dr->v.d = *refused;
	}
}

static void
dryrun_dns_cb(void *arg, const struct resolver_answer *a)
{
	struct dryrun *dr = arg;

	dr->lookup = NULL;
	dryrun_guard(dr, a);
	if (dr->in_call) {
		dr->sync_done = 1;
		return;
	}
	dryrun_finish(dr);
}

static void
dryrun_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dryrun *dr = arg;

	resolver_lookup_cancel(dr->lookup);
	dr->lookup = NULL;
	dr->res = DRYRUN_RES_TIMEOUT;
	dryrun_finish(dr);
}

/* The request as policy_decide() takes it, as policyctl explain fills it. */
static const char *
dryrun_request(struct dryrun *dr)
{
	struct control_request *in = &dr->req_in;
	struct policy_request *req = &dr->req;
	const char *err, *v;
	size_t i, n, max = policy_config(dr->policy)->max_graphql_body;

	if ((err = url_parse(in->target, &dr->url)) != NULL)
		return err;
	req->host = &dr->url.host;
	req->method = in->method;
	/* A CONNECT names its port; without one, explain asks about HTTPS's. */
	req->port = dr->url.port != 0 ? dr->url.port : strcmp(in->method, "CONNECT") == 0 ? 443 : 0;
	req->query = dr->url.query;
	for (i = 0; i < in->nheaders; i++) {
		/* Optional whitespace around a value is not part of it (RFC 9110 §5.5). */
		for (v = in->header_values[i]; *v == ' ' || *v == '\t'; v++)
			;
		for (n = strlen(v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'); n--)
			;
		dr->values[i] = xstrndup(v, n);
		policy_request_header(req, in->header_names[i], strlen(in->header_names[i]),
		                      dr->values[i]);
	}
	if (in->body != NULL) {
		/* The proxy holds at most maxGraphqlBody bytes; past them a body is cut. */
		req->body = in->body;
		req->body_len = in->body_len > max ? max : in->body_len;
		req->body_truncated = in->body_truncated || in->body_len > max;
	}
	req->content_type = in->content_type;
	return NULL;
}

/*
 * Explain in (its ownership passes here) on the live policy. cb gets the
 * answer once, later or before this returns; returns the run to cancel,
 * or NULL when cb already ran.
 */
struct dryrun *
dryrun_start(struct egressd *e, struct control_request *in, dryrun_cb cb, void *arg)
{
	struct timeval tv = {e->lim.connect_timeout, 0};
	struct dryrun *dr;
	const char *err;
	char msg[512];

	dr = xcalloc(1, sizeof *dr);
	dr->e = e;
	dr->policy = policy_ref(e->policy);
	dr->req_in = *in;
	memset(in, 0, sizeof *in);
	dr->cb = cb;
	dr->arg = arg;
	if ((err = dryrun_request(dr)) != NULL) {
		snprintf(msg, sizeof msg, "%.300s: %s", dr->req_in.target, err);
		cb(arg, NULL, 0, msg);
		dryrun_free(dr);
		return NULL;
	}
	verdict_decide(&dr->v, dr->policy, dr->req_in.target, &dr->url, &dr->req);
	/* As the proxy: a blocked request and an address literal are not resolved. */
	if (dr->url.host.kind == HOST_ADDR)
		dr->res = DRYRUN_RES_LITERAL;
	else if (dr->v.d.action == ACTION_BLOCK)
		dr->res = DRYRUN_RES_BLOCKED;
	else if (e->resolver == NULL)
		dr->res = DRYRUN_RES_NONE;
	else {
		dr->timer = evtimer_new(e->base, dryrun_timeout_cb, dr);
		evtimer_add(dr->timer, &tv);
		dr->in_call = 1;
		dr->lookup =
		    resolver_lookup(e->resolver, dr->policy, dr->url.host.name, dryrun_dns_cb, dr);
		dr->in_call = 0;
		if (!dr->sync_done)
			return dr;
	}
	dryrun_finish(dr);
	return NULL;
}

/* The client went away: no answer. */
void
dryrun_cancel(struct dryrun *dr)
{
	if (dr != NULL)
		dryrun_free(dr);
}
