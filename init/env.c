/*
 * What the payload is told about the network: its environment (proxy
 * variables in both cases, NO_PROXY for loopback, the run CA for every
 * TLS stack that reads a variable) and resolv.conf pointing at egressd's
 * resolver. The original resolvers are read first, since egressd forwards
 * to them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

#define ENV_MAX_VARS 4096

/* Variables sandbox-init sets or must not pass down from its own start. */
static const char *env_owned[] = {
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    "HOME",
    "USER",
    "LOGNAME",
    "OPENCODE_SANDBOX_MODE",
    "OPENCODE_SANDBOX_NETWORK_MODE",
};

static int
env_is_owned(const char *kv)
{
	size_t i, n;

	for (i = 0; i < EG_NELEM(env_owned); i++) {
		n = strlen(env_owned[i]);
		if (strncmp(kv, env_owned[i], n) == 0 && kv[n] == '=')
			return 1;
	}
	return 0;
}

static void
env_add(char **env, size_t *n, const char *name, const char *value)
{
	if (value == NULL || *n + 1 >= ENV_MAX_VARS)
		return;
	env[(*n)++] = xasprintf("%s=%s", name, value);
}

/*
 * The payload's environment: base minus what sandbox-init owns, plus the
 * proxy, CA and user variables. NULL-terminated; env_free releases it.
 */
char **
env_build(char *const *base, const struct env_opts *o)
{
	static const char *noproxy = "localhost,127.0.0.1,::1";
	char **env;
	size_t n = 0, i;

	env = xcalloc(ENV_MAX_VARS, sizeof *env);
	for (i = 0; base != NULL && base[i] != NULL && n + 32 < ENV_MAX_VARS; i++) {
		if (strchr(base[i], '=') == NULL || env_is_owned(base[i]))
			continue;
		env[n++] = xstrdup(base[i]);
	}
	env_add(env, &n, "HTTP_PROXY", o->proxy_url);
	env_add(env, &n, "HTTPS_PROXY", o->proxy_url);
	env_add(env, &n, "ALL_PROXY", o->proxy_url);
	env_add(env, &n, "http_proxy", o->proxy_url);
	env_add(env, &n, "https_proxy", o->proxy_url);
	env_add(env, &n, "all_proxy", o->proxy_url);
	env_add(env, &n, "NO_PROXY", noproxy);
	env_add(env, &n, "no_proxy", noproxy);
	/*
	 * A variable that replaces the trust store gets the bundle (system
	 * store + run CA); Node's, which adds to its own, gets the CA alone.
	 */
	env_add(env, &n, "SSL_CERT_FILE", o->ca_bundle);
	env_add(env, &n, "REQUESTS_CA_BUNDLE", o->ca_bundle);
	env_add(env, &n, "CURL_CA_BUNDLE", o->ca_bundle);
	env_add(env, &n, "GIT_SSL_CAINFO", o->ca_bundle);
	env_add(env, &n, "NODE_EXTRA_CA_CERTS", o->ca_cert);
	env_add(env, &n, "OPENCODE_SANDBOX_MODE", config_mode_name(o->mode));
	/* The host wrapper's name for it (seed 003, the container's environment). */
	env_add(env, &n, "OPENCODE_SANDBOX_NETWORK_MODE", config_mode_name(o->mode));
	if (o->user != NULL) {
		env_add(env, &n, "HOME", o->user->home[0] != '\0' ? o->user->home : "/");
		if (o->user->name[0] != '\0') {
			env_add(env, &n, "USER", o->user->name);
			env_add(env, &n, "LOGNAME", o->user->name);
		}
	}
	env[n] = NULL;
	return env;
}

void
env_free(char **env)
{
	size_t i;

	if (env == NULL)
		return;
	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* The value of name in env, or NULL. */
const char *
env_get(char *const *env, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/*
 * The nameserver addresses of a resolv.conf, in order (up to max, each
 * allocated). A missing file is no resolvers, not an error.
 */
int
env_resolvers(const char *path, char **out, size_t max, size_t *n)
{
	char line[512], addr[64];
	FILE *f;

	*n = 0;
	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT ? 0 : -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, " nameserver %63s", addr) != 1 || *n >= max)
			continue;
		out[(*n)++] = xstrdup(addr);
	}
	fclose(f);
	return 0;
}

/*
 * Points resolv.conf at the resolver on loopback. Written in place (in a
 * container the file is usually a bind mount that cannot be renamed over),
 * never through a symbolic link.
 */
int
env_write_resolv(const char *path, char *err, size_t errlen)
{
	static const char text[] = "# written by sandbox-init: names are resolved by egressd\n"
	                           "nameserver 127.0.0.1\n"
	                           "options edns0 trust-ad\n";
	int fd, e;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) == -1) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e; /* the caller tells a read-only file from other failures */
		return -1;
	}
	if (write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
