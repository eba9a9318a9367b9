/*
 * Unit tests for image/env.c and the user lookup of image/priv.c: the
 * payload's environment (proxy variables in both cases, NO_PROXY for
 * loopback, every CA variable, inherited values of those names replaced,
 * LISTEN_* never passed down), resolv.conf parsing and rewriting, and
 * users given by name, by number or as UID:GID.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "init.h"

static void
test_env_build(void **state)
{
	char *base[] = {"PATH=/usr/bin",
	                "HTTP_PROXY=http://evil:1",
	                "SSL_CERT_FILE=/x",
	                "LISTEN_FDS=3",
	                "TERM=xterm",
	                "OPENCODE_SANDBOX_NETWORK_MODE=off",
	                "junk",
	                NULL};
	struct priv_user u = {1234, 1234, "opencode", "/home/opencode"};
	struct env_opts o = {"http://127.0.0.1:18080", "/run/ca.pem", "/run/bundle.pem", &u,
	                     MODE_STRICT};
	char **env = env_build(base, &o);
	static const char *proxies[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
	                                "http_proxy", "https_proxy", "all_proxy"};
	static const char *bundles[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	                                "GIT_SSL_CAINFO"};
	size_t i, n;

	for (i = 0; i < EG_NELEM(proxies); i++)
		assert_string_equal(env_get(env, proxies[i]), "http://127.0.0.1:18080");
	for (i = 0; i < EG_NELEM(bundles); i++)
		assert_string_equal(env_get(env, bundles[i]), "/run/bundle.pem");
	assert_string_equal(env_get(env, "NODE_EXTRA_CA_CERTS"), "/run/ca.pem");
	assert_string_equal(env_get(env, "NO_PROXY"), "localhost,127.0.0.1,::1");
	assert_string_equal(env_get(env, "no_proxy"), "localhost,127.0.0.1,::1");
	assert_string_equal(env_get(env, "PATH"), "/usr/bin");
	assert_string_equal(env_get(env, "TERM"), "xterm");
	assert_string_equal(env_get(env, "HOME"), "/home/opencode");
	assert_string_equal(env_get(env, "USER"), "opencode");
	assert_string_equal(env_get(env, "OPENCODE_SANDBOX_MODE"), "strict");
	/* The host wrapper's name for the mode; the inherited value is replaced. */
	assert_string_equal(env_get(env, "OPENCODE_SANDBOX_NETWORK_MODE"), "strict");
	for (i = n = 0; env[i] != NULL; i++)
		if (strncmp(env[i], "OPENCODE_SANDBOX_NETWORK_MODE=", 30) == 0)
			n++;
	assert_int_equal(n, 1);
	assert_null(env_get(env, "LISTEN_FDS"));
	assert_null(env_get(env, "junk"));
	/* Each name once: the inherited HTTP_PROXY is gone, not shadowed. */
	for (i = n = 0; env[i] != NULL; i++)
		if (strncmp(env[i], "HTTP_PROXY=", 11) == 0)
			n++;
	assert_int_equal(n, 1);
	env_free(env);

	/* No run CA: no CA variable at all (an empty one would break clients). */
	o.ca_cert = o.ca_bundle = NULL;
	env = env_build(base, &o);
	assert_null(env_get(env, "SSL_CERT_FILE"));
	assert_null(env_get(env, "NODE_EXTRA_CA_CERTS"));
	env_free(env);
}

static void
test_resolv(void **state)
{
	char path[] = "/tmp/test_init_env.XXXXXX", err[256], *ns[4];
	size_t n, i;
	FILE *f;
	int fd;

	assert_true((fd = mkstemp(path)) >= 0);
	f = fdopen(fd, "w");
	fputs("# comment\nsearch example\nnameserver 10.0.0.2\n  nameserver   fd00::53\n"
	      "nameserver 1.1.1.1\noptions ndots:2\n",
	      f);
	fclose(f);
	assert_int_equal(env_resolvers(path, ns, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ns[0], "10.0.0.2");
	assert_string_equal(ns[1], "fd00::53");
	assert_string_equal(ns[2], "1.1.1.1");
	for (i = 0; i < n; i++)
		free(ns[i]);
	assert_int_equal(env_resolvers(path, ns, 1, &n), 0);
	assert_int_equal(n, 1);
	free(ns[0]);

	assert_int_equal(env_write_resolv(path, err, sizeof err), 0);
	assert_int_equal(env_resolvers(path, ns, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ns[0], "127.0.0.1");
	free(ns[0]);
	unlink(path);
	assert_int_equal(env_resolvers("/nonexistent/resolv.conf", ns, 4, &n), 0);
	assert_int_equal(n, 0);
}

static void
test_users(void **state)
{
	struct priv_user u;

	assert_null(priv_user_lookup("root", &u));
	assert_int_equal(u.uid, 0);
	assert_string_equal(u.name, "root");
	assert_null(priv_user_lookup("0", &u));
	assert_string_equal(u.name, "root");
	/* A number need not exist in the password file. */
	assert_null(priv_user_lookup("4000123", &u));
	assert_int_equal(u.uid, 4000123);
	assert_int_equal(u.gid, 4000123);
	assert_string_equal(u.name, "");
	assert_non_null(priv_user_lookup("no-such-user-xyz", &u));
	assert_non_null(priv_user_lookup("", &u));
	assert_non_null(priv_user_lookup("99999999999", &u));
	/* UID:GID, both numbers, for a payload that owns the host user's files. */
	assert_null(priv_user_lookup("4000123:4000456", &u));
	assert_int_equal(u.uid, 4000123);
	assert_int_equal(u.gid, 4000456);
	assert_string_equal(u.home, "/");
	assert_null(priv_user_lookup("0:5", &u));
	assert_string_equal(u.name, "root");
	assert_int_equal(u.gid, 5);
	assert_non_null(priv_user_lookup("12:", &u));
	assert_non_null(priv_user_lookup("12:x", &u));
	assert_non_null(priv_user_lookup("12:34:56", &u));
	assert_non_null(priv_user_lookup("12:99999999999", &u));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_env_build),
	    cmocka_unit_test(test_resolv),
	    cmocka_unit_test(test_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
