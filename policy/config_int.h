/*
 * What the configuration files (cfg.c, config.c, config_merge.c,
 * config_dump.c, schema.c) share and nobody else needs: the node tree
 * that libyaml events are turned into, the error collector, and the
 * steps of a load.
 */
#ifndef CONFIG_INT_H
#define CONFIG_INT_H

#include "policy_int.h"

/* config.c */
#define CONFIG_MAX_FILE_SIZE        (4 * 1024 * 1024)
#define CONFIG_MAX_DEPTH            64
#define CONFIG_MAX_NODES            100000
#define CONFIG_MAX_ERRORS           100 /* shown per file; the rest are counted */
#define CONFIG_MAX_SHOWN            80  /* bytes of an untrusted string in a message */
#define CONFIG_DEFAULT_GRAPHQL_BODY 1048576
#define CONFIG_MAX_GRAPHQL_BODY     16777216
#define CONFIG_DEFAULT_CA_HOURS     168 /* 7 days */
#define CONFIG_MAX_CA_HOURS         87600
#define CONFIG_DEFAULT_AUDIT_KEEP   5
#define CONFIG_MIN_AUDIT_BYTES      65536
#define CONFIG_MAX_AUDIT_BYTES      100000000000000LL
#define CONFIG_MAX_AUDIT_KEEP       1000
extern const char config_default_yaml[]; /* policy/default.yaml, built in */
void config_list_clear(struct cfg_list *);

/* cfg.c */
enum cfg_node_type {
	CFG_NODE_SCALAR,
	CFG_NODE_SEQUENCE,
	CFG_NODE_MAPPING,
};
struct cfg_node {
	enum cfg_node_type type;
	int flags;
#define CFG_NODE_F_QUOTED 0x1 /* scalar written quoted or tagged !!str */
#define CFG_NODE_F_BAD    0x2 /* already reported: checks skip it */
	struct cfg_loc loc;
	char *value; /* scalar; NUL-terminated, but may hold NULs */
	size_t len;
	struct cfg_node **kids; /* sequence items; mapping key, value, ... */
	size_t n;
};
struct cfg_msg;
/* The errors of one load; zeroed, with out set, before the first file. */
struct cfg_ctx {
	struct cfg_msg *msgs; /* the current file's, sorted by cfg_flush */
	size_t nmsgs;
	size_t dropped;
	size_t total; /* every error of this load */
	struct buf *out;
};
void cfg_error(struct cfg_ctx *, const struct cfg_loc *, const char *, ...) EG_PRINTF(3, 4);
void cfg_escape(struct buf *, const char *, size_t);
void cfg_flush(struct cfg_ctx *, const char *);
struct cfg_node *cfg_tree_read(struct cfg_ctx *, const char *, const char *, size_t, int *);
void cfg_node_free(struct cfg_node *);

/* config_merge.c */
void config_merge_layer(struct config *, struct config *);
void config_merge_untrusted(struct config *, struct config *);

/* schema.c: the key tables (egressd's keys in schema.c, the wrapper's in schema_wrapper.c) */
enum schema_type {
	SCHEMA_SECTION, /* a mapping of further keys */
	SCHEMA_BOOL,
	SCHEMA_INT,
	SCHEMA_ENUM,
	SCHEMA_STRING,
	SCHEMA_LIST, /* a sequence of strings */
};
/* What a wrapper key set in an untrusted (project) file does. */
enum schema_untrusted {
	SCHEMA_UNTRUSTED_IGNORE, /* nothing: it is recorded as ignored */
	SCHEMA_UNTRUSTED_TRUE,   /* taken when true (it tightens), else ignored */
	SCHEMA_UNTRUSTED_FALSE,  /* taken when false, else ignored */
	SCHEMA_UNTRUSTED_NOTE,   /* a key with no effect anywhere: merged as a note only */
};
struct schema_state {
	struct cfg_ctx *ctx;
	struct config *cfg;
	const char *dir; /* the config file's directory */
};
struct schema_key;
typedef void (*schema_store_fn)(struct schema_state *, const struct schema_key *,
                                const struct cfg_node *, long long);
struct schema_key {
	const char *section; /* NULL: top level; "opencode.permission" for a nested one */
	const char *key;
	const char *full; /* section.key, for messages and nested sections */
	enum schema_type type;
	schema_store_fn store;
	size_t off;     /* the value in struct config */
	size_t loc_off; /* its cfg_loc: set twice under two names? */
	long long min;  /* SCHEMA_INT */
	long long max;
	const char *const *names; /* SCHEMA_ENUM, NULL-terminated */
	int flags;                /* SCHEMA_LIST of hosts: DOMAIN_F_* */
	int wrapper;              /* stored in config->wrapper, merged by schema_wrapper_merge */
	enum schema_untrusted untrusted;
	const char *note; /* SCHEMA_UNTRUSTED_NOTE: why the key does nothing */
	const char *why;  /* SCHEMA_UNTRUSTED_*: what taking it from a project file would do */
};
extern const struct schema_key schema_wrapper_keys[];
extern const size_t schema_wrapper_nkeys;
void schema_apply(struct cfg_ctx *, const struct cfg_node *, struct config *, const char *);
const char *schema_text(struct buf *, const struct cfg_node *);
int schema_string(struct schema_state *, const char *, int, const struct cfg_node *);
void schema_store_none(struct schema_state *, const struct schema_key *, const struct cfg_node *,
                       long long);
void schema_store_int(struct schema_state *, const struct schema_key *, const struct cfg_node *,
                      long long);
void schema_store_string(struct schema_state *, const struct schema_key *, const struct cfg_node *,
                         long long);
struct cfg_list *schema_list(struct schema_state *, const struct schema_key *);
void schema_list_add(struct cfg_list *, char *, const struct cfg_node *);
char *schema_path(const struct schema_state *, const char *);

/* schema_wrapper.c */
void schema_wrapper_merge(struct config *, struct config *, int);
void schema_wrapper_free(struct config *);

#endif
