/*
 * The command line (seed 003 §6.3). Everything that is not a wrapper
 * subcommand or a wrapper flag belongs to OpenCode, so that
 * `alias opencode=opencode-sandbox` keeps OpenCode's own command lines
 * working: root --help and -h are OpenCode's; the first positional word
 * that is an existing directory is the project; `run` followed by nothing
 * or by a directory is the wrapper's run, and `run` followed by anything
 * else is OpenCode's own run. Wrapper flags are recognised anywhere before
 * `--` and taken out, so none reaches the container runtime or OpenCode by
 * accident; after `--` every argument is OpenCode's, as written.
 */
#include <sys/stat.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

enum args_kind {
	ARGS_BOOL,   /* int */
	ARGS_STRING, /* const char *, the last one given wins */
	ARGS_LIST,   /* struct strv, repeatable */
};

struct args_flag {
	const char *name;
	enum args_kind kind;
	size_t off;
	const char *value; /* what the value is, for the help; NULL: none */
	const char *help;
};

#define A(field) offsetof(struct host_args, field)

static const struct args_flag args_flags[] = {
    {"config", ARGS_LIST, A(configs), "FILE", "a trusted configuration file (repeatable)"},
    {"runtime", ARGS_STRING, A(runtime), "NAME", "podman, docker or container"},
    {"image", ARGS_STRING, A(image), "NAME", "the sandbox image"},
    {"network-mode", ARGS_STRING, A(mode), "MODE", "practical, strict or off"},
    {"readonly", ARGS_BOOL, A(readonly), NULL, "mount the project read-only"},
    {"cpus", ARGS_STRING, A(cpus), "N", "CPUs for the container"},
    {"memory", ARGS_STRING, A(memory), "SIZE", "memory for the container (4g, 512m)"},
    {"allow", ARGS_LIST, A(allow), "HOST", "allowlist a host for this run (repeatable)"},
    {"upstream-ca", ARGS_STRING, A(upstream_ca), "FILE",
     "a CA certificate (PEM) upstreams may be signed by"},
    {"no-providers", ARGS_BOOL, A(no_providers), NULL, "do not allowlist the model providers"},
    {"accept-policy-changes", ARGS_BOOL, A(accept_changes), NULL,
     "accept the project's changed policy files"},
    {"dry-run", ARGS_BOOL, A(dry_run), NULL, "print the plan; run nothing"},
    {"print-command", ARGS_BOOL, A(print_command), NULL,
     "print the container command (secrets redacted)"},
    {"keep", ARGS_BOOL, A(keep), NULL, "keep the container and the run's scratch files"},
    {"debug", ARGS_BOOL, A(debug), NULL, "verbose sandbox-init and egressd"},
};

#undef A

/* The wrapper's subcommands (seed 003 §6.3): reserved words as the first word. */
static const char *const args_reserved[] = {
    "doctor", "init", "run", "skills", "policy", "image", "config", "upgrade", "help",
};

static int
args_is_reserved(const char *w)
{
	size_t i;

	for (i = 0; i < EG_NELEM(args_reserved); i++)
		if (strcmp(w, args_reserved[i]) == 0)
			return 1;
	return 0;
}

static int
args_is_dir(const char *p)
{
	struct stat st;

	return p[0] != '\0' && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static const struct args_flag *
args_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < EG_NELEM(args_flags); i++)
		if (strlen(args_flags[i].name) == len && memcmp(args_flags[i].name, name, len) == 0)
			return &args_flags[i];
	return NULL;
}

/*
 * Take one wrapper flag at argv[*i] (with its value, inline after '=' or
 * the next argument); 1 when it was one, 0 when it is OpenCode's, -1 on a
 * usage error.
 */
static int
args_flag(struct host_args *a, int argc, char **argv, int *i, struct buf *err)
{
	const char *arg = argv[*i], *eq, *value = NULL;
	const struct args_flag *f;
	size_t len;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
		return 0;
	eq = strchr(arg + 2, '=');
	len = eq != NULL ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	if ((f = args_find(arg + 2, len)) == NULL)
		return 0;
	if (f->kind == ARGS_BOOL) {
		if (eq != NULL) {
			buf_printf(err, "--%s takes no value", f->name);
			return -1;
		}
		*(int *)((char *)a + f->off) = 1;
		return 1;
	}
	if (eq != NULL)
		value = eq + 1;
	else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
		value = argv[++*i];
	if (value == NULL || value[0] == '\0') {
		buf_printf(err, "--%s needs a value", f->name);
		return -1;
	}
	if (f->kind == ARGS_LIST)
		strv_add((struct strv *)((char *)a + f->off), value);
	else
		*(const char **)((char *)a + f->off) = value;
	return 1;
}

static int
args_check(const struct host_args *a, struct buf *err)
{
	if (a->mode != NULL && strcmp(a->mode, "practical") != 0 &&
	    strcmp(a->mode, "strict") != 0 && strcmp(a->mode, "off") != 0) {
		buf_printf(err, "--network-mode %s: expected practical, strict or off", a->mode);
		return -1;
	}
	return 0;
}

/* Everything from start of rest, then every argument after "--". */
static void
args_opencode(struct host_args *a, const struct strv *rest, size_t start, size_t skip, int argc,
              char **argv, int dash)
{
	size_t j;
	int k;

	for (j = start; j < rest->n; j++)
		if (j != skip)
			strv_add(&a->oc, rest->v[j]);
	if (dash >= 0)
		for (k = dash + 1; k < argc; k++)
			strv_add(&a->oc, argv[k]);
}

/*
 * Parse the whole command line into a: the subcommand, the project, the
 * wrapper's flags and OpenCode's arguments. 0, or -1 with the reason in err.
 */
int
args_parse(struct host_args *a, int argc, char **argv, struct buf *err)
{
	struct strv rest;
	size_t j, first;
	int i, dash = -1, r;

	memset(a, 0, sizeof *a);
	memset(&rest, 0, sizeof rest);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			dash = i;
			break;
		}
		if ((r = args_flag(a, argc, argv, &i, err)) == -1)
			goto err;
		if (r == 0)
			strv_add(&rest, argv[i]);
	}
	if (args_check(a, err) == -1)
		goto err;
	a->cmd = HOST_CMD_RUN;
	if (rest.n > 0 && args_is_reserved(rest.v[0])) {
		if (strcmp(rest.v[0], "help") == 0) {
			a->cmd = HOST_CMD_HELP;
			a->word = rest.n > 1 ? rest.v[1] : NULL;
		} else if (strcmp(rest.v[0], "run") != 0) {
			a->cmd = HOST_CMD_OTHER;
			a->word = rest.v[0];
		} else if (rest.n == 1) {
			args_opencode(a, &rest, 1, (size_t)-1, argc, argv, dash);
		} else if (args_is_dir(rest.v[1])) {
			a->project = rest.v[1];
			args_opencode(a, &rest, 2, (size_t)-1, argc, argv, dash);
		} else {
			/* OpenCode's own run: `opencode run "summarize this repo"`. */
			args_opencode(a, &rest, 0, (size_t)-1, argc, argv, dash);
		}
		goto done;
	}
	for (first = 0; first < rest.n && rest.v[first][0] == '-'; first++)
		;
	if (first < rest.n && args_is_dir(rest.v[first])) {
		a->project = rest.v[first];
		args_opencode(a, &rest, 0, first, argc, argv, dash);
	} else
		args_opencode(a, &rest, 0, (size_t)-1, argc, argv, dash);
done:
	/* a->project and a->word point into rest: keep their strings. */
	if (a->project != NULL)
		a->project = xstrdup(a->project);
	if (a->word != NULL)
		a->word = xstrdup(a->word);
	for (j = 0; j < rest.n; j++)
		free(rest.v[j]);
	free(rest.v);
	return 0;
err:
	strv_free(&rest);
	return -1;
}

void
args_free(struct host_args *a)
{
	free((char *)a->project);
	free((char *)a->word);
	strv_free(&a->oc);
	strv_free(&a->configs);
	strv_free(&a->allow);
}

/* The wrapper's help: `opencode-sandbox help [run]`. */
void
args_usage(FILE *f, const char *topic)
{
	size_t i;

	if (topic != NULL && strcmp(topic, "run") != 0 && args_is_reserved(topic)) {
		fprintf(f,
		        HOST_PROG " %s: not available in this version; see "
		                  "docs/opencode-sandbox.md\n",
		        topic);
		return;
	}
	fprintf(f, "usage: " HOST_PROG " [PROJECT] [FLAGS] [OPENCODE-ARGS...]\n"
	           "       " HOST_PROG " run [PROJECT] [FLAGS] [OPENCODE-ARGS...]\n"
	           "       " HOST_PROG " [FLAGS] [PROJECT] -- [OPENCODE-ARGS...]\n"
	           "       " HOST_PROG " help [run]\n"
	           "\n"
	           "Runs OpenCode in the sandbox image on PROJECT (default: the working\n"
	           "directory), mounted at /workspace, with every request it and its tools\n"
	           "make decided by egressd. Arguments that are not the wrapper's go to\n"
	           "OpenCode: `" HOST_PROG " --help` is OpenCode's help, `" HOST_PROG
	           " run \"summarize\"`\n"
	           "is OpenCode's run. Wrapper flags (anywhere before --):\n\n");
	for (i = 0; i < EG_NELEM(args_flags); i++) {
		char flag[48];

		snprintf(flag, sizeof flag, "--%s%s%s", args_flags[i].name,
		         args_flags[i].value != NULL ? " " : "",
		         args_flags[i].value != NULL ? args_flags[i].value : "");
		fprintf(f, "  %-28s%s\n", flag, args_flags[i].help);
	}
	fprintf(
	    f,
	    "\nFiles: $XDG_CONFIG_HOME/opencode-sandbox/config.yaml (global), the nearest\n"
	    ".opencode-sandbox.yaml from the project up, <project>/.opencode/sandbox.json.\n"
	    "State: $XDG_STATE_HOME/opencode-sandbox/projects/. See docs/opencode-sandbox.md.\n");
}
