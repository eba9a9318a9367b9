/*
 * Step 4 of the decision order (DESIGN §5), the rules of practical mode
 * for a host no list names: the request method and every method override
 * against allowMethods, a body on a read method, GraphQL queries lifting
 * the method rules (allowGraphqlQueries), and WebSocket upgrades.
 */
#include <stdio.h>
#include <string.h>

#include "policy_int.h"

/* Find method in allowMethods; methods are case-sensitive (RFC 9110). */
static const struct cfg_item *
practical_find_method(const struct config *cfg, const char *method)
{
	size_t i;

	for (i = 0; i < cfg->allow_methods.n; i++)
		if (strcmp(cfg->allow_methods.items[i].value, method) == 0)
			return &cfg->allow_methods.items[i];
	return NULL;
}

static void
practical_methods_text(const struct config *cfg, char *out, size_t len)
{
	size_t i, off = 0;
	int n;

	out[0] = '\0';
	for (i = 0; i < cfg->allow_methods.n && off < len; i++) {
		n = snprintf(out + off, len - off, "%s%s", i ? ", " : "",
		             cfg->allow_methods.items[i].value);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (cfg->allow_methods.n == 0)
		snprintf(out, len, "none");
}

/* How the method rules judge one method a request may be served as. */
enum practical_verdict {
	PRACTICAL_ALLOWED, /* in allowMethods */
	PRACTICAL_GRAPHQL, /* lifted, or its body vouched for, by the GraphQL allowance */
	PRACTICAL_DENIED,  /* not in allowMethods */
	PRACTICAL_BODY,    /* a read method carrying a body that is not a GraphQL query */
};

/*
 * The methods defined without content (RFC 9110 §9.3): a body on them has
 * no meaning a client relies on, so it is only ever a channel.
 */
static int
practical_read_method(const char *m)
{
	return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0 ||
	       strcmp(m, "TRACE") == 0;
}

/*
 * One method under the method rules. gql: the request is a GraphQL query
 * over HTTP and nothing else, and allowGraphqlQueries holds: that lifts
 * the rules for POST and GET (the methods GraphQL over HTTP uses) and
 * vouches for a body on a read method.
 */
static enum practical_verdict
practical_judge(const struct config *cfg, const char *method, int body, int gql,
                const struct cfg_item **mi)
{
	/* Without a body the document is in the URL: GraphQL over HTTP only as a GET. */
	if (!body && strcmp(method, "GET") != 0)
		gql = 0;
	if ((*mi = practical_find_method(cfg, method)) != NULL) {
		if (!body || !practical_read_method(method))
			return PRACTICAL_ALLOWED;
		return gql ? PRACTICAL_GRAPHQL : PRACTICAL_BODY;
	}
	if (gql && (strcmp(method, "POST") == 0 || strcmp(method, "GET") == 0))
		return PRACTICAL_GRAPHQL;
	return PRACTICAL_DENIED;
}

/* Why a GraphQL query in the request does not lift the method rules, or NULL. */
static const char *
practical_graphql_unlifted(const struct config *cfg, const struct decision *d, const char *method,
                           int body)
{
	if (!d->graphql_present)
		return NULL;
	if (!cfg->allow_graphql_queries)
		return "allowGraphqlQueries is false";
	if (!d->gql.pure)
		return d->gql.impure;
	if (!body && strcmp(method, "GET") != 0)
		return "the document is only in the URL, the body is empty";
	if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0)
		return "GraphQL requests are POST or GET";
	return NULL;
}

/* A GraphQL request that is not provably a query: always a violation. */
static void
practical_graphql_violation(const struct policy *p, struct decision *d)
{
	if (d->gql.op == GQL_MUTATION)
		snprintf(d->reason, sizeof d->reason, "GraphQL mutation%s%s is a write",
		         d->gql.name[0] ? " " : "", d->gql.name);
	else if (d->gql.op == GQL_SUBSCRIPTION)
		snprintf(d->reason, sizeof d->reason,
		         "GraphQL subscription%s%s is not a read-only query",
		         d->gql.name[0] ? " " : "", d->gql.name);
	else
		snprintf(d->reason, sizeof d->reason, "GraphQL request not provably a query (%s)",
		         d->gql.reason ? d->gql.reason : "unparsable");
	policy_violation(p, d,
	                 d->gql.op == GQL_MUTATION       ? "graphql-mutation"
	                 : d->gql.op == GQL_SUBSCRIPTION ? "graphql-subscription"
	                                                 : "graphql-not-query",
	                 POLICY_LIST_GRAPHQL, &p->cfg->allow_graphql_queries_loc);
}

/*
 * A method the rules refuse: the request's (field NULL) or an override's.
 * The reason says why a GraphQL query in the request did not lift it.
 */
static void
practical_method_violation(const struct policy *p, struct decision *d, const char *field,
                           const char *method, int body)
{
	const struct config *cfg = p->cfg;
	char methods[256];
	const char *why;
	size_t n;

	practical_methods_text(cfg, methods, sizeof methods);
	n = (size_t)snprintf(d->reason, sizeof d->reason,
	                     "%s%s%s is not an allowed method (allowMethods: %s)",
	                     field ? field : "", field ? ": " : "", method, methods);
	why = practical_graphql_unlifted(cfg, d, method, body);
	if (why != NULL && n < sizeof d->reason)
		snprintf(d->reason + n, sizeof d->reason - n,
		         "; the GraphQL allowance does not apply: %s", why);
	policy_violation(p, d, field ? "method-override" : "method-not-allowed",
	                 POLICY_LIST_METHODS, &cfg->allow_methods.loc);
}

/* A read method (the request's, or an override's) that carries a body. */
static void
practical_body_violation(const struct policy *p, struct decision *d, const char *field,
                         const char *method)
{
	const char *why = practical_graphql_unlifted(p->cfg, d, method, 1);

	snprintf(d->reason, sizeof d->reason,
	         "%s%s%s carries a body that is not a GraphQL query%s%s%s", field ? field : "",
	         field ? ": " : "", method, why ? " (" : "", why ? why : "", why ? ")" : "");
	policy_violation(p, d, "body-on-read-method", POLICY_LIST_METHODS,
	                 &p->cfg->allow_methods.loc);
}

/*
 * Step 4 of the decision order: methods and GraphQL in practical mode.
 * A server that honours a method override acts on the override, so the
 * request method and every override must each pass the method rules: the
 * stricter one decides. The GraphQL allowance stands in for the method
 * rules only for a request that is GraphQL over HTTP and nothing else; a
 * document riding along in another request (a REST body's extra member,
 * a DELETE's URL) changes nothing.
 */
void
practical_decide(const struct policy *p, const struct policy_request *req, struct decision *d)
{
	const struct config *cfg = p->cfg;
	const struct cfg_item *mi;
	enum practical_verdict v;
	const char *body_field = NULL, *body_method = NULL;
	int body, gql, lifted = 0;
	size_t i;

	if (req->noverrides > POLICY_MAX_OVERRIDES) {
		snprintf(d->reason, sizeof d->reason,
		         "%zu method-override fields: at most %d are read, so the method a server "
		         "acts on is unknown",
		         req->noverrides, POLICY_MAX_OVERRIDES);
		policy_violation(p, d, "method-override", POLICY_LIST_METHODS,
		                 &cfg->allow_methods.loc);
		return;
	}
	if (d->graphql_present && d->gql.op != GQL_QUERY) {
		practical_graphql_violation(p, d);
		return;
	}
	body = req->body_len > 0 || req->body_truncated;
	gql = d->graphql_present && d->gql.pure && cfg->allow_graphql_queries;
	/* Overrides first: a server that honours one acts on it, not on the method. */
	for (i = 0; i < req->noverrides; i++) {
		v = practical_judge(cfg, req->overrides[i], body, gql, &mi);
		if (v == PRACTICAL_DENIED) {
			practical_method_violation(p, d, req->override_fields[i], req->overrides[i],
			                           body);
			return;
		}
		if (v == PRACTICAL_BODY && body_method == NULL) {
			body_field = req->override_fields[i];
			body_method = req->overrides[i];
		}
		lifted |= v == PRACTICAL_GRAPHQL;
	}
	v = practical_judge(cfg, req->method, body, gql, &mi);
	if (v == PRACTICAL_DENIED) {
		practical_method_violation(p, d, NULL, req->method, body);
		return;
	}
	if (v == PRACTICAL_BODY || body_method != NULL) {
		if (v == PRACTICAL_BODY)
			practical_body_violation(p, d, NULL, req->method);
		else
			practical_body_violation(p, d, body_field, body_method);
		return;
	}
	if (v == PRACTICAL_GRAPHQL || lifted) {
		policy_decision_set(d, ACTION_ALLOW, "graphql-query", POLICY_LIST_GRAPHQL);
		policy_loc_format(&cfg->allow_graphql_queries_loc, d->source, sizeof d->source);
		snprintf(d->reason, sizeof d->reason, "GraphQL query%s%s is read-only",
		         d->gql.name[0] ? " " : "", d->gql.name);
		return;
	}
	policy_decision_set(d, ACTION_ALLOW, "allow-methods", POLICY_LIST_METHODS);
	policy_loc_format(&mi->loc, d->source, sizeof d->source);
	policy_reason(d, req->method, " is an allowed method");
}

/*
 * Step 4 for a WebSocket upgrade (a GET whose Upgrade field, named by
 * Connection, holds websocket) that the method rules allowed. After the
 * 101 the connection carries messages both ways that no method rule
 * sees, so to a host the allowlist does not name it is a write channel:
 * a violation, unless every subprotocol offered is a GraphQL one, whose
 * client messages egressd can read. Then it is allowed on the condition
 * that each message is inspected (ws_inspect) and only queries and
 * subscriptions go up (policy_decide_ws_message).
 */
void
practical_upgrade(const struct policy *p, const struct policy_request *req, struct decision *d)
{
	const struct config *cfg = p->cfg;

	if (req->upgrade != POLICY_UPGRADE_WEBSOCKET || strcmp(req->method, "GET") != 0)
		return;
	/* A document in the URL that is not a query is refused as it would be without the upgrade. */
	if (d->graphql_present && d->gql.op != GQL_QUERY)
		return;
	if (req->ws_offer == POLICY_WS_GRAPHQL && cfg->allow_graphql_queries) {
		policy_decision_set(d, ACTION_ALLOW, "websocket-graphql", POLICY_LIST_WEBSOCKET);
		policy_loc_format(&cfg->allow_graphql_queries_loc, d->source, sizeof d->source);
		snprintf(d->reason, sizeof d->reason,
		         "WebSocket for GraphQL (graphql-transport-ws or graphql-ws): every client "
		         "message is inspected, only queries and subscriptions go through");
		d->ws_inspect = 1;
		return;
	}
	if (req->ws_offer == POLICY_WS_GRAPHQL)
		snprintf(d->reason, sizeof d->reason,
		         "WebSocket for GraphQL with allowGraphqlQueries off: a write channel to a "
		         "host the allowlist does not name");
	else if (req->ws_offer != 0)
		snprintf(d->reason, sizeof d->reason,
		         "WebSocket offering a subprotocol other than graphql-transport-ws and "
		         "graphql-ws: a write channel to a host the allowlist does not name");
	else
		snprintf(
		    d->reason, sizeof d->reason,
		    "WebSocket upgrade: a write channel to a host the allowlist does not name");
	policy_violation(p, d, "websocket", POLICY_LIST_WEBSOCKET, &cfg->mode_loc);
}
