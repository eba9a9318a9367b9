/*
 * Forwarding: one upstream question per distinct (name, type, class) in
 * flight, however many clients ask it at once. Each try uses a fresh UDP
 * socket connected to one upstream, so the kernel picks a random source
 * port and drops datagrams from any other address, and a fresh random id;
 * an answer must also carry the very question asked, with the random
 * mix of upper and lower case the query spelt its name in (DNS 0x20). An
 * answer whose question differs in case only is asked again once of that
 * upstream without the mix, since some servers do not keep the case. A
 * try that times out, fails or is refused moves to the next upstream
 * until the deadline; a truncated answer is asked again over TCP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "resolver.h"

#define FWD_BUCKETS    1024 /* a power of two */
#define FWD_RECV_BURST 8

struct fwd_query {
	struct fwd_query *next; /* in its hash chain */
	uint64_t hash;
	struct forward *fw;
	uint8_t key[MSG_KEY_MAX];
	size_t key_len;
	struct resolver_waiters waiters;
	uint16_t id;
	unsigned upstream; /* the one being tried */
	unsigned tries;
	unsigned plain;    /* bit n: upstream n is asked without 0x20 */
	uint64_t deadline; /* monotonic ms */
	int fd;
	struct event *ev;        /* readable fd, or the try's timeout */
	struct bufferevent *tcp; /* a truncated answer, asked again over TCP */
	uint8_t query[MSG_KEY_MAX + 32];
	size_t query_len;
};

struct forward {
	struct resolver *r;
	struct event_base *base;
	struct resolver_conf conf;
	struct fwd_query *buckets[FWD_BUCKETS];
	size_t npending;
	size_t nwaiters; /* over all questions: each holds a client's query */
	unsigned pref;   /* the upstream that answered last */
	unsigned warned; /* bit n: upstream n was seen changing the case */
	uint64_t seed;
	uint8_t rnd[256];
	size_t rnd_left;
	uint8_t buf[MSG_MAX + 1];
};

static void fwd_try(struct fwd_query *);

uint16_t
forward_random16(struct forward *fw)
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
fwd_hash(const struct forward *fw, const uint8_t *key, size_t len)
{
	uint64_t h = fw->seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ key[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

struct forward *
forward_new(struct resolver *r, struct event_base *base, const struct resolver_conf *conf)
{
	struct forward *fw;

	fw = xcalloc(1, sizeof *fw);
	fw->r = r;
	fw->base = base;
	fw->conf = *conf;
	if (getrandom(&fw->seed, sizeof fw->seed, 0) != (ssize_t)sizeof fw->seed)
		fatal("getrandom");
	return fw;
}

size_t
forward_pending(const struct forward *fw)
{
	return fw->npending;
}

static void
fwd_close_try(struct fwd_query *fq)
{
	if (fq->ev != NULL) {
		event_free(fq->ev);
		fq->ev = NULL;
	}
	if (fq->fd != -1) {
		close(fq->fd);
		fq->fd = -1;
	}
	if (fq->tcp != NULL) {
		bufferevent_free(fq->tcp);
		fq->tcp = NULL;
	}
}

static void
fwd_unlink(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;
	struct fwd_query **pp = &fw->buckets[fq->hash & (FWD_BUCKETS - 1)];

	while (*pp != fq)
		pp = &(*pp)->next;
	*pp = fq->next;
	fw->npending--;
}

/* Hand the outcome to every waiter, then forget the question. */
static void
fwd_finish(struct fwd_query *fq, ldns_pkt *pkt, const char *err)
{
	fwd_close_try(fq);
	fwd_unlink(fq);
	resolver_answered(fq->fw->r, fq->key, fq->key_len, pkt, err, &fq->waiters);
	if (pkt != NULL)
		ldns_pkt_free(pkt);
	free(fq);
}

/* The try failed: the next upstream, unless this one was the last chance. */
static void
fwd_next(struct fwd_query *fq, const char *why)
{
	struct forward *fw = fq->fw;
	char text[64];

	sock_text(&fw->conf.upstream[fq->upstream], text, sizeof text);
	log_debug("dns upstream %s: %s", text, why);
	if (fw->pref == fq->upstream)
		fw->pref = (fq->upstream + 1) % fw->conf.nupstream;
	fq->upstream = (fq->upstream + 1) % fw->conf.nupstream;
	fwd_try(fq);
}

/* An answer arrived: use it, or try elsewhere when the upstream failed. */
static void
fwd_answer(struct fwd_query *fq, ldns_pkt *pkt)
{
	unsigned rcode = ldns_pkt_get_rcode(pkt);

	if (rcode != MSG_NOERROR && rcode != MSG_NXDOMAIN) {
		ldns_pkt_free(pkt);
		fwd_next(fq, msg_rcode_name(rcode));
		return;
	}
	fq->fw->pref = fq->upstream;
	fwd_finish(fq, pkt, NULL);
}

static void fwd_attempt(struct fwd_query *);

/*
 * The upstream answered our question in another case: a forgery, or a
 * server that does not keep the case. Ask it once more without 0x20, with
 * a new id and port; returns -1 when that was done already.
 */
static int
fwd_case_changed(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;
	unsigned bit = 1u << fq->upstream;
	char text[64];

	if (fq->plain & bit)
		return -1;
	fq->plain |= bit;
	if (!(fw->warned & bit)) {
		fw->warned |= bit;
		sock_text(&fw->conf.upstream[fq->upstream], text, sizeof text);
		log_warnx("dns upstream %s: an answer changed the case of the question; asking "
		          "again without 0x20 (each time this happens)",
		          text);
	}
	fwd_close_try(fq);
	if (time_mono_ms() >= fq->deadline) {
		fwd_finish(fq, NULL, "no upstream answered");
		return 0;
	}
	fwd_attempt(fq);
	return 0;
}

/* Check a datagram or TCP message against the question as this try sent it. */
static const char *
fwd_check(struct fwd_query *fq, const uint8_t *p, size_t len, ldns_pkt **pkt)
{
	return msg_check_answer(p, len, fq->id, fq->query + MSG_QUERY_HDR, fq->key_len, pkt);
}

static void
fwd_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	struct fwd_query *fq = arg;
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
	if ((err = fwd_check(fq, fq->fw->buf, len, &pkt)) != NULL) {
		if (err != msg_err_case || fwd_case_changed(fq) == -1)
			fwd_next(fq, err);
		return;
	}
	fwd_answer(fq, pkt);
}

static void
fwd_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct fwd_query *fq = arg;

	if (what & BEV_EVENT_CONNECTED)
		return;
	fwd_next(fq, what & BEV_EVENT_TIMEOUT ? "TCP timeout" : "TCP connection failed");
}

/* A truncated answer: ask the same upstream again over TCP. */
static void
fwd_tcp(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;
	struct timeval tv = {fw->conf.attempt_ms / 1000, (fw->conf.attempt_ms % 1000) * 1000};
	uint8_t lenb[2] = {(uint8_t)(fq->query_len >> 8), (uint8_t)fq->query_len};

	fwd_close_try(fq);
	fq->tcp = bufferevent_socket_new(fw->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (fq->tcp == NULL) {
		fwd_next(fq, "cannot make a TCP socket");
		return;
	}
	bufferevent_setcb(fq->tcp, fwd_tcp_read_cb, NULL, fwd_tcp_event_cb, fq);
	bufferevent_set_timeouts(fq->tcp, &tv, &tv);
	bufferevent_write(fq->tcp, lenb, 2);
	bufferevent_write(fq->tcp, fq->query, fq->query_len);
	bufferevent_enable(fq->tcp, EV_READ);
	if (bufferevent_socket_connect(fq->tcp, (struct sockaddr *)&fw->conf.upstream[fq->upstream],
	                               (int)fw->conf.upstream_len[fq->upstream]) == -1)
		fwd_next(fq, "TCP connect failed");
}

static void
fwd_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fwd_query *fq = arg;
	const char *err;
	ldns_pkt *pkt;
	ssize_t n;
	int i;

	if (what & EV_TIMEOUT) {
		fwd_next(fq, fq->fd == -1 ? "send failed" : "timeout");
		return;
	}
	for (i = 0; i < FWD_RECV_BURST; i++) {
		n = recv(fd, fq->fw->buf, sizeof fq->fw->buf - 1, 0);
		if (n == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			fwd_next(fq, strerror(errno));
			return;
		}
		if ((err = fwd_check(fq, fq->fw->buf, (size_t)n, &pkt)) != NULL) {
			if (err == msg_err_case && fwd_case_changed(fq) == 0)
				return;
			log_debug("dns upstream: datagram ignored: %s", err);
			continue;
		}
		if (ldns_pkt_tc(pkt)) {
			ldns_pkt_free(pkt);
			fwd_tcp(fq);
			return;
		}
		fwd_answer(fq, pkt);
		return;
	}
}

/* Open a connected UDP socket to the upstream and send; -1 on failure. */
static int
fwd_send(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;
	const struct sockaddr_storage *ss = &fw->conf.upstream[fq->upstream];

	fq->fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fq->fd == -1)
		return -1;
	if (connect(fq->fd, (const struct sockaddr *)ss, fw->conf.upstream_len[fq->upstream]) ==
	        -1 ||
	    send(fq->fd, fq->query, fq->query_len, 0) != (ssize_t)fq->query_len) {
		close(fq->fd);
		fq->fd = -1;
		return -1;
	}
	return 0;
}

/*
 * One try at the current upstream, with a new id and socket. A socket
 * that cannot be opened or sent on fails the try through an immediate
 * timeout, so that outcomes always arrive from the event loop.
 */
static void
fwd_try(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;

	fwd_close_try(fq);
	if (fq->tries >= 2 * fw->conf.nupstream || time_mono_ms() >= fq->deadline) {
		fwd_finish(fq, NULL, fq->tries == 0 ? "no upstream" : "no upstream answered");
		return;
	}
	fq->tries++;
	fwd_attempt(fq);
}

/* Send the question to the current upstream and arm the try's timeout. */
static void
fwd_attempt(struct fwd_query *fq)
{
	struct forward *fw = fq->fw;
	uint64_t now = time_mono_ms(), left;
	uint8_t rnd[(MSG_NAME_MAX + 1) / 8]; /* a bit for every byte a name may have */
	struct timeval tv;
	size_t i, letters = 0;
	uint16_t v;

	fq->id = forward_random16(fw);
	fq->query_len = msg_build_query(fq->key, fq->key_len, fq->id, fq->query, sizeof fq->query);
	if (!(fq->plain & (1u << fq->upstream))) {
		for (i = 0; i + 4 < fq->key_len; i++)
			letters += fq->key[i] >= 'a' && fq->key[i] <= 'z';
		for (i = 0; i < (letters + 7) / 8 && i < sizeof rnd; i += 2) {
			v = forward_random16(fw);
			memcpy(rnd + i, &v, i + 1 < sizeof rnd ? 2 : 1);
		}
		msg_name_mix(fq->query + MSG_QUERY_HDR, fq->key_len - 4, rnd, (letters + 7) / 8);
	}
	left = now < fq->deadline ? fq->deadline - now : 0;
	if (left > fw->conf.attempt_ms)
		left = fw->conf.attempt_ms;
	if (fwd_send(fq) == -1)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	fq->ev =
	    event_new(fw->base, fq->fd, fq->fd == -1 ? 0 : EV_READ | EV_PERSIST, fwd_read_cb, fq);
	event_add(fq->ev, &tv);
}

/*
 * Have w wait for the answer to key: joins the question in flight, or
 * asks it. Returns -1 when too many questions are in flight already.
 */
int
forward_join(struct forward *fw, const uint8_t *key, size_t key_len, struct resolver_waiter *w)
{
	uint64_t h = fwd_hash(fw, key, key_len);
	struct fwd_query *fq, **bucket = &fw->buckets[h & (FWD_BUCKETS - 1)];

	/* Identical queries cost no upstream traffic, but each holds memory. */
	if (fw->nwaiters >= fw->conf.max_waiters)
		return -1;
	for (fq = *bucket; fq != NULL; fq = fq->next)
		if (fq->hash == h && fq->key_len == key_len && memcmp(fq->key, key, key_len) == 0)
			break;
	if (fq == NULL) {
		if (fw->npending >= fw->conf.max_pending || fw->conf.nupstream == 0 ||
		    key_len > sizeof fq->key)
			return -1;
		fq = xcalloc(1, sizeof *fq);
		fq->fw = fw;
		fq->hash = h;
		memcpy(fq->key, key, key_len);
		fq->key_len = key_len;
		fq->fd = -1;
		TAILQ_INIT(&fq->waiters);
		fq->upstream = fw->pref % fw->conf.nupstream;
		fq->deadline = time_mono_ms() + fw->conf.deadline_ms;
		fq->next = *bucket;
		*bucket = fq;
		fw->npending++;
		fwd_try(fq);
	}
	TAILQ_INSERT_TAIL(&fq->waiters, w, entry);
	w->fq = fq;
	fw->nwaiters++;
	return 0;
}

/* w no longer wants the answer; the question goes on to fill the cache. */
void
forward_detach(struct resolver_waiter *w)
{
	if (w->fq == NULL)
		return;
	TAILQ_REMOVE(&w->fq->waiters, w, entry);
	w->fq->fw->nwaiters--;
	w->fq = NULL;
}

void
forward_free(struct forward *fw)
{
	struct fwd_query *fq;
	struct resolver_waiter *w;
	size_t i;

	if (fw == NULL)
		return;
	for (i = 0; i < FWD_BUCKETS; i++) {
		while ((fq = fw->buckets[i]) != NULL) {
			fw->buckets[i] = fq->next;
			while ((w = TAILQ_FIRST(&fq->waiters)) != NULL) {
				forward_detach(w);
				resolver_waiter_free(w);
			}
			fwd_close_try(fq);
			free(fq);
		}
	}
	free(fw);
}
