/*
 * `policyctl explain HOST|URL`: what the policy does with one request
 * (method, method-override and upgrade fields, a body from a file) and
 * which rule of which file decided, with notes that help a person read
 * the answer, as text or JSON. The policy is the one DESIGN §4 names: the
 * --config files when given; else the running egressd, asked over its
 * control socket, whose answer also holds what its resolver finds for the
 * name and the address guard's verdict on each address; else the embedded
 * default. Either way the decision is policy_decide()'s and the object is
 * verdict_json()'s, and the output says which policy answered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

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

/* Print an answer object: as it is for --json, else as text. */
static int
explain_print(const struct policyctl *c, const char *json)
{
	json_error_t jerr;
	struct buf text;
	json_t *o;

	if (c->json) {
		printf("%s\n", json);
		return 0;
	}
	if ((o = json_loads(json, 0, &jerr)) == NULL) {
		fprintf(stderr, "policyctl: an answer that is not JSON: %s\n", jerr.text);
		return EXIT_USAGE;
	}
	buf_init(&text);
	verdict_text(o, &text);
	fputs(buf_cstr(&text), stdout);
	buf_free(&text);
	json_decref(o);
	return 0;
}

/* The members that say where the policy came from, for files and the default. */
static void
explain_json_source(const struct policyctl *c, const char *control, struct buf *b)
{
	size_t i;

	buf_adds(b, ",\"policy_source\":");
	json_escape_str(b, c->nfiles > 0 ? "config" : "default");
	buf_adds(b, ",\"policy\":{\"files\":[");
	for (i = 0; i < c->nfiles; i++) {
		buf_adds(b, i > 0 ? ",{\"path\":" : "{\"path\":");
		json_escape_str(b, c->files[i].path);
		buf_adds(b, ",\"kind\":");
		json_escape_str(b,
		                c->files[i].flags & CONFIG_FILE_UNTRUSTED ? "project" : "config");
		buf_addc(b, '}');
	}
	buf_adds(b, "],\"control\":");
	json_escape_str(b, c->nfiles > 0 ? NULL : control);
	buf_adds(b, "},\"resolved\":null,\"by_name\":null");
}

/* explain from the --config files, or the embedded default without them. */
static int
explain_files(struct policyctl *c, const char *input, const struct url *u, const char *control)
{
	struct policy_request req;
	struct verdict v;
	struct policy *p;
	struct buf errs, b;
	char *body = NULL;
	size_t i;
	int rc;

	buf_init(&errs);
	if ((p = policyctl_load(c, &errs)) == NULL) {
		policyctl_errors(buf_cstr(&errs));
		buf_free(&errs);
		return EXIT_USAGE;
	}
	buf_free(&errs);
	policyctl_ignored_warn(policy_config(p));
	verdict_request(&req, u, c->method);
	for (i = 0; i < c->nheaders; i++)
		policy_request_header(&req, c->headers[i], strlen(c->headers[i]),
		                      c->headers[i] + strlen(c->headers[i]) + 1);
	if (c->body_path != NULL) {
		body = explain_read_body(c->body_path, policy_config(p)->max_graphql_body,
		                         &req.body_len, &req.body_truncated);
		if (body == NULL) {
			policy_unref(p);
			return EXIT_USAGE;
		}
		req.body = body;
	}
	/* Without --content-type the request has none, and is read as egressd reads it. */
	req.content_type = c->content_type;

	verdict_decide(&v, p, input, u, &req);
	verdict_notes(&v, p, 0);
	buf_init(&b);
	buf_addc(&b, '{');
	verdict_json(&v, p, &b);
	explain_json_source(c, control, &b);
	buf_addc(&b, '}');
	rc = explain_print(c, buf_cstr(&b));
	buf_free(&b);
	policy_unref(p);
	free(body);
	return rc;
}

/* The explain request line for egressd: the same fields, the body in base64. */
static char *
explain_live_request(struct policyctl *c, const char *input)
{
	json_t *req, *hs;
	unsigned char *b64;
	char *body, *line;
	size_t i, len;
	int truncated = 0;

	req = json_pack("{s:s, s:s, s:s}", "cmd", "explain", "target", input, "method", c->method);
	if (c->content_type != NULL)
		json_object_set_new(req, "content_type", json_string(c->content_type));
	if (c->nheaders > 0) {
		hs = json_array();
		for (i = 0; i < c->nheaders; i++)
			json_array_append_new(
			    hs, json_pack("{s:s, s:s}", "name", c->headers[i], "value",
			                  c->headers[i] + strlen(c->headers[i]) + 1));
		json_object_set_new(req, "headers", hs);
	}
	if (c->body_path != NULL) {
		if ((body = explain_read_body(c->body_path, LIVE_MAX_BODY, &len, &truncated)) ==
		    NULL) {
			json_decref(req);
			return NULL;
		}
		b64 = xmalloc((len + 2) / 3 * 4 + 1);
		EVP_EncodeBlock(b64, (const unsigned char *)body, (int)len);
		json_object_set_new(req, "body_base64", json_string((char *)b64));
		if (truncated)
			json_object_set_new(req, "body_truncated", json_true());
		free(b64);
		free(body);
	}
	line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return line;
}

/* explain on the running egressd's live policy. */
static int
explain_live(struct policyctl *c, const char *input, const char *path)
{
	json_t *ans, *o;
	char err[256], *req, *out;
	int absent, rc = EXIT_USAGE;

	if ((req = explain_live_request(c, input)) == NULL)
		return EXIT_USAGE;
	ans = live_ask(path, req, err, sizeof err, &absent);
	free(req);
	if (ans == NULL) {
		fprintf(
		    stderr,
		    "policyctl: egressd's control socket %s does not answer (%s). Not answering "
		    "from another policy: start egressd with --control %s, or pass --config FILE "
		    "to explain from files\n",
		    path, err, path);
		return EXIT_USAGE;
	}
	if (!json_is_true(json_object_get(ans, "ok")) ||
	    !json_is_object(o = json_object_get(ans, "explain"))) {
		live_print_error(path, ans);
		json_decref(ans);
		return EXIT_USAGE;
	}
	if ((out = json_dumps(o, JSON_COMPACT)) != NULL) {
		rc = explain_print(c, out);
		free(out);
	}
	json_decref(ans);
	return rc;
}

int
explain_run(struct policyctl *c, const char *input)
{
	struct url u;
	const char *err, *path;
	int rc = EXIT_USAGE, named;

	memset(&u, 0, sizeof u);
	if (strlen(c->method) > 32 || !text_http_token(c->method, strlen(c->method))) {
		fprintf(stderr, "policyctl: invalid method \"%s\"\n", c->method);
		goto out;
	}
	if ((err = url_parse(input, &u)) != NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", input, err);
		goto out;
	}
	if (c->nfiles > 0) {
		rc = explain_files(c, input, &u, NULL);
		goto out;
	}
	path = live_path(c, &named);
	if (live_exists(path))
		rc = explain_live(c, input, path);
	else if (named)
		fprintf(stderr,
		        "policyctl: no egressd control socket at %s (is egressd running with "
		        "--control %s?)\n",
		        path, path);
	else
		rc = explain_files(c, input, &u, path);
out:
	url_free(&u);
	return rc;
}
