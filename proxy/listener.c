/*
 * Listening sockets: bound here or inherited from the launcher (the
 * LISTEN_FDS convention, so egressd needs no privileges), loopback unless
 * told otherwise, and an accept loop that pauses rather than spins when the
 * process runs out of descriptors or reaches its connection limit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/listener.h>

#include "proxy.h"

#define LISTENER_BACKLOG  1024
#define LISTENER_RETRY_MS 500

static const struct {
	const char *name;
	const char *why; /* the harm of one reachable from other hosts */
} listener_kinds[] = {
    [LISTENER_PROXY] = {"proxy", "an egress proxy reachable from other hosts is an open proxy"},
    [LISTENER_TRANSPARENT] = {"transparent", "the connections redirected to it come from this "
                                             "host alone"},
    [LISTENER_DNS] = {"dns", "an open resolver answers anyone"},
    [LISTENER_METRICS] = {"metrics", "anyone who can reach it learns what the sandbox does"},
};

struct listener {
	struct egressd *e;
	struct evconnlistener *lev;
	struct event *retry;
	int paused;
	int transparent; /* redirected connections: peeked and classified */
	int nodelay;     /* accepted sockets inherit TCP_NODELAY from the listener */
};

/*
 * Every listener stays on loopback unless --allow-non-loopback (allow)
 * says otherwise: the address ss, before binding it, or, with ss NULL,
 * the address fd listens on (one inherited from a launcher). 0, or -1
 * with err set.
 */
int
listener_private(int fd, const struct sockaddr_storage *ss, enum listener_kind kind, int allow,
                 char *err, size_t errlen)
{
	if (allow || (ss != NULL ? sock_addr_is_loopback(ss) : sock_is_loopback(fd)))
		return 0;
	snprintf(err, errlen,
	         "the %s listener is not on a loopback address; %s (pass --allow-non-loopback if "
	         "that is really meant)",
	         listener_kinds[kind].name, listener_kinds[kind].why);
	return -1;
}

/* Bind a non-blocking TCP listener; -1 with err set when it cannot. */
int
listener_bind(const char *spec, enum listener_kind kind, int allow_non_loopback, char *err,
              size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *why;
	int fd;

	if ((why = sock_parse(spec, -1, &ss, &len)) != NULL) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (listener_private(-1, &ss, kind, allow_non_loopback, err, errlen) == -1)
		return -1;
	if ((fd = sock_listen(&ss, len, SOCK_STREAM, LISTENER_BACKLOG)) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	return fd;
}

static void
listener_accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                   void *arg)
{
	struct listener *l = arg;
	struct egressd *e = l->e;
	enum overload_kind kind;

	if (e->draining || e->nconns >= e->lim.max_conns || e->buffered > e->lim.max_buffered) {
		/* Accepted past a limit (the pause came one accept late): closed at once. */
		close(fd);
		listener_pause(l);
		if (!e->draining) {
			kind = e->nconns >= e->lim.max_conns ? OVERLOAD_CONNS : OVERLOAD_MEMORY;
			e->ov[kind].shed++;
			e->ov[kind].ep_shed++;
			e->overloaded(e, kind);
		}
		return;
	}
	if (!l->nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	e->m.accepted[l->transparent]++;
	if (l->transparent)
		transparent_accept(e, fd, sa);
	else
		conn_accept(e, fd, sa, (socklen_t)salen);
	if (e->nconns >= e->lim.max_conns || e->buffered > e->lim.max_buffered) {
		listener_pause(l);
		e->overloaded(e, e->nconns >= e->lim.max_conns ? OVERLOAD_CONNS : OVERLOAD_MEMORY);
	}
}

static void
listener_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	if (!l->e->draining)
		listener_resume(l);
}

/* Out of descriptors: stop accepting for a moment instead of spinning. */
static void
listener_error_cb(struct evconnlistener *lev, void *arg)
{
	struct listener *l = arg;
	struct timeval tv = {0, LISTENER_RETRY_MS * 1000};
	int err = EVUTIL_SOCKET_ERROR();

	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		log_warnx("accept: %s: pausing for %d ms", strerror(err), LISTENER_RETRY_MS);
		listener_pause(l);
		evtimer_add(l->retry, &tv);
		return;
	}
	log_warnx("accept: %s", strerror(err));
}

struct listener *
listener_new(struct egressd *e, int fd, enum listener_kind kind)
{
	struct listener *l;

	l = xcalloc(1, sizeof *l);
	l->e = e;
	l->transparent = kind == LISTENER_TRANSPARENT;
	/*
	 * Set once here, Linux copies TCP_NODELAY to every socket accepted
	 * from this one: one system call less per connection.
	 */
	l->nodelay = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int)) == 0;
	l->lev = evconnlistener_new(e->base, listener_accept_cb, l,
	                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (l->lev == NULL) {
		log_warnx("cannot listen on fd %d", fd);
		close(fd);
		free(l);
		return NULL;
	}
	evconnlistener_set_error_cb(l->lev, listener_error_cb);
	l->retry = evtimer_new(e->base, listener_retry_cb, l);
	return l;
}

void
listener_free(struct listener *l)
{
	if (l == NULL)
		return;
	evconnlistener_free(l->lev);
	event_free(l->retry);
	free(l);
}

void
listener_pause(struct listener *l)
{
	if (!l->paused)
		evconnlistener_disable(l->lev);
	l->paused = 1;
}

/*
 * Stop listening for good (a drain): a paused listener still completes
 * handshakes into its backlog, where a client would wait, unanswered,
 * until egressd exits. Shut down, the socket refuses new connections
 * and resets those in its backlog, so clients go elsewhere at once. The
 * descriptor stays open until listener_free.
 */
void
listener_shut(struct listener *l)
{
	listener_pause(l);
	if (shutdown(evconnlistener_get_fd(l->lev), SHUT_RDWR) == -1)
		log_warn("listener shutdown");
}

void
listener_resume(struct listener *l)
{
	if (l->paused)
		evconnlistener_enable(l->lev);
	l->paused = 0;
}
