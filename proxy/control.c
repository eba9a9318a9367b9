/*
 * egressd's control socket (--control PATH): a Unix stream socket on the
 * event loop where a local client sends one JSON request line and gets one
 * JSON answer line, then the connection ends. `explain` (the live policy's
 * answer, dryrun.c), `status` (status.c) and `metrics` (metrics.c) are
 * open to any peer that can connect, the payload included: it may ask why
 * it was blocked; `reload` only to root and egressd's own uid, known from
 * SO_PEERCRED. Everything a client sends is untrusted and bounded: the
 * line's size, the time to send it, the clients at once and the bytes held
 * for all of them; each breach gets a clear error answer. No answer holds a
 * key, a header value or a body (docs/control.md).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>

#include "audit.h"
#include "proxy.h"

#define CONTROL_BACKLOG    128
#define CONTROL_WRITE_SECS 5    /* to take the answer */
#define CONTROL_TARGET_MAX 8192 /* explain's host or URL */
#define CONTROL_VALUE_MAX  8192 /* a content type or a header value */
#define CONTROL_METHOD_MAX 32
#define CONTROL_NAME_MAX   128 /* a header name */
#define CONTROL_BUSY_ANSWER                                                                        \
	"{\"ok\":false,\"code\":\"busy\",\"error\":\"egressd is answering too many control "       \
	"clients; try again\"}\n"

struct control_client {
	TAILQ_ENTRY(control_client) entry;
	struct control *ctl;
	struct bufferevent *bev;
	struct event *deadline; /* the whole request line within CONTROL_REQUEST_SECS */
	struct dryrun *dr;      /* an explain waiting for the resolver */
	size_t held;            /* input bytes counted in ctl->held */
	size_t scanned;         /* input bytes known to hold no newline */
	int cred;               /* uid is the peer's (SO_PEERCRED answered) */
	uid_t uid;
	pid_t pid;
	int answered;
};

struct control {
	struct egressd *e;
	struct evconnlistener *lev;
	char *path;
	int owned; /* bound here: removed at exit if it is still ours */
	dev_t dev;
	ino_t ino;
	TAILQ_HEAD(, control_client) clients;
	unsigned nclients;
	size_t held; /* request bytes held for every client */
};

static const char *const control_cmds[] = {
    [CONTROL_EXPLAIN] = "explain",
    [CONTROL_STATUS] = "status",
    [CONTROL_METRICS] = "metrics",
    [CONTROL_RELOAD] = "reload",
};

/* --- the request parser: untrusted bytes to a checked request --- */

static const char *control_err(struct control_request *, const char *, ...) EG_PRINTF(2, 3);

/*
 * Keep the reason a request is refused; returns it. It may quote the
 * request (a command's name, the JSON parser's view of the input): its
 * control characters become '?', so the answer stays one line.
 */
static const char *
control_err(struct control_request *r, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof r->error, fmt, ap);
	va_end(ap);
	for (i = 0; r->error[i] != '\0'; i++)
		if ((unsigned char)r->error[i] < 0x20 || r->error[i] == 0x7f)
			r->error[i] = '?';
	return r->error;
}

/* Strict base64 (RFC 4648 §4, padded); the length decoded, or -1. */
static ssize_t
control_base64(const char *in, size_t len, char *out)
{
	uint32_t v = 0;
	size_t i, pad = 0, n = 0;
	int c, d;

	if (len % 4 != 0)
		return -1;
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (c == '=') {
			/* Only at the end, at most two. */
			if (i + 2 < len || (i + 1 < len && in[i + 1] != '='))
				return -1;
			pad++;
			d = 0;
		} else if (pad > 0)
			return -1;
		else if (c >= 'A' && c <= 'Z')
			d = c - 'A';
		else if (c >= 'a' && c <= 'z')
			d = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			d = c - '0' + 52;
		else if (c == '+')
			d = 62;
		else if (c == '/')
			d = 63;
		else
			return -1;
		v = v << 6 | (uint32_t)d;
		if (i % 4 == 3) {
			out[n++] = (char)(v >> 16);
			out[n++] = (char)(v >> 8);
			out[n++] = (char)v;
			v = 0;
		}
	}
	if (pad > 2)
		return -1;
	return (ssize_t)(n - pad);
}

/* A string member of at most max bytes without control characters; "" when absent. */
static const char *
control_string(struct control_request *r, json_t *v, const char *key, size_t max, const char **out)
{
	const char *s;
	size_t len, i;

	*out = NULL;
	if (v == NULL)
		return NULL;
	if (!json_is_string(v))
		return control_err(r, "\"%s\" must be a string", key);
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0 || len > max)
		return control_err(r, "\"%s\" is empty or too long", key);
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return control_err(r, "\"%s\" holds a control character", key);
	*out = s;
	return NULL;
}

/* A header field value as a request line could carry it: no CR, LF or other controls. */
static int
control_field_value(const char *v)
{
	for (; *v != '\0'; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
			return 0;
	return 1;
}

static const char *
control_parse_headers(struct control_request *r, json_t *arr)
{
	json_t *h, *name, *value;
	const char *err, *k;
	size_t i;

	if (arr == NULL)
		return NULL;
	if (!json_is_array(arr))
		return control_err(r, "\"%s\" must be an array", "headers");
	if (json_array_size(arr) > CONTROL_MAX_HEADERS)
		return control_err(r, "more than %d headers", CONTROL_MAX_HEADERS);
	json_array_foreach(arr, i, h)
	{
		if (!json_is_object(h) || json_object_size(h) != 2 ||
		    (name = json_object_get(h, "name")) == NULL ||
		    (value = json_object_get(h, "value")) == NULL)
			return control_err(r, "a header is {\"name\": ..., \"value\": ...}");
		if ((err = control_string(r, name, "name", CONTROL_NAME_MAX, &k)) != NULL)
			return err;
		if (!text_http_token(k, strlen(k)))
			return control_err(r, "header name \"%s\" is not a token", k);
		r->header_names[r->nheaders] = k;
		if (!json_is_string(value) || json_string_length(value) > CONTROL_VALUE_MAX ||
		    !control_field_value(json_string_value(value)))
			return control_err(r, "the value of header \"%s\" is not a field value", k);
		r->header_values[r->nheaders++] = json_string_value(value);
	}
	return NULL;
}

static const char *
control_parse_body(struct control_request *r, json_t *body, json_t *b64)
{
	const char *s;
	size_t len;
	ssize_t n;

	if (body != NULL && b64 != NULL)
		return control_err(r, "give \"body\" or \"body_base64\", not both");
	if (body == NULL && b64 == NULL)
		return NULL;
	if (!json_is_string(body != NULL ? body : b64))
		return control_err(r, "\"%s\" must be a string",
		                   body != NULL ? "body" : "body_base64");
	s = json_string_value(body != NULL ? body : b64);
	len = json_string_length(body != NULL ? body : b64);
	if ((body != NULL && len > CONTROL_MAX_BODY) ||
	    (b64 != NULL && len > (CONTROL_MAX_BODY + 2) / 3 * 4))
		return control_err(r, "the body is over 1 MiB: send its first 1 MiB with "
		                      "\"body_truncated\": true");
	r->body = xmalloc(len + 1);
	if (body != NULL) {
		memcpy(r->body, s, len);
		r->body_len = len;
	} else {
		if ((n = control_base64(s, len, r->body)) < 0)
			return control_err(r, "\"body_base64\" is not base64");
		r->body_len = (size_t)n;
	}
	r->body[r->body_len] = '\0';
	return NULL;
}

static const char *
control_parse_explain(struct control_request *r, json_t *root)
{
	static const char *const known[] = {
	    "cmd",     "target", "method",      "content_type",
	    "headers", "body",   "body_base64", "body_truncated",
	};
	const char *key, *err;
	json_t *v;
	size_t i;

	json_object_foreach(root, key, v)
	{
		for (i = 0; i < EG_NELEM(known) && strcmp(key, known[i]) != 0; i++)
			;
		if (i == EG_NELEM(known))
			return control_err(r, "unknown field \"%s\" for explain", key);
	}
	if ((err = control_string(r, json_object_get(root, "target"), "target", CONTROL_TARGET_MAX,
	                          &r->target)) != NULL)
		return err;
	if (r->target == NULL)
		return control_err(r, "explain needs \"target\": a host or URL");
	if ((err = control_string(r, json_object_get(root, "method"), "method", CONTROL_METHOD_MAX,
	                          &r->method)) != NULL)
		return err;
	if (r->method == NULL)
		r->method = "GET";
	else if (!text_http_token(r->method, strlen(r->method)))
		return control_err(r, "invalid method \"%s\"", r->method);
	if ((err = control_string(r, json_object_get(root, "content_type"), "content_type",
	                          CONTROL_VALUE_MAX, &r->content_type)) != NULL)
		return err;
	if ((err = control_parse_headers(r, json_object_get(root, "headers"))) != NULL)
		return err;
	if ((v = json_object_get(root, "body_truncated")) != NULL) {
		if (!json_is_boolean(v))
			return control_err(r, "\"%s\" must be true or false", "body_truncated");
		r->body_truncated = json_is_true(v);
	}
	return control_parse_body(r, json_object_get(root, "body"),
	                          json_object_get(root, "body_base64"));
}

/*
 * Parse one request line (without its newline): a JSON object whose "cmd"
 * names the command, with explain's fields (docs/control.md). NULL, or
 * the reason it is refused; either way control_request_free releases r.
 */
const char *
control_request_parse(const char *line, size_t len, struct control_request *r)
{
	json_error_t jerr;
	json_t *root, *cmd;
	const char *name;
	size_t i;

	memset(r, 0, sizeof *r);
	if (len > CONTROL_MAX_REQUEST)
		return control_err(r, "the request is over %d bytes", CONTROL_MAX_REQUEST);
	if ((root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr)) == NULL)
		return control_err(r, "not JSON: %s (column %d)", jerr.text, jerr.column);
	r->root = root;
	if (!json_is_object(root))
		return control_err(r, "the request is a JSON object, not %s",
		                   json_is_array(root) ? "an array" : "a scalar");
	cmd = json_object_get(root, "cmd");
	if (cmd == NULL || !json_is_string(cmd))
		return control_err(r,
		                   "\"cmd\" is missing: one of explain, status, metrics, reload");
	name = json_string_value(cmd);
	for (i = 0; i < EG_NELEM(control_cmds) && strcmp(name, control_cmds[i]) != 0; i++)
		;
	if (i == EG_NELEM(control_cmds) || strlen(name) != json_string_length(cmd))
		return control_err(r,
		                   "unknown command \"%.40s\": one of explain, status, metrics, "
		                   "reload",
		                   name);
	r->cmd = (enum control_cmd)i;
	if (r->cmd == CONTROL_EXPLAIN)
		return control_parse_explain(r, root);
	if (json_object_size(root) != 1)
		return control_err(r, "%s takes no other fields", name);
	return NULL;
}

void
control_request_free(struct control_request *r)
{
	if (r->root != NULL)
		json_decref(r->root);
	free(r->body);
	memset(r, 0, sizeof *r);
}

/* --- answers --- */

static void control_client_free(struct control_client *);

/* Queue the answer line and stop reading: the connection ends once it is written. */
static void
control_answer(struct control_client *cl, const char *json, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(cl->bev);

	cl->answered = 1;
	evtimer_del(cl->deadline);
	bufferevent_disable(cl->bev, EV_READ);
	evbuffer_add(out, json, len);
	evbuffer_add(out, "\n", 1);
	bufferevent_enable(cl->bev, EV_WRITE);
}

static void
control_error(struct control_client *cl, const char *code, const char *msg)
{
	struct buf b;

	cl->ctl->e->m.control_errors++;
	buf_init(&b);
	buf_adds(&b, "{\"ok\":false,\"code\":");
	json_escape_str(&b, code);
	buf_adds(&b, ",\"error\":");
	json_escape_str(&b, msg);
	buf_addc(&b, '}');
	control_answer(cl, b.data, b.len);
	buf_free(&b);
}

/* {"ok":true,"KEY":VALUE} where VALUE is JSON already. */
static void
control_ok(struct control_client *cl, const char *key, const char *value, size_t len)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "{\"ok\":true,");
	json_escape_str(&b, key);
	buf_addc(&b, ':');
	buf_add(&b, value, len);
	buf_addc(&b, '}');
	control_answer(cl, b.data, b.len);
	buf_free(&b);
}

static void
control_explain_cb(void *arg, const char *json, size_t len, const char *err)
{
	struct control_client *cl = arg;

	cl->dr = NULL;
	if (json == NULL) {
		control_error(cl, "bad-request", err);
		return;
	}
	control_ok(cl, "explain", json, len);
}

/*
 * The SIGHUP path, for root and egressd's own user only: anyone else
 * could make egressd re-read files a user is still editing.
 */
static void
control_reload(struct control_client *cl)
{
	struct egressd *e = cl->ctl->e;
	struct buf errs, b;
	char msg[256];
	int rc;

	if (!cl->cred || (cl->uid != 0 && cl->uid != geteuid())) {
		snprintf(msg, sizeof msg,
		         "reload is allowed only to root and to egressd's own user (uid %ld); the "
		         "client is uid %ld",
		         (long)geteuid(), cl->cred ? (long)cl->uid : -1L);
		log_warnx("control: refused reload from uid %ld (pid %ld)",
		          cl->cred ? (long)cl->uid : -1L, cl->cred ? (long)cl->pid : -1L);
		control_error(cl, "forbidden", msg);
		return;
	}
	buf_init(&errs);
	buf_init(&b);
	rc = egressd_reload(e, &errs);
	buf_printf(&b, "{\"loaded\":%s,\"generation\":%llu,\"mode\":", rc == 0 ? "true" : "false",
	           (unsigned long long)e->generation);
	json_escape_str(&b, config_mode_name(policy_mode(e->policy)));
	buf_adds(&b, ",\"errors\":");
	json_escape_str(&b, rc == 0 ? NULL : buf_cstr(&errs));
	buf_addc(&b, '}');
	control_ok(cl, "reload", b.data, b.len);
	buf_free(&b);
	buf_free(&errs);
}

static void
control_dispatch(struct control_client *cl, const char *line, size_t len)
{
	struct egressd *e = cl->ctl->e;
	struct control_request r;
	struct metrics_snapshot snap;
	const char *err;
	struct buf b, text;

	e->m.control_requests++;
	if ((err = control_request_parse(line, len, &r)) != NULL) {
		control_error(cl, "bad-request", err);
		control_request_free(&r);
		return;
	}
	buf_init(&b);
	buf_init(&text);
	switch (r.cmd) {
	case CONTROL_EXPLAIN:
		/* The dryrun takes the request; its callback may run before this returns. */
		cl->dr = dryrun_start(e, &r, control_explain_cb, cl);
		break;
	case CONTROL_STATUS:
		status_json(e, &b);
		control_ok(cl, "status", b.data, b.len);
		break;
	case CONTROL_METRICS:
		/* The exposition text, as one JSON string. */
		metrics_gather(e, &snap);
		metrics_format(&snap, &text);
		json_escape(&b, text.data, text.len);
		control_ok(cl, "metrics", b.data, b.len);
		break;
	case CONTROL_RELOAD:
		control_reload(cl);
		break;
	}
	buf_free(&b);
	buf_free(&text);
	control_request_free(&r);
}

/* --- clients --- */

static void
control_client_free(struct control_client *cl)
{
	struct control *ctl = cl->ctl;

	dryrun_cancel(cl->dr);
	ctl->held -= cl->held;
	TAILQ_REMOVE(&ctl->clients, cl, entry);
	ctl->nclients--;
	event_free(cl->deadline);
	bufferevent_free(cl->bev);
	free(cl);
}

/* Count what the client's input holds now against the budget of all clients. */
static int
control_client_hold(struct control_client *cl, size_t now)
{
	struct control *ctl = cl->ctl;

	if (now > cl->held && ctl->held + (now - cl->held) > CONTROL_MAX_BUFFERED)
		return -1;
	ctl->held = ctl->held - cl->held + now;
	cl->held = now;
	return 0;
}

static void
control_read_cb(struct bufferevent *bev, void *arg)
{
	struct control_client *cl = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr pos;
	size_t len = evbuffer_get_length(in);
	char *line;

	if (cl->answered)
		return;
	if (control_client_hold(cl, len) == -1) {
		control_error(cl, "busy",
		              "egressd holds too many large control requests at once; try again");
		return;
	}
	/* Only the bytes not searched yet: a long line arrives in many reads. */
	evbuffer_ptr_set(in, &pos, cl->scanned, EVBUFFER_PTR_SET);
	pos = evbuffer_search(in, "\n", 1, &pos);
	if (pos.pos < 0) {
		cl->scanned = len;
		if (len >= CONTROL_MAX_REQUEST)
			control_error(
			    cl, "too-large",
			    "the request line is over 2 MiB (explain's body: 1 MiB at most)");
		return;
	}
	/* One request a connection: whatever follows its newline is not read. */
	bufferevent_disable(bev, EV_READ);
	evtimer_del(cl->deadline);
	line = (char *)evbuffer_pullup(in, pos.pos + 1);
	len = (size_t)pos.pos;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	control_dispatch(cl, line, len);
	evbuffer_drain(in, evbuffer_get_length(in));
	(void)control_client_hold(cl, 0);
}

static void
control_write_cb(struct bufferevent *bev, void *arg)
{
	struct control_client *cl = arg;

	if (cl->answered && cl->dr == NULL && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		control_client_free(cl);
}

static void
control_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct control_client *cl = arg;

	/* The client's side ended before its line did: tell it, if it still reads. */
	if ((what & BEV_EVENT_EOF) && (what & BEV_EVENT_READING) && !cl->answered &&
	    cl->dr == NULL && evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
		control_error(cl, "bad-request", "the request ended without a newline");
		return;
	}
	control_client_free(cl);
}

static void
control_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control_client *cl = arg;

	control_error(cl, "timeout", "no whole request line within 5 seconds");
}

static void
control_accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen,
                  void *arg)
{
	struct control *ctl = arg;
	struct control_client *cl;
	struct timeval tv = {CONTROL_REQUEST_SECS, 0}, wtv = {CONTROL_WRITE_SECS, 0};
	struct ucred uc;
	socklen_t len = sizeof uc;

	if (ctl->nclients >= CONTROL_MAX_CLIENTS) {
		/* A line this short fits any socket buffer: no state is kept for it. */
		ctl->e->m.control_errors++;
		(void)send(fd, CONTROL_BUSY_ANSWER, sizeof CONTROL_BUSY_ANSWER - 1,
		           MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	cl = xcalloc(1, sizeof *cl);
	cl->ctl = ctl;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0) {
		cl->cred = 1;
		cl->uid = uc.uid;
		cl->pid = uc.pid;
	}
	cl->bev = bufferevent_socket_new(ctl->e->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (cl->bev == NULL) {
		close(fd);
		free(cl);
		return;
	}
	cl->deadline = evtimer_new(ctl->e->base, control_deadline_cb, cl);
	TAILQ_INSERT_TAIL(&ctl->clients, cl, entry);
	ctl->nclients++;
	/* Never more than one whole request is read. */
	bufferevent_setwatermark(cl->bev, EV_READ, 0, CONTROL_MAX_REQUEST);
	bufferevent_set_timeouts(cl->bev, NULL, &wtv);
	bufferevent_setcb(cl->bev, control_read_cb, control_write_cb, control_event_cb, cl);
	bufferevent_enable(cl->bev, EV_READ);
	evtimer_add(cl->deadline, &tv);
}

/* --- the socket --- */

/*
 * Bind the control socket at path (standalone; in the image sandbox-init
 * binds it). A socket nobody answers on is a leftover and is replaced; a
 * live one, or anything that is not a socket, is an error. Mode 0666:
 * any local user may connect, and the directory decides who can reach it.
 */
int
control_bind(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct stat st;
	int fd, probe;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		snprintf(err, errlen, "the path is longer than %zu bytes", sizeof sun.sun_path - 1);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			return -1;
		}
		if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return -1;
		}
		if (connect(probe, (struct sockaddr *)&sun, sizeof sun) == 0) {
			close(probe);
			snprintf(err, errlen, "another process answers on %s", path);
			return -1;
		}
		close(probe);
		if (unlink(path) == -1) {
			snprintf(err, errlen, "cannot remove the old socket %s: %s", path,
			         strerror(errno));
			return -1;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1 || chmod(path, 0666) == -1 ||
	    listen(fd, CONTROL_BACKLOG) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Serve the control socket fd (a listening Unix stream socket) known as
 * path; owned: egressd bound it, and removes it when it stops.
 */
struct control *
control_new(struct egressd *e, int fd, const char *path, int owned)
{
	struct control *ctl;
	struct stat st;

	ctl = xcalloc(1, sizeof *ctl);
	ctl->e = e;
	ctl->path = xstrdup(path);
	TAILQ_INIT(&ctl->clients);
	if (owned && stat(path, &st) == 0) {
		ctl->owned = 1;
		ctl->dev = st.st_dev;
		ctl->ino = st.st_ino;
	}
	ctl->lev = evconnlistener_new(e->base, control_accept_cb, ctl,
	                              LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (ctl->lev == NULL) {
		close(fd);
		free(ctl->path);
		free(ctl);
		return NULL;
	}
	return ctl;
}

void
control_free(struct control *ctl)
{
	struct control_client *cl;
	struct stat st;

	if (ctl == NULL)
		return;
	while ((cl = TAILQ_FIRST(&ctl->clients)) != NULL)
		control_client_free(cl);
	evconnlistener_free(ctl->lev);
	/* Only the socket bound here: a newer egressd may have replaced it. */
	if (ctl->owned && stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev &&
	    st.st_ino == ctl->ino)
		(void)unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}

unsigned
control_clients(const struct control *ctl)
{
	return ctl != NULL ? ctl->nclients : 0;
}

const char *
control_path(const struct control *ctl)
{
	return ctl != NULL ? ctl->path : NULL;
}
