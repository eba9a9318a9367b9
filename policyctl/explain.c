/*
 * `policyctl explain HOST|URL`: what the policy does with one request
 * (method, method-override and upgrade fields, a body from a file) and
 * which rule of which file decided, with notes that help a person read
 * the answer, as text or JSON. It decides with the one policy_decide()
 * call egressd makes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policyctl.h"

/*
 * --header "Name: value": a field the request carries, for the fields
 * the policy reads (method overrides, a WebSocket upgrade and its
 * subprotocols). Stored as name NUL value. An Upgrade field stands for
 * one the Connection field names, as a client sends it.
 */
int
explain_add_header(struct policyctl *c, const char *arg)
{
	const char *colon = strchr(arg, ':');
	char *h, *v;
	size_t n;

	if (colon == NULL || colon == arg || !text_http_token(arg, (size_t)(colon - arg))) {
		fprintf(stderr, "policyctl: --header wants \"NAME: VALUE\", not \"%s\"\n", arg);
		return -1;
	}
	if (c->nheaders == POLICYCTL_MAX_HEADERS) {
		fprintf(stderr, "policyctl: at most %d --header options\n", POLICYCTL_MAX_HEADERS);
		return -1;
	}
	h = xstrdup(arg);
	h[colon - arg] = '\0';
	for (v = h + (colon - arg) + 1; *v == ' ' || *v == '\t'; v++)
		;
	memmove(h + (colon - arg) + 1, v, strlen(v) + 1);
	/* Trailing whitespace is not part of a field value (RFC 9110 §5.5), as in egressd. */
	v = h + (colon - arg) + 1;
	for (n = strlen(v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'); n--)
		v[n - 1] = '\0';
	c->headers[c->nheaders++] = h;
	return 0;
}

/* Read at most max bytes of path; *truncated says whether there was more. */
static char *
explain_read_body(const char *path, size_t max, size_t *len, int *truncated)
{
	FILE *f;
	char *data;
	size_t n;
	int c;

	if ((f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb")) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	data = xmalloc(max + 1);
	n = fread(data, 1, max, f);
	if (ferror(f)) {
		fprintf(stderr, "policyctl: %s: read error\n", path);
		free(data);
		if (f != stdin)
			fclose(f);
		return NULL;
	}
	*truncated = n == max && (c = fgetc(f)) != EOF;
	if (f != stdin)
		fclose(f);
	data[n] = '\0';
	*len = n;
	return data;
}

static const char *
explain_action_word(enum policy_action a)
{
	switch (a) {
	case ACTION_ALLOW:
		return "allowed";
	case ACTION_FLAG:
		return "flagged";
	case ACTION_BLOCK:
		break;
	}
	return "blocked";
}

/* Notes that help a person read the answer; at most a handful. */
static size_t
explain_notes(const struct policy *p, const char *input, const struct url *u,
              const struct decision *d, const char *notes[], char store[][320], size_t max)
{
	struct domain_match m;
	size_t n = 0;

	notes[n++] = policy_mode_note(policy_mode(p));
	if (u->host.kind == HOST_ADDR && strstr(input, u->host.name) == NULL && n < max) {
		snprintf(store[n], sizeof store[n],
		         "the host is an IP address written in another form: %s", u->host.name);
		notes[n] = store[n];
		n++;
	}
	if (u->host.kind == HOST_NAME && d->action != ACTION_BLOCK && n < max) {
		notes[n++] = "decided by the name as written; egressd also checks the address it "
		             "resolves to (private addresses are blocked unless allowlisted)";
	}
	if (d->action != ACTION_BLOCK && policy_passthrough(p, &u->host, &m) && n < max) {
		snprintf(store[n], sizeof store[n],
		         "passthrough (%s): HTTPS to this host is tunnelled without interception, "
		         "so methods inside TLS are not checked",
		         m.pattern);
		notes[n] = store[n];
		n++;
	}
	if (d->ws_inspect && n < max)
		notes[n++] =
		    "WebSocket messages are inspected: egressd reads every client message "
		    "and lets only GraphQL queries and subscriptions through; anything else "
		    "closes the connection (code 4403) and is audited";
	if (d->action == ACTION_FLAG && n < max)
		notes[n++] = "flagged requests are let through and recorded in the audit log";
	return n;
}

static void
explain_print_text(const char *input, const struct url *u, const struct policy_request *req,
                   const struct decision *d, const struct policy *p, const char *notes[],
                   size_t nnotes)
{
	const char *list = policy_list_name(d->list);
	size_t i;

	printf("%s: %s\n", explain_action_word(d->action), u->host.name);
	printf("matched rule: %s (%s%s%s)\n", d->rule, list ? list : "", list ? ", " : "",
	       d->source);
	printf("reason: %s\n", d->reason);
	printf("method: %s", req->method);
	for (i = 0; i < req->noverrides && i < POLICY_MAX_OVERRIDES; i++)
		printf("%s%s: %s", i == 0 ? " (" : ", ", req->override_fields[i],
		       req->overrides[i]);
	printf("%s\n", req->noverrides > POLICY_MAX_OVERRIDES ? ", ...)"
	               : req->noverrides > 0                  ? ")"
	                                                      : "");
	if (d->graphql_present)
		printf("graphql: %s%s%s%s\n", graphql_op_name(d->gql.op), d->gql.name[0] ? " " : "",
		       d->gql.name, d->gql.pure ? "" : " (in a request that is not GraphQL alone)");
	printf("mode: %s\n", config_mode_name(policy_mode(p)));
	for (i = 0; i < nnotes; i++)
		printf("note: %s\n", notes[i]);
	(void)input;
}

static void
explain_print_json(const struct url *u, const struct policy_request *req, const struct decision *d,
                   const struct policy *p, const char *notes[], size_t nnotes)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_addc(&b, '{');
	policyctl_json_key(&b, "host", 1);
	json_escape_str(&b, u->host.name);
	policyctl_json_key(&b, "host_kind", 0);
	json_escape_str(&b, u->host.kind == HOST_ADDR ? "address" : "name");
	policyctl_json_key(&b, "action", 0);
	json_escape_str(&b, policy_action_name(d->action));
	policyctl_json_key(&b, "rule", 0);
	json_escape_str(&b, d->rule);
	policyctl_json_key(&b, "list", 0);
	json_escape_str(&b, policy_list_name(d->list));
	policyctl_json_key(&b, "source", 0);
	json_escape_str(&b, d->source);
	policyctl_json_key(&b, "mode", 0);
	json_escape_str(&b, config_mode_name(policy_mode(p)));
	policyctl_json_key(&b, "method", 0);
	json_escape_str(&b, req->method);
	policyctl_json_key(&b, "overrides", 0);
	buf_addc(&b, '[');
	for (i = 0; i < req->noverrides && i < POLICY_MAX_OVERRIDES; i++) {
		buf_adds(&b, i > 0 ? ",{" : "{");
		policyctl_json_key(&b, "field", 1);
		json_escape_str(&b, req->override_fields[i]);
		policyctl_json_key(&b, "method", 0);
		json_escape_str(&b, req->overrides[i]);
		buf_addc(&b, '}');
	}
	buf_addc(&b, ']');
	policyctl_json_key(&b, "scheme", 0);
	json_escape_str(&b, u->scheme[0] ? u->scheme : NULL);
	policyctl_json_key(&b, "port", 0);
	if (u->port != 0)
		buf_printf(&b, "%u", u->port);
	else
		buf_adds(&b, "null");
	policyctl_json_key(&b, "path", 0);
	json_escape_str(&b, u->path);
	policyctl_json_key(&b, "graphql", 0);
	if (d->graphql_present) {
		buf_addc(&b, '{');
		policyctl_json_key(&b, "operation", 1);
		json_escape_str(&b, graphql_op_name(d->gql.op));
		policyctl_json_key(&b, "name", 0);
		json_escape_str(&b, d->gql.name[0] ? d->gql.name : NULL);
		policyctl_json_key(&b, "only", 0);
		buf_adds(&b, d->gql.pure ? "true" : "false");
		policyctl_json_key(&b, "not_only", 0);
		json_escape_str(&b, d->gql.impure);
		buf_addc(&b, '}');
	} else
		buf_adds(&b, "null");
	policyctl_json_key(&b, "reason", 0);
	json_escape_str(&b, d->reason);
	policyctl_json_key(&b, "notes", 0);
	buf_addc(&b, '[');
	for (i = 0; i < nnotes; i++) {
		if (i > 0)
			buf_addc(&b, ',');
		json_escape_str(&b, notes[i]);
	}
	buf_adds(&b, "]}\n");
	fputs(buf_cstr(&b), stdout);
	buf_free(&b);
}

int
explain_run(struct policyctl *c, const char *input)
{
	struct policy_request req;
	struct decision d;
	struct policy *p;
	struct url u;
	struct buf errs;
	const char *err, *notes[8];
	char store[8][320];
	char *body = NULL;
	size_t nnotes, i;
	int rc = EXIT_USAGE;

	memset(&u, 0, sizeof u);
	buf_init(&errs);
	if (strlen(c->method) > 32 || !text_http_token(c->method, strlen(c->method))) {
		fprintf(stderr, "policyctl: invalid method \"%s\"\n", c->method);
		goto out;
	}
	if ((err = url_parse(input, &u)) != NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", input, err);
		goto out;
	}
	if ((p = policyctl_load(c, &errs)) == NULL) {
		policyctl_errors(buf_cstr(&errs));
		goto out;
	}
	policyctl_ignored_warn(policy_config(p));
	memset(&req, 0, sizeof req);
	req.host = &u.host;
	req.method = c->method;
	/* A CONNECT names its port; without one, explain asks about HTTPS's. */
	req.port = u.port != 0 ? u.port : strcmp(c->method, "CONNECT") == 0 ? 443 : 0;
	req.query = u.query;
	for (i = 0; i < c->nheaders; i++)
		policy_request_header(&req, c->headers[i], strlen(c->headers[i]),
		                      c->headers[i] + strlen(c->headers[i]) + 1);
	if (c->body_path != NULL) {
		body = explain_read_body(c->body_path, policy_config(p)->max_graphql_body,
		                         &req.body_len, &req.body_truncated);
		if (body == NULL) {
			policy_unref(p);
			goto out;
		}
		req.body = body;
	}
	/* Without --content-type the request has none, and is read as egressd reads it. */
	req.content_type = c->content_type;

	policy_decide(p, &req, &d);
	nnotes = explain_notes(p, input, &u, &d, notes, store, EG_NELEM(notes));
	if (c->json)
		explain_print_json(&u, &req, &d, p, notes, nnotes);
	else
		explain_print_text(input, &u, &req, &d, p, notes, nnotes);
	policy_unref(p);
	rc = 0;
out:
	free(body);
	url_free(&u);
	buf_free(&errs);
	return rc;
}
