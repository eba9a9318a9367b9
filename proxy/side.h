/*
 * One end of a proxied connection, client or upstream, as a socket: a
 * bufferevent that writes (and, with TLS, owns the SSL), read through an
 * event of its own when the socket is plain, written straight to the
 * socket when nothing is queued, and held back while its peer has too
 * much to write. Nothing here knows HTTP or the connection above: the
 * read event's callback and argument are the caller's.
 */
#ifndef SIDE_H
#define SIDE_H

#include <stddef.h>
#include <sys/time.h>

#include <event2/event.h>

struct bufferevent;
struct conn;
struct evbuffer;

#define SIDE_HIGH_MARK  (256 * 1024) /* stop reading a side past this much queued at its peer */
#define SIDE_LOW_MARK   (64 * 1024)  /* resume below this */
#define SIDE_TIGHT_MARK (16 * 1024)  /* the high mark while over the memory budget */
#define SIDE_TLS_RECORD 16384        /* plaintext of a full TLS record */

struct conn_side {
	struct bufferevent *bev;
	struct conn *conn; /* the connection above, for its callbacks; never read here */
	struct conn_side *peer;
	int eof;
	int throttled;    /* reading stopped for backpressure */
	int plain;        /* a plain socket: side_send may write to it directly */
	struct event *rd; /* plain: our read event (the bufferevent's own stays off) */
	int rd_owned;     /* rd is ours to free (else the upstream's) */
	struct timeval rd_tmo;
	int rd_has_tmo;
	int rd_on;
	int rd_bulk; /* the last read filled its buffer: a body is streaming */
};

void side_attach(struct conn_side *, struct event_base *, event_callback_fn);
void side_attach_event(struct conn_side *, struct event *);
void side_detach(struct conn_side *);
void side_read(struct conn_side *, int);
void side_timeouts(struct conn_side *, const struct timeval *, const struct timeval *);
int side_read_socket(struct conn_side *);
void side_send(struct conn_side *, const void *, size_t);
void side_send_buffer(struct conn_side *, struct evbuffer *);
void side_throttle(struct conn_side *, struct conn_side *, size_t);

#endif
