/*
 * The socket under an intercepted client's TLS (tlsio.c) driven by a
 * client the input steers. After a real handshake over a socketpair, each
 * input op makes the client send records of chosen bytes, raw bytes that
 * are no TLS at all, half-close its socket or read; or makes the server
 * side stop or resume reading, write, or go away. Never a crash, a hang,
 * a leak, or bytes the server takes as application data that the client
 * did not send, out of order.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls.h"

#define FUZZ_HOST "fuzz.test"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct run {
	struct event_base *base;
	struct bufferevent *bev;
	struct evbuffer *got;  /* what the server side read */
	struct evbuffer *sent; /* what the client sent in records */
	SSL *cl;
	BIO *crd, *cwr; /* the client's memory BIOs */
	int fd;         /* the client's socket */
	int garbage;    /* raw bytes went out: what follows is not the client's */
};

static struct tls *fuzz_tls;
static SSL_CTX *fuzz_cctx;

static void
fuzz_read_cb(struct bufferevent *bev, void *arg)
{
	struct run *r = arg;

	evbuffer_add_buffer(r->got, bufferevent_get_input(bev));
}

static void
fuzz_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct run *r = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		bufferevent_free(bev); /* as a connection closes on either */
		r->bev = NULL;
	}
}

/* Move the client's records to the socket and what came back to the client. */
static void
fuzz_pump(struct run *r, int loops)
{
	char buf[16384];
	ssize_t n;
	int i;

	for (i = 0; i < loops; i++) {
		while ((n = BIO_read(r->cwr, buf, sizeof buf)) > 0)
			if (send(r->fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
				break; /* a full or closed socket drops the rest */
		event_base_loop(r->base, EVLOOP_NONBLOCK);
		while ((n = read(r->fd, buf, sizeof buf)) > 0)
			BIO_write(r->crd, buf, (int)n);
	}
}

static int
fuzz_setup(struct run *r)
{
	struct bufferevent *plain;
	static struct host host;
	static struct tls_peer peer;
	int sv[2], i;

	if (fuzz_tls == NULL) {
		static char dir[] = "/tmp/fuzz_tlsio.XXXXXX", ca[64];
		struct tls_opts o;
		struct config cfg;
		char err[512];

		/* Writing to a socket the client shut must not kill the process. */
		signal(SIGPIPE, SIG_IGN);
		if (mkdtemp(dir) == NULL)
			abort();
		snprintf(ca, sizeof ca, "%s/ca.pem", dir);
		memset(&o, 0, sizeof o);
		memset(&cfg, 0, sizeof cfg);
		cfg.ca_lifetime_hours = 1;
		o.ca_out = ca;
		if ((fuzz_tls = tls_new(&o, &cfg, err, sizeof err)) == NULL)
			abort();
		fuzz_cctx = SSL_CTX_new(TLS_client_method());
		SSL_CTX_set_verify(fuzz_cctx, SSL_VERIFY_NONE, NULL);
		if (host_parse(FUZZ_HOST, strlen(FUZZ_HOST), &host) != NULL)
			abort();
		peer.host = &host;
	}
	memset(r, 0, sizeof *r);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
		abort();
	r->fd = sv[1];
	r->base = event_base_new();
	r->got = evbuffer_new();
	r->sent = evbuffer_new();
	plain = bufferevent_socket_new(r->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	if ((r->bev = tls_accept(fuzz_tls, r->base, &peer, &plain)) == NULL)
		abort();
	bufferevent_setcb(r->bev, fuzz_read_cb, NULL, fuzz_event_cb, r);
	bufferevent_enable(r->bev, EV_READ | EV_WRITE);
	r->cl = SSL_new(fuzz_cctx);
	r->crd = BIO_new(BIO_s_mem());
	r->cwr = BIO_new(BIO_s_mem());
	SSL_set_bio(r->cl, r->crd, r->cwr);
	SSL_set_tlsext_host_name(r->cl, FUZZ_HOST);
	SSL_set_connect_state(r->cl);
	for (i = 0; i < 50; i++) {
		if (SSL_do_handshake(r->cl) == 1)
			return 0;
		fuzz_pump(r, 1);
	}
	return -1;
}

static void
fuzz_teardown(struct run *r)
{
	int i;

	if (r->bev != NULL)
		bufferevent_free(r->bev);
	/* A side that lingers ends on the closed socket; then the loop is done. */
	event_base_loop(r->base, EVLOOP_NONBLOCK);
	close(r->fd);
	for (i = 0; i < 4; i++)
		event_base_loop(r->base, EVLOOP_NONBLOCK);
	event_base_loopexit(r->base, NULL);
	event_base_dispatch(r->base);
	SSL_free(r->cl);
	evbuffer_free(r->got);
	evbuffer_free(r->sent);
	event_base_free(r->base);
	ERR_clear_error();
}

/* The server took a prefix of what the client sent in records, in order. */
static void
fuzz_check(struct run *r)
{
	size_t n = evbuffer_get_length(r->got);

	if (r->garbage)
		return;
	if (n > evbuffer_get_length(r->sent))
		abort();
	if (n > 0 && memcmp(evbuffer_pullup(r->got, -1), evbuffer_pullup(r->sent, -1), n) != 0)
		abort();
}

static void
fuzz_op(struct run *r, uint8_t op, const uint8_t *d, size_t len)
{
	static const char zeros[8192];
	char buf[16384];

	switch (op % 7) {
	case 0: /* one record of application data */
		if (len > 0 && SSL_write(r->cl, d, (int)len) == (int)len && !r->garbage)
			evbuffer_add(r->sent, d, len);
		break;
	case 1: /* bytes on the socket that are not records of this session */
		if (len > 0 && send(r->fd, d, len, MSG_NOSIGNAL) > 0)
			r->garbage = 1;
		break;
	case 2:
		if (r->bev != NULL)
			bufferevent_disable(r->bev, EV_READ);
		break;
	case 3:
		if (r->bev != NULL)
			bufferevent_enable(r->bev, EV_READ);
		break;
	case 4: /* the server side answers */
		if (r->bev != NULL)
			bufferevent_write(r->bev, zeros,
			                  len * 32 < sizeof zeros ? len * 32 : sizeof zeros);
		break;
	case 5: /* the client reads what came */
		fuzz_pump(r, 2);
		while (SSL_read(r->cl, buf, sizeof buf) > 0)
			;
		break;
	case 6:
		if (len % 2)
			shutdown(r->fd, SHUT_WR);
		else if (r->bev != NULL) {
			bufferevent_free(r->bev);
			r->bev = NULL;
		}
		break;
	}
	fuzz_pump(r, 2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r;
	size_t i, len;

	if (size > 16 * 1024)
		return 0;
	if (fuzz_setup(&r) == 0) {
		for (i = 0; i + 2 <= size; i += 2 + len) {
			len = data[i + 1];
			if (len > size - i - 2)
				len = size - i - 2;
			fuzz_op(&r, data[i], data + i + 2, len);
		}
		if (r.bev != NULL)
			bufferevent_enable(r.bev, EV_READ);
		fuzz_pump(&r, 4);
		fuzz_check(&r);
	}
	fuzz_teardown(&r);
	return 0;
}
