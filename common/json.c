/*
 * JSON string escaping for the audit log and --json output. Any byte
 * sequence yields a valid JSON string: control characters are escaped and
 * bytes that are not well-formed UTF-8 (overlongs, surrogates, code points
 * past U+10FFFF, truncated sequences) become U+FFFD, one per bad byte, so
 * the output is always valid UTF-8 and a reader can see that something was
 * replaced.
 */
#include <string.h>

#include "common.h"

/* Bytes that go into a JSON string as they are: printable ASCII but '"' and '\\'. */
#define JP(c)   ((c) >= 0x20 && (c) < 0x7f && (c) != '"' && (c) != '\\')
#define JP4(c)  JP(c), JP((c) + 1), JP((c) + 2), JP((c) + 3)
#define JP16(c) JP4(c), JP4((c) + 4), JP4((c) + 8), JP4((c) + 12)
#define JP64(c) JP16(c), JP16((c) + 16), JP16((c) + 32), JP16((c) + 48)
static const unsigned char json_plain[256] = {JP64(0), JP64(64), JP64(128), JP64(192)};

/*
 * Whether all 8 bytes of w are plain, exactly: no byte >= 0x80, below
 * 0x20, '"', '\\' or 0x7f. Each test is the classic "some byte less than
 * n" (or "some byte equal to v": less than 1 after an xor); a borrow can
 * only start at a byte that is itself a match, so the answer is never
 * wrong, only which byte matched is not told.
 */
static inline int
json_word_plain(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\'), del = w ^ (ones * 0x7f);
	uint64_t bad = w & high;

	bad |= (w - ones * 0x20) & ~w & high;
	bad |= (q - ones) & ~q & high;
	bad |= (bs - ones) & ~bs & high;
	bad |= (del - ones) & ~del & high;
	return bad == 0;
}

/* Append s[0..len) to b as a quoted JSON string. */
void
json_escape(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n, run;
	char esc[7];

	buf_reserve(b, len + 2);
	b->data[b->len++] = '"';
	while (i < len) {
		/*
		 * Copy the longest run of bytes that need no escaping at once,
		 * straight into the room reserved above (escapes reserve more).
		 */
		run = i;
		for (; run + 8 <= len; run += 8) {
			uint64_t w;

			memcpy(&w, p + run, 8);
			if (!json_word_plain(w))
				break;
		}
		while (run < len && json_plain[p[run]])
			run++;
		if (run > i) {
			buf_reserve(b, run - i + 1);
			memcpy(b->data + b->len, p + i, run - i);
			b->len += run - i;
			i = run;
			continue;
		}
		switch (p[i]) {
		case '"':
			buf_add(b, "\\\"", 2);
			break;
		case '\\':
			buf_add(b, "\\\\", 2);
			break;
		case '\n':
			buf_add(b, "\\n", 2);
			break;
		case '\r':
			buf_add(b, "\\r", 2);
			break;
		case '\t':
			buf_add(b, "\\t", 2);
			break;
		default:
			if (p[i] < 0x20 || p[i] == 0x7f) {
				memcpy(esc, "\\u00", 4);
				str_hex(esc + 4, p + i, 1);
				buf_add(b, esc, 6);
				break;
			}
			if ((n = text_utf8_len(p + i, len - i)) == 0) {
				buf_add(b, "\\ufffd", 6);
				break;
			}
			buf_add(b, p + i, n);
			i += n;
			continue;
		}
		i++;
	}
	buf_reserve(b, 1);
	b->data[b->len++] = '"';
	b->data[b->len] = '\0';
}

void
json_escape_str(struct buf *b, const char *s)
{
	if (s == NULL)
		buf_adds(b, "null");
	else
		json_escape(b, s, strlen(s));
}
