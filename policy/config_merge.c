/*
 * Merging one file's settings (a layer) over the configuration merged so
 * far. A trusted file's scalars win when set and its lists append or
 * replace (inheritGlobal); an untrusted project file only tightens, and
 * what it would have loosened is recorded in config->ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

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
void
config_merge_layer(struct config *cfg, struct config *layer)
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
	CONFIG_MERGE(cfg, layer, audit_on_error);
	CONFIG_MERGE(cfg, layer, audit_max_bytes);
	CONFIG_MERGE(cfg, layer, audit_keep);
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
	schema_wrapper_merge(cfg, layer, 0);
}

/* Record what an untrusted file set and was not taken, with its place. */
static void
config_merge_ignore(struct config *cfg, const char *key, const char *entry,
                    const struct cfg_loc *loc, const char *why)
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
config_merge_mode_rank(enum policy_mode m)
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
			config_merge_ignore(cfg, key, NULL, &(layer)->field##_loc, why);           \
	} while (0)

/* A setting an untrusted file may not change at all. */
#define CONFIG_KEEP(cfg, layer, field, key, why)                                                   \
	do {                                                                                       \
		if ((layer)->field##_loc.line > 0 && (layer)->field != (cfg)->field)               \
			config_merge_ignore(cfg, key, NULL, &(layer)->field##_loc, why);           \
	} while (0)

/* A host list an untrusted file may not add to. */
static void
config_merge_untrusted_list(struct config *cfg, const struct cfg_list *l, const char *key,
                            const char *why)
{
	if (l->set && l->n > 0)
		config_merge_ignore(cfg, key, NULL, &l->loc, why);
}

/* allowMethods: only entries the merged list already has; the list may shrink. */
static void
config_merge_untrusted_methods(struct config *cfg, struct config *layer)
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
			config_merge_ignore(
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
config_merge_ignored_cmp(const void *a, const void *b)
{
	const struct cfg_ignored *x = a, *y = b;

	if (x->loc.line != y->loc.line)
		return x->loc.line < y->loc.line ? -1 : 1;
	return x->loc.col < y->loc.col ? -1 : x->loc.col > y->loc.col;
}

/*
 * Merging an untrusted file (a project file the payload can write between
 * runs). Only what tightens the configuration merged so far is taken:
 * blocklist entries (appended whatever inheritGlobal says), a stricter
 * mode, failClosed, blockDohProviders and ca.nameConstraints turned on,
 * onViolation: block, audit.onError: block, allowGraphqlQueries: false, a smaller
 * maxGraphqlBody, and allowMethods narrowed to entries the trusted list
 * already has. Everything else that would change the result is left out
 * and recorded with its place, for the caller to report and audit.
 */
void
config_merge_untrusted(struct config *cfg, struct config *layer)
{
	size_t first = cfg->nignored;

	if (layer->inherit_global_loc.line > 0 && !layer->inherit_global)
		config_merge_ignore(cfg, "network.inheritGlobal", NULL, &layer->inherit_global_loc,
		                    "would drop the trusted files' lists");
	if (layer->mode_loc.line > 0 &&
	    config_merge_mode_rank(layer->mode) > config_merge_mode_rank(cfg->mode)) {
		cfg->mode = layer->mode;
		cfg->mode_loc = layer->mode_loc;
	} else if (layer->mode_loc.line > 0 && layer->mode != cfg->mode)
		config_merge_ignore(cfg, "network.mode", NULL, &layer->mode_loc,
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
		config_merge_ignore(cfg, "audit.path", NULL, &layer->audit_path_loc,
		                    "would choose the file egressd writes to");
	CONFIG_TIGHTEN_BOOL(cfg, layer, audit_on_error, 0, "audit.onError",
	                    "would let requests through while the audit log cannot be written");
	CONFIG_KEEP(cfg, layer, audit_max_bytes, "audit.maxBytes",
	            "would change how much of the audit log is kept");
	CONFIG_KEEP(cfg, layer, audit_keep, "audit.keep",
	            "would change how much of the audit log is kept");
	config_merge_untrusted_list(cfg, &layer->allowlist, "network.allowlist",
	                            "would allow hosts");
	config_merge_untrusted_list(cfg, &layer->passthrough, "network.passthrough",
	                            "would exempt hosts from interception");
	config_merge_untrusted_list(cfg, &layer->blocklist_files, "network.blocklistFiles",
	                            "would make egressd read a file the payload chose");
	config_merge_list(&cfg->blocklist, &layer->blocklist, 1);
	config_merge_untrusted_methods(cfg, layer);
	schema_wrapper_merge(cfg, layer, 1);
	/* Reported in the file's order. */
	if (cfg->nignored > first)
		qsort(cfg->ignored + first, cfg->nignored - first, sizeof *cfg->ignored,
		      config_merge_ignored_cmp);
}
