/*
 * opencode-sandbox, the host-side command: it reads the user's global and
 * project configuration with the policy module, checks and merges it,
 * decides what the container gets (mounts, environment, the policy files
 * sandbox-init enforces) and runs OpenCode in the sandbox image with
 * podman, docker or Apple's container. main.c is the program; the rest is
 * a library the unit tests link. Nothing here runs through a shell: every
 * command is an argv array.
 */
#ifndef HOST_H
#define HOST_H

#include <sys/types.h>

#include <stdio.h>

#include "policy.h"

#define HOST_PROG          "opencode-sandbox"
#define HOST_DEFAULT_IMAGE "localhost/opencode-sandbox:latest"
#define HOST_TARGET        "/workspace"                /* the project in the container */
#define HOST_HOME          "/home/opencode"            /* the payload's home in the image */
#define HOST_CONFIG_DIR    "/sandbox/config"           /* the trusted policy files, read-only */
#define HOST_LOG_DIR       "/sandbox/logs"             /* the run's audit log */
#define HOST_OVERLAY_DIR   "/etc/opencode-sandbox/run" /* the OpenCode overlay, read-only */
#define HOST_AUDIT_FILE    "audit-events.jsonl"
#define HOST_PAYLOAD_UID   1000 /* the image's opencode user (OPENCODE_UID) */
#define HOST_PAYLOAD_GID   1000
#define HOST_EXIT_USAGE    2   /* usage, configuration or a refused run: nothing started */
#define HOST_EXIT_RUNTIME  125 /* the runtime could not run the container */

/* strv.c: a growable NULL-terminated vector of strings it owns */
struct strv {
	char **v;
	size_t n;
	size_t cap;
};
void strv_add(struct strv *, const char *);
void strv_addf(struct strv *, const char *, ...) EG_PRINTF(2, 3);
void strv_add_owned(struct strv *, char *);
void strv_free(struct strv *);
int strv_has(const struct strv *, const char *);
char *host_sha256_hex(const void *, size_t);
int host_read_fd(int, size_t, char **, size_t *);
int host_read_file(const char *, size_t, char **, size_t *);
int host_write_file(const char *, const char *, size_t, mode_t);
int host_mkdirs(const char *, mode_t);
const char *host_home(void);
void host_path_show(struct buf *, const char *);
char *host_xdg(const char *, const char *);
char *host_expand(const char *);

/* args.c: the command line (seed 003 §6.3) */
enum host_cmd {
	HOST_CMD_RUN, /* OpenCode in the sandbox: the run path */
	HOST_CMD_SUB, /* a wrapper command: doctor, init, skills, ... help */
};
struct host_args {
	enum host_cmd cmd;
	const char *word;    /* SUB: the command */
	struct strv sub;     /* SUB: every other argument, for the command to parse */
	const char *project; /* as written, or NULL for the working directory */
	struct strv oc;      /* OpenCode's arguments, "opencode" not included */
	struct strv configs; /* --config FILE, in order */
	struct strv allow;   /* --allow HOST */
	const char *runtime;
	const char *image;
	const char *mode;
	const char *cpus;
	const char *memory;
	const char *upstream_ca;
	int readonly;
	int dry_run;
	int print_command;
	int keep;
	int debug;
	int no_providers;
	int accept_changes;
};
enum args_kind {
	ARGS_BOOL,   /* int */
	ARGS_STRING, /* const char *, the last one given wins */
	ARGS_LIST,   /* struct strv, repeatable */
};
struct args_opt {
	const char *name; /* without "--" */
	enum args_kind kind;
	size_t off;        /* of the field in the command's options */
	const char *value; /* what the value is, or NULL without one */
};
extern const struct args_opt args_run_opts[];
extern const size_t args_run_nopts;
int args_parse(struct host_args *, int, char **, struct buf *);
void args_free(struct host_args *);
int args_options(const struct args_opt *, size_t, void *, const struct strv *, struct strv *,
                 struct buf *);

/* help.c, and the topics scripts/clidoc makes from docs/man/opencode-sandbox.1.md */
struct help_topic {
	const char *name;           /* "" (the overview), "doctor", "skills import" */
	const char *text;           /* as printed */
	const char *const *options; /* the command's options, "--json", NULL-terminated */
};
extern const struct help_topic help_topics[];
extern const size_t help_ntopics;
const struct help_topic *help_find(const char *);
int help_main(const struct strv *);
int help_for(const char *, const struct strv *);
void help_hint(const char *, const char *);

/* conf.c: finding, reading and merging the configuration files */
enum conf_role {
	CONF_DEFAULTS,  /* the wrapper's defaults, below every file */
	CONF_GLOBAL,    /* $XDG_CONFIG_HOME/opencode-sandbox/config.yaml */
	CONF_PROJECT,   /* the nearest .opencode-sandbox.yaml, from the project up */
	CONF_SEED,      /* <project>/.opencode/sandbox.json (seed 000) */
	CONF_ACCEPTED,  /* a project file as last accepted (a copy in the state dir) */
	CONF_FLAG,      /* --config FILE */
	CONF_PROVIDERS, /* the model providers' hosts, made by providers.c */
	CONF_CLI,       /* --network-mode, --readonly, --allow, ... */
};
#define CONF_MAX_FILES 48
struct conf_file {
	enum conf_role role;
	char *path; /* absolute, or "(providers)" / "(command line)" */
	char *data; /* read once: what is checked is what is handed on */
	size_t len;
	int untrusted;
};
struct conf {
	struct conf_file files[CONF_MAX_FILES];
	size_t n;
};
int conf_add_file(struct conf *, enum conf_role, const char *, struct buf *);
void conf_add_text(struct conf *, enum conf_role, const char *, char *, size_t, int);
int conf_discover(struct conf *, const struct host_args *, const char *, struct buf *);
void conf_cli_layer(struct conf *, const struct host_args *);
struct config *conf_load(const struct conf *, int, struct buf *);
void conf_free(struct conf *);
const char *conf_role_name(enum conf_role);
int conf_is_project(const struct conf_file *);

/* state.c: the host's state directories and the run's */
struct host_state {
	char *root;      /* $XDG_STATE_HOME/opencode-sandbox or state.stateDir */
	char *source;    /* the project's resolved path */
	char *project;   /* root/projects/<slug>-<hash> */
	char *run;       /* project/runs/<stamp>-<random> */
	char *logs;      /* run/logs: the audit log, mounted at /sandbox/logs */
	char *scratch;   /* run/scratch: staged home, policy files; removed unless --keep */
	char *audit;     /* logs/audit-events.jsonl */
	char run_id[32]; /* <stamp>-<random> */
	char slug[40];
};
int state_plan(struct host_state *, const struct config *, const char *, struct buf *);
int state_create(const struct host_state *, struct buf *);
void state_free(struct host_state *);
int state_remove_tree(const char *);
void state_random(char *, size_t);
struct state_summary {
	unsigned long requests;
	unsigned long blocked;
	unsigned long flagged;
	unsigned long lines;
	int readable;
};
void state_summarize(const char *, struct state_summary *);

/* consent.c: the project policy the user accepted */
enum consent_answer {
	CONSENT_TRUSTED,   /* unchanged, or accepted now: the files are trusted */
	CONSENT_UNTRUSTED, /* declined: they only tighten, over what was accepted before */
	CONSENT_REFUSED,   /* changed, nobody to ask, not accepted: do not run */
};
struct consent {
	char *dir;         /* <project state>/accepted */
	char *digest;      /* of the current project files, or NULL without any */
	char *accepted;    /* the digest last accepted, or NULL */
	struct strv paths; /* the accepted copies' original paths, by role */
	struct strv roles;
	struct strv copies; /* their text */
	int changed;
};
int consent_load(struct consent *, const char *, const struct conf *);
void consent_describe(const struct config *, const struct config *, struct buf *);
int consent_record(const struct consent *, const struct conf *, struct buf *);
void consent_free(struct consent *);

/* providers.c: the model providers the user has set up, and their hosts */
struct providers_profile {
	const char *name;
	const char *yaml;
};
extern const struct providers_profile providers_profiles[];
extern const size_t providers_nprofiles;
struct providers {
	struct strv names; /* provider ids allowlisted */
	struct strv hosts; /* "host" per name, in the same order */
	struct strv why;   /* where each came from */
	struct strv env;   /* API key variables passed to the container */
	struct strv notes; /* providers that could not be allowlisted, and why */
	char *yaml;        /* the policy layer allowlisting the hosts, or NULL */
};
int providers_find(struct providers *, const struct config *, const char *, const char *);
void providers_free(struct providers *);
char *providers_strip_jsonc(const char *, size_t);

/* runtime.c: podman, docker and Apple's container */
enum host_runtime {
	HOST_RT_PODMAN,
	HOST_RT_DOCKER,
	HOST_RT_APPLE,
};
struct host_mount {
	char *source; /* absolute host path */
	char *target;
	int readonly;
	int tmpfs;
	const char *why;
};
struct host_env {
	char *name;
	char *value; /* NULL: passed from opencode-sandbox's own environment */
	const char *why;
};
struct host_plan {
	enum host_runtime rt;
	char *rt_path; /* as found in PATH */
	char *image;
	char *name; /* of the container */
	enum policy_mode mode;
	int tty;
	int remove;
	int net_admin;
	char *cpus;
	char *memory;
	char *workdir;
	char *userns; /* rootless podman: keep-id:uid=...,gid=... */
	uid_t uid;    /* the payload, as the host sees its files */
	gid_t gid;
	int set_user;    /* sandbox-init --user uid:gid */
	int audit_owner; /* the audit log is given to uid:gid at the end */
	int chown;       /* root: the staged home is given to uid:gid */
	struct host_mount *mounts;
	size_t nmounts;
	struct host_env *env;
	size_t nenv;
	struct strv publish; /* "127.0.0.1:PORT:PORT" */
	struct strv init;    /* sandbox-init's options */
	struct strv notes;   /* what was left out of the mounts, and why */
	struct strv oc;      /* "opencode" and its arguments */
	struct strv argv;    /* the whole command */
};
const char *runtime_name(enum host_runtime);
int runtime_select(struct host_plan *, const char *, struct buf *);
int runtime_service(const struct host_plan *, struct buf *);
int runtime_image(const struct host_plan *, const char *, struct buf *);
int runtime_cap_add(const struct host_plan *);
int runtime_preflight(const struct host_plan *, struct buf *);
int runtime_query(const struct host_plan *, const char *const *, struct buf *);
void runtime_argv(struct host_plan *);
void runtime_kill_argv(const struct host_plan *, const char *, struct strv *);
void runtime_rm_argv(const struct host_plan *, struct strv *);

/* plan.c: from the effective configuration to what the container gets */
void plan_mount(struct host_plan *, const char *, const char *, int, const char *);
void plan_env(struct host_plan *, const char *, const char *, const char *);
void plan_free(struct host_plan *);
struct effective;
struct skills;
int plan_build(struct host_plan *, const struct host_args *, const struct effective *,
               const struct skills *, struct buf *);
int plan_serve_ports(const struct strv *, struct strv *, int *);
void plan_default_cpus(char *, size_t);

/* mounts.c: path safety and what the container sees of the host */
const char *mounts_check_project(const char *, char *, size_t);
const char *mounts_check_source(const char *, int);
void mounts_host_config(struct host_plan *, const struct config *, const struct skills *,
                        const char *, const char *);
int mounts_extra(struct host_plan *, const struct config *, struct buf *);
int mounts_stage(const struct host_plan *, uid_t, gid_t, int, struct buf *);

/* stage.c: the files a run hands to the container */
int stage_write(const struct host_plan *, struct effective *, const struct skills *, struct buf *);

/* report.c: --dry-run's account of the plan, and what the configuration did not take */
void report_plan(const struct host_plan *, const struct effective *, const struct skills *, FILE *);
void report_notes(const struct config *, int, struct buf *);

/* redact.c: printing a command without its secrets */
int redact_is_secret_name(const char *, size_t);
void redact_argv(const struct strv *, struct buf *);
void redact_word(const char *, struct buf *);

/* exec.c: running commands without a shell */
int exec_capture(char *const *, struct buf *, int);
int exec_run(const struct host_plan *, int);
int exec_quiet(char *const *);
int exec_inherit(char *const *, char *const *);

/* effective.c: the configuration a run would use, for the run and the commands */
struct effective {
	char project[4096]; /* resolved, or "" without a project */
	struct conf conf;
	struct consent consent;
	struct providers providers;
	struct host_state state;
	struct config *own;     /* the user's own files alone: defaults, global, --config */
	struct config *full;    /* every file merged: what a run enforces */
	struct config *trusted; /* the trusted files alone */
	char *oc_config;        /* the host's $XDG_CONFIG_HOME/opencode */
	char *oc_data;          /* the host's $XDG_DATA_HOME/opencode */
	int declined;           /* the project files changed since accepted: tighten only */
};
#define EFFECTIVE_F_PROVIDERS 0x1 /* the model providers' layer, as a run has it */
int effective_state(const struct conf *, const char *, struct host_state *, struct config **,
                    struct buf *);
struct config *effective_load_accepted(const struct conf *, const struct consent *, struct buf *);
void effective_decline(struct conf *, const struct consent *);
int effective_providers(struct conf *, const char *, const char *, struct providers *,
                        struct buf *);
int effective_merge(const struct conf *, struct config **, struct config **, struct buf *);
char *effective_opencode_dir(const char *, const char *);
int effective_open(struct effective *, const char *, const struct strv *, int, struct buf *);
int effective_change(const struct effective *, struct buf *, struct buf *);
void effective_free(struct effective *);
void effective_describe_files(const struct effective *, struct buf *);

/* skillmd.c: a skill's SKILL.md frontmatter */
struct skillmd {
	char *name;
	char *description;
	size_t name_start; /* from the end of the name's key to the end of its value */
	size_t name_end;
	int name_block; /* a block scalar (| or >): its text ends with a line break */
};
const char *skillmd_check_name(const char *);
const char *skillmd_parse(const char *, size_t, struct skillmd *);
char *skillmd_rename(const char *, size_t, const struct skillmd *, const char *, size_t *);
void skillmd_free(struct skillmd *);

/* skilltree.c: a skill's files, walked, copied and hashed */
struct skilltree {
	const char *label;    /* for messages */
	const char *root;     /* follow: where a link may lead */
	const char *base;     /* not NULL: the skill is opened from here, no link followed */
	int follow;           /* an import: links inside root are followed */
	const char *skill_md; /* not NULL: the top SKILL.md's text instead of the file's */
	size_t skill_md_len;
	struct buf *err;
	char *sha256;      /* the result */
	struct strv notes; /* what a run's copy left out */
};
int skilltree_open_under(const char *, const char *, int);
int skilltree_copy(struct skilltree *, const char *, const char *);
void skilltree_free(struct skilltree *);

/* skillset.c and skills.c: imported skills, the project's, the host's; the run's set */
enum skill_scope {
	SKILL_GLOBAL,  /* imported into the global directory */
	SKILL_PROJECT, /* imported into the project's */
	SKILL_NATIVE,  /* the project's own, found by OpenCode in the mounted project */
	SKILL_HOST,    /* the host's ~/.config/opencode/skills and the like */
};
enum skill_status {
	SKILL_ACTIVE,      /* imported, exposed by a run */
	SKILL_EXCLUDED,    /* imported, left out by skills.include/exclude */
	SKILL_DUPLICATE,   /* imported in both scopes: a run refuses */
	SKILL_MISSING,     /* in the manifest, its directory gone */
	SKILL_UNLISTED,    /* a directory the manifest does not list */
	SKILL_PROJECT_OWN, /* the project's own: OpenCode finds it in the mount */
	SKILL_AVAILABLE,   /* the host's: available to import */
	SKILL_EXPOSED,     /* the host's, exposed by skills.exposeGlobalSkills */
	SKILL_IMPORTED,    /* the host's, the source of an imported skill */
	SKILL_HIDDEN,      /* the project's, hidden by skills.exposeProjectSkills: false */
	SKILL_INVALID,
};
struct skill {
	enum skill_scope scope;
	enum skill_status status;
	char *name;
	char *description;
	char *dir;
	const char *base; /* the project's: opened from here, nothing followed */
	char *source;     /* imported: from where */
	char *sha256;     /* imported: the manifest's */
	char *error;      /* why it is not exposed */
};
struct skills {
	struct skill *v;
	size_t n;
	char *global_dir;
	char *project_dir;  /* NULL without a project */
	char *project_base; /* the directory nothing under which is followed */
};
extern const char *const skills_host_dirs[];
extern const size_t skills_nhost_dirs;
const char *skills_scope_name(enum skill_scope);
const char *skills_status_name(enum skill_status);
const char *skills_read_md(const char *, const char *, struct skillmd *, char **, size_t *);
void skills_subdirs(const char *, struct strv *);
size_t skills_count(const char *);
char *skills_manifest_path(const char *);
struct json_t;
struct json_t *skills_manifest_load(const char *, const char *, struct buf *);
int skills_dirs(struct skills *, const struct effective *, struct buf *);
int skills_find(struct skills *, const struct effective *, struct buf *);
int skills_stage(const struct skills *, const char *, struct strv *, struct buf *);
void skills_free(struct skills *);

/* image.c: the image's build inputs, labels and builds */
#define IMAGE_LABEL_INPUTS_NAME  "io.opencode-sandbox.inputs"
#define IMAGE_LABEL_VERSION_NAME "io.opencode-sandbox.version"
char *image_inputs_dir(struct buf *);
char *image_inputs_digest(const char *, struct buf *);
char *image_inspect(const struct host_plan *, const char *, const char *);
char *image_label(const struct host_plan *, const char *, const char *);

/* run.c: the run path */
int run_main(struct host_args *);

/* the wrapper's commands: each parses its own arguments (args_options) with its table */
extern const struct args_opt policytest_opts[];
extern const size_t policytest_opts_n;
extern const struct args_opt doctor_opts[];
extern const size_t doctor_opts_n;
extern const struct args_opt init_opts[];
extern const size_t init_opts_n;
extern const struct args_opt skills_import_opts[];
extern const size_t skills_import_opts_n;
extern const struct args_opt skills_list_opts[];
extern const size_t skills_list_opts_n;
extern const struct args_opt cmdconfig_path_opts[];
extern const size_t cmdconfig_path_opts_n;
extern const struct args_opt cmdconfig_show_opts[];
extern const size_t cmdconfig_show_opts_n;
extern const struct args_opt image_build_opts[];
extern const size_t image_build_opts_n;
extern const struct args_opt image_upgrade_opts[];
extern const size_t image_upgrade_opts_n;
int doctor_main(const struct strv *);
int init_main(const struct strv *);
int skills_main(const struct strv *);
int policytest_main(const struct strv *);
int cmdconfig_main(const struct strv *);
int image_main(const struct strv *);
int image_upgrade_main(const struct strv *);

#endif
