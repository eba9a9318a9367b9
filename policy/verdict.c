/*
 * A decision as `explain` shows it: the request asked about, the policy's
 * answer and the notes that help a person read it, written as the members
 * of one JSON object. policyctl explain (from files) and egressd's control
 * socket (the live policy, with what resolving the name found) both decide
 * through policy_decide() and both render through verdict_json(), so the
 * object a user reads is the same whoever answered; verdict_text() is that
 * object for people (opencode-sandbox policy test prints both too).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"

/* ,"key": (no comma before the first member) */
static void
verdict_key(struct buf *b, const char *key, int first)
{
	if (!first)
		buf_addc(b, ',');
	json_escape_str(b, key);
	buf_addc(b, ':');
}

/* Decide the request: its url (already parsed from input) and req. */
void
verdict_decide(struct verdict *v, const struct policy *p, const char *input, const struct url *u,
               const struct policy_request *req)
{
	memset(v, 0, sizeof *v);
	v->input = input;
	v->url = u;
	v->req = req;
	policy_decide(p, req, &v->d);
}

/* One more note, made with printf; dropped when there is no room. */
void
verdict_note(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->nnotes == VERDICT_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(v->store[v->nnotes], sizeof v->store[v->nnotes], fmt, ap);
	va_end(ap);
	v->notes[v->nnotes] = v->store[v->nnotes];
	v->nnotes++;
}

static void
verdict_note_static(struct verdict *v, const char *text)
{
	if (v->nnotes < VERDICT_MAX_NOTES)
		v->notes[v->nnotes++] = text;
}

/*
 * The notes that help a person read the answer. Without VERDICT_F_RESOLVED
 * the host's name was not resolved, and the note says what is left for
 * connect time: the private-address guard on the addresses it resolves to.
 */
void
verdict_notes(struct verdict *v, const struct policy *p, int flags)
{
	const struct host *h = &v->url->host;
	struct domain_match m;

	verdict_note_static(v, policy_mode_note(policy_mode(p)));
	if (h->kind == HOST_ADDR && strstr(v->input, h->name) == NULL)
		verdict_note(v, "the host is an IP address written in another form: %s", h->name);
	if (h->kind == HOST_NAME && v->d.action != ACTION_BLOCK && !(flags & VERDICT_F_RESOLVED))
		verdict_note_static(
		    v, "decided by the name as written, without resolving it: egressd applies the "
		       "address guard at connect time to the addresses the name resolves to "
		       "(private addresses are blocked unless allowlisted); the running egressd's "
		       "control socket (--control) answers with them");
	if (v->d.action != ACTION_BLOCK && policy_passthrough(p, h, &m))
		verdict_note(v,
		             "passthrough (%s): HTTPS to this host is tunnelled without "
		             "interception, so methods inside TLS are not checked",
		             m.pattern);
	if (v->d.ws_inspect)
		verdict_note_static(
		    v, "WebSocket messages are inspected: egressd reads every client message and "
		       "lets only GraphQL queries and subscriptions through; anything else closes "
		       "the connection (code 4403) and is audited");
	if (v->d.action == ACTION_FLAG)
		verdict_note_static(
		    v, "flagged requests are let through and recorded in the audit log");
}

static void
verdict_graphql(struct buf *b, const struct decision *d)
{
	if (!d->graphql_present) {
		buf_adds(b, "null");
		return;
	}
	buf_addc(b, '{');
	verdict_key(b, "operation", 1);
	json_escape_str(b, graphql_op_name(d->gql.op));
	verdict_key(b, "name", 0);
	json_escape_str(b, d->gql.name[0] ? d->gql.name : NULL);
	verdict_key(b, "only", 0);
	buf_adds(b, d->gql.pure ? "true" : "false");
	verdict_key(b, "not_only", 0);
	json_escape_str(b, d->gql.impure);
	buf_addc(b, '}');
}

/* The members that say what decided: action, rule, list, source, reason. */
void
verdict_json_decision(const struct decision *d, struct buf *b, int first)
{
	verdict_key(b, "action", first);
	json_escape_str(b, policy_action_name(d->action));
	verdict_key(b, "rule", 0);
	json_escape_str(b, d->rule);
	verdict_key(b, "list", 0);
	json_escape_str(b, policy_list_name(d->list));
	verdict_key(b, "source", 0);
	json_escape_str(b, d->source);
	verdict_key(b, "reason", 0);
	json_escape_str(b, d->reason);
}

/*
 * The members of `policyctl explain --json`'s object, without its braces:
 * the caller adds its own (where the policy came from, what resolving
 * found) before closing it.
 */
void
verdict_json(const struct verdict *v, const struct policy *p, struct buf *b)
{
	const struct url *u = v->url;
	const struct policy_request *req = v->req;
	size_t i;

	verdict_key(b, "host", 1);
	json_escape_str(b, u->host.name);
	verdict_key(b, "host_kind", 0);
	json_escape_str(b, u->host.kind == HOST_ADDR ? "address" : "name");
	verdict_json_decision(&v->d, b, 0);
	verdict_key(b, "mode", 0);
	json_escape_str(b, config_mode_name(policy_mode(p)));
	verdict_key(b, "method", 0);
	json_escape_str(b, req->method);
	verdict_key(b, "overrides", 0);
	buf_addc(b, '[');
	for (i = 0; i < req->noverrides && i < POLICY_MAX_OVERRIDES; i++) {
		buf_adds(b, i > 0 ? ",{" : "{");
		verdict_key(b, "field", 1);
		json_escape_str(b, req->override_fields[i]);
		verdict_key(b, "method", 0);
		json_escape_str(b, req->overrides[i]);
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
	verdict_key(b, "overrides_more", 0);
	buf_adds(b, req->noverrides > POLICY_MAX_OVERRIDES ? "true" : "false");
	verdict_key(b, "scheme", 0);
	json_escape_str(b, u->scheme[0] ? u->scheme : NULL);
	verdict_key(b, "port", 0);
	if (u->port != 0)
		buf_printf(b, "%u", u->port);
	else
		buf_adds(b, "null");
	verdict_key(b, "path", 0);
	json_escape_str(b, u->path);
	verdict_key(b, "graphql", 0);
	verdict_graphql(b, &v->d);
	verdict_key(b, "notes", 0);
	buf_addc(b, '[');
	for (i = 0; i < v->nnotes; i++) {
		if (i > 0)
			buf_addc(b, ',');
		json_escape_str(b, v->notes[i]);
	}
	buf_addc(b, ']');
}

/*
 * The request explain asks about: the host of u as written, the method,
 * the URL's query, and the port a CONNECT names (443 when it names none).
 */
void
verdict_request(struct policy_request *req, const struct url *u, const char *method)
{
	memset(req, 0, sizeof *req);
	req->host = &u->host;
	req->method = method;
	/* A CONNECT names its port; without one, explain asks about HTTPS's. */
	req->port = u->port != 0 ? u->port : strcmp(method, "CONNECT") == 0 ? 443 : 0;
	req->query = u->query;
}

/* A string member, or def when it is absent or not a string. */
static const char *
verdict_str(const json_t *o, const char *key, const char *def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : def;
}

static const char *
verdict_action_word(const char *action)
{
	if (strcmp(action, "allow") == 0)
		return "allowed";
	if (strcmp(action, "flag") == 0)
		return "flagged";
	return "blocked";
}

/* "rule (list, source)", as the matched rule and the guard's refusals are shown. */
static void
verdict_text_rule(const json_t *d, struct buf *out)
{
	const char *list = verdict_str(d, "list", NULL);

	buf_printf(out, "%s (%s%s%s)", verdict_str(d, "rule", ""), list ? list : "",
	           list ? ", " : "", verdict_str(d, "source", ""));
}

static void
verdict_text_method(const json_t *o, struct buf *out)
{
	const json_t *ov, *f;
	size_t i;

	buf_printf(out, "method: %s", verdict_str(o, "method", ""));
	ov = json_object_get(o, "overrides");
	json_array_foreach(ov, i, f)
	{
		buf_printf(out, "%s%s: %s", i == 0 ? " (" : ", ", verdict_str(f, "field", ""),
		           verdict_str(f, "method", ""));
	}
	buf_printf(out, "%s\n",
	           json_is_true(json_object_get(o, "overrides_more")) ? ", ...)"
	           : json_array_size(ov) > 0                          ? ")"
	                                                              : "");
}

/* Which policy answered, on the `policy:` line. */
static void
verdict_text_policy(const json_t *o, struct buf *out)
{
	const char *src = verdict_str(o, "policy_source", "");
	const json_t *pol = json_object_get(o, "policy"), *files, *f;
	size_t i;

	files = json_object_get(pol, "files");
	if (strcmp(src, "egressd") == 0)
		buf_printf(
		    out, "policy: the running egressd (pid %lld, policy generation %lld, via %s): ",
		    json_integer_value(json_object_get(pol, "pid")),
		    json_integer_value(json_object_get(pol, "generation")),
		    verdict_str(pol, "control", "its control socket"));
	else if (strcmp(src, "config") == 0)
		buf_printf(out, "policy: the files ");
	else {
		buf_printf(
		    out,
		    "policy: the embedded default (no --config, and no egressd control socket at "
		    "%s)\n",
		    verdict_str(pol, "control", "its default path"));
		return;
	}
	if (json_array_size(files) == 0)
		buf_printf(out, "the embedded default");
	json_array_foreach(files, i, f)
	{
		buf_printf(out, "%s%s%s", i > 0 ? ", " : "", verdict_str(f, "path", ""),
		           strcmp(verdict_str(f, "kind", ""), "project") == 0 ? " (project file)"
		           : strcmp(verdict_str(f, "kind", ""), "list") == 0  ? " (list file)"
		                                                              : "");
	}
	buf_printf(out, "\n");
}

/* What the running egressd's resolver found, and what the guard made of it. */
static void
verdict_text_resolved(const json_t *o, struct buf *out)
{
	const json_t *r = json_object_get(o, "resolved"), *by = json_object_get(o, "by_name");
	const json_t *addrs, *a;
	const char *status;
	size_t i;

	if (!json_is_object(r))
		return;
	status = verdict_str(r, "status", "");
	addrs = json_object_get(r, "addresses");
	if (strcmp(status, "ok") == 0) {
		buf_printf(out, "resolved:");
		json_array_foreach(addrs, i, a)
		{
			buf_printf(out, "%s %s ", i > 0 ? "," : "", verdict_str(a, "address", ""));
			if (json_is_true(json_object_get(a, "allowed")))
				buf_printf(out, "(allowed)");
			else {
				buf_printf(out, "(blocked: ");
				verdict_text_rule(a, out);
				buf_printf(out, ")");
			}
		}
		buf_printf(out, "\n");
	} else if (strcmp(status, "no-such-name") == 0)
		buf_printf(out, "resolved: no address (egressd's resolver: no such name)\n");
	else if (strcmp(status, "failed") == 0)
		buf_printf(out,
		           "resolved: no address (egressd's resolver: no upstream answered)\n");
	else if (strcmp(status, "timeout") == 0)
		buf_printf(out, "resolved: no answer within egressd's connect timeout\n");
	else if (strcmp(status, "cname-blocked") == 0)
		buf_printf(out, "resolved: the CNAME chain leads to a blocked name\n");
	if (json_is_object(by)) {
		buf_printf(out, "by name: %s by ",
		           verdict_action_word(verdict_str(by, "action", "")));
		verdict_text_rule(by, out);
		buf_printf(out, "; the addresses decided\n");
	}
}

/*
 * The answer for people, from the object `explain --json` prints (whoever
 * made it: policyctl from files, egressd's control socket, or
 * opencode-sandbox policy test), appended to out.
 */
void
verdict_text(const json_t *o, struct buf *out)
{
	const json_t *g = json_object_get(o, "graphql"), *notes, *n;
	const char *name;
	size_t i;

	buf_printf(out, "%s: %s\n", verdict_action_word(verdict_str(o, "action", "")),
	           verdict_str(o, "host", ""));
	buf_printf(out, "matched rule: ");
	verdict_text_rule(o, out);
	buf_printf(out, "\nreason: %s\n", verdict_str(o, "reason", ""));
	verdict_text_method(o, out);
	if (json_is_object(g)) {
		name = verdict_str(g, "name", NULL);
		buf_printf(out, "graphql: %s%s%s%s\n", verdict_str(g, "operation", ""),
		           name ? " " : "", name ? name : "",
		           json_is_true(json_object_get(g, "only"))
		               ? ""
		               : " (in a request that is not GraphQL alone)");
	}
	buf_printf(out, "mode: %s\n", verdict_str(o, "mode", ""));
	verdict_text_policy(o, out);
	verdict_text_resolved(o, out);
	notes = json_object_get(o, "notes");
	json_array_foreach(notes, i, n)
	{
		buf_printf(out, "note: %s\n", json_string_value(n));
	}
}
