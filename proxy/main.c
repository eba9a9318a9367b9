/*
 * egressd: the egress proxy's program. Reads the command line, loads the
 * policy (or only checks it, --check), opens the audit log, and sets up
 * on a runtime (egressd.c) what it serves: the resolver and its DNS
 * sockets, the CA and TLS contexts, the proxy and transparent listeners
 * and the NFLOG reader, each bound here or inherited from a launcher.
 * Then it says READY and runs the loop until a signal ends it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "proxy.h"
#include "resolver.h"
#include "tls.h"

#define EXIT_CONFIG 2

/*
 * Under a memory limit (a cgroup's), the limits egressd is not given are
 * fitted to it: a quarter for bytes held in connection buffers, half for
 * connections at MAIN_CONN_COST each (an intercepted TLS connection in
 * its handshake, with its upstream), a sixteenth for the DNS cache, and
 * the rest for egressd itself.
 */
#define MAIN_CONN_COST (48 * 1024)
#define MAIN_CONNS_MIN 64

/* The command line's options; those without a letter numbered past any character. */
enum main_opt {
	OPT_CONFIG = 'c',
	OPT_PROXY = 'p',
	OPT_AUDIT = 'a',
	OPT_UPSTREAM_DNS = 'u',
	OPT_READY_FD = 'r',
	OPT_VERBOSE = 'v',
	OPT_HELP = 'h',
	OPT_PROJECT_CONFIG = 256,
	OPT_NO_BANNERS,
	OPT_DNS,
	OPT_CHECK,
	OPT_ALLOW_NON_LOOPBACK,
	OPT_MAX_CONNS,
	OPT_HEADER_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_CONNECT_TIMEOUT,
	OPT_RESPONSE_TIMEOUT,
	OPT_GRACE,
	OPT_CA_OUT,
	OPT_CA_BUNDLE_OUT,
	OPT_CA_CERT,
	OPT_CA_KEY,
	OPT_UPSTREAM_CA,
	OPT_SYSTEM_CA,
	OPT_TRANSPARENT,
	OPT_CONTROL,
	OPT_METRICS,
	OPT_MAX_BUFFERED,
};

static const struct option main_longopts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"project-config", required_argument, NULL, OPT_PROJECT_CONFIG},
    {"no-banners", no_argument, NULL, OPT_NO_BANNERS},
    {"proxy", required_argument, NULL, OPT_PROXY},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"upstream-dns", required_argument, NULL, OPT_UPSTREAM_DNS},
    {"dns", required_argument, NULL, OPT_DNS},
    {"ready-fd", required_argument, NULL, OPT_READY_FD},
    {"check", no_argument, NULL, OPT_CHECK},
    {"allow-non-loopback", no_argument, NULL, OPT_ALLOW_NON_LOOPBACK},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"max-buffered", required_argument, NULL, OPT_MAX_BUFFERED},
    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"response-timeout", required_argument, NULL, OPT_RESPONSE_TIMEOUT},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"ca-out", required_argument, NULL, OPT_CA_OUT},
    {"ca-bundle-out", required_argument, NULL, OPT_CA_BUNDLE_OUT},
    {"ca-cert", required_argument, NULL, OPT_CA_CERT},
    {"ca-key", required_argument, NULL, OPT_CA_KEY},
    {"upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
    {"transparent", required_argument, NULL, OPT_TRANSPARENT},
    {"system-ca", required_argument, NULL, OPT_SYSTEM_CA},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* What the command line says: the runtime's configuration and the set-up around it. */
struct main_opts {
	struct egressd_conf conf;
	struct config_file *files; /* conf.files, owned here */
	const char *proxy;
	const char *dns;
	const char *audit;
	char **upstream_dns;
	size_t nupstream_dns;
	int ready_fd;
	int check;
	int allow_non_loopback;
	struct tls_opts tls;
	const char *transparent[2];
	int ntransparent;
	int no_banners;
	const char *control; /* --control PATH */
	const char *metrics; /* --metrics ADDR:PORT */
	int set_max_conns;   /* given on the command line: not fitted to a memory limit */
	int set_max_buffered;
	uint64_t mem_limit; /* the cgroup's memory limit; 0: none */
};

static void
main_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: egressd [--config FILE]... [--project-config FILE]... [--proxy ADDR:PORT]\n"
	    "               [--dns ADDR:PORT]\n"
	    "               [--transparent ADDR:PORT]... [--audit FILE|-]\n"
	    "               [--upstream-dns ADDR[:PORT]]... [--ready-fd N] [--check]\n"
	    "               [--ca-out FILE] [--ca-bundle-out FILE] [--ca-cert FILE --ca-key FILE]\n"
	    "               [--upstream-ca FILE] [--system-ca FILE]\n"
	    "               [--control PATH] [--metrics ADDR:PORT]\n"
	    "               [--allow-non-loopback] [--max-conns N] [--max-buffered SIZE]\n"
	    "               [--header-timeout S]\n"
	    "               [--idle-timeout S] [--connect-timeout S] [--response-timeout S]\n"
	    "               [--grace S] [--no-banners] [-v]\n");
}

static int
main_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A size: bytes, or a number with K, M or G (KiB, MiB, GiB); 4 KiB to 1 TiB. */
static int
main_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		mult = 1ULL << 10;
	else if (*end == 'M' || *end == 'm')
		mult = 1ULL << 20;
	else if (*end == 'G' || *end == 'g')
		mult = 1ULL << 30;
	if (mult > 1)
		end++;
	if (*end != '\0' || v > (1ULL << 40) / mult || v * mult < 4096)
		return -1;
	*out = (size_t)(v * mult);
	return 0;
}

/* The limit an option sets, or NULL for an option that sets none. */
static unsigned *
main_opt_limit(struct egressd_limits *lim, int opt)
{
	switch (opt) {
	case OPT_MAX_CONNS:
		return &lim->max_conns;
	case OPT_HEADER_TIMEOUT:
		return &lim->header_timeout;
	case OPT_IDLE_TIMEOUT:
		return &lim->idle_timeout;
	case OPT_CONNECT_TIMEOUT:
		return &lim->connect_timeout;
	case OPT_RESPONSE_TIMEOUT:
		return &lim->response_timeout;
	case OPT_GRACE:
		return &lim->grace;
	}
	return NULL;
}

/* The TLS file an option names, or NULL for an option that names none. */
static const char **
main_opt_tls(struct tls_opts *tls, int opt)
{
	switch (opt) {
	case OPT_CA_OUT:
		return &tls->ca_out;
	case OPT_CA_BUNDLE_OUT:
		return &tls->ca_bundle_out;
	case OPT_CA_CERT:
		return &tls->ca_cert;
	case OPT_CA_KEY:
		return &tls->ca_key;
	case OPT_UPSTREAM_CA:
		return &tls->upstream_ca;
	case OPT_SYSTEM_CA:
		return &tls->system_ca;
	}
	return NULL;
}

/* Every other option; -1 after saying what is wrong. */
static int
main_opt(struct main_opts *o, int opt)
{
	unsigned v;

	switch (opt) {
	case OPT_CONFIG:
	case OPT_PROJECT_CONFIG:
		o->files = xreallocarray(o->files, o->conf.nfiles + 1, sizeof *o->files);
		o->files[o->conf.nfiles].path = optarg;
		o->files[o->conf.nfiles++].flags =
		    opt == OPT_PROJECT_CONFIG ? CONFIG_FILE_UNTRUSTED : 0;
		o->conf.files = o->files;
		return 0;
	case OPT_NO_BANNERS:
		o->no_banners = 1;
		return 0;
	case OPT_PROXY:
		o->proxy = optarg;
		return 0;
	case OPT_AUDIT:
		o->audit = optarg;
		return 0;
	case OPT_DNS:
		o->dns = optarg;
		return 0;
	case OPT_CONTROL:
		o->control = optarg;
		return 0;
	case OPT_METRICS:
		o->metrics = optarg;
		return 0;
	case OPT_MAX_BUFFERED:
		if (main_parse_size(optarg, &o->conf.lim.max_buffered) == -1) {
			fprintf(stderr,
			        "egressd: --max-buffered %s: expected a size from 4K to 1024G "
			        "(bytes, or with K, M or G)\n",
			        optarg);
			return -1;
		}
		o->set_max_buffered = 1;
		return 0;
	case OPT_UPSTREAM_DNS:
		o->upstream_dns =
		    xreallocarray(o->upstream_dns, o->nupstream_dns + 1, sizeof *o->upstream_dns);
		o->upstream_dns[o->nupstream_dns++] = optarg;
		return 0;
	case OPT_READY_FD:
		if (main_parse_uint(optarg, 0, 65535, &v) == -1 || fcntl((int)v, F_GETFD) == -1) {
			fprintf(stderr, "egressd: --ready-fd %s: not an open descriptor\n", optarg);
			return -1;
		}
		o->ready_fd = (int)v;
		return 0;
	case OPT_CHECK:
		o->check = 1;
		return 0;
	case OPT_ALLOW_NON_LOOPBACK:
		o->allow_non_loopback = 1;
		return 0;
	case OPT_VERBOSE:
		log_verbosity = LOG_LVL_DEBUG;
		return 0;
	case OPT_HELP:
		main_usage(stdout);
		exit(0);
	case OPT_TRANSPARENT:
		if (o->ntransparent == 2) {
			fprintf(stderr, "egressd: --transparent: at most two (IPv4 and IPv6)\n");
			return -1;
		}
		o->transparent[o->ntransparent++] = optarg;
		return 0;
	}
	main_usage(stderr);
	return -1;
}

static int
main_parse(int argc, char **argv, struct main_opts *o)
{
	const char **path;
	unsigned *limit;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:p:a:u:r:vh", main_longopts, NULL)) != -1) {
		if (opt == OPT_MAX_CONNS)
			o->set_max_conns = 1;
		if ((limit = main_opt_limit(&o->conf.lim, opt)) != NULL) {
			if (main_parse_uint(optarg, 1, 1000000, limit) == -1) {
				fprintf(stderr,
				        "egressd: %s: expected a number from 1 to 1000000\n",
				        argv[optind - 1]);
				return -1;
			}
		} else if ((path = main_opt_tls(&o->tls, opt)) != NULL)
			*path = optarg;
		else if (main_opt(o, opt) == -1)
			return -1;
	}
	if (optind != argc) {
		fprintf(stderr, "egressd: unexpected argument \"%s\"\n", argv[optind]);
		main_usage(stderr);
		return -1;
	}
	return 0;
}

/* A number in a cgroup file ("max", or nothing readable: 0). */
static uint64_t
main_cgroup_value(const char *dir, const char *rel, const char *file)
{
	char path[PATH_MAX], text[64];
	unsigned long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof path, "%s%s/%s", dir, rel, file);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fgets(text, sizeof text, f) != NULL && sscanf(text, "%llu", &v) == 1;
	fclose(f);
	/* v1 says "no limit" with a number near 2^63. */
	return n && v < (1ULL << 60) ? (uint64_t)v : 0;
}

/* The least of file's limits from the cgroup rel up to the root of the mount at dir. */
static uint64_t
main_cgroup_walk(const char *dir, char *rel, const char *file)
{
	uint64_t least = 0, v;
	char *slash;

	for (;;) {
		v = main_cgroup_value(dir, rel, file);
		if (v > 0 && (least == 0 || v < least))
			least = v;
		if ((slash = strrchr(rel, '/')) == NULL || rel[0] == '\0')
			break;
		*slash = '\0';
	}
	return least;
}

/*
 * The cgroup path rel as seen under a mount of its hierarchy whose root is
 * root (a container's cgroup file system is often mounted from its own
 * cgroup down): rel without that prefix.
 */
static void
main_cgroup_under(char *rel, const char *root)
{
	size_t n = strlen(root);

	if (n > 1 && strncmp(rel, root, n) == 0 && (rel[n] == '/' || rel[n] == '\0'))
		memmove(rel, rel + n, strlen(rel + n) + 1);
}

/*
 * The memory limit egressd runs under: its cgroup's (v2 memory.max, or v1
 * memory.limit_in_bytes), the least along the path up; 0 when none is
 * set or it cannot be read. The cgroup file systems are found in
 * /proc/self/mountinfo, where they are mounted in this mount namespace.
 */
static uint64_t
main_memory_limit(void)
{
	char line[1024], v2[PATH_MAX] = "", v1[PATH_MAX] = "", rel2[PATH_MAX] = "",
	                 rel1[PATH_MAX] = "", root2[PATH_MAX] = "/", root1[PATH_MAX] = "/",
	                 root[PATH_MAX], mnt[PATH_MAX], fstype[64], opts[512], *p;
	uint64_t a = 0, b = 0;
	int in2 = 0, in1 = 0;
	FILE *f;

	if ((f = fopen("/proc/self/mountinfo", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if ((p = strstr(line, " - ")) == NULL ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(p + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && v2[0] == '\0') {
			snprintf(v2, sizeof v2, "%s", mnt);
			snprintf(root2, sizeof root2, "%s", root);
		} else if (strcmp(fstype, "cgroup") == 0 && strstr(opts, "memory") != NULL &&
		           v1[0] == '\0') {
			snprintf(v1, sizeof v1, "%s", mnt);
			snprintf(root1, sizeof root1, "%s", root);
		}
	}
	fclose(f);
	if ((f = fopen("/proc/self/cgroup", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0::/", 4) == 0) {
			snprintf(rel2, sizeof rel2, "%s", line + 3);
			in2 = 1;
		} else if ((p = strchr(line, ':')) != NULL && strstr(p, "memory") != NULL &&
		           strchr(p + 1, ':') != NULL && strchr(p + 1, ':')[1] == '/') {
			snprintf(rel1, sizeof rel1, "%s", strchr(p + 1, ':') + 1);
			in1 = 1;
		}
	}
	fclose(f);
	main_cgroup_under(rel2, root2);
	main_cgroup_under(rel1, root1);
	if (v2[0] != '\0' && in2)
		a = main_cgroup_walk(v2, rel2, "memory.max");
	if (v1[0] != '\0' && in1)
		b = main_cgroup_walk(v1, rel1, "memory.limit_in_bytes");
	return a == 0 || (b != 0 && b < a) ? b : a;
}

/*
 * Fit the limits the command line did not set to a memory limit (see
 * MAIN_CONN_COST), and say so.
 */
static void
main_fit_limits(struct main_opts *o)
{
	struct egressd_limits *lim = &o->conf.lim;
	uint64_t conns;

	if ((o->mem_limit = main_memory_limit()) == 0)
		return;
	if (!o->set_max_buffered && o->mem_limit / 4 < lim->max_buffered)
		lim->max_buffered = (size_t)(o->mem_limit / 4);
	conns = o->mem_limit / 2 / MAIN_CONN_COST;
	if (conns < MAIN_CONNS_MIN)
		conns = MAIN_CONNS_MIN;
	if (!o->set_max_conns && conns < lim->max_conns)
		lim->max_conns = (unsigned)conns;
	if (lim->pool_max_total > lim->max_conns / 4)
		lim->pool_max_total = lim->max_conns / 4 > 16 ? lim->max_conns / 4 : 16;
	if (lim->pool_max_idle > lim->pool_max_total)
		lim->pool_max_idle = lim->pool_max_total;
	fprintf(stderr,
	        "egressd: memory limit %llu MiB (cgroup): at most %u connections, %zu MiB held in "
	        "buffers\n",
	        (unsigned long long)(o->mem_limit >> 20), lim->max_conns, lim->max_buffered >> 20);
}

/*
 * A listening socket egressd was given or bound: on loopback unless
 * --allow-non-loopback; -1 after saying why not.
 */
static int
main_private(const struct main_opts *o, int fd, enum listener_kind kind)
{
	char err[256];

	if (listener_private(fd, NULL, kind, o->allow_non_loopback, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "egressd: %s\n", err);
	return -1;
}

/*
 * The resolver's DNS sockets: inherited ("dns" UDP and "dns-tcp", up to two
 * of each for IPv4 and IPv6), or bound here.
 */
static int
main_dns_listen(struct egressd *e, struct main_opts *o, int udp[2], int tcp[2])
{
	char addr[64], err[256];
	int i;

	for (i = 0; i < 2; i++) {
		udp[i] = sock_inherited("dns", SOCK_DGRAM, i);
		tcp[i] = sock_inherited("dns-tcp", SOCK_STREAM, i);
	}
	if (udp[0] != -1 || tcp[0] != -1) {
		fprintf(stderr, "egressd: dns on inherited fds %d (udp) and %d (tcp)%s\n", udp[0],
		        tcp[0], udp[1] != -1 || tcp[1] != -1 ? " and a second pair" : "");
	} else {
		if (o->dns != NULL)
			snprintf(addr, sizeof addr, "%s", o->dns);
		else
			snprintf(addr, sizeof addr, "127.0.0.1:%d",
			         policy_config(e->policy)->dns_port);
		if (resolver_bind(addr, &udp[0], &tcp[0], err, sizeof err) == -1) {
			fprintf(stderr, "egressd: --dns %s: %s\n", addr, err);
			return -1;
		}
		sock_local_text(udp[0], addr, sizeof addr);
		fprintf(stderr, "egressd: dns listening on %s (udp and tcp)\n", addr);
	}
	for (i = 0; i < 4; i++) {
		int fd = i < 2 ? udp[i] : tcp[i - 2];

		if (fd != -1 && main_private(o, fd, LISTENER_DNS) == -1)
			return -1;
	}
	return 0;
}

/*
 * The in-process resolver: upstreams from --upstream-dns, else the
 * nameservers of /etc/resolv.conf; it serves the dns listener and the
 * proxy's own lookups.
 */
static int
main_dns_init(struct egressd *e, struct main_opts *o)
{
	struct resolver_conf rc;
	const char *err;
	int udp[2] = {-1, -1}, tcp[2] = {-1, -1};
	size_t i;

	resolver_conf_init(&rc);
	for (i = 0; i < o->nupstream_dns; i++) {
		if ((err = resolver_conf_add_upstream(&rc, o->upstream_dns[i])) != NULL) {
			fprintf(stderr, "egressd: --upstream-dns %s: %s\n", o->upstream_dns[i],
			        err);
			return -1;
		}
	}
	if (o->nupstream_dns == 0 &&
	    (err = resolver_conf_resolv(&rc, "/etc/resolv.conf")) != NULL) {
		fprintf(stderr, "egressd: /etc/resolv.conf: %s; use --upstream-dns\n", err);
		return -1;
	}
	if (main_dns_listen(e, o, udp, tcp) == -1)
		return -1;
	if (o->mem_limit > 0 && rc.cache_bytes > o->mem_limit / 16)
		rc.cache_bytes = (size_t)(o->mem_limit / 16);
	e->resolver = resolver_new(e->base, &rc, e->policy, e->audit);
	if (resolver_listen(e->resolver, udp[0], tcp[0]) == -1 ||
	    ((udp[1] != -1 || tcp[1] != -1) &&
	     resolver_listen(e->resolver, udp[1], tcp[1]) == -1)) {
		fprintf(stderr, "egressd: cannot serve dns\n");
		return -1;
	}
	return 0;
}

/* The CA, its exported certificate and the TLS contexts; before listening. */
static int
main_tls_init(struct egressd *e, struct main_opts *o)
{
	char err[512];

	if ((e->tls = tls_new(&o->tls, policy_config(e->policy), err, sizeof err)) == NULL) {
		fprintf(stderr, "egressd: TLS interception: %s\n", err);
		return -1;
	}
	return 0;
}

static void
main_print_usage_lines(const char *addr)
{
	fprintf(stderr,
	        "egressd: proxy listening on %s\n"
	        "egressd: to send a shell's traffic through it, paste:\n"
	        "  export HTTP_PROXY=http://%s HTTPS_PROXY=http://%s\n"
	        "  export http_proxy=http://%s https_proxy=http://%s\n"
	        "  export NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1\n",
	        addr, addr, addr, addr, addr);
}

/*
 * The transparent listeners (strict mode): up to two (IPv4 and IPv6:
 * nftables redirects local IPv6 traffic to ::1), inherited under the name
 * "transparent", or bound from --transparent.
 */
static int
main_listen_transparent(struct egressd *e, struct main_opts *o)
{
	char err[256];
	int i, fd;

	for (i = 0; i < 2; i++) {
		if ((fd = sock_inherited("transparent", SOCK_STREAM, i)) < 0 &&
		    o->transparent[i] != NULL &&
		    (fd = listener_bind(o->transparent[i], LISTENER_TRANSPARENT,
		                        o->allow_non_loopback, err, sizeof err)) == -1) {
			fprintf(stderr, "egressd: --transparent %s: %s\n", o->transparent[i], err);
			return -1;
		}
		if (fd < 0)
			continue;
		if (main_private(o, fd, LISTENER_TRANSPARENT) == -1) {
			close(fd);
			return -1;
		}
		if ((e->transparent_lst[i] = listener_new(e, fd, LISTENER_TRANSPARENT)) == NULL)
			return -1;
	}
	return 0;
}

/*
 * The NFLOG socket sandbox-init bound for the packets its rules drop
 * (strict and off mode), when it passed one: read for the audit.
 */
static void
main_nflog(struct egressd *e)
{
	socklen_t len;
	int fd, v;

	if ((fd = sock_inherited("nflog", SOCK_RAW, 0)) < 0)
		return;
	len = sizeof v;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) == -1 || v != AF_NETLINK) {
		log_warnx("inherited fd %d (nflog) is not a netlink socket: ignored", fd);
		close(fd);
		return;
	}
	e->nflog = nflog_new(e, fd);
	log_debug("dropped packets are audited (NFLOG fd %d)", fd);
}

/*
 * The control socket (--control PATH): inherited from the launcher under
 * the name "control" (sandbox-init binds it as root, in a directory the
 * payload cannot write), else bound here at PATH.
 */
static int
main_control(struct egressd *e, struct main_opts *o)
{
	char err[256];
	int fd, owned = 0;
	socklen_t len;
	int v;

	if ((fd = sock_inherited("control", SOCK_STREAM, 0)) >= 0) {
		len = sizeof v;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) == -1 || v != AF_UNIX) {
			fprintf(stderr,
			        "egressd: the inherited control socket is not a Unix socket\n");
			close(fd);
			return -1;
		}
		if (o->control == NULL)
			o->control = CONTROL_DEFAULT_PATH;
	} else if (o->control == NULL) {
		return 0;
	} else if ((fd = control_bind(o->control, err, sizeof err)) == -1) {
		fprintf(stderr, "egressd: --control %s: %s\n", o->control, err);
		return -1;
	} else
		owned = 1;
	if ((e->control = control_new(e, fd, o->control, owned)) == NULL)
		return -1;
	egressd_explain_cmd(e, o->control);
	if (!o->no_banners)
		fprintf(stderr,
		        "egressd: control socket on %s (policyctl explain, status, reload)\n",
		        o->control);
	return 0;
}

/* GET /metrics (--metrics ADDR:PORT), on loopback unless --allow-non-loopback. */
static int
main_metrics(struct egressd *e, struct main_opts *o)
{
	char err[256], shown[64];
	int fd;

	if ((fd = sock_inherited("metrics", SOCK_STREAM, 0)) < 0) {
		if (o->metrics == NULL)
			return 0;
		if ((fd = listener_bind(o->metrics, LISTENER_METRICS, o->allow_non_loopback, err,
		                        sizeof err)) == -1) {
			fprintf(stderr, "egressd: --metrics %s: %s\n", o->metrics, err);
			return -1;
		}
	}
	if (main_private(o, fd, LISTENER_METRICS) == -1) {
		close(fd);
		return -1;
	}
	sock_local_text(fd, shown, sizeof shown);
	if ((e->scrape = metrics_http_new(e, fd)) == NULL)
		return -1;
	fprintf(stderr, "egressd: metrics on http://%s/metrics\n", shown);
	return 0;
}

/* Bind the proxy listener, or take the one the launcher passed down. */
static int
main_listen(struct egressd *e, struct main_opts *o, char *shown, size_t len)
{
	char addr[64], err[256];
	int fd;

	if ((fd = sock_inherited("proxy", SOCK_STREAM, 0)) >= 0) {
		/* The lines to paste need the address, not the descriptor. */
		sock_local_text(fd, shown, len);
	} else {
		if (o->proxy != NULL)
			snprintf(addr, sizeof addr, "%s", o->proxy);
		else
			snprintf(addr, sizeof addr, "127.0.0.1:%d",
			         policy_config(e->policy)->proxy_port);
		if ((fd = listener_bind(addr, LISTENER_PROXY, o->allow_non_loopback, err,
		                        sizeof err)) == -1) {
			fprintf(stderr, "egressd: --proxy %s: %s\n", addr, err);
			return -1;
		}
		snprintf(shown, len, "%s", addr);
	}
	if (main_private(o, fd, LISTENER_PROXY) == -1) {
		close(fd);
		return -1;
	}
	if ((e->proxy_lst = listener_new(e, fd, LISTENER_PROXY)) == NULL)
		return -1;
	main_nflog(e);
	if (main_listen_transparent(e, o) == -1 || main_control(e, o) == -1)
		return -1;
	return main_metrics(e, o);
}

static void
main_ready(struct main_opts *o)
{
	if (o->ready_fd < 0)
		return;
	if (write(o->ready_fd, "READY\n", 6) != 6)
		log_warn("--ready-fd %d", o->ready_fd);
	close(o->ready_fd);
}

static struct audit *
main_open_audit(struct main_opts *o)
{
	const char *path = o->audit;
	struct audit *a;
	char err[512];

	if (path == NULL)
		path = policy_config(o->conf.policy)->audit_path;
	if (path == NULL)
		path = "-";
	o->conf.audit_path = path;
	if ((a = audit_open(path, err, sizeof err)) == NULL)
		fprintf(stderr, "egressd: audit: %s\n", err);
	return a;
}

/*
 * --check with --upstream-ca or --system-ca: that trust store too, parsed
 * in full. Without either the configuration alone is checked, as the
 * default store may be one a launcher provides only at run time.
 */
static int
main_check_store(const struct main_opts *o)
{
	const char *path, *why;

	path = o->tls.upstream_ca != NULL ? o->tls.upstream_ca : o->tls.system_ca;
	if (path == NULL)
		return 0;
	if ((why = tls_store_check_full(path)) == NULL)
		return 0;
	fprintf(stderr, "egressd: the upstream trust store %s cannot be used: %s\n", path, why);
	return -1;
}

/* --check, or a command line or configuration that does not load: the exit code. */
static int
main_check(struct main_opts *o)
{
	int rc = o->conf.policy != NULL ? 0 : EXIT_CONFIG;

	if (o->conf.policy != NULL && main_check_store(o) == -1)
		rc = EXIT_CONFIG;
	else if (o->conf.policy != NULL)
		printf("configuration OK\n");
	policy_unref(o->conf.policy);
	return rc;
}

int
main(int argc, char **argv)
{
	struct main_opts o;
	struct egressd *e;
	char shown[96];
	int rc = 1;

	log_init("egressd", LOG_LVL_INFO);
	memset(&o, 0, sizeof o);
	egressd_conf_init(&o.conf);
	o.ready_fd = -1;
	if (main_parse(argc, argv, &o) == -1 ||
	    (o.conf.policy = egressd_policy_load(o.conf.files, o.conf.nfiles)) == NULL || o.check) {
		rc = main_check(&o);
		goto out;
	}
	main_fit_limits(&o);
	if ((o.conf.audit = main_open_audit(&o)) == NULL) {
		policy_unref(o.conf.policy);
		goto out;
	}
	e = egressd_new(&o.conf);
	if (main_dns_init(e, &o) == 0 && main_tls_init(e, &o) == 0 &&
	    main_listen(e, &o, shown, sizeof shown) == 0) {
		if (egressd_start(e) == -1)
			fatalx("cannot install signal handlers");
		/* A launcher that set the variables itself has no use for the lines to paste. */
		if (!o.no_banners) {
			main_print_usage_lines(shown);
			tls_print_trust(e->tls, stderr);
		}
		main_ready(&o);
		egressd_run(e);
		rc = 0;
	}
	egressd_free(e);
out:
	free(o.files);
	free(o.upstream_dns);
	return rc;
}
