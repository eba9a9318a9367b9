/*
 * The configuration schema: one table of every key the config file knows,
 * its section, type and the handler that stores it (egressd's keys here,
 * the wrapper's sections in schema_wrapper.c, both walked by the code
 * below). Unknown keys, at any depth, wrong types, bad enums and bad list
 * entries are all reported from here, at the line and column of the
 * offending node, and checking goes on after each.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

static void schema_store_size(struct schema_state *, const struct schema_key *,
                              const struct cfg_node *, long long);
static void schema_store_mode(struct schema_state *, const struct schema_key *,
                              const struct cfg_node *, long long);
static void schema_store_violation(struct schema_state *, const struct schema_key *,
                                   const struct cfg_node *, long long);
static void schema_store_hosts(struct schema_state *, const struct schema_key *,
                               const struct cfg_node *, long long);
static void schema_store_paths(struct schema_state *, const struct schema_key *,
                               const struct cfg_node *, long long);
static void schema_store_methods(struct schema_state *, const struct schema_key *,
                                 const struct cfg_node *, long long);

static const char *const schema_versions[] = {"1", NULL};
static const char *const schema_modes[] = {"practical", "strict", "off", NULL};
static const char *const schema_violations[] = {"block", "flag", NULL};
static const char *const schema_on_error[] = {"block", "continue", NULL};

/* The value and its cfg_loc: a scalar field and field_loc, or a list with its own loc. */
#define F(field)                                                                                   \
	.off = offsetof(struct config, field), .loc_off = offsetof(struct config, field##_loc)
#define L(field)                                                                                   \
	.off = offsetof(struct config, field), .loc_off = offsetof(struct config, field.loc)

static const struct schema_key schema_keys[] = {
    {.key = "version", .type = SCHEMA_ENUM, .store = schema_store_none, .names = schema_versions},
    {.key = "network", .type = SCHEMA_SECTION},
    {.key = "audit", .type = SCHEMA_SECTION},
    {.key = "ca", .type = SCHEMA_SECTION},

    {.section = "network",
     .key = "mode",
     .type = SCHEMA_ENUM,
     .store = schema_store_mode,
     F(mode),
     .names = schema_modes},
    {.section = "network",
     .key = "inheritGlobal",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(inherit_global)},
    {.section = "network",
     .key = "blocklist",
     .type = SCHEMA_LIST,
     .store = schema_store_hosts,
     L(blocklist)},
    {.section = "network",
     .key = "allowlist",
     .type = SCHEMA_LIST,
     .store = schema_store_hosts,
     L(allowlist),
     .flags = DOMAIN_F_ALLOWLIST},
    {.section = "network",
     .key = "passthrough",
     .type = SCHEMA_LIST,
     .store = schema_store_hosts,
     L(passthrough),
     .flags = DOMAIN_F_NO_ADDR},
    {.section = "network",
     .key = "blocklistFiles",
     .type = SCHEMA_LIST,
     .store = schema_store_paths,
     L(blocklist_files)},
    {.section = "network",
     .key = "allowMethods",
     .type = SCHEMA_LIST,
     .store = schema_store_methods,
     L(allow_methods)},
    {.section = "network",
     .key = "allow_methods",
     .type = SCHEMA_LIST,
     .store = schema_store_methods,
     L(allow_methods)},
    {.section = "network",
     .key = "allowGraphqlQueries",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(allow_graphql_queries)},
    {.section = "network",
     .key = "allow_graphql_queries",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(allow_graphql_queries)},
    {.section = "network",
     .key = "onViolation",
     .type = SCHEMA_ENUM,
     .store = schema_store_violation,
     F(on_violation),
     .names = schema_violations},
    {.section = "network",
     .key = "failClosed",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(fail_closed)},
    {.section = "network",
     .key = "blockDohProviders",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(block_doh_providers)},
    {.section = "network",
     .key = "proxyPort",
     .type = SCHEMA_INT,
     .store = schema_store_int,
     F(proxy_port),
     .min = 1,
     .max = 65535},
    {.section = "network",
     .key = "dnsPort",
     .type = SCHEMA_INT,
     .store = schema_store_int,
     F(dns_port),
     .min = 1,
     .max = 65535},
    {.section = "network",
     .key = "maxGraphqlBody",
     .type = SCHEMA_INT,
     .store = schema_store_size,
     F(max_graphql_body),
     .min = 1,
     .max = CONFIG_MAX_GRAPHQL_BODY},

    {.section = "audit",
     .key = "path",
     .type = SCHEMA_STRING,
     .store = schema_store_string,
     F(audit_path)},
    {.section = "audit",
     .key = "onError",
     .type = SCHEMA_ENUM,
     .store = schema_store_int,
     F(audit_on_error),
     .names = schema_on_error},
    {.section = "audit",
     .key = "maxBytes",
     .type = SCHEMA_INT,
     .store = schema_store_size,
     F(audit_max_bytes),
     .min = CONFIG_MIN_AUDIT_BYTES,
     .max = CONFIG_MAX_AUDIT_BYTES},
    {.section = "audit",
     .key = "keep",
     .type = SCHEMA_INT,
     .store = schema_store_int,
     F(audit_keep),
     .min = 0,
     .max = CONFIG_MAX_AUDIT_KEEP},

    {.section = "ca",
     .key = "nameConstraints",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     F(ca_name_constraints)},
    {.section = "ca",
     .key = "lifetimeHours",
     .type = SCHEMA_INT,
     .store = schema_store_int,
     F(ca_lifetime_hours),
     .min = 1,
     .max = CONFIG_MAX_CA_HOURS},
};

#undef F
#undef L

static struct cfg_loc *
schema_loc(struct config *cfg, const struct schema_key *k)
{
	return (struct cfg_loc *)((char *)cfg + k->loc_off);
}

/* A message about a node, with its untrusted text escaped. */
const char *
schema_text(struct buf *b, const struct cfg_node *n)
{
	buf_reset(b);
	cfg_escape(b, n->value, n->len);
	return buf_cstr(b);
}

static int
schema_is_null(const struct cfg_node *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	size_t i;

	if (n->type != CFG_NODE_SCALAR || (n->flags & CFG_NODE_F_QUOTED))
		return 0;
	for (i = 0; i < EG_NELEM(nulls); i++)
		if (strcmp(n->value, nulls[i]) == 0)
			return 1;
	return 0;
}

static const char *
schema_what(const struct cfg_node *n)
{
	if (n->type == CFG_NODE_MAPPING)
		return "a mapping";
	if (n->type == CFG_NODE_SEQUENCE)
		return "a list";
	if (schema_is_null(n))
		return "nothing (null)";
	return (n->flags & CFG_NODE_F_QUOTED) ? "a quoted string" : "a scalar";
}

/*
 * Strings end up in messages, audit records and config_dump's YAML, so
 * only text YAML itself can carry unescaped is accepted: no NUL, no C0 or
 * C1 control characters, no byte-order mark, no U+FFFE/U+FFFF, and no
 * U+2028/U+2029, which YAML reads as line breaks. libyaml has already
 * refused malformed UTF-8.
 */
static const char *
schema_text_check(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	if (len == 0)
		return "must not be empty";
	for (i = 0; i < len; i++) {
		if (p[i] == 0)
			return "contains a NUL byte";
		if (p[i] < 0x20 || p[i] == 0x7f)
			return "contains a control character";
		if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
			return "contains a control character";
		if (p[i] == 0xef && i + 2 < len &&
		    ((p[i + 1] == 0xbf && p[i + 2] >= 0xbe) ||
		     (p[i + 1] == 0xbb && p[i + 2] == 0xbf)))
			return "contains a non-printable character";
		if (p[i] == 0xe2 && i + 2 < len && p[i + 1] == 0x80 &&
		    (p[i + 2] == 0xa8 || p[i + 2] == 0xa9))
			return "contains a line separator";
	}
	return NULL;
}

/* Check one string scalar (a value or a list entry); 0 when it may be used. */
int
schema_string(struct schema_state *st, const char *what, int entry, const struct cfg_node *n)
{
	const char *err, *sep = entry ? " entry" : "";
	struct buf b;

	if (n->flags & CFG_NODE_F_BAD)
		return -1;
	if (n->type != CFG_NODE_SCALAR || schema_is_null(n)) {
		cfg_error(st->ctx, &n->loc, "%s%s: expected a string, got %s", what, sep,
		          schema_what(n));
		return -1;
	}
	if ((err = schema_text_check(n->value, n->len)) != NULL) {
		buf_init(&b);
		cfg_error(st->ctx, &n->loc, "%s%s \"%s\": %s", what, sep, schema_text(&b, n), err);
		buf_free(&b);
		return -1;
	}
	return 0;
}

/* Parse a decimal integer: digits, an optional '-', no leading zeros. */
static const char *
schema_integer(const struct cfg_node *n, long long *out)
{
	const char *s = n->value;
	int neg = 0;
	size_t i;

	if (n->flags & CFG_NODE_F_QUOTED)
		return "is quoted: write the number without quotes";
	if (*s == '-') {
		neg = 1;
		s++;
	}
	if (s[0] < '0' || s[0] > '9' || strspn(s, "0123456789") != strlen(s) ||
	    strlen(s) != n->len - (size_t)neg)
		return "is not a decimal integer";
	if (s[0] == '0' && s[1] != '\0')
		return "has leading zeros";
	*out = 0;
	for (i = 0; s[i] != '\0'; i++) {
		if (*out > 100000000000000LL) {
			*out = 100000000000000LL; /* far outside every range */
			break;
		}
		*out = *out * 10 + (s[i] - '0');
	}
	if (neg)
		*out = -*out;
	return NULL;
}

/* Check a scalar value against its key's type; fills *num for the handler. */
static int
schema_scalar(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
              long long *num)
{
	static const char *const loose[] = {"yes", "no", "on", "off", "y", "n"};
	const char *err;
	struct buf b;
	size_t i;

	buf_init(&b);
	switch (k->type) {
	case SCHEMA_BOOL:
		if (v->type != CFG_NODE_SCALAR || (v->flags & CFG_NODE_F_QUOTED) ||
		    schema_is_null(v)) {
			cfg_error(st->ctx, &v->loc, "%s: expected true or false, got %s", k->key,
			          schema_what(v));
			goto bad;
		}
		if (strcmp(v->value, "true") == 0 || strcmp(v->value, "false") == 0) {
			*num = v->value[0] == 't';
			break;
		}
		for (i = 0; i < EG_NELEM(loose); i++)
			if (strcasecmp(v->value, loose[i]) == 0)
				break;
		cfg_error(st->ctx, &v->loc, "%s: expected true or false, got \"%s\"%s", k->key,
		          schema_text(&b, v),
		          i < EG_NELEM(loose) ? " (yes/no/on/off are not booleans here)" : "");
		goto bad;
	case SCHEMA_INT:
		if (v->type != CFG_NODE_SCALAR || schema_is_null(v)) {
			cfg_error(st->ctx, &v->loc, "%s: expected an integer, got %s", k->key,
			          schema_what(v));
			goto bad;
		}
		if ((err = schema_integer(v, num)) != NULL) {
			cfg_error(st->ctx, &v->loc, "%s: \"%s\" %s", k->key, schema_text(&b, v),
			          err);
			goto bad;
		}
		if (*num < k->min || *num > k->max) {
			cfg_error(st->ctx, &v->loc, "%s: %s is out of range (%lld..%lld)", k->key,
			          schema_text(&b, v), k->min, k->max);
			goto bad;
		}
		break;
	case SCHEMA_ENUM:
		if (v->type == CFG_NODE_SCALAR && !schema_is_null(v))
			for (i = 0; k->names[i] != NULL; i++)
				if (strlen(k->names[i]) == v->len &&
				    strcmp(k->names[i], v->value) == 0) {
					*num = (long long)i;
					buf_free(&b);
					return 0;
				}
		buf_printf(&b, "%s: expected ", k->key);
		for (i = 0; k->names[i] != NULL; i++)
			buf_printf(&b, "%s%s",
			           i == 0                    ? ""
			           : k->names[i + 1] == NULL ? " or "
			                                     : ", ",
			           k->names[i]);
		if (v->type == CFG_NODE_SCALAR && !schema_is_null(v)) {
			buf_adds(&b, ", got \"");
			cfg_escape(&b, v->value, v->len);
			buf_adds(&b, "\"");
		} else
			buf_printf(&b, ", got %s", schema_what(v));
		cfg_error(st->ctx, &v->loc, "%s", buf_cstr(&b));
		goto bad;
	case SCHEMA_STRING:
		if (schema_string(st, k->key, 0, v) == -1)
			goto bad;
		break;
	default:
		break;
	}
	buf_free(&b);
	return 0;
bad:
	buf_free(&b);
	return -1;
}

static const struct schema_key *
schema_find_in(const struct schema_key *keys, size_t n, const char *section,
               const struct cfg_node *key)
{
	const struct schema_key *k;
	size_t i;

	for (i = 0; i < n; i++) {
		k = &keys[i];
		if ((k->section == NULL) != (section == NULL))
			continue;
		if (section != NULL && strcmp(k->section, section) != 0)
			continue;
		if (strlen(k->key) == key->len && memcmp(k->key, key->value, key->len) == 0)
			return k;
	}
	return NULL;
}

static const struct schema_key *
schema_find(const char *section, const struct cfg_node *key)
{
	const struct schema_key *k;

	if ((k = schema_find_in(schema_keys, EG_NELEM(schema_keys), section, key)) != NULL)
		return k;
	return schema_find_in(schema_wrapper_keys, schema_wrapper_nkeys, section, key);
}

/* Another spelling of the same setting, for the "set twice" message. */
static const char *
schema_other_name(const struct schema_key *k)
{
	const struct schema_key *tables[] = {schema_keys, schema_wrapper_keys};
	size_t sizes[] = {EG_NELEM(schema_keys), schema_wrapper_nkeys};
	size_t i, t;

	for (t = 0; t < 2; t++)
		for (i = 0; i < sizes[t]; i++)
			if (&tables[t][i] != k && tables[t][i].store == k->store &&
			    tables[t][i].loc_off == k->loc_off &&
			    tables[t][i].type != SCHEMA_SECTION)
				return tables[t][i].full != NULL ? tables[t][i].full
				                                 : tables[t][i].key;
	return k->key;
}

/* A key understood that has no effect here: said, not silently dropped. */
static void
schema_note(struct config *cfg, const struct schema_key *k, const struct cfg_loc *loc)
{
	struct cfg_note *n;

	cfg->notes = xreallocarray(cfg->notes, cfg->nnotes + 1, sizeof *cfg->notes);
	n = &cfg->notes[cfg->nnotes++];
	n->key = k->full != NULL ? k->full : k->key;
	n->text = k->note;
	n->loc = *loc;
}

static void schema_walk(struct schema_state *, const struct cfg_node *, const char *);

/* Check and store one key: value pair of a mapping. */
static void
schema_pair(struct schema_state *st, const char *section, const struct cfg_node *kn,
            const struct cfg_node *v)
{
	const struct schema_key *k;
	struct cfg_loc *loc;
	long long num = 0;
	struct buf b;

	if (kn->flags & CFG_NODE_F_BAD)
		return;
	if (kn->type != CFG_NODE_SCALAR) {
		cfg_error(st->ctx, &kn->loc, "keys must be strings, not %s", schema_what(kn));
		return;
	}
	if ((k = schema_find(section, kn)) == NULL) {
		buf_init(&b);
		if (section != NULL)
			cfg_error(st->ctx, &kn->loc, "unknown key \"%s\" in %s",
			          schema_text(&b, kn), section);
		else
			cfg_error(st->ctx, &kn->loc, "unknown top-level key \"%s\"",
			          schema_text(&b, kn));
		buf_free(&b);
		return;
	}
	if (v->flags & CFG_NODE_F_BAD)
		return;
	switch (k->type) {
	case SCHEMA_SECTION:
		if (schema_is_null(v))
			return;
		if (v->type != CFG_NODE_MAPPING) {
			cfg_error(st->ctx, &v->loc, "%s: expected a mapping, got %s", k->key,
			          schema_what(v));
			return;
		}
		schema_walk(st, v, k->full != NULL ? k->full : k->key);
		return;
	case SCHEMA_LIST:
		if (v->type != CFG_NODE_SEQUENCE) {
			cfg_error(st->ctx, &v->loc, "%s: expected a list, got %s", k->key,
			          schema_what(v));
			return;
		}
		break;
	default:
		if (schema_scalar(st, k, v, &num) == -1)
			return;
		break;
	}
	if (k->store == schema_store_none)
		return;
	loc = schema_loc(st->cfg, k);
	if (k->untrusted == SCHEMA_UNTRUSTED_NOTE && loc->line == 0)
		schema_note(st->cfg, k, &kn->loc);
	if (loc->line > 0) {
		cfg_error(st->ctx, &kn->loc,
		          "%s: set twice (%s and %s are one setting; first "
		          "at %u:%u)",
		          k->full != NULL ? k->full : k->key, k->full != NULL ? k->full : k->key,
		          schema_other_name(k), loc->line, loc->col);
		return;
	}
	k->store(st, k, v, num);
	*loc = kn->loc;
}

static void
schema_walk(struct schema_state *st, const struct cfg_node *map, const char *section)
{
	size_t i;

	for (i = 0; i + 1 < map->n; i += 2)
		schema_pair(st, section, map->kids[i], map->kids[i + 1]);
}

void
schema_store_none(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
                  long long num)
{
}

void
schema_store_int(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
                 long long num)
{
	*(int *)((char *)st->cfg + k->off) = (int)num;
}

static void
schema_store_size(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
                  long long num)
{
	*(size_t *)((char *)st->cfg + k->off) = (size_t)num;
}

static void
schema_store_mode(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
                  long long num)
{
	static const enum policy_mode modes[] = {MODE_PRACTICAL, MODE_STRICT, MODE_OFF};

	st->cfg->mode = modes[num];
}

static void
schema_store_violation(struct schema_state *st, const struct schema_key *k,
                       const struct cfg_node *v, long long num)
{
	st->cfg->on_violation = num == 0 ? VIOLATION_BLOCK : VIOLATION_FLAG;
}

void
schema_store_string(struct schema_state *st, const struct schema_key *k, const struct cfg_node *v,
                    long long num)
{
	char **p = (char **)((char *)st->cfg + k->off);

	free(*p);
	*p = xstrdup(v->value);
}

void
schema_list_add(struct cfg_list *l, char *value, const struct cfg_node *n)
{
	l->items = xreallocarray(l->items, l->n + 1, sizeof *l->items);
	l->items[l->n].value = value;
	l->items[l->n].loc = n->loc;
	l->n++;
}

struct cfg_list *
schema_list(struct schema_state *st, const struct schema_key *k)
{
	struct cfg_list *l = (struct cfg_list *)((char *)st->cfg + k->off);

	l->set = 1;
	return l;
}

/* Host lists: each entry goes through the matcher's own pattern check. */
static void
schema_store_hosts(struct schema_state *st, const struct schema_key *k, const struct cfg_node *seq,
                   long long num)
{
	struct cfg_list *l = schema_list(st, k);
	struct domain_set *set;
	const struct cfg_node *n;
	const char *err;
	struct buf b;
	size_t i;

	set = domain_set_new();
	buf_init(&b);
	for (i = 0; i < seq->n; i++) {
		n = seq->kids[i];
		if (schema_string(st, k->key, 1, n) == -1)
			continue;
		err = domain_set_add(set, n->value, n->len, k->flags, n->loc.file, n->loc.line);
		if (err != NULL) {
			cfg_error(st->ctx, &n->loc, "%s entry \"%s\": %s", k->key,
			          schema_text(&b, n), err);
			continue;
		}
		schema_list_add(l, xstrdup(n->value), n);
	}
	buf_free(&b);
	domain_set_free(set);
}

/* A path as written, made absolute from the directory of the file naming it. */
char *
schema_path(const struct schema_state *st, const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	return xasprintf("%s%s%s", st->dir, st->dir[strlen(st->dir) - 1] == '/' ? "" : "/", path);
}

/* List files: relative paths are taken from the directory of the file naming them. */
static void
schema_store_paths(struct schema_state *st, const struct schema_key *k, const struct cfg_node *seq,
                   long long num)
{
	struct cfg_list *l = schema_list(st, k);
	const struct cfg_node *n;
	size_t i;

	for (i = 0; i < seq->n; i++) {
		n = seq->kids[i];
		if (schema_string(st, k->key, 1, n) == -1)
			continue;
		schema_list_add(l, schema_path(st, n->value), n);
	}
}

/*
 * RFC 9110 method = token; methods are case-sensitive and kept as written.
 * Clients send them in upper case, so an entry with a lower-case letter
 * ("get") would match nothing and silently block the method it names: it
 * is an error that says what to write instead.
 */
static void
schema_store_methods(struct schema_state *st, const struct schema_key *k,
                     const struct cfg_node *seq, long long num)
{
	struct cfg_list *l = schema_list(st, k);
	const struct cfg_node *n;
	struct buf b;
	char *upper;
	size_t i, j;

	buf_init(&b);
	for (i = 0; i < seq->n; i++) {
		n = seq->kids[i];
		if (schema_string(st, k->key, 1, n) == -1)
			continue;
		if (!text_http_token(n->value, n->len)) {
			cfg_error(st->ctx, &n->loc, "%s entry \"%s\": not an HTTP method token",
			          k->key, schema_text(&b, n));
			continue;
		}
		for (j = 0; j < n->len && !(n->value[j] >= 'a' && n->value[j] <= 'z'); j++)
			;
		if (j < n->len) {
			upper = xstrdup(schema_text(&b, n));
			for (j = 0; upper[j] != '\0'; j++)
				if (upper[j] >= 'a' && upper[j] <= 'z')
					upper[j] = (char)(upper[j] - 'a' + 'A');
			cfg_error(st->ctx, &n->loc,
			          "%s entry \"%s\": methods are case-sensitive and sent in upper "
			          "case; write \"%s\"",
			          k->key, schema_text(&b, n), upper);
			free(upper);
			continue;
		}
		schema_list_add(l, xstrdup(n->value), n);
	}
	buf_free(&b);
}

/*
 * Check a file's tree and store what it sets into cfg, a configuration of
 * this one file only (locations with line 0 are the settings it leaves
 * alone). An empty file sets nothing.
 */
void
schema_apply(struct cfg_ctx *ctx, const struct cfg_node *root, struct config *cfg, const char *dir)
{
	struct schema_state st;

	if (root == NULL || schema_is_null(root) || (root->flags & CFG_NODE_F_BAD))
		return;
	st.ctx = ctx;
	st.cfg = cfg;
	st.dir = dir;
	if (root->type != CFG_NODE_MAPPING) {
		cfg_error(ctx, &root->loc,
		          "the top level must be a mapping of sections "
		          "(network:, audit:, ...), not %s",
		          schema_what(root));
		return;
	}
	schema_walk(&st, root, NULL);
}
