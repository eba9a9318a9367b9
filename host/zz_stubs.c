/* The commands still to come: each says so. */
#include <stdio.h>

#include "host.h"

static int
stub(const char *w, const struct strv *a)
{
	struct strv pos = {0};
	struct buf err;

	buf_init(&err);
	if (args_options(NULL, 0, NULL, a, &pos, &err) == -1)
		fprintf(stderr, HOST_PROG ": %s\n", buf_cstr(&err));
	else
		fprintf(stderr, HOST_PROG " %s: not available in this version\n", w);
	buf_free(&err);
	strv_free(&pos);
	return HOST_EXIT_USAGE;
}
int
policytest_main(const struct strv *a)
{
	return stub("policy", a);
}
