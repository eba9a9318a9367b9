/*
 * Fuzz target for the config loader: any input either loads with no
 * messages or fails with at least one, never both, and whatever loads must
 * dump to YAML that loads again.
 */
#include <stdint.h>
#include <stdlib.h>

#include "policy.h"

#define FUZZ_MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg, *again;
	struct buf errs, dump;

	if (size > FUZZ_MAX_INPUT)
		return 0;
	buf_init(&errs);
	cfg = config_load_mem("fuzz.yaml", (const char *)data, size, &errs);
	if ((cfg == NULL) != (errs.len > 0))
		abort();
	if (cfg != NULL) {
		buf_init(&dump);
		config_dump(cfg, &dump);
		again = config_load_mem("dump.yaml", dump.data, dump.len, &errs);
		if (again == NULL || errs.len > 0)
			abort();
		config_free(again);
		buf_free(&dump);
	}
	config_free(cfg);
	buf_free(&errs);
	return 0;
}
