/*
 * The resolver's sockets towards clients: one UDP socket and one TCP
 * listener on the same address, bound here or inherited from the launcher
 * (LISTEN_FDS, names "dns" and "dns-tcp"). UDP is read and answered in
 * batches (recvmmsg, sendmmsg). TCP carries length-prefixed messages (RFC
 * 7766): queries may be pipelined and are answered as their answers come,
 * a connection idles out when nothing is in flight, and a client that
 * stops reading stops being read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "resolver_int.h"

#define DNS_LISTEN_UDP_BURST    64   /* datagrams read per wakeup */
#define DNS_LISTEN_UDP_BATCH    32   /* ... per recvmmsg, answered with one sendmmsg */
#define DNS_LISTEN_UDP_SLOT     4096 /* a query, or an answer to one; larger ones are dropped */
#define DNS_LISTEN_UDP_RCVBUF   (1024 * 1024)
#define DNS_LISTEN_TCP_INFLIGHT 64           /* queries of one connection waiting upstream */
#define DNS_LISTEN_TCP_HIGH     (256 * 1024) /* stop reading past this much unsent */
#define DNS_LISTEN_TCP_WRITE_S  10
#define DNS_LISTEN_BACKLOG      128

struct dns_listen_tcp {
	TAILQ_ENTRY(dns_listen_tcp) entry;
	struct dns_listen *l;
	struct bufferevent *bev;
	struct resolver_waiters waiters;
	unsigned inflight;
	int eof;
	struct sockaddr_storage peer;
	socklen_t peer_len;
};

/*
 * A batch of datagrams: read with one recvmmsg, and the answers made on
 * the spot (cached, blocked, malformed) sent with one sendmmsg, so that a
 * busy resolver makes two system calls per batch instead of two per query.
 */
struct dns_listen_batch {
	struct mmsghdr msg[DNS_LISTEN_UDP_BATCH];
	struct iovec iov[DNS_LISTEN_UDP_BATCH];
	struct sockaddr_storage peer[DNS_LISTEN_UDP_BATCH];
	uint8_t data[DNS_LISTEN_UDP_BATCH][DNS_LISTEN_UDP_SLOT];
	unsigned n;
};

struct dns_listen {
	struct resolver *r;
	int udp_fd;
	struct event *udp_ev;
	struct evconnlistener *lev;
	TAILQ_HEAD(, dns_listen_tcp) conns;
	unsigned nconns;
	uint8_t buf[DNS_MSG_MAX + 1];
	struct dns_listen_batch *in;  /* UDP only */
	struct dns_listen_batch *out; /* answers held while a batch is served */
	int batching;
};

/*
 * Bind UDP and TCP on spec (ADDR:PORT). With port 0 the UDP socket picks
 * the port and TCP takes the same one.
 */
int
dns_listen_bind(const char *spec, int *udp, int *tcp, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *e;
	int i;

	if ((e = sock_parse(spec, RESOLVER_DEFAULT_PORT, &ss, &len)) != NULL) {
		snprintf(err, errlen, "%s", e);
		return -1;
	}
	for (i = 0; i < 20; i++) {
		if ((*udp = sock_listen(&ss, len, SOCK_DGRAM, 0)) == -1)
			break;
		if (((struct sockaddr_in *)&ss)->sin_port == 0) {
			struct sockaddr_storage got;
			socklen_t glen = sizeof got;

			getsockname(*udp, (struct sockaddr *)&got, &glen);
			((struct sockaddr_in *)&ss)->sin_port =
			    ((struct sockaddr_in *)&got)->sin_port;
			if ((*tcp = sock_listen(&ss, len, SOCK_STREAM, DNS_LISTEN_BACKLOG)) != -1)
				return 0;
			close(*udp);
			((struct sockaddr_in *)&ss)->sin_port = 0;
			continue;
		}
		if ((*tcp = sock_listen(&ss, len, SOCK_STREAM, DNS_LISTEN_BACKLOG)) != -1)
			return 0;
		close(*udp);
		break;
	}
	snprintf(err, errlen, "%s", strerror(errno));
	return -1;
}

/* Send the answers held for a batch; what the socket refuses is lost, as UDP may be. */
static void
dns_listen_udp_flush(struct dns_listen *l)
{
	struct dns_listen_batch *b = l->out;
	unsigned done = 0;
	int n;

	while (done < b->n) {
		n = sendmmsg(l->udp_fd, b->msg + done, b->n - done, 0);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			done++; /* skip the one that failed: the rest may go */
			continue;
		}
		done += (unsigned)n;
	}
	b->n = 0;
}

/* Hold an answer for the batch being served; 0 when it was taken. */
static int
dns_listen_udp_hold(struct dns_listen *l, const struct resolver_client *c, const uint8_t *msg,
                    size_t len)
{
	struct dns_listen_batch *b = l->out;
	unsigned i;

	if (!l->batching || len > DNS_LISTEN_UDP_SLOT || c->peer_len > sizeof b->peer[0])
		return -1;
	if (b->n == DNS_LISTEN_UDP_BATCH)
		dns_listen_udp_flush(l);
	i = b->n++;
	memcpy(b->data[i], msg, len);
	memcpy(&b->peer[i], &c->peer, c->peer_len);
	b->iov[i].iov_base = b->data[i];
	b->iov[i].iov_len = len;
	memset(&b->msg[i], 0, sizeof b->msg[i]);
	b->msg[i].msg_hdr.msg_name = &b->peer[i];
	b->msg[i].msg_hdr.msg_namelen = c->peer_len;
	b->msg[i].msg_hdr.msg_iov = &b->iov[i];
	b->msg[i].msg_hdr.msg_iovlen = 1;
	return 0;
}

/*
 * Read a batch of queries, answer them, send the answers made on the
 * spot together. A datagram too large for a slot is dropped: no query
 * is that large (the EDNS limit is 4096 bytes).
 */
static int
dns_listen_udp_batch(struct dns_listen *l, int fd)
{
	struct dns_listen_batch *b = l->in;
	struct resolver_client c;
	struct msghdr *h;
	int n, i;

	for (i = 0; i < DNS_LISTEN_UDP_BATCH; i++) {
		b->iov[i].iov_base = b->data[i];
		b->iov[i].iov_len = sizeof b->data[i];
		h = &b->msg[i].msg_hdr;
		memset(h, 0, sizeof *h);
		h->msg_name = &b->peer[i];
		h->msg_namelen = sizeof b->peer[i];
		h->msg_iov = &b->iov[i];
		h->msg_iovlen = 1;
	}
	if ((n = recvmmsg(fd, b->msg, DNS_LISTEN_UDP_BATCH, MSG_DONTWAIT, NULL)) <= 0)
		return 0;
	l->batching = 1;
	for (i = 0; i < n; i++) {
		h = &b->msg[i].msg_hdr;
		if (h->msg_flags & MSG_TRUNC || h->msg_namelen > sizeof c.peer)
			continue;
		memset(&c, 0, sizeof c);
		c.udp_fd = l->udp_fd;
		memcpy(&c.peer, &b->peer[i], h->msg_namelen);
		c.peer_len = h->msg_namelen;
		resolver_query(l->r, b->data[i], b->msg[i].msg_len, &c);
	}
	l->batching = 0;
	dns_listen_udp_flush(l);
	return n;
}

static void
dns_listen_udp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_listen *l = arg;
	int got = 0, n;

	while (got < DNS_LISTEN_UDP_BURST) {
		if ((n = dns_listen_udp_batch(l, fd)) < DNS_LISTEN_UDP_BATCH)
			return;
		got += n;
	}
}

static void
dns_listen_tcp_free(struct dns_listen_tcp *t)
{
	struct dns_listen *l = t->l;
	struct resolver_waiter *w;

	while ((w = TAILQ_FIRST(&t->waiters)) != NULL) {
		TAILQ_REMOVE(&t->waiters, w, cl_entry);
		w->client.conn = NULL;
		dns_forward_detach(w);
		resolver_waiter_free(w);
	}
	TAILQ_REMOVE(&l->conns, t, entry);
	l->nconns--;
	bufferevent_free(t->bev);
	free(t);
}

/* Close once the client has hung up and has every answer it asked for. */
static int
dns_listen_tcp_maybe_close(struct dns_listen_tcp *t)
{
	if (!t->eof || t->inflight > 0 || evbuffer_get_length(bufferevent_get_output(t->bev)) > 0)
		return 0;
	dns_listen_tcp_free(t);
	return 1;
}

static void
dns_listen_tcp_read_cb(struct bufferevent *bev, void *arg)
{
	struct dns_listen_tcp *t = arg;
	struct dns_listen *l = t->l;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct resolver_client c;
	uint8_t lenb[2];
	size_t len;

	while (t->inflight < DNS_LISTEN_TCP_INFLIGHT &&
	       evbuffer_get_length(bufferevent_get_output(bev)) < DNS_LISTEN_TCP_HIGH) {
		if (evbuffer_copyout(in, lenb, 2) != 2)
			return;
		len = (size_t)lenb[0] << 8 | lenb[1];
		if (len == 0) {
			dns_listen_tcp_free(t);
			return;
		}
		if (evbuffer_get_length(in) < 2 + len)
			return;
		evbuffer_drain(in, 2);
		evbuffer_remove(in, l->buf, len);
		memset(&c, 0, sizeof c);
		c.tcp = 1;
		c.peer = t->peer;
		c.peer_len = t->peer_len;
		c.conn = t;
		resolver_query(l->r, l->buf, len, &c);
	}
	bufferevent_disable(bev, EV_READ);
}

static void
dns_listen_tcp_write_cb(struct bufferevent *bev, void *arg)
{
	struct dns_listen_tcp *t = arg;

	if (dns_listen_tcp_maybe_close(t))
		return;
	if (!t->eof && !(bufferevent_get_enabled(bev) & EV_READ)) {
		bufferevent_enable(bev, EV_READ);
		dns_listen_tcp_read_cb(bev, t);
	}
}

static void
dns_listen_tcp_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct dns_listen_tcp *t = arg;

	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) && t->inflight > 0) {
		/* Idle only counts while nothing is in flight. */
		bufferevent_enable(bev, EV_READ);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		t->eof = 1;
		bufferevent_disable(bev, EV_READ);
		dns_listen_tcp_maybe_close(t);
		return;
	}
	dns_listen_tcp_free(t);
}

static void
dns_listen_accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                     void *arg)
{
	struct dns_listen *l = arg;
	const struct resolver_conf *conf = &l->r->conf;
	struct timeval idle = {conf->tcp_idle_secs, 0}, wr = {DNS_LISTEN_TCP_WRITE_S, 0};
	struct dns_listen_tcp *t;

	if (l->nconns >= conf->max_tcp_conns) {
		evutil_closesocket(fd);
		return;
	}
	t = xcalloc(1, sizeof *t);
	t->l = l;
	TAILQ_INIT(&t->waiters);
	if (salen > 0 && (size_t)salen <= sizeof t->peer) {
		memcpy(&t->peer, sa, (size_t)salen);
		t->peer_len = (socklen_t)salen;
	}
	t->bev = bufferevent_socket_new(l->r->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (t->bev == NULL) {
		evutil_closesocket(fd);
		free(t);
		return;
	}
	TAILQ_INSERT_TAIL(&l->conns, t, entry);
	l->nconns++;
	bufferevent_setcb(t->bev, dns_listen_tcp_read_cb, dns_listen_tcp_write_cb,
	                  dns_listen_tcp_event_cb, t);
	bufferevent_set_timeouts(t->bev, &idle, &wr);
	bufferevent_enable(t->bev, EV_READ);
}

static void
dns_listen_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	log_warn("dns: accept");
}

static void dns_listen_stop_one(struct resolver *, int);

/* Serve clients on udp and tcp (either may be -1); the sockets are ours now. */
int
dns_listen_start(struct resolver *r, int udp, int tcp)
{
	struct dns_listen *l;
	int rcvbuf = DNS_LISTEN_UDP_RCVBUF, slot;

	if (r->lst[0] == NULL)
		slot = 0;
	else if (r->lst[1] == NULL)
		slot = 1;
	else
		return -1;
	l = xcalloc(1, sizeof *l);
	l->r = r;
	l->udp_fd = udp;
	TAILQ_INIT(&l->conns);
	r->lst[slot] = l;
	if (udp != -1) {
		l->in = xmalloc(sizeof *l->in);
		l->out = xmalloc(sizeof *l->out);
		l->out->n = 0;
		/* Room for a burst of queries while the loop is busy elsewhere. */
		(void)setsockopt(udp, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
		evutil_make_socket_nonblocking(udp);
		l->udp_ev = event_new(r->base, udp, EV_READ | EV_PERSIST, dns_listen_udp_cb, l);
		if (l->udp_ev == NULL || event_add(l->udp_ev, NULL) == -1)
			goto err;
	}
	if (tcp != -1) {
		l->lev = evconnlistener_new(r->base, dns_listen_accept_cb, l,
		                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, tcp);
		if (l->lev == NULL)
			goto err;
		evconnlistener_set_error_cb(l->lev, dns_listen_accept_error_cb);
	}
	return 0;
err:
	if (l->lev == NULL && tcp != -1)
		close(tcp);
	dns_listen_stop_one(r, slot);
	return -1;
}

/* Close one listener and its client connections. */
static void
dns_listen_stop_one(struct resolver *r, int slot)
{
	struct dns_listen *l = r->lst[slot];
	struct dns_listen_tcp *t;

	if (l == NULL)
		return;
	while ((t = TAILQ_FIRST(&l->conns)) != NULL)
		dns_listen_tcp_free(t);
	if (l->lev != NULL)
		evconnlistener_free(l->lev);
	if (l->udp_ev != NULL)
		event_free(l->udp_ev);
	if (l->udp_fd != -1)
		close(l->udp_fd);
	free(l->in);
	free(l->out);
	free(l);
	r->lst[slot] = NULL;
}

/* Close the listeners and every client connection. */
void
dns_listen_stop(struct resolver *r)
{
	dns_listen_stop_one(r, 0);
	dns_listen_stop_one(r, 1);
}

/* Send a reply to the client c stands for, if it is still there. */
void
dns_listen_reply(struct resolver *r, const struct resolver_client *c, const uint8_t *msg,
                 size_t len)
{
	uint8_t lenb[2] = {(uint8_t)(len >> 8), (uint8_t)len};
	size_t i;

	if (r->lst[0] == NULL && r->lst[1] == NULL)
		return; /* stopped: the sockets are closed */
	if (!c->tcp) {
		for (i = 0; i < EG_NELEM(r->lst); i++) {
			if (r->lst[i] != NULL && r->lst[i]->udp_fd == c->udp_fd &&
			    dns_listen_udp_hold(r->lst[i], c, msg, len) == 0)
				return;
		}
		(void)sendto(c->udp_fd, msg, len, 0, (const struct sockaddr *)&c->peer,
		             c->peer_len);
		return;
	}
	if (c->conn == NULL)
		return;
	bufferevent_write(c->conn->bev, lenb, 2);
	bufferevent_write(c->conn->bev, msg, len);
}

/* A TCP client's query now waits upstream: count it on its connection. */
void
dns_listen_hold(struct resolver_waiter *w)
{
	struct dns_listen_tcp *t = w->client.conn;

	if (!w->client.tcp || t == NULL)
		return;
	TAILQ_INSERT_TAIL(&t->waiters, w, cl_entry);
	t->inflight++;
}

/* ... and is answered (or dropped): the connection may read on, or close. */
void
dns_listen_release(struct resolver_waiter *w)
{
	struct dns_listen_tcp *t = w->client.conn;

	if (!w->client.tcp || t == NULL)
		return;
	TAILQ_REMOVE(&t->waiters, w, cl_entry);
	w->client.conn = NULL;
	t->inflight--;
	if (dns_listen_tcp_maybe_close(t))
		return;
	if (!t->eof && !(bufferevent_get_enabled(t->bev) & EV_READ) &&
	    evbuffer_get_length(bufferevent_get_output(t->bev)) < DNS_LISTEN_TCP_HIGH) {
		/* Queries already read in wait for the next loop turn, not this call. */
		bufferevent_enable(t->bev, EV_READ);
		if (evbuffer_get_length(bufferevent_get_input(t->bev)) > 0)
			bufferevent_trigger(t->bev, EV_READ, BEV_TRIG_DEFER_CALLBACKS);
	}
}
