/*
 * Consent for what the agent could have written. A project's policy files
 * live in the workspace the agent writes (or came with a cloned
 * repository), so one the user has not seen must not loosen the sandbox.
 * The host keeps, per project, a copy of the project files the user last
 * accepted and their digest. When the files differ, the run says in plain
 * words what they would change and asks; accepted, they are trusted like
 * the global file; declined, the accepted copies stay the trusted ones and
 * the new files only tighten. run.c decides who may answer.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

#define CONSENT_MAX_FILES 8

/* The digest of the project files, as merged: role, path and bytes of each. */
static char *
consent_digest(const struct conf *c)
{
	struct buf b;
	char *hex;
	size_t i, n = 0;

	buf_init(&b);
	for (i = 0; i < c->n; i++) {
		if (!conf_is_project(&c->files[i]))
			continue;
		buf_printf(&b, "%s\n%s\n%zu\n", conf_role_name(c->files[i].role), c->files[i].path,
		           c->files[i].len);
		buf_add(&b, c->files[i].data, c->files[i].len);
		n++;
	}
	hex = n > 0 ? host_sha256_hex(b.data, b.len) : NULL;
	buf_free(&b);
	return hex;
}

/* One line of a small file: the digest, a role, a path. */
static char *
consent_line(const char *path)
{
	char *data, *nl;
	size_t len;

	if (host_read_file(path, 8192, &data, &len) == -1)
		return NULL;
	if ((nl = strchr(data, '\n')) != NULL)
		*nl = '\0';
	return data;
}

/* Read what was accepted for this project, and the current digest. */
int
consent_load(struct consent *s, const char *project_state, const struct conf *c)
{
	char *p, *meta, *nl;
	size_t i, len;

	memset(s, 0, sizeof *s);
	s->dir = xasprintf("%s/accepted", project_state);
	s->digest = consent_digest(c);
	p = xasprintf("%s/digest", s->dir);
	s->accepted = consent_line(p);
	free(p);
	for (i = 0; s->accepted != NULL && i < CONSENT_MAX_FILES; i++) {
		p = xasprintf("%s/%zu.meta", s->dir, i);
		if (host_read_file(p, 8192, &meta, &len) == -1) {
			free(p);
			break;
		}
		free(p);
		if ((nl = strchr(meta, '\n')) == NULL) {
			free(meta);
			break;
		}
		*nl = '\0';
		if (strchr(nl + 1, '\n') != NULL)
			*strchr(nl + 1, '\n') = '\0';
		strv_add(&s->roles, meta);
		strv_add(&s->paths, nl + 1);
		free(meta);
		p = xasprintf("%s/%zu.data", s->dir, i);
		if (host_read_file(p, 4 * 1024 * 1024, &meta, &len) == -1)
			meta = xstrdup("");
		free(p);
		strv_add_owned(&s->copies, meta);
	}
	s->changed =
	    s->digest != NULL && (s->accepted == NULL || strcmp(s->accepted, s->digest) != 0);
	return 0;
}

/* Replace the accepted record with the current project files. */
int
consent_record(const struct consent *s, const struct conf *c, struct buf *err)
{
	char *p;
	size_t i, k = 0;
	struct buf meta;

	if (s->digest == NULL)
		return 0;
	if (host_mkdirs(s->dir, 0700) == -1) {
		buf_printf(err, "%s: %s", s->dir, strerror(errno));
		return -1;
	}
	/* The digest goes first: a record cut short is then one that no longer matches. */
	p = xasprintf("%s/digest", s->dir);
	unlink(p);
	free(p);
	for (i = 0; i < CONSENT_MAX_FILES; i++) {
		p = xasprintf("%s/%zu.meta", s->dir, i);
		unlink(p);
		free(p);
		p = xasprintf("%s/%zu.data", s->dir, i);
		unlink(p);
		free(p);
	}
	buf_init(&meta);
	for (i = 0; i < c->n && k < CONSENT_MAX_FILES; i++) {
		if (!conf_is_project(&c->files[i]))
			continue;
		buf_reset(&meta);
		buf_printf(&meta, "%s\n%s\n", c->files[i].role == CONF_SEED ? "seed" : "project",
		           c->files[i].path);
		p = xasprintf("%s/%zu.data", s->dir, k);
		if (host_write_file(p, c->files[i].data, c->files[i].len, 0600) == -1)
			goto err;
		free(p);
		p = xasprintf("%s/%zu.meta", s->dir, k);
		if (host_write_file(p, meta.data, meta.len, 0600) == -1)
			goto err;
		free(p);
		k++;
	}
	buf_free(&meta);
	p = xasprintf("%s/digest", s->dir);
	buf_init(&meta);
	buf_printf(&meta, "%s\n", s->digest);
	if (host_write_file(p, meta.data, meta.len, 0600) == -1)
		goto err;
	free(p);
	buf_free(&meta);
	return 0;
err:
	buf_printf(err, "%s: %s", p, strerror(errno));
	free(p);
	buf_free(&meta);
	return -1;
}

void
consent_free(struct consent *s)
{
	free(s->dir);
	free(s->digest);
	free(s->accepted);
	strv_free(&s->paths);
	strv_free(&s->roles);
	strv_free(&s->copies);
}

static int
consent_list_has(const struct cfg_list *l, const char *v)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->items[i].value, v) == 0)
			return 1;
	return 0;
}

/* Entries of one list added and dropped, each on a line of its own. */
static void
consent_list(struct buf *out, const struct cfg_list *a, const struct cfg_list *b, const char *added,
             const char *dropped)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (!consent_list_has(a, b->items[i].value))
			buf_printf(out, "  + %s: %s\n", added, b->items[i].value);
	for (i = 0; i < a->n; i++)
		if (!consent_list_has(b, a->items[i].value))
			buf_printf(out, "  - %s: %s\n", dropped, a->items[i].value);
}

static void
consent_words(struct buf *out, const struct cfg_list *l)
{
	size_t i;

	if (l->n == 0)
		buf_adds(out, "none");
	for (i = 0; i < l->n; i++)
		buf_printf(out, "%s%s", i > 0 ? ", " : "", l->items[i].value);
}

static int
consent_list_equal(const struct cfg_list *a, const struct cfg_list *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->items[i].value, b->items[i].value) != 0)
			return 0;
	return 1;
}

static const char *
consent_str(const char *s)
{
	return s != NULL ? s : "(default)";
}

static int
consent_str_differ(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

static const char *
consent_yes(int v)
{
	return v ? "yes" : "no";
}

/* A policy setting: the merged values always hold the effective one. */
#define CONSENT_BOOL(out, old, new, field, what)                                                   \
	do {                                                                                       \
		if ((old)->field != (new)->field)                                                  \
			buf_printf(out, "  %s: %s -> %s\n", what, consent_yes((old)->field),       \
			           consent_yes((new)->field));                                     \
	} while (0)

/* A wrapper setting's effective value: what a file set, else the default. */
#define CONSENT_VAL(w, field, dflt) ((w)->field##_loc.line > 0 ? (w)->field : (dflt))

#define CONSENT_FLAG(out, old, new, field, dflt, what)                                             \
	do {                                                                                       \
		if (CONSENT_VAL(old, field, dflt) != CONSENT_VAL(new, field, dflt))                \
			buf_printf(out, "  %s: %s -> %s\n", what,                                  \
			           consent_yes(CONSENT_VAL(old, field, dflt)),                     \
			           consent_yes(CONSENT_VAL(new, field, dflt)));                    \
	} while (0)
#define CONSENT_TEXT(out, old, new, field, dflt, what)                                             \
	do {                                                                                       \
		const char *a_ = (old)->field != NULL ? (old)->field : (dflt);                     \
		const char *b_ = (new)->field != NULL ? (new)->field : (dflt);                     \
		if (consent_str_differ(a_, b_))                                                    \
			buf_printf(out, "  %s: %s -> %s\n", what, consent_str(a_),                 \
			           consent_str(b_));                                               \
	} while (0)

/* What the wrapper's settings change: the image, mounts, resources. */
static void
consent_wrapper(struct buf *out, const struct config_wrapper *o, const struct config_wrapper *n)
{
	const char *image = getenv("OPENCODE_SANDBOX_IMAGE");

	if (image == NULL || image[0] == '\0')
		image = HOST_DEFAULT_IMAGE;
	CONSENT_TEXT(out, o, n, image_name, image, "image");
	CONSENT_FLAG(out, o, n, project_readonly, 0, "project mounted read-only");
	CONSENT_TEXT(out, o, n, project_target, HOST_TARGET, "project path in the container");
	consent_list(out, &o->project_extra_mounts, &n->project_extra_mounts,
	             "host path mounted in the sandbox", "no longer mounted");
	CONSENT_FLAG(out, o, n, opencode_mount_host_config, 1, "your OpenCode config mounted");
	CONSENT_FLAG(out, o, n, opencode_mount_host_data, 1, "your OpenCode credentials mounted");
	CONSENT_FLAG(out, o, n, opencode_generated_config, 1, "the sandbox's OpenCode overlay");
	CONSENT_FLAG(out, o, n, opencode_autoupdate, 0, "OpenCode autoupdate");
	if (!consent_list_equal(&o->opencode_enabled_providers, &n->opencode_enabled_providers))
		buf_adds(out, "  the providers OpenCode may use change\n");
	if (!consent_list_equal(&o->opencode_disabled_providers, &n->opencode_disabled_providers))
		buf_adds(out, "  the providers OpenCode must not use change\n");
	if (CONSENT_VAL(o, opencode_permission_edit, (enum config_permission) - 1) !=
	        CONSENT_VAL(n, opencode_permission_edit, (enum config_permission) - 1) ||
	    CONSENT_VAL(o, opencode_permission_bash, (enum config_permission) - 1) !=
	        CONSENT_VAL(n, opencode_permission_bash, (enum config_permission) - 1))
		buf_adds(out, "  OpenCode's edit and bash permissions change\n");
	CONSENT_TEXT(out, o, n, resources_cpus, NULL, "CPUs");
	CONSENT_TEXT(out, o, n, resources_memory, "4g", "memory");
	CONSENT_FLAG(out, o, n, container_remove, 1, "container removed at exit");
	CONSENT_FLAG(out, o, n, container_debug, 0, "debug output");
	CONSENT_TEXT(out, o, n, container_name_prefix, "opencode-sandbox", "container name prefix");
	CONSENT_TEXT(out, o, n, container_upstream_ca, NULL, "extra CA trusted for upstreams");
}

/*
 * What changes between two effective configurations, in plain words, one
 * change a line; nothing when they are the same.
 */
void
consent_describe(const struct config *o, const struct config *n, struct buf *out)
{
	if (o->mode != n->mode)
		buf_printf(out, "  network mode: %s -> %s\n", config_mode_name(o->mode),
		           config_mode_name(n->mode));
	if (o->inherit_global && !n->inherit_global)
		buf_adds(out,
		         "  inheritGlobal: false: the project's lists replace the global ones\n");
	consent_list(out, &o->allowlist, &n->allowlist, "allowlisted (every method)",
	             "no longer allowlisted");
	consent_list(out, &o->blocklist, &n->blocklist, "blocked", "no longer blocked");
	consent_list(out, &o->passthrough, &n->passthrough, "tunnelled without inspection",
	             "inspected again");
	consent_list(out, &o->blocklist_files, &n->blocklist_files, "block list file",
	             "block list file dropped");
	if (!consent_list_equal(&o->allow_methods, &n->allow_methods)) {
		buf_adds(out, "  methods allowed to any host: ");
		consent_words(out, &o->allow_methods);
		buf_adds(out, " -> ");
		consent_words(out, &n->allow_methods);
		buf_addc(out, '\n');
	}
	CONSENT_BOOL(out, o, n, allow_graphql_queries, "GraphQL queries allowed to any host");
	if (o->on_violation != n->on_violation)
		buf_printf(out, "  a request that breaks the rules is %s\n",
		           n->on_violation == VIOLATION_FLAG
		               ? "let through and flagged (was: blocked)"
		               : "blocked (was: let through and flagged)");
	CONSENT_BOOL(out, o, n, fail_closed, "fail closed");
	CONSENT_BOOL(out, o, n, block_doh_providers, "DNS-over-HTTPS services blocked");
	CONSENT_BOOL(out, o, n, ca_name_constraints, "CA name constraints");
	if (o->proxy_port != n->proxy_port || o->dns_port != n->dns_port)
		buf_adds(out, "  egressd's ports change\n");
	if (o->max_graphql_body != n->max_graphql_body)
		buf_printf(out, "  GraphQL body limit: %zu -> %zu bytes\n", o->max_graphql_body,
		           n->max_graphql_body);
	consent_wrapper(out, &o->wrapper, &n->wrapper);
}
