/*
 * Configuration loading. Each file is read into a node tree (cfg.c),
 * checked against the key table (schema.c) into a layer of its own, and
 * merged in order on top of the built-in defaults (policy/default.yaml;
 * config_merge.c). Every problem of every file is collected as
 * FILE:LINE:COL before the load fails once at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_int.h"

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

void
config_list_clear(struct cfg_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->items[i].value);
	free(l->items);
	memset(l, 0, sizeof *l);
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
	schema_wrapper_free(layer);
}

/* "FILE:LINE:COL: KEY [entry "E"] is ignored: ..." for warnings and audit reasons. */
void
config_ignored_text(const struct cfg_ignored *ig, struct buf *out)
{
	buf_adds(out, ig->key);
	if (ig->entry != NULL) {
		buf_adds(out, " entry \"");
		cfg_escape(out, ig->entry, strlen(ig->entry));
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
		cfg_error(ctx, &loc,
		          "larger than %d bytes: put long host lists in "
		          "blocklistFiles",
		          CONFIG_MAX_FILE_SIZE);
		return;
	}
	root = cfg_tree_read(ctx, file, data, len, &ok);
	if (!ok)
		return;
	memset(&layer, 0, sizeof layer);
	dir = config_base_dir(file);
	schema_apply(ctx, root, &layer, dir);
	free(dir);
	if (untrusted)
		config_merge_untrusted(cfg, &layer);
	else
		config_merge_layer(cfg, &layer);
	config_layer_free(&layer);
	cfg_node_free(root);
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
	cfg->audit_keep = CONFIG_DEFAULT_AUDIT_KEEP;
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
		cfg_flush(ctx, NULL);
		return;
	}
	config_list_clear(&cfg->blocklist);
	config_list_clear(&cfg->allowlist);
	config_list_clear(&cfg->passthrough);
	config_list_clear(&cfg->blocklist_files);
	cfg_flush(ctx, NULL);
}

static struct config *
config_finish(struct cfg_ctx *ctx, struct config *cfg)
{
	if (ctx->total == 0)
		return cfg;
	config_free(cfg);
	return NULL;
}

/* Load files merged in order, each trusted or not, from memory where given. */
struct config *
config_load_texts(const struct config_text *texts, size_t nfiles, struct buf *errs)
{
	struct config_file *files;
	struct cfg_ctx ctx;
	struct cfg_loc loc;
	struct config *cfg;
	size_t i, len;
	char *data;
	int err = 0;

	memset(&ctx, 0, sizeof ctx);
	ctx.out = errs;
	files = xreallocarray(NULL, nfiles + 1, sizeof *files);
	for (i = 0; i < nfiles; i++)
		files[i] = texts[i].file;
	cfg = config_new(files, nfiles);
	free(files);
	if (nfiles == 0) {
		config_add_text(&ctx, cfg, NULL, config_default_yaml, strlen(config_default_yaml),
		                0);
		cfg_flush(&ctx, NULL);
		return config_finish(&ctx, cfg);
	}
	config_add_builtin(&ctx, cfg);
	for (i = 0; i < nfiles; i++) {
		if (texts[i].data != NULL) {
			config_add_text(&ctx, cfg, cfg->files[i], texts[i].data, texts[i].len,
			                cfg->untrusted[i]);
			cfg_flush(&ctx, cfg->files[i]);
			continue;
		}
		data = config_read_file(cfg->files[i], cfg->untrusted[i], &len, &err);
		if (data == NULL) {
			loc.file = cfg->files[i];
			loc.line = loc.col = 0;
			if (cfg->untrusted[i] && (err == ELOOP || err == EINVAL))
				cfg_error(&ctx, &loc,
				          "cannot read: a project file must be a regular file, "
				          "not a symbolic link or a special file");
			else
				cfg_error(&ctx, &loc, "cannot read: %s", strerror(err));
		} else {
			config_add_text(&ctx, cfg, cfg->files[i], data, len, cfg->untrusted[i]);
			free(data);
		}
		cfg_flush(&ctx, cfg->files[i]);
	}
	return config_finish(&ctx, cfg);
}

/* Load files merged in order, each trusted or not (CONFIG_FILE_UNTRUSTED). */
struct config *
config_load_files(const struct config_file *files, size_t nfiles, struct buf *errs)
{
	struct config_text *t;
	struct config *cfg;
	size_t i;

	t = xcalloc(nfiles + 1, sizeof *t);
	for (i = 0; i < nfiles; i++)
		t[i].file = files[i];
	cfg = config_load_texts(t, nfiles, errs);
	free(t);
	return cfg;
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
	cfg_flush(&ctx, name);
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
	free(cfg->wrapper_ignored);
	free(cfg);
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
