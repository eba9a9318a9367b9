/*
 * GraphQL over WebSocket: the client messages of the two subprotocols
 * GraphQL servers speak, graphql-transport-ws (the graphql-ws library) and
 * graphql-ws (the older subscriptions-transport-ws), read strictly. Each
 * operation a client starts is classified by graphql.c's document parser;
 * a message that is not one the protocol defines, in exactly the shape it
 * defines (member names as written, no member besides them, the types the
 * protocol gives them), is GQL_WS_INVALID and never waved through: a
 * server in a language whose JSON binding matches names loosely must not
 * find a document the check did not see.
 */
#include <string.h>

#include <jansson.h>

#include "graphql_int.h"

/* Members a message may have besides "type". */
#define GQL_WS_M_ID      0x1 /* "id": a string */
#define GQL_WS_M_PAYLOAD 0x2 /* "payload": an object or null */
#define GQL_WS_M_REQUEST 0x4 /* "payload": a GraphQL request, required */

struct gql_ws_type {
	const char *name;
	enum gql_ws_kind kind;
	unsigned members;
	unsigned required;
};

static const struct gql_ws_type graphql_ws_transport[] = {
    {"connection_init", GQL_WS_CONTROL, GQL_WS_M_PAYLOAD, 0},
    {"ping", GQL_WS_CONTROL, GQL_WS_M_PAYLOAD, 0},
    {"pong", GQL_WS_CONTROL, GQL_WS_M_PAYLOAD, 0},
    {"subscribe", GQL_WS_OPERATION, GQL_WS_M_ID | GQL_WS_M_REQUEST, GQL_WS_M_ID | GQL_WS_M_REQUEST},
    {"complete", GQL_WS_CONTROL, GQL_WS_M_ID, GQL_WS_M_ID},
};

static const struct gql_ws_type graphql_ws_legacy[] = {
    {"connection_init", GQL_WS_CONTROL, GQL_WS_M_PAYLOAD, 0},
    {"start", GQL_WS_OPERATION, GQL_WS_M_ID | GQL_WS_M_REQUEST, GQL_WS_M_ID | GQL_WS_M_REQUEST},
    {"stop", GQL_WS_CONTROL, GQL_WS_M_ID, GQL_WS_M_ID},
    {"connection_terminate", GQL_WS_CONTROL, 0, 0},
};

/* The subprotocol a Sec-WebSocket-Protocol value names; -1 for any other. */
int
graphql_ws_proto(const char *name, size_t len, enum gql_ws_proto *proto)
{
	if (len == 20 && memcmp(name, "graphql-transport-ws", 20) == 0)
		*proto = GQL_WS_TRANSPORT;
	else if (len == 10 && memcmp(name, "graphql-ws", 10) == 0)
		*proto = GQL_WS_LEGACY;
	else
		return -1;
	return 0;
}

const char *
graphql_ws_proto_name(enum gql_ws_proto proto)
{
	return proto == GQL_WS_TRANSPORT ? "graphql-transport-ws" : "graphql-ws";
}

static enum gql_ws_kind
graphql_ws_invalid(struct gql_ws_msg *m, const char *reason)
{
	m->kind = GQL_WS_INVALID;
	m->reason = reason;
	graphql_result_set(&m->gql, GQL_NONE, reason);
	return GQL_WS_INVALID;
}

/*
 * The payload of subscribe or start: a GraphQL request with the members
 * of GraphQL over HTTP and no others. The document must be there: a
 * persisted query without its text is not provably a query.
 */
static enum gql_ws_kind
graphql_ws_request(json_t *payload, struct gql_ws_msg *m)
{
	json_t *q = NULL, *on = NULL, *v;
	const char *key;

	if (!json_is_object(payload))
		return graphql_ws_invalid(m, "operation payload is not an object");
	json_object_foreach(payload, key, v)
	{
		if (strcmp(key, "query") == 0)
			q = v;
		else if (strcmp(key, "operationName") == 0)
			on = v;
		else if (strcmp(key, "variables") == 0 || strcmp(key, "extensions") == 0) {
			if (!json_is_object(v) && !json_is_null(v))
				return graphql_ws_invalid(
				    m, "variables or extensions is not an object");
		} else
			return graphql_ws_invalid(m, "operation payload has a member besides "
			                             "query, operationName, variables, extensions");
	}
	if (q == NULL)
		return graphql_ws_invalid(m, "operation without a document (persisted query?)");
	if (!json_is_string(q))
		return graphql_ws_invalid(m, "query is not a string");
	if (on != NULL && !json_is_null(on) && !json_is_string(on))
		return graphql_ws_invalid(m, "operationName is not a string");
	m->kind = GQL_WS_OPERATION;
	graphql_classify_document(json_string_value(q), json_string_length(q),
	                          json_is_string(on) ? json_string_value(on) : NULL, &m->gql);
	m->reason = m->gql.reason;
	return GQL_WS_OPERATION;
}

/* One message object against the shape its type has. */
static enum gql_ws_kind
graphql_ws_object(const struct gql_ws_type *types, size_t ntypes, json_t *root,
                  struct gql_ws_msg *m)
{
	const struct gql_ws_type *t = NULL;
	json_t *type, *v, *payload = NULL;
	const char *key;
	unsigned seen = 0;
	size_t i;

	if ((type = json_object_get(root, "type")) == NULL || !json_is_string(type))
		return graphql_ws_invalid(m, "message without a string type");
	for (i = 0; i < ntypes; i++) {
		if (strcmp(json_string_value(type), types[i].name) == 0 &&
		    strlen(types[i].name) == json_string_length(type))
			t = &types[i];
	}
	if (t == NULL)
		return graphql_ws_invalid(m, "message type the subprotocol does not define for "
		                             "clients");
	m->type = t->name;
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "type") == 0)
			continue;
		if (strcmp(key, "id") == 0 && (t->members & GQL_WS_M_ID)) {
			if (!json_is_string(v))
				return graphql_ws_invalid(m, "id is not a string");
			seen |= GQL_WS_M_ID;
		} else if (strcmp(key, "payload") == 0 && (t->members & GQL_WS_M_REQUEST)) {
			payload = v;
			seen |= GQL_WS_M_REQUEST;
		} else if (strcmp(key, "payload") == 0 && (t->members & GQL_WS_M_PAYLOAD)) {
			if (!json_is_object(v) && !json_is_null(v))
				return graphql_ws_invalid(m, "payload is not an object");
		} else
			return graphql_ws_invalid(m,
			                          "message has a member its type does not define");
	}
	if ((seen & t->required) != t->required)
		return graphql_ws_invalid(m, "message lacks a member its type requires");
	if (t->kind == GQL_WS_OPERATION)
		return graphql_ws_request(payload, m);
	m->kind = GQL_WS_CONTROL;
	m->reason = "control message";
	return GQL_WS_CONTROL;
}

/*
 * Classify one text message a client sent on a connection that speaks
 * proto. An operation's document is classified into m->gql; anything that
 * is not a client message of proto is GQL_WS_INVALID with m->reason.
 */
enum gql_ws_kind
graphql_ws_classify(enum gql_ws_proto proto, const char *msg, size_t len, struct gql_ws_msg *m)
{
	json_t *root;
	enum gql_ws_kind kind;

	memset(m, 0, sizeof *m);
	graphql_result_set(&m->gql, GQL_NONE, "not an operation");
	/* Duplicate members, NUL in strings, invalid UTF-8 and trailing bytes are refused. */
	if ((root = json_loadb(msg, len, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return graphql_ws_invalid(m, "message is not JSON");
	if (!json_is_object(root))
		kind = graphql_ws_invalid(m, "message is not a JSON object");
	else if (proto == GQL_WS_TRANSPORT)
		kind = graphql_ws_object(graphql_ws_transport, EG_NELEM(graphql_ws_transport), root,
		                         m);
	else
		kind = graphql_ws_object(graphql_ws_legacy, EG_NELEM(graphql_ws_legacy), root, m);
	json_decref(root);
	return kind;
}
