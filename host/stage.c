/*
 * The files a run hands to the container, written into the run's scratch
 * directory before it starts. policy.yaml is the trusted configuration as
 * the host merged it (config_dump's text, which loads back to the same
 * values; run.c has pointed its audit log at the run's log directory),
 * with block list files copied beside it; project-N.yaml are the project files that
 * only tighten, the very bytes the host checked; upstream-ca.pem the
 * private CA; and the OpenCode overlay (autoupdate off, the providers,
 * permissions). sandbox-init reads the policy files from a read-only
 * mount, so what egressd enforces is what the host validated.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

#define STAGE_MAX_LIST (256 * 1024 * 1024)
#define STAGE_MAX_CA   (1024 * 1024)

static int
stage_file(const char *dir, const char *name, const char *data, size_t len, struct buf *err)
{
	char *path = xasprintf("%s/%s", dir, name);

	if (host_write_file(path, data, len, 0644) == -1) {
		buf_printf(err, "%s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	return 0;
}

/* Block list files: copied in (readable by egressd's uid whatever their mode), paths rewritten. */
static int
stage_lists(struct config *trusted, const char *dir, struct buf *err)
{
	struct cfg_list *l = &trusted->blocklist_files;
	char *lists, *data, *name;
	const char *base;
	size_t i, len;

	if (l->n == 0)
		return 0;
	lists = xasprintf("%s/lists", dir);
	if (mkdir(lists, 0755) == -1 && errno != EEXIST) {
		buf_printf(err, "%s: %s", lists, strerror(errno));
		free(lists);
		return -1;
	}
	for (i = 0; i < l->n; i++) {
		if (host_read_file(l->items[i].value, STAGE_MAX_LIST, &data, &len) == -1) {
			buf_printf(err, "%s: %s", l->items[i].value, strerror(errno));
			free(lists);
			return -1;
		}
		base = strrchr(l->items[i].value, '/') != NULL ? strrchr(l->items[i].value, '/') + 1
		                                               : l->items[i].value;
		name = xasprintf("%zu-%s", i + 1, base);
		if (stage_file(lists, name, data, len, err) == -1) {
			free(data);
			free(name);
			free(lists);
			return -1;
		}
		free(data);
		free(l->items[i].value);
		l->items[i].value = xasprintf(HOST_CONFIG_DIR "/lists/%s", name);
		free(name);
	}
	free(lists);
	return 0;
}

/* The run's trusted policy, as one file sandbox-init reads as its global file. */
static int
stage_policy(struct config *trusted, const char *dir, struct buf *err)
{
	struct buf text;
	int rc;

	if (stage_lists(trusted, dir, err) == -1)
		return -1;
	buf_init(&text);
	buf_adds(&text, "# written by " HOST_PROG " for one run: the trusted configuration it "
	                "checked and merged\n");
	config_dump(trusted, &text);
	rc = stage_file(dir, "policy.yaml", text.data, text.len, err);
	buf_free(&text);
	return rc;
}

/* A CA file: PEM with at least one certificate, copied whole. */
static int
stage_ca(const struct config *full, const char *dir, struct buf *err)
{
	const char *ca = full->wrapper.container_upstream_ca;
	char *path, *data;
	size_t len;
	int rc;

	if (ca == NULL)
		return 0;
	path = host_expand(ca);
	if (host_read_file(path, STAGE_MAX_CA, &data, &len) == -1) {
		buf_printf(err, "upstream CA %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	if (strstr(data, "-----BEGIN CERTIFICATE-----") == NULL) {
		buf_printf(err, "upstream CA %s: no PEM certificate in it", path);
		free(path);
		free(data);
		return -1;
	}
	rc = stage_file(dir, "upstream-ca.pem", data, len, err);
	free(path);
	free(data);
	return rc;
}

static json_t *
stage_list_json(const struct cfg_list *l)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < l->n; i++)
		json_array_append_new(a, json_string(l->items[i].value));
	return a;
}

/*
 * OpenCode's overlay (OPENCODE_CONFIG, merged over the user's config):
 * autoupdate off (the image's version is the one that runs), the
 * providers OpenCode may use (the configured list, else the ones this run
 * allowlisted, so that models it cannot reach are not offered), and the
 * configured permissions.
 */
static int
stage_overlay(const struct config *full, const struct providers *pv, const char *dir,
              struct buf *err)
{
	const struct config_wrapper *w = &full->wrapper;
	json_t *o = json_object(), *perm;
	char *text;
	size_t i;
	int rc;

	json_object_set_new(o, "$schema", json_string("https://opencode.ai/config.json"));
	json_object_set_new(
	    o, "autoupdate",
	    json_boolean(w->opencode_autoupdate_loc.line && w->opencode_autoupdate));
	if (w->opencode_enabled_providers.set)
		json_object_set_new(o, "enabled_providers",
		                    stage_list_json(&w->opencode_enabled_providers));
	else if (pv->names.n > 0) {
		json_t *a = json_array();

		for (i = 0; i < pv->names.n; i++)
			json_array_append_new(a, json_string(pv->names.v[i]));
		json_object_set_new(o, "enabled_providers", a);
	}
	if (w->opencode_disabled_providers.set)
		json_object_set_new(o, "disabled_providers",
		                    stage_list_json(&w->opencode_disabled_providers));
	if (w->opencode_permission_edit_loc.line || w->opencode_permission_bash_loc.line) {
		perm = json_object();
		if (w->opencode_permission_edit_loc.line)
			json_object_set_new(
			    perm, "edit",
			    json_string(config_permission_name(w->opencode_permission_edit)));
		if (w->opencode_permission_bash_loc.line)
			json_object_set_new(
			    perm, "bash",
			    json_string(config_permission_name(w->opencode_permission_bash)));
		json_object_set_new(o, "permission", perm);
	}
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	rc = stage_file(dir, "opencode.json", text, strlen(text), err);
	free(text);
	return rc;
}

static int
stage_dir(const char *path, mode_t mode, struct buf *err)
{
	if (host_mkdirs(path, mode) == -1) {
		buf_printf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Write everything the plan mounts from the scratch and state
 * directories. trusted is rewritten on the way (audit path, list files).
 */
int
stage_write(const struct host_plan *p, struct config *trusted, const struct config *full,
            const struct conf *c, const struct providers *pv, const struct host_state *s,
            struct buf *err)
{
	char *config = xasprintf("%s/config", s->scratch);
	char *overlay = xasprintf("%s/opencode", s->scratch);
	char *home = xasprintf("%s/home", s->scratch);
	char *share = xasprintf("%s/opencode/share", s->project);
	char *st = xasprintf("%s/opencode/state", s->project);
	char name[32];
	size_t i, k = 0;
	int rc = -1;

	if (stage_dir(config, 0755, err) == -1 || stage_dir(overlay, 0755, err) == -1 ||
	    stage_dir(home, 0755, err) == -1 || stage_dir(share, 0700, err) == -1 ||
	    stage_dir(st, 0700, err) == -1)
		goto out;
	if (stage_policy(trusted, config, err) == -1 || stage_ca(full, config, err) == -1)
		goto out;
	for (i = 0; i < c->n; i++) {
		if (!c->files[i].untrusted)
			continue;
		snprintf(name, sizeof name, "project-%zu.yaml", ++k);
		if (stage_file(config, name, c->files[i].data, c->files[i].len, err) == -1)
			goto out;
	}
	if (stage_overlay(full, pv, overlay, err) == -1)
		goto out;
	rc = mounts_stage(p, p->uid, p->gid, p->chown, err);
out:
	free(config);
	free(overlay);
	free(home);
	free(share);
	free(st);
	return rc;
}
