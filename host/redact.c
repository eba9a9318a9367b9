/*
 * Printing a command for people (--print-command, --dry-run) without its
 * secrets (seed 003 §16.2): the value of any NAME=VALUE word whose NAME
 * holds KEY, TOKEN, SECRET, PASSWORD or AUTH is replaced, and words are
 * quoted the way a POSIX shell reads them back, control characters
 * escaped, so that the line can be pasted and cannot write to the
 * terminal.
 */
#include <ctype.h>
#include <string.h>

#include "host.h"

static const char *const redact_words[] = {"KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"};

/* Whether a variable's name says it holds a secret (any case). */
int
redact_is_secret_name(const char *name, size_t len)
{
	size_t i, j, n;

	for (i = 0; i < EG_NELEM(redact_words); i++) {
		n = strlen(redact_words[i]);
		for (j = 0; j + n <= len; j++)
			if (strncasecmp(name + j, redact_words[i], n) == 0)
				return 1;
	}
	return 0;
}

static int
redact_safe(int c)
{
	return isalnum(c) || strchr("_@%+=:,./-", c) != NULL;
}

/* One word, quoted only when it must be. */
void
redact_word(const char *w, struct buf *out)
{
	const unsigned char *p;
	int plain = w[0] != '\0', ctl = 0;

	for (p = (const unsigned char *)w; *p != '\0'; p++) {
		if (!redact_safe(*p))
			plain = 0;
		if (*p < 0x20 || *p == 0x7f)
			ctl = 1;
	}
	if (plain) {
		buf_adds(out, w);
		return;
	}
	if (!ctl) {
		buf_addc(out, '\'');
		for (p = (const unsigned char *)w; *p != '\0'; p++)
			if (*p == '\'')
				buf_adds(out, "'\\''");
			else
				buf_addc(out, (char)*p);
		buf_addc(out, '\'');
		return;
	}
	buf_adds(out, "$'");
	for (p = (const unsigned char *)w; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\'' || *p == '\\')
			buf_printf(out, "\\x%02x", *p);
		else
			buf_addc(out, (char)*p);
	}
	buf_addc(out, '\'');
}

/* The argv on one line, secrets replaced, each word quoted as needed. */
void
redact_argv(const struct strv *argv, struct buf *out)
{
	const char *eq, *w;
	struct buf tmp;
	size_t i;

	buf_init(&tmp);
	for (i = 0; i < argv->n; i++) {
		w = argv->v[i];
		if (i > 0)
			buf_addc(out, ' ');
		eq = strchr(w, '=');
		if (eq != NULL && eq != w && strncmp(w, "type=", 5) != 0 &&
		    redact_is_secret_name(w, (size_t)(eq - w))) {
			buf_reset(&tmp);
			buf_add(&tmp, w, (size_t)(eq - w));
			buf_adds(&tmp, "=<redacted>");
			redact_word(buf_cstr(&tmp), out);
		} else
			redact_word(w, out);
	}
	buf_free(&tmp);
}
