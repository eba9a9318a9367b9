/*
 * Fuzz target for the control socket's request parser
 * (control_request_parse) and, for the explain requests it accepts, the
 * live explain that answers them (dryrun_start on a runtime with the
 * embedded default policy and no resolver, so it answers at once). Beyond
 * not crashing: a refusal is one line of text; an accepted request holds
 * its invariants (a known command, bounded fields, a body within 1 MiB);
 * and every explain answer, error or not, is one valid JSON object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy.h"

#define FUZZ_CONTROL_MAX (64 * 1024)

static struct egressd *fuzz_e;

static void
fuzz_control_answer(void *arg, const char *json, size_t len, const char *err)
{
	json_t *o;

	*(int *)arg = 1;
	if (json == NULL) {
		if (err == NULL || strchr(err, '\n') != NULL)
			abort();
		return;
	}
	if ((o = json_loadb(json, len, 0, NULL)) == NULL || !json_is_object(o) ||
	    !json_is_string(json_object_get(o, "action")))
		abort();
	json_decref(o);
}

static struct egressd *
fuzz_control_runtime(void)
{
	struct egressd_conf conf;
	struct config *cfg;
	struct buf errs;

	if (fuzz_e != NULL)
		return fuzz_e;
	log_init("fuzz", LOG_LVL_ERR);
	buf_init(&errs);
	egressd_conf_init(&conf);
	if ((cfg = config_load_files(NULL, 0, &errs)) == NULL ||
	    (conf.policy = policy_new(cfg, &errs)) == NULL)
		abort();
	buf_free(&errs);
	fuzz_e = egressd_new(&conf);
	return fuzz_e;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct control_request r;
	const char *err;
	size_t i;
	int answered = 0;

	if (size > FUZZ_CONTROL_MAX)
		size = FUZZ_CONTROL_MAX;
	err = control_request_parse((const char *)data, size, &r);
	if (err != NULL) {
		if (*err == '\0' || strchr(err, '\n') != NULL)
			abort();
		control_request_free(&r);
		return 0;
	}
	if (r.cmd > CONTROL_RELOAD)
		abort();
	if (r.cmd != CONTROL_EXPLAIN) {
		control_request_free(&r);
		return 0;
	}
	if (r.target == NULL || r.method == NULL || r.nheaders > CONTROL_MAX_HEADERS ||
	    r.body_len > CONTROL_MAX_BODY + 2 || (r.body != NULL && r.body[r.body_len] != '\0'))
		abort();
	for (i = 0; i < r.nheaders; i++)
		if (r.header_names[i] == NULL || r.header_values[i] == NULL)
			abort();
	/* Without a resolver the answer comes before dryrun_start returns. */
	if (dryrun_start(fuzz_control_runtime(), &r, fuzz_control_answer, &answered) != NULL ||
	    !answered)
		abort();
	control_request_free(&r);
	return 0;
}
