/*
 * `policyctl status [--json|--prometheus]` and `policyctl reload`: the
 * running egressd, over its control socket. status shows the policy in
 * force and the files it came from, counters by event and action, the
 * hosts blocked most, connections, the CA and the audit log; --json prints
 * egressd's object as it came, --prometheus the metrics exposition. reload
 * asks egressd to read its files again (root or egressd's own user only)
 * and says whether the new policy loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policyctl.h"

#define STATUS_EXIT_FAILED 1 /* reload: refused, or the new policy did not load */

/* Send cmd to the egressd that c names; its answer, or NULL after saying why. */
static json_t *
status_ask(const struct policyctl *c, const char *cmd, const char **path)
{
	json_t *ans;
	char err[256], req[64];
	int named, absent;

	*path = live_path(c, &named);
	snprintf(req, sizeof req, "{\"cmd\":\"%s\"}", cmd);
	if ((ans = live_ask(*path, req, err, sizeof err, &absent)) != NULL)
		return ans;
	if (absent)
		fprintf(stderr,
		        "policyctl: no egressd control socket at %s (is egressd running with "
		        "--control %s? --control or $EGRESSD_CONTROL name another)\n",
		        *path, *path);
	else
		fprintf(stderr, "policyctl: egressd's control socket %s does not answer (%s)\n",
		        *path, err);
	return NULL;
}

static long long
status_int(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void
status_print_policy(const json_t *s)
{
	const json_t *p = json_object_get(s, "policy"), *f;
	size_t i;

	printf("policy: generation %lld, loaded %s, mode %s, reloads %lld ok, %lld failed\n",
	       status_int(p, "generation"), live_str(p, "loaded", "?"), live_str(p, "mode", "?"),
	       status_int(json_object_get(s, "reloads"), "ok"),
	       status_int(json_object_get(s, "reloads"), "failed"));
	if (json_array_size(json_object_get(p, "files")) == 0)
		printf("  the embedded default policy\n");
	json_array_foreach(json_object_get(p, "files"), i, f)
	{
		printf("  %s (%s, modified %s)%s\n", live_str(f, "path", "?"),
		       live_str(f, "kind", "?"), live_str(f, "mtime", "?"),
		       json_is_true(json_object_get(f, "changed"))
		           ? ": changed since it was loaded; `policyctl reload` reads it again"
		           : "");
	}
}

static void
status_print_requests(const json_t *s)
{
	const json_t *r = json_object_get(s, "requests"), *n;
	const char *ev;

	printf("decisions (allow / flag / block):\n");
	json_object_foreach((json_t *)r, ev, n)
	{
		printf("  %-8s %lld / %lld / %lld\n", ev, status_int(n, "allow"),
		       status_int(n, "flag"), status_int(n, "block"));
	}
	printf("bytes: %lld up, %lld down\n", status_int(json_object_get(s, "bytes"), "up"),
	       status_int(json_object_get(s, "bytes"), "down"));
}

static void
status_print_blocked(const json_t *s)
{
	const json_t *t = json_object_get(s, "top_blocked"), *h;
	const char *list;
	size_t i;

	if (json_array_size(t) == 0)
		return;
	printf("blocked most:\n");
	json_array_foreach(t, i, h)
	{
		list = live_str(h, "list", NULL);
		printf("  %6lld  %s  %s (%s%s%s)\n", status_int(h, "count"),
		       live_str(h, "host", ""), live_str(h, "rule", ""), list ? list : "",
		       list ? ", " : "", live_str(h, "source", ""));
	}
}

static void
status_print(const json_t *s)
{
	const json_t *c = json_object_get(s, "connections"), *k = json_object_get(c, "by_kind");
	const json_t *ca = json_object_get(s, "ca"), *a = json_object_get(s, "audit");
	const json_t *dns = json_object_get(s, "dns");

	printf("egressd %s: pid %lld, uid %lld, started %s, mode %s%s\n",
	       live_str(s, "version", "?"), status_int(s, "pid"), status_int(s, "uid"),
	       live_str(s, "started", "?"), live_str(s, "mode", "?"),
	       json_is_true(json_object_get(s, "draining")) ? " (stopping)" : "");
	status_print_policy(s);
	status_print_requests(s);
	status_print_blocked(s);
	printf("connections: %lld open of %lld (%lld http, %lld intercepted, %lld tunnel, %lld "
	       "handshake), %lld idle upstream\n",
	       status_int(c, "open"), status_int(c, "max"), status_int(k, "http"),
	       status_int(k, "intercepted"), status_int(k, "tunnel"), status_int(k, "handshake"),
	       status_int(c, "upstream_pool_idle"));
	printf("dns cache: %lld answers, %lld bytes\n", status_int(dns, "cache_entries"),
	       status_int(dns, "cache_bytes"));
	if (json_is_object(ca))
		printf("ca: SHA-256 %s, expires %s, %lld leaves minted\n",
		       live_str(ca, "fingerprint_sha256", "?"), live_str(ca, "not_after", "?"),
		       status_int(ca, "leaves_minted"));
	else
		printf("ca: none (HTTPS is not intercepted)\n");
	printf("audit: %s, last seq %lld, %lld bytes written, %lld write errors\n",
	       live_str(a, "path", "?"), status_int(a, "last_seq"), status_int(a, "bytes"),
	       status_int(a, "write_errors"));
}

int
status_run(struct policyctl *c)
{
	const char *path;
	json_t *ans, *v;
	char *out;
	int rc = EXIT_USAGE;

	if ((ans = status_ask(c, c->prometheus ? "metrics" : "status", &path)) == NULL)
		return EXIT_USAGE;
	v = json_object_get(ans, c->prometheus ? "metrics" : "status");
	if (!json_is_true(json_object_get(ans, "ok")) || v == NULL) {
		live_print_error(path, ans);
	} else if (c->prometheus) {
		fputs(json_string_value(v), stdout);
		rc = 0;
	} else if (c->json) {
		if ((out = json_dumps(v, JSON_COMPACT)) != NULL) {
			printf("%s\n", out);
			free(out);
			rc = 0;
		}
	} else {
		status_print(v);
		rc = 0;
	}
	json_decref(ans);
	return rc;
}

int
status_reload(struct policyctl *c)
{
	const char *path;
	json_t *ans, *r;
	int rc = STATUS_EXIT_FAILED;

	if ((ans = status_ask(c, "reload", &path)) == NULL)
		return EXIT_USAGE;
	r = json_object_get(ans, "reload");
	if (!json_is_true(json_object_get(ans, "ok")) || !json_is_object(r))
		live_print_error(path, ans);
	else if (json_is_true(json_object_get(r, "loaded"))) {
		printf("policy reloaded: generation %lld, mode %s\n", status_int(r, "generation"),
		       live_str(r, "mode", "?"));
		rc = 0;
	} else {
		fputs(live_str(r, "errors", ""), stderr);
		fprintf(stderr,
		        "policyctl: the new policy did not load; egressd keeps the policy in force "
		        "(generation %lld)\n",
		        status_int(r, "generation"));
	}
	json_decref(ans);
	return rc;
}
