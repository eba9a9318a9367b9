/*
 * The socket under a TLS bufferevent. libevent's OpenSSL bufferevent on a
 * socket reads each record with two read calls (its 5-byte header, then
 * the rest) and registers the socket for writability before every write,
 * and it cannot read ahead: records buffered inside OpenSSL would wait
 * for the socket to become readable again. So egressd runs OpenSSL as a
 * filter over a bufferevent without a descriptor, which only holds the
 * ciphertext both ways, and moves that ciphertext itself: one read takes
 * whatever the kernel has (several records, or several pipelined
 * requests), OpenSSL then parses it from memory until it needs more; and
 * the records made while handling an event go out in one write once the
 * callbacks are done, the socket being registered for writability only
 * when the kernel does not take everything.
 *
 * The descriptor and the two socket events belong to a struct tlsio that
 * hangs off the SSL as ex_data and goes when the SSL goes, after the
 * filter is freed. Ciphertext the filter made but the kernel has not
 * taken yet is written out before the descriptor closes (for at most
 * TLSIO_LINGER_SECS without progress), as a socket would have held it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common.h"
#include "tls_int.h"

#define TLSIO_IN_MAX      (64 * 1024) /* ciphertext read and not yet decrypted */
#define TLSIO_OUT_MAX     (64 * 1024) /* ciphertext made and not yet written */
#define TLSIO_READ        16384       /* one read while requests are small */
#define TLSIO_LINGER_SECS 5
/*
 * One read while a body streams, straight into a chain of under's input:
 * one that fits a 32 KiB allocation, as glibc consolidates its heap on
 * every free of 64 KiB or more.
 */
#define TLSIO_BULK_READ (32 * 1024 - 256)

struct tlsio {
	TAILQ_ENTRY(tlsio) entry; /* in the lingering list */
	struct tlsio_list *list;  /* where it goes to linger */
	struct event_base *base;
	struct bufferevent *under; /* the filter's ciphertext buffers; NULL once lingering */
	struct bufferevent *bev;   /* the filter */
	SSL *ssl;
	struct evbuffer_cb_entry *in_cb;    /* on under's input */
	struct evbuffer_cb_entry *out_cb;   /* on under's output */
	struct evbuffer_cb_entry *plain_cb; /* on the filter's input */
	struct event *rd;
	struct event *wr;
	struct evbuffer *linger; /* ciphertext left when the filter went */
	int fd;
	int rd_errno; /* the read error that ended the stream, or 0 at EOF */
	int flags;
#define TLSIO_RD_ON     0x1  /* rd is added */
#define TLSIO_RD_PAUSED 0x2  /* TLSIO_IN_MAX waits to be decrypted */
#define TLSIO_WR_ON     0x4  /* wr is added: the kernel took only part */
#define TLSIO_WR_QUEUED 0x8  /* wr is active: a write is due */
#define TLSIO_END       0x10 /* EOF or a read error, not yet told */
#define TLSIO_TOLD      0x20 /* the filter was told about the end */
#define TLSIO_WERR      0x40 /* writing failed: nothing more goes out */
#define TLSIO_BULK      0x80 /* the last read filled its buffer */
};

static void
tlsio_read_on(struct tlsio *io, int on)
{
	if (on && !(io->flags & TLSIO_RD_ON)) {
		event_add(io->rd, NULL);
		io->flags |= TLSIO_RD_ON;
	} else if (!on && (io->flags & TLSIO_RD_ON)) {
		event_del(io->rd);
		io->flags &= ~TLSIO_RD_ON;
	}
}

static void
tlsio_destroy(struct tlsio *io)
{
	if (io->linger != NULL) {
		TAILQ_REMOVE(io->list, io, entry);
		evbuffer_free(io->linger);
	}
	if (io->rd != NULL)
		event_free(io->rd);
	event_free(io->wr);
	close(io->fd);
	free(io);
}

/*
 * The end of the stream goes to the filter once nothing read before it is
 * left to decrypt: neither ciphertext in under's input nor plaintext
 * inside OpenSSL. A close_notify already ended the stream for the filter.
 */
static void
tlsio_end(struct tlsio *io)
{
	if (evbuffer_get_length(bufferevent_get_input(io->under)) > 0 || SSL_pending(io->ssl) > 0)
		return; /* the input callbacks look again */
	io->flags = (io->flags & ~TLSIO_END) | TLSIO_TOLD;
	if (SSL_get_shutdown(io->ssl) & SSL_RECEIVED_SHUTDOWN)
		return;
	errno = io->rd_errno;
	bufferevent_trigger_event(
	    io->under, BEV_EVENT_READING | (io->rd_errno ? BEV_EVENT_ERROR : BEV_EVENT_EOF), 0);
}

/*
 * One read into under's input: through the stack while requests are
 * small (only what came is added), straight into the buffer while a body
 * streams. Returns the bytes read, 0 at EOF, -1 on an error, -2 for
 * nothing after all.
 */
static ssize_t
tlsio_fill(struct tlsio *io, struct evbuffer *in, size_t room)
{
	char buf[TLSIO_READ];
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	size_t want, left;
	ssize_t n;
	int nv = 0, i;

	if (io->flags & TLSIO_BULK) {
		want = room < TLSIO_BULK_READ ? room : TLSIO_BULK_READ;
		if ((nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2)) <= 0)
			return -1;
		for (i = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
		}
		n = readv(io->fd, iov, nv);
		if (n > 0) {
			for (i = 0, left = (size_t)n; i < nv; i++) {
				if (v[i].iov_len > left)
					v[i].iov_len = left;
				left -= v[i].iov_len;
			}
			evbuffer_commit_space(in, v, nv);
		}
	} else {
		want = room < sizeof buf ? room : sizeof buf;
		n = read(io->fd, buf, want);
		if (n > 0 && evbuffer_add(in, buf, (size_t)n) == -1)
			return -1;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -2 : -1;
	if ((size_t)n == want)
		io->flags |= TLSIO_BULK;
	else
		io->flags &= ~TLSIO_BULK;
	return n;
}

static void
tlsio_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tlsio *io = arg;
	struct evbuffer *in;
	bufferevent_data_cb readcb;
	size_t len;
	ssize_t n;

	if (io->flags & TLSIO_END) {
		tlsio_end(io); /* re-activated once the input drained */
		return;
	}
	if (io->flags & TLSIO_TOLD) {
		tlsio_read_on(io, 0);
		return;
	}
	/* Freeing the filter clears under's callbacks; the SSL goes a little later. */
	bufferevent_getcb(io->under, &readcb, NULL, NULL, NULL);
	if (readcb == NULL) {
		tlsio_read_on(io, 0);
		return;
	}
	in = bufferevent_get_input(io->under);
	if ((len = evbuffer_get_length(in)) >= TLSIO_IN_MAX) {
		tlsio_read_on(io, 0);
		io->flags |= TLSIO_RD_PAUSED;
		return;
	}
	if ((n = tlsio_fill(io, in, TLSIO_IN_MAX - len)) == -2)
		return;
	if (n <= 0) {
		io->rd_errno = n == 0 ? 0 : errno;
		io->flags |= TLSIO_END;
		tlsio_read_on(io, 0);
		tlsio_end(io);
		return;
	}
	/* The filter decrypts all it can and runs the connection's callbacks. */
	bufferevent_trigger(io->under, EV_READ, 0);
	if (evbuffer_get_length(in) >= TLSIO_IN_MAX) {
		tlsio_read_on(io, 0);
		io->flags |= TLSIO_RD_PAUSED;
	}
}

/*
 * under's input lost bytes to OpenSSL: read again if reading had paused,
 * or tell the end that was waiting behind them (from the event loop, not
 * from inside OpenSSL).
 */
static void
tlsio_input_cb(struct evbuffer *b, const struct evbuffer_cb_info *ci, void *arg)
{
	struct tlsio *io = arg;

	if (ci->n_deleted == 0)
		return;
	if (io->flags & TLSIO_END) {
		if (evbuffer_get_length(b) == 0)
			event_active(io->rd, EV_READ, 1);
	} else if ((io->flags & TLSIO_RD_PAUSED) && evbuffer_get_length(b) < TLSIO_IN_MAX) {
		io->flags &= ~TLSIO_RD_PAUSED;
		tlsio_read_on(io, 1);
	}
}

/* Plaintext came out of OpenSSL: an end waiting behind it may be due. */
static void
tlsio_plain_cb(struct evbuffer *b, const struct evbuffer_cb_info *ci, void *arg)
{
	struct tlsio *io = arg;

	if (ci->n_added > 0 && (io->flags & TLSIO_END))
		event_active(io->rd, EV_READ, 1);
}

/* The filter made records: write them once the current callbacks are done. */
static void
tlsio_output_cb(struct evbuffer *b, const struct evbuffer_cb_info *ci, void *arg)
{
	struct tlsio *io = arg;

	if (ci->n_added == 0 || (io->flags & (TLSIO_WR_ON | TLSIO_WR_QUEUED | TLSIO_WERR)))
		return;
	io->flags |= TLSIO_WR_QUEUED;
	event_active(io->wr, EV_WRITE, 1);
}

static void
tlsio_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tlsio *io = arg;
	struct evbuffer *out = io->under != NULL ? bufferevent_get_output(io->under) : io->linger;
	int n, err;

	io->flags &= ~TLSIO_WR_QUEUED;
	if (what & EV_TIMEOUT) {
		tlsio_destroy(io); /* lingering without progress */
		return;
	}
	if (evbuffer_get_length(out) > 0 && (n = evbuffer_write(out, io->fd)) < 0 &&
	    errno != EAGAIN && errno != EINTR) {
		err = errno;
		io->flags |= TLSIO_WERR;
		if (io->flags & TLSIO_WR_ON)
			event_del(io->wr);
		io->flags &= ~TLSIO_WR_ON;
		evbuffer_drain(out, evbuffer_get_length(out));
		if (io->under == NULL) {
			tlsio_destroy(io);
			return;
		}
		errno = err;
		bufferevent_trigger_event(io->under, BEV_EVENT_WRITING | BEV_EVENT_ERROR, 0);
		return;
	}
	if (evbuffer_get_length(out) > 0) {
		if (!(io->flags & TLSIO_WR_ON)) {
			event_add(io->wr, NULL);
			io->flags |= TLSIO_WR_ON;
		}
		return;
	}
	if (io->under == NULL) {
		tlsio_destroy(io); /* the lingering records are out */
		return;
	}
	if (io->flags & TLSIO_WR_ON)
		event_del(io->wr);
	io->flags &= ~TLSIO_WR_ON;
	/* All written: the filter may encrypt what waits in its output. */
	bufferevent_trigger(io->under, EV_WRITE, 0);
}

/*
 * The SSL is being freed, after its filter. Records the kernel has not
 * taken yet still go out, unless egressd is exiting.
 */
void
tlsio_ex_free_cb(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	struct tlsio *io = ptr;
	struct evbuffer *out;
	struct timeval tv = {TLSIO_LINGER_SECS, 0};

	if (io == NULL)
		return;
	event_free(io->rd);
	io->rd = NULL;
	io->ssl = NULL;
	if (io->under == NULL) {
		tlsio_destroy(io);
		return;
	}
	evbuffer_remove_cb_entry(bufferevent_get_input(io->under), io->in_cb);
	out = bufferevent_get_output(io->under);
	evbuffer_remove_cb_entry(out, io->out_cb);
	if (io->bev != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_input(io->bev), io->plain_cb);
	io->under = io->bev = NULL;
	if (evbuffer_get_length(out) == 0 || (io->flags & TLSIO_WERR) ||
	    event_base_got_exit(io->base) || event_base_got_break(io->base)) {
		tlsio_destroy(io);
		return;
	}
	io->linger = evbuffer_new();
	evbuffer_add_buffer(io->linger, out);
	TAILQ_INSERT_TAIL(io->list, io, entry);
	event_del(io->wr);
	event_add(io->wr, &tv);
	io->flags |= TLSIO_WR_ON;
}

/*
 * A TLS bufferevent on a connected socket: OpenSSL as a filter over a
 * bufferevent that holds the ciphertext, the socket read and written by a
 * struct tlsio, which the SSL's ex_data slot ex_idx (freed with
 * tlsio_ex_free_cb) holds. Takes fd and ssl whatever happens.
 */
struct bufferevent *
tlsio_bev_new(struct event_base *base, int fd, SSL *ssl, enum bufferevent_ssl_state state,
              int ex_idx, struct tlsio_list *list)
{
	struct tlsio *io;
	struct bufferevent *under, *bev;

	io = xcalloc(1, sizeof *io);
	io->list = list;
	io->base = base;
	io->fd = fd;
	io->ssl = ssl;
	io->rd = event_new(base, fd, EV_READ | EV_PERSIST, tlsio_read_cb, io);
	io->wr = event_new(base, fd, EV_WRITE | EV_PERSIST, tlsio_write_cb, io);
	if (io->rd == NULL || io->wr == NULL ||
	    (under = bufferevent_socket_new(base, -1, 0)) == NULL)
		fatalx("out of memory");
	io->under = under;
	/* From here on freeing the SSL frees io, closing fd. */
	SSL_set_ex_data(ssl, ex_idx, io);
	/* A socket bufferevent keeps these ends frozen except while it does I/O itself. */
	evbuffer_unfreeze(bufferevent_get_input(under), 0);
	evbuffer_unfreeze(bufferevent_get_output(under), 1);
	bufferevent_setwatermark(under, EV_WRITE, 0, TLSIO_OUT_MAX);
	io->in_cb = evbuffer_add_cb(bufferevent_get_input(under), tlsio_input_cb, io);
	io->out_cb = evbuffer_add_cb(bufferevent_get_output(under), tlsio_output_cb, io);
	/*
	 * Callbacks from the loop, as a socket bufferevent makes them. A
	 * filter otherwise runs them from inside the call that made them due:
	 * enabling reading decrypts what under holds and runs the read
	 * callback before bufferevent_enable returns, so a connection that
	 * resumes reading one side while moving bytes would be re-entered
	 * and could finish (and free) the exchange under its caller.
	 */
	bev = bufferevent_openssl_filter_new(base, under, ssl, state,
	                                     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		fatalx("cannot make a TLS bufferevent");
	/* The filter enabled under; its descriptor-less events never fire, and we do the I/O. */
	bufferevent_disable(under, EV_READ | EV_WRITE);
	io->bev = bev;
	io->plain_cb = evbuffer_add_cb(bufferevent_get_input(bev), tlsio_plain_cb, io);
	/* Many clients close without close_notify; that is the end of the stream. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	/*
	 * No read high mark: with one, every change to the filter's input
	 * re-enables reading, and a filter decrypts as it is enabled, from
	 * inside whatever drained the input. Without one it decrypts all that
	 * under holds, at most TLSIO_IN_MAX.
	 */
	tlsio_read_on(io, 1);
	return bev;
}

/* At exit: the sockets still writing out are closed as they are. */
void
tlsio_list_free(struct tlsio_list *list)
{
	struct tlsio *io;

	while ((io = TAILQ_FIRST(list)) != NULL)
		tlsio_destroy(io);
}
