/*
 * egressd as sandbox-init's child: its listeners are bound here while the
 * launcher is still root (so egressd needs no privilege at all, and a
 * privileged port like 53 is no problem), handed down with the LISTEN_FDS
 * convention (fds from 3, LISTEN_FDNAMES naming them), and egressd is
 * started as its own user and waited for until it writes READY.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

#define SPAWN_HELP_MAX     65536
#define SPAWN_HELP_TIMEOUT 5000

static const char *spawn_names[SPAWN_NLISTENERS] = {
    "proxy", "transparent", "dns", "dns-tcp", "transparent", "dns", "dns-tcp", "nflog", "control",
};

/*
 * egressd next to our own executable, then on PATH. A path given by the
 * caller (--egressd) is taken as it is.
 */
const char *
spawn_find_egressd(const char *given, char *out, size_t len)
{
	char self[PATH_MAX], *slash, *path, *dir, *save = NULL;
	ssize_t n;

	if (given != NULL) {
		if (access(given, X_OK) == -1)
			return "not an executable file";
		snprintf(out, len, "%s", given);
		return NULL;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof self - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			snprintf(out, len, "%s/egressd", self);
			if (access(out, X_OK) == 0)
				return NULL;
		}
	}
	if ((path = getenv("PATH")) == NULL)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	path = xstrdup(path);
	for (dir = strtok_r(path, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/egressd", dir);
		if (access(out, X_OK) == 0) {
			free(path);
			return NULL;
		}
	}
	free(path);
	return "egressd not found next to sandbox-init nor on PATH";
}

/*
 * Does this egressd know a flag? Its --help is read: an egressd older than
 * the launcher is told only what it understands, and the launcher says
 * what that costs instead of failing to start it.
 */
int
spawn_supports(const char *path, const char *flag)
{
	char *help;
	size_t got = 0;
	ssize_t n;
	int p[2], status, found = 0;
	struct pollfd pfd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		return 0;
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execl(path, path, "--help", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	help = xmalloc(SPAWN_HELP_MAX + 1);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	while (got < SPAWN_HELP_MAX && poll(&pfd, 1, SPAWN_HELP_TIMEOUT) == 1) {
		if ((n = read(p[0], help + got, SPAWN_HELP_MAX - got)) <= 0)
			break;
		got += (size_t)n;
	}
	help[got] = '\0';
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	found = strstr(help, flag) != NULL;
	free(help);
	return found;
}

static int
spawn_bind_one(int af, int type, uint16_t port, char *err, size_t errlen, const char *what)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	socklen_t len;
	int fd, one = 1;

	memset(&sin, 0, sizeof sin);
	memset(&sin6, 0, sizeof sin6);
	if (af == AF_INET) {
		sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa = (struct sockaddr *)&sin;
		len = sizeof sin;
	} else {
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(port);
		sin6.sin6_addr = in6addr_loopback;
		sa = (struct sockaddr *)&sin6;
		len = sizeof sin6;
	}
	if ((fd = socket(af, type | SOCK_CLOEXEC, 0)) == -1)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (af == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, sa, len) == -1 || (type == SOCK_STREAM && listen(fd, 1024) == -1))
		goto fail;
	return fd;
fail:
	snprintf(err, errlen, "%s on %s port %u: %s", what, af == AF_INET ? "127.0.0.1" : "[::1]",
	         (unsigned)port, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

/*
 * Binds every listener on loopback: proxy, transparent, dns (UDP) and
 * dns-tcp on 127.0.0.1, and the transparent and DNS ones again on ::1
 * when the namespace has IPv6 (redirected IPv6 arrives at ::1).
 */
int
spawn_bind_listeners(struct spawn_egressd *s, char *err, size_t errlen)
{
	static const struct {
		int af, type, which;
		const char *what;
	} tab[SPAWN_NFLOG] = {
	    {AF_INET, SOCK_STREAM, 0, "proxy listener"},
	    {AF_INET, SOCK_STREAM, 1, "transparent listener"},
	    {AF_INET, SOCK_DGRAM, 2, "DNS (UDP) socket"},
	    {AF_INET, SOCK_STREAM, 2, "DNS (TCP) listener"},
	    {AF_INET6, SOCK_STREAM, 1, "transparent listener"},
	    {AF_INET6, SOCK_DGRAM, 2, "DNS (UDP) socket"},
	    {AF_INET6, SOCK_STREAM, 2, "DNS (TCP) listener"},
	};
	uint16_t port;
	int i;

	for (i = 0; i < SPAWN_NLISTENERS; i++)
		s->fds[i] = -1;
	for (i = 0; i < SPAWN_NFLOG; i++) {
		port = tab[i].which == 0   ? s->proxy_port
		       : tab[i].which == 1 ? s->transparent_port
		                           : s->dns_port;
		s->fds[i] = spawn_bind_one(tab[i].af, tab[i].type, port, err, errlen, tab[i].what);
		if (s->fds[i] != -1)
			continue;
		/* No IPv6 loopback: there is no IPv6 to redirect either. */
		if (tab[i].af == AF_INET6 && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT)) {
			log_debug("no IPv6 loopback: %s", err);
			continue;
		}
		spawn_close_listeners(s);
		return -1;
	}
	return 0;
}

/* One netfilter configuration command for group, answered by an ack. */
static int
spawn_nflog_config(int fd, uint16_t group, uint16_t attr, const void *val, size_t vlen)
{
	unsigned char msg[64], ack[256];
	struct nlmsghdr *h = (struct nlmsghdr *)(void *)msg, *r;
	struct nfgenmsg *g;
	struct nlattr *a;
	struct nlmsgerr *e;
	ssize_t n;

	memset(msg, 0, sizeof msg);
	h->nlmsg_len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof *g) + NLA_HDRLEN + NLA_ALIGN(vlen);
	h->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = attr;
	g = (struct nfgenmsg *)(void *)(msg + NLMSG_HDRLEN);
	g->nfgen_family = AF_UNSPEC;
	g->version = NFNETLINK_V0;
	g->res_id = htons(group);
	a = (struct nlattr *)(void *)(msg + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof *g));
	a->nla_len = (uint16_t)(NLA_HDRLEN + vlen);
	a->nla_type = attr;
	memcpy((unsigned char *)a + NLA_HDRLEN, val, vlen);
	if (send(fd, msg, h->nlmsg_len, 0) != (ssize_t)h->nlmsg_len)
		return -1;
	if ((n = recv(fd, ack, sizeof ack, 0)) < (ssize_t)(NLMSG_HDRLEN + sizeof *e))
		return n < 0 ? -1 : (errno = EPROTO, -1);
	r = (struct nlmsghdr *)(void *)ack;
	if (r->nlmsg_type != NLMSG_ERROR) {
		errno = EPROTO;
		return -1;
	}
	e = (struct nlmsgerr *)(void *)(ack + NLMSG_HDRLEN);
	if (e->error != 0) {
		errno = -e->error;
		return -1;
	}
	return 0;
}

/*
 * The netlink socket egressd reads dropped packets from: bound to the
 * NFLOG group here, where binding needs CAP_NET_ADMIN, copying the first
 * 128 bytes of each packet (IP and transport headers). The queue
 * threshold is one packet: by default the kernel batches up to 100
 * packets or one second, so a drop just before the payload exits would
 * reach egressd after it stopped, and every `packet` event would be
 * stamped late. The rules' rate limit bounds what flushing each costs.
 */
int
spawn_open_nflog(struct spawn_egressd *s, uint16_t group, char *err, size_t errlen)
{
	struct sockaddr_nl sa;
	struct nfulnl_msg_config_cmd cmd;
	struct nfulnl_msg_config_mode mode;
	uint32_t qthresh = htonl(1);
	int fd;

	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER)) == -1)
		goto fail;
	memset(&sa, 0, sizeof sa);
	sa.nl_family = AF_NETLINK;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == -1)
		goto fail;
	cmd.command = NFULNL_CFG_CMD_BIND;
	if (spawn_nflog_config(fd, group, NFULA_CFG_CMD, &cmd, sizeof cmd) == -1)
		goto fail;
	memset(&mode, 0, sizeof mode);
	mode.copy_range = htonl(128);
	mode.copy_mode = NFULNL_COPY_PACKET;
	if (spawn_nflog_config(fd, group, NFULA_CFG_MODE, &mode, sizeof mode) == -1)
		goto fail;
	if (spawn_nflog_config(fd, group, NFULA_CFG_QTHRESH, &qthresh, sizeof qthresh) == -1)
		goto fail;
	s->fds[SPAWN_NFLOG] = fd;
	return 0;
fail:
	snprintf(err, errlen, "NFLOG group %u: %s", (unsigned)group, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

/*
 * egressd's control socket at path, bound here as root in the run
 * directory, which only root may write: the payload can connect to it
 * (mode 0666: it may ask why it was blocked) but never replace it. A
 * socket left by an earlier run is removed; anything else at path is an
 * error.
 */
int
spawn_open_control(struct spawn_egressd *s, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd = -1;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0 && (!S_ISSOCK(st.st_mode) || unlink(path) == -1)) {
		if (!S_ISSOCK(st.st_mode))
			errno = EEXIST;
		goto fail;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1 || chmod(path, 0666) == -1 ||
	    listen(fd, 128) == -1)
		goto fail;
	s->fds[SPAWN_CONTROL] = fd;
	return 0;
fail:
	snprintf(err, errlen, "control socket %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

void
spawn_close_listeners(struct spawn_egressd *s)
{
	int i;

	for (i = 0; i < SPAWN_NLISTENERS; i++) {
		if (s->fds[i] != -1)
			close(s->fds[i]);
		s->fds[i] = -1;
	}
}

/* LISTEN_FDS and LISTEN_FDNAMES for the listeners bound, in fd order. */
void
spawn_listen_env(const struct spawn_egressd *s, char *nfds, size_t nlen, char *names,
                 size_t namelen)
{
	int i, n = 0;
	size_t used = 0;

	names[0] = '\0';
	for (i = 0; i < SPAWN_NLISTENERS; i++) {
		if (s->fds[i] == -1)
			continue;
		used += (size_t)snprintf(names + used, namelen > used ? namelen - used : 0, "%s%s",
		                         n > 0 ? ":" : "", spawn_names[i]);
		n++;
	}
	snprintf(nfds, nlen, "%d", n);
}

/*
 * Closes every descriptor from lowest up. close_range where the kernel
 * has it (5.9), else each fd /proc/self/fd lists: a limit of open files
 * in the millions makes a blind loop to RLIMIT_NOFILE far too slow.
 */
void
spawn_close_from(int lowest)
{
	int fds[256], n, i, dfd;
	struct dirent *d;
	DIR *dir;
	long v;

	if (close_range((unsigned)lowest, ~0U, 0) == 0)
		return;
	/* Gathered before closing: closing while reading the directory skips entries. */
	do {
		if ((dir = opendir("/proc/self/fd")) == NULL)
			return;
		dfd = dirfd(dir);
		n = 0;
		while (n < (int)EG_NELEM(fds) && (d = readdir(dir)) != NULL) {
			v = strtol(d->d_name, NULL, 10);
			if (d->d_name[0] >= '0' && d->d_name[0] <= '9' && v >= lowest && v != dfd)
				fds[n++] = (int)v;
		}
		closedir(dir);
		for (i = 0; i < n; i++)
			close(fds[i]);
	} while (n == (int)EG_NELEM(fds));
}

/*
 * In the child: the listeners at 3, 4, ... in order, the ready pipe right
 * after them. Moved above every target first, so no dup2 overwrites a
 * descriptor still to be moved. Nothing else is handed on.
 */
static int
spawn_child_fds(const struct spawn_egressd *s, int ready, int *readyfd)
{
	int high[SPAWN_NLISTENERS + 1], i, n = 0, fd;

	for (i = 0; i < SPAWN_NLISTENERS; i++) {
		if (s->fds[i] == -1)
			continue;
		if ((high[n++] = fcntl(s->fds[i], F_DUPFD_CLOEXEC, 64)) == -1)
			return -1;
	}
	if ((high[n] = fcntl(ready, F_DUPFD_CLOEXEC, 64)) == -1)
		return -1;
	for (i = 0; i <= n; i++) {
		fd = 3 + i;
		if (dup2(high[i], fd) == -1)
			return -1;
		close(high[i]);
	}
	*readyfd = 3 + n;
	spawn_close_from(*readyfd + 1);
	return 0;
}

static void EG_NORETURN
spawn_child(struct spawn_egressd *s, const struct priv_user *u, int ready)
{
	char err[256], nfds[16], names[256], pidbuf[32], readyarg[16];
	char *env[8], **argv;
	int readyfd, i;

	sigset_t none;

	/* The launcher's blocked signals and ignored SIGPIPE are not egressd's. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTTIN, SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	setpgid(0, 0);
	spawn_listen_env(s, nfds, sizeof nfds, names, sizeof names);
	if (spawn_child_fds(s, ready, &readyfd) == -1) {
		fprintf(stderr, "sandbox-init: egressd descriptors: %s\n", strerror(errno));
		_exit(127);
	}
	if (priv_drop(u, err, sizeof err) == -1) {
		fprintf(stderr, "sandbox-init: dropping to the egressd user: %s\n", err);
		_exit(127);
	}
	/* Cleared by the uid change above, so set after it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	snprintf(pidbuf, sizeof pidbuf, "LISTEN_PID=%ld", (long)getpid());
	i = 0;
	env[i++] = xasprintf("LISTEN_FDS=%s", nfds);
	env[i++] = pidbuf;
	env[i++] = xasprintf("LISTEN_FDNAMES=%s", names);
	env[i++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	env[i++] = "HOME=/";
	env[i] = NULL;
	snprintf(readyarg, sizeof readyarg, "%d", readyfd);
	argv = xcalloc((size_t)s->argc + 4, sizeof *argv);
	for (i = 0; i < s->argc; i++)
		argv[i] = s->argv[i];
	argv[i++] = "--ready-fd";
	argv[i++] = readyarg;
	argv[i] = NULL;
	fcntl(readyfd, F_SETFD, 0);
	for (i = 3; i < readyfd; i++)
		fcntl(i, F_SETFD, 0);
	execve(s->path, argv, env);
	fprintf(stderr, "sandbox-init: exec %s: %s\n", s->path, strerror(errno));
	_exit(127);
}

/*
 * Starts egressd as u with the listeners of s and --ready-fd; returns the
 * read end of the ready pipe, or -1.
 */
int
spawn_egressd_start(struct spawn_egressd *s, const struct priv_user *u, char *err, size_t errlen)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((s->pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (s->pid == 0) {
		close(p[0]);
		spawn_child(s, u, p[1]);
	}
	close(p[1]);
	return p[0];
}

/*
 * Waits up to timeout_ms for READY on fd. egressd exiting first, or
 * closing the pipe without the line, is a failure with its exit status.
 */
int
spawn_wait_ready(int fd, pid_t pid, int timeout_ms, char *err, size_t errlen)
{
	char line[16];
	size_t got = 0;
	struct pollfd pfd = {fd, POLLIN, 0};
	uint64_t deadline = time_mono_ms() + (uint64_t)timeout_ms;
	int64_t left;
	ssize_t n;
	int status;

	while (got < 6) {
		left = (int64_t)deadline - (int64_t)time_mono_ms();
		if (left <= 0) {
			snprintf(err, errlen, "egressd was not ready within %d ms", timeout_ms);
			return -1;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if ((n = read(fd, line + got, sizeof line - 1 - got)) <= 0)
			break;
		got += (size_t)n;
	}
	line[got] = '\0';
	if (got >= 6 && strncmp(line, "READY\n", 6) == 0)
		return 0;
	/* The pipe closes as egressd exits: give its status a moment. */
	for (n = 0; n < 100 && waitpid(pid, &status, WNOHANG) == 0; n++)
		usleep(10000);
	if (n < 100) {
		if (WIFEXITED(status))
			snprintf(err, errlen, "egressd exited with status %d before it was ready",
			         WEXITSTATUS(status));
		else
			snprintf(err, errlen, "egressd was killed by signal %d before it was ready",
			         WTERMSIG(status));
	} else
		snprintf(err, errlen, "egressd closed its ready pipe without saying READY");
	return -1;
}
