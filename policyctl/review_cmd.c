/*
 * The command line of `policyctl audit`: filters (--blocked, --flagged,
 * --host, --since, --until, --event), one mode (--follow, --suggest,
 * --verify, --html) and the input, then the review itself (review*.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "policyctl.h"
#include "review.h"

/* `policyctl audit`: set by SIGINT/SIGTERM to end --follow. */
static volatile sig_atomic_t review_cmd_stop;

static void
review_cmd_signal_cb(int sig)
{
	(void)sig;
	review_cmd_stop = 1;
}

static const char *const review_cmd_event_types[] = {"http", "connect", "tls",    "tcp",
                                                     "dns",  "packet",  "daemon", "policy"};

/* Append one --event value (a type, or several separated by commas). */
static int
review_cmd_events(struct buf *types, const char *arg)
{
	const char *p = arg;
	size_t n, i;

	for (;;) {
		n = strcspn(p, ",");
		for (i = 0; i < EG_NELEM(review_cmd_event_types); i++)
			if (strlen(review_cmd_event_types[i]) == n &&
			    strncmp(review_cmd_event_types[i], p, n) == 0)
				break;
		if (i == EG_NELEM(review_cmd_event_types)) {
			fprintf(
			    stderr,
			    "policyctl: --event %s: unknown type (http, connect, tls, tcp, dns, "
			    "daemon, policy)\n",
			    arg);
			return -1;
		}
		if (types->len > 0)
			buf_addc(types, ',');
		buf_add(types, p, n);
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}

static int
review_cmd_time(const char *opt, const char *arg, int64_t *ms)
{
	struct timespec now;
	const char *err;

	clock_gettime(CLOCK_REALTIME, &now);
	err = review_time_parse(arg, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, ms);
	if (err != NULL) {
		fprintf(stderr, "policyctl: %s %s: %s\n", opt, arg, err);
		return -1;
	}
	return 0;
}

/* The mode and input checks of audit's command line; -1 after saying why. */
static int
review_cmd_check_args(int modes, int filters, int json, int html, const char *verb)
{
	if (modes > 1) {
		fprintf(stderr, "policyctl: --follow, --suggest, --verify and --html exclude each "
		                "other\n");
		return -1;
	}
	if (filters && strcmp(verb, "verify") == 0) {
		fprintf(stderr, "policyctl: --verify checks the whole file and takes no filter\n");
		return -1;
	}
	if (json && (html || strcmp(verb, "suggest") == 0)) {
		fprintf(stderr, "policyctl: --json does not apply to --%s\n", html ? "html" : verb);
		return -1;
	}
	return 0;
}

static int
review_cmd_dispatch(const char *verb, const char *path, const char *html, struct review_opts *o)
{
	struct sigaction sa;
	FILE *in, *out = NULL;
	char **names;
	size_t n;
	int rc;

	if (strcmp(verb, "follow") == 0) {
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = review_cmd_signal_cb;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		return review_follow(path, stdout, o, &review_cmd_stop) == -1 ? EXIT_USAGE : 0;
	}
	if (strcmp(verb, "verify") == 0 && strcmp(path, "-") != 0) {
		/* The rotated files before it too, each named in the report. */
		names = logfile_set(path, &n);
		rc = review_verify_set(names, n, stdout, o);
		logfile_set_free(names, n);
		if (fflush(stdout) != 0)
			rc = -1;
		return rc == -1 ? EXIT_USAGE : rc;
	}
	if (strcmp(path, "-") == 0)
		in = stdin;
	else if ((in = review_set_open(path, stderr)) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	if (html != NULL && (out = strcmp(html, "-") == 0 ? stdout : fopen(html, "w")) == NULL) {
		fprintf(stderr, "policyctl: %s: %s\n", html, strerror(errno));
		if (in != stdin)
			fclose(in);
		return EXIT_USAGE;
	}
	if (html != NULL)
		rc = review_html(in, out, o);
	else if (strcmp(verb, "verify") == 0)
		rc = review_verify(in, stdout, o);
	else if (strcmp(verb, "suggest") == 0)
		rc = review_suggest(in, stdout, o);
	else
		rc = review_summary(in, stdout, o);
	if (in != stdin)
		fclose(in);
	if (out != NULL && out != stdout && fclose(out) != 0) {
		fprintf(stderr, "policyctl: %s: %s\n", html, strerror(errno));
		rc = -1;
	}
	if (fflush(stdout) != 0)
		rc = -1;
	return rc == -1 ? EXIT_USAGE : rc;
}

int
review_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"blocked", no_argument, NULL, 'B'},
	    {"flagged", no_argument, NULL, 'F'},
	    {"host", required_argument, NULL, 'H'},
	    {"since", required_argument, NULL, 's'},
	    {"until", required_argument, NULL, 'u'},
	    {"event", required_argument, NULL, 'e'},
	    {"follow", no_argument, NULL, 'f'},
	    {"suggest", no_argument, NULL, 'S'},
	    {"verify", no_argument, NULL, 'V'},
	    {"html", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct review_opts o;
	struct buf types;
	const char *verb = "summary", *html = NULL, *path, *nc;
	int ch, modes = 0, filters = 0, rc = EXIT_USAGE;

	review_opts_init(&o);
	buf_init(&types);
	optind = 2;
	while ((ch = getopt_long(argc, argv, "jBFH:s:u:e:fSVo:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			o.json = 1;
			break;
		case 'B':
		case 'F':
			o.filter.actions |= ch == 'B' ? REVIEW_ONLY_BLOCK : REVIEW_ONLY_FLAG;
			filters = 1;
			break;
		case 'H':
			o.filter.host_glob = optarg;
			filters = 1;
			break;
		case 's':
		case 'u':
			if (review_cmd_time(ch == 's' ? "--since" : "--until", optarg,
			                    ch == 's' ? &o.filter.since_ms : &o.filter.until_ms) ==
			    -1)
				goto out;
			filters = 1;
			break;
		case 'e':
			if (review_cmd_events(&types, optarg) == -1)
				goto out;
			filters = 1;
			break;
		case 'f':
		case 'S':
		case 'V':
			verb = ch == 'f' ? "follow" : ch == 'S' ? "suggest" : "verify";
			modes++;
			break;
		case 'o':
			html = optarg;
			verb = "html";
			modes++;
			break;
		case 'h':
			policyctl_usage(stdout);
			rc = 0;
			goto out;
		default:
			policyctl_usage(stderr);
			goto out;
		}
	}
	if (review_cmd_check_args(modes, filters, o.json, html != NULL, verb) == -1)
		goto out;
	if (optind < argc - 1) {
		fprintf(stderr, "policyctl: audit takes at most one FILE\n");
		goto out;
	}
	path = optind < argc ? argv[optind] : "-";
	if (optind == argc && isatty(STDIN_FILENO)) {
		fprintf(stderr, "policyctl: audit needs a FILE (or - for stdin)\n");
		policyctl_usage(stderr);
		goto out;
	}
	o.name = path;
	if (types.len > 0)
		o.filter.events = buf_cstr(&types);
	nc = getenv("NO_COLOR");
	o.color = isatty(STDOUT_FILENO) && (nc == NULL || *nc == '\0');
	rc = review_cmd_dispatch(verb, path, html, &o);
out:
	buf_free(&types);
	return rc;
}
