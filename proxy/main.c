/*
 * egressd: the egress proxy. Loads the policy, binds (or inherits) its
 * listener, and runs one libevent loop in which every client connection is
 * decided by the policy module and recorded in the audit log. SIGHUP
 * reloads the policy atomically; SIGTERM and SIGINT stop accepting, give
 * open exchanges a grace period, flush the audit log and exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "conn_int.h"
#include "resolver.h"

#define EGRESSD_DEFAULT_PROXY "127.0.0.1:18080"
#define EXIT_CONFIG           2

struct egressd_opts {
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
};

static void
usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: egressd [--config FILE]... [--project-config FILE]... [--proxy ADDR:PORT]\n"
	    "               [--dns ADDR:PORT]\n"
	    "               [--transparent ADDR:PORT]... [--audit FILE|-]\n"
	    "               [--upstream-dns ADDR[:PORT]]... [--ready-fd N] [--check]\n"
	    "               [--ca-out FILE] [--ca-bundle-out FILE] [--ca-cert FILE --ca-key FILE]\n"
	    "               [--upstream-ca FILE] [--system-ca FILE]\n"
	    "               [--allow-non-loopback] [--max-conns N] [--header-timeout S]\n"
	    "               [--idle-timeout S] [--connect-timeout S] [--response-timeout S]\n"
	    "               [--grace S] [--no-banners] [-v]\n");
}

static int
parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
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

/*
 * What a project file (--project-config) set and was not taken: a warning
 * on stderr each, and, once the audit log is open, a `policy` event each.
 */
static void
egressd_ignored_warn(const struct config *cfg)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&b);
		config_ignored_text(&cfg->ignored[i], &b);
		fprintf(stderr, "egressd: warning: %s:%u:%u: %s\n", cfg->ignored[i].loc.file,
		        cfg->ignored[i].loc.line, cfg->ignored[i].loc.col, buf_cstr(&b));
	}
	buf_free(&b);
}

static void
egressd_ignored_audit(struct egressd *e, const struct config *cfg)
{
	struct audit_event ev;
	char source[512];
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < cfg->nignored; i++) {
		buf_reset(&b);
		config_ignored_text(&cfg->ignored[i], &b);
		snprintf(source, sizeof source, "%s:%u", cfg->ignored[i].loc.file,
		         cfg->ignored[i].loc.line);
		audit_event_init(&ev);
		ev.event = "policy";
		ev.action = "block";
		ev.rule = "project-file";
		ev.source = source;
		ev.reason = buf_cstr(&b);
		ev.mode = config_mode_name(cfg->mode);
		ev.hint = "a setting that loosens the policy belongs in a file the host trusts "
		          "(the global configuration or --config)";
		audit_write(e->audit, &ev);
	}
	buf_free(&b);
}

/* Load and compile the configuration; NULL after printing every error. */
static struct policy *
egressd_load_policy(struct egressd *e)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs;

	buf_init(&errs);
	if ((cfg = config_load_files(e->files, e->nfiles, &errs)) == NULL ||
	    (p = policy_new(cfg, &errs)) == NULL) {
		fputs(buf_cstr(&errs), stderr);
		buf_free(&errs);
		return NULL;
	}
	buf_free(&errs);
	if (*policy_warnings(p) != '\0')
		fprintf(stderr, "egressd: warning: %s", policy_warnings(p));
	egressd_ignored_warn(policy_config(p));
	return p;
}

static void
egressd_audit_daemon(struct egressd *e, const char *reason, const char *error)
{
	struct audit_event ev;

	audit_event_init(&ev);
	ev.event = "daemon";
	ev.reason = reason;
	ev.mode = config_mode_name(policy_mode(e->policy));
	ev.error = error;
	audit_write(e->audit, &ev);
}

/* SIGHUP: swap in a new policy, or keep the old one and say why. */
static void
egressd_reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct egressd *e = arg;
	struct audit_event ev;
	struct config *cfg;
	struct policy *p = NULL;
	struct buf errs;

	buf_init(&errs);
	if ((cfg = config_load_files(e->files, e->nfiles, &errs)) != NULL)
		p = policy_new(cfg, &errs);
	audit_event_init(&ev);
	ev.event = "policy";
	ev.rule = "policy.reload";
	if (p == NULL) {
		log_warnx("reload failed, keeping the current policy:\n%s", buf_cstr(&errs));
		ev.action = "block";
		ev.reason = "reload failed; the previous policy stays in force";
		ev.error = buf_cstr(&errs);
		ev.mode = config_mode_name(policy_mode(e->policy));
	} else {
		/* Connections keep the snapshot they started with. */
		policy_unref(e->policy);
		e->policy = p;
		resolver_set_policy(e->resolver, p);
		log_info("policy reloaded (mode %s)", config_mode_name(policy_mode(p)));
		ev.action = "allow";
		ev.reason = "policy reloaded";
		ev.mode = config_mode_name(policy_mode(p));
	}
	audit_write(e->audit, &ev);
	if (p != NULL) {
		/* A project file edited since the start is held to the same rule. */
		egressd_ignored_warn(policy_config(p));
		egressd_ignored_audit(e, policy_config(p));
	}
	buf_free(&errs);
}

static void
egressd_stop(struct egressd *e)
{
	event_base_loopexit(e->base, NULL);
}

static void
egressd_listeners(struct egressd *e, void (*fn)(struct listener *))
{
	if (e->proxy_lst != NULL)
		fn(e->proxy_lst);
	if (e->transparent_lst[0] != NULL)
		fn(e->transparent_lst[0]);
	if (e->transparent_lst[1] != NULL)
		fn(e->transparent_lst[1]);
}

/* Called whenever a connection has gone: finishes a drain when none are left. */
void
egressd_conn_gone(struct egressd *e)
{
	if (e->draining && e->nconns == 0)
		egressd_stop(e);
	else if (!e->draining && e->nconns < e->lim.max_conns)
		egressd_listeners(e, listener_resume);
}

static void
egressd_grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egressd *e = arg;

	log_info("grace period over: cutting %u open connection%s", e->nconns,
	         e->nconns == 1 ? "" : "s");
	conn_close_all(e, "cut at shutdown");
	egressd_stop(e);
}

/* SIGTERM/SIGINT: stop accepting, let open exchanges finish, then exit. */
static void
egressd_term_cb(evutil_socket_t sig, short what, void *arg)
{
	struct egressd *e = arg;
	struct timeval tv = {e->lim.grace, 0};

	if (e->draining) {
		/* A second signal: stop now. */
		conn_close_all(e, "cut at shutdown");
		egressd_stop(e);
		return;
	}
	e->draining = 1;
	log_info("signal %d: draining %u connection%s (grace %us)", (int)sig, e->nconns,
	         e->nconns == 1 ? "" : "s", e->lim.grace);
	egressd_listeners(e, listener_pause);
	if (e->resolver != NULL)
		resolver_stop(e->resolver);
	conn_drain_idle(e);
	if (e->nconns == 0) {
		egressd_stop(e);
		return;
	}
	e->ev_grace = evtimer_new(e->base, egressd_grace_cb, e);
	evtimer_add(e->ev_grace, &tv);
}

/*
 * The resolver's DNS sockets: inherited ("dns" UDP and "dns-tcp", up to two
 * of each for IPv4 and IPv6), or bound here.
 */
static int
egressd_dns_listen(struct egressd *e, struct egressd_opts *o, int udp[2], int tcp[2])
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
		if (listen_bind(addr, &udp[0], &tcp[0], err, sizeof err) == -1) {
			fprintf(stderr, "egressd: --dns %s: %s\n", addr, err);
			return -1;
		}
		sock_local_text(udp[0], addr, sizeof addr);
		fprintf(stderr, "egressd: dns listening on %s (udp and tcp)\n", addr);
	}
	for (i = 0; i < 4; i++) {
		int fd = i < 2 ? udp[i] : tcp[i - 2];

		if (fd != -1 && !o->allow_non_loopback && !sock_is_loopback(fd)) {
			fprintf(stderr, "egressd: the dns listener is not on a loopback address; "
			                "an open resolver answers anyone. Pass "
			                "--allow-non-loopback if that is really meant.\n");
			return -1;
		}
	}
	return 0;
}

/*
 * The in-process resolver: upstreams from --upstream-dns, else the
 * nameservers of /etc/resolv.conf; it serves the dns listener and the
 * proxy's own lookups.
 */
static int
egressd_dns_init(struct egressd *e, struct egressd_opts *o)
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
	if (egressd_dns_listen(e, o, udp, tcp) == -1)
		return -1;
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
egressd_tls_init(struct egressd *e, struct egressd_opts *o)
{
	char err[512];

	if ((e->tls = tls_new(&o->tls, policy_config(e->policy), err, sizeof err)) == NULL) {
		fprintf(stderr, "egressd: TLS interception: %s\n", err);
		return -1;
	}
	return 0;
}

static void
egressd_print_usage_lines(const char *addr)
{
	fprintf(stderr,
	        "egressd: proxy listening on %s\n"
	        "egressd: to send a shell's traffic through it, paste:\n"
	        "  export HTTP_PROXY=http://%s HTTPS_PROXY=http://%s\n"
	        "  export http_proxy=http://%s https_proxy=http://%s\n"
	        "  export NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1\n",
	        addr, addr, addr, addr, addr);
}

static int
egressd_signal(struct egressd *e, struct event **ev, int sig, event_callback_fn cb)
{
	*ev = evsignal_new(e->base, sig, cb, e);
	return *ev == NULL || event_add(*ev, NULL) == -1 ? -1 : 0;
}

static int
egressd_parse(int argc, char **argv, struct egressd *e, struct egressd_opts *o)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"project-config", required_argument, NULL, 14},
	    {"no-banners", no_argument, NULL, 15},
	    {"proxy", required_argument, NULL, 'p'},
	    {"audit", required_argument, NULL, 'a'},
	    {"upstream-dns", required_argument, NULL, 'u'},
	    {"dns", required_argument, NULL, 'D'},
	    {"ready-fd", required_argument, NULL, 'r'},
	    {"check", no_argument, NULL, 'C'},
	    {"allow-non-loopback", no_argument, NULL, 'L'},
	    {"max-conns", required_argument, NULL, 1},
	    {"header-timeout", required_argument, NULL, 2},
	    {"idle-timeout", required_argument, NULL, 3},
	    {"connect-timeout", required_argument, NULL, 4},
	    {"response-timeout", required_argument, NULL, 5},
	    {"grace", required_argument, NULL, 6},
	    {"ca-out", required_argument, NULL, 7},
	    {"ca-bundle-out", required_argument, NULL, 8},
	    {"ca-cert", required_argument, NULL, 9},
	    {"ca-key", required_argument, NULL, 10},
	    {"upstream-ca", required_argument, NULL, 11},
	    {"transparent", required_argument, NULL, 12},
	    {"system-ca", required_argument, NULL, 13},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned v, *dst;
	int ch;

	while ((ch = getopt_long(argc, argv, "c:p:a:u:r:vh", opts, NULL)) != -1) {
		dst = NULL;
		switch (ch) {
		case 'c':
		case 14:
			e->files = xreallocarray(e->files, e->nfiles + 1, sizeof *e->files);
			e->files[e->nfiles].path = optarg;
			e->files[e->nfiles++].flags = ch == 14 ? CONFIG_FILE_UNTRUSTED : 0;
			break;
		case 15:
			o->no_banners = 1;
			break;
		case 'p':
			o->proxy = optarg;
			break;
		case 'a':
			o->audit = optarg;
			break;
		case 'D':
			o->dns = optarg;
			break;
		case 'u':
			o->upstream_dns = xreallocarray(o->upstream_dns, o->nupstream_dns + 1,
			                                sizeof *o->upstream_dns);
			o->upstream_dns[o->nupstream_dns++] = optarg;
			break;
		case 'r':
			if (parse_uint(optarg, 0, 65535, &v) == -1 ||
			    fcntl((int)v, F_GETFD) == -1) {
				fprintf(stderr, "egressd: --ready-fd %s: not an open descriptor\n",
				        optarg);
				return -1;
			}
			o->ready_fd = (int)v;
			break;
		case 'C':
			o->check = 1;
			break;
		case 'L':
			o->allow_non_loopback = 1;
			break;
		case 'v':
			log_verbosity = LOG_LVL_DEBUG;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 1:
			dst = &e->lim.max_conns;
			break;
		case 2:
			dst = &e->lim.header_timeout;
			break;
		case 3:
			dst = &e->lim.idle_timeout;
			break;
		case 4:
			dst = &e->lim.connect_timeout;
			break;
		case 5:
			dst = &e->lim.response_timeout;
			break;
		case 6:
			dst = &e->lim.grace;
			break;
		case 7:
			o->tls.ca_out = optarg;
			break;
		case 8:
			o->tls.ca_bundle_out = optarg;
			break;
		case 9:
			o->tls.ca_cert = optarg;
			break;
		case 10:
			o->tls.ca_key = optarg;
			break;
		case 11:
			o->tls.upstream_ca = optarg;
			break;
		case 13:
			o->tls.system_ca = optarg;
			break;
		case 12:
			if (o->ntransparent == 2) {
				fprintf(stderr,
				        "egressd: --transparent: at most two (IPv4 and IPv6)\n");
				return -1;
			}
			o->transparent[o->ntransparent++] = optarg;
			break;
		default:
			usage(stderr);
			return -1;
		}
		if (dst != NULL && parse_uint(optarg, 1, 1000000, dst) == -1) {
			fprintf(stderr, "egressd: %s: expected a number from 1 to 1000000\n",
			        argv[optind - 1]);
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "egressd: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

static void
egressd_defaults(struct egressd *e, struct egressd_opts *o)
{
	memset(e, 0, sizeof *e);
	memset(o, 0, sizeof *o);
	o->ready_fd = -1;
	TAILQ_INIT(&e->conns);
	e->lim.max_conns = 4096;
	e->lim.header_timeout = 15;
	e->lim.idle_timeout = 60;
	e->lim.connect_timeout = 10;
	e->lim.response_timeout = 120;
	e->lim.tunnel_idle_timeout = 600;
	e->lim.grace = 10;
	e->lim.pool_idle_timeout = 30;
	e->lim.pool_max_idle = 64;
	e->lim.pool_max_total = 1024;
	e->http = http_limits_default;
}

/*
 * The transparent listeners (strict mode): up to two (IPv4 and IPv6:
 * nftables redirects local IPv6 traffic to ::1), inherited under the name
 * "transparent", or bound from --transparent.
 */
static int
egressd_listen_transparent(struct egressd *e, struct egressd_opts *o)
{
	char err[256];
	int i, fd;

	for (i = 0; i < 2; i++) {
		if ((fd = sock_inherited("transparent", SOCK_STREAM, i)) < 0 &&
		    o->transparent[i] != NULL &&
		    (fd = listener_bind(o->transparent[i], o->allow_non_loopback, err,
		                        sizeof err)) == -1) {
			fprintf(stderr, "egressd: --transparent %s: %s\n", o->transparent[i], err);
			return -1;
		}
		if (fd < 0)
			continue;
		if (!o->allow_non_loopback && !sock_is_loopback(fd)) {
			fprintf(stderr,
			        "egressd: the transparent listener is not on a loopback "
			        "address; pass --allow-non-loopback if that is really meant.\n");
			close(fd);
			return -1;
		}
		if ((e->transparent_lst[i] = listener_new(e, fd, 1)) == NULL)
			return -1;
	}
	return 0;
}

/*
 * The NFLOG socket sandbox-init bound for the packets its rules drop
 * (strict and off mode), when it passed one: read for the audit.
 */
static void
egressd_nflog(struct egressd *e)
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

/* Bind the proxy listener, or take the one the launcher passed down. */
static int
egressd_listen(struct egressd *e, struct egressd_opts *o, char *shown, size_t len)
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
		if ((fd = listener_bind(addr, o->allow_non_loopback, err, sizeof err)) == -1) {
			fprintf(stderr, "egressd: --proxy %s: %s\n", addr, err);
			return -1;
		}
		snprintf(shown, len, "%s", addr);
	}
	if (!o->allow_non_loopback && !sock_is_loopback(fd)) {
		fprintf(stderr, "egressd: the proxy listener is not on a loopback address; "
		                "an egress proxy reachable from other hosts is an open proxy. "
		                "Pass --allow-non-loopback if that is really meant.\n");
		close(fd);
		return -1;
	}
	if ((e->proxy_lst = listener_new(e, fd, 0)) == NULL)
		return -1;
	egressd_nflog(e);
	return egressd_listen_transparent(e, o);
}

static void
egressd_ready(struct egressd_opts *o)
{
	if (o->ready_fd < 0)
		return;
	if (write(o->ready_fd, "READY\n", 6) != 6)
		log_warn("--ready-fd %d", o->ready_fd);
	close(o->ready_fd);
}

static int
egressd_open_audit(struct egressd *e, struct egressd_opts *o)
{
	const char *path = o->audit;
	char err[512];

	if (path == NULL)
		path = policy_config(e->policy)->audit_path;
	if (path == NULL)
		path = "-";
	if ((e->audit = audit_open(path, err, sizeof err)) == NULL) {
		fprintf(stderr, "egressd: audit: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * Once a second: unmap the slab chunks a burst emptied (one of each kind
 * is kept), take the TLS record buffers of idle connections back, and
 * when more than EGRESSD_TRIM_BYTES of freed heap sit
 * unused (after a burst of connections, whose buffers and upstreams are
 * gone), hand the pages back to the system, so the resident size follows
 * the connections that are open now rather than the peak.
 */
#define EGRESSD_TRIM_BYTES (1024 * 1024)

static void
egressd_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egressd *e = arg;
	struct mallinfo2 mi;

	slab_trim(&e->xslab, 1);
	upstream_pool_trim(e->pool);
	conn_trim_idle(e);
	mi = mallinfo2();
	if (mi.fordblks > EGRESSD_TRIM_BYTES)
		malloc_trim(0);
}

/*
 * Audit lines made while handling one batch of events are written together,
 * with one write(2): the flush event is activated with the first line, so it
 * runs after the events that were ready with it and before any later ones
 * (a lower priority would let a busy loop starve it).
 */
static void
egressd_audit_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egressd *e = arg;

	(void)audit_flush(e->audit);
}

static void
egressd_audit_wakeup(void *arg)
{
	struct egressd *e = arg;

	event_active(e->ev_audit, EV_TIMEOUT, 0);
}

/*
 * epoll with a changelist: enabling and disabling an event within one
 * loop iteration costs one epoll_ctl, or none, instead of one each.
 * egressd never dup()s a socket, the case the changelist gets wrong.
 */
static struct event_base *
egressd_base_new(void)
{
	struct event_config *cfg;
	struct event_base *base;

	if ((cfg = event_config_new()) == NULL)
		return NULL;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base;
}

/*
 * --check with --upstream-ca or --system-ca: that trust store too, parsed
 * in full. Without either the configuration alone is checked, as the
 * default store may be one a launcher provides only at run time.
 */
static int
egressd_check_store(const struct egressd_opts *o)
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

int
main(int argc, char **argv)
{
	struct egressd e;
	struct egressd_opts o;
	char shown[96];
	int rc = 1;

	log_init("egressd", LOG_LVL_INFO);
	egressd_defaults(&e, &o);
	if (egressd_parse(argc, argv, &e, &o) == -1 ||
	    (e.policy = egressd_load_policy(&e)) == NULL || o.check) {
		rc = e.policy != NULL ? 0 : EXIT_CONFIG;
		if (e.policy != NULL && egressd_check_store(&o) == -1)
			rc = EXIT_CONFIG;
		else if (e.policy != NULL)
			printf("configuration OK\n");
		policy_unref(e.policy);
		free(e.files);
		free(o.upstream_dns);
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((e.base = egressd_base_new()) == NULL)
		fatalx("cannot create the event loop");
	if (egressd_open_audit(&e, &o) == -1 || egressd_dns_init(&e, &o) == -1 ||
	    egressd_tls_init(&e, &o) == -1 || egressd_listen(&e, &o, shown, sizeof shown) == -1)
		goto out;
	e.pool = upstream_pool_new(&e);
	slab_init(&e.xslab, sizeof(struct exchange));
	e.scratch = evbuffer_new();
	if (egressd_signal(&e, &e.ev_hup, SIGHUP, egressd_reload_cb) == -1 ||
	    egressd_signal(&e, &e.ev_term, SIGTERM, egressd_term_cb) == -1 ||
	    egressd_signal(&e, &e.ev_int, SIGINT, egressd_term_cb) == -1)
		fatalx("cannot install signal handlers");

	e.ev_audit = event_new(e.base, -1, 0, egressd_audit_flush_cb, &e);
	audit_set_batch(e.audit, egressd_audit_wakeup, &e);
	e.ev_trim = event_new(e.base, -1, EV_PERSIST, egressd_trim_cb, &e);
	event_add(e.ev_trim, &(struct timeval){1, 0});
	/* A launcher that set the variables itself has no use for the lines to paste. */
	if (!o.no_banners) {
		egressd_print_usage_lines(shown);
		tls_print_trust(e.tls, stderr);
	}
	egressd_audit_daemon(&e, "started", NULL);
	egressd_ignored_audit(&e, policy_config(e.policy));
	egressd_ready(&o);
	tls_start(e.tls, e.base);
	event_base_dispatch(e.base);
	/* Drops logged up to the last moment (a payload that sent and exited) are audited. */
	nflog_drain(e.nflog);
	egressd_audit_daemon(&e, "stopped", NULL);
	log_info("stopped");
	rc = 0;
out:
	conn_close_all(&e, "shutdown");
	slab_release(&e.xslab);
	listener_free(e.proxy_lst);
	listener_free(e.transparent_lst[0]);
	listener_free(e.transparent_lst[1]);
	nflog_free(e.nflog);
	upstream_pool_free(e.pool);
	resolver_free(e.resolver);
	if (e.scratch)
		evbuffer_free(e.scratch);
	if (e.ev_hup)
		event_free(e.ev_hup);
	if (e.ev_term)
		event_free(e.ev_term);
	if (e.ev_int)
		event_free(e.ev_int);
	if (e.ev_grace)
		event_free(e.ev_grace);
	if (e.ev_trim)
		event_free(e.ev_trim);
	if (e.audit != NULL)
		audit_set_batch(e.audit, NULL, NULL);
	if (e.ev_audit)
		event_free(e.ev_audit);
	audit_close(e.audit);
	policy_unref(e.policy);
	tls_free(e.tls);
	if (e.base)
		event_base_free(e.base);
	free(e.files);
	free(o.upstream_dns);
	return rc;
}
