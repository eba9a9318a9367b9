/*
 * policyctl: the policy seen from the command line. `explain` answers what
 * the policy does with one request and which rule of which file decided,
 * through the same policy_decide() call egressd makes, from files or from
 * the running egressd (explain.c, live.c); `status` and `reload` ask the
 * running egressd (status.c); `check` validates configuration files and
 * prints the effective result (check.c); `audit` reviews an audit log
 * (summary, filters, follow, suggestions, the hash chain, an HTML page):
 * its command line is review_cmd.c, its work policyctl/review*.c. Here:
 * main, the options the commands share, and loading the policy they name.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policyctl.h"

void
policyctl_usage(FILE *f)
{
	fprintf(f,
	        "usage: policyctl explain [--config FILE]... [--project-config FILE]...\n"
	        "                         [--control SOCKET] [--method M] [--body FILE]\n"
	        "                         [--content-type T] [--header 'NAME: VALUE']... [--json]\n"
	        "                         HOST|URL\n"
	        "       policyctl check   [--config FILE]... [--project-config FILE]... [--json]\n"
	        "       policyctl status  [--control SOCKET] [--json|--prometheus]\n"
	        "       policyctl reload  [--control SOCKET]\n"
	        "       policyctl audit   [--json] [--blocked] [--flagged] [--host GLOB]\n"
	        "                         [--since TIME] [--until TIME] [--event TYPE]\n"
	        "                         [--follow] [--suggest] [--verify] [--html FILE] [FILE]\n"
	        "\n"
	        "explain answers from the --config files when given; else from the running\n"
	        "egressd, asked over its control socket (--control, else $EGRESSD_CONTROL, else\n"
	        "%s) with the addresses the name resolves to; else, when no\n"
	        "socket is there, from the embedded default policy. Its `policy:` line says\n"
	        "which. The first --config is the global file, later ones are project files\n"
	        "merged over it. A --project-config file is one the sandboxed program can\n"
	        "write: like egressd, policyctl takes from it only what tightens the files\n"
	        "before it. status and reload ask the running egressd; reload is for root and\n"
	        "egressd's own user.\n"
	        "audit reads FILE, or stdin when FILE is - or absent (and stdin is not a\n"
	        "terminal). TIME is RFC 3339 (2026-11-29T19:28:45Z), a date, or a\n"
	        "duration ago (30s, 10m, 2h, 1d).\n",
	        LIVE_DEFAULT_PATH);
}

static void
policyctl_add_file(struct policyctl *c, const char *path, int flags)
{
	c->files = xreallocarray(c->files, c->nfiles + 1, sizeof *c->files);
	c->files[c->nfiles].path = xstrdup(path);
	c->files[c->nfiles++].flags = flags;
}

static void
policyctl_free(struct policyctl *c)
{
	size_t i;

	for (i = 0; i < c->nfiles; i++)
		free((char *)c->files[i].path);
	free(c->files);
	for (i = 0; i < c->nheaders; i++)
		free(c->headers[i]);
}

/* Print the error lines of a failed load, one per line, then a count. */
void
policyctl_errors(const char *text)
{
	const char *p;
	size_t n = 0;

	fputs(text, stderr);
	for (p = text; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	fprintf(stderr, "policyctl: %zu error%s in configuration\n", n, n == 1 ? "" : "s");
}

/* What a project file set and was not taken, as egressd warns of it. */
void
policyctl_ignored_warn(const struct config *cfg)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&b);
		config_ignored_text(&cfg->ignored[i], &b);
		fprintf(stderr, "policyctl: warning: %s:%u:%u: %s\n", cfg->ignored[i].loc.file,
		        cfg->ignored[i].loc.line, cfg->ignored[i].loc.col, buf_cstr(&b));
	}
	buf_free(&b);
}

/* Load and compile the policy the files describe; NULL after printing why. */
struct policy *
policyctl_load(struct policyctl *c, struct buf *errs)
{
	struct config *cfg;

	if ((cfg = config_load_files(c->files, c->nfiles, errs)) == NULL)
		return NULL;
	return policy_new(cfg, errs);
}

void
policyctl_json_key(struct buf *b, const char *key, int first)
{
	if (!first)
		buf_addc(b, ',');
	json_escape_str(b, key);
	buf_addc(b, ':');
}

enum policyctl_cmd {
	POLICYCTL_EXPLAIN,
	POLICYCTL_CHECK,
	POLICYCTL_STATUS,
	POLICYCTL_RELOAD,
};

/* Which options each command takes, by the option's character. */
static int
policyctl_takes(enum policyctl_cmd cmd, int ch)
{
	switch (cmd) {
	case POLICYCTL_EXPLAIN:
		return strchr("cPmbtHjC", ch) != NULL;
	case POLICYCTL_CHECK:
		return strchr("cPj", ch) != NULL;
	case POLICYCTL_STATUS:
		return strchr("jCp", ch) != NULL;
	case POLICYCTL_RELOAD:
		return ch == 'C';
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"project-config", required_argument, NULL, 'P'},
	    {"method", required_argument, NULL, 'm'},
	    {"body", required_argument, NULL, 'b'},
	    {"content-type", required_argument, NULL, 't'},
	    {"header", required_argument, NULL, 'H'},
	    {"json", no_argument, NULL, 'j'},
	    {"control", required_argument, NULL, 'C'},
	    {"prometheus", no_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *const names[] = {
	    [POLICYCTL_EXPLAIN] = "explain",
	    [POLICYCTL_CHECK] = "check",
	    [POLICYCTL_STATUS] = "status",
	    [POLICYCTL_RELOAD] = "reload",
	};
	enum policyctl_cmd cmd;
	struct policyctl c;
	size_t i;
	int ch, rc;

	log_init("policyctl", LOG_LVL_WARN);
	if (argc < 2) {
		policyctl_usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		policyctl_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "audit") == 0)
		return review_cmd_run(argc, argv);
	for (i = 0; i < EG_NELEM(names) && strcmp(argv[1], names[i]) != 0; i++)
		;
	if (i == EG_NELEM(names)) {
		fprintf(stderr, "policyctl: unknown command \"%s\"\n", argv[1]);
		policyctl_usage(stderr);
		return EXIT_USAGE;
	}
	cmd = (enum policyctl_cmd)i;
	memset(&c, 0, sizeof c);
	c.method = "GET";
	optind = 2;
	while ((ch = getopt_long(argc, argv, "c:m:b:t:H:jh", opts, NULL)) != -1) {
		if (ch == 'h') {
			policyctl_usage(stdout);
			policyctl_free(&c);
			return 0;
		}
		if (!policyctl_takes(cmd, ch))
			goto bad_usage;
		switch (ch) {
		case 'c':
		case 'P':
			policyctl_add_file(&c, optarg, ch == 'P' ? CONFIG_FILE_UNTRUSTED : 0);
			break;
		case 'j':
			c.json = 1;
			break;
		case 'p':
			c.prometheus = 1;
			break;
		case 'C':
			c.control = optarg;
			break;
		case 'H':
			if (explain_add_header(&c, optarg) == -1) {
				policyctl_free(&c);
				return EXIT_USAGE;
			}
			break;
		case 'm':
			c.method = optarg;
			break;
		case 'b':
			c.body_path = optarg;
			break;
		case 't':
			c.content_type = optarg;
			break;
		}
	}
	if (c.json && c.prometheus) {
		fprintf(stderr, "policyctl: status takes --json or --prometheus, not both\n");
		goto bad_usage;
	}
	if ((cmd == POLICYCTL_EXPLAIN && optind != argc - 1) ||
	    (cmd != POLICYCTL_EXPLAIN && optind != argc)) {
		if (cmd == POLICYCTL_EXPLAIN)
			fprintf(stderr, "policyctl: explain needs exactly one HOST or URL\n");
		else
			fprintf(stderr, "policyctl: %s takes no operands\n", names[cmd]);
		goto bad_usage;
	}
	switch (cmd) {
	case POLICYCTL_EXPLAIN:
		rc = explain_run(&c, argv[optind]);
		break;
	case POLICYCTL_CHECK:
		rc = check_run(&c);
		break;
	case POLICYCTL_STATUS:
		rc = status_run(&c);
		break;
	case POLICYCTL_RELOAD:
		rc = status_reload(&c);
		break;
	}
	policyctl_free(&c);
	return rc;
bad_usage:
	policyctl_usage(stderr);
	policyctl_free(&c);
	return EXIT_USAGE;
}
