/*
 * The resolver's core: the path of a client's query (parse, decide, cache,
 * forward, filter, answer, audit), the lookups the proxy makes in-process
 * through the same cache and upstreams, and the resolver's life: settings,
 * policy swaps, start and stop. Blocked names never leave: they are
 * answered here, NXDOMAIN with an Extended DNS Error naming the rule.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolver_int.h"

struct resolver_lookup {
	TAILQ_ENTRY(resolver_lookup) entry; /* on r->done once both halves are in */
	struct resolver *r;
	struct policy *policy;
	resolver_lookup_cb cb;
	void *arg;
	struct resolver_waiter *w[2]; /* A and AAAA in flight */
	int left;
	int done;
	int err[2];
	struct addr addrs[2][RESOLVER_MAX_ADDRS];
	size_t naddrs[2];
	int blocked;
	struct decision decision;
};

static const uint16_t resolver_lookup_types[2] = {LDNS_RR_TYPE_A, LDNS_RR_TYPE_AAAA};

void
resolver_conf_init(struct resolver_conf *c)
{
	memset(c, 0, sizeof *c);
	c->attempt_ms = 1500;
	c->deadline_ms = 4000;
	c->tcp_idle_secs = 10;
	c->max_tcp_conns = 256;
	c->max_pending = 2048;
	c->max_waiters = 32768;
	c->cache_entries = 100000;
	c->cache_bytes = 64 * 1024 * 1024;
	c->max_ttl = 86400;
	c->max_neg_ttl = 3600;
	c->audit_cached = 1;
}

/* Add an upstream written ADDR, ADDR:PORT or [ADDR6]:PORT. */
const char *
resolver_conf_add_upstream(struct resolver_conf *c, const char *spec)
{
	const char *err;

	if (c->nupstream >= RESOLVER_MAX_UPSTREAMS)
		return "too many upstream resolvers";
	err = sock_parse(spec, RESOLVER_DEFAULT_PORT, &c->upstream[c->nupstream],
	                 &c->upstream_len[c->nupstream]);
	if (err != NULL)
		return err;
	c->nupstream++;
	return NULL;
}

/* Add the nameservers of a resolv.conf file. */
const char *
resolver_conf_resolv(struct resolver_conf *c, const char *path)
{
	char line[512], addr[128];
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return "cannot read the file";
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, " nameserver %127s", addr) != 1)
			continue;
		if (strchr(addr, '%') != NULL) /* a link-local scope: not for us */
			continue;
		if (resolver_conf_add_upstream(c, addr) != NULL &&
		    c->nupstream >= RESOLVER_MAX_UPSTREAMS)
			break;
	}
	fclose(f);
	return c->nupstream == 0 ? "no nameserver line" : NULL;
}

static uint64_t
resolver_clock_now_us(void *arg)
{
	return time_mono_us();
}

static void
resolver_clock_timer_add(void *arg, struct event *ev, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

	evtimer_add(ev, &tv);
}

static void
resolver_clock_timer_del(void *arg, struct event *ev)
{
	evtimer_del(ev);
}

static const struct resolver_clock resolver_clock_real = {
    resolver_clock_now_us, resolver_clock_timer_add, resolver_clock_timer_del, NULL};

struct resolver *
resolver_new(struct event_base *base, const struct resolver_conf *conf, struct policy *p,
             struct audit *audit)
{
	struct resolver *r;

	r = xcalloc(1, sizeof *r);
	r->base = base;
	r->conf = *conf;
	r->policy = policy_ref(p);
	r->gen = 1;
	r->audit = audit;
	r->clock = resolver_clock_real;
	r->cache = dns_cache_new(conf->cache_entries, conf->cache_bytes);
	r->fwd = dns_forward_new(r, base, conf);
	TAILQ_INIT(&r->done);
	return r;
}

void
resolver_free(struct resolver *r)
{
	struct resolver_lookup *lk;

	if (r == NULL)
		return;
	dns_listen_stop(r);
	dns_forward_free(r->fwd);
	while ((lk = TAILQ_FIRST(&r->done)) != NULL)
		resolver_lookup_cancel(lk);
	dns_cache_free(r->cache);
	policy_unref(r->policy);
	free(r->verdicts);
	free(r);
}

/* Take time from c from now on: the engine tests' clock, set before any query. */
void
resolver_set_clock(struct resolver *r, const struct resolver_clock *c)
{
	r->clock = *c;
}

/* Swap in a new policy (SIGHUP): answers are filtered again on next use. */
void
resolver_set_policy(struct resolver *r, struct policy *p)
{
	policy_ref(p);
	policy_unref(r->policy);
	r->policy = p;
	r->gen++;
}

/*
 * Bind the UDP socket and the TCP listener of a dns listener on spec
 * (ADDR:PORT); with port 0 both take the port UDP picks.
 */
int
resolver_bind(const char *spec, int *udp, int *tcp, char *err, size_t errlen)
{
	return dns_listen_bind(spec, udp, tcp, err, errlen);
}

/* Serve clients on these sockets (either may be -1); the resolver owns them. */
int
resolver_listen(struct resolver *r, int udp, int tcp)
{
	return dns_listen_start(r, udp, tcp);
}

/* Stop serving clients (shutdown); lookups keep working. */
void
resolver_stop(struct resolver *r)
{
	dns_listen_stop(r);
}

const char *
resolver_strerror(int err)
{
	switch (err) {
	case RESOLVER_OK:
		return "ok";
	case RESOLVER_E_NONAME:
		return "no such name";
	case RESOLVER_E_FAIL:
		return "no upstream resolver answered";
	case RESOLVER_E_BLOCKED:
		break;
	}
	return "blocked by the CNAME chain";
}

void
resolver_stats(const struct resolver *r, struct resolver_stats *st)
{
	memcpy(st->queries, r->queries, sizeof st->queries);
	st->cache_entries = dns_cache_count(r->cache);
	st->cache_bytes = dns_cache_bytes(r->cache);
}

/*
 * One dns audit event, counted first (every answered query is, whether or
 * not cached answers are audited); rcode < 0 when nothing was sent back.
 * -1 when its line cannot be written.
 */
static int
resolver_audit(struct resolver *r, const struct dns_msg_query *q, const struct resolver_client *c,
               const struct decision *d, int rcode, int cached, const char *error)
{
	struct audit_event ev;
	char client[64], tbuf[16];

	if (d != NULL)
		r->queries[d->action][cached != 0]++;
	if (r->audit == NULL || (cached && !r->conf.audit_cached))
		return 0;
	audit_event_init(&ev);
	ev.event = "dns";
	sock_text(&c->peer, client, sizeof client);
	ev.client = client;
	ev.scheme = c->tcp ? "tcp" : "udp";
	ev.mode = config_mode_name(policy_mode(r->policy));
	if (q->has_question) {
		ev.qname = q->name_ok ? q->name : "(unreadable)";
		ev.qtype = dns_msg_type_name(q->qtype, tbuf, sizeof tbuf);
	}
	if (d != NULL) {
		ev.action = policy_action_name(d->action);
		ev.rule = d->rule;
		ev.source = d->source;
		ev.reason = d->reason;
	}
	ev.rcode = rcode >= 0 ? dns_msg_rcode_name((unsigned)rcode) : NULL;
	ev.cached = cached;
	ev.error = error;
	return audit_write(r->audit, &ev);
}

/* Answer q ourselves: rcode, an Extended DNS Error when ede >= 0. */
static void
resolver_reply_simple(struct resolver *r, const struct dns_msg_query *q,
                      const struct resolver_client *c, unsigned rcode, int ede, const char *text)
{
	size_t len;

	if ((len = dns_msg_reply_simple(q, rcode, ede, text, r->scratch, sizeof r->scratch)) > 0)
		dns_listen_reply(r, c, r->scratch, len);
}

/*
 * A query the resolver does not answer as asked: malformed (FORMERR, or
 * nothing back when not even a header came or it is a response), or of
 * a kind it does not serve (NOTIMP, REFUSED, BADVERS). Audited as a
 * block with its own rule, like every other decision.
 */
static void
resolver_refuse(struct resolver *r, const struct dns_msg_query *q, const struct resolver_client *c,
                int rcode, const char *err)
{
	struct decision d;
	int malformed = rcode < 0 || rcode == DNS_MSG_FORMERR;

	memset(&d, 0, sizeof d);
	d.action = ACTION_BLOCK;
	str_copy(d.rule, sizeof d.rule, malformed ? "malformed-query" : "unsupported-query");
	str_copy(d.source, sizeof d.source, "builtin");
	str_copy(d.reason, sizeof d.reason,
	         malformed ? "not a well-formed DNS query"
	                   : "a kind of query the resolver does not serve");
	if (rcode >= 0)
		resolver_reply_simple(r, q, c, (unsigned)rcode, -1, NULL);
	resolver_audit(r, q, c, &d, rcode, 0, err);
}

/*
 * REFUSED with an Extended DNS Error (Not Ready) while the audit log
 * cannot be written (audit.onError: block); counted, no line of its own.
 */
static void
resolver_reply_unwritable(struct resolver *r, const struct dns_msg_query *q,
                          const struct resolver_client *c)
{
	char text[160];

	audit_refused(r->audit);
	audit_refusal(r->audit, text, sizeof text);
	resolver_reply_simple(r, q, c, DNS_MSG_REFUSED, DNS_MSG_EDE_NOT_READY, text);
}

static void
resolver_reply_blocked(struct resolver *r, const struct dns_msg_query *q,
                       const struct resolver_client *c, const struct decision *d)
{
	char text[160];
	unsigned rcode;
	size_t n;

	/* Off mode refuses outright: no answer at all is cacheable there. */
	rcode = policy_mode(r->policy) == MODE_OFF ? DNS_MSG_REFUSED : DNS_MSG_NXDOMAIN;
	/* "blocked by rule RULE (LIST, SOURCE)", cut to fit; no printf per query. */
	n = str_copy(text, sizeof text, "blocked by rule ");
	n += str_copy(text + n, sizeof text - n, d->rule);
	n += str_copy(text + n, sizeof text - n, " (");
	n += str_copy(text + n, sizeof text - n,
	              d->list != POLICY_LIST_NONE ? policy_list_name(d->list) : "policy");
	n += str_copy(text + n, sizeof text - n, ", ");
	n += str_copy(text + n, sizeof text - n, d->source);
	str_copy(text + n, sizeof text - n, ")");
	resolver_reply_simple(r, q, c, rcode, DNS_MSG_EDE_BLOCKED, text);
	resolver_audit(r, q, c, d, rcode, 0, NULL);
}

static size_t
resolver_udp_limit(const struct dns_msg_query *q, const struct resolver_client *c)
{
	if (c->tcp)
		return DNS_MSG_MAX;
	if (!q->edns || q->udp_size < DNS_MSG_UDP_PLAIN)
		return DNS_MSG_UDP_PLAIN;
	return q->udp_size > 4096 ? 4096 : q->udp_size;
}

/*
 * Answer q from entry e (cached, or just arrived) under the current policy;
 * now is the monotonic time in ms the caller looked the entry up at.
 */
static void
resolver_serve(struct resolver *r, const struct dns_msg_query *q, const struct resolver_client *c,
               struct dns_cache_entry *e, const struct decision *qd, int cached, uint64_t now)
{
	const struct dns_answer_served *s;
	size_t len;

	if ((s = dns_cache_served(r->cache, e, r->gen, r->policy, qd)) == NULL) {
		resolver_reply_simple(r, q, c, DNS_MSG_SERVFAIL, -1, NULL);
		resolver_audit(r, q, c, qd, DNS_MSG_SERVFAIL, cached, "unusable upstream answer");
		return;
	}
	/* The line first: an answer goes out only once the audit log keeps it. */
	if (resolver_audit(r, q, c, s->verdict != NULL ? s->verdict : qd, s->rcode, cached, NULL) ==
	        -1 &&
	    audit_refusing(r->audit)) {
		resolver_reply_unwritable(r, q, c);
		return;
	}
	len = dns_msg_reply_served(q, s, (uint32_t)((now - e->t_insert) / 1000),
	                           resolver_udp_limit(q, c), r->scratch, sizeof r->scratch);
	if (len > 0)
		dns_listen_reply(r, c, r->scratch, len);
}

/*
 * The decisions for the names asked again, in sets of two by a hash of the
 * name: a client asks the same few names again and again, and deciding one
 * (the lists, the DoH list, the reason's text) costs more than the lookup.
 * A name is kept from its second miss on (each set remembers the hashes of
 * the last two names it missed), so that a stream of names asked once
 * each does not spend its time replacing slots. A slot holds for the
 * policy generation it was made under only. The table is allocated with
 * the first query; its pages fill as names come.
 */
#define RESOLVER_VERDICT_SETS 512 /* a power of two */
struct resolver_verdict {
	uint64_t gen; /* 0: empty */
	char name[DNS_MSG_NAME_MAX + 1];
	struct decision d;
};
struct resolver_verdicts {
	struct resolver_verdict way[RESOLVER_VERDICT_SETS][2];
	uint32_t missed[RESOLVER_VERDICT_SETS][2]; /* hashes of names that missed */
	uint8_t last[RESOLVER_VERDICT_SETS];       /* the way used last */
	uint8_t next[RESOLVER_VERDICT_SETS];       /* the missed slot to write next */
};

/*
 * The policy's decision for name (lowercase text, a dns_msg_query's: it fits a
 * slot), as dns_answer_decide makes it: a kept one, or one made into *scratch.
 */
static const struct decision *
resolver_decide(struct resolver *r, const char name[DNS_MSG_NAME_MAX + 1], struct decision *scratch)
{
	struct resolver_verdicts *vs;
	struct resolver_verdict *v;
	uint32_t h = 2166136261u;
	size_t n, set;
	int i;

	for (n = 0; n < DNS_MSG_NAME_MAX && name[n] != '\0'; n++)
		h = (h ^ (unsigned char)name[n]) * 16777619u;
	if (r->verdicts == NULL)
		r->verdicts = xcalloc(1, sizeof *r->verdicts);
	vs = r->verdicts;
	set = (h ^ h >> 16) & (RESOLVER_VERDICT_SETS - 1);
	for (i = 0; i < 2; i++) {
		v = &vs->way[set][i];
		if (v->gen == r->gen && memcmp(v->name, name, n + 1) == 0) {
			vs->last[set] = (uint8_t)i;
			return &v->d;
		}
	}
	if (vs->missed[set][0] != h && vs->missed[set][1] != h) {
		vs->missed[set][vs->next[set]] = h;
		vs->next[set] ^= 1;
		(void)dns_answer_decide(r->policy, name, scratch);
		return scratch;
	}
	i = !vs->last[set];
	vs->last[set] = (uint8_t)i;
	v = &vs->way[set][i];
	(void)dns_answer_decide(r->policy, name, &v->d);
	memcpy(v->name, name, n + 1);
	v->gen = r->gen;
	return &v->d;
}

/*
 * A client's query, from the wire to its answer: malformed ones get FORMERR
 * (or nothing, when not even a header came), blocked names an NXDOMAIN
 * with the rule, cached answers go back at once, the rest wait upstream.
 */
void
resolver_query(struct resolver *r, const uint8_t *p, size_t len, struct resolver_client *c)
{
	struct resolver_waiter *w;
	struct dns_cache_entry *e;
	struct dns_msg_query q;
	struct decision scratch;
	const struct decision *d;
	const char *err;
	uint64_t now;
	int rcode;

	if ((err = dns_msg_parse_query(p, len, &q, &rcode)) != NULL) {
		log_debug("dns query dropped or refused: %s", err);
		resolver_refuse(r, &q, c, rcode, err);
		return;
	}
	if (audit_refusing(r->audit)) {
		resolver_reply_unwritable(r, &q, c);
		return;
	}
	d = resolver_decide(r, q.name, &scratch);
	if (d->action == ACTION_BLOCK) {
		resolver_reply_blocked(r, &q, c, d);
		return;
	}
	now = resolver_now_ms(r);
	if ((e = dns_cache_get(r->cache, q.key, q.key_len, now)) != NULL) {
		resolver_serve(r, &q, c, e, d, 1, now);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->kind = RESOLVER_W_CLIENT;
	w->q = q;
	w->client = *c;
	w->t_start = now;
	if (dns_forward_join(r->fwd, q.key, q.key_len, w) == -1) {
		free(w);
		resolver_reply_simple(r, &q, c, DNS_MSG_SERVFAIL, DNS_MSG_EDE_NETWORK,
		                      "too many questions in flight");
		resolver_audit(r, &q, c, d, DNS_MSG_SERVFAIL, 0, "too many questions in flight");
		return;
	}
	dns_listen_hold(w);
}

void
resolver_waiter_free(struct resolver_waiter *w)
{
	if (w == NULL)
		return;
	dns_listen_release(w);
	free(w);
}

/* Half of a lookup is in: note it, and queue the callback once both are. */
static void
resolver_lookup_half(struct resolver_lookup *lk, int half, struct dns_cache_entry *e)
{
	struct decision d;
	int rc;

	lk->w[half] = NULL;
	if (e == NULL)
		rc = RESOLVER_E_FAIL;
	else
		rc = dns_answer_addrs(e->raw, e->raw_len, lk->policy, lk->addrs[half],
		                      RESOLVER_MAX_ADDRS, &lk->naddrs[half], &d);
	lk->err[half] = rc;
	if (rc == RESOLVER_E_BLOCKED && !lk->blocked) {
		lk->blocked = 1;
		lk->decision = d;
	}
	if (--lk->left == 0 && !lk->done) {
		lk->done = 1;
		TAILQ_INSERT_TAIL(&lk->r->done, lk, entry);
	}
}

/* Run the callbacks of finished lookups; each lookup is freed after its own. */
static void
resolver_lookups_run(struct resolver *r)
{
	struct resolver_answer a;
	struct resolver_lookup *lk;
	struct addr all[2 * RESOLVER_MAX_ADDRS];
	size_t n, i;

	while ((lk = TAILQ_FIRST(&r->done)) != NULL) {
		TAILQ_REMOVE(&r->done, lk, entry);
		memset(&a, 0, sizeof a);
		n = 0;
		for (i = 0; i < lk->naddrs[0] && n < RESOLVER_MAX_ADDRS; i++)
			all[n++] = lk->addrs[0][i];
		for (i = 0; i < lk->naddrs[1] && n < RESOLVER_MAX_ADDRS; i++)
			all[n++] = lk->addrs[1][i];
		a.addrs = all;
		a.naddrs = n;
		if (lk->blocked) {
			a.err = RESOLVER_E_BLOCKED;
			a.blocked = &lk->decision;
			a.naddrs = 0;
		} else if (n > 0)
			a.err = RESOLVER_OK;
		else if (lk->err[0] == RESOLVER_E_FAIL || lk->err[1] == RESOLVER_E_FAIL)
			a.err = RESOLVER_E_FAIL;
		else
			a.err = RESOLVER_E_NONAME;
		policy_unref(lk->policy);
		lk->cb(lk->arg, &a);
		free(lk);
	}
}

/* One waiter's share of an upstream outcome (e NULL: it failed). */
static void
resolver_waiter_answer(struct resolver *r, struct resolver_waiter *w, struct dns_cache_entry *e,
                       const char *err)
{
	struct decision d;

	if (w->kind == RESOLVER_W_LOOKUP) {
		resolver_lookup_half(w->lk, w->lk->w[0] == w ? 0 : 1, e);
		return;
	}
	/* The policy may have changed while the question was out. */
	if (dns_answer_decide(r->policy, w->q.name, &d)) {
		resolver_reply_blocked(r, &w->q, &w->client, &d);
		return;
	}
	if (e == NULL) {
		resolver_reply_simple(r, &w->q, &w->client, DNS_MSG_SERVFAIL, DNS_MSG_EDE_NO_REACH,
		                      err);
		resolver_audit(r, &w->q, &w->client, &d, DNS_MSG_SERVFAIL, 0, err);
		return;
	}
	resolver_serve(r, &w->q, &w->client, e, &d, 0, resolver_now_ms(r));
}

/*
 * The upstream outcome for key: pkt the checked answer, or NULL with err.
 * Keep the answer for its TTL, then answer every waiter from it.
 */
void
resolver_answered(struct resolver *r, const uint8_t *key, size_t key_len, ldns_pkt *pkt,
                  const char *err, struct resolver_waiters *ws)
{
	struct resolver_waiter *w;
	struct dns_cache_entry *e = NULL, *tmp = NULL;
	uint64_t now = resolver_now_ms(r);
	uint8_t *raw;
	size_t raw_len;
	uint32_t ttl;

	if (pkt != NULL) {
		if (dns_answer_prepare(pkt, &r->conf, &raw, &raw_len, &ttl) == -1)
			err = "unusable upstream answer";
		else if (ttl > 0)
			e = dns_cache_put(r->cache, key, key_len, raw, raw_len, ttl, now);
		else
			e = tmp = dns_cache_entry_new(key, key_len, raw, raw_len, now);
	}
	/* The cache is not touched below, so e stays valid throughout. */
	while ((w = TAILQ_FIRST(ws)) != NULL) {
		dns_forward_detach(w);
		resolver_waiter_answer(r, w, e, err);
		if (w->kind == RESOLVER_W_CLIENT)
			resolver_waiter_free(w);
		else
			free(w);
	}
	dns_cache_entry_free(tmp);
	resolver_lookups_run(r);
}

/*
 * Resolve name (A and AAAA) for the proxy, through the cache and the
 * upstreams, checking the CNAME chain against policy p. The addresses
 * are not filtered: the proxy applies the address guard itself, with the
 * decision of the request. cb runs once, later or before this returns;
 * returns the lookup to cancel, or NULL when cb already ran.
 */
struct resolver_lookup *
resolver_lookup(struct resolver *r, struct policy *p, const char *name, resolver_lookup_cb cb,
                void *arg)
{
	struct resolver_lookup *lk;
	struct resolver_waiter *w;
	struct dns_cache_entry *e;
	uint8_t key[DNS_MSG_KEY_MAX];
	size_t key_len;
	int i;

	lk = xcalloc(1, sizeof *lk);
	lk->r = r;
	lk->policy = policy_ref(p);
	lk->cb = cb;
	lk->arg = arg;
	lk->left = 2;
	for (i = 0; i < 2; i++) {
		if (dns_msg_name_key(name, resolver_lookup_types[i], key, &key_len) != NULL) {
			lk->left--;
			lk->err[i] = RESOLVER_E_NONAME;
			continue;
		}
		if ((e = dns_cache_get(r->cache, key, key_len, resolver_now_ms(r))) != NULL) {
			resolver_lookup_half(lk, i, e);
			continue;
		}
		w = xcalloc(1, sizeof *w);
		w->kind = RESOLVER_W_LOOKUP;
		w->lk = lk;
		w->t_start = resolver_now_ms(r);
		lk->w[i] = w;
		if (dns_forward_join(r->fwd, key, key_len, w) == -1) {
			free(w);
			resolver_lookup_half(lk, i, NULL);
		}
	}
	if (lk->left == 0 && !lk->done) {
		lk->done = 1;
		TAILQ_INSERT_TAIL(&r->done, lk, entry);
	}
	if (lk->done) {
		resolver_lookups_run(r);
		return NULL;
	}
	return lk;
}

/* The caller lost interest: no callback will run. */
void
resolver_lookup_cancel(struct resolver_lookup *lk)
{
	int i;

	if (lk == NULL)
		return;
	for (i = 0; i < 2; i++) {
		if (lk->w[i] != NULL) {
			dns_forward_detach(lk->w[i]);
			free(lk->w[i]);
		}
	}
	if (lk->done)
		TAILQ_REMOVE(&lk->r->done, lk, entry);
	policy_unref(lk->policy);
	free(lk);
}
