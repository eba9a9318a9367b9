/*
 * `status` on the control socket: the running egressd in one JSON object
 * (docs/control.md): who it is, the policy in force and the files it came
 * from, what it has decided (counters by event and action, the hosts it
 * blocked most), what it holds open, its CA and its audit log. Counters
 * only: no request, header or key is ever in it.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "proxy.h"
#include "resolver.h"
#include "tls.h"
#include "upstream.h"

#define STATUS_TOP_BLOCKED 10

static void
status_key(struct buf *b, const char *key, int first)
{
	if (!first)
		buf_addc(b, ',');
	json_escape_str(b, key);
	buf_addc(b, ':');
}

static void
status_u64(struct buf *b, const char *key, uint64_t v)
{
	status_key(b, key, 0);
	buf_printf(b, "%llu", (unsigned long long)v);
}

static void
status_time(struct buf *b, const char *key, const struct timespec *ts)
{
	char text[32];

	status_key(b, key, 0);
	time_rfc3339_ms(ts, text);
	json_escape_str(b, text);
}

/* Whether a source file changed since the policy was loaded from it. */
static int
status_changed(const struct egressd_source *src)
{
	struct stat st;

	if (stat(src->path, &st) == -1)
		return !src->missing;
	return src->missing || st.st_mtim.tv_sec != src->mtime.tv_sec ||
	       st.st_mtim.tv_nsec != src->mtime.tv_nsec;
}

/*
 * The policy in force: its generation, when it was loaded, and every file
 * it came from with the mtime it had then ("changed": edited since, so a
 * reload would read something else). Also in every live explain answer.
 */
void
status_policy_json(struct egressd *e, struct buf *b)
{
	const struct egressd_source *src;
	size_t i;

	buf_addc(b, '{');
	status_key(b, "generation", 1);
	buf_printf(b, "%llu", (unsigned long long)e->generation);
	status_key(b, "mode", 0);
	json_escape_str(b, config_mode_name(policy_mode(e->policy)));
	status_time(b, "loaded", &e->loaded);
	status_key(b, "embedded_default", 0);
	buf_adds(b, e->nfiles == 0 ? "true" : "false");
	status_key(b, "files", 0);
	buf_addc(b, '[');
	for (i = 0; i < e->nsources; i++) {
		src = &e->sources[i];
		buf_adds(b, i > 0 ? ",{" : "{");
		status_key(b, "path", 1);
		json_escape_str(b, src->path);
		status_key(b, "kind", 0);
		json_escape_str(b, src->kind);
		if (src->missing) {
			status_key(b, "mtime", 0);
			buf_adds(b, "null");
		} else
			status_time(b, "mtime", &src->mtime);
		status_key(b, "changed", 0);
		buf_adds(b, status_changed(src) ? "true" : "false");
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
	status_key(b, "pid", 0);
	buf_printf(b, "%ld", (long)getpid());
	status_key(b, "control", 0);
	json_escape_str(b, control_path(e->control));
	buf_addc(b, '}');
}

static void
status_counts(struct buf *b, const char *key, const uint64_t n[3], int first)
{
	int a;

	status_key(b, key, first);
	buf_addc(b, '{');
	for (a = ACTION_ALLOW; a <= ACTION_BLOCK; a++) {
		status_key(b, policy_action_name((enum policy_action)a), a == ACTION_ALLOW);
		buf_printf(b, "%llu", (unsigned long long)n[a]);
	}
	buf_addc(b, '}');
}

/* Counters by event and action: the proxy's events, then DNS's (resolver). */
static void
status_requests(struct buf *b, const struct metrics_snapshot *s)
{
	uint64_t dns[3];
	int ev, a;

	status_key(b, "requests", 0);
	buf_addc(b, '{');
	for (ev = 0; ev < METRICS_EV_COUNT; ev++)
		status_counts(b, metrics_event_name(ev), s->m->requests[ev], ev == 0);
	for (a = 0; a < 3; a++)
		dns[a] = s->dns[a][0] + s->dns[a][1];
	status_counts(b, "dns", dns, 0);
	status_key(b, "packet", 0);
	buf_printf(b, "{\"block\":%llu}", (unsigned long long)s->m->packets_dropped);
	buf_addc(b, '}');
}

static void
status_blocked(struct buf *b, const struct metrics *m)
{
	const struct metrics_blocked *top[STATUS_TOP_BLOCKED];
	size_t n, i;

	n = metrics_blocked_top(m, top, STATUS_TOP_BLOCKED);
	status_key(b, "top_blocked", 0);
	buf_addc(b, '[');
	for (i = 0; i < n; i++) {
		buf_adds(b, i > 0 ? ",{" : "{");
		status_key(b, "host", 1);
		json_escape_str(b, top[i]->host);
		status_u64(b, "count", top[i]->count);
		status_key(b, "rule", 0);
		json_escape_str(b, top[i]->rule);
		status_key(b, "list", 0);
		json_escape_str(b, policy_list_name(top[i]->list));
		status_key(b, "source", 0);
		json_escape_str(b, top[i]->source);
		buf_addc(b, '}');
	}
	buf_addc(b, ']');
}

static void
status_connections(struct buf *b, struct egressd *e, const struct metrics_snapshot *s)
{
	int k;

	status_key(b, "connections", 0);
	buf_addc(b, '{');
	status_key(b, "open", 1);
	buf_printf(b, "%u", e->nconns);
	status_u64(b, "max", e->lim.max_conns);
	status_key(b, "by_kind", 0);
	buf_addc(b, '{');
	for (k = 0; k < METRICS_CONN_COUNT; k++) {
		status_key(b, metrics_conn_name(k), k == 0);
		buf_printf(b, "%llu", (unsigned long long)s->open[k]);
	}
	buf_addc(b, '}');
	status_key(b, "accepted", 0);
	buf_printf(b, "{\"proxy\":%llu,\"transparent\":%llu}",
	           (unsigned long long)s->m->accepted[0], (unsigned long long)s->m->accepted[1]);
	status_u64(b, "upstream_pool_idle", s->pool_idle);
	status_u64(b, "buffered_bytes", s->buffered);
	status_u64(b, "max_buffered_bytes", s->max_buffered);
	buf_addc(b, '}');
}

/* The overload episodes, by limit: on now, since when, how many, what was shed. */
static void
status_overload(struct buf *b, const struct metrics_snapshot *s)
{
	static const char *const limits[OVERLOAD_COUNT] = {"connections", "memory"};
	const struct overload *ov;
	uint64_t now = time_mono_ms();
	int k;

	status_key(b, "overload", 0);
	buf_addc(b, '{');
	for (k = 0; k < OVERLOAD_COUNT; k++) {
		ov = &s->m_ov[k];
		status_key(b, limits[k], k == 0);
		buf_addc(b, '{');
		status_key(b, "on", 1);
		buf_adds(b, ov->on ? "true" : "false");
		status_u64(b, "for_ms", ov->on ? now - ov->since_ms : 0);
		status_u64(b, "episodes", ov->episodes);
		status_u64(b, "shed", ov->shed);
		buf_addc(b, '}');
	}
	buf_addc(b, '}');
}

static void
status_ca(struct buf *b, struct egressd *e)
{
	struct tls_ca_info ca;
	struct timespec ts = {0, 0};

	status_key(b, "ca", 0);
	if (e->tls == NULL) {
		buf_adds(b, "null");
		return;
	}
	tls_ca_info(e->tls, &ca);
	ts.tv_sec = ca.not_after;
	buf_addc(b, '{');
	status_key(b, "fingerprint_sha256", 1);
	json_escape_str(b, ca.fingerprint);
	status_time(b, "not_after", &ts);
	status_key(b, "path", 0);
	json_escape_str(b, tls_ca_path(e->tls));
	status_u64(b, "leaves_minted", ca.leaves_minted);
	status_u64(b, "leaves_cached", ca.leaves_cached);
	buf_addc(b, '}');
}

static void
status_audit(struct buf *b, struct egressd *e)
{
	struct audit_stats st;

	audit_stats(e->audit, &st);
	status_key(b, "audit", 0);
	buf_addc(b, '{');
	status_key(b, "path", 1);
	json_escape_str(b, e->audit_path);
	status_u64(b, "last_seq", st.seq);
	status_u64(b, "lines", st.lines);
	status_u64(b, "bytes", st.bytes);
	status_u64(b, "write_errors", st.write_errors);
	status_key(b, "on_error", 0);
	json_escape_str(b, st.on_error == AUDIT_ON_ERROR_BLOCK ? "block" : "continue");
	/* ok, or what egressd does while lines cannot be written. */
	status_key(b, "state", 0);
	json_escape_str(b, !st.failing                           ? "ok"
	                   : st.on_error == AUDIT_ON_ERROR_BLOCK ? "refusing"
	                                                         : "losing");
	status_key(b, "error", 0);
	if (st.failing) {
		json_escape_str(b, strerror(st.error));
		status_time(b, "since", &st.since);
	} else
		buf_adds(b, "null");
	status_u64(b, "refused", st.refused);
	status_u64(b, "unwritten", st.unwritten);
	status_u64(b, "unwritable", st.failures);
	status_u64(b, "rotations", st.rotations);
	status_u64(b, "reserved_bytes", st.reserved);
	buf_addc(b, '}');
}

/* The status object (without "ok"). */
void
status_json(struct egressd *e, struct buf *b)
{
	struct metrics_snapshot s;
	struct timespec now;

	metrics_gather(e, &s);
	clock_gettime(CLOCK_REALTIME, &now);
	buf_addc(b, '{');
	status_key(b, "version", 1);
	json_escape_str(b, s.version);
	status_key(b, "pid", 0);
	buf_printf(b, "%ld", (long)getpid());
	status_key(b, "uid", 0);
	buf_printf(b, "%ld", (long)geteuid());
	status_time(b, "started", &e->started);
	status_u64(b, "uptime_seconds", (uint64_t)(now.tv_sec - e->started.tv_sec));
	status_key(b, "mode", 0);
	json_escape_str(b, s.mode);
	status_key(b, "draining", 0);
	buf_adds(b, e->draining ? "true" : "false");
	status_key(b, "policy", 0);
	status_policy_json(e, b);
	status_key(b, "reloads", 0);
	buf_printf(b, "{\"ok\":%llu,\"failed\":%llu}", (unsigned long long)e->m.reloads[0],
	           (unsigned long long)e->m.reloads[1]);
	status_requests(b, &s);
	status_key(b, "bytes", 0);
	buf_printf(b, "{\"up\":%llu,\"down\":%llu}", (unsigned long long)e->m.bytes_up,
	           (unsigned long long)e->m.bytes_down);
	status_blocked(b, &e->m);
	status_connections(b, e, &s);
	status_overload(b, &s);
	status_key(b, "dns", 0);
	buf_printf(b, "{\"cache_entries\":%llu,\"cache_bytes\":%llu}",
	           (unsigned long long)s.dns_cache_entries, (unsigned long long)s.dns_cache_bytes);
	status_ca(b, e);
	status_audit(b, e);
	status_key(b, "control_clients", 0);
	buf_printf(b, "%llu", (unsigned long long)s.control_clients);
	buf_addc(b, '}');
}
