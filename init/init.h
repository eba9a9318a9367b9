/*
 * The launch module: what sandbox-init, the image's PID 1, is made of. It
 * binds egressd's listeners, starts egressd as its own user, puts the
 * network mode in force with nftables, drops the payload to an
 * unprivileged user with no capabilities, and probes the result
 * (--selftest). launcher.c is the program; the rest is a library the unit
 * tests link.
 */
#ifndef INIT_H
#define INIT_H

#include <sys/types.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

#define LAUNCH_RUN_DIR        "/run/opencode-sandbox"
#define LAUNCH_GLOBAL_CONFIG  "/etc/opencode-sandbox/policy.yaml"
#define LAUNCH_PROJECT_CONFIG "/workspace/.opencode-sandbox.yaml"
#define LAUNCH_LOG_DIR        "/sandbox/logs" /* the image's mount point for the audit log */
#define LAUNCH_AUDIT_FILE     "audit-events.jsonl"
#define LAUNCH_CONTROL_SOCKET "egressd.sock" /* in the run directory: policyctl's default */
#define LAUNCH_SYSTEM_CA      "/etc/ssl/certs/ca-certificates.system.crt" /* kept by the image */
#define LAUNCH_MAX_ARGS       128

/* nft.c */
#define NFT_TABLE "opencode_sandbox"
/*
 * The NFLOG group the drop rules log to (rate-limited), read by egressd
 * for the audit. Groups are per network namespace.
 */
#define NFT_LOG_GROUP 7
#define NFT_LOG_RATE  "limit rate 20/second burst 50 packets"
#define NFT_MAX_SERVE 8
struct nft_rules {
	enum policy_mode mode;
	uid_t egress_uid;          /* the one uid that may leave (strict) */
	uint16_t transparent_port; /* TCP redirect target on loopback */
	uint16_t dns_port;         /* UDP and TCP 53 redirect target */
	/* ports the payload serves the host on: their replies may leave */
	uint16_t serve_ports[NFT_MAX_SERVE];
	size_t nserve;
};
void nft_rules_build(const struct nft_rules *, struct buf *);
int nft_rules_apply(const struct nft_rules *, char *, size_t);
const char *nft_rules_compare(const struct nft_rules *, const char *);
int nft_rules_verify(const struct nft_rules *, char *, size_t);
int nft_rules_remove(char *, size_t);
int nft_run(const char *, struct buf *, char *, size_t);

/* priv.c */
struct priv_user {
	uid_t uid;
	gid_t gid;
	char name[64];
	char home[256];
};
const char *priv_user_lookup(const char *, struct priv_user *);
int priv_drop(const struct priv_user *, char *, size_t);
int priv_check_dropped(const struct priv_user *, char *, size_t);
int priv_keep_only_kill(char *, size_t);
int priv_keep_only(uint64_t, char *, size_t);
int priv_has_cap(int);

/* env.c */
struct env_opts {
	const char *proxy_url; /* http://127.0.0.1:PORT */
	const char *ca_cert;   /* the run CA (PEM), or NULL */
	const char *ca_bundle; /* system store + run CA, or NULL */
	const struct priv_user *user;
	enum policy_mode mode;
};
char **env_build(char *const *, const struct env_opts *);
void env_free(char **);
const char *env_get(char *const *, const char *);
int env_resolvers(const char *, char **, size_t, size_t *);
int env_write_resolv(const char *, char *, size_t);

/* spawn.c */
enum spawn_listener {
	SPAWN_PROXY,
	SPAWN_TRANSPARENT,
	SPAWN_DNS,
	SPAWN_DNS_TCP,
	SPAWN_TRANSPARENT6,
	SPAWN_DNS6,
	SPAWN_DNS_TCP6,
	SPAWN_NFLOG,   /* not a listener: the netlink socket of NFT_LOG_GROUP */
	SPAWN_CONTROL, /* egressd's control socket (Unix), in the run directory */
	SPAWN_NLISTENERS,
};
struct spawn_egressd {
	const char *path; /* the egressd executable */
	char *argv[LAUNCH_MAX_ARGS];
	int argc;
	int fds[SPAWN_NLISTENERS]; /* -1: not bound */
	uint16_t proxy_port;
	uint16_t transparent_port;
	uint16_t dns_port;
	pid_t pid;
};
const char *spawn_find_egressd(const char *, char *, size_t);
int spawn_supports(const char *, const char *);
int spawn_bind_listeners(struct spawn_egressd *, char *, size_t);
int spawn_open_nflog(struct spawn_egressd *, uint16_t, char *, size_t);
int spawn_open_control(struct spawn_egressd *, const char *, char *, size_t);
void spawn_close_listeners(struct spawn_egressd *);
void spawn_close_from(int);
void spawn_listen_env(const struct spawn_egressd *, char *, size_t, char *, size_t);
int spawn_egressd_start(struct spawn_egressd *, const struct priv_user *, char *, size_t);
int spawn_wait_ready(int, pid_t, int, char *, size_t);

/* selftest.c */
struct selftest_opts {
	const char *addr;    /* an outside IPv4 address the policy does not allow */
	const char *addr6;   /* the same for IPv6 */
	const char *host;    /* a name the policy blocks */
	const char *doh_url; /* a DNS-over-HTTPS endpoint */
	const char *https;   /* an HTTPS URL the policy allows (trust check) */
	pid_t egressd_pid;
	const char *run_dir; /* where the run's CA files are */
	int json;
	int timeout_ms;
};
int selftest_run(const struct selftest_opts *);

/* opts.c */
#define LAUNCH_MAX_CONFIG 32
#define LAUNCH_MAX_DNS    8
struct launcher {
	char *flag_configs[LAUNCH_MAX_CONFIG];
	size_t nflag_configs;
	const char *global_config;
	const char *project_config;               /* the default, until --project-config */
	char *project_configs[LAUNCH_MAX_CONFIG]; /* each --project-config, in order */
	size_t nproject_configs;
	const char *home;        /* --home: the payload's HOME */
	const char *upstream_ca; /* --upstream-ca: a CA upstreams may also be signed by */
	int audit_owner_set;     /* --audit-owner: the audit log is given to it at the end */
	uid_t audit_uid;
	gid_t audit_gid;
	uint16_t serve_ports[NFT_MAX_SERVE];
	size_t nserve;
	char upstream_trust[PATH_MAX]; /* the system store and --upstream-ca, for egressd */
	char extra_ca[PATH_MAX];       /* the run CA and --upstream-ca, NODE_EXTRA_CA_CERTS */
	const char *mode_flag;
	const char *user_spec;
	const char *egress_spec;
	const char *egressd_flag;
	char *extra_args[LAUNCH_MAX_CONFIG];
	size_t nextra_args;
	const char *run_dir;
	const char *log_dir;
	const char *trust_store;
	const char *resolv_conf;
	int ready_timeout_ms;
	int selftest;
	struct selftest_opts st;
	char **cmd;

	enum policy_mode mode;
	int fail_closed;
	char *audit_path;
	struct config_file files[2 * LAUNCH_MAX_CONFIG + 2]; /* in egressd's order */
	size_t nfiles;
	struct priv_user user;
	struct priv_user egress;
	struct spawn_egressd eg;
	char egressd_path[PATH_MAX];
	char ca_cert[PATH_MAX];
	char ca_bundle[PATH_MAX];
	char mode_file[PATH_MAX];
	char proxy_url[64];
	char *upstream[LAUNCH_MAX_DNS];
	size_t nupstream;
	pid_t payload;
	int payload_status;
	int payload_done;
	int egressd_done;
	int stopped_for_egressd;
};
void opts_usage(FILE *);
int opts_parse(struct launcher *, int, char **);
void opts_defaults(struct launcher *);
int opts_config(struct launcher *);

#endif
