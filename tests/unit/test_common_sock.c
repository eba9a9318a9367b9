/*
 * Unit tests for common/sock.c's sock_text: "a.b.c.d:port" and
 * "[v6]:port" exactly as inet_ntop and printf would write them, for
 * addresses and ports across their whole range, cut to the room given,
 * and "-" for anything that is neither.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_as_inet_ntop),
	    cmocka_unit_test(test_other_families),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
