/*
 * Unit tests for host/skillset.c, which skills there are and which a run
 * exposes: the manifest is what counts (a directory it does not list is
 * not exposed, one it lists that is gone is said), skills.include and
 * skills.exclude, a name imported in both scopes stops the run, the
 * project's and the host's skill folders, exposeGlobalSkills, a project's
 * imports reached through a link refused, a project file's importedDir
 * kept under its directory, and the run's copy noting a skill changed
 * since its import. HOME is a private temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host.h"

static char home[] = "/tmp/test-host-skillset.XXXXXX";

static void
put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", home, rel), *slash = strrchr(p, '/');

	*slash = '\0';
	assert_int_equal(host_mkdirs(p, 0755), 0);
	*slash = '/';
	assert_int_equal(host_write_file(p, text, strlen(text), 0644), 0);
	free(p);
}

static void
skill(const char *dir, const char *name)
{
	char *rel = xasprintf("%s/SKILL.md", dir), *text;

	text = xasprintf("---\nname: %s\ndescription: the %s skill\n---\n", name, name);
	put(rel, text);
	free(rel);
	free(text);
}

/* A manifest listing names (with a sha256 that matches nothing). */
static void
manifest(const char *path, const char *names)
{
	struct buf b;
	char copy[256], *w, *save = NULL;
	int first = 1;

	buf_init(&b);
	buf_adds(&b, "{\"version\": 1, \"skills\": [");
	snprintf(copy, sizeof copy, "%s", names);
	for (w = strtok_r(copy, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		buf_printf(&b, "%s{\"name\": \"%s\", \"source\": \"/src/%s\", \"sha256\": \"00\"}",
		           first ? "" : ",", w, w);
		first = 0;
	}
	buf_adds(&b, "]}\n");
	put(path, buf_cstr(&b));
	buf_free(&b);
}

static const struct skill *
find(const struct skills *s, enum skill_scope scope, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].scope == scope && s->v[i].name != NULL &&
		    strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}

static int
open_project(struct effective *e, struct skills *s, struct buf *err)
{
	char *proj = xasprintf("%s/proj", home);
	int rc;

	buf_reset(err);
	rc = effective_open(e, proj, NULL, 0, err);
	free(proj);
	if (rc == 0)
		rc = skills_find(s, e, err);
	return rc;
}

/* Accept the project's files, as a run that asked would. */
static void
accept_project(void)
{
	struct effective e;
	struct buf err;
	char *proj = xasprintf("%s/proj", home);

	buf_init(&err);
	assert_int_equal(effective_open(&e, proj, NULL, 0, &err), 0);
	assert_int_equal(consent_record(&e.consent, &e.conf, &err), 0);
	effective_free(&e);
	free(proj);
	buf_free(&err);
}

static void
test_find(void **state)
{
	struct effective e;
	struct skills s;
	struct buf err;
	const struct skill *k;

	buf_init(&err);
	put(".config/opencode-sandbox/config.yaml",
	    "version: 1\nskills:\n  exclude: [\"draft-*\"]\n");
	skill(".config/opencode-sandbox/skills/alpha", "alpha");
	skill(".config/opencode-sandbox/skills/draft-x", "draft-x");
	skill(".config/opencode-sandbox/skills/stray", "stray");
	skill(".config/opencode-sandbox/skills/misnamed", "other");
	manifest(".config/opencode-sandbox/skills-manifest.json", "alpha draft-x gone misnamed");
	skill("proj/.opencode-sandbox/skills/beta", "beta");
	manifest("proj/.opencode-sandbox/skills-manifest.json", "beta");
	skill("proj/.claude/skills/native", "native");
	skill(".agents/skills/hosted", "hosted");
	assert_int_equal(open_project(&e, &s, &err), 0);
	assert_int_equal(find(&s, SKILL_GLOBAL, "alpha")->status, SKILL_ACTIVE);
	assert_int_equal(find(&s, SKILL_GLOBAL, "draft-x")->status, SKILL_EXCLUDED);
	assert_int_equal(find(&s, SKILL_GLOBAL, "gone")->status, SKILL_MISSING);
	assert_int_equal(find(&s, SKILL_GLOBAL, "stray")->status, SKILL_UNLISTED);
	assert_int_equal(find(&s, SKILL_GLOBAL, "misnamed")->status, SKILL_INVALID);
	assert_int_equal(find(&s, SKILL_PROJECT, "beta")->status, SKILL_ACTIVE);
	assert_int_equal(find(&s, SKILL_NATIVE, "native")->status, SKILL_PROJECT_OWN);
	assert_int_equal(find(&s, SKILL_HOST, "hosted")->status, SKILL_AVAILABLE);
	k = find(&s, SKILL_GLOBAL, "alpha");
	assert_string_equal(k->description, "the alpha skill");
	assert_string_equal(k->source, "/src/alpha");
	skills_free(&s);
	effective_free(&e);
	buf_free(&err);
}

/* The run's copy: active skills only, each checked against its manifest's hash. */
static void
test_stage(void **state)
{
	struct effective e;
	struct skills s;
	struct strv notes;
	struct buf err;
	struct stat st;
	char *dst = xasprintf("%s/run-skills", home), *p;

	buf_init(&err);
	memset(&notes, 0, sizeof notes);
	assert_int_equal(open_project(&e, &s, &err), 0);
	assert_int_equal(skills_stage(&s, dst, &notes, &err), 2);
	p = xasprintf("%s/alpha/SKILL.md", dst);
	assert_int_equal(stat(p, &st), 0);
	free(p);
	p = xasprintf("%s/beta/SKILL.md", dst);
	assert_int_equal(stat(p, &st), 0);
	free(p);
	p = xasprintf("%s/draft-x", dst);
	assert_int_equal(stat(p, &st), -1);
	free(p);
	/* The manifests' "00" is no skill's hash: each is said to have changed. */
	assert_int_equal(notes.n, 2);
	assert_non_null(strstr(notes.v[0], "skill alpha changed since it was imported"));
	strv_free(&notes);
	skills_free(&s);
	effective_free(&e);
	state_remove_tree(dst);
	free(dst);
	buf_free(&err);
}

/* The same name imported globally and into the project: listed, and a run refuses. */
static void
test_duplicate(void **state)
{
	struct effective e;
	struct skills s;
	struct strv notes;
	struct buf err;

	buf_init(&err);
	memset(&notes, 0, sizeof notes);
	skill("proj/.opencode-sandbox/skills/alpha", "alpha");
	manifest("proj/.opencode-sandbox/skills-manifest.json", "beta alpha");
	assert_int_equal(open_project(&e, &s, &err), 0);
	assert_int_equal(find(&s, SKILL_GLOBAL, "alpha")->status, SKILL_DUPLICATE);
	assert_int_equal(find(&s, SKILL_PROJECT, "alpha")->status, SKILL_DUPLICATE);
	assert_int_equal(skills_stage(&s, NULL, &notes, &err), -1);
	assert_non_null(strstr(buf_cstr(&err), "skill alpha is imported both globally"));
	strv_free(&notes);
	skills_free(&s);
	effective_free(&e);
	manifest("proj/.opencode-sandbox/skills-manifest.json", "beta");
	buf_free(&err);
}

/* exposeGlobalSkills puts the host's skills in the run; exposeProjectSkills: false hides some. */
static void
test_expose(void **state)
{
	struct effective e;
	struct skills s;
	struct buf err;

	buf_init(&err);
	put(".config/opencode-sandbox/config.yaml",
	    "version: 1\nskills:\n  exposeGlobalSkills: true\n  exposeProjectSkills: false\n");
	assert_int_equal(open_project(&e, &s, &err), 0);
	assert_int_equal(find(&s, SKILL_HOST, "hosted")->status, SKILL_EXPOSED);
	assert_int_equal(find(&s, SKILL_NATIVE, "native")->status, SKILL_HIDDEN);
	skills_free(&s);
	effective_free(&e);
	put(".config/opencode-sandbox/config.yaml", "version: 1\n");
	buf_free(&err);
}

/* A project's imports are the agent's to write: never reached through a link. */
static void
test_project_links(void **state)
{
	struct effective e;
	struct skills s;
	struct buf err;
	char *from = xasprintf("%s/proj/.opencode-sandbox", home);
	char *saved = xasprintf("%s/saved", home), *to = xasprintf("%s/.config", home);

	buf_init(&err);
	assert_int_equal(rename(from, saved), 0);
	assert_int_equal(symlink(to, from), 0);
	assert_int_equal(open_project(&e, &s, &err), -1);
	assert_non_null(strstr(buf_cstr(&err), "skills-manifest.json: reached through a symbolic "
	                                       "link"));
	skills_free(&s);
	effective_free(&e);
	unlink(from);
	assert_int_equal(rename(saved, from), 0);
	/* A project file's importedDir stays under the file's directory, once trusted. */
	put("proj/.opencode-sandbox.yaml", "version: 1\nskills:\n  importedDir: /etc\n");
	accept_project();
	assert_int_equal(open_project(&e, &s, &err), -1);
	assert_non_null(strstr(buf_cstr(&err), "skills.importedDir /etc: a project's imported "
	                                       "skills must be under its directory"));
	skills_free(&s);
	effective_free(&e);
	put("proj/.opencode-sandbox.yaml", "version: 1\nskills:\n  importedDir: mine\n");
	accept_project();
	assert_int_equal(open_project(&e, &s, &err), 0);
	assert_true(strstr(s.project_dir, "/proj/mine") != NULL);
	skills_free(&s);
	effective_free(&e);
	free(from);
	free(saved);
	free(to);
	buf_free(&err);
}

static int
setup(void **state)
{
	if (mkdtemp(home) == NULL)
		return -1;
	setenv("HOME", home, 1);
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("XDG_STATE_HOME");
	unsetenv("XDG_DATA_HOME");
	return 0;
}

static int
teardown(void **state)
{
	return state_remove_tree(home);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_find),          cmocka_unit_test(test_stage),
	    cmocka_unit_test(test_duplicate),     cmocka_unit_test(test_expose),
	    cmocka_unit_test(test_project_links),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
