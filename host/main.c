/*
 * opencode-sandbox: runs OpenCode in the sandbox image on one project
 * (DESIGN §12, seed 003). The command line is parsed by args.c; the run
 * path is run.c; `help` prints the wrapper's own help. The wrapper's other
 * subcommands (doctor, init, skills, policy, image, config, upgrade) are
 * reserved words, answered with a pointer to the documentation until they
 * exist.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

int
main(int argc, char **argv)
{
	struct host_args a;
	struct buf err;
	int rc;

	log_init(HOST_PROG, LOG_LVL_INFO);
	signal(SIGPIPE, SIG_IGN);
	buf_init(&err);
	if (args_parse(&a, argc, argv, &err) == -1) {
		fprintf(stderr, HOST_PROG ": %s (see `" HOST_PROG " help`)\n", buf_cstr(&err));
		buf_free(&err);
		return HOST_EXIT_USAGE;
	}
	buf_free(&err);
	switch (a.cmd) {
	case HOST_CMD_HELP:
		args_usage(stdout, a.word);
		rc = 0;
		break;
	case HOST_CMD_OTHER:
		fprintf(stderr,
		        HOST_PROG " %s: not available in this version (this version runs OpenCode: "
		                  "`" HOST_PROG " [PROJECT]`); see docs/opencode-sandbox.md\n",
		        a.word);
		rc = HOST_EXIT_USAGE;
		break;
	default:
		rc = run_main(&a);
		break;
	}
	args_free(&a);
	return rc;
}
