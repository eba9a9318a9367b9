/*
 * The model providers a run allowlists. Practical mode is read-only, and
 * OpenCode's model calls are POSTs, so a run that allowlisted nothing could
 * not reach its model. The providers are those the user has set up on the
 * host: the provider and model settings of ~/.config/opencode/opencode.json
 * (its baseURL for a custom one), the entries of auth.json, and API key
 * variables in the environment, matched against the image's provider
 * profiles (image/profiles/, compiled in). With nothing set up, OpenCode
 * uses its own free models at opencode.ai, so that profile is the one.
 * Only the host's files count: the project's opencode.json is the agent's
 * to write. opencode.enabledProviders and disabledProviders narrow the set.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "host.h"

#define PROVIDERS_MAX_JSON (1024 * 1024)

/* API key variables OpenCode reads for the providers of the profiles. */
static const struct {
	const char *var;
	const char *provider;
} providers_env[] = {
    {"ANTHROPIC_API_KEY", "anthropic"},
    {"OPENAI_API_KEY", "openai"},
    {"OPENROUTER_API_KEY", "openrouter"},
    {"GEMINI_API_KEY", "google"},
    {"GOOGLE_GENERATIVE_AI_API_KEY", "google"},
    {"GROQ_API_KEY", "groq"},
    {"MISTRAL_API_KEY", "mistral"},
    {"DEEPSEEK_API_KEY", "deepseek"},
    {"XAI_API_KEY", "xai"},
    {"OPENCODE_API_KEY", "opencode"},
};

/*
 * JSON with comments (OpenCode's opencode.jsonc, and comments its
 * opencode.json accepts too) to plain JSON: comments outside strings
 * become spaces, a comma before a closing bracket is dropped.
 */
char *
providers_strip_jsonc(const char *s, size_t len)
{
	char *out = xmalloc(len + 1);
	size_t i = 0, o = 0, j;
	int str = 0;

	while (i < len) {
		char c = s[i];

		if (str) {
			out[o++] = c;
			if (c == '\\' && i + 1 < len)
				out[o++] = s[++i];
			else if (c == '"')
				str = 0;
			i++;
		} else if (c == '"') {
			str = 1;
			out[o++] = s[i++];
		} else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			for (i += 2; i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'); i++)
				;
			i = i + 2 <= len ? i + 2 : len;
			out[o++] = ' ';
		} else if (c == ',') {
			for (j = i + 1; j < len && strchr(" \t\r\n", s[j]) != NULL; j++)
				;
			if (j < len && (s[j] == '}' || s[j] == ']'))
				i++;
			else
				out[o++] = s[i++];
		} else
			out[o++] = s[i++];
	}
	out[o] = '\0';
	return out;
}

static json_t *
providers_read_json(const char *path)
{
	char *data, *plain;
	size_t len;
	json_t *j;

	if (host_read_file(path, PROVIDERS_MAX_JSON, &data, &len) == -1)
		return NULL;
	plain = providers_strip_jsonc(data, len);
	j = json_loads(plain, JSON_REJECT_DUPLICATES, NULL);
	free(data);
	free(plain);
	if (j != NULL && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* A provider id as OpenCode writes them: letters, digits, '-', '_', '.'. */
static int
providers_id_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || strlen(s) > 64)
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

struct providers_found {
	struct strv ids;
	struct strv why;
	json_t *config; /* the host's opencode.json, or NULL */
};

static void
providers_add(struct providers_found *f, const char *id, const char *why)
{
	if (!providers_id_ok(id) || strv_has(&f->ids, id))
		return;
	strv_add(&f->ids, id);
	strv_add(&f->why, why);
}

/* "provider/model" settings name their provider. */
static void
providers_model(struct providers_found *f, json_t *cfg, const char *key)
{
	const char *m = json_string_value(json_object_get(cfg, key));
	const char *slash;
	char *id;

	if (m == NULL || (slash = strchr(m, '/')) == NULL)
		return;
	id = xstrndup(m, (size_t)(slash - m));
	providers_add(f, id,
	              key[0] == 'm' ? "model in opencode.json" : "small_model in opencode.json");
	free(id);
}

static const char *
providers_profile(const char *id)
{
	size_t i;

	for (i = 0; i < providers_nprofiles; i++)
		if (strcmp(providers_profiles[i].name, id) == 0)
			return providers_profiles[i].yaml;
	return NULL;
}

/* The hosts a profile allowlists, read with the policy loader itself. */
static void
providers_profile_hosts(const char *id, const char *yaml, struct strv *hosts)
{
	struct config_text t;
	struct config *cfg;
	struct buf errs;
	size_t i;

	memset(&t, 0, sizeof t);
	t.file.path = id;
	t.data = yaml;
	t.len = strlen(yaml);
	buf_init(&errs);
	if ((cfg = config_load_texts(&t, 1, &errs)) == NULL)
		fatalx("provider profile %s: %s", id, buf_cstr(&errs));
	buf_free(&errs);
	for (i = 0; i < cfg->allowlist.n; i++)
		strv_add(hosts, cfg->allowlist.items[i].value);
	config_free(cfg);
}

/* A custom provider's options.baseURL, as a host name. */
static char *
providers_base_host(json_t *config, const char *id)
{
	json_t *p = json_object_get(json_object_get(config, "provider"), id);
	const char *base =
	    json_string_value(json_object_get(json_object_get(p, "options"), "baseURL"));
	struct url u;
	char *host;

	if (base == NULL || url_parse(base, &u) != NULL)
		return NULL;
	host = xstrdup(u.host.name);
	url_free(&u);
	return host;
}

static int
providers_listed(const struct cfg_list *l, const char *id)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->items[i].value, id) == 0)
			return 1;
	return 0;
}

/* Everything the user has set up on the host, each with where it was found. */
static void
providers_gather(struct providers_found *f, const struct config *cfg, const char *config_dir,
                 const char *data_dir)
{
	static const char *const names[] = {"opencode.json", "opencode.jsonc", "config.json"};
	const char *key;
	json_t *auth, *v;
	char *path;
	size_t i;

	if (!cfg->wrapper.opencode_mount_host_config_loc.line ||
	    cfg->wrapper.opencode_mount_host_config)
		for (i = 0; i < EG_NELEM(names) && f->config == NULL; i++) {
			path = xasprintf("%s/%s", config_dir, names[i]);
			f->config = providers_read_json(path);
			free(path);
		}
	if (f->config != NULL) {
		json_object_foreach(json_object_get(f->config, "provider"), key, v)
		    providers_add(f, key, "configured in opencode.json");
		providers_model(f, f->config, "model");
		providers_model(f, f->config, "small_model");
	}
	if (!cfg->wrapper.opencode_mount_host_data_loc.line ||
	    cfg->wrapper.opencode_mount_host_data) {
		path = xasprintf("%s/auth.json", data_dir);
		if ((auth = providers_read_json(path)) != NULL) {
			json_object_foreach(auth, key, v)
			    providers_add(f, key, "credentials in auth.json");
			json_decref(auth);
		}
		free(path);
	}
	for (i = 0; i < EG_NELEM(providers_env); i++)
		if (getenv(providers_env[i].var) != NULL && getenv(providers_env[i].var)[0] != '\0')
			providers_add(f, providers_env[i].provider, "API key in the environment");
	if (f->ids.n == 0)
		providers_add(f, "opencode", "OpenCode's own models: no provider is set up");
}

/*
 * The providers of this run, their hosts and the policy layer that
 * allowlists them; config_dir and data_dir are the host's OpenCode
 * directories. 0 always: what cannot be allowlisted is a note.
 */
int
providers_find(struct providers *p, const struct config *cfg, const char *config_dir,
               const char *data_dir)
{
	const struct config_wrapper *w = &cfg->wrapper;
	struct providers_found f;
	const char *yaml;
	struct strv hosts;
	struct buf b;
	char *host;
	size_t i, j;

	memset(p, 0, sizeof *p);
	memset(&f, 0, sizeof f);
	providers_gather(&f, cfg, config_dir, data_dir);
	buf_init(&b);
	for (i = 0; i < f.ids.n; i++) {
		const char *id = f.ids.v[i];

		if ((w->opencode_enabled_providers.set &&
		     !providers_listed(&w->opencode_enabled_providers, id)) ||
		    providers_listed(&w->opencode_disabled_providers, id)) {
			strv_addf(&p->notes,
			          "%s: left out by opencode.enabledProviders/disabledProviders",
			          id);
			continue;
		}
		memset(&hosts, 0, sizeof hosts);
		if ((host = providers_base_host(f.config, id)) != NULL) {
			strv_add_owned(&hosts, host);
			strv_addf(&p->why, "%s, baseURL in opencode.json", f.why.v[i]);
		} else if ((yaml = providers_profile(id)) != NULL) {
			providers_profile_hosts(id, yaml, &hosts);
			strv_add(&p->why, f.why.v[i]);
		} else {
			strv_addf(&p->notes,
			          "%s: no provider profile and no baseURL; allowlist its API host "
			          "yourself (--allow HOST, or network.allowlist)",
			          id);
			continue;
		}
		strv_add(&p->names, id);
		buf_reset(&b);
		for (j = 0; j < hosts.n; j++)
			buf_printf(&b, "%s%s", j > 0 ? " " : "", hosts.v[j]);
		strv_add(&p->hosts, buf_cstr(&b));
		strv_free(&hosts);
	}
	for (i = 0; i < EG_NELEM(providers_env); i++)
		if (strv_has(&p->names, providers_env[i].provider) &&
		    getenv(providers_env[i].var) != NULL && getenv(providers_env[i].var)[0] != '\0')
			strv_add(&p->env, providers_env[i].var);
	if (p->names.n > 0) {
		buf_reset(&b);
		buf_adds(&b, "# the model providers of this run (opencode-sandbox)\nversion: 1\n"
		             "network:\n  inheritGlobal: true\n  allowlist:\n");
		for (i = 0; i < p->hosts.n; i++) {
			const char *h = p->hosts.v[i], *sp;

			while (*h != '\0') {
				sp = strchr(h, ' ');
				buf_printf(&b, "    - \"%.*s\"  # %s\n",
				           (int)(sp != NULL ? (size_t)(sp - h) : strlen(h)), h,
				           p->names.v[i]);
				h = sp != NULL ? sp + 1 : h + strlen(h);
			}
		}
		p->yaml = buf_release(&b);
	} else
		buf_free(&b);
	strv_free(&f.ids);
	strv_free(&f.why);
	json_decref(f.config);
	return 0;
}

void
providers_free(struct providers *p)
{
	strv_free(&p->names);
	strv_free(&p->hosts);
	strv_free(&p->why);
	strv_free(&p->env);
	strv_free(&p->notes);
	free(p->yaml);
}
