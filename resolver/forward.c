/*
 * Forwarding: one upstream question per distinct (name, type, class) in
 * flight, however many clients ask it at once. Each try uses a fresh UDP
 * socket connected to one upstream, so the kernel picks a random source
 * port and drops datagrams from any other address, and a fresh random id;
 * an answer must also carry the very question asked, with the random
 * mix of upper and lower case the question's name was given (DNS 0x20).
 * An answer whose question differs in case only is asked again once of
 * that upstream without the mix, since some servers do not keep the case.
 * A try that fails or is refused moves to the next upstream at once; a
 * truncated answer is asked again over TCP.
 *
 * A try that is not answered within its upstream's retransmission timeout
 * is followed by a try at the next upstream, and the earlier tries keep
 * listening: a slow answer to an earlier try is as good as a quick one to
 * the later. The timeout follows each upstream's measured round trips
 * (RFC 6298: SRTT + 4 RTTVAR, doubled after a timeout), between
 * DNS_FORWARD_RTO_MIN_MS and the configured attempt_ms, which is also where an
 * upstream not heard from yet starts. Every question ends by its deadline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "resolver_int.h"

#define DNS_FORWARD_BUCKETS    1024 /* a power of two */
#define DNS_FORWARD_RECV_BURST 8
#define DNS_FORWARD_OPEN_MAX   4   /* tries of one question listening at once */
#define DNS_FORWARD_OPEN_SPARE 256 /* sockets beyond one per question, over all of them */
#define DNS_FORWARD_RTO_MIN_MS 100 /* the shortest retransmission timeout */

struct dns_forward_query;

/* One datagram sent to one upstream, and the socket its answer comes to. */
struct dns_forward_try {
	struct dns_forward_query *fq;
	struct event *ev; /* readable fd */
	int fd;           /* -1: not open */
	uint16_t id;
	uint8_t upstream;
	uint8_t plain;   /* asked without 0x20 */
	uint64_t t_sent; /* monotonic µs */
};

struct dns_forward_query {
	struct dns_forward_query *next; /* in its hash chain */
	uint64_t hash;
	struct dns_forward *fw;
	uint8_t key[DNS_MSG_KEY_MAX];   /* lowercase name, type, class */
	uint8_t mixed[DNS_MSG_KEY_MAX]; /* the same with the name's letters mixed in case */
	size_t key_len;
	struct resolver_waiters waiters;
	unsigned upstream;     /* where the next try goes */
	unsigned tries;        /* started, case retries not counted */
	unsigned plain;        /* bit n: upstream n is asked without 0x20 */
	uint64_t deadline;     /* monotonic ms */
	struct event *timer;   /* the newest try's timeout, or the deadline */
	const char *timer_why; /* what the timer firing means */
	int last;              /* the newest try's slot, -1 for none */
	struct dns_forward_try open[DNS_FORWARD_OPEN_MAX];
	struct bufferevent *tcp; /* a truncated answer, asked again over TCP */
	uint16_t tcp_id;
	uint8_t tcp_upstream;
	uint8_t tcp_plain;
};

/* What the round trips to one upstream say about waiting for it. */
struct dns_forward_rtt {
	uint64_t srtt;   /* µs */
	uint64_t rttvar; /* µs */
	unsigned rto;    /* ms */
	int sampled;
};

struct dns_forward {
	struct resolver *r;
	struct event_base *base;
	struct resolver_conf conf;
	struct dns_forward_query *buckets[DNS_FORWARD_BUCKETS];
	size_t npending;
	size_t nopen;    /* UDP sockets of tries, over all questions */
	size_t nwaiters; /* over all questions: each holds a client's query */
	unsigned pref;   /* the upstream that answered last */
	unsigned warned; /* bit n: upstream n was seen changing the case */
	struct dns_forward_rtt rtt[RESOLVER_MAX_UPSTREAMS];
	uint64_t seed;
	uint8_t rnd[256];
	size_t rnd_left;
	uint8_t buf[DNS_MSG_MAX + 1];
};

static void dns_forward_try_start(struct dns_forward_query *);
static void dns_forward_attempt(struct dns_forward_query *);

uint16_t
dns_forward_random16(struct dns_forward *fw)
{
	uint16_t v;

	if (fw->rnd_left < 2) {
		if (getrandom(fw->rnd, sizeof fw->rnd, 0) != (ssize_t)sizeof fw->rnd)
			fatal("getrandom");
		fw->rnd_left = sizeof fw->rnd;
	}
	fw->rnd_left -= 2;
	memcpy(&v, fw->rnd + fw->rnd_left, 2);
	return v;
}

/* The in-flight table holds at most max_pending entries: a seeded FNV will do. */
static uint64_t
dns_forward_hash(const struct dns_forward *fw, const uint8_t *key, size_t len)
{
	uint64_t h = fw->seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ key[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

struct dns_forward *
dns_forward_new(struct resolver *r, struct event_base *base, const struct resolver_conf *conf)
{
	struct dns_forward *fw;
	size_t i;

	fw = xcalloc(1, sizeof *fw);
	fw->r = r;
	fw->base = base;
	fw->conf = *conf;
	if (fw->conf.attempt_ms < DNS_FORWARD_RTO_MIN_MS)
		fw->conf.attempt_ms = DNS_FORWARD_RTO_MIN_MS;
	for (i = 0; i < RESOLVER_MAX_UPSTREAMS; i++)
		fw->rtt[i].rto = fw->conf.attempt_ms;
	if (getrandom(&fw->seed, sizeof fw->seed, 0) != (ssize_t)sizeof fw->seed)
		fatal("getrandom");
	return fw;
}

size_t
dns_forward_pending(const struct dns_forward *fw)
{
	return fw->npending;
}

/* A round trip of us microseconds to upstream u (RFC 6298 §2). */
static void
dns_forward_rtt_sample(struct dns_forward *fw, unsigned u, uint64_t us)
{
	struct dns_forward_rtt *t = &fw->rtt[u];
	uint64_t rto, d;

	if (!t->sampled) {
		t->srtt = us;
		t->rttvar = us / 2;
		t->sampled = 1;
	} else {
		d = t->srtt > us ? t->srtt - us : us - t->srtt;
		t->rttvar = (3 * t->rttvar + d) / 4;
		t->srtt = (7 * t->srtt + us) / 8;
	}
	rto = (t->srtt + (4 * t->rttvar > 1000 ? 4 * t->rttvar : 1000) + 999) / 1000;
	if (rto < DNS_FORWARD_RTO_MIN_MS)
		rto = DNS_FORWARD_RTO_MIN_MS;
	if (rto > fw->conf.attempt_ms)
		rto = fw->conf.attempt_ms;
	t->rto = (unsigned)rto;
}

/* A try at upstream u went unanswered for its whole timeout (§5.5). */
static void
dns_forward_rtt_timeout(struct dns_forward *fw, unsigned u)
{
	struct dns_forward_rtt *t = &fw->rtt[u];

	t->rto = t->rto > fw->conf.attempt_ms / 2 ? fw->conf.attempt_ms : 2 * t->rto;
}

static void
dns_forward_close_try(struct dns_forward_try *t)
{
	if (t->ev != NULL) {
		event_free(t->ev);
		t->ev = NULL;
	}
	if (t->fd != -1) {
		close(t->fd);
		t->fd = -1;
		t->fq->fw->nopen--;
	}
}

/* Arm the question's timer for ms from now, meaning why when it fires. */
static void
dns_forward_arm(struct dns_forward_query *fq, uint64_t ms, const char *why)
{
	const struct resolver_clock *clk = &fq->fw->r->clock;

	fq->timer_why = why;
	clk->timer_add(clk->arg, fq->timer, ms);
}

/* Stop the question's timer. */
static void
dns_forward_disarm(struct dns_forward_query *fq)
{
	const struct resolver_clock *clk = &fq->fw->r->clock;

	clk->timer_del(clk->arg, fq->timer);
}

/* Stop every try of the question, and its timer. */
static void
dns_forward_close_all(struct dns_forward_query *fq)
{
	size_t i;

	for (i = 0; i < DNS_FORWARD_OPEN_MAX; i++)
		dns_forward_close_try(&fq->open[i]);
	fq->last = -1;
	if (fq->tcp != NULL) {
		bufferevent_free(fq->tcp);
		fq->tcp = NULL;
	}
	if (fq->timer != NULL)
		dns_forward_disarm(fq);
}

static void
dns_forward_unlink(struct dns_forward_query *fq)
{
	struct dns_forward *fw = fq->fw;
	struct dns_forward_query **pp = &fw->buckets[fq->hash & (DNS_FORWARD_BUCKETS - 1)];

	while (*pp != fq)
		pp = &(*pp)->next;
	*pp = fq->next;
	fw->npending--;
}

static void
dns_forward_query_free(struct dns_forward_query *fq)
{
	dns_forward_close_all(fq);
	if (fq->timer != NULL)
		event_free(fq->timer);
	free(fq);
}

/* Hand the outcome to every waiter, then forget the question. */
static void
dns_forward_finish(struct dns_forward_query *fq, ldns_pkt *pkt, const char *err)
{
	dns_forward_close_all(fq);
	dns_forward_unlink(fq);
	resolver_answered(fq->fw->r, fq->key, fq->key_len, pkt, err, &fq->waiters);
	if (pkt != NULL)
		ldns_pkt_free(pkt);
	dns_forward_query_free(fq);
}

/* Milliseconds from now to the question's deadline, 0 once it has passed. */
static uint64_t
dns_forward_left(const struct dns_forward_query *fq)
{
	uint64_t now = resolver_now_ms(fq->fw->r);

	return now < fq->deadline ? fq->deadline - now : 0;
}

/*
 * Upstream u failed a try (why): the next try goes to the upstream after
 * it, and it is no longer the one asked first.
 */
static void
dns_forward_next(struct dns_forward_query *fq, unsigned u, const char *why)
{
	struct dns_forward *fw = fq->fw;
	char text[64];

	sock_text(&fw->conf.upstream[u], text, sizeof text);
	log_debug("dns upstream %s: %s", text, why);
	if (fw->pref == u)
		fw->pref = (u + 1) % fw->conf.nupstream;
	fq->upstream = (u + 1) % fw->conf.nupstream;
	dns_forward_try_start(fq);
}

/* End the try in slot t; when it was the newest, its timeout goes too. Returns that. */
static int
dns_forward_drop_try(struct dns_forward_query *fq, struct dns_forward_try *t)
{
	int newest = fq->last == (int)(t - fq->open);

	dns_forward_close_try(t);
	if (newest) {
		fq->last = -1;
		dns_forward_disarm(fq);
	}
	return newest;
}

/* The try in slot t failed outright (an error, a refusal): drop it, try on. */
static void
dns_forward_try_failed(struct dns_forward_query *fq, struct dns_forward_try *t, const char *why)
{
	unsigned u = t->upstream;

	(void)dns_forward_drop_try(fq, t);
	dns_forward_next(fq, u, why);
}

/* An answer arrived: use it, or try elsewhere when the upstream failed. */
static void
dns_forward_answer(struct dns_forward_query *fq, struct dns_forward_try *t, unsigned u,
                   ldns_pkt *pkt)
{
	unsigned rcode = ldns_pkt_get_rcode(pkt);

	if (rcode != DNS_MSG_NOERROR && rcode != DNS_MSG_NXDOMAIN) {
		ldns_pkt_free(pkt);
		if (t != NULL)
			dns_forward_try_failed(fq, t, dns_msg_rcode_name(rcode));
		else
			dns_forward_next(fq, u, dns_msg_rcode_name(rcode));
		return;
	}
	fq->fw->pref = u;
	dns_forward_finish(fq, pkt, NULL);
}

/*
 * Upstream u answered our question in another case: a forgery, or a server
 * that does not keep the case. Ask it once more without 0x20, with a new
 * id and port; returns -1 when that was done already.
 */
static int
dns_forward_case_changed(struct dns_forward_query *fq, unsigned u)
{
	struct dns_forward *fw = fq->fw;
	unsigned bit = 1u << u;
	char text[64];

	if (fq->plain & bit)
		return -1;
	fq->plain |= bit;
	if (!(fw->warned & bit)) {
		fw->warned |= bit;
		sock_text(&fw->conf.upstream[u], text, sizeof text);
		log_warnx("dns upstream %s: an answer changed the case of the question; asking "
		          "again without 0x20 (each time this happens)",
		          text);
	}
	if (fq->tcp != NULL) {
		bufferevent_free(fq->tcp);
		fq->tcp = NULL;
	}
	if (dns_forward_left(fq) == 0) {
		dns_forward_finish(fq, NULL, "no upstream answered");
		return 0;
	}
	fq->upstream = u;
	dns_forward_attempt(fq);
	return 0;
}

/*
 * The answer to the try in slot t had the question in another case. The
 * try ends; the upstream is asked again without 0x20 unless that was done
 * already, when the question goes on to the next upstream if t was the
 * newest try.
 */
static void
dns_forward_case_failed(struct dns_forward_query *fq, struct dns_forward_try *t)
{
	unsigned u = t->upstream;
	int newest = dns_forward_drop_try(fq, t);

	if (dns_forward_case_changed(fq, u) == 0)
		return;
	log_debug("dns upstream: datagram ignored: %s", dns_msg_err_case);
	if (newest)
		dns_forward_next(fq, u, dns_msg_err_case);
}

/* Check a datagram or TCP message against the question as one try sent it. */
static const char *
dns_forward_check(const struct dns_forward_query *fq, uint16_t id, int plain, const uint8_t *p,
                  size_t len, ldns_pkt **pkt)
{
	return dns_msg_check_answer(p, len, id, plain ? fq->key : fq->mixed, fq->key_len, pkt);
}

/* The question as one try sends it, into out (cap bytes); its length or 0. */
static size_t
dns_forward_query_wire(const struct dns_forward_query *fq, uint16_t id, int plain, uint8_t *out,
                       size_t cap)
{
	return dns_msg_build_query(plain ? fq->key : fq->mixed, fq->key_len, id, out, cap);
}

static void
dns_forward_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	struct dns_forward_query *fq = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t lenb[2];
	size_t len;
	ldns_pkt *pkt;
	const char *err;

	if (evbuffer_copyout(in, lenb, 2) != 2)
		return;
	len = (size_t)lenb[0] << 8 | lenb[1];
	if (evbuffer_get_length(in) < 2 + len)
		return;
	evbuffer_drain(in, 2);
	evbuffer_remove(in, fq->fw->buf, len);
	if ((err = dns_forward_check(fq, fq->tcp_id, fq->tcp_plain, fq->fw->buf, len, &pkt)) !=
	    NULL) {
		if (err != dns_msg_err_case ||
		    dns_forward_case_changed(fq, fq->tcp_upstream) == -1) {
			bufferevent_free(fq->tcp);
			fq->tcp = NULL;
			dns_forward_next(fq, fq->tcp_upstream, err);
		}
		return;
	}
	dns_forward_answer(fq, NULL, fq->tcp_upstream, pkt);
}

static void
dns_forward_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct dns_forward_query *fq = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	bufferevent_free(fq->tcp);
	fq->tcp = NULL;
	dns_forward_next(fq, fq->tcp_upstream,
	                 what & BEV_EVENT_TIMEOUT ? "TCP timeout" : "TCP connection failed");
}

/*
 * The try in slot t got a truncated answer: ask the same upstream again
 * over TCP, with the same id and spelling. The UDP tries end here; the
 * deadline still holds.
 */
static void
dns_forward_tcp(struct dns_forward_query *fq, struct dns_forward_try *t)
{
	struct dns_forward *fw = fq->fw;
	struct timeval tv = {fw->conf.attempt_ms / 1000, (fw->conf.attempt_ms % 1000) * 1000};
	uint8_t q[DNS_MSG_KEY_MAX + 32], lenb[2];
	size_t qlen;

	fq->tcp_id = t->id;
	fq->tcp_upstream = t->upstream;
	fq->tcp_plain = t->plain;
	dns_forward_close_all(fq);
	qlen = dns_forward_query_wire(fq, fq->tcp_id, fq->tcp_plain, q, sizeof q);
	lenb[0] = (uint8_t)(qlen >> 8);
	lenb[1] = (uint8_t)qlen;
	dns_forward_arm(fq, dns_forward_left(fq), NULL);
	fq->tcp = bufferevent_socket_new(fw->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (fq->tcp == NULL) {
		dns_forward_next(fq, fq->tcp_upstream, "cannot make a TCP socket");
		return;
	}
	bufferevent_setcb(fq->tcp, dns_forward_tcp_read_cb, NULL, dns_forward_tcp_event_cb, fq);
	bufferevent_set_timeouts(fq->tcp, &tv, &tv);
	bufferevent_write(fq->tcp, lenb, 2);
	bufferevent_write(fq->tcp, q, qlen);
	bufferevent_enable(fq->tcp, EV_READ);
	if (bufferevent_socket_connect(fq->tcp,
	                               (struct sockaddr *)&fw->conf.upstream[fq->tcp_upstream],
	                               (int)fw->conf.upstream_len[fq->tcp_upstream]) == -1) {
		bufferevent_free(fq->tcp);
		fq->tcp = NULL;
		dns_forward_next(fq, fq->tcp_upstream, "TCP connect failed");
	}
}

static void
dns_forward_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_forward_try *t = arg;
	struct dns_forward_query *fq = t->fq;
	const char *err;
	ldns_pkt *pkt;
	ssize_t n;
	int i;

	(void)what;
	for (i = 0; i < DNS_FORWARD_RECV_BURST; i++) {
		n = recv(fd, fq->fw->buf, sizeof fq->fw->buf - 1, 0);
		if (n == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			dns_forward_try_failed(fq, t, strerror(errno));
			return;
		}
		if ((err = dns_forward_check(fq, t->id, t->plain, fq->fw->buf, (size_t)n, &pkt)) !=
		    NULL) {
			/*
			 * A try spelt in mixed case ends at a wrong spelling: a forger
			 * who hit its id and port gets no second guess at the case.
			 */
			if (err == dns_msg_err_case && !t->plain) {
				dns_forward_case_failed(fq, t);
				return;
			}
			log_debug("dns upstream: datagram ignored: %s", err);
			continue;
		}
		dns_forward_rtt_sample(fq->fw, t->upstream, resolver_now_us(fq->fw->r) - t->t_sent);
		if (ldns_pkt_tc(pkt)) {
			ldns_pkt_free(pkt);
			dns_forward_tcp(fq, t);
			return;
		}
		dns_forward_answer(fq, t, t->upstream, pkt);
		return;
	}
}

/*
 * The question's timer: the newest try went unanswered for its timeout
 * (or could not be sent), or the deadline came.
 */
static void
dns_forward_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_forward_query *fq = arg;
	const char *why = fq->timer_why;
	unsigned u;

	(void)fd;
	(void)what;
	if (why == NULL || dns_forward_left(fq) == 0 || fq->last == -1) {
		dns_forward_finish(fq, NULL,
		                   fq->tries == 0 ? "no upstream" : "no upstream answered");
		return;
	}
	u = fq->open[fq->last].upstream;
	if (fq->open[fq->last].fd != -1) /* sent, and not answered in time */
		dns_forward_rtt_timeout(fq->fw, u);
	dns_forward_next(fq, u, why);
}

/* Open a connected UDP socket to the try's upstream and send; -1 on failure. */
static int
dns_forward_send(struct dns_forward_query *fq, struct dns_forward_try *t)
{
	struct dns_forward *fw = fq->fw;
	const struct sockaddr_storage *ss = &fw->conf.upstream[t->upstream];
	uint8_t q[DNS_MSG_KEY_MAX + 32];
	size_t qlen = dns_forward_query_wire(fq, t->id, t->plain, q, sizeof q);

	t->fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->fd == -1)
		return -1;
	if (qlen == 0 ||
	    connect(t->fd, (const struct sockaddr *)ss, fw->conf.upstream_len[t->upstream]) == -1 ||
	    send(t->fd, q, qlen, 0) != (ssize_t)qlen) {
		close(t->fd);
		t->fd = -1;
		return -1;
	}
	t->t_sent = resolver_now_us(fw->r);
	fw->nopen++;
	return 0;
}

/*
 * Start a try, unless the question has had all it may: then it waits for
 * the tries still listening, until the deadline.
 */
static void
dns_forward_try_start(struct dns_forward_query *fq)
{
	struct dns_forward *fw = fq->fw;
	uint64_t left = dns_forward_left(fq);
	size_t i;

	if (fq->tries >= 2 * fw->conf.nupstream || left == 0) {
		for (i = 0; i < DNS_FORWARD_OPEN_MAX; i++)
			if (fq->open[i].fd != -1)
				break;
		if (i == DNS_FORWARD_OPEN_MAX && fq->tcp == NULL) {
			dns_forward_finish(fq, NULL,
			                   fq->tries == 0 ? "no upstream" : "no upstream answered");
			return;
		}
		fq->last = -1;
		dns_forward_arm(fq, left, NULL);
		return;
	}
	fq->tries++;
	dns_forward_attempt(fq);
}

/*
 * Send the question to the current upstream in a free slot (or the
 * oldest try's) and arm the timer for that upstream's timeout. A socket
 * that cannot be opened or sent on fails the try through an immediate
 * timeout, so that outcomes always arrive from the event loop.
 */
static void
dns_forward_attempt(struct dns_forward_query *fq)
{
	struct dns_forward *fw = fq->fw;
	struct dns_forward_try *t = NULL, *oldest = NULL, *o;
	uint64_t left = dns_forward_left(fq);
	size_t i;

	/*
	 * A free slot, else the oldest try's. Earlier tries keep listening
	 * only while the sockets over all questions stay within one each and
	 * DNS_FORWARD_OPEN_SPARE more: a flood of questions to a silent upstream must
	 * not take the descriptors the proxy needs.
	 */
	for (i = 0; i < DNS_FORWARD_OPEN_MAX; i++) {
		o = &fq->open[i];
		if (o->fd == -1) {
			if (t == NULL)
				t = o;
		} else if (oldest == NULL || o->t_sent < oldest->t_sent) {
			oldest = o;
		}
	}
	if (t == NULL || (oldest != NULL && fw->nopen >= fw->npending + DNS_FORWARD_OPEN_SPARE))
		t = oldest;
	dns_forward_close_try(t);
	t->fq = fq;
	t->upstream = (uint8_t)fq->upstream;
	t->plain = (fq->plain >> fq->upstream) & 1;
	t->id = dns_forward_random16(fw);
	fq->last = (int)(t - fq->open);
	if (left > fw->rtt[t->upstream].rto)
		left = fw->rtt[t->upstream].rto;
	if (dns_forward_send(fq, t) == -1) {
		dns_forward_arm(fq, 0, "send failed");
		return;
	}
	t->ev = event_new(fw->base, t->fd, EV_READ | EV_PERSIST, dns_forward_read_cb, t);
	event_add(t->ev, NULL);
	dns_forward_arm(fq, left, "timeout");
}

/* The 0x20 spelling of a question: each letter of the name upper or lower at random. */
static void
dns_forward_mix(struct dns_forward *fw, struct dns_forward_query *fq)
{
	uint8_t rnd[(DNS_MSG_NAME_MAX + 1) / 8]; /* a bit for every byte a name may have */
	size_t i, letters = 0;
	uint16_t v;

	memcpy(fq->mixed, fq->key, fq->key_len);
	for (i = 0; i + 4 < fq->key_len; i++)
		letters += fq->key[i] >= 'a' && fq->key[i] <= 'z';
	for (i = 0; i < (letters + 7) / 8 && i < sizeof rnd; i += 2) {
		v = dns_forward_random16(fw);
		memcpy(rnd + i, &v, i + 1 < sizeof rnd ? 2 : 1);
	}
	dns_msg_name_mix(fq->mixed, fq->key_len - 4, rnd, (letters + 7) / 8);
}

/*
 * Have w wait for the answer to key: joins the question in flight, or
 * asks it. Returns -1 when too many questions are in flight already.
 */
int
dns_forward_join(struct dns_forward *fw, const uint8_t *key, size_t key_len,
                 struct resolver_waiter *w)
{
	uint64_t h = dns_forward_hash(fw, key, key_len);
	struct dns_forward_query *fq, **bucket = &fw->buckets[h & (DNS_FORWARD_BUCKETS - 1)];
	size_t i;

	/* Identical queries cost no upstream traffic, but each holds memory. */
	if (fw->nwaiters >= fw->conf.max_waiters)
		return -1;
	for (fq = *bucket; fq != NULL; fq = fq->next)
		if (fq->hash == h && fq->key_len == key_len && memcmp(fq->key, key, key_len) == 0)
			break;
	if (fq == NULL) {
		if (fw->npending >= fw->conf.max_pending || fw->conf.nupstream == 0 ||
		    key_len > sizeof fq->key || key_len < 5)
			return -1;
		fq = xcalloc(1, sizeof *fq);
		fq->fw = fw;
		fq->hash = h;
		memcpy(fq->key, key, key_len);
		fq->key_len = key_len;
		dns_forward_mix(fw, fq);
		fq->last = -1;
		for (i = 0; i < DNS_FORWARD_OPEN_MAX; i++)
			fq->open[i].fd = -1;
		fq->timer = evtimer_new(fw->base, dns_forward_timer_cb, fq);
		TAILQ_INIT(&fq->waiters);
		fq->upstream = fw->pref % fw->conf.nupstream;
		fq->deadline = resolver_now_ms(fw->r) + fw->conf.deadline_ms;
		fq->next = *bucket;
		*bucket = fq;
		fw->npending++;
		dns_forward_try_start(fq);
	}
	TAILQ_INSERT_TAIL(&fq->waiters, w, entry);
	w->fq = fq;
	fw->nwaiters++;
	return 0;
}

/* w no longer wants the answer; the question goes on to fill the cache. */
void
dns_forward_detach(struct resolver_waiter *w)
{
	if (w->fq == NULL)
		return;
	TAILQ_REMOVE(&w->fq->waiters, w, entry);
	w->fq->fw->nwaiters--;
	w->fq = NULL;
}

void
dns_forward_free(struct dns_forward *fw)
{
	struct dns_forward_query *fq;
	struct resolver_waiter *w;
	size_t i;

	if (fw == NULL)
		return;
	for (i = 0; i < DNS_FORWARD_BUCKETS; i++) {
		while ((fq = fw->buckets[i]) != NULL) {
			fw->buckets[i] = fq->next;
			while ((w = TAILQ_FIRST(&fq->waiters)) != NULL) {
				dns_forward_detach(w);
				resolver_waiter_free(w);
			}
			dns_forward_query_free(fq);
		}
	}
	free(fw);
}
