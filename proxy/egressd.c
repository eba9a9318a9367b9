/*
 * egressd's runtime: the context every part of the proxy hangs off
 * (egressd_new), one libevent loop (egressd_run), and what happens to it
 * over time. SIGHUP reloads the policy atomically; SIGUSR1 reopens the
 * audit log (logrotate); SIGTERM and SIGINT stop accepting, give open
 * exchanges a grace period and end the loop; a once-a-second tick gives
 * memory back and tries an audit log that could not be written; audit
 * lines made in one batch of events are written together. main.c reads the command line and sets
 * up the listeners, the resolver and TLS on the context.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "proxy.h"
#include "resolver.h"
#include "tls.h"
#include "upstream.h"

/*
 * Once a second: unmap the slab chunks a burst emptied (one of each kind
 * is kept), take the TLS record buffers of idle connections back, and
 * when more than EGRESSD_TRIM_BYTES of freed heap sit
 * unused (after a burst of connections, whose buffers and upstreams are
 * gone), hand the pages back to the system, so the resident size follows
 * the connections that are open now rather than the peak. The heap is
 * trimmed at the first quiet tick after activity (connections opened or
 * closed, requests decided, bytes relayed, an upstream leaving the pool;
 * an idle connection's TLS buffers go at the first tick after it), and
 * under load that never pauses once every EGRESSD_TRIM_BUSY ticks: reading
 * the heap's state (mallinfo2) walks every free chunk, and trimming calls
 * madvise on every free page, given back already or not. With 10,000
 * connections held that is milliseconds of the loop each time: every
 * second under load it was the slowest percent of the requests, and every
 * second while idle a loop that never sleeps for long.
 */
#define EGRESSD_TRIM_BYTES (1024 * 1024)
#define EGRESSD_TRIM_BUSY  60

#define EGRESSD_MAX_BUFFERED (256 * 1024 * 1024) /* --max-buffered without a memory limit */

void
egressd_conf_init(struct egressd_conf *conf)
{
	memset(conf, 0, sizeof *conf);
	conf->lim.max_conns = 4096;
	conf->lim.max_buffered = EGRESSD_MAX_BUFFERED;
	conf->lim.header_timeout = 15;
	conf->lim.idle_timeout = 60;
	conf->lim.connect_timeout = 10;
	conf->lim.response_timeout = 120;
	conf->lim.tunnel_idle_timeout = 600;
	conf->lim.grace = 10;
	conf->lim.pool_idle_timeout = 30;
	conf->lim.pool_max_idle = 64;
	conf->lim.pool_max_total = 1024;
	conf->http = http_limits_default;
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
struct policy *
egressd_policy_load(const struct config_file *files, size_t nfiles)
{
	struct config *cfg;
	struct policy *p;
	struct buf errs;

	buf_init(&errs);
	if ((cfg = config_load_files(files, nfiles, &errs)) == NULL ||
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

/* audit.onError, audit.maxBytes and audit.keep of the policy p, for the writer. */
static void
egressd_audit_configure(struct egressd *e, const struct policy *p)
{
	const struct config *cfg = policy_config(p);
	struct audit_settings set = {
	    .on_error = cfg->audit_on_error ? AUDIT_ON_ERROR_CONTINUE : AUDIT_ON_ERROR_BLOCK,
	    .max_bytes = cfg->audit_max_bytes,
	    .keep = (unsigned)cfg->audit_keep,
	};

	audit_configure(e->audit, &set);
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

/* What the policy p was loaded from, with each file's mtime, for status. */
static void
egressd_sources_set(struct egressd *e, const struct policy *p)
{
	const struct config *cfg = policy_config(p);
	struct egressd_source *src;
	struct stat st;
	size_t i, n = 0;

	for (i = 0; i < e->nsources; i++)
		free(e->sources[i].path);
	free(e->sources);
	e->sources = xcalloc(cfg->nfiles + cfg->blocklist_files.n + 1, sizeof *e->sources);
	for (i = 0; i < cfg->nfiles + cfg->blocklist_files.n; i++) {
		src = &e->sources[n++];
		if (i < cfg->nfiles) {
			src->path = xstrdup(cfg->files[i]);
			src->kind = cfg->untrusted[i] ? "project" : "config";
		} else {
			src->path = xstrdup(cfg->blocklist_files.items[i - cfg->nfiles].value);
			src->kind = "list";
		}
		if (stat(src->path, &st) == 0)
			src->mtime = st.st_mtim;
		else
			src->missing = 1;
	}
	e->nsources = n;
	clock_gettime(CLOCK_REALTIME, &e->loaded);
}

/*
 * Load the configuration files again and swap the new policy in, or keep
 * the old one and say why (errs gets the errors); audited either way.
 * SIGHUP and the control socket's reload both come here. 0: reloaded.
 */
int
egressd_reload(struct egressd *e, struct buf *errs)
{
	struct audit_event ev;
	struct config *cfg;
	struct policy *p = NULL;

	if ((cfg = config_load_files(e->files, e->nfiles, errs)) != NULL)
		p = policy_new(cfg, errs);
	audit_event_init(&ev);
	ev.event = "policy";
	ev.rule = "policy.reload";
	if (p == NULL) {
		log_warnx("reload failed, keeping the current policy:\n%s", buf_cstr(errs));
		ev.action = "block";
		ev.reason = "reload failed; the previous policy stays in force";
		ev.error = buf_cstr(errs);
		ev.mode = config_mode_name(policy_mode(e->policy));
		e->m.reloads[1]++;
	} else {
		/* Connections keep the snapshot they started with. */
		policy_unref(e->policy);
		e->policy = p;
		if (e->resolver != NULL)
			resolver_set_policy(e->resolver, p);
		e->generation++;
		egressd_sources_set(e, p);
		egressd_audit_configure(e, p);
		log_info("policy reloaded (mode %s)", config_mode_name(policy_mode(p)));
		ev.action = "allow";
		ev.reason = "policy reloaded";
		ev.mode = config_mode_name(policy_mode(p));
		e->m.reloads[0]++;
	}
	audit_write(e->audit, &ev);
	if (p == NULL)
		return -1;
	/* A project file edited since the start is held to the same rule. */
	egressd_ignored_warn(policy_config(p));
	egressd_ignored_audit(e, policy_config(p));
	return 0;
}

/* SIGHUP: swap in a new policy, or keep the old one and say why. */
static void
egressd_reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct egressd *e = arg;
	struct buf errs;

	buf_init(&errs);
	(void)egressd_reload(e, &errs);
	buf_free(&errs);
}

/* SIGUSR1: the audit log's file again, after a tool moved it away (logrotate). */
static void
egressd_reopen_cb(evutil_socket_t sig, short what, void *arg)
{
	struct egressd *e = arg;

	(void)audit_reopen(e->audit);
}

/* A path as one shell word: as it is when it is plain, else single-quoted. */
static int
egressd_shell_word(struct buf *b, const char *s)
{
	const char *p;

	if (*s == '\0' || strchr(s, '\'') != NULL || !http_visible(s))
		return -1;
	for (p = s; *p != '\0'; p++)
		if (!(isalnum((unsigned char)*p) || strchr("/._-+,:=@%", *p) != NULL))
			break;
	if (*p == '\0')
		buf_adds(b, s);
	else
		buf_printf(b, "'%s'", s);
	return 0;
}

/*
 * What the policyctl explain command a 403 names takes after the host, so
 * that it answers as this egressd does: its control socket (control,
 * unless NULL; none for the image's socket, where policyctl looks by
 * itself), else the files it was started with.
 */
void
egressd_explain_cmd(struct egressd *e, const char *control)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	if (control != NULL && strcmp(control, CONTROL_DEFAULT_PATH) != 0) {
		buf_adds(&b, " --control ");
		if (egressd_shell_word(&b, control) == -1)
			buf_adds(&b, "SOCKET");
	}
	for (i = 0; control == NULL && i < e->nfiles; i++) {
		buf_adds(&b, e->files[i].flags & CONFIG_FILE_UNTRUSTED ? " --project-config "
		                                                       : " --config ");
		if (egressd_shell_word(&b, e->files[i].path) == -1)
			buf_adds(&b, "FILE");
	}
	free(e->explain_cmd);
	e->explain_cmd = buf_release(&b);
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

/* A connection has gone (e->conn_gone): finish a drain when none are left. */
static void
egressd_conn_gone(struct egressd *e)
{
	if (e->draining && e->nconns == 0)
		egressd_stop(e);
	else if (!e->draining && e->nconns < e->lim.max_conns && e->buffered <= e->lim.max_buffered)
		egressd_listeners(e, listener_resume);
}

static const char *const egressd_overload_rules[OVERLOAD_COUNT] = {
    [OVERLOAD_CONNS] = "max-conns",
    [OVERLOAD_MEMORY] = "max-buffered",
};

static int
egressd_over(const struct egressd *e, enum overload_kind k)
{
	return k == OVERLOAD_CONNS ? e->nconns >= e->lim.max_conns
	                           : e->buffered > e->lim.max_buffered;
}

/*
 * A limit was hit (e->overloaded): an episode starts unless one is on,
 * with a `daemon` line and one line on stderr.
 */
static void
egressd_overloaded(struct egressd *e, enum overload_kind k)
{
	struct overload *ov = &e->ov[k];
	struct audit_event ev;
	char text[256];

	if (ov->on)
		return;
	ov->on = 1;
	ov->since_ms = time_mono_ms();
	ov->episodes++;
	ov->ep_shed = 0;
	if (k == OVERLOAD_CONNS)
		snprintf(text, sizeof text,
		         "%u connections open (--max-conns): new connections wait in the listen "
		         "queue",
		         e->nconns);
	else
		snprintf(text, sizeof text,
		         "%zu bytes held in connection buffers, past --max-buffered %zu: "
		         "connections move in small steps, new ones wait, bodies to hold are "
		         "refused (503)",
		         e->buffered, e->lim.max_buffered);
	log_warnx("overload: %s", text);
	audit_event_init(&ev);
	ev.event = "daemon";
	ev.reason = "overload";
	ev.rule = egressd_overload_rules[k];
	ev.mode = config_mode_name(policy_mode(e->policy));
	ev.error = text;
	audit_write(e->audit, &ev);
}

/*
 * Once a second: an episode whose limit no longer holds ends (a `daemon`
 * line with how long it lasted and what was shed: at most one pair of
 * lines a second, however often the limit is hit and cleared), one whose
 * limit holds without anything having hit it yet starts, and accepting
 * resumes once no limit holds.
 */
static void
egressd_overload_tick(struct egressd *e)
{
	struct audit_event ev;
	struct overload *ov;
	uint64_t ms;
	int k;

	for (k = 0; k < OVERLOAD_COUNT; k++) {
		ov = &e->ov[k];
		if (egressd_over(e, (enum overload_kind)k)) {
			egressd_overloaded(e, (enum overload_kind)k);
			continue;
		}
		if (!ov->on)
			continue;
		ov->on = 0;
		ms = time_mono_ms() - ov->since_ms;
		ov->ms_total += ms;
		log_info("overload over (%s): %.1f s, %llu shed", egressd_overload_rules[k],
		         (double)ms / 1000.0, (unsigned long long)ov->ep_shed);
		audit_event_init(&ev);
		ev.event = "daemon";
		ev.reason = "overload over";
		ev.rule = egressd_overload_rules[k];
		ev.mode = config_mode_name(policy_mode(e->policy));
		ev.duration_ms = (int64_t)ms;
		ev.refused = (int64_t)ov->ep_shed;
		audit_write(e->audit, &ev);
	}
	if (!e->draining && !egressd_over(e, OVERLOAD_CONNS) && !egressd_over(e, OVERLOAD_MEMORY))
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
	egressd_listeners(e, listener_shut);
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

static void
egressd_trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct egressd *e = arg;
	struct mallinfo2 mi;
	uint64_t activity;
	unsigned idle;
	int busy, k;

	audit_tick(e->audit);
	egressd_overload_tick(e);
	slab_trim(&e->xslab, 1);
	upstream_pool_trim(e->pool);
	conn_trim_idle(e);
	/* Counters that only grow: their sum changes whenever one of them does. */
	activity = e->conn_seq + (e->conn_seq - e->nconns) + e->m.bytes_up + e->m.bytes_down;
	for (k = 0; k < METRICS_EV_COUNT; k++)
		activity += e->m.requests[k][0] + e->m.requests[k][1] + e->m.requests[k][2];
	idle = upstream_pool_idle(e->pool);
	busy = activity != e->trim_activity || idle < e->trim_pool_idle;
	e->trim_activity = activity;
	e->trim_pool_idle = idle;
	if (busy)
		e->trim_busy++;
	if ((!busy && e->trim_busy > 0) || e->trim_busy >= EGRESSD_TRIM_BUSY) {
		e->trim_busy = 0;
		mi = mallinfo2();
		if (mi.fordblks > EGRESSD_TRIM_BYTES)
			malloc_trim(0);
	}
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

static int
egressd_signal(struct egressd *e, struct event **ev, int sig, event_callback_fn cb)
{
	*ev = evsignal_new(e->base, sig, cb, e);
	return *ev == NULL || event_add(*ev, NULL) == -1 ? -1 : 0;
}

/*
 * A runtime with its event loop, upstream pool and connection engine,
 * and nothing to accept from yet: the caller hangs the resolver, TLS and
 * listeners on it, or hands the engine sockets itself (conn_accept).
 */
struct egressd *
egressd_new(const struct egressd_conf *conf)
{
	struct egressd *e;

	/*
	 * A peer that went away is an error on its socket, not a signal; a
	 * file size limit reached is a failed write of the audit log.
	 */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	e = xcalloc(1, sizeof *e);
	if ((e->base = egressd_base_new()) == NULL)
		fatalx("cannot create the event loop");
	e->policy = conf->policy;
	e->audit = conf->audit;
	e->files = conf->files;
	e->nfiles = conf->nfiles;
	e->lim = conf->lim;
	e->http = conf->http;
	e->audit_path = xstrdup(conf->audit_path != NULL ? conf->audit_path : "-");
	e->conn_gone = egressd_conn_gone;
	e->overloaded = egressd_overloaded;
	e->generation = 1;
	clock_gettime(CLOCK_REALTIME, &e->started);
	egressd_sources_set(e, e->policy);
	egressd_audit_configure(e, e->policy);
	egressd_explain_cmd(e, NULL);
	TAILQ_INIT(&e->conns);
	e->pool = upstream_pool_new(e);
	conn_engine_init(e);
	return e;
}

/*
 * Take the signals, batch the audit lines, start the tick, and say in the
 * audit log that egressd runs; -1 when the signals cannot be had.
 */
int
egressd_start(struct egressd *e)
{
	if (egressd_signal(e, &e->ev_hup, SIGHUP, egressd_reload_cb) == -1 ||
	    egressd_signal(e, &e->ev_term, SIGTERM, egressd_term_cb) == -1 ||
	    egressd_signal(e, &e->ev_int, SIGINT, egressd_term_cb) == -1 ||
	    egressd_signal(e, &e->ev_usr1, SIGUSR1, egressd_reopen_cb) == -1)
		return -1;
	e->ev_audit = event_new(e->base, -1, 0, egressd_audit_flush_cb, e);
	audit_set_batch(e->audit, egressd_audit_wakeup, e);
	e->ev_trim = event_new(e->base, -1, EV_PERSIST, egressd_trim_cb, e);
	event_add(e->ev_trim, &(struct timeval){1, 0});
	egressd_audit_daemon(e, "started", NULL);
	egressd_ignored_audit(e, policy_config(e->policy));
	return 0;
}

/* Run the loop until a signal ends it. */
void
egressd_run(struct egressd *e)
{
	if (e->tls != NULL)
		tls_start(e->tls, e->base);
	event_base_dispatch(e->base);
	/* Drops logged up to the last moment (a payload that sent and exited) are audited. */
	nflog_drain(e->nflog);
	egressd_audit_daemon(e, "stopped", NULL);
	log_info("stopped");
}

static void
egressd_event_free(struct event *ev)
{
	if (ev != NULL)
		event_free(ev);
}

/* Close what is still open and free everything hung on e. */
void
egressd_free(struct egressd *e)
{
	size_t i;

	if (e == NULL)
		return;
	conn_close_all(e, "shutdown");
	control_free(e->control);
	metrics_http_free(e->scrape);
	listener_free(e->proxy_lst);
	listener_free(e->transparent_lst[0]);
	listener_free(e->transparent_lst[1]);
	nflog_free(e->nflog);
	upstream_pool_free(e->pool);
	resolver_free(e->resolver);
	conn_engine_free(e);
	egressd_event_free(e->ev_hup);
	egressd_event_free(e->ev_term);
	egressd_event_free(e->ev_int);
	egressd_event_free(e->ev_usr1);
	egressd_event_free(e->ev_grace);
	egressd_event_free(e->ev_trim);
	if (e->audit != NULL)
		audit_set_batch(e->audit, NULL, NULL);
	egressd_event_free(e->ev_audit);
	audit_close(e->audit);
	policy_unref(e->policy);
	tls_free(e->tls);
	event_base_free(e->base);
	for (i = 0; i < e->nsources; i++)
		free(e->sources[i].path);
	free(e->sources);
	free(e->explain_cmd);
	free(e->audit_path);
	metrics_free(&e->m);
	free(e);
}
