/*
 * The header fields a decision reads besides the method, target and body:
 * the method a server may be told to use instead of the request line's
 * (X-HTTP-Method-Override and its other spellings, honoured by many
 * frameworks), and a WebSocket upgrade with the subprotocols it offers.
 * egressd hands over the fields its parser recognised, policyctl explain
 * its --header options, so both fill a policy_request the same way.
 */
#include <string.h>
#include <strings.h>

#include "policy_int.h"

static const struct {
	const char *name;
	size_t len;
	enum policy_header kind;
} policy_headers[] = {
    {"X-HTTP-Method-Override", 22, POLICY_HEADER_OVERRIDE},
    {"X-HTTP-Method", 13, POLICY_HEADER_OVERRIDE},
    {"X-Method-Override", 17, POLICY_HEADER_OVERRIDE},
    {"Upgrade", 7, POLICY_HEADER_UPGRADE},
    {"Sec-WebSocket-Protocol", 22, POLICY_HEADER_WS_PROTOCOL},
};

/* The index of the entry above that a name of len bytes is; NELEM if none. */
static size_t
policy_header_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < EG_NELEM(policy_headers); i++) {
		if (policy_headers[i].len == len &&
		    strncasecmp(policy_headers[i].name, name, len) == 0)
			break;
	}
	return i;
}

/* Which of the fields above a name of len bytes is, case-insensitively. */
enum policy_header
policy_header_kind(const char *name, size_t len)
{
	size_t i = policy_header_find(name, len);

	return i < EG_NELEM(policy_headers) ? policy_headers[i].kind : POLICY_HEADER_OTHER;
}

/*
 * Calls fn for each non-empty element of a comma-separated list, with
 * optional whitespace trimmed (RFC 9110 §5.6.1).
 */
static void
policy_list_each(const char *v, void (*fn)(struct policy_request *, const char *, size_t),
                 struct policy_request *req)
{
	const char *p = v, *e, *end;

	while (*p != '\0') {
		e = p + strcspn(p, ",");
		for (end = e; end > p && (end[-1] == ' ' || end[-1] == '\t'); end--)
			;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end > p)
			fn(req, p, (size_t)(end - p));
		p = *e == ',' ? e + 1 : e;
	}
}

static void
policy_upgrade_token(struct policy_request *req, const char *t, size_t len)
{
	if (len == 9 && strncasecmp(t, "websocket", 9) == 0)
		req->upgrade = POLICY_UPGRADE_WEBSOCKET;
}

/*
 * Subprotocol names are compared exactly (RFC 6455 §4.1): a spelling the
 * GraphQL servers would not select counts as another protocol.
 */
static void
policy_ws_token(struct policy_request *req, const char *t, size_t len)
{
	if ((len == 20 && memcmp(t, "graphql-transport-ws", 20) == 0) ||
	    (len == 10 && memcmp(t, "graphql-ws", 10) == 0))
		req->ws_offer |= POLICY_WS_GRAPHQL;
	else
		req->ws_offer |= POLICY_WS_OTHER;
}

/*
 * Records one header field of the request in req. value is NUL-terminated
 * and must outlive req. An Upgrade field counts only when the Connection
 * field names it: the caller passes it only then.
 */
void
policy_request_header(struct policy_request *req, const char *name, size_t len, const char *value)
{
	size_t i = policy_header_find(name, len);

	if (i == EG_NELEM(policy_headers))
		return;
	switch (policy_headers[i].kind) {
	case POLICY_HEADER_OVERRIDE:
		if (req->noverrides < POLICY_MAX_OVERRIDES) {
			req->overrides[req->noverrides] = value;
			req->override_fields[req->noverrides] = policy_headers[i].name;
		}
		req->noverrides++;
		break;
	case POLICY_HEADER_UPGRADE:
		policy_list_each(value, policy_upgrade_token, req);
		break;
	case POLICY_HEADER_WS_PROTOCOL:
		policy_list_each(value, policy_ws_token, req);
		break;
	case POLICY_HEADER_OTHER:
		break;
	}
}
