/*
 * policyctl: the policy seen from the command line. `explain` answers what
 * the policy does with one request and which rule of which file decided,
 * through the same policy_decide() call egressd makes (explain.c);
 * `check` validates configuration files and prints the effective result
 * (check.c); `audit` reviews an audit log (summary, filters, follow,
 * suggestions, the hash chain, an HTML page): its command line is
 * review_cmd.c, its work policyctl/review*.c. Here: main, the options
 * explain and check share, and loading the policy they name.
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
	        "                         [--method M] [--body FILE] [--content-type T]\n"
	        "                         [--header 'NAME: VALUE']... [--json] HOST|URL\n"
	        "       policyctl check   [--config FILE]... [--project-config FILE]... [--json]\n"
	        "       policyctl audit   [--json] [--blocked] [--flagged] [--host GLOB]\n"
	        "                         [--since TIME] [--until TIME] [--event TYPE]\n"
	        "                         [--follow] [--suggest] [--verify] [--html FILE] [FILE]\n"
	        "\n"
	        "With no --config the embedded default policy is used. The first --config is\n"
	        "the global file, later ones are project files merged over it. A\n"
	        "--project-config file is one the sandboxed program can write: like egressd,\n"
	        "policyctl takes from it only what tightens the files before it.\n"
	        "audit reads FILE, or stdin when FILE is - or absent (and stdin is not a\n"
	        "terminal). TIME is RFC 3339 (2026-11-29T19:28:45Z), a date, or a\n"
	        "duration ago (30s, 10m, 2h, 1d).\n");
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
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct policyctl c;
	const char *cmd;
	int ch, rc, explain;

	log_init("policyctl", LOG_LVL_WARN);
	if (argc < 2) {
		policyctl_usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		policyctl_usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "audit") == 0)
		return review_cmd_run(argc, argv);
	explain = strcmp(cmd, "explain") == 0;
	if (!explain && strcmp(cmd, "check") != 0) {
		fprintf(stderr, "policyctl: unknown command \"%s\"\n", cmd);
		policyctl_usage(stderr);
		return EXIT_USAGE;
	}
	memset(&c, 0, sizeof c);
	c.method = "GET";
	optind = 2;
	while ((ch = getopt_long(argc, argv, "c:m:b:t:H:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
		case 'P':
			policyctl_add_file(&c, optarg, ch == 'P' ? CONFIG_FILE_UNTRUSTED : 0);
			break;
		case 'j':
			c.json = 1;
			break;
		case 'h':
			policyctl_usage(stdout);
			policyctl_free(&c);
			return 0;
		case 'H':
			if (!explain)
				goto bad_usage;
			if (explain_add_header(&c, optarg) == -1) {
				policyctl_free(&c);
				return EXIT_USAGE;
			}
			break;
		case 'm':
		case 'b':
		case 't':
			if (explain) {
				if (ch == 'm')
					c.method = optarg;
				else if (ch == 'b')
					c.body_path = optarg;
				else
					c.content_type = optarg;
				break;
			}
			/* FALLTHROUGH */
		default:
		bad_usage:
			policyctl_usage(stderr);
			policyctl_free(&c);
			return EXIT_USAGE;
		}
	}
	if ((explain && optind != argc - 1) || (!explain && optind != argc)) {
		fprintf(stderr, "policyctl: %s\n",
		        explain ? "explain needs exactly one HOST or URL"
		                : "check takes no operands");
		policyctl_usage(stderr);
		policyctl_free(&c);
		return EXIT_USAGE;
	}
	rc = explain ? explain_run(&c, argv[optind]) : check_run(&c);
	policyctl_free(&c);
	return rc;
}
