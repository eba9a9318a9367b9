/*
 * Configuration loading. A YAML file is read through libyaml's event API
 * into a small tree whose every node knows its file, line and column, then
 * checked against the key table in schema.c. Config files are untrusted
 * input: size, nesting and node count are capped, anchors and aliases are
 * refused (no billion laughs), and every problem is collected as
 * FILE:LINE:COL before the load fails once at the end. Several files merge
 * in order on top of the built-in defaults (policy/default.yaml).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config_int.h"

#define CONFIG_TAG_PREFIX "tag:yaml.org,2002:"

struct cfg_msg {
	unsigned line;
	unsigned col;
	size_t seq;
	char *text;
};

struct cfg_ctx {
	struct cfg_msg *msgs; /* the current file's, sorted at the end */
	size_t nmsgs;
	size_t dropped;
	size_t total; /* every error of this load */
	struct buf *out;
};

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
config_escape(struct buf *b, const char *s, size_t len)
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
config_error(struct cfg_ctx *ctx, const struct cfg_loc *loc, const char *fmt, ...)
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
config_msg_cmp(const void *a, const void *b)
{
	const struct cfg_msg *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Hand one file's messages to the caller, in file order. */
static void
config_flush(struct cfg_ctx *ctx, const char *file)
{
	size_t i;

	if (ctx->nmsgs > 0)
		qsort(ctx->msgs, ctx->nmsgs, sizeof *ctx->msgs, config_msg_cmp);
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

static void
config_node_free(struct cfg_node *n)
{
	size_t i;

	if (n == NULL)
		return;
	for (i = 0; i < n->n; i++)
		config_node_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}

static struct cfg_loc
config_mark(const struct cfg_reader *r, const yaml_mark_t *m)
{
	struct cfg_loc loc;

	loc.file = r->file;
	loc.line = m->line + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)m->line + 1;
	loc.col = m->column + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)m->column + 1;
	return loc;
}

/* Standard tags only: a custom tag would ask for a type this schema lacks. */
static int
config_tag_ok(const char *tag)
{
	static const char *const ok[] = {"str", "int", "bool", "null", "float", "seq", "map"};
	size_t i;

	if (tag == NULL || strcmp(tag, "!") == 0)
		return 1;
	if (strncmp(tag, CONFIG_TAG_PREFIX, strlen(CONFIG_TAG_PREFIX)) != 0)
		return 0;
	for (i = 0; i < EG_NELEM(ok); i++)
		if (strcmp(tag + strlen(CONFIG_TAG_PREFIX), ok[i]) == 0)
			return 1;
	return 0;
}

/* Create a node for an event and hang it under the open collection. */
static struct cfg_node *
config_node_add(struct cfg_reader *r, const yaml_event_t *ev, enum cfg_node_type type,
                const char *anchor, const char *tag)
{
	struct cfg_node *n, *parent;
	struct buf b;

	n = xcalloc(1, sizeof *n);
	n->type = type;
	n->loc = config_mark(r, &ev->start_mark);
	if (anchor != NULL) {
		config_error(r->ctx, &n->loc, "anchors and aliases are not supported");
		n->flags |= CFG_NODE_F_BAD;
	}
	if (!config_tag_ok(tag)) {
		buf_init(&b);
		config_escape(&b, tag, strlen(tag));
		config_error(r->ctx, &n->loc, "tag \"%s\" is not supported", buf_cstr(&b));
		buf_free(&b);
		n->flags |= CFG_NODE_F_BAD;
	}
	if (++r->nodes > CONFIG_MAX_NODES) {
		config_error(r->ctx, &n->loc,
		             "more than %d nodes: put long host lists in "
		             "blocklistFiles",
		             CONFIG_MAX_NODES);
		r->broken = 1;
	}
	if (r->depth == 0) {
		config_node_free(r->root);
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
config_push(struct cfg_reader *r, struct cfg_node *n)
{
	if (r->depth == CONFIG_MAX_DEPTH) {
		config_error(r->ctx, &n->loc, "nesting deeper than %d levels", CONFIG_MAX_DEPTH);
		r->broken = 1;
		return;
	}
	r->stack[r->depth++] = n;
}

static int
config_key_cmp(const void *a, const void *b)
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
config_check_dups(struct cfg_reader *r, struct cfg_node *map)
{
	struct cfg_node **keys, *first = NULL;
	size_t i, n = 0;
	struct buf b;

	keys = xreallocarray(NULL, map->n / 2 + 1, sizeof *keys);
	for (i = 0; i + 1 < map->n; i += 2)
		if (map->kids[i]->type == CFG_NODE_SCALAR &&
		    !(map->kids[i]->flags & CFG_NODE_F_BAD))
			keys[n++] = map->kids[i];
	qsort(keys, n, sizeof *keys, config_key_cmp);
	for (i = 0; i < n; i++) {
		if (i == 0 || keys[i]->len != first->len ||
		    memcmp(keys[i]->value, first->value, first->len) != 0) {
			first = keys[i];
			continue;
		}
		buf_init(&b);
		config_escape(&b, keys[i]->value, keys[i]->len);
		config_error(r->ctx, &keys[i]->loc, "duplicate key \"%s\" (first at %u:%u)",
		             buf_cstr(&b), first->loc.line, first->loc.col);
		buf_free(&b);
		keys[i]->flags |= CFG_NODE_F_BAD;
	}
	free(keys);
}

/* Handle one parser event; returns 0 at the end of the stream or on a fatal error. */
static int
config_event(struct cfg_reader *r, const yaml_event_t *ev)
{
	struct cfg_node *n;
	struct cfg_loc loc;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (++r->ndocs > 1) {
			loc = config_mark(r, &ev->start_mark);
			config_error(r->ctx, &loc, "more than one document in one file");
			return 0;
		}
		break;
	case YAML_ALIAS_EVENT:
		n = config_node_add(r, ev, CFG_NODE_SCALAR, NULL, NULL);
		config_error(r->ctx, &n->loc, "aliases are not supported");
		n->flags |= CFG_NODE_F_BAD;
		n->value = xstrdup("");
		break;
	case YAML_SCALAR_EVENT:
		n = config_node_add(r, ev, CFG_NODE_SCALAR, (char *)ev->data.scalar.anchor,
		                    (char *)ev->data.scalar.tag);
		n->value = xstrndup((char *)ev->data.scalar.value, ev->data.scalar.length);
		n->len = ev->data.scalar.length;
		if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
		    (ev->data.scalar.tag != NULL &&
		     strcmp((char *)ev->data.scalar.tag, CONFIG_TAG_PREFIX "str") == 0))
			n->flags |= CFG_NODE_F_QUOTED;
		break;
	case YAML_SEQUENCE_START_EVENT:
		n = config_node_add(r, ev, CFG_NODE_SEQUENCE,
		                    (char *)ev->data.sequence_start.anchor,
		                    (char *)ev->data.sequence_start.tag);
		config_push(r, n);
		break;
	case YAML_MAPPING_START_EVENT:
		n = config_node_add(r, ev, CFG_NODE_MAPPING, (char *)ev->data.mapping_start.anchor,
		                    (char *)ev->data.mapping_start.tag);
		config_push(r, n);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (r->depth == 0)
			return 0;
		n = r->stack[--r->depth];
		if (n->type == CFG_NODE_MAPPING)
			config_check_dups(r, n);
		break;
	default:
		break;
	}
	return !r->broken;
}

/* Build the node tree of one file; NULL when there is nothing to validate. */
static struct cfg_node *
config_read_tree(struct cfg_ctx *ctx, const char *file, const char *data, size_t len, int *ok)
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
			loc = config_mark(&r, &parser.problem_mark);
			if (parser.context != NULL)
				config_error(ctx, &loc, "syntax error: %s (%s at %zu:%zu)",
				             parser.problem ? parser.problem : "unknown",
				             parser.context, parser.context_mark.line + 1,
				             parser.context_mark.column + 1);
			else
				config_error(ctx, &loc, "syntax error: %s",
				             parser.problem ? parser.problem : "unknown");
			r.broken = 1;
			break;
		}
		more = config_event(&r, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (r.broken) {
		*ok = 0;
		config_node_free(r.root);
		return NULL;
	}
	return r.root;
}

/* The absolute directory of a config file, for its relative list paths. */
static char *
config_base_dir(const char *file)
{
	const char *slash;
	char cwd[4096], *dir;

	slash = file != NULL ? strrchr(file, '/') : NULL;
	if (slash == file && slash != NULL)
		return xstrdup("/");
	if (slash != NULL && file[0] == '/')
		return xstrndup(file, (size_t)(slash - file));
	if (getcwd(cwd, sizeof cwd) == NULL)
		return slash != NULL ? xstrndup(file, (size_t)(slash - file)) : xstrdup(".");
	if (slash == NULL)
		return xstrdup(cwd);
	dir = xasprintf("%s/%.*s", cwd, (int)(slash - file), file);
	return dir;
}

static void
config_list_clear(struct cfg_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->items[i].value);
	free(l->items);
	memset(l, 0, sizeof *l);
}

/* Merge a list set in a later file: append or replace, taking src's items. */
static void
config_merge_list(struct cfg_list *dst, struct cfg_list *src, int append)
{
	if (!src->set)
		return;
	if (!append)
		config_list_clear(dst);
	dst->items = xreallocarray(dst->items, dst->n + src->n, sizeof *dst->items);
	if (src->n > 0)
		memcpy(dst->items + dst->n, src->items, src->n * sizeof *src->items);
	dst->n += src->n;
	dst->set = 1;
	dst->loc = src->loc;
	free(src->items);
	memset(src, 0, sizeof *src);
}

#define CONFIG_MERGE(dst, src, field)                                                              \
	do {                                                                                       \
		if ((src)->field##_loc.line > 0) {                                                 \
			(dst)->field = (src)->field;                                               \
			(dst)->field##_loc = (src)->field##_loc;                                   \
		}                                                                                  \
	} while (0)

/* Lay one file's settings over the merged configuration; empties layer. */
static void
config_merge(struct config *cfg, struct config *layer)
{
	int append;

	CONFIG_MERGE(cfg, layer, inherit_global);
	append = cfg->inherit_global;
	CONFIG_MERGE(cfg, layer, mode);
	CONFIG_MERGE(cfg, layer, allow_graphql_queries);
	CONFIG_MERGE(cfg, layer, on_violation);
	CONFIG_MERGE(cfg, layer, fail_closed);
	CONFIG_MERGE(cfg, layer, block_doh_providers);
	CONFIG_MERGE(cfg, layer, proxy_port);
	CONFIG_MERGE(cfg, layer, dns_port);
	CONFIG_MERGE(cfg, layer, max_graphql_body);
	CONFIG_MERGE(cfg, layer, ca_name_constraints);
	CONFIG_MERGE(cfg, layer, ca_lifetime_hours);
	if (layer->audit_path_loc.line > 0) {
		free(cfg->audit_path);
		cfg->audit_path = layer->audit_path;
		cfg->audit_path_loc = layer->audit_path_loc;
		layer->audit_path = NULL;
	}
	config_merge_list(&cfg->blocklist, &layer->blocklist, append);
	config_merge_list(&cfg->allowlist, &layer->allowlist, append);
	config_merge_list(&cfg->passthrough, &layer->passthrough, append);
	config_merge_list(&cfg->blocklist_files, &layer->blocklist_files, append);
	config_merge_list(&cfg->allow_methods, &layer->allow_methods, 0);
}

static void
config_layer_free(struct config *layer)
{
	config_list_clear(&layer->blocklist);
	config_list_clear(&layer->allowlist);
	config_list_clear(&layer->passthrough);
	config_list_clear(&layer->blocklist_files);
	config_list_clear(&layer->allow_methods);
	free(layer->audit_path);
}

/*
 * Merging an untrusted file (a project file the payload can write between
 * runs). Only what tightens the configuration merged so far is taken:
 * blocklist entries (appended whatever inheritGlobal says), a stricter
 * mode, failClosed, blockDohProviders and ca.nameConstraints turned on,
 * onViolation: block, allowGraphqlQueries: false, a smaller
 * maxGraphqlBody, and allowMethods narrowed to entries the trusted list
 * already has. Everything else that would change the result is left out
 * and recorded with its place, for the caller to report and audit.
 */
static void
config_ignore(struct config *cfg, const char *key, const char *entry, const struct cfg_loc *loc,
              const char *why)
{
	struct cfg_ignored *ig;

	cfg->ignored = xreallocarray(cfg->ignored, cfg->nignored + 1, sizeof *cfg->ignored);
	ig = &cfg->ignored[cfg->nignored++];
	ig->key = key;
	ig->entry = entry != NULL ? xstrdup(entry) : NULL;
	ig->why = why;
	ig->loc = *loc;
}

static int
config_mode_rank(enum policy_mode m)
{
	return m == MODE_OFF ? 2 : m == MODE_STRICT ? 1 : 0;
}

/*
 * A boolean an untrusted file may only set to tight: taken when it is,
 * ignored when it would turn the merged value the other way.
 */
#define CONFIG_TIGHTEN_BOOL(cfg, layer, field, tight, key, why)                                    \
	do {                                                                                       \
		if ((layer)->field##_loc.line == 0 || (layer)->field == (cfg)->field)              \
			break;                                                                     \
		if ((layer)->field == (tight)) {                                                   \
			(cfg)->field = (layer)->field;                                             \
			(cfg)->field##_loc = (layer)->field##_loc;                                 \
		} else                                                                             \
			config_ignore(cfg, key, NULL, &(layer)->field##_loc, why);                 \
	} while (0)

/* A setting an untrusted file may not change at all. */
#define CONFIG_KEEP(cfg, layer, field, key, why)                                                   \
	do {                                                                                       \
		if ((layer)->field##_loc.line > 0 && (layer)->field != (cfg)->field)               \
			config_ignore(cfg, key, NULL, &(layer)->field##_loc, why);                 \
	} while (0)

/* A host list an untrusted file may not add to. */
static void
config_untrusted_list(struct config *cfg, const struct cfg_list *l, const char *key,
                      const char *why)
{
	if (l->set && l->n > 0)
		config_ignore(cfg, key, NULL, &l->loc, why);
}

/* allowMethods: only entries the merged list already has; the list may shrink. */
static void
config_untrusted_methods(struct config *cfg, struct config *layer)
{
	struct cfg_list *have = &cfg->allow_methods, *want = &layer->allow_methods;
	struct cfg_list kept;
	size_t i, j;

	if (!want->set)
		return;
	memset(&kept, 0, sizeof kept);
	kept.items = xreallocarray(NULL, want->n + 1, sizeof *kept.items);
	for (i = 0; i < want->n; i++) {
		for (j = 0; j < have->n; j++)
			if (strcmp(want->items[i].value, have->items[j].value) == 0)
				break;
		if (j == have->n) {
			config_ignore(
			    cfg, "network.allowMethods", want->items[i].value, &want->items[i].loc,
			    "would allow a method the trusted allowMethods does not list");
			free(want->items[i].value);
			continue;
		}
		kept.items[kept.n++] = want->items[i];
	}
	kept.set = 1;
	kept.loc = want->loc;
	free(want->items);
	memset(want, 0, sizeof *want);
	*want = kept;
	config_merge_list(have, want, 0);
}

static int
config_ignored_cmp(const void *a, const void *b)
{
	const struct cfg_ignored *x = a, *y = b;

	if (x->loc.line != y->loc.line)
		return x->loc.line < y->loc.line ? -1 : 1;
	return x->loc.col < y->loc.col ? -1 : x->loc.col > y->loc.col;
}

static void
config_merge_untrusted(struct config *cfg, struct config *layer)
{
	size_t first = cfg->nignored;

	if (layer->inherit_global_loc.line > 0 && !layer->inherit_global)
		config_ignore(cfg, "network.inheritGlobal", NULL, &layer->inherit_global_loc,
		              "would drop the trusted files' lists");
	if (layer->mode_loc.line > 0 &&
	    config_mode_rank(layer->mode) > config_mode_rank(cfg->mode)) {
		cfg->mode = layer->mode;
		cfg->mode_loc = layer->mode_loc;
	} else if (layer->mode_loc.line > 0 && layer->mode != cfg->mode)
		config_ignore(cfg, "network.mode", NULL, &layer->mode_loc,
		              "would loosen the mode of the trusted configuration");
	CONFIG_TIGHTEN_BOOL(cfg, layer, allow_graphql_queries, 0, "network.allowGraphqlQueries",
	                    "would allow GraphQL queries the trusted configuration refuses");
	CONFIG_TIGHTEN_BOOL(cfg, layer, on_violation, VIOLATION_BLOCK, "network.onViolation",
	                    "would let violations through");
	CONFIG_TIGHTEN_BOOL(cfg, layer, fail_closed, 1, "network.failClosed",
	                    "would let the payload run when the sandbox cannot be set up");
	CONFIG_TIGHTEN_BOOL(cfg, layer, block_doh_providers, 1, "network.blockDohProviders",
	                    "would unblock the DNS-over-HTTPS services");
	CONFIG_TIGHTEN_BOOL(cfg, layer, ca_name_constraints, 1, "ca.nameConstraints",
	                    "would drop the run CA's name constraints");
	if (layer->max_graphql_body_loc.line > 0 &&
	    layer->max_graphql_body < cfg->max_graphql_body) {
		cfg->max_graphql_body = layer->max_graphql_body;
		cfg->max_graphql_body_loc = layer->max_graphql_body_loc;
	} else
		CONFIG_KEEP(cfg, layer, max_graphql_body, "network.maxGraphqlBody",
		            "would raise the trusted limit");
	CONFIG_KEEP(cfg, layer, proxy_port, "network.proxyPort",
	            "would move a listener the trusted configuration placed");
	CONFIG_KEEP(cfg, layer, dns_port, "network.dnsPort",
	            "would move a listener the trusted configuration placed");
	CONFIG_KEEP(cfg, layer, ca_lifetime_hours, "ca.lifetimeHours",
	            "would change the run CA the trusted configuration set up");
	if (layer->audit_path_loc.line > 0)
		config_ignore(cfg, "audit.path", NULL, &layer->audit_path_loc,
		              "would choose the file egressd writes to");
	config_untrusted_list(cfg, &layer->allowlist, "network.allowlist", "would allow hosts");
	config_untrusted_list(cfg, &layer->passthrough, "network.passthrough",
	                      "would exempt hosts from interception");
	config_untrusted_list(cfg, &layer->blocklist_files, "network.blocklistFiles",
	                      "would make egressd read a file the payload chose");
	config_merge_list(&cfg->blocklist, &layer->blocklist, 1);
	config_untrusted_methods(cfg, layer);
	/* Reported in the file's order. */
	if (cfg->nignored > first)
		qsort(cfg->ignored + first, cfg->nignored - first, sizeof *cfg->ignored,
		      config_ignored_cmp);
}

/* "FILE:LINE:COL: KEY [entry "E"] is ignored: ..." for warnings and audit reasons. */
void
config_ignored_text(const struct cfg_ignored *ig, struct buf *out)
{
	buf_adds(out, ig->key);
	if (ig->entry != NULL) {
		buf_adds(out, " entry \"");
		config_escape(out, ig->entry, strlen(ig->entry));
		buf_adds(out, "\"");
	}
	buf_printf(out, " is ignored: a project file may only tighten the policy, and this %s",
	           ig->why);
}

/* Parse, check and merge one file's text; file NULL is the built-in policy. */
static void
config_add_text(struct cfg_ctx *ctx, struct config *cfg, const char *file, const char *data,
                size_t len, int untrusted)
{
	struct cfg_node *root;
	struct config layer;
	struct cfg_loc loc = {file, 0, 0};
	char *dir;
	int ok;

	if (len > CONFIG_MAX_FILE_SIZE) {
		config_error(ctx, &loc,
		             "larger than %d bytes: put long host lists in "
		             "blocklistFiles",
		             CONFIG_MAX_FILE_SIZE);
		return;
	}
	root = config_read_tree(ctx, file, data, len, &ok);
	if (!ok)
		return;
	memset(&layer, 0, sizeof layer);
	dir = config_base_dir(file);
	schema_apply(ctx, root, &layer, dir);
	free(dir);
	if (untrusted)
		config_merge_untrusted(cfg, &layer);
	else
		config_merge(cfg, &layer);
	config_layer_free(&layer);
	config_node_free(root);
}

/*
 * Read a whole file, up to one byte past the limit so that size is caught.
 * An untrusted file must be a regular file reached without following a
 * last symbolic link: a FIFO would block the reader (egressd's loop, on
 * reload) and a link could point egressd at a file the payload cannot read.
 */
static char *
config_read_file(const char *path, int untrusted, size_t *lenp, int *errnop)
{
	struct stat st;
	struct buf b;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | (untrusted ? O_NOFOLLOW | O_NONBLOCK : 0))) ==
	    -1) {
		*errnop = errno;
		return NULL;
	}
	if (untrusted && (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))) {
		*errnop = EINVAL;
		close(fd);
		return NULL;
	}
	buf_init(&b);
	for (;;) {
		buf_reserve(&b, 65536);
		n = read(fd, b.data + b.len, 65536);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*errnop = errno;
			close(fd);
			buf_free(&b);
			return NULL;
		}
		if (n == 0 || b.len + (size_t)n > CONFIG_MAX_FILE_SIZE) {
			b.len += (size_t)n;
			break;
		}
		b.len += (size_t)n;
	}
	close(fd);
	*lenp = b.len;
	return buf_release(&b);
}

/* A configuration holding only the compiled-in values no file has to state. */
static struct config *
config_new(const struct config_file *files, size_t nfiles)
{
	struct config *cfg;
	size_t i;

	cfg = xcalloc(1, sizeof *cfg);
	cfg->files = xreallocarray(NULL, nfiles, sizeof *cfg->files);
	cfg->untrusted = xcalloc(nfiles + 1, 1);
	for (i = 0; i < nfiles; i++) {
		cfg->files[i] = xstrdup(files[i].path);
		cfg->untrusted[i] = (files[i].flags & CONFIG_FILE_UNTRUSTED) != 0;
	}
	cfg->nfiles = nfiles;
	cfg->mode = MODE_PRACTICAL;
	cfg->inherit_global = 1;
	cfg->allow_graphql_queries = 1;
	cfg->on_violation = VIOLATION_BLOCK;
	cfg->fail_closed = 1;
	cfg->block_doh_providers = 1;
	cfg->proxy_port = 18080;
	cfg->dns_port = 15353;
	cfg->max_graphql_body = CONFIG_DEFAULT_GRAPHQL_BODY;
	cfg->ca_lifetime_hours = CONFIG_DEFAULT_CA_HOURS;
	return cfg;
}

/*
 * Below the files lie the built-in policy's settings, but not its host
 * lists: whoever passes --config states the lists. Untrusted files alone
 * state nothing: they tighten the whole built-in policy, lists included.
 */
static void
config_add_builtin(struct cfg_ctx *ctx, struct config *cfg)
{
	size_t i;

	config_add_text(ctx, cfg, NULL, config_default_yaml, strlen(config_default_yaml), 0);
	for (i = 0; i < cfg->nfiles && cfg->untrusted[i]; i++)
		;
	if (i == cfg->nfiles) {
		config_flush(ctx, NULL);
		return;
	}
	config_list_clear(&cfg->blocklist);
	config_list_clear(&cfg->allowlist);
	config_list_clear(&cfg->passthrough);
	config_list_clear(&cfg->blocklist_files);
	config_flush(ctx, NULL);
}

static struct config *
config_finish(struct cfg_ctx *ctx, struct config *cfg)
{
	if (ctx->total == 0)
		return cfg;
	config_free(cfg);
	return NULL;
}

/* Load files merged in order, each trusted or not (CONFIG_FILE_UNTRUSTED). */
struct config *
config_load_files(const struct config_file *files, size_t nfiles, struct buf *errs)
{
	struct cfg_ctx ctx;
	struct cfg_loc loc;
	struct config *cfg;
	size_t i, len;
	char *data;
	int err = 0;

	memset(&ctx, 0, sizeof ctx);
	ctx.out = errs;
	cfg = config_new(files, nfiles);
	if (nfiles == 0) {
		config_add_text(&ctx, cfg, NULL, config_default_yaml, strlen(config_default_yaml),
		                0);
		config_flush(&ctx, NULL);
		return config_finish(&ctx, cfg);
	}
	config_add_builtin(&ctx, cfg);
	for (i = 0; i < nfiles; i++) {
		data = config_read_file(cfg->files[i], cfg->untrusted[i], &len, &err);
		if (data == NULL) {
			loc.file = cfg->files[i];
			loc.line = loc.col = 0;
			if (cfg->untrusted[i] && (err == ELOOP || err == EINVAL))
				config_error(&ctx, &loc,
				             "cannot read: a project file must be a regular file, "
				             "not a symbolic link or a special file");
			else
				config_error(&ctx, &loc, "cannot read: %s", strerror(err));
		} else {
			config_add_text(&ctx, cfg, cfg->files[i], data, len, cfg->untrusted[i]);
			free(data);
		}
		config_flush(&ctx, cfg->files[i]);
	}
	return config_finish(&ctx, cfg);
}

/* Load trusted files merged in order. */
struct config *
config_load(char *const *files, size_t nfiles, struct buf *errs)
{
	struct config_file *f;
	struct config *cfg;
	size_t i;

	f = xreallocarray(NULL, nfiles + 1, sizeof *f);
	for (i = 0; i < nfiles; i++) {
		f[i].path = files[i];
		f[i].flags = 0;
	}
	cfg = config_load_files(f, nfiles, errs);
	free(f);
	return cfg;
}

/*
 * Load one configuration from memory, as if it were the only --config file
 * (name NULL: a complete built-in policy instead). Used by tests and fuzzing.
 */
struct config *
config_load_mem(const char *name, const char *data, size_t len, struct buf *errs)
{
	struct cfg_ctx ctx;
	struct config *cfg;
	const struct config_file files[1] = {{name, 0}};

	memset(&ctx, 0, sizeof ctx);
	ctx.out = errs;
	cfg = config_new(files, name != NULL ? 1 : 0);
	if (name != NULL)
		config_add_builtin(&ctx, cfg);
	config_add_text(&ctx, cfg, name != NULL ? cfg->files[0] : NULL, data, len, 0);
	config_flush(&ctx, name);
	return config_finish(&ctx, cfg);
}

void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	config_layer_free(cfg);
	for (i = 0; i < cfg->nfiles; i++)
		free(cfg->files[i]);
	free(cfg->files);
	free(cfg->untrusted);
	for (i = 0; i < cfg->nignored; i++)
		free(cfg->ignored[i].entry);
	free(cfg->ignored);
	free(cfg);
}

/* " # FILE:LINE" naming where a value was set; file names are escaped. */
static void
config_dump_src(struct buf *out, const struct cfg_loc *loc)
{
	if (loc->file == NULL) {
		buf_adds(out, "  # builtin\n");
		return;
	}
	buf_adds(out, "  # ");
	config_escape(out, loc->file, strlen(loc->file));
	buf_printf(out, ":%u\n", loc->line);
}

/* Stored strings hold no control characters (schema.c), so quoting is enough. */
static void
config_dump_str(struct buf *out, const char *s)
{
	buf_addc(out, '"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			buf_addc(out, '\\');
		buf_addc(out, *s);
	}
	buf_addc(out, '"');
}

static void
config_dump_list(struct buf *out, const char *key, const struct cfg_list *l)
{
	size_t i;

	buf_printf(out, "  %s:%s", key, l->n == 0 ? " []" : "");
	config_dump_src(out, &l->loc);
	for (i = 0; i < l->n; i++) {
		buf_adds(out, "    - ");
		config_dump_str(out, l->items[i].value);
		config_dump_src(out, &l->items[i].loc);
	}
}

#define CONFIG_DUMP_BOOL(out, key, cfg, field)                                                     \
	do {                                                                                       \
		buf_printf(out, "  %s: %s", key, (cfg)->field ? "true" : "false");                 \
		config_dump_src(out, &(cfg)->field##_loc);                                         \
	} while (0)

/*
 * The effective configuration as YAML that loads back to the same values,
 * each value followed by the place that set it.
 */
void
config_dump(const struct config *cfg, struct buf *out)
{
	size_t i;

	buf_adds(out, "# effective configuration, merged from: builtin");
	for (i = 0; i < cfg->nfiles; i++) {
		buf_adds(out, ", ");
		config_escape(out, cfg->files[i], strlen(cfg->files[i]));
		if (cfg->untrusted[i])
			buf_adds(out, " (project file: tightens only)");
	}
	buf_adds(out, "\nversion: 1\nnetwork:\n");
	buf_printf(out, "  mode: %s", config_mode_name(cfg->mode));
	config_dump_src(out, &cfg->mode_loc);
	CONFIG_DUMP_BOOL(out, "inheritGlobal", cfg, inherit_global);
	config_dump_list(out, "blocklist", &cfg->blocklist);
	config_dump_list(out, "allowlist", &cfg->allowlist);
	config_dump_list(out, "passthrough", &cfg->passthrough);
	config_dump_list(out, "blocklistFiles", &cfg->blocklist_files);
	config_dump_list(out, "allowMethods", &cfg->allow_methods);
	CONFIG_DUMP_BOOL(out, "allowGraphqlQueries", cfg, allow_graphql_queries);
	buf_printf(out, "  onViolation: %s",
	           cfg->on_violation == VIOLATION_FLAG ? "flag" : "block");
	config_dump_src(out, &cfg->on_violation_loc);
	CONFIG_DUMP_BOOL(out, "failClosed", cfg, fail_closed);
	CONFIG_DUMP_BOOL(out, "blockDohProviders", cfg, block_doh_providers);
	buf_printf(out, "  proxyPort: %d", cfg->proxy_port);
	config_dump_src(out, &cfg->proxy_port_loc);
	buf_printf(out, "  dnsPort: %d", cfg->dns_port);
	config_dump_src(out, &cfg->dns_port_loc);
	buf_printf(out, "  maxGraphqlBody: %zu", cfg->max_graphql_body);
	config_dump_src(out, &cfg->max_graphql_body_loc);
	buf_adds(out, "ca:\n");
	CONFIG_DUMP_BOOL(out, "nameConstraints", cfg, ca_name_constraints);
	buf_printf(out, "  lifetimeHours: %d", cfg->ca_lifetime_hours);
	config_dump_src(out, &cfg->ca_lifetime_hours_loc);
	if (cfg->audit_path == NULL) {
		buf_adds(out,
		         "audit: {}  # path not set: egressd --audit decides (default stdout)\n");
		return;
	}
	buf_adds(out, "audit:\n  path: ");
	config_dump_str(out, cfg->audit_path);
	config_dump_src(out, &cfg->audit_path_loc);
}

const char *
config_mode_name(enum policy_mode mode)
{
	switch (mode) {
	case MODE_PRACTICAL:
		return "practical";
	case MODE_STRICT:
		return "strict";
	case MODE_OFF:
		return "off";
	}
	return "unknown";
}
