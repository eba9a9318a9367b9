/*
 * What the files of policy/ share and their callers outside it do not
 * need: CIDR arithmetic, the matcher's lower-level calls, list files, the
 * DNS-over-HTTPS list, the GraphQL classifiers, the compiled policy and
 * the helpers its decision steps share, and the header kinds of a
 * request. The unit tests of policy/ include it too.
 */
#ifndef POLICY_INT_H
#define POLICY_INT_H

#include "policy.h"

/* addr.c */
struct cidr {
	struct addr net; /* host bits cleared */
	uint8_t plen;
};
const char *addr_cidr_parse(const char *, struct cidr *);
void addr_cidr_format(const struct cidr *, char *, size_t);
int addr_in_cidr(const struct addr *, const struct cidr *);
void addr_unmap(const struct addr *, struct addr *);

/* host.c */
const char *host_name_check(const char *, size_t);

/* domain.c */
const char *domain_set_add_kind(struct domain_set *, enum domain_kind, const char *, size_t,
                                const char *, unsigned);
int domain_set_match_name(const struct domain_set *, const char *, struct domain_match *);
int domain_set_match_addr(const struct domain_set *, const struct addr *, struct domain_match *);
size_t domain_set_count(const struct domain_set *);
void domain_set_reserve(struct domain_set *, size_t);
int domain_wildcard_shared(const char *);

/* listfile.c */
#define LISTFILE_SHOW_INVALID 5
struct listfile_stats {
	unsigned long lines;
	unsigned long entries;                              /* entries added */
	unsigned long invalid;                              /* lines that were not an entry */
	unsigned long first_invalid[LISTFILE_SHOW_INVALID]; /* their line numbers */
	char error[256];                                    /* why the file could not be read */
};
int listfile_load(struct domain_set *, const char *, struct listfile_stats *);

/* graphql.c */
enum gql_op graphql_classify_document(const char *, size_t, const char *, struct gql_result *);

/* graphql_http.c */
enum gql_op graphql_classify_request(const char *, const char *, const char *, size_t, int,
                                     const char *, struct gql_result *);

/* graphql_ws.c */
const char *graphql_ws_proto_name(enum gql_ws_proto);

/* doh.c */
int doh_match(const struct host *, const char **, const char **);
size_t doh_count(void);
const char *doh_check(void);

/* policy.c */
/* A compiled policy: read-only once policy_new returns. */
struct policy {
	int refcnt;
	struct config *cfg;
	struct domain_set *allow;
	struct domain_set *block;
	struct domain_set *passthrough;
	char *warnings;
};
void policy_loc_format(const struct cfg_loc *, char *, size_t);
void policy_reason(struct decision *, const char *, const char *);
void policy_decision_set(struct decision *, enum policy_action, const char *, enum policy_list);
void policy_violation(const struct policy *, struct decision *, const char *, enum policy_list,
                      const struct cfg_loc *);

/* practical.c */
void practical_decide(const struct policy *, const struct policy_request *, struct decision *);
void practical_upgrade(const struct policy *, const struct policy_request *, struct decision *);

/* request.c */
enum policy_header {
	POLICY_HEADER_OTHER,
	POLICY_HEADER_OVERRIDE,    /* X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override */
	POLICY_HEADER_UPGRADE,     /* Upgrade, when Connection names it */
	POLICY_HEADER_WS_PROTOCOL, /* Sec-WebSocket-Protocol */
};
enum policy_header policy_header_kind(const char *, size_t);

#endif
