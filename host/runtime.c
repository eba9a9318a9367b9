/*
 * The container runtimes: podman and docker on Linux, Apple's container
 * on macOS. Choosing one (--runtime, else the first found in PATH), the
 * checks before a run with a message that says what to do (runtime
 * missing, daemon stopped, image missing, no way to grant sandbox-init
 * NET_ADMIN for strict mode), and the `run` command itself, built from
 * the plan as an argv in a fixed order (seed 003 §15): the same plan
 * always gives the same command, and nothing passes through a shell.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

static const struct {
	const char *name;
	enum host_runtime rt;
} runtime_names[] = {
    {"podman", HOST_RT_PODMAN},
    {"docker", HOST_RT_DOCKER},
    {"container", HOST_RT_APPLE},
};

const char *
runtime_name(enum host_runtime rt)
{
	size_t i;

	for (i = 0; i < EG_NELEM(runtime_names); i++)
		if (runtime_names[i].rt == rt)
			return runtime_names[i].name;
	return "?";
}

/* An executable in PATH, as execvp would find it. */
static char *
runtime_which(const char *name)
{
	const char *path = getenv("PATH"), *p, *colon;
	struct stat st;
	char *full;
	size_t n;

	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0 && stat(name, &st) == 0 && S_ISREG(st.st_mode)
		           ? xstrdup(name)
		           : NULL;
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p != '\0'; p = *colon != '\0' ? colon + 1 : colon) {
		colon = strchr(p, ':');
		if (colon == NULL)
			colon = p + strlen(p);
		n = (size_t)(colon - p);
		full = n == 0 ? xasprintf("./%s", name) : xasprintf("%.*s/%s", (int)n, p, name);
		if (access(full, X_OK) == 0 && stat(full, &st) == 0 && S_ISREG(st.st_mode))
			return full;
		free(full);
	}
	return NULL;
}

/* --runtime NAME|PATH, else the first of podman, docker, container in PATH. */
int
runtime_select(struct host_plan *p, const char *want, struct buf *err)
{
	const char *base;
	size_t i;

	if (want != NULL) {
		base = strrchr(want, '/') != NULL ? strrchr(want, '/') + 1 : want;
		for (i = 0; i < EG_NELEM(runtime_names); i++)
			if (strcmp(base, runtime_names[i].name) == 0)
				break;
		if (i == EG_NELEM(runtime_names)) {
			buf_printf(err, "--runtime %s: expected podman, docker or container", want);
			return -1;
		}
		if ((p->rt_path = runtime_which(want)) == NULL) {
			buf_printf(
			    err,
			    "%s not found in PATH: install it, or choose another runtime with "
			    "--runtime (podman, docker, container)",
			    want);
			return -1;
		}
		p->rt = runtime_names[i].rt;
		return 0;
	}
	for (i = 0; i < EG_NELEM(runtime_names); i++)
		if ((p->rt_path = runtime_which(runtime_names[i].name)) != NULL) {
			p->rt = runtime_names[i].rt;
			return 0;
		}
	buf_adds(err, "no container runtime found in PATH: install podman or docker (Linux), or "
	              "Apple's container (macOS), or name one with --runtime");
	return -1;
}

/* The first line of a command's output, for a message. */
static const char *
runtime_first_line(struct buf *b)
{
	char *nl;

	buf_add(b, "", 0);
	if ((nl = strchr(b->data, '\n')) != NULL)
		*nl = '\0';
	return b->len > 0 ? b->data : "no output";
}

static int
runtime_ask(const struct host_plan *p, struct buf *out, const char *a1, const char *a2,
            const char *a3, const char *a4)
{
	char *argv[7] = {p->rt_path, (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL, NULL};

	buf_reset(out);
	return exec_capture(argv, out, 1);
}

/*
 * Before anything starts: the runtime answers, the image is there, and a
 * mode that needs nftables can get CAP_NET_ADMIN. Each failure says what
 * to do.
 */
int
runtime_preflight(const struct host_plan *p, struct buf *err)
{
	const char *rt = runtime_name(p->rt);
	struct buf out;
	int rc;

	buf_init(&out);
	if (p->rt == HOST_RT_DOCKER &&
	    runtime_ask(p, &out, "version", "--format", "{{.Server.Version}}", NULL) != 0) {
		buf_printf(err,
		           "the Docker daemon is not running or not reachable (%s): start it "
		           "(systemctl start docker, or Docker Desktop), or use --runtime podman",
		           runtime_first_line(&out));
		goto err;
	}
	if (p->rt == HOST_RT_APPLE && runtime_ask(p, &out, "system", "status", NULL, NULL) != 0) {
		buf_printf(err,
		           "Apple's container service is not running (%s): start it with "
		           "`container system start`",
		           runtime_first_line(&out));
		goto err;
	}
	if (p->rt == HOST_RT_PODMAN)
		rc = runtime_ask(p, &out, "image", "exists", p->image, NULL);
	else
		rc = runtime_ask(p, &out, "image", "inspect", p->image, NULL);
	if (p->rt == HOST_RT_PODMAN && rc > 1) {
		buf_printf(err,
		           "podman cannot reach its storage or service (%s); on macOS start the "
		           "machine with `podman machine start`",
		           runtime_first_line(&out));
		goto err;
	}
	if (rc != 0) {
		buf_printf(err,
		           "image %s not found in %s: run `" HOST_PROG " image build`, or build it "
		           "from the repository: %s build -f image/Containerfile -t %s .",
		           p->image, rt, rt, p->image);
		goto err;
	}
	if (p->net_admin) {
		if (runtime_ask(p, &out, "run", "--help", NULL, NULL) != 0 ||
		    strstr(buf_cstr(&out), "--cap-add") == NULL) {
			buf_printf(
			    err,
			    "%s mode needs CAP_NET_ADMIN in the container (sandbox-init installs "
			    "its nftables rules with it, then drops it), and this %s cannot "
			    "grant it: its `run` has no --cap-add. Update %s, or run practical "
			    "mode: --network-mode practical (or network.mode: practical), which "
			    "forces nothing: programs that ignore the proxy variables bypass it",
			    config_mode_name(p->mode), rt, rt);
			goto err;
		}
	}
	buf_free(&out);
	return 0;
err:
	buf_free(&out);
	return -1;
}

/*
 * The whole `run` command. Order: the container's life (--rm, stdin,
 * TTY, name), its confinement (read-only root, tmpfs, resources,
 * capabilities, user namespace), the mounts, the environment, the
 * published ports, then sandbox-init, the image, sandbox-init's options,
 * "--" and OpenCode's command line.
 */
void
runtime_argv(struct host_plan *p)
{
	struct strv *a = &p->argv;
	const char *v;
	size_t i;

	strv_free(a);
	strv_add(a, p->rt_path);
	strv_add(a, "run");
	if (p->remove)
		strv_add(a, "--rm");
	strv_add(a, "--interactive");
	if (p->tty)
		strv_add(a, "--tty");
	strv_add(a, "--name");
	strv_add(a, p->name);
	strv_add(a, "--read-only");
	strv_add(a, "--tmpfs");
	strv_add(a, "/tmp");
	strv_add(a, "--tmpfs");
	strv_add(a, "/run");
	if (p->cpus != NULL) {
		strv_add(a, "--cpus");
		strv_add(a, p->cpus);
	}
	if (p->memory != NULL) {
		strv_add(a, "--memory");
		strv_add(a, p->memory);
	}
	if (p->net_admin) {
		strv_add(a, "--cap-add");
		strv_add(a, "NET_ADMIN");
	}
	if (p->userns != NULL && p->rt == HOST_RT_PODMAN) {
		strv_add(a, "--userns");
		strv_add(a, p->userns);
	}
	strv_add(a, "--workdir");
	strv_add(a, p->workdir);
	for (i = 0; i < p->nmounts; i++) {
		if (p->mounts[i].tmpfs) {
			strv_add(a, "--tmpfs");
			strv_add(a, p->mounts[i].target);
			continue;
		}
		strv_add(a, "--mount");
		strv_addf(a, "type=bind,source=%s,target=%s%s", p->mounts[i].source,
		          p->mounts[i].target, p->mounts[i].readonly ? ",readonly" : "");
	}
	for (i = 0; i < p->nenv; i++) {
		strv_add(a, "--env");
		v = p->env[i].value;
		/* Apple's container takes KEY=VALUE only: the value is read here. */
		if (v == NULL && p->rt == HOST_RT_APPLE)
			v = getenv(p->env[i].name) != NULL ? getenv(p->env[i].name) : "";
		if (v != NULL)
			strv_addf(a, "%s=%s", p->env[i].name, v);
		else
			strv_add(a, p->env[i].name);
	}
	for (i = 0; i < p->publish.n; i++) {
		strv_add(a, "--publish");
		strv_add(a, p->publish.v[i]);
	}
	strv_add(a, "--entrypoint");
	strv_add(a, "sandbox-init");
	strv_add(a, p->image);
	for (i = 0; i < p->init.n; i++)
		strv_add(a, p->init.v[i]);
	strv_add(a, "--");
	for (i = 0; i < p->oc.n; i++)
		strv_add(a, p->oc.v[i]);
}

/* `RT kill --signal SIG NAME`: a signal for sandbox-init, which passes it to OpenCode. */
void
runtime_kill_argv(const struct host_plan *p, const char *sig, struct strv *a)
{
	strv_add(a, p->rt_path);
	strv_add(a, "kill");
	strv_add(a, "--signal");
	strv_add(a, sig);
	strv_add(a, p->name);
}

/* `RT rm --force NAME`: the container gone, whatever state it is in. */
void
runtime_rm_argv(const struct host_plan *p, struct strv *a)
{
	strv_add(a, p->rt_path);
	strv_add(a, p->rt == HOST_RT_APPLE ? "delete" : "rm");
	strv_add(a, "--force");
	strv_add(a, p->name);
}
