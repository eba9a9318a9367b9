/*
 * Unit tests for host/redact.c: which variable names hold secrets (KEY,
 * TOKEN, SECRET, PASSWORD, AUTH in any case), their values replaced in a
 * printed command wherever a NAME=VALUE word is, and words quoted so that
 * a shell reads them back and a terminal shows no control characters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"

static void
test_secret_names(void **state)
{
	static const char *const yes[] = {"ANTHROPIC_API_KEY",     "GITHUB_TOKEN",
	                                  "client_secret",         "DB_PASSWORD",
	                                  "OPENCODE_AUTH_CONTENT", "keychain"};
	static const char *const no[] = {"TERM", "OPENCODE_CONFIG", "HOME", "PATH", "MODE"};
	size_t i;

	for (i = 0; i < EG_NELEM(yes); i++)
		assert_true(redact_is_secret_name(yes[i], strlen(yes[i])));
	for (i = 0; i < EG_NELEM(no); i++)
		assert_false(redact_is_secret_name(no[i], strlen(no[i])));
}

static void
test_argv(void **state)
{
	struct strv a;
	struct buf b;

	memset(&a, 0, sizeof a);
	strv_add(&a, "container");
	strv_add(&a, "--env");
	strv_add(&a, "ANTHROPIC_API_KEY=sk-ant-123");
	strv_add(&a, "--env");
	strv_add(&a, "TERM=xterm");
	strv_add(&a, "--env");
	strv_add(&a, "GITHUB_TOKEN");
	strv_add(&a, "--mount");
	strv_add(&a, "type=bind,source=/home/u/token dir/auth.json,target=/x,readonly");
	strv_add(&a, "summarize it's");
	strv_add(&a, "bell\x07");
	buf_init(&b);
	redact_argv(&a, &b);
	assert_string_equal(buf_cstr(&b),
	                    "container --env 'ANTHROPIC_API_KEY=<redacted>' --env TERM=xterm --env "
	                    "GITHUB_TOKEN --mount 'type=bind,source=/home/u/token "
	                    "dir/auth.json,target=/x,readonly' 'summarize it'\\''s' $'bell\\x07'");
	assert_null(strstr(buf_cstr(&b), "sk-ant"));
	buf_free(&b);
	strv_free(&a);
}

static void
test_word(void **state)
{
	struct buf b;

	buf_init(&b);
	redact_word("", &b);
	assert_string_equal(buf_cstr(&b), "''");
	buf_reset(&b);
	redact_word("/usr/bin/podman", &b);
	assert_string_equal(buf_cstr(&b), "/usr/bin/podman");
	buf_reset(&b);
	redact_word("a\\b'c\n", &b);
	assert_string_equal(buf_cstr(&b), "$'a\\x5cb\\x27c\\x0a'");
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_secret_names),
	    cmocka_unit_test(test_argv),
	    cmocka_unit_test(test_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
