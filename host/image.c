/*
 * `opencode-sandbox image build` and `upgrade` (seed 003 §7.8, §7.9). The
 * image is built from its build inputs (image/build-inputs lists them)
 * where they were installed with opencode-sandbox, so that it works
 * without the source tree; the digest of those inputs labels the image,
 * and doctor compares it with the inputs installed now. Nothing of the
 * user's goes into a build: only the build arguments named here, and a
 * CA certificate for an intercepting proxy as a build secret, which
 * npm alone reads and no layer keeps. An upgrade derives a new image from
 * the configured one: npm installs opencode-ai@TARGET as root in a stage
 * of its own, only the binary is copied into the image, whose user and
 * everything else are left as they were, and the result carries the
 * configured name (and OpenCode's version as a label).
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "host.h"

#define IMAGE_LABEL_INPUTS  "io.opencode-sandbox.inputs"
#define IMAGE_LABEL_VERSION "ai.opencode.version"
#define IMAGE_MAX_LIST      (64 * 1024)

struct image_opts {
	const char *tag;
	const char *version;
	const char *base;
	const char *runtime;
	const char *build_ca;
	const char *project;
	const char *method;
	int no_pull;
};

const struct args_opt image_build_opts[] = {
    {"tag", ARGS_STRING, offsetof(struct image_opts, tag), "TAG"},
    {"opencode-version", ARGS_STRING, offsetof(struct image_opts, version), "VERSION"},
    {"base", ARGS_STRING, offsetof(struct image_opts, base), "IMAGE"},
    {"runtime", ARGS_STRING, offsetof(struct image_opts, runtime), "NAME"},
    {"build-ca", ARGS_STRING, offsetof(struct image_opts, build_ca), "FILE"},
};
const size_t image_build_opts_n = EG_NELEM(image_build_opts);

const struct args_opt image_upgrade_opts[] = {
    {"runtime", ARGS_STRING, offsetof(struct image_opts, runtime), "NAME"},
    {"build-ca", ARGS_STRING, offsetof(struct image_opts, build_ca), "FILE"},
    {"no-pull", ARGS_BOOL, offsetof(struct image_opts, no_pull), NULL},
    {"project", ARGS_STRING, offsetof(struct image_opts, project), "PATH"},
    /* OpenCode's own upgrade option: taken only to be refused with the reason. */
    {"method", ARGS_STRING, offsetof(struct image_opts, method), "METHOD"},
};
const size_t image_upgrade_opts_n = EG_NELEM(image_upgrade_opts);

static int
image_has_inputs(const char *dir)
{
	char *a = xasprintf("%s/image/Containerfile", dir),
	     *b = xasprintf("%s/image/build-inputs", dir);
	int ok = access(a, R_OK) == 0 && access(b, R_OK) == 0;

	free(a);
	free(b);
	return ok;
}

/*
 * Where the build inputs are: $OPENCODE_SANDBOX_DATADIR/build; beside the
 * program (BIN/../share/opencode-sandbox/build, an install moved
 * elsewhere); the source tree, for the program in the build directory it
 * was built in; the install's data directory. NULL with err when none has
 * them.
 */
char *
image_inputs_dir(struct buf *err)
{
	const char *env = getenv("OPENCODE_SANDBOX_DATADIR");
	char exe[PATH_MAX], real[PATH_MAX], *dir, *slash;
	ssize_t n;

	if (env != NULL && env[0] != '\0') {
		dir = xasprintf("%s/build", env);
		if (image_has_inputs(dir))
			return dir;
		buf_printf(err, "OPENCODE_SANDBOX_DATADIR=%s: no build inputs in %s", env, dir);
		free(dir);
		return NULL;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			dir = xasprintf("%s/../share/opencode-sandbox/build", exe);
			if (image_has_inputs(dir) && realpath(dir, real) != NULL) {
				free(dir);
				return xstrdup(real);
			}
			free(dir);
			if (strcmp(exe, HOST_BINARY_DIR) == 0 && image_has_inputs(HOST_SOURCE_DIR))
				return xstrdup(HOST_SOURCE_DIR);
		}
	}
	dir = xstrdup(HOST_DATA_DIR "/build");
	if (image_has_inputs(dir))
		return dir;
	free(dir);
	buf_adds(err, "the image's build inputs are not installed (`make install` puts them in "
	              "PREFIX/share/opencode-sandbox/build; OPENCODE_SANDBOX_DATADIR names another "
	              "place)");
	return NULL;
}

static int
image_line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The digest of the build inputs in dir: SHA-256 over `HASH  PATH` lines
 * of the paths image/build-inputs lists, sorted, where a directory's HASH
 * is its files' (skilltree.c's hash). NULL with err.
 */
char *
image_inputs_digest(const char *dir, struct buf *err)
{
	struct strv lines, paths;
	struct skilltree t;
	struct stat st;
	struct buf b;
	char *list, *p, *nl, *full, *h, *digest = NULL;
	size_t len, i;

	memset(&lines, 0, sizeof lines);
	memset(&paths, 0, sizeof paths);
	full = xasprintf("%s/image/build-inputs", dir);
	if (host_read_file(full, IMAGE_MAX_LIST, &list, &len) == -1) {
		buf_printf(err, "%s: %s", full, strerror(errno));
		free(full);
		return NULL;
	}
	free(full);
	for (p = list; *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		else
			nl = p + strlen(p);
		if (*p != '\0' && *p != '#')
			strv_add(&paths, p);
	}
	free(list);
	for (i = 0; i < paths.n; i++) {
		if (strstr(paths.v[i], "..") != NULL || paths.v[i][0] == '/') {
			buf_printf(err, "image/build-inputs: %s: not a path inside the inputs",
			           paths.v[i]);
			goto out;
		}
		full = xasprintf("%s/%s", dir, paths.v[i]);
		if (lstat(full, &st) == -1) {
			buf_printf(err, "%s: %s (a build input)", full, strerror(errno));
			free(full);
			goto out;
		}
		if (S_ISDIR(st.st_mode)) {
			memset(&t, 0, sizeof t);
			t.label = paths.v[i];
			t.root = full;
			t.err = err;
			if (skilltree_copy(&t, full, NULL) == -1) {
				skilltree_free(&t);
				free(full);
				goto out;
			}
			strv_addf(&lines, "%s/\t%s", paths.v[i], t.sha256);
			skilltree_free(&t);
		} else {
			char *data;

			if (host_read_file(full, 64 * 1024 * 1024, &data, &len) == -1) {
				buf_printf(err, "%s: %s (a build input)", full, strerror(errno));
				free(full);
				goto out;
			}
			h = host_sha256_hex(data, len);
			strv_addf(&lines, "%s\t%s", paths.v[i], h);
			free(h);
			free(data);
		}
		free(full);
	}
	if (lines.n > 1)
		qsort(lines.v, lines.n, sizeof *lines.v, image_line_cmp);
	buf_init(&b);
	for (i = 0; i < lines.n; i++) {
		p = strchr(lines.v[i], '\t');
		buf_printf(&b, "%s  %.*s\n", p + 1, (int)(p - lines.v[i]), lines.v[i]);
	}
	digest = host_sha256_hex(b.data != NULL ? b.data : "", b.len);
	buf_free(&b);
out:
	strv_free(&lines);
	strv_free(&paths);
	return digest;
}

/* The configured image of project (NULL: the global configuration): image.name, else the default. */
static char *
image_configured(const char *project, struct effective *e, struct buf *err)
{
	const char *env = getenv("OPENCODE_SANDBOX_IMAGE");
	char resolved[PATH_MAX];

	if (project == NULL && mounts_check_project(".", resolved, sizeof resolved) == NULL)
		project = ".";
	if (effective_open(e, project, NULL, 0, err) == -1)
		return NULL;
	return xstrdup(e->full->wrapper.image_name != NULL ? e->full->wrapper.image_name
	               : env != NULL && env[0] != '\0'     ? env
	                                                   : HOST_DEFAULT_IMAGE);
}

/* A name handed to the runtime as one argument: printable, no blanks, no leading '-'. */
static int
image_word_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || s[0] == '-')
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return 0;
	return i <= 256;
}

/* An npm version or tag: 1.18.33, v1.18.33 (the v dropped), latest, beta. */
static const char *
image_npm_target(const char *t)
{
	size_t i;

	if (t[0] == 'v' && t[1] >= '0' && t[1] <= '9')
		t++;
	if (t[0] == '\0' || strlen(t) > 64 || t[0] == '-' || t[0] == '.')
		return NULL;
	for (i = 0; t[i] != '\0'; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
		      (t[i] >= '0' && t[i] <= '9') || t[i] == '.' || t[i] == '-' || t[i] == '_' ||
		      t[i] == '+'))
			return NULL;
	return t;
}

/* The build CA as a build secret: a PEM file with a certificate, or -1 with err. */
static int
image_secret(struct strv *argv, const char *file, struct buf *err)
{
	char abs[PATH_MAX], *data;
	size_t len;

	if (file == NULL)
		return 0;
	if (realpath(file, abs) == NULL ||
	    host_read_file(abs, 4 * 1024 * 1024, &data, &len) == -1) {
		buf_printf(err, "--build-ca %s: %s", file, strerror(errno));
		return -1;
	}
	if (strstr(data, "-----BEGIN CERTIFICATE-----") == NULL) {
		buf_printf(err, "--build-ca %s: no PEM certificate in it", file);
		free(data);
		return -1;
	}
	free(data);
	if (strchr(abs, ',') != NULL) {
		buf_printf(err, "--build-ca %s: a path with a ',' cannot be handed to the build",
		           abs);
		return -1;
	}
	strv_add(argv, "--secret");
	strv_addf(argv, "id=build-ca,src=%s", abs);
	return 0;
}

/* Run a build (its output on the terminal); docker needs BuildKit for the Containerfile's secret mount. */
static int
image_run_build(const struct host_plan *p, struct strv *argv)
{
	static char *const buildkit[] = {"DOCKER_BUILDKIT=1", NULL};
	struct buf shown;

	buf_init(&shown);
	redact_argv(argv, &shown);
	fprintf(stderr, "+ %s\n", buf_cstr(&shown));
	buf_free(&shown);
	return exec_inherit(argv->v, p->rt == HOST_RT_DOCKER ? buildkit : NULL);
}

static int
image_build(const struct strv *args)
{
	struct image_opts o;
	struct host_plan p;
	struct effective e;
	struct strv pos, argv;
	struct buf err;
	char *dir = NULL, *digest = NULL, *tag = NULL, *cf = NULL;
	const char *base;
	int rc = HOST_EXIT_USAGE, st;

	memset(&o, 0, sizeof o);
	memset(&p, 0, sizeof p);
	memset(&e, 0, sizeof e);
	memset(&pos, 0, sizeof pos);
	memset(&argv, 0, sizeof argv);
	buf_init(&err);
	if (args_options(image_build_opts, EG_NELEM(image_build_opts), &o, args, &pos, &err) == -1)
		goto usage;
	if (pos.n > 0) {
		buf_printf(&err, "unexpected argument %s", pos.v[0]);
		goto usage;
	}
	if ((o.tag != NULL && !image_word_ok(o.tag)) ||
	    (o.base != NULL && !image_word_ok(o.base))) {
		buf_adds(&err, "--tag and --base take an image name");
		goto usage;
	}
	if (o.version != NULL && image_npm_target(o.version) == NULL) {
		buf_printf(&err, "--opencode-version %s: not an npm version or tag", o.version);
		goto usage;
	}
	if ((tag = image_configured(NULL, &e, &err)) == NULL) {
		fputs(buf_cstr(&err), stderr);
		goto out;
	}
	if (o.tag != NULL) {
		free(tag);
		tag = xstrdup(o.tag);
	}
	base = o.base != NULL ? o.base : e.full->wrapper.image_base;
	if ((dir = image_inputs_dir(&err)) == NULL ||
	    (digest = image_inputs_digest(dir, &err)) == NULL) {
		fprintf(stderr, HOST_PROG " image build: %s\n", buf_cstr(&err));
		goto out;
	}
	if (runtime_select(&p, o.runtime, &err) == -1 || runtime_service(&p, &err) == -1) {
		fprintf(stderr, HOST_PROG " image build: %s\n", buf_cstr(&err));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	cf = xasprintf("%s/image/Containerfile", dir);
	strv_add(&argv, p.rt_path);
	strv_add(&argv, "build");
	strv_add(&argv, "-f");
	strv_add(&argv, cf);
	strv_add(&argv, "-t");
	strv_add(&argv, tag);
	if (base != NULL) {
		strv_add(&argv, "--build-arg");
		strv_addf(&argv, "BASE=%s", base);
	}
	if (o.version != NULL) {
		strv_add(&argv, "--build-arg");
		strv_addf(&argv, "OPENCODE_VERSION=%s", image_npm_target(o.version));
	}
	/*
	 * Labels given to the build, not build arguments of a LABEL line:
	 * podman 4.3 takes a cached LABEL layer whatever the argument's value,
	 * and the image kept the digest of the inputs it was first built from.
	 */
	strv_add(&argv, "--label");
	strv_addf(&argv, IMAGE_LABEL_INPUTS_NAME "=%s", digest);
	strv_add(&argv, "--label");
	strv_add(&argv, IMAGE_LABEL_VERSION_NAME "=" EGRESS_VERSION);
	if (image_secret(&argv, o.build_ca, &err) == -1) {
		fprintf(stderr, HOST_PROG " image build: %s\n", buf_cstr(&err));
		goto out;
	}
	strv_add(&argv, dir);
	if ((st = image_run_build(&p, &argv)) != 0) {
		fprintf(stderr, HOST_PROG " image build: %s build failed (exit %d)\n",
		        runtime_name(p.rt), st);
		rc = st == 127 ? HOST_EXIT_RUNTIME : 1;
		goto out;
	}
	printf("built %s from %s (build inputs %.12s)\n", tag, dir, digest);
	if (o.tag != NULL &&
	    strcmp(o.tag, e.full->wrapper.image_name != NULL ? e.full->wrapper.image_name
	                                                     : HOST_DEFAULT_IMAGE) != 0)
		printf("next: `" HOST_PROG
		       " --image %s` runs it (or set image.name: %s); `" HOST_PROG
		       " doctor` checks the setup\n",
		       tag, tag);
	else
		printf("next: `" HOST_PROG " doctor` checks the setup; `" HOST_PROG
		       "` in a project runs OpenCode in it\n");
	rc = 0;
	goto out;
usage:
	help_hint("image build", buf_cstr(&err));
out:
	effective_free(&e);
	plan_free(&p);
	strv_free(&pos);
	strv_free(&argv);
	buf_free(&err);
	free(dir);
	free(digest);
	free(tag);
	free(cf);
	return rc;
}

int
image_main(const struct strv *args)
{
	struct strv rest;
	size_t i, at;
	int rc;

	for (at = 0; at < args->n; at++)
		if (strcmp(args->v[at], "build") == 0)
			break;
	if (at == args->n) {
		help_hint("image", "build?");
		return HOST_EXIT_USAGE;
	}
	memset(&rest, 0, sizeof rest);
	for (i = 0; i < args->n; i++)
		if (i != at)
			strv_add(&rest, args->v[i]);
	rc = image_build(&rest);
	strv_free(&rest);
	return rc;
}

/* `RUNTIME image inspect` of one value (a Go template), or NULL. */
char *
image_inspect(const struct host_plan *p, const char *image, const char *format)
{
	const char *podman[] = {"image", "inspect", "--format", format, image, NULL};
	struct buf out;
	char *nl;

	buf_init(&out);
	if (p->rt == HOST_RT_APPLE || runtime_query(p, podman, &out) != 0) {
		buf_free(&out);
		return NULL;
	}
	if ((nl = strchr(buf_cstr(&out), '\n')) != NULL)
		*nl = '\0';
	return buf_release(&out);
}

/* A label of image, or NULL. */
char *
image_label(const struct host_plan *p, const char *image, const char *label)
{
	char *json = image_inspect(p, image, "{{json .Config.Labels}}"), *v = NULL;
	json_t *j;

	if (json == NULL)
		return NULL;
	if ((j = json_loads(json, 0, NULL)) != NULL &&
	    json_string_value(json_object_get(j, label)) != NULL)
		v = xstrdup(json_string_value(json_object_get(j, label)));
	json_decref(j);
	free(json);
	return v;
}

/*
 * The derived image's Containerfile: npm installs opencode-ai@TARGET as
 * root in a stage of its own; the image gets only the binary, its user
 * and the rest of its configuration left as they were. npm's global
 * prefix is a directory of its own: in /usr/local, npm would refuse to
 * link its bin over the image's /usr/local/bin/opencode.
 */
static const char image_upgrade_file[] =
    "# written by " HOST_PROG " upgrade: OpenCode upgraded in a derived image\n"
    "ARG IMAGE\n"
    "FROM ${IMAGE} AS npm\n"
    "USER root\n"
    "ARG OPENCODE_TARGET=latest\n"
    "RUN apt-get update -q \\\n"
    " && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm \\\n"
    " && rm -rf /var/lib/apt/lists/*\n"
    "RUN --mount=type=secret,id=build-ca \\\n"
    "\tif [ -s /run/secrets/build-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build-ca; fi "
    "\\\n"
    " && export NPM_CONFIG_PREFIX=/opt/opencode-npm \\\n"
    " && npm install -g --no-audit --no-fund \"opencode-ai@${OPENCODE_TARGET}\" \\\n"
    " && install -m 0755 \"$(npm root -g)/opencode-ai/bin/opencode.exe\" /opencode \\\n"
    " && /opencode --version\n"
    "FROM ${IMAGE}\n"
    "COPY --from=npm /opencode /usr/local/bin/opencode\n"
    "RUN [\"/usr/local/bin/opencode\", \"--version\"]\n";

/* Write the upgrade's build context: one Containerfile in a new directory. */
static char *
image_upgrade_context(const char *label, struct buf *err)
{
	const char *text = label != NULL ? label : image_upgrade_file, *tmp = getenv("TMPDIR");
	char *tmpl, *dir, *file;

	tmpl = xasprintf("%s/opencode-sandbox-upgrade.XXXXXX",
	                 tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
	if ((dir = mkdtemp(tmpl)) == NULL) {
		buf_printf(err, "%s: %s", tmpl, strerror(errno));
		free(tmpl);
		return NULL;
	}
	file = xasprintf("%s/Containerfile", dir);
	if (host_write_file(file, text, strlen(text), 0644) == -1) {
		buf_printf(err, "%s: %s", file, strerror(errno));
		free(file);
		state_remove_tree(dir);
		free(tmpl);
		return NULL;
	}
	free(file);
	return tmpl;
}

/* OpenCode's version in image, asked of the binary itself. */
static char *
image_opencode_version(const struct host_plan *p, const char *image)
{
	const char *args[] = {"run", "--rm", "--entrypoint", "opencode", image, "--version", NULL};
	struct buf out;
	char *v, *nl;

	buf_init(&out);
	if (runtime_query(p, args, &out) != 0) {
		buf_free(&out);
		return NULL;
	}
	v = buf_release(&out);
	/* The last line: a runtime may print warnings first. */
	while ((nl = strrchr(v, '\n')) != NULL && nl[1] == '\0')
		*nl = '\0';
	if ((nl = strrchr(v, '\n')) != NULL)
		memmove(v, nl + 1, strlen(nl + 1) + 1);
	if (image_npm_target(v) == NULL) {
		free(v);
		return NULL;
	}
	return v;
}

/* Pull image unless it is local (localhost/) or --no-pull; a failed pull is said, not fatal. */
static void
image_pull(const struct host_plan *p, const char *image, int no_pull)
{
	const char *args[] = {p->rt == HOST_RT_APPLE ? "image" : "pull",
	                      p->rt == HOST_RT_APPLE ? "pull" : image,
	                      p->rt == HOST_RT_APPLE ? image : NULL, NULL};
	struct buf out;

	if (no_pull || strncmp(image, "localhost/", 10) == 0)
		return;
	buf_init(&out);
	fprintf(stderr, HOST_PROG " upgrade: pulling %s\n", image);
	if (runtime_query(p, args, &out) != 0)
		fprintf(stderr,
		        HOST_PROG " upgrade: could not pull %s (%s); upgrading the local image\n",
		        image, buf_cstr(&out));
	buf_free(&out);
}

/* The two builds: the derived image under tmp, then the same with OpenCode's version as a label. */
static int
image_upgrade_build(const struct host_plan *p, const struct image_opts *o, const char *image,
                    const char *target, const char *tmp, char **version, struct buf *err)
{
	struct strv argv;
	char *ctx = NULL, *label = NULL, *cf;
	int st, rc = -1;

	memset(&argv, 0, sizeof argv);
	if ((ctx = image_upgrade_context(NULL, err)) == NULL)
		return -1;
	cf = xasprintf("%s/Containerfile", ctx);
	strv_add(&argv, p->rt_path);
	strv_add(&argv, "build");
	strv_add(&argv, "-f");
	strv_add(&argv, cf);
	strv_add(&argv, "-t");
	strv_add(&argv, tmp);
	strv_add(&argv, "--build-arg");
	strv_addf(&argv, "IMAGE=%s", image);
	strv_add(&argv, "--build-arg");
	strv_addf(&argv, "OPENCODE_TARGET=%s", target);
	free(cf);
	if (image_secret(&argv, o->build_ca, err) == -1)
		goto out;
	strv_add(&argv, ctx);
	if ((st = image_run_build(p, &argv)) != 0) {
		buf_printf(err, "%s build failed (exit %d)", runtime_name(p->rt), st);
		goto out;
	}
	if ((*version = image_opencode_version(p, tmp)) == NULL) {
		buf_printf(err, "the new image's opencode --version did not answer");
		goto out;
	}
	state_remove_tree(ctx);
	free(ctx);
	label =
	    xasprintf("ARG IMAGE\nFROM ${IMAGE}\nLABEL " IMAGE_LABEL_VERSION "=\"%s\"\n", *version);
	if ((ctx = image_upgrade_context(label, err)) == NULL)
		goto out;
	strv_free(&argv);
	cf = xasprintf("%s/Containerfile", ctx);
	strv_add(&argv, p->rt_path);
	strv_add(&argv, "build");
	strv_add(&argv, "-f");
	strv_add(&argv, cf);
	strv_add(&argv, "-t");
	strv_add(&argv, image);
	strv_add(&argv, "--build-arg");
	strv_addf(&argv, "IMAGE=%s", tmp);
	strv_add(&argv, ctx);
	free(cf);
	if ((st = image_run_build(p, &argv)) != 0) {
		buf_printf(err, "%s build failed (exit %d)", runtime_name(p->rt), st);
		goto out;
	}
	rc = 0;
out:
	if (ctx != NULL)
		state_remove_tree(ctx);
	free(ctx);
	free(label);
	strv_free(&argv);
	return rc;
}

int
image_upgrade_main(const struct strv *args)
{
	const char *rmi[] = {"rmi", NULL, NULL};
	struct image_opts o;
	struct host_plan p;
	struct effective e;
	struct strv pos;
	struct buf err, out;
	char *image = NULL, *user = NULL, *after = NULL, *old = NULL, *version = NULL;
	char rnd[9], *tmp = NULL;
	const char *target = "latest";
	int rc = HOST_EXIT_USAGE, have;

	memset(&o, 0, sizeof o);
	memset(&p, 0, sizeof p);
	memset(&e, 0, sizeof e);
	memset(&pos, 0, sizeof pos);
	buf_init(&err);
	buf_init(&out);
	if (args_options(image_upgrade_opts, EG_NELEM(image_upgrade_opts), &o, args, &pos, &err) ==
	    -1)
		goto usage;
	if (o.method != NULL) {
		buf_printf(&err,
		           "--method %s is OpenCode's own upgrade (opencode upgrade --method): the "
		           "sandbox image is always upgraded by building a derived image with npm, "
		           "never by OpenCode replacing itself in a container that is removed at "
		           "exit",
		           o.method);
		goto usage;
	}
	if (pos.n > 1) {
		buf_adds(&err, "one TARGET at a time");
		goto usage;
	}
	if (pos.n == 1 && (target = image_npm_target(pos.v[0])) == NULL) {
		buf_printf(&err, "%s: not an npm version or tag of opencode-ai", pos.v[0]);
		goto usage;
	}
	if ((image = image_configured(o.project, &e, &err)) == NULL) {
		fputs(buf_cstr(&err), stderr);
		goto out;
	}
	if (runtime_select(&p, o.runtime, &err) == -1 || runtime_service(&p, &err) == -1) {
		fprintf(stderr, HOST_PROG " upgrade: %s\n", buf_cstr(&err));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	image_pull(&p, image, o.no_pull);
	if ((have = runtime_image(&p, image, &err)) != 1) {
		if (have == 0)
			buf_printf(&err,
			           "image %s not found in %s: build it first (" HOST_PROG
			           " image build)",
			           image, runtime_name(p.rt));
		fprintf(stderr, HOST_PROG " upgrade: %s\n", buf_cstr(&err));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	user = image_inspect(&p, image, "{{.Config.User}}");
	old = image_label(&p, image, IMAGE_LABEL_VERSION);
	state_random(rnd, sizeof rnd);
	tmp = xasprintf("localhost/opencode-sandbox-upgrade:%s", rnd);
	if (image_upgrade_build(&p, &o, image, target, tmp, &version, &err) == -1) {
		fprintf(stderr, HOST_PROG " upgrade: %s; %s is unchanged\n", buf_cstr(&err), image);
		rc = 1;
		goto out;
	}
	rmi[1] = tmp;
	runtime_query(&p, rmi, &out);
	after = image_inspect(&p, image, "{{.Config.User}}");
	if (user != NULL && after != NULL && strcmp(user, after) != 0) {
		fprintf(stderr, HOST_PROG " upgrade: the image's user changed (%s to %s)\n", user,
		        after);
		rc = 1;
		goto out;
	}
	printf("upgraded OpenCode in %s: %s -> %s (user %s kept)\n", image,
	       old != NULL ? old : "unknown", version,
	       user != NULL && user[0] != '\0' ? user : "root, as the image's sandbox-init needs,");
	printf("next: `" HOST_PROG " doctor` shows the image's OpenCode version\n");
	rc = 0;
	goto out;
usage:
	help_hint("upgrade", buf_cstr(&err));
out:
	effective_free(&e);
	plan_free(&p);
	strv_free(&pos);
	buf_free(&err);
	buf_free(&out);
	free(image);
	free(user);
	free(after);
	free(old);
	free(version);
	free(tmp);
	return rc;
}
