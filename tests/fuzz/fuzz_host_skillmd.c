/*
 * Fuzz target for opencode-sandbox's reading of a skill's SKILL.md
 * (skillmd_parse): whatever the bytes, the answer is an error or a name
 * OpenCode accepts with a description, and renaming that name gives a
 * file that parses back to the new name and the same description.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

#define FUZZ_SKILLMD_MAX (128 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct skillmd m, again;
	char *renamed;
	size_t len;

	if (size > FUZZ_SKILLMD_MAX)
		return 0;
	if (skillmd_parse((const char *)data, size, &m) != NULL)
		return 0;
	if (skillmd_check_name(m.name) != NULL || m.description == NULL || m.name_end > size ||
	    m.name_start >= m.name_end)
		abort();
	renamed = skillmd_rename((const char *)data, size, &m, "fuzz-renamed", &len);
	if (skillmd_parse(renamed, len, &again) != NULL ||
	    strcmp(again.name, "fuzz-renamed") != 0 ||
	    strcmp(again.description, m.description) != 0)
		abort();
	skillmd_free(&again);
	skillmd_free(&m);
	free(renamed);
	return 0;
}
