/*
 * GraphQL over HTTP: which requests carry GraphQL and where (URL
 * parameters, JSON bodies and batches, application/graphql, form and
 * multipart bodies), read the ways servers read them, then classified by
 * graphql.c's document parser. Whatever cannot be proved a query is
 * GQL_UNKNOWN, never GQL_QUERY. Apart from the operation it tells whether
 * the request is GraphQL over HTTP and nothing else (gql_result.pure):
 * only then may the GraphQL allowance stand in for the method rules.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "graphql_int.h"

/* Percent-decodes (with '+' as space); a malformed escape stays literal. */
static char *
graphql_pct_decode(const char *s, size_t len, size_t *outlen)
{
	char *out = xmalloc(len + 1);
	size_t i, n = 0;
	int hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] == '+')
			out[n++] = ' ';
		else if (s[i] == '%' && len - i > 2 && (hi = text_hex_value(s[i + 1])) != -1 &&
		         (lo = text_hex_value(s[i + 2])) != -1) {
			out[n++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			out[n++] = s[i];
	}
	out[n] = '\0';
	*outlen = n;
	return out;
}

/*
 * The next key=value pair of a form. Both '&' and ';' separate pairs, as
 * some server frameworks split on either: a parameter hidden behind ';'
 * must still be seen.
 */
static int
graphql_form_next(const char **pp, const char *end, char **key, size_t *keylen, char **val,
                  size_t *vallen)
{
	const char *p = *pp, *e, *eq;

	if (p >= end)
		return 0;
	for (e = p; e < end && *e != '&' && *e != ';'; e++)
		;
	if ((eq = memchr(p, '=', (size_t)(e - p))) == NULL)
		eq = e;
	*key = graphql_pct_decode(p, (size_t)(eq - p), keylen);
	*val = graphql_pct_decode(eq < e ? eq + 1 : e, (size_t)(e - (eq < e ? eq + 1 : e)), vallen);
	*pp = e < end ? e + 1 : e;
	return 1;
}

/*
 * The GraphQL parameters of a URL query or form body. Names are matched in
 * any letter case: some frameworks bind parameters case-insensitively.
 */
struct gql_params {
	char *opname;   /* the first operationName, or NULL */
	int opname_bad; /* several that differ, or one holding a NUL */
	int persisted;  /* extensions with a persistedQuery */
	unsigned seen;  /* GQL_MEMBER_* bits of the GraphQL parameters present */
	int repeated;   /* a GraphQL parameter given twice */
	int others;     /* a parameter that is not a GraphQL one */
};

static int
graphql_key_is(const char *key, size_t keylen, const char *name)
{
	return keylen == strlen(name) && strncasecmp(key, name, keylen) == 0;
}

/*
 * What a GraphQL-over-HTTP request holds, and nothing else may: in a JSON
 * object (every entry of a batch), a form body or a GET's URL.
 */
static const char *const graphql_members[] = {"query", "operationName", "variables", "extensions"};
#define GQL_MEMBER_QUERY 0x1u

/* Why a request is not GraphQL over HTTP and nothing else (gql_result.impure). */
#define GQL_ONLY_MEMBERS "query, operationName, variables and extensions, each once"
static const char gql_impure_json[] = "the JSON holds more than " GQL_ONLY_MEMBERS;
static const char gql_impure_form[] = "the form holds more than " GQL_ONLY_MEMBERS;
static const char gql_impure_url[] = "the URL holds more than " GQL_ONLY_MEMBERS;

/* The bit of a GraphQL member name in any letter case, or 0 for another name. */
static unsigned
graphql_member_bit(const char *key, size_t keylen)
{
	size_t i;

	for (i = 0; i < EG_NELEM(graphql_members); i++) {
		if (graphql_key_is(key, keylen, graphql_members[i]))
			return 1u << i;
	}
	return 0;
}

/* Records one parameter name for the "GraphQL and nothing else" test. */
static void
graphql_params_name(struct gql_params *gp, const char *key, size_t keylen)
{
	unsigned bit = graphql_member_bit(key, keylen);

	if (bit == 0)
		gp->others = 1;
	gp->repeated |= (gp->seen & bit) != 0;
	gp->seen |= bit;
}

/* A form or URL that is a GraphQL request only: its parameters, each once, and a query. */
static int
graphql_params_only(const struct gql_params *gp)
{
	return (gp->seen & GQL_MEMBER_QUERY) && !gp->repeated && !gp->others;
}

static void
graphql_form_params(const char *s, size_t len, struct gql_params *gp)
{
	const char *p, *end = s + len;
	char *key, *val;
	size_t keylen, vallen;
	json_t *ext;

	memset(gp, 0, sizeof *gp);
	for (p = s; graphql_form_next(&p, end, &key, &keylen, &val, &vallen);) {
		/* An empty pair ("a=1&&b=2") names nothing a server binds. */
		if (keylen > 0 || vallen > 0)
			graphql_params_name(gp, key, keylen);
		if (graphql_key_is(key, keylen, "operationName")) {
			gp->opname_bad |= strlen(val) != vallen;
			if (gp->opname == NULL) {
				gp->opname = val;
				val = NULL;
			} else if (strcmp(val, gp->opname) != 0)
				gp->opname_bad = 1;
		} else if (graphql_key_is(key, keylen, "extensions")) {
			if ((ext = json_loadb(val, vallen, 0, NULL)) != NULL) {
				gp->persisted |= json_is_object(ext) &&
				                 json_object_get(ext, "persistedQuery") != NULL;
				json_decref(ext);
			}
		}
		free(key);
		free(val);
	}
}

/*
 * Classifies a document under its own operationName and, as servers such
 * as express-graphql let a URL operationName override the body's, under
 * the URL's too: the worse answer stands.
 */
static void
graphql_classify_doc_names(const char *doc, size_t len, const char *opname,
                           const struct gql_params *url, struct gql_result *res)
{
	struct gql_result r;

	graphql_classify_document(doc, len, opname, res);
	if (url == NULL || (url->opname == NULL && !url->opname_bad))
		return;
	if (url->opname_bad)
		graphql_result_set(&r, GQL_UNKNOWN, "conflicting operationName");
	else
		graphql_classify_document(doc, len, url->opname, &r);
	graphql_merge(res, &r);
}

/*
 * GraphQL over GET, or in a form body (url: the request's URL parameters).
 * *only: the parameters are a GraphQL request's and nothing else.
 */
static void
graphql_classify_form(const char *s, size_t len, const struct gql_params *url,
                      struct gql_result *res, int *only)
{
	const char *p, *end = s + len;
	char *key, *val;
	size_t keylen, vallen;
	struct gql_params gp;
	struct gql_result r;
	int isgql = 0;

	graphql_result_set(res, GQL_NONE, "no GraphQL in parameters");
	graphql_form_params(s, len, &gp);
	for (p = s; graphql_form_next(&p, end, &key, &keylen, &val, &vallen);) {
		if (graphql_key_is(key, keylen, "query") && graphql_looks_like(val, vallen)) {
			isgql = 1;
			if (gp.opname_bad)
				graphql_result_set(&r, GQL_UNKNOWN, "conflicting operationName");
			else
				graphql_classify_doc_names(val, vallen, gp.opname, url, &r);
			graphql_merge(res, &r);
		}
		free(key);
		free(val);
	}
	if (!isgql && gp.persisted)
		graphql_result_set(res, GQL_UNKNOWN, "persisted query without document");
	*only = isgql && graphql_params_only(&gp);
	free(gp.opname);
}

/* The member called name in any letter case; *dup set when two spell it. */
static json_t *
graphql_json_member(json_t *obj, const char *name, int *dup)
{
	json_t *found = NULL;
	void *it;

	for (it = json_object_iter(obj); it != NULL; it = json_object_iter_next(obj, it)) {
		if (strcasecmp(json_object_iter_key(it), name) == 0) {
			*dup |= found != NULL;
			found = json_object_iter_value(it);
		}
	}
	return found;
}

static int
graphql_json_persisted(json_t *obj, int *dup)
{
	json_t *ext;
	int p;

	p = graphql_json_member(obj, "documentId", dup) != NULL ||
	    graphql_json_member(obj, "doc_id", dup) != NULL;
	if ((ext = graphql_json_member(obj, "extensions", dup)) == NULL)
		return p;
	if (json_is_string(ext))
		return p || strstr(json_string_value(ext), "persistedQuery") != NULL;
	return p || (json_is_object(ext) && json_object_get(ext, "persistedQuery") != NULL);
}

/*
 * Whether obj holds GraphQL request members only, each spelled once in any
 * letter case, the query among them. Names are compared with their length:
 * jansson keeps what follows an escaped NUL.
 */
static int
graphql_json_only(json_t *obj)
{
	struct gql_params gp;
	void *it;

	memset(&gp, 0, sizeof gp);
	for (it = json_object_iter(obj); it != NULL; it = json_object_iter_next(obj, it))
		graphql_params_name(&gp, json_object_iter_key(it), json_object_iter_key_len(it));
	return graphql_params_only(&gp);
}

/* One JSON request object; GQL_NONE when it is not GraphQL-shaped. */
static void
graphql_classify_json_object(json_t *obj, const struct gql_params *url, struct gql_result *res,
                             int *only)
{
	json_t *q, *on;
	int dup = 0, persisted;

	q = graphql_json_member(obj, "query", &dup);
	on = graphql_json_member(obj, "operationName", &dup);
	persisted = graphql_json_persisted(obj, &dup);
	*only = graphql_json_only(obj);
	if (dup)
		graphql_result_set(res, GQL_UNKNOWN, "member names differ only in case");
	else if (q == NULL && persisted)
		graphql_result_set(res, GQL_UNKNOWN, "persisted query without document");
	else if (q == NULL)
		graphql_result_set(res, GQL_NONE, "JSON without query");
	else if (!json_is_string(q))
		graphql_result_set(res, GQL_UNKNOWN, "query is not a string");
	else if (on != NULL && !json_is_null(on) && !json_is_string(on))
		graphql_result_set(res, GQL_UNKNOWN, "operationName is not a string");
	else
		graphql_classify_doc_names(json_string_value(q), json_string_length(q),
		                           json_is_string(on) ? json_string_value(on) : NULL, url,
		                           res);
}

/* A batch is a query only if every entry is; res tells the first that is not. */
static void
graphql_classify_json_batch(json_t *arr, const struct gql_params *url, struct gql_result *res,
                            int *only)
{
	struct gql_result r, first;
	size_t i, n = json_array_size(arr);
	int anygql = 0, bad = 0, entry_only;

	*only = 0;
	if (n == 0) {
		graphql_result_set(res, GQL_UNKNOWN, "empty batch");
		return;
	}
	for (i = 0; i < n; i++) {
		if (!json_is_object(json_array_get(arr, i))) {
			graphql_result_set(res, GQL_UNKNOWN, "batch entry is not an object");
			return;
		}
	}
	*only = 1;
	for (i = 0; i < n; i++) {
		graphql_classify_json_object(json_array_get(arr, i), url, &r, &entry_only);
		*only &= entry_only;
		anygql |= r.op != GQL_NONE;
		if (r.op == GQL_NONE)
			graphql_result_set(&r, GQL_UNKNOWN, "batch entry without query");
		if (i == 0 || (!bad && r.op != GQL_QUERY)) {
			first = r;
			bad = r.op != GQL_QUERY;
		}
	}
	if (!anygql)
		graphql_result_set(res, GQL_NONE, "JSON array without query");
	else
		*res = first;
}

/*
 * A body that jansson rejects may still be accepted by a server's laxer
 * parser (NaN, invalid UTF-8, \u0000, duplicate keys, trailing data), so one
 * that could spell a query member is not waved through.
 */
static int
graphql_json_suspect(const char *body, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (body[i] == '\\' || (len - i >= 5 && strncasecmp(body + i, "query", 5) == 0))
			return 1;
	}
	return 0;
}

/*
 * declared: the content type says JSON; otherwise the body was sniffed.
 * *impure: NULL when the JSON is a GraphQL request and nothing else.
 */
static void
graphql_classify_json(const char *body, size_t len, int declared, const struct gql_params *url,
                      struct gql_result *res, const char **impure)
{
	json_error_t jerr;
	json_t *root;
	int only = 0;

	*impure = "the body is not valid JSON";
	if ((root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		if (declared && graphql_json_suspect(body, len))
			graphql_result_set(res, GQL_UNKNOWN, "unparsable JSON mentioning query");
		else
			graphql_result_set(res, GQL_NONE, "not JSON");
		return;
	}
	if (json_is_object(root))
		graphql_classify_json_object(root, url, res, &only);
	else if (json_is_array(root))
		graphql_classify_json_batch(root, url, res, &only);
	else
		graphql_result_set(res, GQL_NONE, "JSON without query");
	*impure = only ? NULL : gql_impure_json;
	json_decref(root);
}

enum gql_media {
	MEDIA_OTHER,
	MEDIA_JSON,
	MEDIA_GRAPHQL,
	MEDIA_FORM,
	MEDIA_MULTIPART,
};

/* The media type without parameters, compared case-insensitively. */
static enum gql_media
graphql_media(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return MEDIA_OTHER;
	ct += strspn(ct, " \t");
	for (n = strcspn(ct, ";"); n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'); n--)
		;
	if (graphql_key_is(ct, n, "application/json") ||
	    (n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0 && memchr(ct, '/', n) != NULL))
		return MEDIA_JSON;
	if (graphql_key_is(ct, n, "application/graphql"))
		return MEDIA_GRAPHQL;
	if (graphql_key_is(ct, n, "application/x-www-form-urlencoded"))
		return MEDIA_FORM;
	if (graphql_key_is(ct, n, "multipart/form-data"))
		return MEDIA_MULTIPART;
	return MEDIA_OTHER;
}

/*
 * The body's GraphQL into res; *impure is NULL when the body is a GraphQL
 * request and nothing else, else why not. A body sniffed as JSON counts
 * only without a content type: one that names another type is not a
 * GraphQL-over-HTTP request, whatever a lenient server makes of it.
 */
static void
graphql_classify_body(const char *ct, const char *body, size_t len, int truncated,
                      const struct gql_params *url, struct gql_result *res, const char **impure)
{
	enum gql_media m = graphql_media(ct);
	size_t i;
	int only = 0;

	graphql_result_set(res, GQL_NONE, "no GraphQL in body");
	*impure = "the body is not a GraphQL request";
	if (truncated && (m == MEDIA_JSON || m == MEDIA_GRAPHQL || m == MEDIA_FORM)) {
		graphql_result_set(res, GQL_UNKNOWN, "body too large to classify");
		*impure = "body too large to classify";
		return;
	}
	switch (m) {
	case MEDIA_JSON:
		graphql_classify_json(body, len, 1, url, res, impure);
		only = *impure == NULL;
		break;
	case MEDIA_GRAPHQL:
		/* The document's operationName can only come from the URL. */
		if (url != NULL && url->opname_bad)
			graphql_result_set(res, GQL_UNKNOWN, "conflicting operationName");
		else
			graphql_classify_document(body, len, url != NULL ? url->opname : NULL, res);
		only = 1;
		break;
	case MEDIA_FORM:
		graphql_classify_form(body, len, url, res, &only);
		if (!only)
			*impure = gql_impure_form;
		break;
	case MEDIA_MULTIPART:
		/* The GraphQL multipart request spec carries its JSON in "operations". */
		for (i = 0; i + 10 <= len; i++) {
			if (strncasecmp(body + i, "operations", 10) == 0) {
				graphql_result_set(res, GQL_UNKNOWN, "multipart GraphQL request");
				*impure = "a multipart body";
				break;
			}
		}
		break;
	default:
		/* Servers that ignore the content type still read JSON. */
		for (i = 0; i < len && strchr(" \t\r\n", body[i]) != NULL && body[i] != '\0'; i++)
			;
		if (i < len && (body[i] == '{' || body[i] == '[')) {
			graphql_classify_json(body, len, 0, url, res, impure);
			only = *impure == NULL;
			if (only && ct != NULL && *ct != '\0') {
				only = 0;
				*impure = "a JSON body under another content type";
			}
		}
		break;
	}
	if (only && !truncated && res->op != GQL_NONE)
		*impure = NULL;
}

/*
 * The method does not matter to the operation: servers read URL
 * parameters on POST and bodies on GET, so both are always classified and
 * the worst wins. It matters to whether the request is GraphQL over HTTP
 * and nothing else (res->pure): a body that is a GraphQL request only, or
 * a GET without a body whose URL parameters are a GraphQL request only. A
 * document in the URL never vouches for a body: "POST /delete?query={a}"
 * with an empty or other body is not a GraphQL request.
 */
enum gql_op
graphql_classify_request(const char *method, const char *content_type, const char *body,
                         size_t body_len, int body_truncated, const char *query_string,
                         struct gql_result *res)
{
	struct gql_params url;
	struct gql_result b;
	const char *impure = "the document is only in the URL, the body is empty";
	int url_only = 0;

	memset(&url, 0, sizeof url);
	graphql_result_set(res, GQL_NONE, "not GraphQL");
	if (query_string != NULL) {
		graphql_form_params(query_string, strlen(query_string), &url);
		graphql_classify_form(query_string, strlen(query_string), NULL, res, &url_only);
	}
	graphql_result_set(&b, GQL_NONE, "not GraphQL");
	if (body != NULL || body_truncated)
		graphql_classify_body(content_type, body != NULL ? body : "",
		                      body != NULL ? body_len : 0, body_truncated, &url, &b,
		                      &impure);
	free(url.opname);
	graphql_merge(res, &b);
	if ((body == NULL || body_len == 0) && !body_truncated)
		impure = method != NULL && strcmp(method, "GET") == 0
		             ? (url_only ? NULL : gql_impure_url)
		             : "the document is only in the URL, the body is empty";
	res->pure = res->op != GQL_NONE && impure == NULL;
	res->impure = res->op != GQL_NONE ? impure : NULL;
	return res->op;
}
