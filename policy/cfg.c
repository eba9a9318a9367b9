/*
 * Reading one configuration file: libyaml's events become a small tree
 * whose every node knows its file, line and column, and every problem
 * found on the way (here, in schema.c and while loading) is collected as
 * FILE:LINE:COL, sorted into file order and handed out once the file is
 * done. Config files are untrusted input: size, nesting and node count
 * are capped, and anchors, aliases and custom tags are refused (no
 * billion laughs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_int.h"

#define CFG_TAG_PREFIX "tag:yaml.org,2002:"

struct cfg_msg {
	unsigned line;
	unsigned col;
	size_t seq;
	char *text;
};

/* Builds one file's tree from libyaml's events. */
struct cfg_reader {
	struct cfg_ctx *ctx;
	const char *file;
	struct cfg_node *root;
	struct cfg_node *stack[CONFIG_MAX_DEPTH];
	size_t depth;
	size_t nodes;
	int ndocs;
	int broken; /* the tree is partial: do not validate it */
};

/* Escape untrusted text for a message: quotes, backslashes, bytes outside ASCII. */
void
cfg_escape(struct buf *b, const char *s, size_t len)
{
	size_t i, max = len > CONFIG_MAX_SHOWN ? CONFIG_MAX_SHOWN : len;
	unsigned char c;

	for (i = 0; i < max; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			buf_printf(b, "\\x%02x", c);
		else
			buf_addc(b, (char)c);
	}
	if (max < len)
		buf_adds(b, "...");
	buf_add(b, "", 0); /* terminated even when nothing was added */
}

void
cfg_error(struct cfg_ctx *ctx, const struct cfg_loc *loc, const char *fmt, ...)
{
	struct cfg_msg *m;
	struct buf b;
	va_list ap;

	ctx->total++;
	if (ctx->nmsgs >= CONFIG_MAX_ERRORS) {
		ctx->dropped++;
		return;
	}
	buf_init(&b);
	buf_adds(&b, loc->file != NULL ? loc->file : "builtin");
	if (loc->line > 0)
		buf_printf(&b, ":%u:%u", loc->line, loc->col);
	buf_adds(&b, ": ");
	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	buf_addc(&b, '\n');

	ctx->msgs = xreallocarray(ctx->msgs, ctx->nmsgs + 1, sizeof *ctx->msgs);
	m = &ctx->msgs[ctx->nmsgs];
	m->line = loc->line;
	m->col = loc->col;
	m->seq = ctx->nmsgs++;
	m->text = buf_release(&b);
}

static int
cfg_msg_cmp(const void *a, const void *b)
{
	const struct cfg_msg *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hand one file's messages to the caller, in file order. */
void
cfg_flush(struct cfg_ctx *ctx, const char *file)
{
	size_t i;

	if (ctx->nmsgs > 0)
		qsort(ctx->msgs, ctx->nmsgs, sizeof *ctx->msgs, cfg_msg_cmp);
	for (i = 0; i < ctx->nmsgs; i++) {
		buf_adds(ctx->out, ctx->msgs[i].text);
		free(ctx->msgs[i].text);
	}
	if (ctx->dropped > 0)
		buf_printf(ctx->out, "%s: %zu more errors not shown\n",
		           file != NULL ? file : "builtin", ctx->dropped);
	free(ctx->msgs);
	ctx->msgs = NULL;
	ctx->nmsgs = 0;
	ctx->dropped = 0;
}

void
cfg_node_free(struct cfg_node *n)
{
	size_t i;

	if (n == NULL)
		return;
	for (i = 0; i < n->n; i++)
		cfg_node_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}

static struct cfg_loc
cfg_mark(const struct cfg_reader *r, const yaml_mark_t *m)
{
	struct cfg_loc loc;

	loc.file = r->file;
	loc.line = m->line + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)m->line + 1;
	loc.col = m->column + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)m->column + 1;
	return loc;
}

/* Standard tags only: a custom tag would ask for a type this schema lacks. */
static int
cfg_tag_ok(const char *tag)
{
	static const char *const ok[] = {"str", "int", "bool", "null", "float", "seq", "map"};
	size_t i;

	if (tag == NULL || strcmp(tag, "!") == 0)
		return 1;
	if (strncmp(tag, CFG_TAG_PREFIX, strlen(CFG_TAG_PREFIX)) != 0)
		return 0;
	for (i = 0; i < EG_NELEM(ok); i++)
		if (strcmp(tag + strlen(CFG_TAG_PREFIX), ok[i]) == 0)
			return 1;
	return 0;
}

/* Create a node for an event and hang it under the open collection. */
static struct cfg_node *
cfg_node_add(struct cfg_reader *r, const yaml_event_t *ev, enum cfg_node_type type,
             const char *anchor, const char *tag)
{
	struct cfg_node *n, *parent;
	struct buf b;

	n = xcalloc(1, sizeof *n);
	n->type = type;
	n->loc = cfg_mark(r, &ev->start_mark);
	if (anchor != NULL) {
		cfg_error(r->ctx, &n->loc, "anchors and aliases are not supported");
		n->flags |= CFG_NODE_F_BAD;
	}
	if (!cfg_tag_ok(tag)) {
		buf_init(&b);
		cfg_escape(&b, tag, strlen(tag));
		cfg_error(r->ctx, &n->loc, "tag \"%s\" is not supported", buf_cstr(&b));
		buf_free(&b);
		n->flags |= CFG_NODE_F_BAD;
	}
	if (++r->nodes > CONFIG_MAX_NODES) {
		cfg_error(r->ctx, &n->loc,
		          "more than %d nodes: put long host lists in "
		          "blocklistFiles",
		          CONFIG_MAX_NODES);
		r->broken = 1;
	}
	if (r->depth == 0) {
		cfg_node_free(r->root);
		r->root = n;
		return n;
	}
	parent = r->stack[r->depth - 1];
	/* Grow at powers of two: the capacity is implied by the count. */
	if ((parent->n & (parent->n - 1)) == 0)
		parent->kids = xreallocarray(parent->kids, parent->n ? parent->n * 2 : 1,
		                             sizeof *parent->kids);
	parent->kids[parent->n++] = n;
	return n;
}

static void
cfg_push(struct cfg_reader *r, struct cfg_node *n)
{
	if (r->depth == CONFIG_MAX_DEPTH) {
		cfg_error(r->ctx, &n->loc, "nesting deeper than %d levels", CONFIG_MAX_DEPTH);
		r->broken = 1;
		return;
	}
	r->stack[r->depth++] = n;
}

static int
cfg_key_cmp(const void *a, const void *b)
{
	const struct cfg_node *x = *(struct cfg_node *const *)a;
	const struct cfg_node *y = *(struct cfg_node *const *)b;
	int c;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if ((c = memcmp(x->value, y->value, x->len)) != 0)
		return c;
	if (x->loc.line != y->loc.line)
		return x->loc.line < y->loc.line ? -1 : 1;
	return x->loc.col < y->loc.col ? -1 : x->loc.col > y->loc.col;
}

/* Report repeated keys; sorting keeps huge mappings from going quadratic. */
static void
cfg_check_dups(struct cfg_reader *r, struct cfg_node *map)
{
	struct cfg_node **keys, *first = NULL;
	size_t i, n = 0;
	struct buf b;

	keys = xreallocarray(NULL, map->n / 2 + 1, sizeof *keys);
	for (i = 0; i + 1 < map->n; i += 2)
		if (map->kids[i]->type == CFG_NODE_SCALAR &&
		    !(map->kids[i]->flags & CFG_NODE_F_BAD))
			keys[n++] = map->kids[i];
	qsort(keys, n, sizeof *keys, cfg_key_cmp);
	for (i = 0; i < n; i++) {
		if (i == 0 || keys[i]->len != first->len ||
		    memcmp(keys[i]->value, first->value, first->len) != 0) {
			first = keys[i];
			continue;
		}
		buf_init(&b);
		cfg_escape(&b, keys[i]->value, keys[i]->len);
		cfg_error(r->ctx, &keys[i]->loc, "duplicate key \"%s\" (first at %u:%u)",
		          buf_cstr(&b), first->loc.line, first->loc.col);
		buf_free(&b);
		keys[i]->flags |= CFG_NODE_F_BAD;
	}
	free(keys);
}

/* Handle one parser event; returns 0 at the end of the stream or on a fatal error. */
static int
cfg_event(struct cfg_reader *r, const yaml_event_t *ev)
{
	struct cfg_node *n;
	struct cfg_loc loc;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (++r->ndocs > 1) {
			loc = cfg_mark(r, &ev->start_mark);
			cfg_error(r->ctx, &loc, "more than one document in one file");
			return 0;
		}
		break;
	case YAML_ALIAS_EVENT:
		n = cfg_node_add(r, ev, CFG_NODE_SCALAR, NULL, NULL);
		cfg_error(r->ctx, &n->loc, "aliases are not supported");
		n->flags |= CFG_NODE_F_BAD;
		n->value = xstrdup("");
		break;
	case YAML_SCALAR_EVENT:
		n = cfg_node_add(r, ev, CFG_NODE_SCALAR, (char *)ev->data.scalar.anchor,
		                 (char *)ev->data.scalar.tag);
		n->value = xstrndup((char *)ev->data.scalar.value, ev->data.scalar.length);
		n->len = ev->data.scalar.length;
		if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    (ev->data.scalar.tag != NULL &&
		     strcmp((char *)ev->data.scalar.tag, CFG_TAG_PREFIX "str") == 0))
			n->flags |= CFG_NODE_F_QUOTED;
		break;
	case YAML_SEQUENCE_START_EVENT:
		n = cfg_node_add(r, ev, CFG_NODE_SEQUENCE, (char *)ev->data.sequence_start.anchor,
		                 (char *)ev->data.sequence_start.tag);
		cfg_push(r, n);
		break;
	case YAML_MAPPING_START_EVENT:
		n = cfg_node_add(r, ev, CFG_NODE_MAPPING, (char *)ev->data.mapping_start.anchor,
		                 (char *)ev->data.mapping_start.tag);
		cfg_push(r, n);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (r->depth == 0)
			return 0;
		n = r->stack[--r->depth];
		if (n->type == CFG_NODE_MAPPING)
			cfg_check_dups(r, n);
		break;
	default:
		break;
	}
	return !r->broken;
}

/* Build the node tree of one file; NULL when there is nothing to validate. */
struct cfg_node *
cfg_tree_read(struct cfg_ctx *ctx, const char *file, const char *data, size_t len, int *ok)
{
	struct cfg_reader r;
	yaml_parser_t parser;
	yaml_event_t ev;
	struct cfg_loc loc;
	int more = 1;

	memset(&r, 0, sizeof r);
	r.ctx = ctx;
	r.file = file;
	*ok = 1;
	if (!yaml_parser_initialize(&parser))
		fatalx("yaml_parser_initialize failed");
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	while (more) {
		if (!yaml_parser_parse(&parser, &ev)) {
			loc = cfg_mark(&r, &parser.problem_mark);
			if (parser.context != NULL)
				cfg_error(ctx, &loc, "syntax error: %s (%s at %zu:%zu)",
				          parser.problem ? parser.problem : "unknown",
				          parser.context, parser.context_mark.line + 1,
				          parser.context_mark.column + 1);
			else
				cfg_error(ctx, &loc, "syntax error: %s",
				          parser.problem ? parser.problem : "unknown");
			r.broken = 1;
			break;
		}
		more = cfg_event(&r, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (r.broken) {
		*ok = 0;
		cfg_node_free(r.root);
		return NULL;
	}
	return r.root;
}
