/*
 * Unit tests for common/sock.c. sock_text: "a.b.c.d:port" and "[v6]:port"
 * exactly as inet_ntop and printf would write them, for addresses and
 * ports across their whole range, cut to the room given, and "-" for
 * anything that is neither. sock_listen: the socket the proxy and the
 * resolver listen on, checked from the outside (listening, flags, the
 * port reuse a stream socket takes and a datagram socket must not, the
 * errors it returns).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "common.h"
#include "test_rng.h"

static void
reference(const struct sockaddr_storage *ss, char *out, size_t len)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		assert_non_null(inet_ntop(AF_INET, &sin->sin_addr, a, sizeof a));
		snprintf(out, len, "%s:%u", a, ntohs(sin->sin_port));
	} else {
		assert_non_null(inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof a));
		snprintf(out, len, "[%s]:%u", a, ntohs(sin6->sin6_port));
	}
}

static void
test_as_inet_ntop(void **state)
{
	static const struct {
		uint32_t addr;
		uint16_t port;
	} fixed[] = {{0, 0}, {0xffffffff, 65535}, {0x7f000001, 18080}, {0x0a000001, 9}};
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	char got[80], want[80];
	size_t i, k;
	uint64_t x;

	(void)state;
	for (i = 0; i < 20000; i++) {
		memset(&ss, 0, sizeof ss);
		x = test_rng();
		if (i % 2 == 0) {
			sin->sin_family = AF_INET;
			sin->sin_addr.s_addr = htonl((uint32_t)x);
			sin->sin_port = htons((uint16_t)(x >> 32));
			if (i / 2 < sizeof fixed / sizeof fixed[0]) {
				sin->sin_addr.s_addr = htonl(fixed[i / 2].addr);
				sin->sin_port = htons(fixed[i / 2].port);
			}
		} else {
			sin6->sin6_family = AF_INET6;
			for (k = 0; k < 16; k++)
				sin6->sin6_addr.s6_addr[k] =
				    (uint8_t)(test_rng() & (k < 10 && i % 6 == 1 ? 0 : 0xff));
			sin6->sin6_port = htons((uint16_t)x);
		}
		reference(&ss, want, sizeof want);
		sock_text(&ss, got, sizeof got);
		assert_string_equal(got, want);
		/* Cut short as snprintf would. */
		k = 1 + (size_t)(x >> 48) % strlen(want);
		reference(&ss, want, k);
		memset(got, 'x', sizeof got);
		sock_text(&ss, got, k);
		assert_string_equal(got, want);
	}
}

static void
test_other_families(void **state)
{
	struct sockaddr_storage ss;
	char out[8];

	(void)state;
	memset(&ss, 0, sizeof ss);
	ss.ss_family = AF_UNIX;
	sock_text(&ss, out, sizeof out);
	assert_string_equal(out, "-");
	ss.ss_family = AF_UNSPEC;
	memset(out, 'x', sizeof out);
	sock_text(&ss, out, sizeof out);
	assert_string_equal(out, "-");
	sock_text(&ss, out, 0); /* no room: nothing written, no crash */
}

/* An option of fd as an int. */
static int
sockopt(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof v;

	assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

/* ss: the loopback address with port 0, for the kernel to pick one. */
static void
loopback_any(struct sockaddr_storage *ss, socklen_t *len)
{
	assert_null(sock_parse("127.0.0.1:0", -1, ss, len));
}

/* The port fd is bound to, written into ss. */
static void
bound_port(int fd, struct sockaddr_storage *ss)
{
	struct sockaddr_storage got;
	socklen_t glen = sizeof got;

	assert_int_equal(getsockname(fd, (struct sockaddr *)&got, &glen), 0);
	assert_int_not_equal(((struct sockaddr_in *)&got)->sin_port, 0);
	((struct sockaddr_in *)ss)->sin_port = ((struct sockaddr_in *)&got)->sin_port;
}

static void
test_listen_stream(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, fd2, c, lowest;

	(void)state;
	loopback_any(&ss, &len);
	fd = sock_listen(&ss, len, SOCK_STREAM, 16);
	assert_true(fd >= 0);
	assert_int_equal(sockopt(fd, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	assert_int_equal(sockopt(fd, SOL_SOCKET, SO_ACCEPTCONN), 1);
	assert_true(sockopt(fd, SOL_SOCKET, SO_REUSEADDR) != 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(sock_is_loopback(fd));

	/* A client connects to it. */
	bound_port(fd, &ss);
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&ss, len), 0);
	close(c);

	/* A second listener on the same port: refused, and its socket closed. */
	lowest = dup(0);
	assert_true(lowest >= 0);
	close(lowest);
	errno = 0;
	assert_int_equal(sock_listen(&ss, len, SOCK_STREAM, 16), -1);
	assert_int_equal(errno, EADDRINUSE);
	fd2 = dup(0);
	assert_int_equal(fd2, lowest);
	close(fd2);
	close(fd);
}

static void
test_listen_dgram(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char b[8];
	int fd, c;

	(void)state;
	loopback_any(&ss, &len);
	fd = sock_listen(&ss, len, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(sockopt(fd, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
	/* No port sharing: another socket with SO_REUSEADDR cannot join it. */
	assert_int_equal(sockopt(fd, SOL_SOCKET, SO_REUSEADDR), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);

	/* Bound: a datagram sent to its port arrives; no wait, it is non-blocking. */
	bound_port(fd, &ss);
	c = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(sendto(c, "ping", 4, 0, (struct sockaddr *)&ss, len), 4);
	assert_int_equal(recv(fd, b, sizeof b, 0), 4);
	assert_memory_equal(b, "ping", 4);
	assert_int_equal(recv(fd, b, sizeof b, 0), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	close(c);

	errno = 0;
	assert_int_equal(sock_listen(&ss, len, SOCK_DGRAM, 0), -1);
	assert_int_equal(errno, EADDRINUSE);
	close(fd);
}

/* Failures come back as -1 with the cause in errno. */
static void
test_listen_errors(void **state)
{
	struct sockaddr_storage ss;
	socklen_t len;

	(void)state;
	/* An address this host does not have (binding sends nothing). */
	assert_null(sock_parse("198.18.255.254:0", -1, &ss, &len));
	errno = 0;
	assert_int_equal(sock_listen(&ss, len, SOCK_STREAM, 16), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	/* No address family at all: socket() itself fails. */
	memset(&ss, 0, sizeof ss);
	ss.ss_family = AF_UNSPEC;
	errno = 0;
	assert_int_equal(sock_listen(&ss, sizeof ss, SOCK_DGRAM, 0), -1);
	assert_int_not_equal(errno, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_as_inet_ntop),  cmocka_unit_test(test_other_families),
	    cmocka_unit_test(test_listen_stream), cmocka_unit_test(test_listen_dgram),
	    cmocka_unit_test(test_listen_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
