/*
 * `policyctl check`: load the configuration files as egressd would and
 * print `configuration OK` with the effective configuration (each value
 * with the place that set it), or every error; with --json, the same as
 * one object. What a project file set and was not taken is warned of.
 */
#include <stdio.h>
#include <string.h>

#include "policyctl.h"

static void
check_json_loc(struct buf *b, const struct cfg_loc *loc)
{
	if (loc->file == NULL)
		buf_adds(b, "\"builtin\"");
	else {
		char s[512];

		snprintf(s, sizeof s, "%s:%u", loc->file, loc->line);
		json_escape_str(b, s);
	}
}

static void
check_json_str(struct buf *b, const char *key, const char *value, const struct cfg_loc *loc)
{
	policyctl_json_key(b, key, 0);
	buf_adds(b, "{\"value\":");
	json_escape_str(b, value);
	buf_adds(b, ",\"source\":");
	check_json_loc(b, loc);
	buf_addc(b, '}');
}

static void
check_json_int(struct buf *b, const char *key, long long value, const struct cfg_loc *loc)
{
	policyctl_json_key(b, key, 0);
	buf_printf(b, "{\"value\":%lld,\"source\":", value);
	check_json_loc(b, loc);
	buf_addc(b, '}');
}

static void
check_json_bool(struct buf *b, const char *key, int value, const struct cfg_loc *loc)
{
	policyctl_json_key(b, key, 0);
	buf_printf(b, "{\"value\":%s,\"source\":", value ? "true" : "false");
	check_json_loc(b, loc);
	buf_addc(b, '}');
}

static void
check_json_list(struct buf *b, const char *key, const struct cfg_list *l)
{
	size_t i;

	policyctl_json_key(b, key, 0);
	buf_addc(b, '[');
	for (i = 0; i < l->n; i++) {
		if (i > 0)
			buf_addc(b, ',');
		buf_adds(b, "{\"value\":");
		json_escape_str(b, l->items[i].value);
		buf_adds(b, ",\"source\":");
		check_json_loc(b, &l->items[i].loc);
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
}

/* Append each line of text as a JSON string of an array. */
static void
check_json_lines(struct buf *b, const char *text)
{
	const char *nl;
	int first = 1;

	buf_addc(b, '[');
	while (text != NULL && *text != '\0') {
		nl = strchr(text, '\n');
		if (!first)
			buf_addc(b, ',');
		json_escape(b, text, nl ? (size_t)(nl - text) : strlen(text));
		first = 0;
		text = nl ? nl + 1 : NULL;
	}
	buf_addc(b, ']');
}

/* "ignored": what --project-config files set and was not taken. */
static void
check_json_ignored(struct buf *b, const struct config *cfg)
{
	struct buf text;
	size_t i;

	buf_init(&text);
	policyctl_json_key(b, "ignored", 0);
	buf_addc(b, '[');
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&text);
		config_ignored_text(&cfg->ignored[i], &text);
		buf_adds(b, i > 0 ? ",{" : "{");
		policyctl_json_key(b, "key", 1);
		json_escape_str(b, cfg->ignored[i].key);
		policyctl_json_key(b, "entry", 0);
		json_escape_str(b, cfg->ignored[i].entry);
		policyctl_json_key(b, "source", 0);
		check_json_loc(b, &cfg->ignored[i].loc);
		policyctl_json_key(b, "reason", 0);
		json_escape_str(b, buf_cstr(&text));
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
	buf_free(&text);
}

/* "notes": keys understood that have no effect (seed 000's file), with why. */
static void
check_json_notes(struct buf *b, const struct config *cfg)
{
	struct buf text;
	size_t i;

	buf_init(&text);
	policyctl_json_key(b, "notes", 0);
	buf_addc(b, '[');
	for (i = 0; i < cfg->nnotes; i++) {
		buf_reset(&text);
		config_note_text(&cfg->notes[i], &text);
		buf_adds(b, i > 0 ? ",{" : "{");
		policyctl_json_key(b, "key", 1);
		json_escape_str(b, cfg->notes[i].key);
		policyctl_json_key(b, "source", 0);
		check_json_loc(b, &cfg->notes[i].loc);
		policyctl_json_key(b, "reason", 0);
		json_escape_str(b, buf_cstr(&text));
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
	buf_free(&text);
}

static void
check_print_json(const struct config *cfg, const char *errors, const char *warnings)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_printf(&b, "{\"ok\":%s,\"errors\":", cfg ? "true" : "false");
	check_json_lines(&b, errors);
	buf_adds(&b, ",\"warnings\":");
	check_json_lines(&b, warnings);
	if (cfg != NULL) {
		buf_adds(&b, ",\"files\":[");
		for (i = 0; i < cfg->nfiles; i++) {
			if (i > 0)
				buf_addc(&b, ',');
			json_escape_str(&b, cfg->files[i]);
		}
		buf_adds(&b, "],\"network\":{\"_\":0");
		check_json_str(&b, "mode", config_mode_name(cfg->mode), &cfg->mode_loc);
		check_json_bool(&b, "inheritGlobal", cfg->inherit_global, &cfg->inherit_global_loc);
		check_json_list(&b, "blocklist", &cfg->blocklist);
		check_json_list(&b, "allowlist", &cfg->allowlist);
		check_json_list(&b, "passthrough", &cfg->passthrough);
		check_json_list(&b, "blocklistFiles", &cfg->blocklist_files);
		check_json_list(&b, "allowMethods", &cfg->allow_methods);
		check_json_bool(&b, "allowGraphqlQueries", cfg->allow_graphql_queries,
		                &cfg->allow_graphql_queries_loc);
		check_json_str(&b, "onViolation",
		               cfg->on_violation == VIOLATION_FLAG ? "flag" : "block",
		               &cfg->on_violation_loc);
		check_json_bool(&b, "failClosed", cfg->fail_closed, &cfg->fail_closed_loc);
		check_json_int(&b, "proxyPort", cfg->proxy_port, &cfg->proxy_port_loc);
		check_json_int(&b, "dnsPort", cfg->dns_port, &cfg->dns_port_loc);
		check_json_int(&b, "maxGraphqlBody", (long long)cfg->max_graphql_body,
		               &cfg->max_graphql_body_loc);
		buf_adds(&b, "},\"ca\":{\"_\":0");
		check_json_bool(&b, "nameConstraints", cfg->ca_name_constraints,
		                &cfg->ca_name_constraints_loc);
		check_json_int(&b, "lifetimeHours", cfg->ca_lifetime_hours,
		               &cfg->ca_lifetime_hours_loc);
		buf_adds(&b, "},\"audit\":{\"_\":0");
		check_json_str(&b, "path", cfg->audit_path, &cfg->audit_path_loc);
		buf_addc(&b, '}');
		check_json_ignored(&b, cfg);
		check_json_notes(&b, cfg);
	}
	buf_adds(&b, "}\n");
	fputs(buf_cstr(&b), stdout);
	buf_free(&b);
}

/* Keys of seed 000's file with no effect here: said, not dropped silently. */
static void
check_notes(const struct config *cfg)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < cfg->nnotes; i++) {
		buf_reset(&b);
		config_note_text(&cfg->notes[i], &b);
		fprintf(stderr, "policyctl: note: %s:%u:%u: %s\n", cfg->notes[i].loc.file,
		        cfg->notes[i].loc.line, cfg->notes[i].loc.col, buf_cstr(&b));
	}
	buf_free(&b);
}

int
check_run(struct policyctl *c)
{
	struct policy *p;
	struct buf errs, dump;
	const char *w;

	buf_init(&errs);
	buf_init(&dump);
	p = policyctl_load(c, &errs);
	if (c->json) {
		check_print_json(p ? policy_config(p) : NULL, buf_cstr(&errs),
		                 p ? policy_warnings(p) : NULL);
	} else if (p == NULL) {
		policyctl_errors(buf_cstr(&errs));
	} else {
		w = policy_warnings(p);
		while (w != NULL && *w != '\0') {
			const char *nl = strchr(w, '\n');
			int len = nl ? (int)(nl - w) : (int)strlen(w);

			fprintf(stderr, "policyctl: warning: %.*s\n", len, w);
			w = nl ? nl + 1 : NULL;
		}
		policyctl_ignored_warn(policy_config(p));
		check_notes(policy_config(p));
		config_dump(policy_config(p), &dump);
		printf("configuration OK\n%s", buf_cstr(&dump));
	}
	buf_free(&errs);
	buf_free(&dump);
	if (p == NULL)
		return EXIT_USAGE;
	policy_unref(p);
	return 0;
}
