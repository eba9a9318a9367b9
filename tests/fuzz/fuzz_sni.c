/*
 * sni_parse on arbitrary bytes: never reads out of bounds, and a name it
 * returns is NUL-terminated, non-empty and shorter than the buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256];
	const char *err;
	unsigned char *copy;
	enum sni_result r;

	if (size > 64 * 1024)
		return 0;
	/* An exact-size copy, so a read past the end is caught. */
	copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	r = sni_parse(copy, size, name, sizeof name, &err);
	if (r == SNI_FOUND && (name[0] == '\0' || strlen(name) >= sizeof name))
		abort();
	if (r == SNI_ERROR && err == NULL)
		abort();
	if (r != SNI_FOUND && name[0] != '\0')
		abort();
	free(copy);
	return 0;
}
