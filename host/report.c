/*
 * What a run would do, for people: --dry-run's plan (the files merged and
 * how far each is trusted, the providers allowlisted and why, the
 * effective configuration with the source of every value, the state
 * directories, mounts, environment and the container command with its
 * secrets redacted; nothing runs and nothing is contacted), and the
 * settings the configuration holds that the run does not take or that
 * have no effect, so that nothing set is silently dropped.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

/* Wrapper keys that are checked but belong to the next version's subcommands. */
static const struct {
	size_t off;
	int list;
	const char *key;
	const char *what;
} report_unused[] = {
#define U(field, key, what)                                                                        \
	{                                                                                          \
		offsetof(struct config, wrapper.field##_loc), 0, key, what                         \
	}
#define UL(field, key, what)                                                                       \
	{                                                                                          \
		offsetof(struct config, wrapper.field.loc), 1, key, what                           \
	}
    U(state_config_dir, "state.configDir", "skills and init"),
    U(state_data_dir, "state.dataDir", "image metadata"),
    U(image_auto_build, "image.autoBuild", "image build"),
    U(image_strict_init_image, "image.strictInitImage", "Apple's init image"),
    U(image_base, "image.base", "image build"),
    U(image_install_tools, "image.installTools", "image build"),
    U(skills_imported_dir, "skills.importedDir", "skills"),
    U(skills_project_imported_dir, "skills.projectImportedDir", "skills"),
    UL(skills_include, "skills.include", "skills"),
    UL(skills_exclude, "skills.exclude", "skills"),
    U(skills_expose_project_skills, "skills.exposeProjectSkills", "skills"),
    U(skills_expose_global_skills, "skills.exposeGlobalSkills", "skills"),
#undef U
#undef UL
};

static void
report_loc(struct buf *out, const struct cfg_loc *loc)
{
	buf_printf(out, "%s:%u:%u: ", loc->file != NULL ? loc->file : "builtin", loc->line,
	           loc->col);
}

/*
 * Lines "FILE:LINE:COL: ..." for what the configuration holds and the run
 * does not use: wrapper keys a project file may not set, seed 000's keys
 * with no meaning here, and keys of subcommands to come. With policy, also
 * the policy keys a project file may not set (egressd reports those
 * itself when it starts).
 */
void
report_notes(const struct config *cfg, int policy, struct buf *out)
{
	const struct cfg_loc *loc;
	size_t i;

	for (i = 0; policy && i < cfg->nignored; i++) {
		buf_adds(out, HOST_PROG ": ");
		report_loc(out, &cfg->ignored[i].loc);
		config_ignored_text(&cfg->ignored[i], out);
		buf_addc(out, '\n');
	}
	for (i = 0; i < cfg->nwrapper_ignored; i++) {
		buf_adds(out, HOST_PROG ": ");
		report_loc(out, &cfg->wrapper_ignored[i].loc);
		config_ignored_text(&cfg->wrapper_ignored[i], out);
		buf_addc(out, '\n');
	}
	for (i = 0; i < cfg->nnotes; i++) {
		buf_adds(out, HOST_PROG ": ");
		report_loc(out, &cfg->notes[i].loc);
		config_note_text(&cfg->notes[i], out);
		buf_addc(out, '\n');
	}
	for (i = 0; i < EG_NELEM(report_unused); i++) {
		loc = (const struct cfg_loc *)((const char *)cfg + report_unused[i].off);
		if (loc->line == 0)
			continue;
		buf_adds(out, HOST_PROG ": ");
		report_loc(out, loc);
		buf_printf(out, "%s is not used by a run (it is for %s, not in this version)\n",
		           report_unused[i].key, report_unused[i].what);
	}
}

static void
report_indent(FILE *f, const char *text)
{
	const char *p = text, *nl;

	while (*p != '\0') {
		nl = strchr(p, '\n');
		fprintf(f, "  %.*s\n", (int)(nl != NULL ? (size_t)(nl - p) : strlen(p)), p);
		p = nl != NULL ? nl + 1 : p + strlen(p);
	}
}

static const char *
report_trust(const struct conf_file *f)
{
	if (f->role == CONF_ACCEPTED)
		return "trusted: the copy you accepted last";
	if (conf_is_project(f))
		return f->untrusted ? "not accepted: it can only tighten the policy" : "accepted";
	return "trusted";
}

/* The plan, on f: what --dry-run prints. */
void
report_plan(const struct host_plan *p, const struct config *full, const struct conf *c,
            const struct providers *pv, const struct host_state *s, FILE *f)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	fprintf(f, "# " HOST_PROG " --dry-run: nothing was started or contacted\n");
	fprintf(f, "runtime: %s (%s)\n", runtime_name(p->rt), p->rt_path);
	fprintf(f, "image: %s\n", p->image);
	fprintf(f, "network mode: %s%s\n", config_mode_name(p->mode),
	        p->net_admin ? " (sandbox-init gets CAP_NET_ADMIN for its nftables rules)" : "");
	fprintf(f, "container: %s (%s)\n", p->name,
	        p->remove ? "removed at exit" : "kept at exit: --keep or container.remove: false");
	fprintf(f, "payload: uid %u, gid %u%s\n", (unsigned)p->uid, (unsigned)p->gid,
	        p->userns != NULL ? " (the invoking user, mapped by --userns)" : "");
	fprintf(f, "state: %s\n", s->project);
	fprintf(f, "audit log: %s\n", s->audit);
	fprintf(f, "scratch: %s (%s)\n", s->scratch, p->remove ? "removed at exit" : "kept");
	fprintf(f, "\nconfiguration files, in merge order:\n");
	if (c->n == 0)
		fprintf(f, "  (none: the defaults)\n");
	for (i = 0; i < c->n; i++)
		fprintf(f, "  %-20s %s (%s)\n", conf_role_name(c->files[i].role), c->files[i].path,
		        report_trust(&c->files[i]));
	fprintf(f, "\nmodel providers allowlisted:\n");
	if (pv->names.n == 0)
		fprintf(f, "  none\n");
	for (i = 0; i < pv->names.n; i++)
		fprintf(f, "  %s: %s (%s)\n", pv->names.v[i], pv->hosts.v[i], pv->why.v[i]);
	for (i = 0; i < pv->notes.n; i++)
		fprintf(f, "  not allowlisted: %s\n", pv->notes.v[i]);
	fprintf(f, "\neffective policy (what egressd enforces), each value with its source:\n");
	config_dump(full, &b);
	report_indent(f, buf_cstr(&b));
	buf_reset(&b);
	config_wrapper_dump(full, &b);
	fprintf(f, "\nwrapper settings set by a file (the rest are defaults):\n");
	report_indent(f, b.len > 0 ? buf_cstr(&b) : "none\n");
	buf_reset(&b);
	report_notes(full, 1, &b);
	if (b.len > 0) {
		fprintf(f, "\nnot taken, or without effect:\n");
		report_indent(f, buf_cstr(&b));
	}
	for (i = 0; i < p->notes.n; i++)
		fprintf(f, "%s%s\n", i == 0 ? "\nleft out:\n  " : "  ", p->notes.v[i]);
	fprintf(f, "\nmounts:\n");
	for (i = 0; i < p->nmounts; i++)
		fprintf(f, "  %s -> %s (%s; %s)\n", p->mounts[i].source, p->mounts[i].target,
		        p->mounts[i].readonly ? "read-only" : "read-write", p->mounts[i].why);
	fprintf(f, "\nenvironment:\n");
	for (i = 0; i < p->nenv; i++) {
		if (p->env[i].value == NULL)
			fprintf(f, "  %s (passed from your environment; %s)\n", p->env[i].name,
			        p->env[i].why);
		else if (redact_is_secret_name(p->env[i].name, strlen(p->env[i].name)))
			fprintf(f, "  %s=<redacted> (%s)\n", p->env[i].name, p->env[i].why);
		else
			fprintf(f, "  %s=%s (%s)\n", p->env[i].name, p->env[i].value,
			        p->env[i].why);
	}
	for (i = 0; i < p->publish.n; i++)
		fprintf(f, "\npublished: %s (OpenCode's server, on the host's loopback only)\n",
		        p->publish.v[i]);
	buf_reset(&b);
	redact_argv(&p->argv, &b);
	fprintf(f, "\ncommand:\n  %s\n", buf_cstr(&b));
	buf_free(&b);
}
