/*
 * Unit tests for host/providers.c: JSON with comments and trailing commas
 * (OpenCode's config) made plain without touching strings, and the
 * providers a run allowlists from a host's OpenCode config, auth.json and
 * environment, narrowed by opencode.enabledProviders/disabledProviders,
 * with OpenCode's own models when nothing is set up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static char dir[] = "/tmp/test-host-providers.XXXXXX";

static void
test_jsonc(void **state)
{
	static const char in[] = "{\n  // a comment\n  \"a\": \"http://x//y\", /* block */\n"
	                         "  \"b\": [1, 2,],\n  \"c\": \"q\\\"//\",\n}\n";
	char *out = providers_strip_jsonc(in, strlen(in));

	assert_null(strstr(out, "comment"));
	assert_null(strstr(out, "block"));
	assert_non_null(strstr(out, "\"http://x//y\""));
	assert_non_null(strstr(out, "[1, 2]"));
	assert_non_null(strstr(out, "\"q\\\"//\""));
	assert_null(strstr(out, ",\n}"));
	free(out);
	out = providers_strip_jsonc("/* unterminated", 15);
	free(out);
	out = providers_strip_jsonc("\"unterminated \\", 15);
	free(out);
}

static void
write_file(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static struct config *
config_text(const char *yaml)
{
	struct config_text t;
	struct config *cfg;
	struct buf errs;

	memset(&t, 0, sizeof t);
	t.file.path = "/x/config.yaml";
	t.data = yaml;
	t.len = strlen(yaml);
	buf_init(&errs);
	cfg = config_load_texts(&t, 1, &errs);
	assert_non_null(cfg);
	buf_free(&errs);
	return cfg;
}

static void
test_find(void **state)
{
	struct config *cfg = config_text("version: 1\n");
	struct providers p;

	unsetenv("ANTHROPIC_API_KEY");
	/* Nothing set up: OpenCode's own models. */
	providers_find(&p, cfg, "/nonexistent", "/nonexistent");
	assert_int_equal(p.names.n, 1);
	assert_string_equal(p.names.v[0], "opencode");
	assert_string_equal(p.hosts.v[0], "opencode.ai");
	assert_non_null(strstr(p.yaml, "- \"opencode.ai\""));
	providers_free(&p);

	write_file("opencode.json", "{\"provider\": {\"mine\": {\"options\": "
	                            "{\"baseURL\": \"https://LLM.example.com:8443/v1\"}}, "
	                            "\"nohost\": {}}, \"model\": \"openai/gpt\"}");
	write_file("auth.json", "{\"anthropic\": {\"type\": \"api\", \"key\": \"k\"}, "
	                        "\"../evil\": {}}");
	setenv("ANTHROPIC_API_KEY", "sk", 1);
	providers_find(&p, cfg, dir, dir);
	assert_int_equal(p.names.n, 3);
	assert_string_equal(p.names.v[0], "mine");
	assert_string_equal(p.hosts.v[0], "llm.example.com");
	assert_string_equal(p.names.v[1], "openai");
	assert_string_equal(p.hosts.v[1], "api.openai.com");
	assert_string_equal(p.names.v[2], "anthropic");
	assert_int_equal(p.notes.n, 1);
	assert_non_null(strstr(p.notes.v[0], "nohost: no provider profile"));
	assert_int_equal(p.env.n, 1);
	assert_string_equal(p.env.v[0], "ANTHROPIC_API_KEY");
	providers_free(&p);
	config_free(cfg);

	cfg = config_text("version: 1\nopencode:\n  disabledProviders: [openai]\n"
	                  "  mountHostData: false\n");
	unsetenv("ANTHROPIC_API_KEY");
	providers_find(&p, cfg, dir, dir);
	assert_int_equal(p.names.n, 1);
	assert_string_equal(p.names.v[0], "mine");
	providers_free(&p);
	config_free(cfg);
}

static int
setup(void **state)
{
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char *p = xasprintf("%s/opencode.json", dir);

	unlink(p);
	free(p);
	p = xasprintf("%s/auth.json", dir);
	unlink(p);
	free(p);
	rmdir(dir);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jsonc),
	    cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
