/*
 * `opencode-sandbox help [COMMAND]`: the wrapper's own help. The text is
 * made at build time by scripts/clidoc from docs/man/opencode-sandbox.1.md,
 * the one source of this help, the man page and the shell completions, so
 * that the three cannot say different things. Root --help stays
 * OpenCode's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

/* The topic of a command ("skills import"), or NULL. */
const struct help_topic *
help_find(const char *name)
{
	size_t i;

	for (i = 0; i < help_ntopics; i++)
		if (strcmp(help_topics[i].name, name) == 0)
			return &help_topics[i];
	return NULL;
}

/* After a usage error of a command: where its help is. */
void
help_hint(const char *cmd, const char *err)
{
	fprintf(stderr, HOST_PROG " %s: %s (see `" HOST_PROG " help %s`)\n", cmd, err, cmd);
}

/*
 * `opencode-sandbox COMMAND ... --help`: the command's help, or -1 when
 * args hold no --help or -h before "--". The topic is the command and
 * its first word, when that names one (`image build --help`).
 */
int
help_for(const char *word, const struct strv *args)
{
	const struct help_topic *t = NULL;
	char *name;
	size_t i;
	int asked = 0;

	for (i = 0; i < args->n && strcmp(args->v[i], "--") != 0; i++)
		if (strcmp(args->v[i], "--help") == 0 || strcmp(args->v[i], "-h") == 0)
			asked = 1;
	if (!asked || strcmp(word, "help") == 0)
		return -1;
	for (i = 0; i < args->n && t == NULL; i++)
		if (args->v[i][0] != '-') {
			name = xasprintf("%s %s", word, args->v[i]);
			t = help_find(name);
			free(name);
			break;
		}
	if (t == NULL)
		t = help_find(word);
	fputs(t != NULL ? t->text : help_topics[0].text, stdout);
	return 0;
}

int
help_main(const struct strv *args)
{
	const struct help_topic *t;
	struct buf name;
	size_t i;

	buf_init(&name);
	for (i = 0; i < args->n; i++) {
		if (args->v[i][0] == '-') {
			fprintf(stderr, HOST_PROG " help: unknown option %s\n", args->v[i]);
			buf_free(&name);
			return HOST_EXIT_USAGE;
		}
		buf_printf(&name, "%s%s", i > 0 ? " " : "", args->v[i]);
	}
	if ((t = help_find(buf_cstr(&name))) == NULL) {
		fprintf(stderr,
		        HOST_PROG " help: no command \"%s\"; the commands:", buf_cstr(&name));
		for (i = 1; i < help_ntopics; i++)
			fprintf(stderr, "%s %s", i > 1 ? "," : "", help_topics[i].name);
		fputc('\n', stderr);
		buf_free(&name);
		return HOST_EXIT_USAGE;
	}
	fputs(t->text, stdout);
	buf_free(&name);
	return 0;
}
