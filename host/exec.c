/*
 * Running the container runtime, always from an argv (posix_spawnp),
 * never through a shell. A short query's output is captured (bounded);
 * the run itself gets the terminal. While it runs, Ctrl-C belongs to the
 * runtime client, which is in the terminal's foreground group with us
 * and hands it to the container (podman and docker proxy signals; with a
 * TTY the key press travels as a byte); SIGTERM and SIGHUP sent to
 * opencode-sandbox alone are passed on with `RT kill --signal`, which
 * reaches sandbox-init and from it OpenCode. Once the client is gone, a
 * container it left behind is removed.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"

#define EXEC_MAX_CAPTURE (1024 * 1024)

extern char **environ;

static volatile sig_atomic_t exec_signal;

static void
exec_signal_cb(int sig)
{
	exec_signal = sig;
}

/* The child's exit status as a shell reports it (128+N for a signal). */
static int
exec_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return HOST_EXIT_RUNTIME;
}

static int
exec_wait(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return HOST_EXIT_RUNTIME;
	return exec_status(status);
}

/*
 * Run argv with stdin from /dev/null and its output (with stderr when
 * with_stderr) into out, bounded; returns its exit status, 127 when it
 * could not be started.
 */
int
exec_capture(char *const *argv, struct buf *out, int with_stderr)
{
	posix_spawn_file_actions_t fa;
	char chunk[4096];
	int fds[2], rc;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) == -1)
		return 127;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	if (with_stderr)
		posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return 127;
	}
	while ((n = read(fds[0], chunk, sizeof chunk)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (out->len < EXEC_MAX_CAPTURE)
			buf_add(out, chunk, (size_t)n);
	}
	close(fds[0]);
	return exec_wait(pid);
}

/* A helper command whose output nobody needs (kill, rm). */
int
exec_quiet(char *const *argv)
{
	struct buf out;
	int rc;

	buf_init(&out);
	rc = exec_capture(argv, &out, 1);
	buf_free(&out);
	return rc;
}

static void
exec_forward(const struct host_plan *p, int sig)
{
	struct strv a;

	memset(&a, 0, sizeof a);
	runtime_kill_argv(p, sig == SIGHUP ? "HUP" : "TERM", &a);
	exec_quiet(a.v);
	strv_free(&a);
}

/*
 * The run: the runtime client with our stdin, stdout and stderr; returns
 * its exit status (the container's, which is OpenCode's), or 125 when it
 * could not be started. keep leaves a container behind for debugging.
 */
int
exec_run(const struct host_plan *p, int keep)
{
	struct sigaction sa, old_int, old_quit, old_term, old_hup;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int rc, status, forwarded = 0;
	struct strv rm;
	pid_t pid;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGQUIT, &sa, &old_quit);
	sa.sa_handler = exec_signal_cb;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGQUIT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGHUP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&pid, p->argv.v[0], NULL, &attr, p->argv.v, environ);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		fprintf(stderr, HOST_PROG ": %s: %s\n", p->argv.v[0], strerror(rc));
		rc = HOST_EXIT_RUNTIME;
		goto out;
	}
	for (;;) {
		if (waitpid(pid, &status, 0) == pid)
			break;
		if (errno != EINTR) {
			status = HOST_EXIT_RUNTIME << 8;
			break;
		}
		if (exec_signal != 0) {
			exec_forward(p, exec_signal);
			exec_signal = 0;
			forwarded++;
		}
	}
	rc = exec_status(status);
	/*
	 * A client that was killed, or stopped for a signal, may leave the
	 * container running: --rm is the client's to do, so make sure.
	 */
	if (!keep && (forwarded > 0 || WIFSIGNALED(status) || rc >= HOST_EXIT_RUNTIME)) {
		memset(&rm, 0, sizeof rm);
		runtime_rm_argv(p, &rm);
		exec_quiet(rm.v);
		strv_free(&rm);
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return rc;
}
