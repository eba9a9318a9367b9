/*
 * A skill's SKILL.md: the YAML frontmatter between "---" lines at its top,
 * read with libyaml for the two keys opencode-sandbox needs, name and
 * description. OpenCode skips a skill whose frontmatter has no string
 * name and does not offer one without a description, so both are
 * required here, and the name must be what OpenCode's documentation
 * allows (lowercase letters and digits in hyphen-separated words, at most
 * 64 characters), since it also names the skill's directory. The bytes
 * are a user's file or a cloned repository's: sizes are bounded, and any
 * YAML error is a message, never a crash. The place of the name's value
 * is kept, so that an import with --name-prefix can rewrite it.
 */
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "host.h"

#define SKILLMD_MAX_FRONT (64 * 1024)
#define SKILLMD_MAX_NAME  64
#define SKILLMD_MAX_DESC  1024

/* NULL when s is a name OpenCode accepts, else why not. */
const char *
skillmd_check_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > SKILLMD_MAX_NAME)
		return "a skill name is 1 to 64 characters";
	for (i = 0; i < n; i++) {
		if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9'))
			continue;
		if (s[i] == '-' && i > 0 && i + 1 < n && s[i + 1] != '-')
			continue;
		return "a skill name is lowercase letters and digits, in words joined by single "
		       "hyphens";
	}
	return NULL;
}

/* The end of the frontmatter: the offset of its closing "---" line, or 0. */
static size_t
skillmd_front_end(const char *text, size_t len, size_t start)
{
	size_t i = start;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl != NULL ? (size_t)(nl - text) : len;
		size_t n = end - i;

		if (n > 0 && text[end - 1] == '\r')
			n--;
		if ((n == 3 && memcmp(text + i, "---", 3) == 0) ||
		    (n == 3 && memcmp(text + i, "...", 3) == 0))
			return i;
		if (nl == NULL)
			break;
		i = end + 1;
	}
	return 0;
}

/*
 * A libyaml mark's index counts characters, not bytes: the byte offset of
 * the index-th character of text (valid UTF-8, or libyaml would have
 * refused it; a byte order mark at its start is not counted).
 */
static size_t
skillmd_bytes(const char *text, size_t len, size_t index)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t off = 0, n;

	if (len >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		off = 3;
	for (; index > 0 && off < len; index--) {
		n = p[off] < 0x80 ? 1 : p[off] < 0xe0 ? 2 : p[off] < 0xf0 ? 3 : 4;
		off += n;
	}
	return off < len ? off : len;
}

static char *
skillmd_scalar(const yaml_event_t *ev)
{
	return xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
}

/*
 * The top-level mapping's name and description. Every other key's value,
 * however nested, is skipped by counting its events' depth.
 */
static const char *
skillmd_walk(yaml_parser_t *p, struct skillmd *m, const char *text, size_t len, size_t base)
{
	yaml_event_t ev;
	size_t key_end = 0;
	int depth = 0, key = 1, done = 0;
	enum { NONE, NAME, DESC, SKIP } want = NONE;
	const char *err = NULL;

	while (!done && err == NULL) {
		if (!yaml_parser_parse(p, &ev))
			return "the frontmatter is not valid YAML";
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			break;
		case YAML_ALIAS_EVENT:
			if (depth == 1 && want == NONE)
				err = "the frontmatter's keys must be plain text";
			if (depth == 1 && want != NONE) {
				if (want != SKIP)
					err =
					    "name and description must be plain text, not aliases";
				want = NONE;
				key = 1;
			}
			break;
		case YAML_SCALAR_EVENT:
			if (depth == 0) {
				err = "the frontmatter must be a mapping of keys to values";
			} else if (depth == 1 && key) {
				const char *k = (const char *)ev.data.scalar.value;

				want = strcmp(k, "name") == 0          ? NAME
				       : strcmp(k, "description") == 0 ? DESC
				                                       : SKIP;
				if (want == NAME)
					key_end =
					    base + skillmd_bytes(text, len, ev.end_mark.index);
				if ((want == NAME && m->name != NULL) ||
				    (want == DESC && m->description != NULL))
					err = "a key appears twice in the frontmatter";
				key = 0;
			} else if (depth == 1) {
				if (want == NAME) {
					m->name = skillmd_scalar(&ev);
					m->name_start = key_end;
					m->name_end =
					    base + skillmd_bytes(text, len, ev.end_mark.index);
					/* A block scalar's text runs to the end of its last line. */
					m->name_block =
					    ev.data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
					    ev.data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
				} else if (want == DESC)
					m->description = skillmd_scalar(&ev);
				want = NONE;
				key = 1;
			}
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth == 0 && ev.type == YAML_SEQUENCE_START_EVENT)
				err = "the frontmatter must be a mapping of keys to values";
			else if (depth == 1 && (want == NAME || want == DESC))
				err = "name and description must be text";
			if (++depth > 64)
				err = "the frontmatter nests too deeply";
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (--depth == 1) {
				want = NONE;
				key = 1;
			}
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	return err;
}

void
skillmd_free(struct skillmd *m)
{
	free(m->name);
	free(m->description);
	memset(m, 0, sizeof *m);
}

/*
 * Read SKILL.md's text: NULL with m's name and description, or why the
 * file does not describe a skill (m then holds nothing).
 */
const char *
skillmd_parse(const char *text, size_t len, struct skillmd *m)
{
	yaml_parser_t p;
	size_t start, end;
	const char *err;

	memset(m, 0, sizeof *m);
	if (len >= 4 && memcmp(text, "---\n", 4) == 0)
		start = 4;
	else if (len >= 5 && memcmp(text, "---\r\n", 5) == 0)
		start = 5;
	else
		return "SKILL.md does not open with YAML frontmatter (a \"---\" line)";
	if ((end = skillmd_front_end(text, len, start)) == 0)
		return "SKILL.md's frontmatter has no closing \"---\" line";
	if (end - start > SKILLMD_MAX_FRONT)
		return "SKILL.md's frontmatter is larger than 64 KiB";
	if (memchr(text + start, '\0', end - start) != NULL)
		return "SKILL.md's frontmatter holds a NUL byte";
	if (!yaml_parser_initialize(&p))
		fatalx("yaml_parser_initialize");
	yaml_parser_set_input_string(&p, (const unsigned char *)text + start, end - start);
	err = skillmd_walk(&p, m, text + start, end - start, start);
	yaml_parser_delete(&p);
	if (err == NULL && m->name == NULL)
		err = "the frontmatter has no name";
	if (err == NULL)
		err = skillmd_check_name(m->name);
	if (err == NULL && (m->description == NULL || m->description[0] == '\0'))
		err = "the frontmatter has no description (OpenCode offers no skill without one)";
	if (err == NULL && strlen(m->description) > SKILLMD_MAX_DESC)
		err = "the description is longer than 1024 characters";
	if (err != NULL)
		skillmd_free(m);
	return err;
}

/* text with the name's value replaced by name (a checked name). */
char *
skillmd_rename(const char *text, size_t len, const struct skillmd *m, const char *name,
               size_t *outlen)
{
	struct buf b;

	buf_init(&b);
	/*
	 * From the end of the key: ": " and the value in double quotes, which
	 * end it whatever follows (a plain value would run on into a "#" that
	 * followed a quoted one) and wherever it was (a block scalar may start
	 * lines below its key); a checked name needs no escape.
	 */
	buf_add(&b, text, m->name_start);
	buf_printf(&b, ": \"%s\"", name);
	if (m->name_block)
		buf_addc(&b, '\n');
	buf_add(&b, text + m->name_end, len - m->name_end);
	*outlen = b.len;
	return buf_release(&b);
}
