/*
 * The table of the audit line's top-level keys (docs/audit.md), in the
 * order the writer (audit.c) writes them, with the kind of value each
 * holds. The writer takes its keys from here and the fast reader of
 * `policyctl audit` (policyctl/review_fast.c) recognises them from here,
 * so a field added to one is known to the other; tests/unit/
 * test_audit_fields.c holds a written line against the table.
 */
#include <string.h>

#include "audit.h"

#define S(name, value)                                                                             \
	{                                                                                          \
		name, sizeof(name) - 1, value                                                      \
	}

const struct fields_entry fields_table[AUDIT_FIELD_COUNT] = {
    [AUDIT_FIELD_V] = S("v", AUDIT_VALUE_INT),
    [AUDIT_FIELD_TS] = S("ts", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_SEQ] = S("seq", AUDIT_VALUE_INT),
    [AUDIT_FIELD_EVENT] = S("event", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_ACTION] = S("action", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_RULE] = S("rule", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_SOURCE] = S("source", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_REASON] = S("reason", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_MODE] = S("mode", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_CLIENT] = S("client", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_HOST] = S("host", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_PORT] = S("port", AUDIT_VALUE_INT),
    [AUDIT_FIELD_SCHEME] = S("scheme", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_METHOD] = S("method", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_PATH] = S("path", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_STATUS] = S("status", AUDIT_VALUE_INT),
    [AUDIT_FIELD_BYTES_UP] = S("bytes_up", AUDIT_VALUE_INT),
    [AUDIT_FIELD_BYTES_DOWN] = S("bytes_down", AUDIT_VALUE_INT),
    [AUDIT_FIELD_DURATION_MS] = S("duration_ms", AUDIT_VALUE_INT),
    [AUDIT_FIELD_GRAPHQL] = S("graphql", AUDIT_VALUE_OBJECT),
    [AUDIT_FIELD_QNAME] = S("qname", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_QTYPE] = S("qtype", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_RCODE] = S("rcode", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_ERROR] = S("error", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_ADDR] = S("addr", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_SNI] = S("sni", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_TLS] = S("tls", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_HINT] = S("hint", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_PROTO] = S("proto", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_UID] = S("uid", AUDIT_VALUE_INT),
    [AUDIT_FIELD_REFUSED] = S("refused", AUDIT_VALUE_INT),
    [AUDIT_FIELD_UNWRITTEN] = S("unwritten", AUDIT_VALUE_INT),
    [AUDIT_FIELD_SEQS] = S("seqs", AUDIT_VALUE_STRING),
    [AUDIT_FIELD_CACHED] = S("cached", AUDIT_VALUE_TRUE),
    [AUDIT_FIELD_TRUNCATED] = S("truncated", AUDIT_VALUE_TRUE),
    [AUDIT_FIELD_PREV] = S("prev", AUDIT_VALUE_STRING),
};

#undef S

/*
 * The field a key names, or -1. Lines hold their keys in table order, so
 * the caller passes the one after the key before as hint, tried first.
 */
int
fields_find(const char *p, size_t len, int hint)
{
	int k;

	if (hint >= 0 && hint < AUDIT_FIELD_COUNT && fields_table[hint].len == len &&
	    memcmp(fields_table[hint].name, p, len) == 0)
		return hint;
	for (k = 0; k < AUDIT_FIELD_COUNT; k++)
		if (fields_table[k].len == len && memcmp(fields_table[k].name, p, len) == 0)
			return k;
	return -1;
}
