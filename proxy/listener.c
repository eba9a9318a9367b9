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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/listener.h>

#include "proxy.h"

#define LISTENER_BACKLOG  1024
#define LISTENER_RETRY_MS 500

struct listener {
	struct egressd *e;
	struct evconnlistener *lev;
	struct event *retry;
	int paused;
	int transparent; /* redirected connections: peeked and classified */
};

/* Split "host:port" or "[v6]:port" into a socket address. */
static const char *
listener_parse_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[64];
	const char *colon, *hs;
	size_t hlen;
	char *end;
	long port;

	memset(ss, 0, sizeof *ss);
	if (spec[0] == '[') {
		if ((colon = strstr(spec, "]:")) == NULL)
			return "expected [ADDRESS]:PORT";
		hs = spec + 1;
		hlen = (size_t)(colon - hs);
		colon++;
	} else {
		if ((colon = strrchr(spec, ':')) == NULL)
			return "expected ADDRESS:PORT";
		hs = spec;
		hlen = (size_t)(colon - spec);
	}
	if (hlen == 0 || hlen >= sizeof host)
		return "bad address";
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || port < 0 || port > 65535)
		return "bad port";
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*len = sizeof *sin;
		return NULL;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*len = sizeof *sin6;
		return NULL;
	}
	return "not an IP address (names are not accepted for listeners)";
}

static int
listener_addr_is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	const uint8_t *b;

	if (ss->ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family != AF_INET6)
		return 0;
	if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
		return 1;
	b = sin6->sin6_addr.s6_addr;
	return IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) && b[12] == 127;
}

/* Bind a non-blocking TCP listener; -1 with err set when it cannot. */
int
listener_bind(const char *spec, int allow_non_loopback, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *why;
	int fd, one = 1;

	if ((why = listener_parse_addr(spec, &ss, &len)) != NULL) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (!allow_non_loopback && !listener_addr_is_loopback(&ss)) {
		snprintf(err, errlen,
		         "not a loopback address; an egress proxy reachable from other hosts is an "
		         "open proxy (pass --allow-non-loopback if that is really meant)");
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) == -1 || listen(fd, LISTENER_BACKLOG) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A listener passed down by the launcher: LISTEN_PID must be us, the fds
 * start at 3, and LISTEN_FDNAMES (colon-separated) names them; nth picks
 * among several of one name (IPv4 and IPv6). Without names the first one
 * is the proxy. -1 when there is none.
 */
int
listener_inherited(const char *name, int nth)
{
	const char *pid, *nfds, *names, *p;
	int n, i, fd, acc;
	socklen_t len = sizeof acc;
	size_t nlen = strlen(name);

	if ((pid = getenv("LISTEN_PID")) == NULL || atol(pid) != (long)getpid())
		return -1;
	if ((nfds = getenv("LISTEN_FDS")) == NULL || (n = atoi(nfds)) <= 0 || n > 16)
		return -1;
	names = getenv("LISTEN_FDNAMES");
	for (i = 0, p = names; i < n; i++) {
		fd = 3 + i;
		if (names != NULL) {
			if (p == NULL)
				return -1;
			if (strncmp(p, name, nlen) != 0 || (p[nlen] != ':' && p[nlen] != '\0') ||
			    nth-- > 0) {
				p = strchr(p, ':');
				p = p ? p + 1 : NULL;
				continue;
			}
		} else if (strcmp(name, "proxy") != 0 || i != nth)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == -1 || !acc) {
			log_warnx("inherited fd %d (%s) is not a listening socket", fd, name);
			return -1;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		return fd;
	}
	return -1;
}

int
listener_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return 0;
	return listener_addr_is_loopback(&ss);
}

static void
listener_accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                   void *arg)
{
	struct listener *l = arg;
	struct egressd *e = l->e;

	if (e->draining || e->nconns >= e->lim.max_conns) {
		close(fd);
		listener_pause(l);
		return;
	}
	if (l->transparent)
		transparent_accept(e, fd, sa);
	else
		conn_accept(e, fd, sa, (socklen_t)salen);
	if (e->nconns >= e->lim.max_conns) {
		log_warnx("connection limit (%u) reached: accepting paused", e->lim.max_conns);
		listener_pause(l);
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
listener_new(struct egressd *e, int fd, int transparent)
{
	struct listener *l;

	l = xcalloc(1, sizeof *l);
	l->e = e;
	l->transparent = transparent;
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

void
listener_resume(struct listener *l)
{
	if (l->paused)
		evconnlistener_enable(l->lev);
	l->paused = 0;
}
