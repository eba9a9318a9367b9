/*
 * What config.c and schema.c share and nobody else needs: the node tree
 * that libyaml events are turned into, and the error reporter.
 */
#ifndef CONFIG_INT_H
#define CONFIG_INT_H

#include "policy.h"

/* config.c */
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
struct cfg_ctx;
void config_error(struct cfg_ctx *, const struct cfg_loc *, const char *, ...) EG_PRINTF(3, 4);
void config_escape(struct buf *, const char *, size_t);

/* schema.c */
void schema_apply(struct cfg_ctx *, const struct cfg_node *, struct config *, const char *);

#endif
