/*
 * Tests for the config loader (policy/config.c, policy/schema.c): valid
 * files of every shape, the built-in defaults, merging, config_dump round
 * trips, and every error kind as tests/data/config/bad/NAME.yaml compared
 * with the exact messages in NAME.err.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sys/stat.h>

#include "config_int.h"

#define CONFIG_DIR TEST_DATA_DIR "/config"

/* Load files relative to the config data dir; fails the test on errors. */
static struct config *
load_ok(size_t n, ...)
{
	char *files[8];
	struct config *cfg;
	struct buf errs;
	va_list ap;
	size_t i;

	assert_true(n <= 8);
	va_start(ap, n);
	for (i = 0; i < n; i++)
		files[i] = va_arg(ap, char *);
	va_end(ap);
	assert_int_equal(chdir(CONFIG_DIR), 0);
	buf_init(&errs);
	cfg = config_load(files, n, &errs);
	if (cfg == NULL)
		fail_msg("unexpected errors:\n%s", buf_cstr(&errs));
	assert_int_equal(errs.len, 0);
	buf_free(&errs);
	return cfg;
}

static void
assert_list(const struct cfg_list *l, const char *const *want, size_t n)
{
	size_t i;

	assert_int_equal(l->n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(l->items[i].value, want[i]);
}

static void
assert_loc(const struct cfg_loc *loc, const char *file, unsigned line, unsigned col)
{
	if (file == NULL)
		assert_null(loc->file);
	else {
		assert_non_null(loc->file);
		assert_string_equal(loc->file, file);
	}
	assert_int_equal(loc->line, line);
	if (col > 0)
		assert_int_equal(loc->col, col);
}

/* The line of policy/default.yaml holding text, so edits there do not break tests. */
static unsigned
builtin_line(const char *text)
{
	const char *p = strstr(config_default_yaml, text), *q;
	unsigned line = 1;

	assert_non_null(p);
	for (q = config_default_yaml; q < p; q++)
		line += *q == '\n';
	return line;
}

static void
test_builtin_default(void **state)
{
	static const char *const methods[] = {"GET", "HEAD", "OPTIONS"};
	struct config *cfg = load_ok(0);

	assert_int_equal(cfg->nfiles, 0);
	assert_int_equal(cfg->mode, MODE_PRACTICAL);
	assert_loc(&cfg->mode_loc, NULL, builtin_line("  mode:"), 3);
	assert_true(cfg->inherit_global);
	assert_true(cfg->blocklist.n >= 2);
	assert_string_equal(cfg->blocklist.items[0].value, "*.segment.io");
	assert_loc(&cfg->blocklist.items[0].loc, NULL, builtin_line("\"*.segment.io\""), 7);
	assert_loc(&cfg->blocklist.items[1].loc, NULL, builtin_line("\"*.segment.io\"") + 1, 7);
	assert_int_equal(cfg->allowlist.n, 0);
	assert_true(cfg->allowlist.set);
	assert_int_equal(cfg->passthrough.n, 0);
	assert_int_equal(cfg->blocklist_files.n, 0);
	assert_list(&cfg->allow_methods, methods, 3);
	assert_true(cfg->allow_graphql_queries);
	assert_int_equal(cfg->on_violation, VIOLATION_BLOCK);
	assert_true(cfg->fail_closed);
	assert_int_equal(cfg->proxy_port, 18080);
	assert_int_equal(cfg->dns_port, 15353);
	assert_int_equal(cfg->max_graphql_body, 1048576);
	assert_loc(&cfg->max_graphql_body_loc, NULL, 0, 0);
	assert_null(cfg->audit_path);
	config_free(cfg);
}

/* The compiled-in values and default.yaml must agree. */
static void
test_builtin_matches_code(void **state)
{
	struct config *a, *b;
	struct buf errs;

	buf_init(&errs);
	a = config_load(NULL, 0, &errs);
	b = config_load_mem(NULL, "", 0, &errs);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->inherit_global, b->inherit_global);
	assert_int_equal(a->allow_graphql_queries, b->allow_graphql_queries);
	assert_int_equal(a->on_violation, b->on_violation);
	assert_int_equal(a->fail_closed, b->fail_closed);
	assert_int_equal(a->proxy_port, b->proxy_port);
	assert_int_equal(a->dns_port, b->dns_port);
	assert_int_equal(a->max_graphql_body, b->max_graphql_body);
	config_free(a);
	config_free(b);
	buf_free(&errs);
}

/* With a file, the built-in settings stay but its host lists do not. */
static void
test_defaults_under_file(void **state)
{
	static const char *const methods[] = {"GET", "HEAD", "OPTIONS"};
	struct config *cfg = load_ok(1, "good/empty.yaml");

	assert_int_equal(cfg->nfiles, 1);
	assert_string_equal(cfg->files[0], "good/empty.yaml");
	assert_int_equal(cfg->blocklist.n, 0);
	assert_false(cfg->blocklist.set);
	assert_list(&cfg->allow_methods, methods, 3);
	assert_loc(&cfg->allow_methods.items[0].loc, NULL, builtin_line("allowMethods: [GET"), 18);
	assert_int_equal(cfg->proxy_port, 18080);
	assert_loc(&cfg->proxy_port_loc, NULL, builtin_line("proxyPort:"), 3);
	assert_int_equal(cfg->mode, MODE_PRACTICAL);
	assert_null(cfg->mode_loc.file);
	config_free(cfg);
}

static void
test_every_key(void **state)
{
	static const char *const block[] = {"*.tracker.example", "ads.example.net", "203.0.113.7"};
	static const char *const allow[] = {"api.anthropic.com", "*.github.com", "198.18.0.0/15",
	                                    "fd00::/8"};
	static const char *const pass[] = {"pinned.example.org"};
	static const char *const methods[] = {"GET", "HEAD", "PROPFIND", "M-SEARCH"};
	struct config *cfg = load_ok(1, "good/full.yaml");
	char path[4096];

	assert_int_equal(cfg->mode, MODE_STRICT);
	assert_loc(&cfg->mode_loc, "good/full.yaml", 4, 3);
	assert_ptr_equal(cfg->mode_loc.file, cfg->files[0]);
	assert_false(cfg->inherit_global);
	assert_list(&cfg->blocklist, block, 3);
	assert_loc(&cfg->blocklist.items[1].loc, "good/full.yaml", 8, 7);
	assert_list(&cfg->allowlist, allow, 4);
	assert_loc(&cfg->allowlist.items[1].loc, "good/full.yaml", 10, 36);
	assert_list(&cfg->passthrough, pass, 1);
	assert_int_equal(cfg->blocklist_files.n, 2);
	snprintf(path, sizeof path, "%s/good/lists/hosts.txt", CONFIG_DIR);
	assert_string_equal(cfg->blocklist_files.items[0].value, path);
	assert_string_equal(cfg->blocklist_files.items[1].value,
	                    "/etc/opencode-sandbox/adblock.txt");
	assert_list(&cfg->allow_methods, methods, 4);
	assert_false(cfg->allow_graphql_queries);
	assert_int_equal(cfg->on_violation, VIOLATION_FLAG);
	assert_false(cfg->fail_closed);
	assert_int_equal(cfg->proxy_port, 3128);
	assert_int_equal(cfg->dns_port, 5353);
	assert_int_equal(cfg->max_graphql_body, 65536);
	assert_loc(&cfg->max_graphql_body_loc, "good/full.yaml", 22, 3);
	assert_string_equal(cfg->audit_path, "/sandbox/logs/audit \"events\".jsonl");
	config_free(cfg);
}

static void
test_json_seed(void **state)
{
	static const char *const methods[] = {"GET", "HEAD", "OPTIONS", "POST"};
	static const char *const allow[] = {"registry.npmjs.org", "*.pypi.org"};
	struct config *cfg = load_ok(1, "good/sandbox.json");

	assert_list(&cfg->allow_methods, methods, 4);
	assert_loc(&cfg->allow_methods.loc, "good/sandbox.json", 5, 5);
	assert_list(&cfg->allowlist, allow, 2);
	assert_false(cfg->allow_graphql_queries);
	assert_loc(&cfg->allow_graphql_queries_loc, "good/sandbox.json", 6, 5);
	config_free(cfg);
}

/* Seed 003's whole file: every wrapper key checked and stored, paths placed. */
static void
test_wrapper_file(void **state)
{
	static const char *const allow[] = {"api.anthropic.com"};
	static const char *const block[] = {"*.segment.io"};
	static const char *const providers[] = {"anthropic", "openai"};
	static const char *const exclude[] = {"draft-*"};
	struct config *cfg = load_ok(1, "good/opencode-sandbox.yaml");
	const struct config_wrapper *w = &cfg->wrapper;
	char *want;

	assert_list(&cfg->allowlist, allow, 1);
	assert_list(&cfg->blocklist, block, 1);
	assert_string_equal(cfg->audit_path, "/sandbox/logs/audit-events.jsonl");
	assert_string_equal(w->state_config_dir, "~/.config/opencode-sandbox");
	want = xasprintf("%s/good/data", CONFIG_DIR);
	assert_string_equal(w->state_data_dir, want);
	free(want);
	assert_string_equal(w->state_state_dir, "/var/tmp/osb-state");
	assert_string_equal(w->image_name, "localhost/opencode-sandbox:latest");
	assert_loc(&w->image_name_loc, "good/opencode-sandbox.yaml", 9, 3);
	assert_false(w->image_auto_build);
	assert_loc(&w->image_auto_build_loc, "good/opencode-sandbox.yaml", 10, 3);
	assert_string_equal(w->image_base, "debian:bookworm-slim");
	assert_true(w->image_install_tools);
	assert_string_equal(w->project_target, "/workspace");
	assert_true(w->project_readonly);
	assert_int_equal(w->project_extra_mounts.n, 2);
	want = xasprintf("%s/good/docs:/docs:ro", CONFIG_DIR);
	assert_string_equal(w->project_extra_mounts.items[0].value, want);
	free(want);
	assert_string_equal(w->project_extra_mounts.items[1].value, "/srv/data:/data:rw");
	assert_true(w->opencode_mount_host_config);
	assert_false(w->opencode_mount_host_data);
	assert_loc(&w->opencode_mount_host_data_loc, "good/opencode-sandbox.yaml", 20, 3);
	assert_true(w->opencode_generated_config);
	assert_false(w->opencode_autoupdate);
	assert_list(&w->opencode_enabled_providers, providers, 2);
	assert_true(w->opencode_disabled_providers.set);
	assert_int_equal(w->opencode_disabled_providers.n, 0);
	assert_int_equal(w->opencode_permission_edit, CONFIG_PERMISSION_ASK);
	assert_int_equal(w->opencode_permission_bash, CONFIG_PERMISSION_DENY);
	assert_loc(&w->opencode_permission_bash_loc, "good/opencode-sandbox.yaml", 27, 5);
	assert_string_equal(config_permission_name(w->opencode_permission_bash), "deny");
	assert_list(&w->skills_exclude, exclude, 1);
	assert_true(w->skills_expose_project_skills);
	assert_false(w->skills_expose_global_skills);
	assert_string_equal(w->resources_cpus, "1.5");
	assert_string_equal(w->resources_memory, "4g");
	assert_string_equal(w->container_name_prefix, "opencode-sandbox");
	assert_true(w->container_remove);
	assert_false(w->container_debug);
	assert_loc(&w->container_debug_loc, "good/opencode-sandbox.yaml", 41, 3);
	want = xasprintf("%s/good/certs/company-ca.pem", CONFIG_DIR);
	assert_string_equal(w->container_upstream_ca, want);
	free(want);
	assert_int_equal(cfg->nnotes, 0);
	config_free(cfg);
}

/*
 * Seed 000's file with every key: the ones with a meaning here land in
 * the wrapper's fields (docker.image is image.name, verbose is
 * container.debug), the others are understood and noted, never an error.
 */
static void
test_wrapper_seed000(void **state)
{
	struct config *cfg = load_ok(1, "good/sandbox-seed.json");
	struct buf b;
	size_t i;

	assert_string_equal(cfg->wrapper.image_name, "opencode-sandbox:local");
	assert_loc(&cfg->wrapper.image_name_loc, "good/sandbox-seed.json", 15, 5);
	assert_true(cfg->wrapper.container_debug);
	assert_loc(&cfg->wrapper.container_debug_loc, "good/sandbox-seed.json", 13, 3);
	assert_int_equal(cfg->nnotes, 5);
	assert_string_equal(cfg->notes[0].key, "network.observe");
	assert_loc(&cfg->notes[0].loc, "good/sandbox-seed.json", 3, 5);
	assert_string_equal(cfg->notes[1].key, "filesystem.inherit_permissions");
	assert_string_equal(cfg->notes[2].key, "filesystem.allow_write");
	assert_string_equal(cfg->notes[3].key, "filesystem.deny_read");
	assert_string_equal(cfg->notes[4].key, "auto_allow_clean");
	buf_init(&b);
	for (i = 0; i < cfg->nnotes; i++) {
		buf_reset(&b);
		config_note_text(&cfg->notes[i], &b);
		assert_non_null(strstr(buf_cstr(&b), " has no effect here: "));
	}
	buf_free(&b);
	config_free(cfg);
}

/* Wrapper scalars: the later file wins where it sets them; lists replace. */
static void
test_wrapper_merge(void **state)
{
	static const char *const a =
	    "version: 1\nimage: {name: one}\nresources: {cpus: 2, memory: 2g}\n"
	    "opencode: {enabledProviders: [anthropic, openai]}\n";
	static const char *const b =
	    "version: 1\nresources: {memory: 8g}\nopencode: {enabledProviders: [groq]}\n";
	static const char *const groq[] = {"groq"};
	struct config_text t[2];
	struct config *cfg;
	struct buf errs;

	memset(t, 0, sizeof t);
	t[0].file.path = "/etc/a.yaml";
	t[0].data = a;
	t[0].len = strlen(a);
	t[1].file.path = "/etc/b.yaml";
	t[1].data = b;
	t[1].len = strlen(b);
	buf_init(&errs);
	cfg = config_load_texts(t, 2, &errs);
	if (cfg == NULL)
		fail_msg("unexpected errors:\n%s", buf_cstr(&errs));
	buf_free(&errs);
	assert_string_equal(cfg->wrapper.image_name, "one");
	assert_string_equal(cfg->wrapper.resources_cpus, "2");
	assert_loc(&cfg->wrapper.resources_cpus_loc, "/etc/a.yaml", 3, 13);
	assert_string_equal(cfg->wrapper.resources_memory, "8g");
	assert_loc(&cfg->wrapper.resources_memory_loc, "/etc/b.yaml", 2, 13);
	assert_list(&cfg->wrapper.opencode_enabled_providers, groq, 1);
	config_free(cfg);
}

/*
 * An untrusted project file's wrapper keys: a read-only project and no
 * host OpenCode files are taken (they tighten); the image, mounts,
 * resources and the rest are recorded as ignored, apart from egressd's
 * own list of ignored keys.
 */
static void
test_wrapper_untrusted(void **state)
{
	static const char *const global = "version: 1\nimage: {name: trusted}\n"
	                                  "opencode: {mountHostData: true}\n";
	static const char *const project =
	    "version: 1\nimage: {name: evil}\nproject: {readonly: true, "
	    "extraMounts: [\"/:/host\"]}\nopencode: {mountHostConfig: false, "
	    "mountHostData: true}\nresources: {cpus: 64}\n"
	    "filesystem: {allow_write: []}\n";
	struct config_text t[2];
	struct config *cfg;
	struct buf errs;

	memset(t, 0, sizeof t);
	t[0].file.path = "/etc/global.yaml";
	t[0].data = global;
	t[0].len = strlen(global);
	t[1].file.path = "/work/p/.opencode-sandbox.yaml";
	t[1].file.flags = CONFIG_FILE_UNTRUSTED;
	t[1].data = project;
	t[1].len = strlen(project);
	buf_init(&errs);
	cfg = config_load_texts(t, 2, &errs);
	if (cfg == NULL)
		fail_msg("unexpected errors:\n%s", buf_cstr(&errs));
	buf_free(&errs);
	assert_string_equal(cfg->wrapper.image_name, "trusted");
	assert_true(cfg->wrapper.project_readonly);
	assert_false(cfg->wrapper.opencode_mount_host_config);
	assert_true(cfg->wrapper.opencode_mount_host_data);
	assert_null(cfg->wrapper.resources_cpus);
	assert_int_equal(cfg->wrapper.project_extra_mounts.n, 0);
	/* mountHostData: true is what the trusted file set: nothing to report. */
	assert_int_equal(cfg->nwrapper_ignored, 3);
	assert_string_equal(cfg->wrapper_ignored[0].key, "image.name");
	assert_loc(&cfg->wrapper_ignored[0].loc, "/work/p/.opencode-sandbox.yaml", 2, 9);
	assert_string_equal(cfg->wrapper_ignored[1].key, "project.extraMounts");
	assert_string_equal(cfg->wrapper_ignored[2].key, "resources.cpus");
	assert_int_equal(cfg->nignored, 0);
	assert_int_equal(cfg->nnotes, 1);
	config_free(cfg);
}

static void
test_merge_inherit(void **state)
{
	static const char *const block[] = {"*.segment.io", "tracker.example", "ads.example.net"};
	static const char *const allow[] = {"api.anthropic.com", "registry.npmjs.org"};
	static const char *const methods[] = {"OPTIONS"};
	struct config *cfg = load_ok(2, "good/global.yaml", "good/project-inherit.yaml");

	assert_int_equal(cfg->nfiles, 2);
	assert_list(&cfg->blocklist, block, 3);
	assert_ptr_equal(cfg->blocklist.items[0].loc.file, cfg->files[0]);
	assert_loc(&cfg->blocklist.items[1].loc, "good/global.yaml", 6, 7);
	assert_ptr_equal(cfg->blocklist.items[2].loc.file, cfg->files[1]);
	assert_loc(&cfg->blocklist.items[2].loc, "good/project-inherit.yaml", 4, 15);
	assert_list(&cfg->allowlist, allow, 2);
	assert_int_equal(cfg->passthrough.n, 1);
	assert_int_equal(cfg->blocklist_files.n, 1);
	/* allowMethods is a setting: the later file replaces it. */
	assert_list(&cfg->allow_methods, methods, 1);
	assert_loc(&cfg->allow_methods.loc, "good/project-inherit.yaml", 7, 3);
	/* Scalars: the later file wins where it sets them, else the earlier. */
	assert_int_equal(cfg->mode, MODE_STRICT);
	assert_loc(&cfg->mode_loc, "good/project-inherit.yaml", 3, 3);
	assert_int_equal(cfg->proxy_port, 18081);
	assert_loc(&cfg->proxy_port_loc, "good/global.yaml", 12, 3);
	assert_int_equal(cfg->dns_port, 15353);
	assert_null(cfg->dns_port_loc.file);
	assert_string_equal(cfg->audit_path, "/var/log/global.jsonl");
	config_free(cfg);
}

static void
test_merge_replace(void **state)
{
	static const char *const block[] = {"*.segment.io", "tracker.example"};
	static const char *const allow[] = {"registry.npmjs.org"};
	static const char *const methods[] = {"GET", "HEAD"};
	struct config *cfg = load_ok(2, "good/global.yaml", "good/project-replace.yaml");
	char path[4096];

	assert_false(cfg->inherit_global);
	assert_loc(&cfg->inherit_global_loc, "good/project-replace.yaml", 3, 3);
	assert_list(&cfg->allowlist, allow, 1);
	assert_loc(&cfg->allowlist.items[0].loc, "good/project-replace.yaml", 5, 7);
	snprintf(path, sizeof path, "%s/good/project.txt", CONFIG_DIR);
	assert_int_equal(cfg->blocklist_files.n, 1);
	assert_string_equal(cfg->blocklist_files.items[0].value, path);
	/* Lists the project file leaves alone stay as the global file set them. */
	assert_list(&cfg->blocklist, block, 2);
	assert_int_equal(cfg->passthrough.n, 1);
	assert_list(&cfg->allow_methods, methods, 2);
	assert_int_equal(cfg->on_violation, VIOLATION_FLAG);
	config_free(cfg);
}

/* inheritGlobal: false in the global file carries over to project files. */
static void
test_merge_inherited_flag(void **state)
{
	static const char *const allow[] = {"registry.npmjs.org"};
	static const char *const allow2[] = {"api.anthropic.com", "registry.npmjs.org"};
	struct config *cfg;

	cfg = load_ok(2, "good/global-noinherit.yaml", "good/project-inherit.yaml");
	assert_list(&cfg->allowlist, allow, 1);
	assert_false(cfg->inherit_global);
	config_free(cfg);

	/* Reversed: a later file that says nothing inherits true. */
	cfg = load_ok(2, "good/global.yaml", "good/project-inherit.yaml");
	assert_list(&cfg->allowlist, allow2, 2);
	config_free(cfg);
}

static void
test_dump_roundtrip(void **state)
{
	struct config *a, *b;
	struct buf out, out2, errs;
	char tmp[] = "/tmp/test_config_XXXXXX";
	char *files[1] = {tmp};
	size_t i, j;
	FILE *f;
	int fd;

	a = load_ok(3, "good/global.yaml", "good/full.yaml", "good/project-inherit.yaml");
	buf_init(&out);
	config_dump(a, &out);
	assert_non_null(strstr(buf_cstr(&out), "  dnsPort: 5353  # good/full.yaml:21\n"));
	assert_non_null(strstr(buf_cstr(&out), "  failClosed: false  # good/full.yaml:19\n"));
	assert_non_null(strstr(buf_cstr(&out), "  mode: strict  # good/project-inherit.yaml:3\n"));
	assert_non_null(
	    strstr(buf_cstr(&out), "    - \"pinned.example.org\"  # good/full.yaml:12\n"));
	assert_non_null(strstr(buf_cstr(&out), "\"/sandbox/logs/audit \\\"events\\\".jsonl\""));

	assert_true((fd = mkstemp(tmp)) != -1);
	assert_non_null(f = fdopen(fd, "w"));
	assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
	fclose(f);
	buf_init(&errs);
	b = config_load(files, 1, &errs);
	unlink(tmp);
	if (b == NULL)
		fail_msg("dump does not load:\n%s\n%s", buf_cstr(&errs), buf_cstr(&out));
	assert_int_equal(a->mode, b->mode);
	assert_int_equal(a->inherit_global, b->inherit_global);
	assert_int_equal(a->allow_graphql_queries, b->allow_graphql_queries);
	assert_int_equal(a->on_violation, b->on_violation);
	assert_int_equal(a->fail_closed, b->fail_closed);
	assert_int_equal(a->proxy_port, b->proxy_port);
	assert_int_equal(a->dns_port, b->dns_port);
	assert_int_equal(a->max_graphql_body, b->max_graphql_body);
	assert_string_equal(a->audit_path, b->audit_path);
	{
		const struct cfg_list *la[] = {&a->blocklist, &a->allowlist, &a->passthrough,
		                               &a->blocklist_files, &a->allow_methods};
		const struct cfg_list *lb[] = {&b->blocklist, &b->allowlist, &b->passthrough,
		                               &b->blocklist_files, &b->allow_methods};
		for (i = 0; i < EG_NELEM(la); i++) {
			assert_int_equal(la[i]->n, lb[i]->n);
			for (j = 0; j < la[i]->n; j++)
				assert_string_equal(la[i]->items[j].value, lb[i]->items[j].value);
		}
	}
	/* A second dump differs only in the sources. */
	buf_init(&out2);
	config_dump(b, &out2);
	assert_non_null(strstr(buf_cstr(&out2), "  dnsPort: 5353  # /tmp/test_config_"));
	config_free(a);
	config_free(b);
	buf_free(&out);
	buf_free(&out2);
	buf_free(&errs);
}

static void
test_dump_builtin(void **state)
{
	struct config *a, *b;
	struct buf out, errs;

	a = load_ok(0);
	buf_init(&out);
	buf_init(&errs);
	config_dump(a, &out);
	assert_non_null(strstr(buf_cstr(&out), "  mode: practical  # builtin\n"));
	assert_non_null(strstr(buf_cstr(&out), "audit: {}"));
	b = config_load_mem("dump.yaml", out.data, out.len, &errs);
	assert_non_null(b);
	assert_int_equal(b->blocklist.n, a->blocklist.n);
	assert_null(b->audit_path);
	config_free(a);
	config_free(b);
	buf_free(&out);
	buf_free(&errs);
}

static char *
read_all(const char *path)
{
	struct buf b;
	char chunk[4096];
	size_t n;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		fail_msg("cannot open %s", path);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_release(&b);
}

/* Every bad/NAME.yaml fails to load with exactly the messages of NAME.err. */
static void
test_bad_files(void **state)
{
	struct dirent *de;
	struct config *cfg;
	struct buf errs;
	char yaml[512], err[512], *want;
	size_t n = 0, len;
	DIR *d;

	assert_int_equal(chdir(CONFIG_DIR), 0);
	assert_non_null(d = opendir("bad"));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
			continue;
		snprintf(yaml, sizeof yaml, "bad/%s", de->d_name);
		snprintf(err, sizeof err, "bad/%.*s.err", (int)(len - 5), de->d_name);
		want = read_all(err);
		buf_init(&errs);
		{
			char *files[1] = {yaml};
			cfg = config_load(files, 1, &errs);
		}
		if (cfg != NULL)
			fail_msg("%s: loaded without errors", yaml);
		if (strcmp(buf_cstr(&errs), want) != 0)
			fail_msg("%s: got\n%swant\n%s", yaml, buf_cstr(&errs), want);
		free(want);
		buf_free(&errs);
		n++;
	}
	closedir(d);
	assert_true(n >= 30);
}

static void
test_cannot_read(void **state)
{
	char *files[3] = {"good/empty.yaml", "good/missing.yaml", "good"};
	struct config *cfg;
	struct buf errs;

	assert_int_equal(chdir(CONFIG_DIR), 0);
	buf_init(&errs);
	cfg = config_load(files, 3, &errs);
	assert_null(cfg);
	assert_string_equal(buf_cstr(&errs),
	                    "good/missing.yaml: cannot read: No such file or directory\n"
	                    "good: cannot read: Is a directory\n");
	buf_free(&errs);
}

/* Errors of several files come out file by file, each in line order. */
static void
test_errors_across_files(void **state)
{
	char *files[2] = {"bad/port-zero.yaml", "bad/bad-enum.yaml"};
	struct config *cfg;
	struct buf errs;

	assert_int_equal(chdir(CONFIG_DIR), 0);
	buf_init(&errs);
	cfg = config_load(files, 2, &errs);
	assert_null(cfg);
	assert_string_equal(
	    buf_cstr(&errs),
	    "bad/port-zero.yaml:2:14: proxyPort: 0 is out of range (1..65535)\n"
	    "bad/bad-enum.yaml:2:9: mode: expected practical, strict or off, got \"Strict\"\n"
	    "bad/bad-enum.yaml:3:16: onViolation: expected block or flag, got \"warn\"\n");
	buf_free(&errs);
}

/* Load files with their trust flags; fails the test on errors. */
static struct config *
load_trust(const struct config_file *files, size_t n)
{
	struct config *cfg;
	struct buf errs;

	assert_int_equal(chdir(CONFIG_DIR), 0);
	buf_init(&errs);
	cfg = config_load_files(files, n, &errs);
	if (cfg == NULL)
		fail_msg("unexpected errors:\n%s", buf_cstr(&errs));
	buf_free(&errs);
	return cfg;
}

static void
assert_ignored(const struct config *cfg, size_t i, const char *key, const char *entry,
               unsigned line)
{
	assert_true(i < cfg->nignored);
	assert_string_equal(cfg->ignored[i].key, key);
	if (entry == NULL)
		assert_null(cfg->ignored[i].entry);
	else
		assert_string_equal(cfg->ignored[i].entry, entry);
	assert_loc(&cfg->ignored[i].loc, "untrusted/loosen.yaml", line, 0);
}

/*
 * An untrusted (project) file over a global one: every key that would
 * loosen is left out and recorded with its line; blocklist entries and
 * the methods the global list has are taken.
 */
static void
test_untrusted_loosen(void **state)
{
	static const struct config_file files[] = {
	    {"untrusted/global.yaml", 0},
	    {"untrusted/loosen.yaml", CONFIG_FILE_UNTRUSTED},
	};
	static const char *const blocked[] = {"*.tracker.example", "ads.example"};
	static const char *const allowed[] = {"api.example.com"};
	static const char *const methods[] = {"GET"};
	struct config *cfg = load_trust(files, 2);
	struct buf b;

	assert_int_equal(cfg->mode, MODE_STRICT);
	assert_loc(&cfg->mode_loc, "untrusted/global.yaml", 3, 3);
	assert_true(cfg->inherit_global);
	assert_list(&cfg->allowlist, allowed, 1);
	assert_int_equal(cfg->passthrough.n, 0);
	assert_int_equal(cfg->blocklist_files.n, 0);
	assert_list(&cfg->blocklist, blocked, 2);
	assert_loc(&cfg->blocklist.items[1].loc, "untrusted/loosen.yaml", 17, 15);
	assert_list(&cfg->allow_methods, methods, 1);
	assert_loc(&cfg->allow_methods.items[0].loc, "untrusted/loosen.yaml", 9, 18);
	assert_false(cfg->allow_graphql_queries);
	assert_int_equal(cfg->on_violation, VIOLATION_BLOCK);
	assert_true(cfg->fail_closed);
	assert_true(cfg->block_doh_providers);
	assert_int_equal(cfg->proxy_port, 18080);
	assert_int_equal(cfg->dns_port, 15353);
	assert_int_equal(cfg->max_graphql_body, CONFIG_DEFAULT_GRAPHQL_BODY);
	assert_true(cfg->ca_name_constraints);
	assert_int_equal(cfg->ca_lifetime_hours, CONFIG_DEFAULT_CA_HOURS);
	assert_string_equal(cfg->audit_path, "/var/log/egress/audit.jsonl");

	assert_int_equal(cfg->nignored, 16);
	/* In the file's order. */
	assert_ignored(cfg, 0, "network.mode", NULL, 4);
	assert_ignored(cfg, 1, "network.inheritGlobal", NULL, 5);
	assert_ignored(cfg, 2, "network.allowlist", NULL, 6);
	assert_ignored(cfg, 3, "network.passthrough", NULL, 7);
	assert_ignored(cfg, 4, "network.blocklistFiles", NULL, 8);
	assert_ignored(cfg, 5, "network.allowMethods", "POST", 9);
	assert_ignored(cfg, 6, "network.allowGraphqlQueries", NULL, 10);
	assert_ignored(cfg, 7, "network.onViolation", NULL, 11);
	assert_ignored(cfg, 8, "network.failClosed", NULL, 12);
	assert_ignored(cfg, 9, "network.blockDohProviders", NULL, 13);
	assert_ignored(cfg, 10, "network.proxyPort", NULL, 14);
	assert_ignored(cfg, 11, "network.dnsPort", NULL, 15);
	assert_ignored(cfg, 12, "network.maxGraphqlBody", NULL, 16);
	assert_ignored(cfg, 13, "ca.nameConstraints", NULL, 19);
	assert_ignored(cfg, 14, "ca.lifetimeHours", NULL, 20);
	assert_ignored(cfg, 15, "audit.path", NULL, 22);
	buf_init(&b);
	config_ignored_text(&cfg->ignored[5], &b);
	assert_string_equal(
	    buf_cstr(&b), "network.allowMethods entry \"POST\" is ignored: a project file may only "
	                  "tighten the policy, and this would allow a method the trusted "
	                  "allowMethods does not list");
	buf_free(&b);
	config_free(cfg);
}

/* Over a lenient global file, a project file's tightening is all taken. */
static void
test_untrusted_tighten(void **state)
{
	static const struct config_file files[] = {
	    {"untrusted/lenient.yaml", 0},
	    {"untrusted/tighten.yaml", CONFIG_FILE_UNTRUSTED},
	};
	static const char *const methods[] = {"HEAD"};
	static const char *const blocked[] = {"x.example"};
	struct config *cfg = load_trust(files, 2);

	assert_int_equal(cfg->nignored, 0);
	assert_int_equal(cfg->mode, MODE_OFF);
	assert_loc(&cfg->mode_loc, "untrusted/tighten.yaml", 4, 3);
	assert_int_equal(cfg->on_violation, VIOLATION_BLOCK);
	assert_true(cfg->fail_closed);
	assert_loc(&cfg->fail_closed_loc, "untrusted/tighten.yaml", 6, 3);
	assert_true(cfg->block_doh_providers);
	assert_list(&cfg->allow_methods, methods, 1);
	assert_false(cfg->allow_graphql_queries);
	assert_int_equal(cfg->max_graphql_body, 1000);
	assert_list(&cfg->blocklist, blocked, 1);
	assert_int_equal(cfg->allowlist.n, 0);
	assert_true(cfg->ca_name_constraints);
	config_free(cfg);
}

/*
 * Order decides: an untrusted file tightens what came before it, and a
 * trusted file after it (sandbox-init's mode overlay) still sets what it
 * sets. With no trusted file at all, the built-in policy's lists stay.
 */
static void
test_untrusted_order(void **state)
{
	static const struct config_file after[] = {
	    {"untrusted/lenient.yaml", 0},
	    {"untrusted/tighten.yaml", CONFIG_FILE_UNTRUSTED},
	    {"untrusted/lenient.yaml", 0},
	};
	static const struct config_file alone[] = {
	    {"untrusted/loosen.yaml", CONFIG_FILE_UNTRUSTED},
	};
	struct config *cfg;
	struct buf b;

	cfg = load_trust(after, 3);
	assert_int_equal(cfg->mode, MODE_PRACTICAL);
	assert_int_equal(cfg->on_violation, VIOLATION_FLAG);
	config_free(cfg);

	cfg = load_trust(alone, 1);
	assert_int_equal(cfg->mode, MODE_PRACTICAL);
	assert_true(cfg->blocklist.n > 2);
	assert_string_equal(cfg->blocklist.items[0].value, "*.segment.io");
	assert_string_equal(cfg->blocklist.items[cfg->blocklist.n - 1].value, "ads.example");
	assert_int_equal(cfg->allowlist.n, 0);
	assert_true(cfg->nignored > 0);
	buf_init(&b);
	config_dump(cfg, &b);
	assert_non_null(
	    strstr(buf_cstr(&b), "untrusted/loosen.yaml (project file: tightens only)"));
	buf_free(&b);
	config_free(cfg);
}

static int
mode_rank(enum policy_mode m)
{
	return m == MODE_OFF ? 2 : m == MODE_STRICT ? 1 : 0;
}

static void
assert_same_list(const struct cfg_list *a, const struct cfg_list *b)
{
	size_t i;

	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++)
		assert_string_equal(a->items[i].value, b->items[i].value);
}

/*
 * Whatever the project file says (every good/ file, each tried as one),
 * the result is never looser than the trusted configuration alone.
 */
static void
test_untrusted_never_loosens(void **state)
{
	struct config_file files[2] = {{"untrusted/global.yaml", 0}, {NULL, CONFIG_FILE_UNTRUSTED}};
	struct config *base, *cfg;
	struct dirent *e;
	char path[512];
	size_t i, j, n = 0;
	DIR *d;

	base = load_trust(files, 1);
	assert_non_null(d = opendir(CONFIG_DIR "/good"));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "good/%s", e->d_name);
		files[1].path = path;
		cfg = load_trust(files, 2);
		assert_true(mode_rank(cfg->mode) >= mode_rank(base->mode));
		assert_same_list(&cfg->allowlist, &base->allowlist);
		assert_same_list(&cfg->passthrough, &base->passthrough);
		assert_same_list(&cfg->blocklist_files, &base->blocklist_files);
		for (i = 0; i < base->blocklist.n; i++)
			assert_string_equal(cfg->blocklist.items[i].value,
			                    base->blocklist.items[i].value);
		for (i = 0; i < cfg->allow_methods.n; i++) {
			for (j = 0; j < base->allow_methods.n; j++)
				if (strcmp(cfg->allow_methods.items[i].value,
				           base->allow_methods.items[j].value) == 0)
					break;
			assert_true(j < base->allow_methods.n);
		}
		assert_true(cfg->allow_graphql_queries <= base->allow_graphql_queries);
		assert_true(cfg->on_violation == VIOLATION_BLOCK ||
		            base->on_violation == VIOLATION_FLAG);
		assert_true(cfg->fail_closed >= base->fail_closed);
		assert_true(cfg->block_doh_providers >= base->block_doh_providers);
		assert_true(cfg->ca_name_constraints >= base->ca_name_constraints);
		assert_true(cfg->max_graphql_body <= base->max_graphql_body);
		assert_int_equal(cfg->proxy_port, base->proxy_port);
		assert_int_equal(cfg->dns_port, base->dns_port);
		assert_int_equal(cfg->ca_lifetime_hours, base->ca_lifetime_hours);
		assert_string_equal(cfg->audit_path, base->audit_path);
		config_free(cfg);
		n++;
	}
	closedir(d);
	assert_true(n >= 5);
	config_free(base);
}

/* An untrusted file is a regular file: a symbolic link or a FIFO is an error, not a wait. */
static void
test_untrusted_not_regular(void **state)
{
	char dir[] = "/tmp/test_policy_config.XXXXXX", link[64], fifo[64];
	struct config_file f = {link, CONFIG_FILE_UNTRUSTED};
	struct config *cfg;
	struct buf errs, want;

	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof link, "%s/link.yaml", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo.yaml", dir);
	assert_int_equal(symlink(CONFIG_DIR "/untrusted/tighten.yaml", link), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	buf_init(&errs);
	buf_init(&want);
	assert_null(cfg = config_load_files(&f, 1, &errs));
	buf_printf(&want,
	           "%s: cannot read: a project file must be a regular file, not a symbolic link "
	           "or a special file\n",
	           link);
	assert_string_equal(buf_cstr(&errs), buf_cstr(&want));
	f.path = fifo;
	buf_reset(&errs);
	assert_null(cfg = config_load_files(&f, 1, &errs));
	assert_non_null(strstr(buf_cstr(&errs), "must be a regular file"));
	/* Trusted, the link is followed as before. */
	f.path = link;
	f.flags = 0;
	buf_reset(&errs);
	assert_non_null(cfg = config_load_files(&f, 1, &errs));
	assert_int_equal(cfg->mode, MODE_OFF);
	config_free(cfg);
	buf_free(&errs);
	buf_free(&want);
	unlink(link);
	unlink(fifo);
	rmdir(dir);
}

static void
test_mem_cases(void **state)
{
	static const struct {
		const char *text;
		const char *err; /* NULL: loads */
	} cases[] = {
	    {"", NULL},
	    {"---\n", NULL},
	    {"~\n", NULL},
	    {"network:\n", NULL},
	    {"network: {mode: off}\n", NULL},
	    {"network: {mode: \"off\"}\n", NULL},
	    {"42\n", "m.yaml:1:1: the top level must be a mapping of sections (network:, "
	             "audit:, ...), not a scalar\n"},
	    {"network: {proxyPort: -1}\n",
	     "m.yaml:1:22: proxyPort: -1 is out of range (1..65535)\n"},
	    {"network: {proxyPort: 99999999999999999999999}\n",
	     "m.yaml:1:22: proxyPort: 99999999999999999999999 is out of range "
	     "(1..65535)\n"},
	    {"network: {failClosed: True}\n",
	     "m.yaml:1:23: failClosed: expected true or false, got \"True\"\n"},
	    {"network: {mode: !!str strict}\n", NULL},
	    {"audit: {path: \"\\0x\"}\n", "m.yaml:1:15: path \"\\x00x\": contains a NUL byte\n"},
	    {"network: {blocklist: [\"\\u0085x.example\"]}\n",
	     "m.yaml:1:23: blocklist entry \"\\xc2\\x85x.example\": contains a control "
	     "character\n"},
	    {"audit: {path: \"/tmp/a\\u2028b\"}\n",
	     "m.yaml:1:15: path \"/tmp/a\\xe2\\x80\\xa8b\": contains a line separator\n"},
	    {"\"\\xff\": 1\n", "m.yaml:1:1: unknown top-level key \"\\xc3\\xbf\"\n"},
	    {"a: [\n", "m.yaml:2:1: syntax error: did not find expected node content "
	               "(while parsing a flow node at 2:1)\n"},
	};
	struct config *cfg;
	struct buf errs;
	size_t i;

	for (i = 0; i < EG_NELEM(cases); i++) {
		buf_init(&errs);
		cfg = config_load_mem("m.yaml", cases[i].text, strlen(cases[i].text), &errs);
		if (cases[i].err == NULL) {
			if (cfg == NULL)
				fail_msg("case %zu: %s", i, buf_cstr(&errs));
			assert_int_equal(errs.len, 0);
		} else {
			assert_null(cfg);
			if (strcmp(buf_cstr(&errs), cases[i].err) != 0)
				fail_msg("case %zu: got\n%swant\n%s", i, buf_cstr(&errs),
				         cases[i].err);
		}
		config_free(cfg);
		buf_free(&errs);
	}
}

static void
test_limits(void **state)
{
	struct config *cfg;
	struct buf text, errs;
	size_t i;

	/* File size. */
	buf_init(&text);
	buf_init(&errs);
	buf_adds(&text, "network:\n  blocklist:\n");
	while (text.len <= CONFIG_MAX_FILE_SIZE)
		buf_adds(&text, "    - a.example\n");
	cfg = config_load_mem("big.yaml", text.data, text.len, &errs);
	assert_null(cfg);
	assert_string_equal(buf_cstr(&errs), "big.yaml: larger than 4194304 bytes: put long "
	                                     "host lists in blocklistFiles\n");

	/* Node count. */
	buf_reset(&text);
	buf_reset(&errs);
	buf_adds(&text, "state: [");
	for (i = 0; i < CONFIG_MAX_NODES; i++)
		buf_adds(&text, "1,");
	buf_adds(&text, "1]\n");
	cfg = config_load_mem("many.yaml", text.data, text.len, &errs);
	assert_null(cfg);
	assert_non_null(strstr(buf_cstr(&errs), ": more than 100000 nodes"));

	/* Error count: the first CONFIG_MAX_ERRORS are shown, the rest counted. */
	buf_reset(&text);
	buf_reset(&errs);
	for (i = 0; i < CONFIG_MAX_ERRORS + 5; i++)
		buf_printf(&text, "k%zu: 1\n", i);
	cfg = config_load_mem("errs.yaml", text.data, text.len, &errs);
	assert_null(cfg);
	assert_non_null(strstr(buf_cstr(&errs), "errs.yaml:100:1: unknown top-level key \"k99\"\n"
	                                        "errs.yaml: 5 more errors not shown\n"));
	buf_free(&text);
	buf_free(&errs);
}

static void
test_mode_name(void **state)
{
	assert_string_equal(config_mode_name(MODE_PRACTICAL), "practical");
	assert_string_equal(config_mode_name(MODE_STRICT), "strict");
	assert_string_equal(config_mode_name(MODE_OFF), "off");
	config_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_builtin_default),
	    cmocka_unit_test(test_builtin_matches_code),
	    cmocka_unit_test(test_defaults_under_file),
	    cmocka_unit_test(test_every_key),
	    cmocka_unit_test(test_json_seed),
	    cmocka_unit_test(test_wrapper_file),
	    cmocka_unit_test(test_wrapper_seed000),
	    cmocka_unit_test(test_wrapper_merge),
	    cmocka_unit_test(test_wrapper_untrusted),
	    cmocka_unit_test(test_merge_inherit),
	    cmocka_unit_test(test_merge_replace),
	    cmocka_unit_test(test_merge_inherited_flag),
	    cmocka_unit_test(test_dump_roundtrip),
	    cmocka_unit_test(test_dump_builtin),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_cannot_read),
	    cmocka_unit_test(test_errors_across_files),
	    cmocka_unit_test(test_untrusted_loosen),
	    cmocka_unit_test(test_untrusted_tighten),
	    cmocka_unit_test(test_untrusted_order),
	    cmocka_unit_test(test_untrusted_never_loosens),
	    cmocka_unit_test(test_untrusted_not_regular),
	    cmocka_unit_test(test_mem_cases),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_mode_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
