/*
 * The effective configuration as YAML (`policyctl check`): every value
 * followed by the file and line that set it, and text that loads back to
 * the same values.
 */
#include <string.h>

#include "config_int.h"

/* " # FILE:LINE" naming where a value was set; file names are escaped. */
static void
config_dump_src(struct buf *out, const struct cfg_loc *loc)
{
	if (loc->file == NULL) {
		buf_adds(out, "  # builtin\n");
		return;
	}
	buf_adds(out, "  # ");
	cfg_escape(out, loc->file, strlen(loc->file));
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
		cfg_escape(out, cfg->files[i], strlen(cfg->files[i]));
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
	if (cfg->audit_path == NULL && cfg->audit_on_error_loc.line == 0 &&
	    cfg->audit_max_bytes_loc.line == 0 && cfg->audit_keep_loc.line == 0) {
		buf_adds(out,
		         "audit: {}  # path not set: egressd --audit decides (default stdout); "
		         "onError: block; no rotation\n");
		return;
	}
	buf_adds(out, "audit:\n");
	if (cfg->audit_path != NULL) {
		buf_adds(out, "  path: ");
		config_dump_str(out, cfg->audit_path);
		config_dump_src(out, &cfg->audit_path_loc);
	} else
		buf_adds(out, "  # path not set: egressd --audit decides (default stdout)\n");
	buf_printf(out, "  onError: %s", cfg->audit_on_error ? "continue" : "block");
	config_dump_src(out, &cfg->audit_on_error_loc);
	if (cfg->audit_max_bytes > 0) {
		buf_printf(out, "  maxBytes: %zu", cfg->audit_max_bytes);
		config_dump_src(out, &cfg->audit_max_bytes_loc);
	} else
		buf_adds(out, "  # maxBytes not set: the log is never rotated\n");
	buf_printf(out, "  keep: %d", cfg->audit_keep);
	config_dump_src(out, &cfg->audit_keep_loc);
}
