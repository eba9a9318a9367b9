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

#define A(field) offsetof(struct host_args, field)

/* The run's flags; their help is the run command's in docs/man/opencode-sandbox.1.md. */
const struct args_opt args_run_opts[] = {
    {"config", ARGS_LIST, A(configs), "FILE"},
    {"runtime", ARGS_STRING, A(runtime), "NAME"},
    {"image", ARGS_STRING, A(image), "NAME"},
    {"network-mode", ARGS_STRING, A(mode), "MODE"},
    {"readonly", ARGS_BOOL, A(readonly), NULL},
    {"cpus", ARGS_STRING, A(cpus), "N"},
    {"memory", ARGS_STRING, A(memory), "SIZE"},
    {"allow", ARGS_LIST, A(allow), "HOST"},
    {"upstream-ca", ARGS_STRING, A(upstream_ca), "FILE"},
    {"no-providers", ARGS_BOOL, A(no_providers), NULL},
    {"accept-policy-changes", ARGS_BOOL, A(accept_changes), NULL},
    {"dry-run", ARGS_BOOL, A(dry_run), NULL},
    {"print-command", ARGS_BOOL, A(print_command), NULL},
    {"keep", ARGS_BOOL, A(keep), NULL},
    {"debug", ARGS_BOOL, A(debug), NULL},
};
const size_t args_run_nopts = EG_NELEM(args_run_opts);

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

static const struct args_opt *
args_find(const struct args_opt *opts, size_t nopts, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < nopts; i++)
		if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
			return &opts[i];
	return NULL;
}

/*
 * Take one option of opts at argv[*i] (with its value, inline after '='
 * or the next argument) into base; 1 when it was one, 0 when it is not
 * one of opts, -1 on a usage error.
 */
static int
args_take(const struct args_opt *opts, size_t nopts, void *base, int argc, char *const *argv,
          int *i, struct buf *err)
{
	const char *arg = argv[*i], *eq, *value = NULL;
	const struct args_opt *f;
	size_t len;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
		return 0;
	eq = strchr(arg + 2, '=');
	len = eq != NULL ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	if ((f = args_find(opts, nopts, arg + 2, len)) == NULL)
		return 0;
	if (f->kind == ARGS_BOOL) {
		if (eq != NULL) {
			buf_printf(err, "--%s takes no value", f->name);
			return -1;
		}
		*(int *)((char *)base + f->off) = 1;
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
		strv_add((struct strv *)((char *)base + f->off), value);
	else
		*(const char **)((char *)base + f->off) = value;
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
 * A wrapper command (doctor, init, ...) is the first word that is not a
 * run flag: its arguments are every other word, the flags before it
 * included, for the command to parse with its own options (so that
 * `--runtime docker doctor` works and `--dry-run doctor` is refused).
 */
static void
args_command(struct host_args *a, int argc, char **argv, int at)
{
	int k;

	a->cmd = HOST_CMD_SUB;
	a->word = xstrdup(argv[at]);
	for (k = 1; k < argc; k++)
		if (k != at)
			strv_add(&a->sub, argv[k]);
}

/*
 * Parse the whole command line into a: the command, the project, the
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
		if ((r = args_take(args_run_opts, args_run_nopts, a, argc, argv, &i, err)) == -1)
			goto err;
		if (r == 1)
			continue;
		if (rest.n == 0 && args_is_reserved(argv[i]) && strcmp(argv[i], "run") != 0) {
			strv_free(&rest);
			args_free(a);
			memset(a, 0, sizeof *a);
			args_command(a, argc, argv, i);
			return 0;
		}
		strv_add(&rest, argv[i]);
	}
	if (args_check(a, err) == -1)
		goto err;
	a->cmd = HOST_CMD_RUN;
	if (rest.n > 0 && strcmp(rest.v[0], "run") == 0) {
		if (rest.n == 1) {
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
	/* a->project points into rest: keep its string. */
	if (a->project != NULL)
		a->project = xstrdup(a->project);
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
	strv_free(&a->sub);
}

/*
 * A command's own arguments: its options (opts, stored into base) anywhere
 * before "--", and its positional words into pos. An option it does not
 * have is an error naming the command, so that a run flag given to a
 * command is never silently dropped.
 */
int
args_options(const struct args_opt *opts, size_t nopts, void *base, const struct strv *args,
             struct strv *pos, struct buf *err)
{
	char **argv = args->v;
	int argc = (int)args->n, i, r, dash = 0;

	for (i = 0; i < argc; i++) {
		if (!dash && strcmp(argv[i], "--") == 0) {
			dash = 1;
			continue;
		}
		if (!dash) {
			if ((r = args_take(opts, nopts, base, argc, argv, &i, err)) == -1)
				return -1;
			if (r == 1)
				continue;
			if (argv[i][0] == '-' && argv[i][1] != '\0') {
				buf_printf(err, "unknown option %s", argv[i]);
				return -1;
			}
		}
		strv_add(pos, argv[i]);
	}
	return 0;
}
