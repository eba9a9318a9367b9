/*
 * The socket side of a connection (side.h): plain sockets read by egressd
 * itself into the bufferevent's input, bytes sent straight to the socket
 * when nothing is queued for it, TLS output cut into whole records, read
 * and write timeouts, and backpressure between the two sides of a
 * connection: a side stops being read while its peer has more than
 * SIDE_HIGH_MARK queued (SIDE_TIGHT_MARK while egressd is over its memory
 * budget), and resumes from the peer's write callback once it has less.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "side.h"

/* Backpressure: stop reading src while dst has more than high queued. */
void
side_throttle(struct conn_side *src, struct conn_side *dst, size_t high)
{
	if (src->bev == NULL || dst->bev == NULL)
		return;
	if (evbuffer_get_length(bufferevent_get_output(dst->bev)) > high) {
		if (!src->throttled) {
			side_read(src, 0);
			src->throttled = 1;
		}
	} else if (src->throttled) {
		src->throttled = 0;
		side_read(src, 1);
	}
}

/*
 * A TLS side encrypts each contiguous piece of its output as one record
 * or more, at once. Pieces of whole records' size (a response head and
 * its body together, a streamed body in 16 KiB runs) make full records,
 * not one per fragment the bytes happened to arrive in.
 */
static void
side_send_tls(struct evbuffer *out, struct evbuffer *src)
{
	size_t n;

	while ((n = evbuffer_get_length(src)) > 0) {
		if (n > SIDE_TLS_RECORD)
			n = SIDE_TLS_RECORD;
		if (evbuffer_pullup(src, (ev_ssize_t)n) == NULL ||
		    evbuffer_remove_buffer(src, out, n) <= 0) {
			evbuffer_add_buffer(out, src);
			return;
		}
	}
}

/*
 * Send bytes to a side. When nothing is queued for it, they are written to
 * the socket at once and only what the kernel does not take is queued:
 * queueing first would register the socket for writability and write on
 * the next loop iteration, two epoll_ctl calls and a round of latency for
 * every response. TLS sides write their records themselves (tlsio.c).
 */
void
side_send_buffer(struct conn_side *s, struct evbuffer *src)
{
	struct evbuffer *out = bufferevent_get_output(s->bev);
	size_t n = evbuffer_get_length(src);

	if (n == 0)
		return;
	if (!s->plain) {
		side_send_tls(out, src);
		return;
	}
	if (evbuffer_get_length(out) == 0)
		(void)evbuffer_write(src, bufferevent_getfd(s->bev));
	/* Whatever is left, an error included, goes through the bufferevent. */
	evbuffer_add_buffer(out, src);
}

void
side_send(struct conn_side *s, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(s->bev);
	ssize_t w = 0;

	if (len == 0)
		return;
	if (s->plain && evbuffer_get_length(out) == 0) {
		w = write(bufferevent_getfd(s->bev), data, len);
		if (w < 0)
			w = 0;
	}
	if ((size_t)w < len)
		evbuffer_add(out, (const char *)data + w, len - (size_t)w);
}

/*
 * Reading plain sockets. A socket bufferevent asks the kernel how much is
 * readable (FIONREAD) before every read, one extra system call per read;
 * for plain sockets egressd reads into the bufferevent's input itself,
 * from an event of its own, and leaves the bufferevent writing. TLS sides
 * are read and written under their bufferevent by tlsio.c.
 */
#define SIDE_READ_MAX 16384 /* as a socket bufferevent reads at most */

void
side_attach(struct conn_side *s, struct event_base *base, event_callback_fn cb)
{
	if (!s->plain || s->rd != NULL)
		return;
	bufferevent_disable(s->bev, EV_READ);
	s->rd = event_new(base, bufferevent_getfd(s->bev), EV_READ | EV_PERSIST, cb, s);
	s->rd_owned = 1;
	s->rd_on = 0;
}

/* Read a side through an event someone else owns, already added. */
void
side_attach_event(struct conn_side *s, struct event *ev)
{
	s->rd = ev;
	s->rd_owned = 0;
	s->rd_on = 1;
	s->rd_has_tmo = 0;
	s->rd_bulk = 0;
}

void
side_detach(struct conn_side *s)
{
	if (s->rd != NULL && s->rd_owned)
		event_free(s->rd);
	s->rd = NULL;
	s->rd_owned = 0;
	s->rd_on = 0;
	s->rd_has_tmo = 0;
	s->rd_bulk = 0;
}

void
side_read(struct conn_side *s, int on)
{
	if (s->rd == NULL) {
		/*
		 * A TLS side: enabling an enabled filter would still make it
		 * try to decrypt, one failed SSL_read for nothing.
		 */
		if (on == ((bufferevent_get_enabled(s->bev) & EV_READ) != 0))
			return;
		if (on)
			bufferevent_enable(s->bev, EV_READ);
		else
			bufferevent_disable(s->bev, EV_READ);
		return;
	}
	if (on == s->rd_on)
		return;
	s->rd_on = on;
	if (on)
		event_add(s->rd, s->rd_has_tmo ? &s->rd_tmo : NULL);
	else
		event_del(s->rd);
}

/* Read and write inactivity timeouts, as bufferevent_set_timeouts sets them. */
void
side_timeouts(struct conn_side *s, const struct timeval *r, const struct timeval *w)
{
	if (s->rd == NULL) {
		bufferevent_set_timeouts(s->bev, r, w);
		return;
	}
	bufferevent_set_timeouts(s->bev, NULL, w);
	if (r == NULL && !s->rd_has_tmo)
		return; /* no read timeout before or after: nothing to re-arm */
	s->rd_has_tmo = r != NULL;
	if (r != NULL)
		s->rd_tmo = *r;
	if (s->rd_on)
		event_add(s->rd, s->rd_has_tmo ? &s->rd_tmo : NULL);
}

/*
 * One read into the side's input. Returns the bytes read, 0 at EOF, -1 on
 * an error (errno set), or -2 when nothing was there after all. A read
 * goes to the stack and only what came is added to the input: reserving a
 * whole read's worth in the buffer first would allocate 16 KiB per read
 * on every connection, for requests of a few hundred bytes, and leave the
 * heap fragmented between the connections that stay open. Once a read
 * fills the whole buffer a body is streaming, and reads go straight into
 * the input instead, saving the copy, until one comes back short.
 */
int
side_read_socket(struct conn_side *s)
{
	struct evbuffer *in = bufferevent_get_input(s->bev);
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	char buf[SIDE_READ_MAX];
	size_t left;
	ssize_t n;
	int nv = 0, i, err;

	/* A bufferevent keeps the end of its input frozen except while it reads. */
	evbuffer_unfreeze(in, 0);
	if (s->rd_bulk && (nv = evbuffer_reserve_space(in, SIDE_READ_MAX, v, 2)) > 0) {
		for (i = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
		}
		n = readv(bufferevent_getfd(s->bev), iov, nv);
	} else {
		nv = 0;
		n = read(bufferevent_getfd(s->bev), buf, sizeof buf);
	}
	err = errno;
	if (n > 0 && nv > 0) {
		for (i = 0, left = (size_t)n; i < nv; i++) {
			if (v[i].iov_len > left)
				v[i].iov_len = left;
			left -= v[i].iov_len;
		}
		evbuffer_commit_space(in, v, nv);
	} else if (n > 0 && evbuffer_add(in, buf, (size_t)n) == -1)
		n = -1;
	evbuffer_freeze(in, 0);
	if (n <= 0) {
		s->rd_bulk = 0;
		errno = err;
		if (n < 0 && (err == EAGAIN || err == EINTR))
			return -2;
		return n == 0 ? 0 : -1;
	}
	s->rd_bulk = n == SIDE_READ_MAX;
	return (int)n;
}
