/*
 * Unit tests for host/skillmd.c, a skill's SKILL.md frontmatter: the
 * table tests/data/skillmd.tsv (valid files with other keys of every
 * shape, names OpenCode refuses, a missing description, bad YAML), and a
 * rename for --name-prefix that changes the name's value and nothing else.
 */
#include "tsv.h"

#include "host.h"

static void
test_table(void **state)
{
	struct skillmd m;
	struct tsv t;
	const char *err;
	size_t len;
	char **f;

	tsv_open(&t, "skillmd.tsv", 3, 4);
	while ((f = tsv_next(&t)) != NULL) {
		len = tsv_unescape(f[0]);
		err = skillmd_parse(f[0], len, &m);
		if (strcmp(f[1], "ok") == 0) {
			if (err != NULL)
				fail_msg("skillmd.tsv:%u: %s", t.lineno, err);
			tsv_unescape(f[3]);
			if (strcmp(m.name, f[2]) != 0 || strcmp(m.description, f[3]) != 0)
				fail_msg("skillmd.tsv:%u: got %s / %s", t.lineno, m.name,
				         m.description);
			skillmd_free(&m);
		} else {
			if (err == NULL || strcmp(err, f[2]) != 0)
				fail_msg("skillmd.tsv:%u: got \"%s\"", t.lineno, err ? err : "ok");
			assert_null(m.name);
			assert_null(m.description);
		}
	}
	assert_true(t.rows >= 30);
}

static void
test_rename(void **state)
{
	static const char text[] =
	    "---\r\nname:   \"tool\"  # the name\r\ndescription: d\r\n---\r\n"
	    "name: tool is not renamed here\r\n";
	struct skillmd m, again;
	char *out;
	size_t len;

	assert_null(skillmd_parse(text, sizeof text - 1, &m));
	out = skillmd_rename(text, sizeof text - 1, &m, "team-tool", &len);
	assert_int_equal(len, strlen(out));
	assert_string_equal(out,
	                    "---\r\nname: \"team-tool\"  # the name\r\ndescription: d\r\n---\r\n"
	                    "name: tool is not renamed here\r\n");
	assert_null(skillmd_parse(out, len, &again));
	assert_string_equal(again.name, "team-tool");
	skillmd_free(&again);
	skillmd_free(&m);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_rename),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
