/*
 * Unit tests for host/help.c and the help topics scripts/clidoc makes from
 * docs/man/opencode-sandbox.1.md, the one source of the help, the man page
 * and the completions: each command's options there are exactly the
 * options its parser takes (so that neither says what the other does not),
 * every command has a topic, and `help_for` finds the topic of
 * `COMMAND [WORD] --help`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"

static const struct {
	const char *topic;
	const struct args_opt *opts;
	const size_t *n;
} tables[] = {
    {"run", args_run_opts, &args_run_nopts},
    {"doctor", doctor_opts, &doctor_opts_n},
    {"init", init_opts, &init_opts_n},
    {"skills import", skills_import_opts, &skills_import_opts_n},
    {"skills list", skills_list_opts, &skills_list_opts_n},
    {"policy test", policytest_opts, &policytest_opts_n},
    {"config path", cmdconfig_path_opts, &cmdconfig_path_opts_n},
    {"config show", cmdconfig_show_opts, &cmdconfig_show_opts_n},
    {"image build", image_build_opts, &image_build_opts_n},
    {"upgrade", image_upgrade_opts, &image_upgrade_opts_n},
};

static void
test_options_match(void **state)
{
	const struct help_topic *t;
	char name[64];
	size_t i, j, k, documented;

	for (i = 0; i < EG_NELEM(tables); i++) {
		if ((t = help_find(tables[i].topic)) == NULL)
			fail_msg("no help topic %s", tables[i].topic);
		for (documented = 0; t->options[documented] != NULL; documented++)
			;
		for (j = 0; j < *tables[i].n; j++) {
			snprintf(name, sizeof name, "--%s", tables[i].opts[j].name);
			for (k = 0; k < documented && strcmp(t->options[k], name) != 0; k++)
				;
			if (k == documented)
				fail_msg("%s: %s is parsed but not documented", tables[i].topic,
				         name);
		}
		if (documented != *tables[i].n)
			fail_msg("%s: %zu options documented, %zu parsed", tables[i].topic,
			         documented, *tables[i].n);
	}
}

static void
test_topics(void **state)
{
	static const char *const commands[] = {
	    "",
	    "run",
	    "doctor",
	    "init",
	    "skills",
	    "skills import",
	    "skills list",
	    "policy test",
	    "config",
	    "config path",
	    "config show",
	    "image",
	    "image build",
	    "upgrade",
	    "help",
	};
	size_t i;

	for (i = 0; i < EG_NELEM(commands); i++)
		if (help_find(commands[i]) == NULL)
			fail_msg("no help topic \"%s\"", commands[i]);
	assert_non_null(strstr(help_find("")->text, "usage: opencode-sandbox [PROJECT]"));
	assert_non_null(strstr(help_find("skills")->text, "skills list"));
	assert_null(help_find("nope"));
}

static void
test_help_for(void **state)
{
	struct strv a;

	memset(&a, 0, sizeof a);
	strv_add(&a, "import");
	assert_int_equal(help_for("skills", &a), -1);
	strv_add(&a, "--");
	strv_add(&a, "--help");
	assert_int_equal(help_for("skills", &a), -1); /* after --, it is not an option */
	strv_free(&a);
	strv_add(&a, "build");
	strv_add(&a, "-h");
	assert_int_equal(help_for("image", &a), 0);
	strv_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_options_match),
	    cmocka_unit_test(test_topics),
	    cmocka_unit_test(test_help_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
