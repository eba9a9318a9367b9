/*
 * The wrapper's sections of the configuration file (seed 003 §8: state,
 * image, project, opencode, skills, resources, container) and the keys of
 * seed 000's .opencode/sandbox.json (filesystem, docker, verbose, ...):
 * their table, checked key by key by schema.c like the policy's own, and
 * how a later file's values merge over the earlier ones. egressd loads and
 * then ignores them; opencode-sandbox acts on them. From an untrusted
 * project file only what makes the run tighter is taken (a read-only
 * project, no host OpenCode files): the image, the mounts, the resources and
 * the rest would let a file the payload can write choose how the sandbox
 * is built, so they are recorded as ignored.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

static void schema_wrapper_store_path(struct schema_state *, const struct schema_key *,
                                      const struct cfg_node *, long long);
static void schema_wrapper_store_words(struct schema_state *, const struct schema_key *,
                                       const struct cfg_node *, long long);
static void schema_wrapper_store_strings(struct schema_state *, const struct schema_key *,
                                         const struct cfg_node *, long long);
static void schema_wrapper_store_target(struct schema_state *, const struct schema_key *,
                                        const struct cfg_node *, long long);
static void schema_wrapper_store_mounts(struct schema_state *, const struct schema_key *,
                                        const struct cfg_node *, long long);
static void schema_wrapper_store_cpus(struct schema_state *, const struct schema_key *,
                                      const struct cfg_node *, long long);
static void schema_wrapper_store_memory(struct schema_state *, const struct schema_key *,
                                        const struct cfg_node *, long long);

static const char *const schema_wrapper_permissions[] = {"ask", "allow", "deny", NULL};

#define WF(field)                                                                                  \
	.off = offsetof(struct config, wrapper.field),                                             \
	.loc_off = offsetof(struct config, wrapper.field##_loc), .wrapper = 1
#define WL(field)                                                                                  \
	.off = offsetof(struct config, wrapper.field),                                             \
	.loc_off = offsetof(struct config, wrapper.field.loc), .wrapper = 1
#define SECTION(name)                                                                              \
	{                                                                                          \
		.key = name, .type = SCHEMA_SECTION                                                \
	}
#define KEY(sec, name) .section = sec, .key = name, .full = sec "." name
#define BOOL(sec, name, field)                                                                     \
	KEY(sec, name), .type = SCHEMA_BOOL, .store = schema_store_int, WF(field)
#define PATH(sec, name, field)                                                                     \
	KEY(sec, name), .type = SCHEMA_STRING, .store = schema_wrapper_store_path, WF(field)
#define WORD(sec, name, field)                                                                     \
	KEY(sec, name), .type = SCHEMA_STRING, .store = schema_wrapper_store_words, WF(field)
#define WORDS(sec, name, field)                                                                    \
	KEY(sec, name), .type = SCHEMA_LIST, .store = schema_wrapper_store_words, WL(field)
#define NOTE(text) .untrusted = SCHEMA_UNTRUSTED_NOTE, .note = text

const struct schema_key schema_wrapper_keys[] = {
    SECTION("state"),
    {PATH("state", "configDir", state_config_dir)},
    {PATH("state", "dataDir", state_data_dir)},
    {PATH("state", "stateDir", state_state_dir)},

    SECTION("image"),
    {WORD("image", "name", image_name)},
    {BOOL("image", "autoBuild", image_auto_build)},
    {WORD("image", "strictInitImage", image_strict_init_image)},
    {WORD("image", "base", image_base)},
    {BOOL("image", "installTools", image_install_tools)},

    SECTION("project"),
    {KEY("project", "target"), .type = SCHEMA_STRING, .store = schema_wrapper_store_target,
     WF(project_target)},
    {BOOL("project", "readonly", project_readonly), .untrusted = SCHEMA_UNTRUSTED_TRUE,
     .why = "would make the project writable"},
    {KEY("project", "extraMounts"), .type = SCHEMA_LIST, .store = schema_wrapper_store_mounts,
     WL(project_extra_mounts), .why = "would mount host paths into the sandbox"},

    SECTION("opencode"),
    {BOOL("opencode", "mountHostConfig", opencode_mount_host_config),
     .untrusted = SCHEMA_UNTRUSTED_FALSE, .why = "would mount the host's OpenCode config"},
    {BOOL("opencode", "mountHostData", opencode_mount_host_data),
     .untrusted = SCHEMA_UNTRUSTED_FALSE, .why = "would mount the host's OpenCode credentials"},
    {BOOL("opencode", "generatedConfig", opencode_generated_config)},
    {BOOL("opencode", "autoupdate", opencode_autoupdate)},
    {WORDS("opencode", "enabledProviders", opencode_enabled_providers)},
    {WORDS("opencode", "disabledProviders", opencode_disabled_providers)},
    {.key = "permission",
     .section = "opencode",
     .full = "opencode.permission",
     .type = SCHEMA_SECTION},
    {KEY("opencode.permission", "edit"), .type = SCHEMA_ENUM, .store = schema_store_int,
     WF(opencode_permission_edit), .names = schema_wrapper_permissions},
    {KEY("opencode.permission", "bash"), .type = SCHEMA_ENUM, .store = schema_store_int,
     WF(opencode_permission_bash), .names = schema_wrapper_permissions},

    SECTION("skills"),
    {PATH("skills", "importedDir", skills_imported_dir)},
    {PATH("skills", "projectImportedDir", skills_project_imported_dir)},
    {KEY("skills", "include"), .type = SCHEMA_LIST, .store = schema_wrapper_store_strings,
     WL(skills_include)},
    {KEY("skills", "exclude"), .type = SCHEMA_LIST, .store = schema_wrapper_store_strings,
     WL(skills_exclude)},
    {BOOL("skills", "exposeProjectSkills", skills_expose_project_skills)},
    {BOOL("skills", "exposeGlobalSkills", skills_expose_global_skills)},

    SECTION("resources"),
    {KEY("resources", "cpus"), .type = SCHEMA_STRING, .store = schema_wrapper_store_cpus,
     WF(resources_cpus)},
    {KEY("resources", "memory"), .type = SCHEMA_STRING, .store = schema_wrapper_store_memory,
     WF(resources_memory)},

    SECTION("container"),
    {WORD("container", "namePrefix", container_name_prefix)},
    {BOOL("container", "remove", container_remove)},
    {BOOL("container", "debug", container_debug)},
    {PATH("container", "upstreamCa", container_upstream_ca),
     .why = "would make egressd trust another certificate authority"},

    /* seed 000's .opencode/sandbox.json */
    {BOOL("network", "observe", observe),
     NOTE("egressd always sees and decides every request; there is nothing to turn off")},
    SECTION("filesystem"),
    {BOOL("filesystem", "inherit_permissions", fs_inherit_permissions),
     NOTE("OpenCode's own permission settings always apply unchanged")},
    {KEY("filesystem", "allow_write"), .type = SCHEMA_LIST, .store = schema_wrapper_store_strings,
     WL(fs_allow_write),
     NOTE("the sandbox does not review file changes: the agent writes the project "
          "(project.readonly: true makes it read-only)")},
    {KEY("filesystem", "deny_read"), .type = SCHEMA_LIST, .store = schema_wrapper_store_strings,
     WL(fs_deny_read),
     NOTE("the sandbox does not flag file reads: only the project and the files listed in "
          "docs/opencode-sandbox.md are mounted")},
    {.key = "auto_allow_clean",
     .type = SCHEMA_BOOL,
     .store = schema_store_int,
     WF(auto_allow_clean),
     NOTE("there is no per-command approval: egressd decides each request as it is made")},
    {.key = "verbose", .type = SCHEMA_BOOL, .store = schema_store_int, WF(container_debug)},
    SECTION("docker"),
    {.section = "docker",
     .key = "image",
     .full = "docker.image",
     .type = SCHEMA_STRING,
     .store = schema_wrapper_store_words,
     WF(image_name),
     .why = "would choose the image"},
};
const size_t schema_wrapper_nkeys = EG_NELEM(schema_wrapper_keys);

#undef WF
#undef WL
#undef SECTION
#undef KEY
#undef BOOL
#undef PATH
#undef WORD
#undef WORDS
#undef NOTE

static char **
schema_wrapper_str(struct config *cfg, const struct schema_key *k)
{
	return (char **)((char *)cfg + k->off);
}

static int *
schema_wrapper_int(struct config *cfg, const struct schema_key *k)
{
	return (int *)((char *)cfg + k->off);
}

static struct cfg_loc *
schema_wrapper_loc(struct config *cfg, const struct schema_key *k)
{
	return (struct cfg_loc *)((char *)cfg + k->loc_off);
}

static void
schema_wrapper_set(struct schema_state *st, const struct schema_key *k, char *value)
{
	char **p = schema_wrapper_str(st->cfg, k);

	free(*p);
	*p = value;
}

/* A path: relative ones from the file's directory; "~/..." is left for the host. */
static void
schema_wrapper_store_path(struct schema_state *st, const struct schema_key *k,
                          const struct cfg_node *v, long long num)
{
	if (strcmp(v->value, "~") == 0 || strncmp(v->value, "~/", 2) == 0)
		schema_wrapper_set(st, k, xstrdup(v->value));
	else
		schema_wrapper_set(st, k, schema_path(st, v->value));
}

/*
 * A name handed to a container runtime or to OpenCode as one argument
 * (an image reference, a provider, a name prefix): printable, no blanks,
 * and not starting with '-', so that it can never be read as an option.
 */
static const char *
schema_wrapper_word_check(const char *s, int prefix)
{
	size_t i;

	if (s[0] == '-')
		return "must not start with '-'";
	for (i = 0; s[i] != '\0'; i++) {
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return "must be printable ASCII without spaces";
		if (prefix &&
		    !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return "may hold only letters, digits, '.', '_' and '-'";
	}
	if (prefix && i > 40)
		return "is longer than 40 characters";
	return NULL;
}

static void
schema_wrapper_store_words(struct schema_state *st, const struct schema_key *k,
                           const struct cfg_node *v, long long num)
{
	int prefix = strcmp(k->key, "namePrefix") == 0;
	const struct cfg_node *n;
	struct cfg_list *l;
	const char *err;
	struct buf b;
	size_t i;

	buf_init(&b);
	if (k->type == SCHEMA_STRING) {
		if ((err = schema_wrapper_word_check(v->value, prefix)) != NULL)
			cfg_error(st->ctx, &v->loc, "%s \"%s\": %s", k->key, schema_text(&b, v),
			          err);
		else
			schema_wrapper_set(st, k, xstrdup(v->value));
		buf_free(&b);
		return;
	}
	l = schema_list(st, k);
	for (i = 0; i < v->n; i++) {
		n = v->kids[i];
		if (schema_string(st, k->key, 1, n) == -1)
			continue;
		if ((err = schema_wrapper_word_check(n->value, 0)) != NULL) {
			cfg_error(st->ctx, &n->loc, "%s entry \"%s\": %s", k->key,
			          schema_text(&b, n), err);
			continue;
		}
		schema_list_add(l, xstrdup(n->value), n);
	}
	buf_free(&b);
}

static void
schema_wrapper_store_strings(struct schema_state *st, const struct schema_key *k,
                             const struct cfg_node *v, long long num)
{
	struct cfg_list *l = schema_list(st, k);
	size_t i;

	for (i = 0; i < v->n; i++)
		if (schema_string(st, k->key, 1, v->kids[i]) == 0)
			schema_list_add(l, xstrdup(v->kids[i]->value), v->kids[i]);
}

/* A path in the container: absolute, no "..", no ':' or ',' (mount syntax). */
static const char *
schema_wrapper_target_check(const char *s)
{
	const char *p;

	if (s[0] != '/')
		return "must be an absolute path in the container";
	if (strcmp(s, "/") == 0)
		return "must not be the container's root";
	if (strpbrk(s, ":,") != NULL)
		return "must not hold ':' or ','";
	for (p = s; (p = strstr(p, "/..")) != NULL; p += 3)
		if (p[3] == '/' || p[3] == '\0')
			return "must not hold \"..\"";
	return NULL;
}

static void
schema_wrapper_store_target(struct schema_state *st, const struct schema_key *k,
                            const struct cfg_node *v, long long num)
{
	const char *err;
	struct buf b;

	if ((err = schema_wrapper_target_check(v->value)) != NULL) {
		buf_init(&b);
		cfg_error(st->ctx, &v->loc, "%s \"%s\": %s", k->key, schema_text(&b, v), err);
		buf_free(&b);
		return;
	}
	schema_wrapper_set(st, k, xstrdup(v->value));
}

/*
 * extraMounts entries: "SOURCE:TARGET", "SOURCE:TARGET:ro" or
 * "SOURCE:TARGET:rw"; stored as "ABSOLUTE-SOURCE:TARGET:ro|rw", read-only
 * unless rw is written. Whether SOURCE exists and may be mounted is the
 * host's check, at run time.
 */
static void
schema_wrapper_store_mounts(struct schema_state *st, const struct schema_key *k,
                            const struct cfg_node *v, long long num)
{
	struct cfg_list *l = schema_list(st, k);
	const struct cfg_node *n;
	char *src, *dst, *mode, *copy, *abs;
	const char *err;
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < v->n; i++) {
		n = v->kids[i];
		if (schema_string(st, k->key, 1, n) == -1)
			continue;
		copy = xstrdup(n->value);
		src = copy;
		err = NULL;
		if ((dst = strchr(src, ':')) == NULL)
			err = "expected SOURCE:TARGET[:ro|:rw]";
		else {
			*dst++ = '\0';
			if ((mode = strchr(dst, ':')) != NULL)
				*mode++ = '\0';
			if (*src == '\0' || strchr(src, ',') != NULL)
				err = "the source must be a path without ','";
			else if (mode != NULL && strcmp(mode, "ro") != 0 && strcmp(mode, "rw") != 0)
				err = "the mode after the target must be ro or rw";
			else
				err = schema_wrapper_target_check(dst);
		}
		if (err != NULL) {
			cfg_error(st->ctx, &n->loc, "%s entry \"%s\": %s", k->key,
			          schema_text(&b, n), err);
			free(copy);
			continue;
		}
		abs = src[0] == '~' ? xstrdup(src) : schema_path(st, src);
		schema_list_add(l, xasprintf("%s:%s:%s", abs, dst, mode != NULL ? mode : "ro"), n);
		free(abs);
		free(copy);
	}
	buf_free(&b);
}

/* cpus: a positive decimal, "4" or "1.5", at most 1024. */
static void
schema_wrapper_store_cpus(struct schema_state *st, const struct schema_key *k,
                          const struct cfg_node *v, long long num)
{
	const char *s = v->value, *dot = strchr(s, '.');
	size_t whole = dot != NULL ? (size_t)(dot - s) : strlen(s);
	struct buf b;
	int ok;

	ok = whole >= 1 && whole <= 4 && strspn(s, "0123456789") == whole &&
	     (dot == NULL || (dot[1] != '\0' && strspn(dot + 1, "0123456789") == strlen(dot + 1) &&
	                      strlen(dot + 1) <= 3));
	if (ok && strtod(s, NULL) > 0 && strtod(s, NULL) <= 1024) {
		schema_wrapper_set(st, k, xstrdup(s));
		return;
	}
	buf_init(&b);
	cfg_error(st->ctx, &v->loc,
	          "cpus: \"%s\" is not a number of CPUs (like 4 or 1.5, up to 1024)",
	          schema_text(&b, v));
	buf_free(&b);
}

/* memory: digits with an optional unit b, k, m or g (either case), from 16m to 1024g. */
static void
schema_wrapper_store_memory(struct schema_state *st, const struct schema_key *k,
                            const struct cfg_node *v, long long num)
{
	static const char units[] = "bBkKmMgG";
	const char *s = v->value;
	size_t digits = strspn(s, "0123456789");
	unsigned long long n, mult = 1;
	struct buf b;
	char u;

	u = s[digits];
	if (digits >= 1 && digits <= 12 &&
	    (u == '\0' || (strchr(units, u) && s[digits + 1] == '\0'))) {
		n = strtoull(s, NULL, 10);
		if (u == 'k' || u == 'K')
			mult = 1024;
		else if (u == 'm' || u == 'M')
			mult = 1024 * 1024;
		else if (u == 'g' || u == 'G')
			mult = 1024 * 1024 * 1024;
		if (n <= (1ULL << 40) / mult && n * mult >= 16ULL * 1024 * 1024) {
			schema_wrapper_set(st, k, xstrdup(s));
			return;
		}
	}
	buf_init(&b);
	cfg_error(st->ctx, &v->loc,
	          "memory: \"%s\" is not an amount of memory (like 4g or 512m, from 16m to 1024g)",
	          schema_text(&b, v));
	buf_free(&b);
}

/* Record a wrapper key an untrusted file set and that was not taken. */
static void
schema_wrapper_ignore(struct config *cfg, const struct schema_key *k, const struct cfg_loc *loc)
{
	struct cfg_ignored *ig;

	cfg->wrapper_ignored = xreallocarray(cfg->wrapper_ignored, cfg->nwrapper_ignored + 1,
	                                     sizeof *cfg->wrapper_ignored);
	ig = &cfg->wrapper_ignored[cfg->nwrapper_ignored++];
	ig->key = k->full != NULL ? k->full : k->key;
	ig->entry = NULL;
	ig->why = k->why != NULL ? k->why : "would change how the sandbox is run";
	ig->loc = *loc;
}

/* Whether an untrusted file's value for k may be taken: it only tightens, or does nothing. */
static int
schema_wrapper_tightens(const struct schema_key *k, struct config *layer)
{
	switch (k->untrusted) {
	case SCHEMA_UNTRUSTED_NOTE:
		return 1;
	case SCHEMA_UNTRUSTED_TRUE:
		return *schema_wrapper_int(layer, k) != 0;
	case SCHEMA_UNTRUSTED_FALSE:
		return *schema_wrapper_int(layer, k) == 0;
	default:
		return 0;
	}
}

static void
schema_wrapper_list_move(struct cfg_list *dst, struct cfg_list *src)
{
	config_list_clear(dst);
	*dst = *src;
	memset(src, 0, sizeof *src);
}

/*
 * Lay one file's wrapper settings over the merged ones: a scalar the file
 * sets wins, a list it sets replaces. From an untrusted file only the
 * values that tighten are taken. Aliases share a field, so each field is
 * merged once (its first key in the table).
 */
void
schema_wrapper_merge(struct config *cfg, struct config *layer, int untrusted)
{
	const struct schema_key *k;
	struct cfg_loc *from;
	struct cfg_list *l;
	size_t i, j;

	for (i = 0; i < schema_wrapper_nkeys; i++) {
		k = &schema_wrapper_keys[i];
		if (!k->wrapper)
			continue;
		for (j = 0; j < i && schema_wrapper_keys[j].off != k->off; j++)
			;
		if (j < i)
			continue;
		if (k->type == SCHEMA_LIST) {
			l = (struct cfg_list *)((char *)layer + k->off);
			if (!l->set)
				continue;
			if (untrusted && k->untrusted != SCHEMA_UNTRUSTED_NOTE) {
				schema_wrapper_ignore(cfg, k, &l->loc);
				continue;
			}
			schema_wrapper_list_move((struct cfg_list *)((char *)cfg + k->off), l);
			continue;
		}
		from = schema_wrapper_loc(layer, k);
		if (from->line == 0)
			continue;
		if (untrusted && !schema_wrapper_tightens(k, layer)) {
			/* Setting a value the merge already has changes nothing: not reported. */
			if (k->type == SCHEMA_STRING || schema_wrapper_loc(cfg, k)->line == 0 ||
			    *schema_wrapper_int(layer, k) != *schema_wrapper_int(cfg, k))
				schema_wrapper_ignore(cfg, k, from);
			continue;
		}
		if (k->type == SCHEMA_STRING) {
			free(*schema_wrapper_str(cfg, k));
			*schema_wrapper_str(cfg, k) = *schema_wrapper_str(layer, k);
			*schema_wrapper_str(layer, k) = NULL;
		} else
			*schema_wrapper_int(cfg, k) = *schema_wrapper_int(layer, k);
		*schema_wrapper_loc(cfg, k) = *from;
	}
	if (layer->nnotes > 0) {
		cfg->notes =
		    xreallocarray(cfg->notes, cfg->nnotes + layer->nnotes, sizeof *cfg->notes);
		memcpy(cfg->notes + cfg->nnotes, layer->notes, layer->nnotes * sizeof *cfg->notes);
		cfg->nnotes += layer->nnotes;
	}
	free(layer->notes);
	layer->notes = NULL;
	layer->nnotes = 0;
}

/* Free what the wrapper settings hold (strings and lists), for a layer or a whole config. */
void
schema_wrapper_free(struct config *cfg)
{
	const struct schema_key *k;
	size_t i, j;

	for (i = 0; i < schema_wrapper_nkeys; i++) {
		k = &schema_wrapper_keys[i];
		if (!k->wrapper)
			continue;
		for (j = 0; j < i && schema_wrapper_keys[j].off != k->off; j++)
			;
		if (j < i)
			continue;
		if (k->type == SCHEMA_LIST)
			config_list_clear((struct cfg_list *)((char *)cfg + k->off));
		else if (k->type == SCHEMA_STRING) {
			free(*schema_wrapper_str(cfg, k));
			*schema_wrapper_str(cfg, k) = NULL;
		}
	}
	free(cfg->notes);
	cfg->notes = NULL;
	cfg->nnotes = 0;
}

const char *
config_permission_name(enum config_permission p)
{
	return schema_wrapper_permissions[p <= CONFIG_PERMISSION_DENY ? p : 0];
}

void
config_note_text(const struct cfg_note *n, struct buf *out)
{
	buf_printf(out, "%s has no effect here: %s", n->key, n->text);
}

/* A value for the dump: quotes, backslashes and control bytes escaped, nothing cut. */
static void
schema_wrapper_escape(struct buf *out, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			buf_printf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			buf_printf(out, "\\x%02x", (unsigned char)*s);
		else
			buf_addc(out, *s);
	}
}

/*
 * The wrapper settings some file set, one "section.key: value  # FILE:LINE"
 * line each, in table order (for opencode-sandbox --dry-run).
 */
void
config_wrapper_dump(const struct config *cfg, struct buf *out)
{
	const struct schema_key *k;
	const struct cfg_list *l;
	const struct cfg_loc *loc;
	const char *name, *s;
	size_t i, j;

	for (i = 0; i < schema_wrapper_nkeys; i++) {
		k = &schema_wrapper_keys[i];
		if (!k->wrapper)
			continue;
		for (j = 0; j < i && schema_wrapper_keys[j].off != k->off; j++)
			;
		if (j < i)
			continue;
		name = k->full != NULL ? k->full : k->key;
		if (k->type == SCHEMA_LIST) {
			l = (const struct cfg_list *)((const char *)cfg + k->off);
			if (!l->set)
				continue;
			loc = &l->loc;
			buf_printf(out, "%s: [", name);
			for (j = 0; j < l->n; j++) {
				buf_adds(out, j > 0 ? ", \"" : "\"");
				schema_wrapper_escape(out, l->items[j].value);
				buf_addc(out, '"');
			}
			buf_addc(out, ']');
		} else {
			loc = (const struct cfg_loc *)((const char *)cfg + k->loc_off);
			if (loc->line == 0)
				continue;
			buf_printf(out, "%s: ", name);
			if (k->type == SCHEMA_STRING) {
				s = *(char *const *)((const char *)cfg + k->off);
				buf_addc(out, '"');
				schema_wrapper_escape(out, s);
				buf_addc(out, '"');
			} else if (k->type == SCHEMA_ENUM)
				buf_adds(out, k->names[*(const int *)((const char *)cfg + k->off)]);
			else
				buf_adds(out, *(const int *)((const char *)cfg + k->off) ? "true"
				                                                         : "false");
		}
		buf_adds(out, "  # ");
		schema_wrapper_escape(out, loc->file != NULL ? loc->file : "builtin");
		buf_printf(out, ":%u\n", loc->line);
	}
}
