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

/* schema.c */
void schema_apply(struct cfg_ctx *, const struct cfg_node *, struct config *, const char *);

#endif
