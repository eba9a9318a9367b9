/*
 * GraphQL documents: a real lexer and parser (GraphQL spec, October 2021)
 * and the spec's operation selection decide whether a document is provably
 * a read-only query. graphql_http.c finds the documents in HTTP requests.
 * This is a security check: whatever cannot be proved a query is
 * GQL_UNKNOWN, never GQL_QUERY.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "graphql_int.h"

/* Both bound work and stack: every recursion passes a depth increment. */
#define GQL_MAX_DEPTH  128
#define GQL_MAX_TOKENS 100000

enum gql_tok {
	TOK_EOF,
	TOK_ERROR, /* sticky: no rule accepts it, ps->err says why */
	TOK_PUNCT, /* ! $ & ( ) : = @ [ ] { | }, and "..." as '.' */
	TOK_NAME,
	TOK_NUMBER,
	TOK_STRING, /* plain or block string */
};

struct gql_opdef {
	enum gql_op op;
	const char *name; /* NULL: anonymous */
	size_t namelen;
};

struct gql_parser {
	const unsigned char *p;
	const unsigned char *end;
	enum gql_tok tok;
	int punct;
	const char *tstart;
	size_t tlen;
	size_t ntokens;
	int depth;
	const char *err;
	struct gql_opdef *ops;
	size_t nops;
	size_t opscap;
};

static int graphql_parse_value(struct gql_parser *, int);
static int graphql_parse_selection_set(struct gql_parser *);

void
graphql_result_set(struct gql_result *res, enum gql_op op, const char *reason)
{
	res->op = op;
	res->name[0] = '\0';
	res->reason = reason;
	res->pure = 0;
	res->impure = NULL;
}

/* The "worst" order: anything that is not a query beats a query. */
static int
graphql_rank(enum gql_op op)
{
	static const int rank[] = {[GQL_NONE] = 0,
	                           [GQL_QUERY] = 1,
	                           [GQL_SUBSCRIPTION] = 2,
	                           [GQL_MUTATION] = 3,
	                           [GQL_UNKNOWN] = 4};

	return (unsigned)op < EG_NELEM(rank) ? rank[op] : 4;
}

void
graphql_merge(struct gql_result *acc, const struct gql_result *r)
{
	if (graphql_rank(r->op) > graphql_rank(acc->op))
		*acc = *r;
}

static int
graphql_is_name_start(int c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

int
graphql_is_name_char(int c)
{
	return graphql_is_name_start(c) || (c >= '0' && c <= '9');
}

/*
 * Length of one source character inside a string or comment, or 0 when it
 * is a control character or not valid UTF-8: the spec's source text is
 * Unicode, and a server may read broken bytes differently than we do.
 */
static size_t
graphql_source_char(const unsigned char *p, const unsigned char *end)
{
	if (*p < 0x20 && *p != '\t')
		return 0;
	return text_utf8_len(p, (size_t)(end - p));
}

/* Skips ignored tokens; with strict unset, comments are not checked. */
static const unsigned char *
graphql_skip_ignored(const unsigned char *p, const unsigned char *end, int strict, const char **err)
{
	size_t n;

	while (p < end) {
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
			p++;
		else if (end - p >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
			p += 3;
		else if (*p == '#') {
			for (p++; p < end && *p != '\n' && *p != '\r'; p += n) {
				n = strict ? graphql_source_char(p, end) : 1;
				if (n == 0) {
					*err = "parse error: invalid character in comment";
					return p;
				}
			}
		} else
			break;
	}
	return p;
}

static const char *
graphql_lex_escape(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp + 1;
	uint32_t cp = 0;
	int i, v;

	if (p >= end)
		return "parse error: unterminated string";
	if (strchr("\"\\/bfnrt", *p) != NULL && *p != '\0') {
		*pp = p + 1;
		return NULL;
	}
	if (*p++ != 'u')
		return "parse error: invalid escape in string";
	if (p < end && *p == '{') {
		for (i = 0, p++; p < end && *p != '}'; p++, i++) {
			if ((v = text_hex_value(*p)) == -1 || i >= 8)
				return "parse error: invalid escape in string";
			cp = (cp << 4) | (uint32_t)v;
		}
		if (p >= end || i == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return "parse error: invalid escape in string";
		*pp = p + 1;
		return NULL;
	}
	for (i = 0; i < 4; i++, p++) {
		if (p >= end || text_hex_value(*p) == -1)
			return "parse error: invalid escape in string";
	}
	*pp = p;
	return NULL;
}

static const char *
graphql_lex_string(struct gql_parser *ps)
{
	const unsigned char *p = ps->p + 1, *end = ps->end;
	const char *err;
	size_t n;

	for (;;) {
		if (p >= end || *p == '\n' || *p == '\r')
			return "parse error: unterminated string";
		if (*p == '"')
			break;
		if (*p == '\\') {
			if ((err = graphql_lex_escape(&p, end)) != NULL)
				return err;
			continue;
		}
		if ((n = graphql_source_char(p, end)) == 0)
			return "parse error: invalid character in string";
		p += n;
	}
	ps->p = p + 1;
	return NULL;
}

static const char *
graphql_lex_block_string(struct gql_parser *ps)
{
	const unsigned char *p = ps->p + 3, *end = ps->end;
	size_t n;

	for (;;) {
		if (p >= end)
			return "parse error: unterminated block string";
		if (end - p >= 3 && memcmp(p, "\"\"\"", 3) == 0)
			break;
		if (end - p >= 4 && memcmp(p, "\\\"\"\"", 4) == 0) {
			p += 4;
			continue;
		}
		if (*p == '\n' || *p == '\r')
			n = 1;
		else if ((n = graphql_source_char(p, end)) == 0)
			return "parse error: invalid character in block string";
		p += n;
	}
	ps->p = p + 3;
	return NULL;
}

static const char *
graphql_lex_number(struct gql_parser *ps)
{
	const unsigned char *p = ps->p, *end = ps->end, *d;

	if (*p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (p < end && *p >= '1' && *p <= '9') {
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	} else
		return "parse error: invalid number";
	if (p < end && *p == '.') {
		for (d = ++p; p < end && *p >= '0' && *p <= '9'; p++)
			;
		if (p == d)
			return "parse error: invalid number";
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		for (d = p; p < end && *p >= '0' && *p <= '9'; p++)
			;
		if (p == d)
			return "parse error: invalid number";
	}
	if (p < end && (*p == '.' || graphql_is_name_char(*p)))
		return "parse error: invalid number";
	ps->p = p;
	return NULL;
}

/* Reads the next token; a lexer error becomes a sticky TOK_ERROR. */
static void
graphql_next(struct gql_parser *ps)
{
	const char *err = NULL;
	int c;

	if (ps->tok == TOK_ERROR)
		return;
	ps->p = graphql_skip_ignored(ps->p, ps->end, 1, &err);
	ps->tstart = (const char *)ps->p;
	if (err == NULL && ps->p == ps->end) {
		ps->tok = TOK_EOF;
		ps->tlen = 0;
		return;
	}
	if (err == NULL && ++ps->ntokens > GQL_MAX_TOKENS)
		err = "too many tokens";
	if (err != NULL)
		goto fail;
	c = *ps->p;
	if (strchr("!$&()[]{}:=@|", c) != NULL && c != '\0') {
		ps->tok = TOK_PUNCT;
		ps->punct = c;
		ps->p++;
	} else if (c == '.') {
		if (ps->end - ps->p < 3 || memcmp(ps->p, "...", 3) != 0) {
			err = "parse error: invalid character";
			goto fail;
		}
		ps->tok = TOK_PUNCT;
		ps->punct = '.';
		ps->p += 3;
	} else if (graphql_is_name_start(c)) {
		while (ps->p < ps->end && graphql_is_name_char(*ps->p))
			ps->p++;
		ps->tok = TOK_NAME;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		err = graphql_lex_number(ps);
		ps->tok = TOK_NUMBER;
	} else if (c == '"') {
		if (ps->end - ps->p >= 3 && memcmp(ps->p, "\"\"\"", 3) == 0)
			err = graphql_lex_block_string(ps);
		else
			err = graphql_lex_string(ps);
		ps->tok = TOK_STRING;
	} else
		err = "parse error: invalid character";
	if (err != NULL)
		goto fail;
	ps->tlen = (size_t)((const char *)ps->p - ps->tstart);
	return;
fail:
	ps->tok = TOK_ERROR;
	ps->err = err;
}

/* Keeps the first error: a lexer error explains more than what follows. */
static int
graphql_fail(struct gql_parser *ps, const char *why)
{
	if (ps->err == NULL) {
		if (ps->tok == TOK_EOF)
			why = "parse error: unexpected end of document";
		ps->err = why;
	}
	ps->tok = TOK_ERROR;
	return -1;
}

static int
graphql_is_punct(struct gql_parser *ps, int c)
{
	return ps->tok == TOK_PUNCT && ps->punct == c;
}

static int
graphql_is_word(struct gql_parser *ps, const char *w)
{
	return ps->tok == TOK_NAME && ps->tlen == strlen(w) && memcmp(ps->tstart, w, ps->tlen) == 0;
}

static int
graphql_expect_punct(struct gql_parser *ps, int c)
{
	if (!graphql_is_punct(ps, c))
		return graphql_fail(ps, "parse error: unexpected token");
	graphql_next(ps);
	return 0;
}

static int
graphql_expect_name(struct gql_parser *ps)
{
	if (ps->tok != TOK_NAME)
		return graphql_fail(ps, "parse error: name expected");
	graphql_next(ps);
	return 0;
}

static int
graphql_enter(struct gql_parser *ps)
{
	if (++ps->depth > GQL_MAX_DEPTH)
		return graphql_fail(ps, "too deep");
	return 0;
}

/* ( Name : Value ... ) with at least one argument. */
static int
graphql_parse_arguments(struct gql_parser *ps, int isconst)
{
	if (graphql_expect_punct(ps, '(') == -1)
		return -1;
	do {
		if (graphql_expect_name(ps) == -1 || graphql_expect_punct(ps, ':') == -1 ||
		    graphql_parse_value(ps, isconst) == -1)
			return -1;
	} while (!graphql_is_punct(ps, ')'));
	graphql_next(ps);
	return 0;
}

static int
graphql_parse_directives(struct gql_parser *ps, int isconst)
{
	while (graphql_is_punct(ps, '@')) {
		graphql_next(ps);
		if (graphql_expect_name(ps) == -1)
			return -1;
		if (graphql_is_punct(ps, '(') && graphql_parse_arguments(ps, isconst) == -1)
			return -1;
	}
	return 0;
}

static int
graphql_parse_value(struct gql_parser *ps, int isconst)
{
	int close;

	if (graphql_is_punct(ps, '$')) {
		if (isconst)
			return graphql_fail(ps, "parse error: variable in a constant value");
		graphql_next(ps);
		return graphql_expect_name(ps);
	}
	if (ps->tok == TOK_NAME || ps->tok == TOK_NUMBER || ps->tok == TOK_STRING) {
		graphql_next(ps);
		return 0;
	}
	if (!graphql_is_punct(ps, '[') && !graphql_is_punct(ps, '{'))
		return graphql_fail(ps, "parse error: value expected");
	close = ps->punct == '[' ? ']' : '}';
	if (graphql_enter(ps) == -1)
		return -1;
	graphql_next(ps);
	while (!graphql_is_punct(ps, close)) {
		if (close == '}' &&
		    (graphql_expect_name(ps) == -1 || graphql_expect_punct(ps, ':') == -1))
			return -1;
		if (graphql_parse_value(ps, isconst) == -1)
			return -1;
	}
	graphql_next(ps);
	ps->depth--;
	return 0;
}

/* NamedType, [Type], either followed by an optional '!'. */
static int
graphql_parse_type(struct gql_parser *ps)
{
	if (graphql_is_punct(ps, '[')) {
		if (graphql_enter(ps) == -1)
			return -1;
		graphql_next(ps);
		if (graphql_parse_type(ps) == -1 || graphql_expect_punct(ps, ']') == -1)
			return -1;
		ps->depth--;
	} else if (graphql_expect_name(ps) == -1)
		return -1;
	if (graphql_is_punct(ps, '!'))
		graphql_next(ps);
	return 0;
}

/* ( $name: Type = Default @dir ... ) */
static int
graphql_parse_variable_defs(struct gql_parser *ps)
{
	graphql_next(ps);
	do {
		if (graphql_expect_punct(ps, '$') == -1 || graphql_expect_name(ps) == -1 ||
		    graphql_expect_punct(ps, ':') == -1 || graphql_parse_type(ps) == -1)
			return -1;
		if (graphql_is_punct(ps, '=')) {
			graphql_next(ps);
			if (graphql_parse_value(ps, 1) == -1)
				return -1;
		}
		if (graphql_parse_directives(ps, 1) == -1)
			return -1;
	} while (!graphql_is_punct(ps, ')'));
	graphql_next(ps);
	return 0;
}

/* Field, fragment spread or inline fragment. */
static int
graphql_parse_selection(struct gql_parser *ps)
{
	if (graphql_is_punct(ps, '.')) {
		graphql_next(ps);
		if (ps->tok == TOK_NAME && !graphql_is_word(ps, "on")) {
			graphql_next(ps);
			return graphql_parse_directives(ps, 0);
		}
		if (graphql_is_word(ps, "on")) {
			graphql_next(ps);
			if (graphql_expect_name(ps) == -1)
				return -1;
		}
		if (graphql_parse_directives(ps, 0) == -1)
			return -1;
		return graphql_parse_selection_set(ps);
	}
	if (graphql_expect_name(ps) == -1)
		return -1;
	if (graphql_is_punct(ps, ':')) {
		graphql_next(ps);
		if (graphql_expect_name(ps) == -1)
			return -1;
	}
	if (graphql_is_punct(ps, '(') && graphql_parse_arguments(ps, 0) == -1)
		return -1;
	if (graphql_parse_directives(ps, 0) == -1)
		return -1;
	if (graphql_is_punct(ps, '{'))
		return graphql_parse_selection_set(ps);
	return 0;
}

/* { Selection ... } with at least one selection. */
static int
graphql_parse_selection_set(struct gql_parser *ps)
{
	if (!graphql_is_punct(ps, '{'))
		return graphql_fail(ps, "parse error: selection set expected");
	if (graphql_enter(ps) == -1)
		return -1;
	graphql_next(ps);
	do {
		if (graphql_parse_selection(ps) == -1)
			return -1;
	} while (!graphql_is_punct(ps, '}'));
	graphql_next(ps);
	ps->depth--;
	return 0;
}

static void
graphql_add_op(struct gql_parser *ps, enum gql_op op, const char *name, size_t namelen)
{
	if (ps->nops == ps->opscap) {
		ps->opscap = ps->opscap == 0 ? 4 : ps->opscap * 2;
		ps->ops = xreallocarray(ps->ops, ps->opscap, sizeof *ps->ops);
	}
	ps->ops[ps->nops].op = op;
	ps->ops[ps->nops].name = name;
	ps->ops[ps->nops].namelen = namelen;
	ps->nops++;
}

/* query|mutation|subscription [Name] [VariableDefinitions] [Directives] SelectionSet */
static int
graphql_parse_operation(struct gql_parser *ps)
{
	enum gql_op op;
	const char *name = NULL;
	size_t namelen = 0;

	if (graphql_is_word(ps, "query"))
		op = GQL_QUERY;
	else if (graphql_is_word(ps, "mutation"))
		op = GQL_MUTATION;
	else
		op = GQL_SUBSCRIPTION;
	graphql_next(ps);
	if (ps->tok == TOK_NAME) {
		name = ps->tstart;
		namelen = ps->tlen;
		graphql_next(ps);
	}
	if (graphql_is_punct(ps, '(') && graphql_parse_variable_defs(ps) == -1)
		return -1;
	if (graphql_parse_directives(ps, 0) == -1 || graphql_parse_selection_set(ps) == -1)
		return -1;
	graphql_add_op(ps, op, name, namelen);
	return 0;
}

/* fragment Name on Type [Directives] SelectionSet */
static int
graphql_parse_fragment(struct gql_parser *ps)
{
	graphql_next(ps);
	if (graphql_is_word(ps, "on"))
		return graphql_fail(ps, "parse error: fragment named on");
	if (graphql_expect_name(ps) == -1)
		return -1;
	if (!graphql_is_word(ps, "on"))
		return graphql_fail(ps, "parse error: type condition expected");
	graphql_next(ps);
	if (graphql_expect_name(ps) == -1 || graphql_parse_directives(ps, 0) == -1)
		return -1;
	return graphql_parse_selection_set(ps);
}

static int
graphql_parse_document(struct gql_parser *ps)
{
	static const char *typesys[] = {"schema", "scalar", "type",      "interface", "union",
	                                "enum",   "input",  "directive", "extend"};
	size_t i;

	graphql_next(ps);
	while (ps->tok != TOK_EOF) {
		if (graphql_is_punct(ps, '{')) {
			if (graphql_parse_selection_set(ps) == -1)
				return -1;
			graphql_add_op(ps, GQL_QUERY, NULL, 0);
			continue;
		}
		if (graphql_is_word(ps, "query") || graphql_is_word(ps, "mutation") ||
		    graphql_is_word(ps, "subscription")) {
			if (graphql_parse_operation(ps) == -1)
				return -1;
			continue;
		}
		if (graphql_is_word(ps, "fragment")) {
			if (graphql_parse_fragment(ps) == -1)
				return -1;
			continue;
		}
		if (ps->tok == TOK_STRING)
			return graphql_fail(ps, "type system definition");
		for (i = 0; i < EG_NELEM(typesys); i++) {
			if (graphql_is_word(ps, typesys[i]))
				return graphql_fail(ps, "type system definition");
		}
		return graphql_fail(ps, "parse error: definition expected");
	}
	return ps->err == NULL ? 0 : -1;
}

static int
graphql_opdef_cmp(const void *a, const void *b)
{
	const struct gql_opdef *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c;

	if ((c = memcmp(x->name, y->name, n)) != 0)
		return c;
	return (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

/*
 * The spec's GetOperation over a parsed document. A lone operation is the
 * one that runs whatever operationName says: a server either runs it or
 * rejects the request, so its type is the answer either way.
 */
static void
graphql_select(struct gql_parser *ps, const char *opname, struct gql_result *res)
{
	const struct gql_opdef *sel = NULL;
	size_t i, n;

	if (ps->nops == 0) {
		graphql_result_set(res, GQL_UNKNOWN, "no operation in document");
		return;
	}
	if (ps->nops > 1) {
		for (i = 0; i < ps->nops; i++) {
			if (ps->ops[i].name == NULL) {
				graphql_result_set(res, GQL_UNKNOWN,
				                   "anonymous operation not alone");
				return;
			}
		}
		qsort(ps->ops, ps->nops, sizeof *ps->ops, graphql_opdef_cmp);
		for (i = 1; i < ps->nops; i++) {
			if (graphql_opdef_cmp(&ps->ops[i - 1], &ps->ops[i]) == 0) {
				graphql_result_set(res, GQL_UNKNOWN, "duplicate operation name");
				return;
			}
		}
		if (opname == NULL) {
			graphql_result_set(res, GQL_UNKNOWN, "ambiguous operation");
			return;
		}
		for (i = 0; i < ps->nops && sel == NULL; i++) {
			if (ps->ops[i].namelen == strlen(opname) &&
			    memcmp(ps->ops[i].name, opname, ps->ops[i].namelen) == 0)
				sel = &ps->ops[i];
		}
		if (sel == NULL) {
			graphql_result_set(res, GQL_UNKNOWN, "unknown operation name");
			return;
		}
	} else
		sel = &ps->ops[0];
	graphql_result_set(res, sel->op, graphql_op_name(sel->op));
	if (sel->name != NULL) {
		n = sel->namelen < sizeof res->name - 1 ? sel->namelen : sizeof res->name - 1;
		memcpy(res->name, sel->name, n);
		res->name[n] = '\0';
	}
}

enum gql_op
graphql_classify_document(const char *doc, size_t len, const char *opname, struct gql_result *res)
{
	struct gql_parser ps;

	memset(&ps, 0, sizeof ps);
	ps.p = (const unsigned char *)doc;
	ps.end = doc != NULL ? ps.p + len : ps.p;
	ps.tok = TOK_EOF;
	if (graphql_parse_document(&ps) == -1)
		graphql_result_set(res, GQL_UNKNOWN, ps.err);
	else
		graphql_select(&ps, opname, res);
	free(ps.ops);
	return res->op;
}

/*
 * Whether a URL or form parameter named "query" holds GraphQL at all: its
 * first token must start an executable definition. Only then is the request
 * GraphQL, so "?query=shoes" on a search API stays an ordinary GET. This is
 * sound: a document starting any other way cannot execute on any server.
 * A leading string counts too, as newer drafts allow descriptions on
 * operations. Comments are skipped unchecked here; the full parse checks.
 */
int
graphql_looks_like(const char *s, size_t len)
{
	static const char *words[] = {"query", "mutation", "subscription", "fragment"};
	const unsigned char *p = (const unsigned char *)s, *end = p + len, *w;
	const char *err = NULL;
	size_t i;

	p = graphql_skip_ignored(p, end, 0, &err);
	if (p < end && (*p == '{' || *p == '"'))
		return 1;
	for (w = p; p < end && graphql_is_name_char(*p); p++)
		;
	for (i = 0; i < EG_NELEM(words); i++) {
		if ((size_t)(p - w) == strlen(words[i]) && memcmp(w, words[i], p - w) == 0)
			return 1;
	}
	return 0;
}

const char *
graphql_op_name(enum gql_op op)
{
	static const char *names[] = {[GQL_NONE] = "none",
	                              [GQL_QUERY] = "query",
	                              [GQL_MUTATION] = "mutation",
	                              [GQL_SUBSCRIPTION] = "subscription",
	                              [GQL_UNKNOWN] = "unknown"};

	return (unsigned)op < EG_NELEM(names) ? names[op] : "unknown";
}
