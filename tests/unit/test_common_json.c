/*
 * Unit tests for common/json.c: whatever bytes go in, json_escape must give
 * a JSON string that a real parser (jansson) accepts, and that decodes to
 * the input with every byte outside a well-formed UTF-8 sequence replaced
 * by U+FFFD. The expectation comes from a reference decoder written from
 * the Unicode Standard's table of well-formed byte sequences, checked
 * exhaustively for one and two bytes and by sampling beyond.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common.h"

#define FFFD "\xef\xbf\xbd"

/* Table 3-7 of the Unicode Standard: well-formed UTF-8 byte sequences. */
static const struct {
	int n;
	unsigned char lo[4];
	unsigned char hi[4];
} wellformed[] = {
    {1, {0x00}, {0x7f}},
    {2, {0xc2, 0x80}, {0xdf, 0xbf}},
    {3, {0xe0, 0xa0, 0x80}, {0xe0, 0xbf, 0xbf}},
    {3, {0xe1, 0x80, 0x80}, {0xec, 0xbf, 0xbf}},
    {3, {0xed, 0x80, 0x80}, {0xed, 0x9f, 0xbf}},
    {3, {0xee, 0x80, 0x80}, {0xef, 0xbf, 0xbf}},
    {4, {0xf0, 0x90, 0x80, 0x80}, {0xf0, 0xbf, 0xbf, 0xbf}},
    {4, {0xf1, 0x80, 0x80, 0x80}, {0xf3, 0xbf, 0xbf, 0xbf}},
    {4, {0xf4, 0x80, 0x80, 0x80}, {0xf4, 0x8f, 0xbf, 0xbf}},
};

/* The string a parser should read back: bad bytes become U+FFFD one each. */
static void
reference(const unsigned char *p, size_t len, struct buf *out)
{
	size_t i = 0, r;
	int k, ok;

	buf_reset(out);
	while (i < len) {
		for (r = 0; r < EG_NELEM(wellformed); r++) {
			if ((size_t)wellformed[r].n > len - i)
				continue;
			ok = 1;
			for (k = 0; k < wellformed[r].n; k++)
				if (p[i + k] < wellformed[r].lo[k] ||
				    p[i + k] > wellformed[r].hi[k])
					ok = 0;
			if (ok)
				break;
		}
		if (r < EG_NELEM(wellformed)) {
			buf_add(out, p + i, (size_t)wellformed[r].n);
			i += (size_t)wellformed[r].n;
		} else {
			buf_adds(out, FFFD);
			i++;
		}
	}
}

/*
 * Escape p, check the text holds no raw control byte, parse it with jansson
 * and compare with the reference decoding. Returns 0 when all holds, so
 * the exhaustive loops can report the first failing input.
 */
static int
roundtrip(const unsigned char *p, size_t len, struct buf *esc, struct buf *want)
{
	json_error_t jerr;
	json_t *j;
	size_t i;
	int rc = -1;

	buf_reset(esc);
	json_escape(esc, (const char *)p, len);
	for (i = 0; i < esc->len; i++)
		if ((unsigned char)esc->data[i] < 0x20 || esc->data[i] == 0x7f)
			return -1;
	j = json_loadb(esc->data, esc->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (j == NULL)
		return -1;
	reference(p, len, want);
	if (json_is_string(j) && json_string_length(j) == want->len &&
	    memcmp(json_string_value(j), want->data, want->len) == 0)
		rc = 0;
	json_decref(j);
	return rc;
}

static void
fail_on(const unsigned char *p, size_t len, const struct buf *esc)
{
	char hex[64] = "";
	size_t i;

	for (i = 0; i < len && i < 16; i++)
		snprintf(hex + 3 * i, sizeof hex - 3 * i, "%02x ", p[i]);
	fail_msg("input %s-> %s", hex, esc->data != NULL ? esc->data : "(none)");
}

/* The exact escaped text of each single byte below 0x80. */
static void
test_ascii_text(void **state)
{
	struct buf b;
	char want[16];
	int c;

	buf_init(&b);
	for (c = 0; c < 0x80; c++) {
		unsigned char in = (unsigned char)c;

		buf_reset(&b);
		json_escape(&b, (const char *)&in, 1);
		if (c == '"')
			strcpy(want, "\"\\\"\"");
		else if (c == '\\')
			strcpy(want, "\"\\\\\"");
		else if (c == '\n')
			strcpy(want, "\"\\n\"");
		else if (c == '\r')
			strcpy(want, "\"\\r\"");
		else if (c == '\t')
			strcpy(want, "\"\\t\"");
		else if (c < 0x20 || c == 0x7f)
			snprintf(want, sizeof want, "\"\\u%04x\"", c);
		else
			snprintf(want, sizeof want, "\"%c\"", c);
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.data, want, b.len);
	}
	buf_free(&b);
}

/* Every byte alone, and between ASCII, between multibyte characters. */
static void
test_every_byte(void **state)
{
	static const char *ctx[][2] = {
	    {"", ""},
	    {"a", "b"},
	    {"\xc3\xa9", "\xe2\x82\xac"}, /* é ... € */
	    {"\"", "\\"},
	};
	unsigned char in[16];
	struct buf esc, want;
	size_t i, pl, sl;
	int c;

	buf_init(&esc);
	buf_init(&want);
	for (i = 0; i < EG_NELEM(ctx); i++) {
		pl = strlen(ctx[i][0]);
		sl = strlen(ctx[i][1]);
		for (c = 0; c < 256; c++) {
			memcpy(in, ctx[i][0], pl);
			in[pl] = (unsigned char)c;
			memcpy(in + pl + 1, ctx[i][1], sl);
			if (roundtrip(in, pl + 1 + sl, &esc, &want) != 0)
				fail_on(in, pl + 1 + sl, &esc);
		}
	}
	/* Spot-check the reference itself: a lone 0x80 and 0xff are replaced. */
	in[0] = 0x80;
	reference(in, 1, &want);
	assert_string_equal(want.data, FFFD);
	in[0] = 'A';
	reference(in, 1, &want);
	assert_string_equal(want.data, "A");
	buf_free(&esc);
	buf_free(&want);
}

static void
test_every_pair(void **state)
{
	unsigned char in[2];
	struct buf esc, want;
	int c1, c2;

	buf_init(&esc);
	buf_init(&want);
	for (c1 = 0; c1 < 256; c1++) {
		for (c2 = 0; c2 < 256; c2++) {
			in[0] = (unsigned char)c1;
			in[1] = (unsigned char)c2;
			if (roundtrip(in, 2, &esc, &want) != 0)
				fail_on(in, 2, &esc);
		}
	}
	buf_free(&esc);
	buf_free(&want);
}

/* Three- and four-byte leads against every second byte and edge tails. */
static void
test_long_sequences(void **state)
{
	static const unsigned char tails[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f,
	                                      0xa0, 0xbf, 0xc0, 0xc2, 0xf4, 0xff};
	unsigned char in[5];
	struct buf esc, want;
	size_t t, u;
	int lead, c2;

	buf_init(&esc);
	buf_init(&want);
	for (lead = 0xe0; lead < 0x100; lead++) {
		for (c2 = 0; c2 < 256; c2++) {
			for (t = 0; t < sizeof tails; t++) {
				in[0] = (unsigned char)lead;
				in[1] = (unsigned char)c2;
				in[2] = tails[t];
				if (roundtrip(in, 3, &esc, &want) != 0)
					fail_on(in, 3, &esc);
				for (u = 0; lead >= 0xf0 && u < sizeof tails; u += 3) {
					in[3] = tails[u];
					in[4] = 'z';
					if (roundtrip(in, 5, &esc, &want) != 0)
						fail_on(in, 5, &esc);
				}
			}
		}
	}
	buf_free(&esc);
	buf_free(&want);
}

/* Named cases with their expected decoding written out by hand. */
static void
test_named_cases(void **state)
{
	static const struct {
		const char *name;
		const char *in;
		const char *want;
	} cases[] = {
	    {"two-byte", "\xc3\xa9", "\xc3\xa9"},
	    {"three-byte", "\xe2\x82\xac", "\xe2\x82\xac"},
	    {"four-byte", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
	    {"U+0080", "\xc2\x80", "\xc2\x80"},
	    {"U+07FF", "\xdf\xbf", "\xdf\xbf"},
	    {"U+0800", "\xe0\xa0\x80", "\xe0\xa0\x80"},
	    {"U+D7FF", "\xed\x9f\xbf", "\xed\x9f\xbf"},
	    {"U+E000", "\xee\x80\x80", "\xee\x80\x80"},
	    {"U+FFFF", "\xef\xbf\xbf", "\xef\xbf\xbf"},
	    {"U+10000", "\xf0\x90\x80\x80", "\xf0\x90\x80\x80"},
	    {"U+10FFFF", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},
	    {"overlong NUL", "\xc0\x80", FFFD FFFD},
	    {"overlong slash", "\xc0\xaf", FFFD FFFD},
	    {"overlong C1", "\xc1\xbf", FFFD FFFD},
	    {"overlong 3", "\xe0\x80\xaf", FFFD FFFD FFFD},
	    {"overlong 3 max", "\xe0\x9f\xbf", FFFD FFFD FFFD},
	    {"overlong 4", "\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD},
	    {"overlong 4 max", "\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD},
	    {"surrogate D800", "\xed\xa0\x80", FFFD FFFD FFFD},
	    {"surrogate DFFF", "\xed\xbf\xbf", FFFD FFFD FFFD},
	    {"surrogate pair", "\xed\xa0\xbd\xed\xb8\x80", FFFD FFFD FFFD FFFD FFFD FFFD},
	    {"past U+10FFFF", "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},
	    {"F5 lead", "\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD},
	    {"F8 lead", "\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},
	    {"FE FF", "\xfe\xff", FFFD FFFD},
	    {"lone continuation", "a\x80z", "a" FFFD "z"},
	    {"truncated 2 at end", "ok\xc3", "ok" FFFD},
	    {"truncated 3 at end", "ok\xe2\x82", "ok" FFFD FFFD},
	    {"truncated 4 at end", "ok\xf0\x9f\x98", "ok" FFFD FFFD FFFD},
	    {"truncated then ASCII", "\xe2\x82z", FFFD FFFD "z"},
	    {"truncated then valid", "\xe2\xc3\xa9", FFFD "\xc3\xa9"},
	    {"quote after bad byte", "\xc3\"", FFFD "\""},
	    {"escape chars", "\"\\/\b\f", "\"\\/\b\f"},
	};
	struct buf esc;
	json_error_t jerr;
	json_t *j;
	size_t i;

	buf_init(&esc);
	for (i = 0; i < EG_NELEM(cases); i++) {
		buf_reset(&esc);
		json_escape(&esc, cases[i].in, strlen(cases[i].in));
		j = json_loadb(esc.data, esc.len, JSON_DECODE_ANY, &jerr);
		if (j == NULL)
			fail_msg("%s: jansson: %s", cases[i].name, jerr.text);
		if (!json_is_string(j) || strcmp(json_string_value(j), cases[i].want) != 0) {
			json_decref(j);
			fail_msg("%s: decoded differently: %s", cases[i].name, esc.data);
		}
		json_decref(j);
	}
	buf_free(&esc);
}

/* Explicit lengths: NUL bytes are data, bytes past len are not read. */
static void
test_lengths(void **state)
{
	struct buf b;
	json_error_t jerr;
	json_t *j;

	buf_init(&b);
	json_escape(&b, "a\0b", 3);
	assert_string_equal(b.data, "\"a\\u0000b\"");
	j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	assert_non_null(j);
	assert_int_equal(json_string_length(j), 3);
	assert_memory_equal(json_string_value(j), "a\0b", 3);
	json_decref(j);

	buf_reset(&b);
	json_escape(&b, "abcdef", 2);
	assert_string_equal(b.data, "\"ab\"");
	/* A multibyte character cut by len is truncated, not read past. */
	buf_reset(&b);
	json_escape(&b, "\xe2\x82\xac", 2);
	assert_string_equal(b.data, "\"\\ufffd\\ufffd\"");
	buf_reset(&b);
	json_escape(&b, "", 0);
	assert_string_equal(b.data, "\"\"");
	buf_free(&b);
}

static void
test_escape_str(void **state)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "x=");
	json_escape_str(&b, NULL);
	assert_string_equal(b.data, "x=null");
	buf_adds(&b, ",");
	json_escape_str(&b, "");
	buf_adds(&b, ",");
	json_escape_str(&b, "say \"hi\"\n");
	assert_string_equal(b.data, "x=null,\"\",\"say \\\"hi\\\"\\n\"");
	buf_free(&b);
}

/* Random byte strings (fixed seed), biased towards UTF-8 lead bytes. */
static void
test_random(void **state)
{
	unsigned char in[300];
	struct buf esc, want;
	uint32_t x = 0x12345678;
	size_t len, i;
	int round;

	buf_init(&esc);
	buf_init(&want);
	for (round = 0; round < 5000; round++) {
		x = x * 1103515245 + 12345;
		len = (x >> 8) % sizeof in;
		for (i = 0; i < len; i++) {
			x = x * 1103515245 + 12345;
			in[i] = (unsigned char)(x >> 16);
			if ((x >> 28) < 4)
				in[i] = (unsigned char)(0x80 | (in[i] & 0x3f));
		}
		if (roundtrip(in, len, &esc, &want) != 0)
			fail_on(in, len, &esc);
	}
	buf_free(&esc);
	buf_free(&want);
}

/*
 * Every byte at every offset of a long plain string, and two at once: the
 * word-at-a-time scan must stop for each byte that needs escaping, and
 * for every byte of a multi-byte sequence, wherever it falls in a word.
 */
static void
test_every_offset(void **state)
{
	unsigned char in[40];
	struct buf esc, want;
	size_t k, m;
	int c;

	(void)state;
	buf_init(&esc);
	buf_init(&want);
	for (c = 0; c < 256; c++) {
		for (k = 0; k < sizeof in; k++) {
			memset(in, 'a' + (int)(k % 26), sizeof in);
			in[k] = (unsigned char)c;
			if (roundtrip(in, sizeof in, &esc, &want) != 0)
				fail_on(in, sizeof in, &esc);
			/* The same byte again further on, and a string cut short there. */
			for (m = k + 1; m < sizeof in; m += 7) {
				in[m] = (unsigned char)c;
				if (roundtrip(in, m + 1, &esc, &want) != 0)
					fail_on(in, m + 1, &esc);
			}
		}
	}
	buf_free(&esc);
	buf_free(&want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ascii_text),   cmocka_unit_test(test_every_byte),
	    cmocka_unit_test(test_every_pair),   cmocka_unit_test(test_long_sequences),
	    cmocka_unit_test(test_named_cases),  cmocka_unit_test(test_lengths),
	    cmocka_unit_test(test_escape_str),   cmocka_unit_test(test_random),
	    cmocka_unit_test(test_every_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
