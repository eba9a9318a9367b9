/*
 * sandbox-init's command line and configuration: the options, their
 * defaults, and the trusted and project configuration files merged into
 * the mode, failClosed and the audit path the launcher acts on.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

void
opts_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: sandbox-init [--config FILE]... [--mode practical|strict|off]\n"
	    "                    [--user NAME|UID] [--egress-user NAME|UID] [--egressd PATH]\n"
	    "                    [--egressd-arg ARG]...\n"
	    "                    [--ready-timeout S] [--run-dir DIR] [--log-dir DIR]\n"
	    "                    [--trust-store FILE|none]\n"
	    "                    [--resolv-conf FILE|none] [--global-config FILE|none]\n"
	    "                    [--project-config FILE|none]... [--proxy-port N]\n"
	    "                    [--transparent-port N] [--dns-port N] [--home DIR]\n"
	    "                    [--upstream-ca FILE] [--audit-owner UID:GID]\n"
	    "                    [--serve-port N]... [-v] -- CMD [ARG]...\n"
	    "       sandbox-init [options] --selftest [--json] [--probe-addr A] [--probe-addr6 A]\n"
	    "                    [--probe-host NAME] [--probe-doh URL] [--probe-https URL]\n");
}

static int
opts_port(const char *s, uint16_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

/* "UID:GID", both decimal. */
static int
opts_ids(const char *s, uid_t *uid, gid_t *gid)
{
	unsigned long u, g;
	char *end;

	errno = 0;
	u = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != ':' || errno != 0 || u >= UINT_MAX)
		return -1;
	s = end + 1;
	g = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || g >= UINT_MAX)
		return -1;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

static const char *
opts_none(const char *s)
{
	return strcmp(s, "none") == 0 ? NULL : s;
}

int
opts_parse(struct launcher *l, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"mode", required_argument, NULL, 'm'},
	    {"user", required_argument, NULL, 'u'},
	    {"egress-user", required_argument, NULL, 'e'},
	    {"egressd", required_argument, NULL, 'E'},
	    {"egressd-arg", required_argument, NULL, 'A'},
	    {"ready-timeout", required_argument, NULL, 't'},
	    {"run-dir", required_argument, NULL, 'r'},
	    {"log-dir", required_argument, NULL, 9},
	    {"trust-store", required_argument, NULL, 'T'},
	    {"resolv-conf", required_argument, NULL, 'R'},
	    {"global-config", required_argument, NULL, 'G'},
	    {"project-config", required_argument, NULL, 'P'},
	    {"proxy-port", required_argument, NULL, 1},
	    {"transparent-port", required_argument, NULL, 2},
	    {"dns-port", required_argument, NULL, 3},
	    {"selftest", no_argument, NULL, 'S'},
	    {"json", no_argument, NULL, 'j'},
	    {"probe-addr", required_argument, NULL, 4},
	    {"probe-addr6", required_argument, NULL, 5},
	    {"probe-host", required_argument, NULL, 6},
	    {"probe-doh", required_argument, NULL, 7},
	    {"probe-https", required_argument, NULL, 8},
	    {"home", required_argument, NULL, 10},
	    {"upstream-ca", required_argument, NULL, 11},
	    {"audit-owner", required_argument, NULL, 12},
	    {"serve-port", required_argument, NULL, 13},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint16_t port;
	char *end;
	long v;
	int ch;

	while ((ch = getopt_long(argc, argv, "+c:m:u:vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			if (l->nflag_configs == LAUNCH_MAX_CONFIG) {
				fprintf(stderr, "sandbox-init: too many --config files\n");
				return -1;
			}
			l->flag_configs[l->nflag_configs++] = optarg;
			break;
		case 'm':
			if (strcmp(optarg, "practical") != 0 && strcmp(optarg, "strict") != 0 &&
			    strcmp(optarg, "off") != 0) {
				fprintf(stderr,
				        "sandbox-init: --mode %s: expected practical, strict "
				        "or off\n",
				        optarg);
				return -1;
			}
			l->mode_flag = optarg;
			break;
		case 'u':
			l->user_spec = optarg;
			break;
		case 'e':
			l->egress_spec = optarg;
			break;
		case 'E':
			l->egressd_flag = optarg;
			break;
		case 'A':
			if (l->nextra_args == LAUNCH_MAX_CONFIG) {
				fprintf(stderr, "sandbox-init: too many --egressd-arg\n");
				return -1;
			}
			l->extra_args[l->nextra_args++] = optarg;
			break;
		case 't':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 || v > 600) {
				fprintf(stderr,
				        "sandbox-init: --ready-timeout %s: 1 to 600 seconds\n",
				        optarg);
				return -1;
			}
			l->ready_timeout_ms = (int)v * 1000;
			break;
		case 'r':
			l->run_dir = optarg;
			break;
		case 9:
			l->log_dir = optarg;
			break;
		case 'T':
			l->trust_store = opts_none(optarg);
			break;
		case 'R':
			l->resolv_conf = opts_none(optarg);
			break;
		case 'G':
			l->global_config = opts_none(optarg);
			break;
		case 'P':
			/* The first one replaces the default; "none" clears the list. */
			l->project_config = NULL;
			if (opts_none(optarg) == NULL) {
				l->nproject_configs = 0;
				break;
			}
			if (l->nproject_configs == LAUNCH_MAX_CONFIG) {
				fprintf(stderr, "sandbox-init: too many --project-config files\n");
				return -1;
			}
			l->project_configs[l->nproject_configs++] = optarg;
			break;
		case 10:
			if (optarg[0] != '/') {
				fprintf(stderr, "sandbox-init: --home %s: not an absolute path\n",
				        optarg);
				return -1;
			}
			l->home = optarg;
			break;
		case 11:
			l->upstream_ca = optarg;
			break;
		case 12:
			if (opts_ids(optarg, &l->audit_uid, &l->audit_gid) == -1) {
				fprintf(stderr,
				        "sandbox-init: --audit-owner %s: expected UID:GID\n",
				        optarg);
				return -1;
			}
			l->audit_owner_set = 1;
			break;
		case 13:
			if (opts_port(optarg, &port) == -1 || l->nserve == NFT_MAX_SERVE) {
				fprintf(stderr,
				        "sandbox-init: --serve-port %s: a port, at most %d\n",
				        optarg, NFT_MAX_SERVE);
				return -1;
			}
			l->serve_ports[l->nserve++] = port;
			break;
		case 1:
		case 2:
		case 3:
			if (opts_port(optarg, &port) == -1) {
				fprintf(stderr, "sandbox-init: bad port %s\n", optarg);
				return -1;
			}
			if (ch == 1)
				l->eg.proxy_port = port;
			else if (ch == 2)
				l->eg.transparent_port = port;
			else
				l->eg.dns_port = port;
			break;
		case 'S':
			l->selftest = 1;
			break;
		case 'j':
			l->st.json = 1;
			break;
		case 4:
			l->st.addr = optarg;
			break;
		case 5:
			l->st.addr6 = optarg;
			break;
		case 6:
			l->st.host = optarg;
			break;
		case 7:
			l->st.doh_url = optarg;
			break;
		case 8:
			l->st.https = optarg;
			break;
		case 'v':
			log_verbosity = LOG_LVL_DEBUG;
			break;
		case 'h':
			opts_usage(stdout);
			exit(0);
		default:
			opts_usage(stderr);
			return -1;
		}
	}
	l->cmd = argv + optind;
	if (!l->selftest && l->cmd[0] == NULL) {
		fprintf(stderr, "sandbox-init: no command to run (-- CMD [ARG]...)\n");
		opts_usage(stderr);
		return -1;
	}
	return 0;
}

void
opts_defaults(struct launcher *l)
{
	int pid1 = getpid() == 1;

	memset(l, 0, sizeof *l);
	l->global_config = LAUNCH_GLOBAL_CONFIG;
	l->project_config = LAUNCH_PROJECT_CONFIG;
	l->user_spec = "opencode";
	l->egress_spec = "egress";
	l->run_dir = LAUNCH_RUN_DIR;
	l->log_dir = LAUNCH_LOG_DIR;
	/* Only PID 1 of a container owns the system files it rewrites. */
	l->trust_store = pid1 ? "/etc/ssl/certs/ca-certificates.crt" : NULL;
	l->resolv_conf = pid1 ? "/etc/resolv.conf" : NULL;
	l->ready_timeout_ms = 10000;
	l->eg.proxy_port = 0;
	l->eg.transparent_port = 18081;
	l->eg.dns_port = 53;
	l->st.addr = "1.1.1.1";
	l->st.addr6 = "2606:4700:4700::1111";
	l->st.host = "api.segment.io";
	l->st.doh_url =
	    "https://cloudflare-dns.com/dns-query?dns=AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE";
	l->st.https = "https://example.com/";
	l->payload = -1;
	l->eg.pid = -1;
}

/*
 * One load, in the order egressd gets the files: the global file and each
 * --config (trusted), then the project file. The project file lives in the
 * workspace the payload writes to, so it is loaded untrusted: it may only
 * tighten what the trusted files set (a stricter mode, failClosed on, more
 * blocked hosts, ...), never choose where the audit log goes or which
 * ports egressd listens on. What it set and was ignored, egressd reports
 * and audits; sandbox-init acts on the merged result.
 */
int
opts_config(struct launcher *l)
{
	struct config *cfg;
	struct buf errs;
	size_t i;

	if (l->global_config != NULL && access(l->global_config, F_OK) == 0)
		l->files[l->nfiles++].path = l->global_config;
	for (i = 0; i < l->nflag_configs; i++)
		l->files[l->nfiles++].path = l->flag_configs[i];
	if (l->project_config != NULL && access(l->project_config, F_OK) == 0) {
		l->files[l->nfiles].path = l->project_config;
		l->files[l->nfiles++].flags = CONFIG_FILE_UNTRUSTED;
	}
	for (i = 0; i < l->nproject_configs; i++)
		if (access(l->project_configs[i], F_OK) == 0) {
			l->files[l->nfiles].path = l->project_configs[i];
			l->files[l->nfiles++].flags = CONFIG_FILE_UNTRUSTED;
		}
	buf_init(&errs);
	if ((cfg = config_load_files(l->files, l->nfiles, &errs)) == NULL) {
		fputs(buf_cstr(&errs), stderr);
		buf_free(&errs);
		return -1;
	}
	buf_free(&errs);
	l->mode = cfg->mode;
	l->fail_closed = cfg->fail_closed;
	if (cfg->audit_path != NULL)
		l->audit_path = xstrdup(cfg->audit_path);
	if (l->eg.proxy_port == 0)
		l->eg.proxy_port = (uint16_t)cfg->proxy_port;
	config_free(cfg);
	return 0;
}
