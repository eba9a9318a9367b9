/*
 * sandbox-init --selftest: runs, as the payload user under the rules in
 * force, one probe per way out of the sandbox that does not pass egressd,
 * and one trust check per TLS stack the payload is likely to use, then
 * prints a table (or JSON). A probe needing a tool that is not installed
 * says "absent": it neither passes nor fails the run, but an absent tool
 * proves nothing and the table says so. Exit 0 only when every side door
 * is closed and every trust check that could run worked (at least one).
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

enum selftest_result {
	ST_CLOSED, /* side door: shut */
	ST_OPEN,   /* side door: something answered from outside */
	ST_OK,     /* trust: the handshake through egressd worked */
	ST_FAIL,   /* trust: it did not */
	ST_ABSENT, /* the tool the probe needs is not installed */
};

struct selftest_row {
	const char *probe;
	enum selftest_result result;
	char detail[256];
};

#define SELFTEST_MAX_ROWS 24

static const char *
selftest_result_name(enum selftest_result r)
{
	static const char *names[] = {"closed", "OPEN", "ok", "FAIL", "absent"};

	return names[r];
}

/* Waits for fd to be ready for events; 0 on timeout. */
static int
selftest_wait(int fd, short events, int ms)
{
	struct pollfd p = {fd, events, 0};

	return poll(&p, 1, ms) == 1;
}

/* A non-blocking connect bounded by ms; -1 with errno on failure. */
static int
selftest_connect(const struct sockaddr *sa, socklen_t len, int ms)
{
	int fd, err = 0;
	socklen_t elen = sizeof err;

	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, sa, len) == 0)
		return fd;
	if (errno != EINPROGRESS)
		goto fail;
	if (!selftest_wait(fd, POLLOUT, ms)) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1 || err != 0) {
		errno = err;
		goto fail;
	}
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static int
selftest_sockaddr(const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof *sin;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof *sin6;
		return 0;
	}
	return -1;
}

/*
 * An HTTP request on a connected socket. Closed when nothing comes back
 * or when egressd answers with its block page (X-Egress-Rule); anything
 * else came from outside.
 */
static void
selftest_http(struct selftest_row *r, int fd, const char *host, int ms)
{
	char req[512], resp[2048];
	ssize_t n;
	size_t got = 0;

	/* An IPv6 address in Host goes in brackets (RFC 9110 §7.2). */
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s%s%s\r\nConnection: close\r\n\r\n",
	         strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "");
	if (write(fd, req, strlen(req)) < 0) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "send: %s", strerror(errno));
		return;
	}
	while (got < sizeof resp - 1 && selftest_wait(fd, POLLIN, ms)) {
		if ((n = read(fd, resp + got, sizeof resp - 1 - got)) <= 0)
			break;
		got += (size_t)n;
	}
	resp[got] = '\0';
	if (got == 0) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "connected, but nothing answered");
	} else if (strcasestr(resp, "\nX-Egress-Rule:") != NULL) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "blocked by egressd: %.*s",
		         (int)strcspn(resp, "\r\n"), resp);
	} else {
		r->result = ST_OPEN;
		snprintf(r->detail, sizeof r->detail, "answered: %.*s", (int)strcspn(resp, "\r\n"),
		         resp);
	}
}

static void
selftest_tcp_addr(struct selftest_row *r, const char *addr, uint16_t port, int ms)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (addr == NULL || selftest_sockaddr(addr, port, &ss, &len) == -1) {
		r->result = ST_ABSENT;
		snprintf(r->detail, sizeof r->detail, "no target address");
		return;
	}
	if ((fd = selftest_connect((struct sockaddr *)&ss, len, ms)) == -1) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "connect %s port %u: %s", addr, port,
		         strerror(errno));
		return;
	}
	if (port == 853) {
		r->result = ST_OPEN;
		snprintf(r->detail, sizeof r->detail, "connected to %s port 853", addr);
	} else
		selftest_http(r, fd, addr, ms);
	close(fd);
}

/* A name resolved by the system resolver, then TCP port 80 with no proxy. */
static void
selftest_tcp_name(struct selftest_row *r, const char *host, int ms)
{
	struct addrinfo hints, *res = NULL;
	int fd, e;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if ((e = getaddrinfo(host, "80", &hints, &res)) != 0) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "%s not resolved: %s", host, gai_strerror(e));
		return;
	}
	if ((fd = selftest_connect(res->ai_addr, res->ai_addrlen, ms)) == -1) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "connect %s: %s", host, strerror(errno));
	} else {
		selftest_http(r, fd, host, ms);
		close(fd);
	}
	freeaddrinfo(res);
}

/* One datagram out; any datagram back means the door is open. */
static void
selftest_udp(struct selftest_row *r, const char *addr, uint16_t port, const void *msg, size_t len,
             int ms)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char buf[512];
	ssize_t n;
	int fd;

	if (addr == NULL || selftest_sockaddr(addr, port, &ss, &sl) == -1) {
		r->result = ST_ABSENT;
		snprintf(r->detail, sizeof r->detail, "no target address");
		return;
	}
	if ((fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1 ||
	    sendto(fd, msg, len, 0, (struct sockaddr *)&ss, sl) == -1) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "send to %s port %u: %s", addr, port,
		         strerror(errno));
	} else if (!selftest_wait(fd, POLLIN, ms) || (n = recv(fd, buf, sizeof buf, 0)) <= 0) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "no reply from %s port %u", addr, port);
	} else if (port == 53 && n >= 12 && ((buf[3] & 0x0f) != 0 || (buf[6] | buf[7]) == 0)) {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "answered without an address (rcode %d)",
		         buf[3] & 0x0f);
	} else {
		r->result = ST_OPEN;
		snprintf(r->detail, sizeof r->detail, "%zd bytes back from %s port %u", n, addr,
		         port);
	}
	if (fd != -1)
		close(fd);
}

/* A DNS query for name, type A, recursion desired. */
static size_t
selftest_dns_query(const char *name, unsigned char *q, size_t max)
{
	size_t n = 12, l;
	const char *p = name, *dot;

	memset(q, 0, 12);
	q[0] = 0x5e;
	q[1] = 0x1f;
	q[2] = 0x01; /* RD */
	q[5] = 1;    /* QDCOUNT */
	while (*p != '\0') {
		dot = strchr(p, '.');
		l = dot ? (size_t)(dot - p) : strlen(p);
		if (l == 0 || l > 63 || n + l + 6 > max)
			return 0;
		q[n++] = (unsigned char)l;
		memcpy(q + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	q[n++] = 0;
	q[n++] = 0;
	q[n++] = 1; /* A */
	q[n++] = 0;
	q[n++] = 1; /* IN */
	return n;
}

/* Runs argv (stdin closed, output kept) within ms; its exit status. */
static int
selftest_exec(char *const argv[], char *out, size_t outlen, int ms)
{
	uint64_t deadline = time_mono_ms() + (uint64_t)ms;
	int p[2], status, left;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, STDIN_FILENO);
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		left = (int)((int64_t)deadline - (int64_t)time_mono_ms());
		if (left <= 0 || !selftest_wait(p[0], POLLIN, left))
			break;
		if ((n = read(p[0], out + got, outlen - 1 - got)) <= 0)
			break;
		got += (size_t)n;
		if (got >= outlen - 1)
			got = 0; /* keep the tail: errors come last */
	}
	out[got] = '\0';
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static int
selftest_have(const char *tool)
{
	char path[512], *paths, *dir, *save = NULL;
	const char *env = getenv("PATH");
	int found = 0;

	paths = xstrdup(env != NULL ? env : "/usr/bin:/bin");
	for (dir = strtok_r(paths, ":", &save); dir != NULL && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof path, "%s/%s", dir, tool);
		found = access(path, X_OK) == 0;
	}
	free(paths);
	return found;
}

static void
selftest_last_line(char *out, char *detail, size_t len)
{
	size_t n = strlen(out);
	char *l;

	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	l = strrchr(out, '\n');
	snprintf(detail, len, "%s", l != NULL ? l + 1 : out);
}

/* DNS over HTTPS through whatever path the payload has, proxy included. */
static void
selftest_doh(struct selftest_row *r, const char *url, int ms)
{
	char out[4096], code[8];
	char *argv[] = {
	    "curl",         "-sk",        "-o", "/dev/null", "-w",
	    "%{http_code}", "--max-time", "5",  "-H",        "accept: application/dns-message",
	    (char *)url,    NULL};
	int rc;

	if (!selftest_have("curl")) {
		r->result = ST_ABSENT;
		snprintf(r->detail, sizeof r->detail, "curl is not installed");
		return;
	}
	rc = selftest_exec(argv, out, sizeof out, ms + 6000);
	snprintf(code, sizeof code, "%.3s", out);
	if (rc == 0 && code[0] == '2') {
		r->result = ST_OPEN;
		snprintf(r->detail, sizeof r->detail, "%s answered %s", url, code);
	} else {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "%s: curl exit %d, status %s", url, rc,
		         code[0] != '\0' ? code : "none");
	}
}

static void
selftest_nft(struct selftest_row *r, const char *cmd)
{
	char err[256];

	if (nft_run(cmd, NULL, err, sizeof err) == 0) {
		r->result = ST_OPEN;
		snprintf(r->detail, sizeof r->detail, "\"nft %s\" succeeded", cmd);
	} else {
		r->result = ST_CLOSED;
		snprintf(r->detail, sizeof r->detail, "refused: %.*s", (int)strcspn(err, "\n"),
		         err);
	}
}

static void
selftest_egressd(struct selftest_row *sig, struct selftest_row *mem, pid_t pid)
{
	char path[64];
	int fd;

	sig->result = mem->result = ST_CLOSED;
	if (pid <= 0) {
		snprintf(sig->detail, sizeof sig->detail, "egressd is not running");
		snprintf(mem->detail, sizeof mem->detail, "egressd is not running");
		return;
	}
	/* Signal 0 is the permission check of every signal, without the effect. */
	if (kill(pid, 0) == 0) {
		sig->result = ST_OPEN;
		snprintf(sig->detail, sizeof sig->detail, "the payload may signal egressd (%ld)",
		         (long)pid);
	} else
		snprintf(sig->detail, sizeof sig->detail, "kill %ld: %s", (long)pid,
		         strerror(errno));
	snprintf(path, sizeof path, "/proc/%ld/mem", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		close(fd);
		mem->result = ST_OPEN;
		snprintf(mem->detail, sizeof mem->detail, "%s is readable", path);
	} else
		snprintf(mem->detail, sizeof mem->detail, "%s: %s", path, strerror(errno));
}

/* Any readable file holding a private key in the run directory. */
static void
selftest_key(struct selftest_row *r, const char *dir)
{
	char path[512], buf[8192];
	struct dirent *d;
	ssize_t n;
	DIR *dp;
	int fd;

	r->result = ST_CLOSED;
	snprintf(r->detail, sizeof r->detail, "no readable private key in %s", dir);
	if ((dp = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL) {
		snprintf(path, sizeof path, "%s/%s", dir, d->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (strstr(buf, "PRIVATE KEY") != NULL) {
			r->result = ST_OPEN;
			snprintf(r->detail, sizeof r->detail, "%s holds a readable private key",
			         path);
			break;
		}
	}
	closedir(dp);
}

static const char selftest_node_js[] =
    "const u=new URL(process.argv[1]),tls=require('tls'),http=require('http');"
    "const p=process.env.HTTPS_PROXY||process.env.https_proxy;"
    "const go=s=>{const t=tls.connect({socket:s,host:u.hostname,servername:u.hostname,"
    "port:u.port||443},()=>{t.write('HEAD '+u.pathname+' HTTP/1.1\\r\\nHost: '+u.host+"
    "'\\r\\nConnection: close\\r\\n\\r\\n')});t.on('data',()=>process.exit(0));"
    "t.on('error',e=>{console.error(e.message);process.exit(1)})};"
    "if(!p){go(undefined)}else{const q=new URL(p);http.request({host:q.hostname,"
    "port:q.port,method:'CONNECT',path:u.hostname+':'+(u.port||443)}).on('connect',"
    "(r,s)=>{if(r.statusCode!==200){console.error('proxy said '+r.statusCode);"
    "process.exit(1)}go(s)}).on('error',e=>{console.error(e.message);process.exit(1)}).end()}"
    "setTimeout(()=>{console.error('timeout');process.exit(1)},9000);";

static const char selftest_py[] =
    "import sys, urllib.request\n"
    "urllib.request.urlopen(urllib.request.Request(sys.argv[1], method='HEAD'), timeout=9)\n";

/* One TLS stack fetching url through the payload's proxy settings. */
static void
selftest_trust(struct selftest_row *r, const char *tool, const char *url)
{
	char out[4096];
	char *curl[] = {"curl",       "-sS", "-o",        "/dev/null", "-I",
	                "--max-time", "9",   (char *)url, NULL};
	char *py[] = {"python3", "-c", (char *)selftest_py, (char *)url, NULL};
	char *node[] = {"node", "-e", (char *)selftest_node_js, (char *)url, NULL};
	char *git[] = {"git", "ls-remote", (char *)url, NULL};
	char *const *argv;
	int rc;

	if (url == NULL) {
		r->result = ST_ABSENT;
		snprintf(r->detail, sizeof r->detail, "no HTTPS URL to check (--probe-https)");
		return;
	}
	if (!selftest_have(tool)) {
		r->result = ST_ABSENT;
		snprintf(r->detail, sizeof r->detail, "%s is not installed", tool);
		return;
	}
	argv = strcmp(tool, "curl") == 0      ? curl
	       : strcmp(tool, "python3") == 0 ? py
	       : strcmp(tool, "node") == 0    ? node
	                                      : git;
	rc = selftest_exec(argv, out, sizeof out, 12000);
	/*
	 * git against a server that is not a git server fails after the
	 * handshake; only a TLS or connection failure counts against trust.
	 */
	if (rc == 0 || (argv == git && strcasestr(out, "SSL") == NULL &&
	                strcasestr(out, "certificate") == NULL &&
	                strcasestr(out, "Failed to connect") == NULL &&
	                strcasestr(out, "CONNECT") == NULL && strcasestr(out, "resolve") == NULL &&
	                strcasestr(out, "timed out") == NULL && rc != 128 + SIGKILL)) {
		r->result = ST_OK;
		snprintf(r->detail, sizeof r->detail, "TLS to %s verified", url);
		return;
	}
	r->result = ST_FAIL;
	selftest_last_line(out, r->detail, sizeof r->detail);
	if (r->detail[0] == '\0')
		snprintf(r->detail, sizeof r->detail, "exit %d", rc);
}

static void
selftest_print(const struct selftest_row *rows, size_t n, int json, int pass)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	if (json) {
		buf_printf(&b, "{\"ok\":%s,\"probes\":[", pass ? "true" : "false");
		for (i = 0; i < n; i++) {
			buf_printf(
			    &b, "%s{\"probe\":\"%s\",\"result\":\"%s\",\"detail\":", i ? "," : "",
			    rows[i].probe, selftest_result_name(rows[i].result));
			json_escape_str(&b, rows[i].detail);
			buf_addc(&b, '}');
		}
		buf_adds(&b, "]}\n");
	} else {
		buf_printf(&b, "%-16s %-7s %s\n", "probe", "result", "detail");
		for (i = 0; i < n; i++)
			buf_printf(&b, "%-16s %-7s %s\n", rows[i].probe,
			           selftest_result_name(rows[i].result), rows[i].detail);
		buf_printf(&b, "selftest: %s\n",
		           pass ? "every side door is closed and trust works" : "FAILED");
	}
	fputs(buf_cstr(&b), stdout);
	fflush(stdout);
	buf_free(&b);
}

/* Runs every probe as the calling (payload) user; 0 when all hold. */
int
selftest_run(const struct selftest_opts *o)
{
	static const char *trust[] = {"curl", "python3", "node", "git"};
	struct selftest_row rows[SELFTEST_MAX_ROWS];
	unsigned char q[512];
	size_t n = 0, i, ql;
	int ms = o->timeout_ms > 0 ? o->timeout_ms : 3000, pass = 1, trusted = 0;

	memset(rows, 0, sizeof rows);
	rows[n].probe = "tcp-direct";
	selftest_tcp_addr(&rows[n++], o->addr, 80, ms);
	rows[n].probe = "tcp-name";
	selftest_tcp_name(&rows[n++], o->host, ms);
	rows[n].probe = "udp";
	selftest_udp(&rows[n++], o->addr, 7, "probe", 5, ms);
	rows[n].probe = "quic";
	selftest_udp(&rows[n++], o->addr, 443, "\xc0\x00\x00\x00\x01", 5, ms);
	rows[n].probe = "dns-direct";
	ql = selftest_dns_query(o->host, q, sizeof q);
	selftest_udp(&rows[n++], o->addr, 53, q, ql, ms);
	rows[n].probe = "dns-over-tls";
	selftest_tcp_addr(&rows[n++], o->addr, 853, ms);
	rows[n].probe = "dns-over-https";
	selftest_doh(&rows[n++], o->doh_url, ms);
	rows[n].probe = "ipv6";
	selftest_tcp_addr(&rows[n++], o->addr6, 80, ms);
	rows[n].probe = "nft-list";
	selftest_nft(&rows[n++], "list ruleset");
	rows[n].probe = "nft-flush";
	selftest_nft(&rows[n++], "flush ruleset");
	rows[n].probe = "signal-egressd";
	rows[n + 1].probe = "egressd-memory";
	selftest_egressd(&rows[n], &rows[n + 1], o->egressd_pid);
	n += 2;
	rows[n].probe = "ca-key";
	selftest_key(&rows[n++], o->run_dir);
	for (i = 0; i < EG_NELEM(trust); i++) {
		rows[n].probe = xasprintf("trust-%s", trust[i]);
		selftest_trust(&rows[n++], trust[i], o->https);
	}
	for (i = 0; i < n; i++) {
		if (rows[i].result == ST_OPEN || rows[i].result == ST_FAIL)
			pass = 0;
		if (rows[i].result == ST_OK)
			trusted = 1;
	}
	if (!trusted)
		pass = 0;
	selftest_print(rows, n, o->json, pass);
	for (i = n - EG_NELEM(trust); i < n; i++)
		free((char *)rows[i].probe);
	return pass ? 0 : 1;
}
