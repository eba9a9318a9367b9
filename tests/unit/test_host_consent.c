/*
 * Unit tests for host/consent.c: what a project file would change, in
 * plain words (hosts allowlisted, lists dropped, mode, methods, the
 * wrapper's settings), nothing for a change without effect; and the
 * record of what was accepted, read back with its digest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static struct config *
load(const char *global, const char *project)
{
	struct config_text t[2];
	struct config *cfg;
	struct buf errs;

	memset(t, 0, sizeof t);
	t[0].file.path = "/g.yaml";
	t[0].data = global;
	t[0].len = strlen(global);
	t[1].file.path = "/p/.opencode-sandbox.yaml";
	t[1].data = project;
	t[1].len = project != NULL ? strlen(project) : 0;
	buf_init(&errs);
	cfg = config_load_texts(t, project != NULL ? 2 : 1, &errs);
	if (cfg == NULL)
		fail_msg("%s", buf_cstr(&errs));
	buf_free(&errs);
	return cfg;
}

static void
test_describe(void **state)
{
	static const char global[] = "version: 1\nnetwork:\n  allowlist: [a.example]\n"
	                             "  blocklist: [ads.example]\n";
	struct config *old = load(global, NULL), *new;
	struct buf b;

	buf_init(&b);
	new = load(global, "version: 1\n# only a comment\n");
	consent_describe(old, new, &b);
	assert_string_equal(buf_cstr(&b), "");
	config_free(new);
	/* Restating the defaults changes nothing in effect. */
	new = load(global, "version: 1\nproject: {target: /workspace, readonly: false}\n"
	                   "container: {remove: true, namePrefix: opencode-sandbox}\n"
	                   "opencode: {mountHostConfig: true, autoupdate: false}\n");
	consent_describe(old, new, &b);
	assert_string_equal(buf_cstr(&b), "");
	config_free(new);

	new = load(global, "version: 1\nnetwork:\n  mode: strict\n  inheritGlobal: false\n"
	                   "  allowlist: [b.example]\n  allowMethods: [GET, POST]\n"
	                   "  onViolation: flag\nimage:\n  name: other:1\n"
	                   "project:\n  extraMounts: [\"/srv:/srv\"]\n");
	consent_describe(old, new, &b);
	assert_string_equal(buf_cstr(&b),
	                    "  network mode: practical -> strict\n"
	                    "  inheritGlobal: false: the project's lists replace the global ones\n"
	                    "  + allowlisted (every method): b.example\n"
	                    "  - no longer allowlisted: a.example\n"
	                    "  methods allowed to any host: GET, HEAD, OPTIONS -> GET, POST\n"
	                    "  a request that breaks the rules is let through and flagged (was: "
	                    "blocked)\n"
	                    "  image: localhost/opencode-sandbox:latest -> other:1\n"
	                    "  + host path mounted in the sandbox: /srv:/srv:ro\n");
	config_free(new);
	config_free(old);
	buf_free(&b);
}

static void
test_record(void **state)
{
	char dir[] = "/tmp/test-host-consent.XXXXXX", *p;
	struct consent s, t;
	struct conf c;

	assert_non_null(mkdtemp(dir));
	memset(&c, 0, sizeof c);
	conf_add_text(&c, CONF_GLOBAL, "/g.yaml", xstrdup("version: 1\n"), 11, 0);
	assert_int_equal(consent_load(&s, dir, &c), 0);
	assert_null(s.digest);
	assert_false(s.changed);
	consent_free(&s);
	conf_add_text(&c, CONF_PROJECT, "/p/.opencode-sandbox.yaml", xstrdup("version: 1\n"), 11,
	              0);
	consent_load(&s, dir, &c);
	assert_non_null(s.digest);
	assert_true(s.changed);
	assert_int_equal(consent_record(&s, &c, NULL), 0);
	consent_load(&t, dir, &c);
	assert_false(t.changed);
	assert_int_equal(t.copies.n, 1);
	assert_string_equal(t.paths.v[0], "/p/.opencode-sandbox.yaml");
	assert_string_equal(t.copies.v[0], "version: 1\n");
	consent_free(&t);
	/* A byte changed is a change. */
	c.files[1].data[0] = 'V';
	consent_load(&t, dir, &c);
	assert_true(t.changed);
	consent_free(&t);
	consent_free(&s);
	conf_free(&c);
	p = xasprintf("rm -r %s", dir);
	assert_int_equal(system(p), 0);
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_describe),
	    cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
