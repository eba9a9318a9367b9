/*
 * What egressd counts and how it is shown to Prometheus. The counters are
 * plain integers in the runtime (struct metrics), bumped where the audit
 * events are written (conn.c, nflog.c, the listener, reloads; the resolver,
 * the audit writer and the CA keep their own and are read at scrape time),
 * so counting costs the hot path an add. The hosts blocked most are kept
 * in a small table apart (space-saving: a full table gives the least
 * counted slot to a new host), so no host name is ever a label. The
 * exposition (metrics_format) is the Prometheus text format 0.0.4, served
 * by the control socket's `metrics` and by --metrics ADDR:PORT, a minimal
 * HTTP/1.1 server for GET /metrics on loopback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "audit.h"
#include "proxy.h"
#include "resolver.h"
#include "tls.h"
#include "upstream.h"

#ifndef EGRESS_VERSION
#define EGRESS_VERSION "unknown"
#endif

#define METRICS_HTTP_CLIENTS 16   /* scrapers at once; more are closed at once */
#define METRICS_HTTP_HEAD    8192 /* bytes of a request head */
#define METRICS_HTTP_SECS    5    /* to send the head, and to take the answer */

/* --- the counters --- */

static const char *const metrics_events[METRICS_EV_COUNT] = {
    [METRICS_EV_HTTP] = "http",
    [METRICS_EV_CONNECT] = "connect",
    [METRICS_EV_TCP] = "tcp",
    [METRICS_EV_TLS] = "tls",
};

static const char *const metrics_conns[METRICS_CONN_COUNT] = {
    [METRICS_CONN_HTTP] = "http",
    [METRICS_CONN_INTERCEPTED] = "intercepted",
    [METRICS_CONN_TUNNEL] = "tunnel",
    [METRICS_CONN_HANDSHAKE] = "handshake",
};

const char *
metrics_event_name(int ev)
{
	return metrics_events[ev];
}

const char *
metrics_conn_name(int kind)
{
	return metrics_conns[kind];
}

static uint64_t
metrics_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h != 0 ? h : 1;
}

/*
 * One more block for host by decision d. Only blocks come here, and the
 * table is a bounded scan of hashes: a flood of blocked names costs the
 * same per request and the same memory as a few.
 */
void
metrics_blocked_note(struct metrics *m, const char *host, const struct decision *d)
{
	struct metrics_blocked *b, *least = NULL;
	uint64_t h = metrics_hash(host);
	size_t i;

	if (m->blocked == NULL)
		m->blocked = xcalloc(METRICS_BLOCKED_MAX, sizeof *m->blocked);
	for (i = 0; i < METRICS_BLOCKED_MAX; i++) {
		b = &m->blocked[i];
		if (b->hash == h && strcmp(b->host, host) == 0)
			break;
		if (least == NULL || b->count < least->count)
			least = b;
	}
	if (i == METRICS_BLOCKED_MAX) {
		/* A free slot has count 0, so it is the least. */
		b = least;
		b->hash = h;
		str_copy(b->host, sizeof b->host, host);
	}
	b->count++;
	str_copy(b->rule, sizeof b->rule, d->rule);
	b->list = d->list;
	str_copy(b->source, sizeof b->source, d->source);
}

static int
metrics_blocked_cmp(const void *a, const void *b)
{
	const struct metrics_blocked *x = *(const struct metrics_blocked *const *)a;
	const struct metrics_blocked *y = *(const struct metrics_blocked *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->host, y->host);
}

/* The max hosts blocked most, most first, into top; how many there are. */
size_t
metrics_blocked_top(const struct metrics *m, const struct metrics_blocked **top, size_t max)
{
	const struct metrics_blocked *all[METRICS_BLOCKED_MAX];
	size_t i, n = 0;

	for (i = 0; m->blocked != NULL && i < METRICS_BLOCKED_MAX; i++)
		if (m->blocked[i].count > 0)
			all[n++] = &m->blocked[i];
	qsort(all, n, sizeof all[0], metrics_blocked_cmp);
	if (n > max)
		n = max;
	memcpy(top, all, n * sizeof all[0]);
	return n;
}

void
metrics_free(struct metrics *m)
{
	free(m->blocked);
	m->blocked = NULL;
}

/* Read every counter and gauge at once, from the runtime and the modules under it. */
void
metrics_gather(struct egressd *e, struct metrics_snapshot *s)
{
	struct resolver_stats rs;
	struct audit_stats as;
	struct tls_ca_info ca;

	memset(s, 0, sizeof *s);
	s->m = &e->m;
	s->version = EGRESS_VERSION;
	s->start_time = (double)e->started.tv_sec + e->started.tv_nsec / 1e9;
	s->policy_loaded = (double)e->loaded.tv_sec + e->loaded.tv_nsec / 1e9;
	s->generation = e->generation;
	s->mode = config_mode_name(policy_mode(e->policy));
	if (e->resolver != NULL) {
		resolver_stats(e->resolver, &rs);
		memcpy(s->dns, rs.queries, sizeof s->dns);
		s->dns_cache_entries = rs.cache_entries;
		s->dns_cache_bytes = rs.cache_bytes;
	}
	conn_count_kinds(e, s->open);
	memcpy(s->m_ov, e->ov, sizeof s->m_ov);
	s->max_conns = e->lim.max_conns;
	s->buffered = e->buffered;
	s->max_buffered = e->lim.max_buffered;
	s->pool_idle = upstream_pool_idle(e->pool);
	if (e->tls != NULL) {
		tls_ca_info(e->tls, &ca);
		s->has_ca = 1;
		s->ca_not_after = (double)ca.not_after;
		s->leaves_minted = ca.leaves_minted;
		s->leaves_cached = ca.leaves_cached;
	}
	audit_stats(e->audit, &as);
	s->audit_lines = as.lines;
	s->audit_bytes = as.bytes;
	s->audit_errors = as.write_errors;
	s->audit_writable = !as.failing;
	s->audit_refused = as.refused;
	s->audit_unwritten = as.unwritten;
	s->audit_unwritable = as.failures;
	s->audit_rotations = as.rotations;
	s->audit_reserved = as.reserved;
	s->control_clients = control_clients(e->control);
}

/* --- the exposition --- */

static void
metrics_head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped. */
static void
metrics_label(struct buf *b, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			buf_addc(b, '\\');
		if (*v == '\n') {
			buf_adds(b, "\\n");
			continue;
		}
		buf_addc(b, *v);
	}
}

static void
metrics_u64(struct buf *b, const char *name, const char *labels, uint64_t v)
{
	buf_printf(b, "%s%s %llu\n", name, labels, (unsigned long long)v);
}

/* One metric without labels, with its HELP and TYPE. */
static void
metrics_one(struct buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	metrics_head(b, name, type, help);
	metrics_u64(b, name, "", v);
}

static void
metrics_requests(const struct metrics_snapshot *s, struct buf *b)
{
	char labels[96];
	int ev, a, c;

	metrics_head(b, "egressd_requests_total", "counter",
	             "Requests, CONNECTs, redirected streams and refused TLS handshakes decided, "
	             "by audit event and action.");
	for (ev = 0; ev < METRICS_EV_COUNT; ev++)
		for (a = ACTION_ALLOW; a <= ACTION_BLOCK; a++) {
			snprintf(labels, sizeof labels, "{event=\"%s\",action=\"%s\"}",
			         metrics_events[ev], policy_action_name((enum policy_action)a));
			metrics_u64(b, "egressd_requests_total", labels, s->m->requests[ev][a]);
		}
	metrics_head(b, "egressd_bytes_total", "counter",
	             "Body and tunnel bytes relayed, by direction (up: to the destination).");
	metrics_u64(b, "egressd_bytes_total", "{direction=\"up\"}", s->m->bytes_up);
	metrics_u64(b, "egressd_bytes_total", "{direction=\"down\"}", s->m->bytes_down);
	metrics_head(b, "egressd_dns_queries_total", "counter",
	             "DNS queries answered for clients, by action and whether the cache answered.");
	for (a = ACTION_ALLOW; a <= ACTION_BLOCK; a++)
		for (c = 0; c < 2; c++) {
			snprintf(labels, sizeof labels, "{action=\"%s\",cache=\"%s\"}",
			         policy_action_name((enum policy_action)a), c ? "hit" : "miss");
			metrics_u64(b, "egressd_dns_queries_total", labels, s->dns[a][c]);
		}
	metrics_one(b, "egressd_packets_dropped_total", "counter",
	            "Packets the sandbox's nftables rules dropped and logged to egressd.",
	            s->m->packets_dropped);
}

/* The limits, what the buffers hold, and the overload episodes by limit. */
static void
metrics_overload(const struct metrics_snapshot *s, struct buf *b)
{
	static const char *const limits[OVERLOAD_COUNT] = {"connections", "memory"};
	char labels[64];
	int k;

	metrics_one(b, "egressd_connections_max", "gauge",
	            "The connection limit (--max-conns, or fitted to a memory limit).",
	            s->max_conns);
	metrics_one(b, "egressd_buffered_bytes", "gauge",
	            "Bytes held in the connections' buffers now.", s->buffered);
	metrics_one(b, "egressd_buffered_max_bytes", "gauge",
	            "The memory budget of the connections' buffers (--max-buffered, or fitted to "
	            "a memory limit).",
	            s->max_buffered);
	metrics_head(b, "egressd_overload", "gauge",
	             "1 while a limit holds and egressd sheds load, by limit.");
	for (k = 0; k < OVERLOAD_COUNT; k++) {
		snprintf(labels, sizeof labels, "{limit=\"%s\"}", limits[k]);
		metrics_u64(b, "egressd_overload", labels, (uint64_t)s->m_ov[k].on);
	}
	metrics_head(b, "egressd_overload_episodes_total", "counter",
	             "Times a limit began to hold, by limit.");
	for (k = 0; k < OVERLOAD_COUNT; k++) {
		snprintf(labels, sizeof labels, "{limit=\"%s\"}", limits[k]);
		metrics_u64(b, "egressd_overload_episodes_total", labels, s->m_ov[k].episodes);
	}
	metrics_head(b, "egressd_overload_shed_total", "counter",
	             "Connections closed at accept and requests refused (503, WebSocket 1013) "
	             "while a limit held, by limit.");
	for (k = 0; k < OVERLOAD_COUNT; k++) {
		snprintf(labels, sizeof labels, "{limit=\"%s\"}", limits[k]);
		metrics_u64(b, "egressd_overload_shed_total", labels, s->m_ov[k].shed);
	}
}

static void
metrics_conns_write(const struct metrics_snapshot *s, struct buf *b)
{
	char labels[64];
	int k;

	metrics_head(b, "egressd_connections_accepted_total", "counter",
	             "Client connections accepted, by listener.");
	metrics_u64(b, "egressd_connections_accepted_total", "{listener=\"proxy\"}",
	            s->m->accepted[0]);
	metrics_u64(b, "egressd_connections_accepted_total", "{listener=\"transparent\"}",
	            s->m->accepted[1]);
	metrics_head(b, "egressd_connections_open", "gauge",
	             "Client connections open now, by what they are doing.");
	for (k = 0; k < METRICS_CONN_COUNT; k++) {
		snprintf(labels, sizeof labels, "{kind=\"%s\"}", metrics_conns[k]);
		metrics_u64(b, "egressd_connections_open", labels, s->open[k]);
	}
	metrics_one(b, "egressd_upstream_idle_connections", "gauge",
	            "Idle upstream connections kept for reuse.", s->pool_idle);
	metrics_overload(s, b);
	metrics_one(b, "egressd_dns_cache_entries", "gauge", "Answers in the DNS cache.",
	            s->dns_cache_entries);
	metrics_one(b, "egressd_dns_cache_bytes", "gauge", "Bytes the DNS cache's answers take.",
	            s->dns_cache_bytes);
}

static void
metrics_policy(const struct metrics_snapshot *s, struct buf *b)
{
	static const char *const modes[] = {"practical", "strict", "off"};
	char labels[64];
	size_t i;

	metrics_one(b, "egressd_policy_generation", "gauge",
	            "The policy in force: 1 at start, one more with each reload that loaded.",
	            s->generation);
	metrics_head(b, "egressd_policy_loaded_timestamp_seconds", "gauge",
	             "When the policy in force was loaded, in seconds since the epoch.");
	buf_printf(b, "egressd_policy_loaded_timestamp_seconds %.3f\n", s->policy_loaded);
	metrics_head(b, "egressd_policy_reloads_total", "counter",
	             "Policy reloads (SIGHUP or the control socket), by result.");
	metrics_u64(b, "egressd_policy_reloads_total", "{result=\"ok\"}", s->m->reloads[0]);
	metrics_u64(b, "egressd_policy_reloads_total", "{result=\"failed\"}", s->m->reloads[1]);
	metrics_head(b, "egressd_policy_mode", "gauge",
	             "The network mode in force: 1 for the mode, 0 for the others.");
	for (i = 0; i < EG_NELEM(modes); i++) {
		snprintf(labels, sizeof labels, "{mode=\"%s\"}", modes[i]);
		metrics_u64(b, "egressd_policy_mode", labels, strcmp(s->mode, modes[i]) == 0);
	}
}

static void
metrics_process(const struct metrics_snapshot *s, struct buf *b)
{
	if (s->has_ca) {
		metrics_one(b, "egressd_tls_leaves_minted_total", "counter",
		            "Leaf certificates minted for intercepted hosts.", s->leaves_minted);
		metrics_one(b, "egressd_tls_leaves_cached", "gauge",
		            "Minted leaf certificates kept for reuse.", s->leaves_cached);
		metrics_head(b, "egressd_ca_expiry_timestamp_seconds", "gauge",
		             "When the interception CA's certificate expires, in seconds since "
		             "the epoch.");
		buf_printf(b, "egressd_ca_expiry_timestamp_seconds %.0f\n", s->ca_not_after);
	}
	metrics_one(b, "egressd_audit_lines_total", "counter", "Audit log lines made.",
	            s->audit_lines);
	metrics_one(b, "egressd_audit_bytes_total", "counter", "Audit log bytes written.",
	            s->audit_bytes);
	metrics_one(b, "egressd_audit_write_errors_total", "counter",
	            "Audit log writes that failed or landed short.", s->audit_errors);
	metrics_one(b, "egressd_audit_writable", "gauge",
	            "1 while the audit log can be written, 0 while it cannot.",
	            (uint64_t)s->audit_writable);
	metrics_one(b, "egressd_audit_unwritable_total", "counter",
	            "Times the audit log became impossible to write (a full disk, an I/O error).",
	            s->audit_unwritable);
	metrics_one(b, "egressd_audit_refused_total", "counter",
	            "Requests refused because their audit line could not be written "
	            "(audit.onError: block).",
	            s->audit_refused);
	metrics_one(b, "egressd_audit_lines_unwritten_total", "counter",
	            "Audit lines made that could not be written (their seqs are in the "
	            "daemon line written after).",
	            s->audit_unwritten);
	metrics_one(b, "egressd_audit_rotations_total", "counter",
	            "Audit log rotations (audit.maxBytes).", s->audit_rotations);
	metrics_one(b, "egressd_audit_reserved_bytes", "gauge",
	            "Disk space allocated ahead of the audit lines still to come.",
	            s->audit_reserved);
	metrics_one(b, "egressd_control_requests_total", "counter",
	            "Requests on the control socket.", s->m->control_requests);
	metrics_one(b, "egressd_control_errors_total", "counter",
	            "Control socket requests answered with an error (refused, malformed, busy).",
	            s->m->control_errors);
	metrics_one(b, "egressd_control_clients", "gauge", "Control socket clients connected now.",
	            s->control_clients);
	metrics_head(b, "egressd_start_time_seconds", "gauge",
	             "When egressd started, in seconds since the epoch.");
	buf_printf(b, "egressd_start_time_seconds %.3f\n", s->start_time);
	metrics_head(b, "egressd_build_info", "gauge", "egressd's version, as a label; always 1.");
	buf_adds(b, "egressd_build_info{version=\"");
	metrics_label(b, s->version);
	buf_adds(b, "\"} 1\n");
}

/* The Prometheus text exposition (format 0.0.4) of s, appended to b. */
void
metrics_format(const struct metrics_snapshot *s, struct buf *b)
{
	metrics_requests(s, b);
	metrics_conns_write(s, b);
	metrics_policy(s, b);
	metrics_process(s, b);
}

/* --- GET /metrics --- */

struct metrics_client {
	TAILQ_ENTRY(metrics_client) entry;
	struct metrics_http *mh;
	struct bufferevent *bev;
	struct event *deadline;
	int answered;
};

struct metrics_http {
	struct egressd *e;
	struct evconnlistener *lev;
	TAILQ_HEAD(, metrics_client) clients;
	unsigned nclients;
};

static void
metrics_client_free(struct metrics_client *mc)
{
	TAILQ_REMOVE(&mc->mh->clients, mc, entry);
	mc->mh->nclients--;
	event_free(mc->deadline);
	bufferevent_free(mc->bev);
	free(mc);
}

/* Answer and close once written: every scrape is one connection. */
static void
metrics_reply(struct metrics_client *mc, int status, const char *reason, const char *body,
              size_t len, int head)
{
	struct evbuffer *out = bufferevent_get_output(mc->bev);

	mc->answered = 1;
	evtimer_del(mc->deadline);
	bufferevent_disable(mc->bev, EV_READ);
	evbuffer_add_printf(out,
	                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                    "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
	                    status, reason,
	                    status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                                  : "text/plain; charset=utf-8",
	                    len);
	if (!head)
		evbuffer_add(out, body, len);
	bufferevent_enable(mc->bev, EV_WRITE);
}

static void
metrics_reply_text(struct metrics_client *mc, int status, const char *reason, const char *text)
{
	metrics_reply(mc, status, reason, text, strlen(text), 0);
}

static void
metrics_serve(struct metrics_client *mc, const struct http_msg *m)
{
	struct metrics_snapshot s;
	const char *path = m->uri.path;
	size_t plen;
	struct buf b;

	plen = path != NULL ? strcspn(path, "?") : 0;
	if (m->uri.form != HTTP_TARGET_ORIGIN || plen != 8 || strncmp(path, "/metrics", 8) != 0) {
		metrics_reply_text(mc, 404, "Not Found", "egressd serves /metrics only\n");
		return;
	}
	if (m->method_id != HTTP_M_GET && m->method_id != HTTP_M_HEAD) {
		metrics_reply_text(mc, 405, "Method Not Allowed", "GET /metrics\n");
		return;
	}
	buf_init(&b);
	metrics_gather(mc->mh->e, &s);
	metrics_format(&s, &b);
	metrics_reply(mc, 200, "OK", b.data, b.len, m->method_id == HTTP_M_HEAD);
	buf_free(&b);
}

static void
metrics_read_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_client *mc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	struct http_msg m;
	enum http_parse rc;

	if (mc->answered)
		return;
	http_msg_init(&m);
	rc = http_parse_request((const char *)evbuffer_pullup(in, -1), len, &http_limits_default,
	                        &m);
	if (rc == HTTP_PARSE_DONE)
		metrics_serve(mc, &m);
	else if (rc == HTTP_PARSE_ERROR)
		metrics_reply_text(mc, 400, "Bad Request", "a malformed request\n");
	else if (len >= METRICS_HTTP_HEAD)
		metrics_reply_text(mc, 431, "Request Header Fields Too Large",
		                   "the request head is too large\n");
	http_msg_free(&m);
}

static void
metrics_write_cb(struct bufferevent *bev, void *arg)
{
	struct metrics_client *mc = arg;

	if (mc->answered && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		metrics_client_free(mc);
}

static void
metrics_event_cb(struct bufferevent *bev, short what, void *arg)
{
	metrics_client_free(arg);
}

static void
metrics_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_client *mc = arg;

	metrics_reply_text(mc, 408, "Request Timeout", "no whole request head within 5 seconds\n");
}

static void
metrics_accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                  void *arg)
{
	struct metrics_http *mh = arg;
	struct metrics_client *mc;
	struct timeval tv = {METRICS_HTTP_SECS, 0};

	if (mh->nclients >= METRICS_HTTP_CLIENTS) {
		close(fd);
		return;
	}
	mc = xcalloc(1, sizeof *mc);
	mc->mh = mh;
	if ((mc->bev = bufferevent_socket_new(mh->e->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		free(mc);
		return;
	}
	mc->deadline = evtimer_new(mh->e->base, metrics_deadline_cb, mc);
	TAILQ_INSERT_TAIL(&mh->clients, mc, entry);
	mh->nclients++;
	bufferevent_setwatermark(mc->bev, EV_READ, 0, METRICS_HTTP_HEAD);
	bufferevent_set_timeouts(mc->bev, NULL, &tv);
	bufferevent_setcb(mc->bev, metrics_read_cb, metrics_write_cb, metrics_event_cb, mc);
	bufferevent_enable(mc->bev, EV_READ);
	evtimer_add(mc->deadline, &tv);
}

/* Serve GET /metrics on the listening TCP socket fd (bound or inherited, checked by main). */
struct metrics_http *
metrics_http_new(struct egressd *e, int fd)
{
	struct metrics_http *mh;

	mh = xcalloc(1, sizeof *mh);
	mh->e = e;
	TAILQ_INIT(&mh->clients);
	mh->lev = evconnlistener_new(e->base, metrics_accept_cb, mh,
	                             LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (mh->lev == NULL) {
		close(fd);
		free(mh);
		return NULL;
	}
	return mh;
}

void
metrics_http_free(struct metrics_http *mh)
{
	struct metrics_client *mc;

	if (mh == NULL)
		return;
	while ((mc = TAILQ_FIRST(&mh->clients)) != NULL)
		metrics_client_free(mc);
	evconnlistener_free(mh->lev);
	free(mh);
}
