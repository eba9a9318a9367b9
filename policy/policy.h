/*
 * The policy module's API: everything that decides what may leave the
 * sandbox, as egressd (the proxy and the resolver), sandbox-init and
 * policyctl call it. It knows nothing of sockets or of the audit log;
 * policyctl makes the very same calls as the daemon, so the two cannot
 * disagree. What only policy/ itself (and its tests) needs is in
 * policy_int.h.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common.h"

/* addr.c */
struct addr {
	sa_family_t af; /* AF_INET (bytes 0..3 used) or AF_INET6 */
	uint8_t a[16];
};
const char *addr_parse(const char *, struct addr *);
void addr_format(const struct addr *, char *, size_t);
const char *addr_special(const struct addr *);
int addr_is_metadata(const struct addr *);

/* host.c */
#define HOST_NAME_MAXLEN  253
#define HOST_LABEL_MAXLEN 63
enum host_kind {
	HOST_NAME,
	HOST_ADDR,
};
struct host {
	enum host_kind kind;
	char name[HOST_NAME_MAXLEN + 1]; /* normalised name, or the address as text */
	struct addr addr;                /* HOST_ADDR only */
};
const char *host_parse(const char *, size_t, struct host *);

/* url.c */
struct url {
	char scheme[16]; /* lowercase; "" when the input had none */
	struct host host;
	uint16_t port; /* explicit, or the scheme's default; 0 unknown */
	int port_explicit;
	char *path;  /* at least "/"; no query, no fragment */
	char *query; /* without the '?', or NULL */
};
const char *url_parse(const char *, struct url *);
void url_free(struct url *);

/* domain.c */
struct domain_set;
#define DOMAIN_F_ALLOWLIST 0x1 /* reject wildcards over public suffixes */
#define DOMAIN_F_NO_ADDR   0x2 /* names only: address entries are errors */
enum domain_kind {
	DOMAIN_EXACT,    /* api.example.com */
	DOMAIN_WILDCARD, /* *.example.com: subdomains, not the apex */
	DOMAIN_TREE,     /* ||example.com^: the apex and its subdomains */
	DOMAIN_ADDR,     /* 127.0.0.1, ::1 */
	DOMAIN_CIDR,     /* 198.18.0.0/15 */
};
struct domain_match {
	enum domain_kind kind;
	char pattern[HOST_NAME_MAXLEN + 8]; /* the entry as it is shown */
	const char *file;                   /* NULL: built in */
	unsigned line;
};
struct psl_ctx_st; /* libpsl's psl_ctx_t */
const struct psl_ctx_st *domain_psl(void);
struct domain_set *domain_set_new(void);
void domain_set_free(struct domain_set *);
const char *domain_set_add(struct domain_set *, const char *, size_t, int, const char *, unsigned);

/* graphql.c */
enum gql_op {
	GQL_NONE, /* not a GraphQL request */
	GQL_QUERY,
	GQL_MUTATION,
	GQL_SUBSCRIPTION,
	GQL_UNKNOWN, /* GraphQL, but not provably a query */
};
struct gql_result {
	enum gql_op op;     /* for a batch: the first entry that is not a query */
	char name[128];     /* operation name when known, else "" */
	const char *reason; /* static text: how it was classified */
	/*
	 * graphql_classify_request only: the request is GraphQL over HTTP and
	 * nothing else (a body holding only a GraphQL request, or a GET whose
	 * URL does); else impure says why, in static text (NULL without GraphQL).
	 */
	int pure;
	const char *impure;
};
const char *graphql_op_name(enum gql_op);

/* graphql_ws.c */
enum gql_ws_proto {
	GQL_WS_TRANSPORT, /* graphql-transport-ws (the graphql-ws library) */
	GQL_WS_LEGACY,    /* graphql-ws (subscriptions-transport-ws) */
};
enum gql_ws_kind {
	GQL_WS_INVALID,   /* not a client message of the subprotocol: reason says why */
	GQL_WS_CONTROL,   /* connection_init, ping, pong, complete, stop, connection_terminate */
	GQL_WS_OPERATION, /* subscribe or start: gql classifies its document */
};
struct gql_ws_msg {
	enum gql_ws_kind kind;
	const char *type;   /* the message type as the subprotocol names it, or NULL */
	const char *reason; /* static text: how it was classified */
	struct gql_result gql;
};
int graphql_ws_proto(const char *, size_t, enum gql_ws_proto *);
enum gql_ws_kind graphql_ws_classify(enum gql_ws_proto, const char *, size_t, struct gql_ws_msg *);

/* config.c */
enum policy_mode {
	MODE_PRACTICAL,
	MODE_STRICT,
	MODE_OFF,
};
enum violation_mode {
	VIOLATION_BLOCK,
	VIOLATION_FLAG,
};
struct cfg_loc {
	const char *file; /* NULL: built in */
	unsigned line;
	unsigned col;
};
struct cfg_item {
	char *value;
	struct cfg_loc loc;
};
struct cfg_list {
	struct cfg_item *items;
	size_t n;
	int set;
	struct cfg_loc loc;
};
/*
 * The wrapper's sections of the same file (seed 003 §8, and the keys of
 * seed 000's .opencode/sandbox.json): checked here, key by key, and merged
 * like the rest; egressd ignores them and opencode-sandbox acts on them. A
 * value whose loc has line 0 was not set by any file. Paths are as written,
 * except that a relative path is made absolute from the directory of the
 * file naming it ("~/..." is kept for the host to expand).
 */
enum config_permission {
	CONFIG_PERMISSION_ASK,
	CONFIG_PERMISSION_ALLOW,
	CONFIG_PERMISSION_DENY,
};
struct config_wrapper {
	char *state_config_dir;
	struct cfg_loc state_config_dir_loc;
	char *state_data_dir;
	struct cfg_loc state_data_dir_loc;
	char *state_state_dir;
	struct cfg_loc state_state_dir_loc;
	char *image_name; /* also docker.image */
	struct cfg_loc image_name_loc;
	int image_auto_build;
	struct cfg_loc image_auto_build_loc;
	char *image_strict_init_image;
	struct cfg_loc image_strict_init_image_loc;
	char *image_base;
	struct cfg_loc image_base_loc;
	int image_install_tools;
	struct cfg_loc image_install_tools_loc;
	char *project_target;
	struct cfg_loc project_target_loc;
	int project_readonly;
	struct cfg_loc project_readonly_loc;
	struct cfg_list project_extra_mounts; /* "SOURCE:TARGET[:ro|:rw]" */
	int opencode_mount_host_config;
	struct cfg_loc opencode_mount_host_config_loc;
	int opencode_mount_host_data;
	struct cfg_loc opencode_mount_host_data_loc;
	int opencode_generated_config;
	struct cfg_loc opencode_generated_config_loc;
	int opencode_autoupdate;
	struct cfg_loc opencode_autoupdate_loc;
	struct cfg_list opencode_enabled_providers;
	struct cfg_list opencode_disabled_providers;
	enum config_permission opencode_permission_edit;
	struct cfg_loc opencode_permission_edit_loc;
	enum config_permission opencode_permission_bash;
	struct cfg_loc opencode_permission_bash_loc;
	char *skills_imported_dir;
	struct cfg_loc skills_imported_dir_loc;
	char *skills_project_imported_dir;
	struct cfg_loc skills_project_imported_dir_loc;
	struct cfg_list skills_include;
	struct cfg_list skills_exclude;
	int skills_expose_project_skills;
	struct cfg_loc skills_expose_project_skills_loc;
	int skills_expose_global_skills;
	struct cfg_loc skills_expose_global_skills_loc;
	char *resources_cpus; /* "4", "1.5" */
	struct cfg_loc resources_cpus_loc;
	char *resources_memory; /* "4g", "512m", "1073741824" */
	struct cfg_loc resources_memory_loc;
	char *container_name_prefix;
	struct cfg_loc container_name_prefix_loc;
	int container_remove;
	struct cfg_loc container_remove_loc;
	int container_debug; /* also seed 000's verbose */
	struct cfg_loc container_debug_loc;
	char *container_upstream_ca;
	struct cfg_loc container_upstream_ca_loc;
	/* seed 000's keys the appliance has no use for: kept to say so */
	int observe;
	struct cfg_loc observe_loc;
	int fs_inherit_permissions;
	struct cfg_loc fs_inherit_permissions_loc;
	struct cfg_list fs_allow_write;
	struct cfg_list fs_deny_read;
	int auto_allow_clean;
	struct cfg_loc auto_allow_clean_loc;
};
/* A key that was understood and has no effect here, with the reason (seed 000's file). */
struct cfg_note {
	const char *key;  /* filesystem.allow_write */
	const char *text; /* why it does nothing */
	struct cfg_loc loc;
};
struct config {
	char **files; /* every file read, in order; cfg_loc points here */
	size_t nfiles;

	enum policy_mode mode;
	struct cfg_loc mode_loc;
	int inherit_global;
	struct cfg_loc inherit_global_loc;
	struct cfg_list blocklist;
	struct cfg_list allowlist;
	struct cfg_list passthrough;
	struct cfg_list blocklist_files;
	struct cfg_list allow_methods;
	int allow_graphql_queries;
	struct cfg_loc allow_graphql_queries_loc;
	enum violation_mode on_violation;
	struct cfg_loc on_violation_loc;
	int fail_closed;
	struct cfg_loc fail_closed_loc;
	int proxy_port;
	struct cfg_loc proxy_port_loc;
	int dns_port;
	struct cfg_loc dns_port_loc;
	size_t max_graphql_body;
	struct cfg_loc max_graphql_body_loc;
	char *audit_path;
	struct cfg_loc audit_path_loc;
	int audit_on_error; /* audit.onError: 0 block, 1 continue */
	struct cfg_loc audit_on_error_loc;
	size_t audit_max_bytes; /* audit.maxBytes: rotate at this size; 0: never */
	struct cfg_loc audit_max_bytes_loc;
	int audit_keep; /* audit.keep: rotated files kept */
	struct cfg_loc audit_keep_loc;
	int ca_name_constraints; /* strict mode: the CA permits only the allowlist */
	struct cfg_loc ca_name_constraints_loc;
	int ca_lifetime_hours;
	struct cfg_loc ca_lifetime_hours_loc;
	int block_doh_providers; /* the built-in DNS-over-HTTPS list (doh.c) */
	struct cfg_loc block_doh_providers_loc;

	struct config_wrapper wrapper;

	unsigned char *untrusted;    /* per file: loaded with CONFIG_FILE_UNTRUSTED */
	struct cfg_ignored *ignored; /* what untrusted files set and was not taken */
	size_t nignored;
	struct cfg_note *notes; /* keys understood that do nothing here */
	size_t nnotes;
	/* wrapper keys of untrusted files not taken: opencode-sandbox's to report */
	struct cfg_ignored *wrapper_ignored;
	size_t nwrapper_ignored;
};
/*
 * A file to load and how far it is trusted. An untrusted file (a project
 * file in a workspace the payload writes to) only tightens what the files
 * before it set: the rest is left out and recorded in config->ignored.
 */
struct config_file {
	const char *path;
	int flags;
#define CONFIG_FILE_UNTRUSTED 0x1
};
/*
 * A file whose text the caller has read already (opencode-sandbox reads
 * each file once, then checks and hands on those bytes): path names it in
 * messages and places its relative paths; data NULL reads the file.
 */
struct config_text {
	struct config_file file;
	const char *data;
	size_t len;
};
struct cfg_ignored {
	const char *key; /* network.allowlist */
	char *entry;     /* the list entry left out, or NULL for the whole key */
	const char *why; /* what taking it would have done */
	struct cfg_loc loc;
};
struct config *config_load(char *const *, size_t, struct buf *);
struct config *config_load_files(const struct config_file *, size_t, struct buf *);
struct config *config_load_texts(const struct config_text *, size_t, struct buf *);
void config_ignored_text(const struct cfg_ignored *, struct buf *);
void config_note_text(const struct cfg_note *, struct buf *);
void config_wrapper_dump(const struct config *, struct buf *);
const char *config_permission_name(enum config_permission);
struct config *config_load_mem(const char *, const char *, size_t, struct buf *);
void config_free(struct config *);
const char *config_mode_name(enum policy_mode);

/* config_dump.c */
void config_dump(const struct config *, struct buf *);

/* policy.c */
enum policy_action {
	ACTION_ALLOW,
	ACTION_FLAG,
	ACTION_BLOCK,
};
struct policy;
enum policy_upgrade {
	POLICY_UPGRADE_NONE,
	POLICY_UPGRADE_WEBSOCKET,
};
#define POLICY_MAX_OVERRIDES 4
struct policy_request {
	const struct host *host; /* as the client wrote it */
	const char *method;      /* NULL: the host alone (DNS); "CONNECT": a tunnel to port */
	uint16_t port;           /* the destination port, for CONNECT */
	const char *content_type;
	const char *body;
	size_t body_len;
	int body_truncated;
	int body_encoded;  /* a Content-Encoding hides the body: not provably a query */
	const char *query; /* raw query string without '?', or NULL */
	/* From header fields, through policy_request_header() (request.c): */
	const char *overrides[POLICY_MAX_OVERRIDES];       /* method-override values */
	const char *override_fields[POLICY_MAX_OVERRIDES]; /* their field names, spelled as usual */
	size_t noverrides;           /* fields seen; past POLICY_MAX_OVERRIDES not kept */
	enum policy_upgrade upgrade; /* only a GET upgrades (RFC 6455) */
	unsigned ws_offer;           /* POLICY_WS_* bits: the subprotocols offered */
#define POLICY_WS_GRAPHQL 0x1        /* graphql-transport-ws or graphql-ws */
#define POLICY_WS_OTHER   0x2        /* any other subprotocol */
};
/* The part of the policy a decision comes from; policy_list_name() for text. */
enum policy_list {
	POLICY_LIST_NONE, /* a built-in rule of the caller's */
	POLICY_LIST_ALLOWLIST,
	POLICY_LIST_BLOCKLIST,
	POLICY_LIST_DOH,       /* the built-in DNS-over-HTTPS list */
	POLICY_LIST_MODE,      /* the network mode */
	POLICY_LIST_METHODS,   /* allowMethods and the method rules */
	POLICY_LIST_GRAPHQL,   /* allowGraphqlQueries */
	POLICY_LIST_WEBSOCKET, /* upgrades and their messages */
	POLICY_LIST_ADDRESS,   /* the private-address guard (step 5) */
	POLICY_LIST_NAME,      /* the resolver: a name no entry can match */
};
struct decision {
	enum policy_action action;
	char rule[HOST_NAME_MAXLEN + 32];
	enum policy_list list;
	char source[512]; /* file:line, or "builtin" */
	char reason[256];
	int body_matters;     /* the method rules decided (list methods or graphql): the
	                         request's body may change the answer */
	int name_allowlisted; /* the host as written matched the allowlist */
	int name_exact_allow; /* ... by an exact entry (lifts the address guard) */
	int graphql_present;
	struct gql_result gql;
	int ws_inspect; /* allowed only with every client WebSocket message inspected */
};
struct policy *policy_new(struct config *, struct buf *);
struct policy *policy_ref(struct policy *);
void policy_unref(struct policy *);
enum policy_mode policy_mode(const struct policy *);
const struct config *policy_config(const struct policy *);
const char *policy_warnings(const struct policy *);
void policy_decide(const struct policy *, const struct policy_request *, struct decision *);
void policy_decide_ws_message(const struct policy *, const struct gql_ws_msg *, struct decision *);
void policy_check_addr(const struct policy *, const struct addr *, struct decision *);
int policy_addr_allowed(const struct policy *, const struct addr *, const struct decision *);
int policy_passthrough(const struct policy *, const struct host *, struct domain_match *);
const char *policy_action_name(enum policy_action);
const char *policy_list_name(enum policy_list);
void policy_request_header(struct policy_request *, const char *, size_t, const char *);
const char *policy_mode_note(enum policy_mode);

/* verdict.c: a decision as explain shows it, shared by policyctl and egressd */
#define VERDICT_MAX_NOTES  8
#define VERDICT_F_RESOLVED 0x1 /* the name's addresses were looked up and guarded */
struct verdict {
	const char *input; /* the host or URL as the user wrote it */
	const struct url *url;
	const struct policy_request *req;
	struct decision d; /* the answer */
	const char *notes[VERDICT_MAX_NOTES];
	char store[VERDICT_MAX_NOTES][320];
	size_t nnotes;
};
void verdict_decide(struct verdict *, const struct policy *, const char *, const struct url *,
                    const struct policy_request *);
void verdict_note(struct verdict *, const char *, ...) EG_PRINTF(2, 3);
void verdict_notes(struct verdict *, const struct policy *, int);
void verdict_json_decision(const struct decision *, struct buf *, int);
void verdict_json(const struct verdict *, const struct policy *, struct buf *);
void verdict_request(struct policy_request *, const struct url *, const char *);
struct json_t;
void verdict_text(const struct json_t *, struct buf *);

#endif
