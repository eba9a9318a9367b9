/*
 * Fuzz target for opencode-sandbox's reading of OpenCode's JSON with
 * comments (providers_strip_jsonc): whatever the bytes, the output is no
 * longer than the input, holds no NUL before its end, and a second pass
 * over plain JSON changes nothing a JSON parser would see (the text is
 * then parsed, as the host does, to check it neither crashes nor leaks).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "host.h"

#define FUZZ_JSONC_MAX (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out, *again;
	json_t *a, *b;

	if (size > FUZZ_JSONC_MAX)
		return 0;
	out = providers_strip_jsonc((const char *)data, size);
	if (strlen(out) > size && memchr(data, 0, size) == NULL)
		abort();
	a = json_loads(out, JSON_REJECT_DUPLICATES, NULL);
	if (a != NULL) {
		again = providers_strip_jsonc(out, strlen(out));
		b = json_loads(again, JSON_REJECT_DUPLICATES, NULL);
		if (b == NULL || !json_equal(a, b))
			abort();
		json_decref(b);
		free(again);
	}
	json_decref(a);
	free(out);
	return 0;
}
