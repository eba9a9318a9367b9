/*
 * Fuzzes the GraphQL classifier. The first byte picks how the rest is
 * presented: a document (without or with an operation name), a JSON body,
 * an application/graphql body, a URL query string, a URL query string and
 * a JSON body split at the first newline, a form body, or a body with no
 * content type. Every answer must be a known operation, and a GQL_QUERY
 * must be stable: classifying the same input again gives the same answer.
 * A request classified as GraphQL over HTTP and nothing else (pure) must
 * be GraphQL, and one that is GraphQL but not pure must say why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

#define FUZZ_MAX_INPUT (64 * 1024)

static enum gql_op
fuzz_classify(unsigned mode, const char *s, size_t len, struct gql_result *res)
{
	const char *nl;
	char *qs;
	enum gql_op op;

	switch (mode % 8) {
	case 0:
		return graphql_classify_document(s, len, NULL, res);
	case 1:
		return graphql_classify_document(s, len, "Q", res);
	case 2:
		return graphql_classify_request("POST", "application/json", s, len, 0, NULL, res);
	case 3:
		return graphql_classify_request("POST", "application/graphql", s, len, 0, NULL,
		                                res);
	case 4:
		qs = xstrndup(s, len);
		op = graphql_classify_request("GET", NULL, NULL, 0, 0, qs, res);
		free(qs);
		return op;
	case 5:
		if ((nl = memchr(s, '\n', len)) == NULL)
			nl = s + len;
		qs = xstrndup(s, (size_t)(nl - s));
		nl = nl < s + len ? nl + 1 : nl;
		op = graphql_classify_request("POST", "application/json; charset=utf-8", nl,
		                              len - (size_t)(nl - s), 0, qs, res);
		free(qs);
		return op;
	case 6:
		return graphql_classify_request("POST", "application/x-www-form-urlencoded", s, len,
		                                0, NULL, res);
	default:
		return graphql_classify_request("PUT", NULL, s, len, 0, NULL, res);
	}
}

static void
fuzz_check(unsigned mode, const struct gql_result *res, enum gql_op op)
{
	if (op != res->op || (unsigned)op > GQL_UNKNOWN || res->reason == NULL ||
	    memchr(res->name, '\0', sizeof res->name) == NULL)
		abort();
	if (res->pure && (op == GQL_NONE || res->impure != NULL))
		abort();
	/* Documents alone are never requests; requests that are GraphQL say why not pure. */
	if (mode % 8 < 2 ? res->pure || res->impure != NULL
	                 : op != GQL_NONE && !res->pure && res->impure == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gql_result r1, r2;
	enum gql_op op;
	char *s;

	if (size < 1 || size > FUZZ_MAX_INPUT)
		return 0;
	/* An exact-size copy, so reading one byte too far is caught. */
	s = xmalloc(size > 1 ? size - 1 : 1);
	memcpy(s, data + 1, size - 1);
	op = fuzz_classify(data[0], s, size - 1, &r1);
	fuzz_check(data[0], &r1, op);
	if (op == GQL_QUERY) {
		op = fuzz_classify(data[0], s, size - 1, &r2);
		fuzz_check(data[0], &r2, op);
		if (op != GQL_QUERY || strcmp(r1.name, r2.name) != 0 || r1.pure != r2.pure)
			abort();
	}
	free(s);
	return 0;
}
