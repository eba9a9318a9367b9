/*
 * sandbox-init: PID 1 of the sandbox image. It reads the configuration,
 * binds egressd's listeners and starts it as its own user, waits for it to
 * be ready, puts the network mode in force with nftables, points the
 * payload at egressd (proxy variables, CA trust, resolv.conf), drops the
 * payload to an unprivileged user with no capabilities and runs it. Then
 * it is a plain init: signals forwarded to the payload's process group,
 * every child reaped, the payload's exit status returned. Whatever cannot
 * be set up stops it before the payload runs: never a silent weaker mode.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

#define EXIT_USAGE      2
#define EXIT_SETUP      125 /* the sandbox could not be set up; CMD never ran */
#define LAUNCH_GRACE_MS 15000

extern char **environ;

static int
launch_users(struct launcher *l)
{
	const char *why;

	if ((why = priv_user_lookup(l->user_spec, &l->user)) != NULL) {
		fprintf(stderr, "sandbox-init: payload user %s: %s (create it, or pass --user)\n",
		        l->user_spec, why);
		return -1;
	}
	if ((why = priv_user_lookup(l->egress_spec, &l->egress)) != NULL) {
		fprintf(stderr,
		        "sandbox-init: egressd user %s: %s (create it, or pass --egress-user)\n",
		        l->egress_spec, why);
		return -1;
	}
	if (l->user.uid == 0 || l->egress.uid == 0) {
		fprintf(stderr, "sandbox-init: neither the payload nor egressd may run as root\n");
		return -1;
	}
	if (l->user.uid == l->egress.uid) {
		fprintf(stderr, "sandbox-init: the payload and egressd need different users: "
		                "egressd's uid is the one the rules let out\n");
		return -1;
	}
	return 0;
}

/* A directory that exists, is ours and has mode; made when missing. */
static int
launch_mkdir(const char *path, mode_t mode, uid_t uid)
{
	struct stat st;

	if (mkdir(path, mode) == -1 && errno != EEXIST)
		return -1;
	if (lstat(path, &st) == -1 || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	if (chown(path, uid, 0) == -1 || chmod(path, mode) == -1)
		return -1;
	return 0;
}

/*
 * Where the audit log goes when no trusted file says: the run's log
 * folder, never egressd's stdout (the payload's terminal, where its lines
 * would mix with the payload's output and be lost with it). That is
 * --log-dir (the image's /sandbox/logs, a host directory) when it exists,
 * else RUN_DIR/logs, made for egressd's user alone. Said once on stderr.
 */
static int
launch_audit_default(struct launcher *l)
{
	char dir[PATH_MAX];
	struct stat st;

	if (l->audit_path != NULL)
		return 0;
	if (l->log_dir != NULL && stat(l->log_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(dir, sizeof dir, "%s", l->log_dir);
	} else {
		snprintf(dir, sizeof dir, "%s/logs", l->run_dir);
		if (launch_mkdir(dir, 0700, l->egress.uid) == -1) {
			fprintf(stderr, "sandbox-init: %s: %s\n", dir, strerror(errno));
			return -1;
		}
	}
	l->audit_path = xasprintf("%s/%s", dir, LAUNCH_AUDIT_FILE);
	fprintf(stderr,
	        "sandbox-init: the audit log is %s (no audit.path in the trusted "
	        "configuration)\n",
	        l->audit_path);
	return 0;
}

/* Append a file's bytes to an open file; -1 with errno on failure. */
static int
launch_append(FILE *out, const char *path)
{
	char buf[8192];
	size_t n;
	FILE *in;

	if ((in = fopen(path, "re")) == NULL)
		return -1;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	fclose(in);
	fputc('\n', out);
	return ferror(out) ? -1 : 0;
}

/*
 * With --upstream-ca, a private CA (a company's or a self-hosted
 * endpoint's) upstreams may be signed by: egressd verifies upstreams
 * against the system store and it, and the payload's bundle is made from
 * the same file, so that hosts egressd tunnels without interception
 * (allowlisted, passthrough) verify in the payload too.
 */
static int
launch_upstream_trust(struct launcher *l)
{
	char line[256];
	int found = 0;
	FILE *f;

	if (l->upstream_ca == NULL)
		return 0;
	if ((f = fopen(l->upstream_ca, "re")) == NULL) {
		fprintf(stderr, "sandbox-init: --upstream-ca %s: %s\n", l->upstream_ca,
		        strerror(errno));
		return -1;
	}
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strncmp(line, "-----BEGIN CERTIFICATE-----", 27) == 0;
	fclose(f);
	if (!found) {
		fprintf(stderr, "sandbox-init: --upstream-ca %s: no PEM certificate in it\n",
		        l->upstream_ca);
		return -1;
	}
	snprintf(l->upstream_trust, sizeof l->upstream_trust, "%s/upstream-trust.pem", l->run_dir);
	if ((f = fopen(l->upstream_trust, "we")) == NULL ||
	    (access(LAUNCH_SYSTEM_CA, R_OK) == 0 && launch_append(f, LAUNCH_SYSTEM_CA) == -1) ||
	    launch_append(f, l->upstream_ca) == -1) {
		fprintf(stderr, "sandbox-init: %s: %s\n", l->upstream_trust, strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	chmod(l->upstream_trust, 0644);
	return 0;
}

/* NODE_EXTRA_CA_CERTS adds to Node's own store: the run CA and the private one. */
static void
launch_extra_ca(struct launcher *l)
{
	FILE *f;

	if (l->upstream_ca == NULL || l->ca_cert[0] == '\0')
		return;
	snprintf(l->extra_ca, sizeof l->extra_ca, "%s/extra-ca.pem", l->run_dir);
	if ((f = fopen(l->extra_ca, "we")) == NULL || launch_append(f, l->ca_cert) == -1 ||
	    launch_append(f, l->upstream_ca) == -1) {
		log_warnx("%s: %s: NODE_EXTRA_CA_CERTS names the run CA alone", l->extra_ca,
		          strerror(errno));
		l->extra_ca[0] = '\0';
	}
	if (f != NULL)
		fclose(f);
	if (l->extra_ca[0] != '\0')
		chmod(l->extra_ca, 0644);
}

/*
 * The run directory (root's), the CA directory in it (egressd writes the
 * certificate and bundle there; the payload reads them), the mode overlay
 * (so egressd decides in the mode that is enforced) and the audit file,
 * made for egressd and never through a link the payload may have placed.
 */
static int
launch_files(struct launcher *l)
{
	char cadir[PATH_MAX];
	FILE *f;
	int fd;

	if (launch_mkdir(l->run_dir, 0755, 0) == -1) {
		fprintf(stderr, "sandbox-init: %s: %s\n", l->run_dir, strerror(errno));
		return -1;
	}
	snprintf(cadir, sizeof cadir, "%s/ca", l->run_dir);
	if (launch_mkdir(cadir, 0755, l->egress.uid) == -1) {
		fprintf(stderr, "sandbox-init: %s: %s\n", cadir, strerror(errno));
		return -1;
	}
	snprintf(l->ca_cert, sizeof l->ca_cert, "%s/ca.pem", cadir);
	snprintf(l->ca_bundle, sizeof l->ca_bundle, "%s/ca-bundle.pem", cadir);
	snprintf(l->mode_file, sizeof l->mode_file, "%s/mode.yaml", l->run_dir);
	if ((f = fopen(l->mode_file, "we")) == NULL) {
		fprintf(stderr, "sandbox-init: %s: %s\n", l->mode_file, strerror(errno));
		return -1;
	}
	fprintf(f,
	        "# written by sandbox-init: the mode in force\nversion: 1\nnetwork:\n  mode: %s\n",
	        config_mode_name(l->mode));
	fclose(f);
	chmod(l->mode_file, 0644);
	if (launch_upstream_trust(l) == -1)
		return -1;
	if (launch_audit_default(l) == -1)
		return -1;
	fd = open(l->audit_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1 || fchown(fd, l->egress.uid, l->egress.gid) == -1) {
		fprintf(stderr, "sandbox-init: audit log %s: %s\n", l->audit_path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void
launch_arg(struct launcher *l, const char *a)
{
	if (l->eg.argc >= LAUNCH_MAX_ARGS - 4)
		fatalx("too many arguments for egressd");
	l->eg.argv[l->eg.argc++] = xstrdup(a);
}

static void
launch_egressd_argv(struct launcher *l)
{
	char control[PATH_MAX];
	size_t i;

	launch_arg(l, "egressd");
	for (i = 0; i < l->nfiles; i++) {
		if (!(l->files[i].flags & CONFIG_FILE_UNTRUSTED))
			launch_arg(l, "--config");
		else if (spawn_supports(l->egressd_path, "--project-config"))
			launch_arg(l, "--project-config");
		else {
			log_warnx("this egressd has no --project-config: the project file %s is "
			          "not read",
			          l->files[i].path);
			continue;
		}
		launch_arg(l, l->files[i].path);
	}
	/* Last, so egressd decides in the mode that is enforced. */
	launch_arg(l, "--config");
	launch_arg(l, l->mode_file);
	launch_arg(l, "--audit");
	launch_arg(l, l->audit_path);
	/* The payload's variables are set here: egressd's lines to paste are noise. */
	if (spawn_supports(l->egressd_path, "--no-banners"))
		launch_arg(l, "--no-banners");
	for (i = 0; i < l->nupstream; i++) {
		launch_arg(l, "--upstream-dns");
		launch_arg(l, l->upstream[i]);
	}
	if (l->upstream_trust[0] != '\0') {
		/* The system store and the private CA: egressd's upstream trust and the bundle's base. */
		launch_arg(l, "--system-ca");
		launch_arg(l, l->upstream_trust);
	} else if (access(LAUNCH_SYSTEM_CA, R_OK) == 0) {
		/* The image's trust store is a link to the run bundle: the system store is here. */
		launch_arg(l, "--system-ca");
		launch_arg(l, LAUNCH_SYSTEM_CA);
	}
	if (spawn_supports(l->egressd_path, "--ca-out")) {
		launch_arg(l, "--ca-out");
		launch_arg(l, l->ca_cert);
		launch_arg(l, "--ca-bundle-out");
		launch_arg(l, l->ca_bundle);
	} else {
		log_warnx("this egressd has no --ca-out: no run CA, HTTPS is tunnelled, not "
		          "intercepted, and the payload's CA variables are not set");
		l->ca_cert[0] = l->ca_bundle[0] = '\0';
	}
	/* policyctl in the payload asks this socket (bound in launch_setup). */
	if (spawn_supports(l->egressd_path, "--control")) {
		snprintf(control, sizeof control, "%s/%s", l->run_dir, LAUNCH_CONTROL_SOCKET);
		launch_arg(l, "--control");
		launch_arg(l, control);
	}
	for (i = 0; i < l->nextra_args; i++)
		launch_arg(l, l->extra_args[i]);
}

/* The control socket egressd was told of (--control), or NULL. */
static const char *
launch_control_path(const struct launcher *l)
{
	int i;

	for (i = 0; i + 1 < l->eg.argc; i++)
		if (strcmp(l->eg.argv[i], "--control") == 0)
			return l->eg.argv[i + 1];
	return NULL;
}

/* The original resolvers, for egressd, minus our own listener. */
static void
launch_resolvers(struct launcher *l)
{
	char *all[LAUNCH_MAX_DNS];
	size_t n, i;

	if (l->resolv_conf == NULL || env_resolvers(l->resolv_conf, all, LAUNCH_MAX_DNS, &n) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (l->eg.dns_port == 53 &&
		    (strcmp(all[i], "127.0.0.1") == 0 || strcmp(all[i], "::1") == 0)) {
			free(all[i]);
			continue;
		}
		l->upstream[l->nupstream++] = all[i];
	}
}

static const char *
launch_fix_hint(void)
{
	return "Give the container CAP_NET_ADMIN (podman run --cap-add NET_ADMIN) and make sure "
	       "the kernel has nftables (nf_tables, nft_nat, nft_redirect); or run practical mode "
	       "instead (sandbox-init --mode practical, or network.mode: practical in the global "
	       "configuration), which forces nothing: programs that ignore the proxy variables "
	       "bypass it";
}

/* Checked before egressd starts, and again right before the rules. */
static int
launch_check_cap(struct launcher *l)
{
	if (l->mode == MODE_PRACTICAL || priv_has_cap(CAP_NET_ADMIN))
		return 0;
	fprintf(stderr,
	        "sandbox-init: %s mode cannot be enforced: CAP_NET_ADMIN is missing, so no "
	        "nftables rules can be installed. The command was not run. %s.\n",
	        config_mode_name(l->mode), launch_fix_hint());
	return -1;
}

/* strict and off: the rules, applied and read back, or a clear refusal. */
static int
launch_rules(struct launcher *l)
{
	struct nft_rules r;
	char err[1024];

	if (l->mode == MODE_PRACTICAL)
		return 0;
	memset(&r, 0, sizeof r);
	r.mode = l->mode;
	r.egress_uid = l->egress.uid;
	r.transparent_port = l->eg.transparent_port;
	r.dns_port = l->eg.dns_port;
	memcpy(r.serve_ports, l->serve_ports, sizeof r.serve_ports);
	r.nserve = l->nserve;
	if (launch_check_cap(l) == -1)
		return -1;
	if (nft_rules_apply(&r, err, sizeof err) == -1) {
		fprintf(stderr,
		        "sandbox-init: %s mode cannot be enforced: nftables refused the rules: %s. "
		        "The command was not run. %s.\n",
		        config_mode_name(l->mode), err, launch_fix_hint());
		return -1;
	}
	if (nft_rules_verify(&r, err, sizeof err) == -1) {
		fprintf(stderr,
		        "sandbox-init: %s mode cannot be enforced: %s. The command was not run.\n",
		        config_mode_name(l->mode), err);
		return -1;
	}
	log_info("%s mode in force: table inet %s", config_mode_name(l->mode), NFT_TABLE);
	return 0;
}

/* The run CA where the system trust store is read, written in place. */
static int
launch_trust_store(struct launcher *l)
{
	char buf[65536], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int in, out;

	if (l->trust_store == NULL || l->ca_bundle[0] == '\0')
		return 0;
	/*
	 * A store that is a link to the run bundle (the image arranges it, so
	 * that a read-only root works) already shows the run CA. A link
	 * anywhere else is refused below: it is never followed.
	 */
	if (lstat(l->trust_store, &st) == 0 && S_ISLNK(st.st_mode) &&
	    (n = readlink(l->trust_store, target, sizeof target - 1)) > 0) {
		target[n] = '\0';
		if (strcmp(target, l->ca_bundle) == 0)
			return 0;
	}
	if ((in = open(l->ca_bundle, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		fprintf(stderr, "sandbox-init: %s: %s\n", l->ca_bundle, strerror(errno));
		return -1;
	}
	out = open(l->trust_store, O_WRONLY | O_TRUNC | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out == -1) {
		fprintf(stderr, "sandbox-init: %s: %s\n", l->trust_store, strerror(errno));
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
	return 0;
}

static void
launch_stop_egressd(struct launcher *l)
{
	if (l->eg.pid > 0 && !l->egressd_done)
		kill(l->eg.pid, SIGTERM);
}

/* Everything up to the moment the payload may start; -1: it must not. */
static int
launch_setup(struct launcher *l)
{
	char err[512];
	const char *why;
	int ready;

	if (launch_check_cap(l) == -1)
		return -1;
	if ((why = spawn_find_egressd(l->egressd_flag, l->egressd_path, sizeof l->egressd_path)) !=
	    NULL) {
		fprintf(stderr, "sandbox-init: %s: %s\n",
		        l->egressd_flag ? l->egressd_flag : "egressd", why);
		return -1;
	}
	if (launch_files(l) == -1)
		return -1;
	launch_resolvers(l);
	launch_egressd_argv(l);
	l->eg.path = l->egressd_path;
	snprintf(l->proxy_url, sizeof l->proxy_url, "http://127.0.0.1:%u",
	         (unsigned)l->eg.proxy_port);
	if (spawn_bind_listeners(&l->eg, err, sizeof err) == -1) {
		fprintf(stderr, "sandbox-init: cannot bind egressd's %s\n", err);
		return -1;
	}
	if (launch_control_path(l) != NULL &&
	    spawn_open_control(&l->eg, launch_control_path(l), err, sizeof err) == -1) {
		fprintf(stderr, "sandbox-init: cannot bind egressd's %s\n", err);
		spawn_close_listeners(&l->eg);
		return -1;
	}
	/*
	 * The rules hold without it: what is lost is the audit of the
	 * packets they drop, which the rule's counter still counts.
	 */
	if (l->mode != MODE_PRACTICAL &&
	    spawn_open_nflog(&l->eg, NFT_LOG_GROUP, err, sizeof err) == -1)
		fprintf(stderr,
		        "sandbox-init: warning: %s: packets the %s mode rules drop are counted "
		        "but not audited\n",
		        err, config_mode_name(l->mode));
	ready = spawn_egressd_start(&l->eg, &l->egress, err, sizeof err);
	spawn_close_listeners(&l->eg);
	if (ready == -1) {
		fprintf(stderr, "sandbox-init: starting egressd: %s\n", err);
		return -1;
	}
	if (spawn_wait_ready(ready, l->eg.pid, l->ready_timeout_ms, err, sizeof err) == -1) {
		close(ready);
		fprintf(stderr,
		        "sandbox-init: %s. The command was not run. egressd's own messages above "
		        "say why; check the configuration with: egressd --check --config FILE\n",
		        err);
		return -1;
	}
	close(ready);
	log_info("egressd ready (pid %ld)", (long)l->eg.pid);
	if (launch_rules(l) == -1)
		return -1;
	if (l->ca_bundle[0] != '\0' && access(l->ca_bundle, R_OK) == -1) {
		log_warnx("egressd wrote no CA bundle at %s: the CA variables are not set",
		          l->ca_bundle);
		l->ca_cert[0] = l->ca_bundle[0] = '\0';
	}
	launch_extra_ca(l);
	if (launch_trust_store(l) == -1)
		return -1;
	if (l->resolv_conf != NULL && env_write_resolv(l->resolv_conf, err, sizeof err) == -1) {
		/*
		 * A read-only resolv.conf (a read-only root): in strict mode
		 * the rules send every DNS packet to egressd whatever the file
		 * names, and off mode sends none, so nothing is lost. In
		 * practical mode nothing forces DNS anyway; say what it means.
		 */
		if (errno != EROFS) {
			fprintf(stderr, "sandbox-init: resolv.conf: %s\n", err);
			return -1;
		}
		if (l->mode == MODE_PRACTICAL)
			fprintf(
			    stderr,
			    "sandbox-init: warning: %s is read-only: the payload's DNS goes to the "
			    "resolvers it names, not egressd's (strict mode redirects DNS to "
			    "egressd whatever the file says)\n",
			    l->resolv_conf);
		else
			log_info("%s is read-only; DNS is redirected to egressd by the rules",
			         l->resolv_conf);
	}
	return 0;
}

static const int launch_forward[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void
launch_sigset(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < EG_NELEM(launch_forward); i++)
		sigaddset(set, launch_forward[i]);
	sigaddset(set, SIGCHLD);
}

/* In the payload's child: its own group, the terminal, the user, then CMD. */
static void EG_NORETURN
launch_payload_child(struct launcher *l, char **env, const sigset_t *old)
{
	char err[512];
	size_t i;

	setpgid(0, 0);
	if (isatty(STDIN_FILENO)) {
		signal(SIGTTOU, SIG_IGN);
		tcsetpgrp(STDIN_FILENO, getpgrp());
	}
	for (i = 0; i < EG_NELEM(launch_forward); i++)
		signal(launch_forward[i], SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	signal(SIGTTIN, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, old, NULL);
	if (priv_drop(&l->user, err, sizeof err) == -1) {
		fprintf(stderr, "sandbox-init: dropping to the payload user: %s\n", err);
		_exit(EXIT_SETUP);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Every descriptor of sandbox-init's is close-on-exec; this holds if one is not. */
	spawn_close_from(3);
	environ = env;
	if (l->selftest) {
		l->st.egressd_pid = l->eg.pid;
		l->st.run_dir = l->run_dir;
		_exit(selftest_run(&l->st));
	}
	execvp(l->cmd[0], l->cmd);
	fprintf(stderr, "sandbox-init: %s: %s\n", l->cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static void
launch_reap(struct launcher *l)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == l->payload) {
			l->payload_status = status;
			l->payload_done = 1;
		} else if (pid == l->eg.pid) {
			l->egressd_done = 1;
			if (l->payload_done)
				continue;
			fprintf(stderr,
			        "sandbox-init: egressd exited (%s %d) while the command runs: %s\n",
			        WIFEXITED(status) ? "status" : "signal",
			        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			        l->mode == MODE_PRACTICAL
			            ? "the proxy is gone"
			            : "the rules stay in force, so the command has no network");
			if (l->fail_closed && l->payload > 0) {
				fprintf(stderr, "sandbox-init: failClosed: stopping the command\n");
				kill(-l->payload, SIGTERM);
				l->stopped_for_egressd = 1;
			}
		}
	}
}

/*
 * The init loop (tini's): signals arrive synchronously through
 * sigtimedwait, the forwarded ones go to the payload's process group, and
 * every exited child is reaped, orphans included.
 */
static int
launch_supervise(struct launcher *l)
{
	struct timespec tick = {0, 200 * 1000 * 1000};
	uint64_t kill_at = 0, stop_at = 0;
	sigset_t set;
	int sig;

	launch_sigset(&set);
	for (;;) {
		sig = sigtimedwait(&set, NULL, &tick);
		if (sig > 0 && sig != SIGCHLD && !l->payload_done)
			kill(-l->payload, sig);
		launch_reap(l);
		if (l->stopped_for_egressd && !l->payload_done) {
			if (kill_at == 0)
				kill_at = time_mono_ms() + 5000;
			else if (time_mono_ms() > kill_at)
				kill(-l->payload, SIGKILL);
		}
		if (!l->payload_done)
			continue;
		if (stop_at == 0) {
			launch_stop_egressd(l);
			stop_at = time_mono_ms() + LAUNCH_GRACE_MS;
		}
		if (l->egressd_done || l->eg.pid <= 0)
			break;
		if (time_mono_ms() > stop_at) {
			log_warnx("egressd did not stop in time: killed");
			kill(l->eg.pid, SIGKILL);
		}
	}
	launch_reap(l);
	if (l->stopped_for_egressd)
		return EXIT_SETUP;
	if (WIFSIGNALED(l->payload_status))
		return 128 + WTERMSIG(l->payload_status);
	return WEXITSTATUS(l->payload_status);
}

/*
 * egressd is done with the audit log: give it to --audit-owner (the ids
 * the host user's files have in here), so that the user can read it on
 * the host. By name, never through a link.
 */
static void
launch_audit_owner(struct launcher *l)
{
	if (!l->audit_owner_set || l->audit_path == NULL)
		return;
	if (fchownat(AT_FDCWD, l->audit_path, l->audit_uid, l->audit_gid, AT_SYMLINK_NOFOLLOW) ==
	    -1)
		log_warnx("audit log %s: cannot hand it to %u:%u: %s", l->audit_path,
		          (unsigned)l->audit_uid, (unsigned)l->audit_gid, strerror(errno));
}

static int
launch_run(struct launcher *l)
{
	struct env_opts eo;
	sigset_t none;
	char err[256], **env;
	int rc;

	memset(&eo, 0, sizeof eo);
	eo.proxy_url = l->proxy_url;
	eo.ca_cert = l->extra_ca[0] != '\0'  ? l->extra_ca
	             : l->ca_cert[0] != '\0' ? l->ca_cert
	                                     : NULL;
	eo.ca_bundle = l->ca_bundle[0] != '\0' ? l->ca_bundle : NULL;
	eo.user = &l->user;
	eo.mode = l->mode;
	env = env_build(environ, &eo);
	if ((l->payload = fork()) == -1) {
		fprintf(stderr, "sandbox-init: fork: %s\n", strerror(errno));
		env_free(env);
		return EXIT_SETUP;
	}
	if (l->payload == 0) {
		sigemptyset(&none);
		launch_payload_child(l, env, &none);
	}
	/* The child may not have run setpgid yet: do it from here as well. */
	setpgid(l->payload, l->payload);
	env_free(env);
	/* CAP_CHOWN too with --audit-owner: the audit log is handed over at the end. */
	if (priv_keep_only(((uint64_t)1 << CAP_KILL) |
	                       (l->audit_owner_set ? (uint64_t)1 << CAP_CHOWN : 0),
	                   err, sizeof err) == -1)
		log_warnx("keeping only CAP_KILL: %s", err);
	rc = launch_supervise(l);
	launch_audit_owner(l);
	return rc;
}

static void
launch_free(struct launcher *l)
{
	const char *control;
	struct stat st;
	int i;
	size_t j;

	/* egressd is gone: its control socket would only mislead policyctl. */
	if ((control = launch_control_path(l)) != NULL && lstat(control, &st) == 0 &&
	    S_ISSOCK(st.st_mode))
		(void)unlink(control);
	for (i = 0; i < l->eg.argc; i++)
		free(l->eg.argv[i]);
	for (j = 0; j < l->nupstream; j++)
		free(l->upstream[j]);
	free(l->audit_path);
}

int
main(int argc, char **argv)
{
	struct launcher l;
	sigset_t set;
	int rc;

	/*
	 * Whatever the caller left open (a root-only file, a socket) would
	 * reach egressd and the payload: nothing inherited is handed on.
	 */
	spawn_close_from(3);
	log_init("sandbox-init", LOG_LVL_INFO);
	opts_defaults(&l);
	if (opts_parse(&l, argc, argv) == -1)
		return EXIT_USAGE;
	if (opts_config(&l) == -1) {
		launch_free(&l);
		return EXIT_USAGE;
	}
	if (l.mode_flag != NULL)
		l.mode = strcmp(l.mode_flag, "strict") == 0 ? MODE_STRICT
		         : strcmp(l.mode_flag, "off") == 0  ? MODE_OFF
		                                            : MODE_PRACTICAL;
	if (geteuid() != 0) {
		fprintf(stderr, "sandbox-init: must start as root (it binds egressd's listeners, "
		                "installs the rules and drops to the payload user)\n");
		launch_free(&l);
		return EXIT_SETUP;
	}
	if (launch_users(&l) == -1) {
		launch_free(&l);
		return EXIT_SETUP;
	}
	if (l.home != NULL)
		str_copy(l.user.home, sizeof l.user.home, l.home);
	/* Signals wait in the mask until the loop takes them. */
	launch_sigset(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (launch_setup(&l) == -1) {
		launch_stop_egressd(&l);
		if (l.eg.pid > 0)
			waitpid(l.eg.pid, NULL, 0);
		launch_free(&l);
		return EXIT_SETUP;
	}
	rc = launch_run(&l);
	launch_free(&l);
	return rc;
}
