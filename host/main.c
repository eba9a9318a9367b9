/*
 * opencode-sandbox: runs OpenCode in the sandbox image on one project
 * (DESIGN §12, seed 003). The command line is parsed by args.c; the run
 * path is run.c; the wrapper's commands each have a file of their own:
 * doctor.c, init.c, skills.c, policytest.c, cmdconfig.c, image.c and
 * help.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

static const struct {
	const char *word;
	int (*main)(const struct strv *);
} main_commands[] = {
    {"doctor", doctor_main},         {"init", init_main},        {"skills", skills_main},
    {"policy", policytest_main},     {"config", cmdconfig_main}, {"image", image_main},
    {"upgrade", image_upgrade_main}, {"help", help_main},
};

int
main(int argc, char **argv)
{
	struct host_args a;
	struct buf err;
	size_t i;
	int rc = HOST_EXIT_USAGE;

	log_init(HOST_PROG, LOG_LVL_INFO);
	signal(SIGPIPE, SIG_IGN);
	buf_init(&err);
	if (args_parse(&a, argc, argv, &err) == -1) {
		fprintf(stderr, HOST_PROG ": %s (see `" HOST_PROG " help run`)\n", buf_cstr(&err));
		buf_free(&err);
		return HOST_EXIT_USAGE;
	}
	buf_free(&err);
	if (a.cmd == HOST_CMD_RUN)
		rc = run_main(&a);
	else
		for (i = 0; i < EG_NELEM(main_commands); i++)
			if (strcmp(a.word, main_commands[i].word) == 0) {
				if ((rc = help_for(a.word, &a.sub)) == -1)
					rc = main_commands[i].main(&a.sub);
				break;
			}
	args_free(&a);
	return rc;
}
