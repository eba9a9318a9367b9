/*
 * Socket addresses as the command lines give them ("127.0.0.1:18080",
 * "[::1]:53", a bare IPv6 address where a default port applies), the
 * loopback test that keeps every listener private unless told otherwise,
 * the listening sockets bound here, and those a launcher hands down (the
 * LISTEN_FDS convention), shared by the proxy and the resolver.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

/*
 * "host:port", "[v6]:port", or (with defport >= 0) "host", "[v6]" or a
 * bare IPv6 address; addresses only, never names. Returns an error or NULL.
 */
const char *
sock_parse(const char *spec, int defport, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	const char *colon = NULL, *hs = spec, *close_b;
	char host[64], *end;
	size_t hlen;
	long port = defport;

	memset(ss, 0, sizeof *ss);
	if (spec[0] == '[') {
		if ((close_b = strchr(spec, ']')) == NULL)
			return "expected [ADDRESS]:PORT";
		hs = spec + 1;
		hlen = (size_t)(close_b - hs);
		if (close_b[1] == ':')
			colon = close_b + 1;
		else if (close_b[1] != '\0')
			return "expected [ADDRESS]:PORT";
	} else if ((colon = strchr(spec, ':')) != NULL && strchr(colon + 1, ':') != NULL) {
		hlen = strlen(spec); /* a bare IPv6 address */
		colon = NULL;
	} else
		hlen = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
	if (colon == NULL && defport < 0)
		return "expected ADDRESS:PORT";
	if (hlen == 0 || hlen >= sizeof host)
		return "bad address";
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	if (colon != NULL) {
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno != 0 || end == colon + 1 || *end != '\0' || port < 0 || port > 65535)
			return "bad port";
	}
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

/*
 * A non-blocking, close-on-exec socket of type (SOCK_STREAM or SOCK_DGRAM)
 * bound to ss; a stream socket also listens with backlog, and takes
 * SO_REUSEADDR so that a restart binds while old connections linger. A
 * datagram socket never does: another process could then share its port.
 * Returns the fd, or -1 with errno set.
 */
int
sock_listen(const struct sockaddr_storage *ss, socklen_t len, int type, int backlog)
{
	int fd, one = 1, saved;

	fd = socket(ss->ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (type == SOCK_STREAM)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)ss, len) == -1 ||
	    (type == SOCK_STREAM && listen(fd, backlog) == -1)) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* 127.0.0.0/8, ::1, or an IPv4-mapped loopback address. */
int
sock_addr_is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family != AF_INET6)
		return 0;
	if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) && sin6->sin6_addr.s6_addr[12] == 127;
}

int
sock_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	memset(&ss, 0, sizeof ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
		return 0;
	return sock_addr_is_loopback(&ss);
}

/*
 * "a.b.c.d:port" or "[v6]:port" ("-" for anything else), cut to len; IPv4
 * without printf (str_ipv4): every connection and every DNS query's audit
 * line formats its client.
 */
void
sock_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	char a[INET6_ADDRSTRLEN], t[sizeof "255.255.255.255:65535"];
	size_t n;

	if (len == 0)
		return;
	if (ss->ss_family == AF_INET) {
		n = str_ipv4(t, (const uint8_t *)&sin->sin_addr);
		t[n++] = ':';
		str_u64(t + n, ntohs(sin->sin_port));
		str_copy(out, len, t);
	} else if (ss->ss_family == AF_INET6 &&
	           inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof a) != NULL)
		snprintf(out, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	else
		str_copy(out, len, "-");
}

/* The local address of a socket, as text ("-" when it has none). */
void
sock_local_text(int fd, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;

	memset(&ss, 0, sizeof ss);
	if (fd == -1 || getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		ss.ss_family = AF_UNSPEC;
	sock_text(&ss, out, len);
}

/*
 * A socket the launcher passed down: LISTEN_PID must be us, the fds start
 * at 3, and LISTEN_FDNAMES (colon-separated) names them. type is
 * SOCK_STREAM (which must be listening) or SOCK_DGRAM; nth picks among
 * several of one name (IPv4 and IPv6). Without names, the first fd is
 * "proxy". -1 when there is none.
 */
int
sock_inherited(const char *name, int type, int nth)
{
	const char *pid, *nfds, *names, *p;
	size_t nlen = strlen(name);
	int n, i, fd, v;
	socklen_t len;

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
		len = sizeof v;
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == -1 || v != type) {
			log_warnx("inherited fd %d (%s) is not a %s socket", fd, name,
			          type == SOCK_DGRAM ? "UDP"
			          : type == SOCK_RAW ? "raw"
			                             : "TCP");
			return -1;
		}
		len = sizeof v;
		if (type == SOCK_STREAM &&
		    (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == -1 || !v)) {
			log_warnx("inherited fd %d (%s) is not a listening socket", fd, name);
			return -1;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		return fd;
	}
	return -1;
}
