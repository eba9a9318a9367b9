/*
 * Fuzz target for block list files and list entries: the input is loaded
 * as a list file (through a memfd), then every line is added as a config
 * entry with both flag sets and looked up as a name and an address. The
 * loader must account for every line and never fail on a readable file.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "policy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct domain_set *set;
	struct listfile_stats st;
	struct domain_match m;
	char path[64], q[300];
	const char *p, *end, *nl;
	struct addr a;
	int fd;

	if (size > 65536)
		return 0;
	set = domain_set_new();
	fd = memfd_create("fuzz", 0);
	if (fd == -1 || write(fd, data, size) != (ssize_t)size)
		__builtin_trap();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (listfile_load(set, path, &st) != 0)
		__builtin_trap();
	if (st.entries != domain_set_count(set) || st.invalid > st.lines)
		__builtin_trap();
	close(fd);
	/* every line as a config entry (both flag sets) and as a query */
	for (p = (const char *)data, end = p + size; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		domain_set_add(set, p, (size_t)(nl - p), DOMAIN_F_ALLOWLIST | DOMAIN_F_NO_ADDR, "a",
		               1);
		domain_set_add(set, p, (size_t)(nl - p), 0, NULL, 2);
		if ((size_t)(nl - p) < sizeof q) {
			memcpy(q, p, (size_t)(nl - p));
			q[nl - p] = '\0';
			if (domain_set_match_name(set, q, &m) && strlen(m.pattern) == 0)
				__builtin_trap();
			if (addr_parse(q, &a) == NULL)
				domain_set_match_addr(set, &a, &m);
		}
	}
	domain_set_free(set);
	return 0;
}
