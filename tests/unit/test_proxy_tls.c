/*
 * The TLS legs of interception without a network: a server end made by
 * tls_accept (a leaf for the CONNECT host) and a client end made by
 * tls_connect (verifying that leaf against the exported run CA) talk over
 * a socketpair. Checks: the handshake, requests pipelined in one record
 * all arrive, megabytes both ways arrive intact, the end of the stream
 * comes after the data before it, records still queued when a side is
 * freed are written out before the socket closes, the client's server name
 * reported through the peer (and another name than the peer's refused),
 * the trust store check before READY, and OpenSSL errors put in words for
 * the audit.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "tls.h"

#define HOST "origin.test"

struct end {
	struct bufferevent *bev;
	struct evbuffer *got; /* everything read */
	int connected;
	int eof;
	int error;
	size_t eof_at; /* bytes read when the end came */
};

struct pair {
	char dir[64];
	struct event_base *base;
	struct tls *server_tls;
	struct tls *client_tls;
	struct host host;
	struct tls_peer peer;
	char sni[256];    /* the server name reported through the peer */
	int sni_mismatch; /* ... and whether it was another than host's */
	int sni_calls;
	struct end server;
	struct end client;
	size_t free_after; /* the server frees its side once this much is written */
	size_t written;    /* bytes given to the server side */
};

/* A self-signed certificate: a store that passes the check before READY. */
static void
write_self_signed(const char *path)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	FILE *f;

	assert_non_null(key);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                           (const unsigned char *)"store", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_set_pubkey(x, key);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	assert_non_null(f = fopen(path, "w"));
	PEM_write_X509(f, x);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(key);
}

static void
end_read_cb(struct bufferevent *bev, void *arg)
{
	struct end *e = arg;

	evbuffer_add_buffer(e->got, bufferevent_get_input(bev));
}

static void
end_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct end *e = arg;

	if (what & BEV_EVENT_CONNECTED)
		e->connected = 1;
	if (what & BEV_EVENT_EOF)
		e->eof = 1;
	if (what & BEV_EVENT_ERROR)
		e->error = 1;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		e->eof_at = evbuffer_get_length(e->got);
}

static void
server_read_cb(struct bufferevent *bev, void *arg)
{
	struct pair *p = arg;

	end_read_cb(bev, &p->server);
}

static void
server_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pair *p = arg;

	end_event_cb(bev, what, &p->server);
}

/*
 * The server frees its side as soon as all it was given is encrypted, as
 * a connection closes once its output is empty: records the kernel has
 * not taken yet must still reach the client.
 */
static void
server_write_cb(struct bufferevent *bev, void *arg)
{
	struct pair *p = arg;

	if (p->free_after == 0 || p->written < p->free_after ||
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0)
		return;
	bufferevent_free(bev);
	p->server.bev = NULL;
	p->free_after = 0;
}

/* Run the loop until done(p) or a bound; the sockets are local, so it is quick. */
static void
run_until(struct pair *p, int (*done)(struct pair *))
{
	int i;

	for (i = 0; i < 50000 && !done(p); i++) {
		event_base_loop(p->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (i > 100)
			usleep(100);
	}
	if (!done(p))
		fail_msg("the event loop did not get there");
}

static int
both_connected(struct pair *p)
{
	return p->server.connected && p->client.connected;
}

static void
peer_sni_cb(void *arg, const char *sni, int mismatch)
{
	struct pair *p = arg;

	snprintf(p->sni, sizeof p->sni, "%s", sni);
	p->sni_mismatch = mismatch;
	p->sni_calls++;
}

/* A server end for HOST and a client end asking for name, handshaking. */
static struct pair *
pair_open(const char *name)
{
	struct pair *p = calloc(1, sizeof *p);
	struct host client_host;
	struct tls_opts so, co;
	struct config cfg;
	char store[96], ca[96], err[512];
	struct bufferevent *plain;
	int sv[2];

	signal(SIGPIPE, SIG_IGN); /* as egressd: a peer that went away is an error, not a signal */
	snprintf(p->dir, sizeof p->dir, "/tmp/test_proxy_tls.XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(store, sizeof store, "%s/store.pem", p->dir);
	snprintf(ca, sizeof ca, "%s/ca.pem", p->dir);
	write_self_signed(store);
	memset(&cfg, 0, sizeof cfg);
	cfg.ca_lifetime_hours = 1;
	memset(&so, 0, sizeof so);
	so.ca_out = ca;
	so.upstream_ca = store;
	so.ca_bundle_out = NULL;
	p->server_tls = tls_new(&so, &cfg, err, sizeof err);
	assert_non_null(p->server_tls);
	memset(&co, 0, sizeof co);
	snprintf(store, sizeof store, "%s/client-ca.pem", p->dir);
	co.ca_out = store;   /* the client side's own CA, unused here */
	co.upstream_ca = ca; /* it trusts the server side's run CA */
	p->client_tls = tls_new(&co, &cfg, err, sizeof err);
	assert_non_null(p->client_tls);

	p->base = event_base_new();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	/* A small socket buffer, so that a few records fill it. */
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){16384}, sizeof(int)), 0);
	assert_null(host_parse(HOST, strlen(HOST), &p->host));
	assert_null(host_parse(name, strlen(name), &client_host));
	p->peer.host = &p->host;
	p->peer.sni_cb = peer_sni_cb;
	p->peer.arg = p;
	p->server.got = evbuffer_new();
	p->client.got = evbuffer_new();

	plain = bufferevent_socket_new(p->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	p->server.bev = tls_accept(p->server_tls, p->base, &p->peer, &plain);
	assert_non_null(p->server.bev);
	assert_null(plain);
	bufferevent_setcb(p->server.bev, server_read_cb, server_write_cb, server_event_cb, p);
	bufferevent_enable(p->server.bev, EV_READ | EV_WRITE);
	p->client.bev = tls_connect(p->client_tls, p->base, sv[1], &client_host);
	assert_non_null(p->client.bev);
	bufferevent_setcb(p->client.bev, end_read_cb, NULL, end_event_cb, &p->client);
	bufferevent_enable(p->client.bev, EV_READ | EV_WRITE);
	return p;
}

static int
setup(void **state)
{
	struct pair *p = pair_open(HOST);

	run_until(p, both_connected);
	/* Let the client take the session tickets the server sent after its Finished. */
	for (int i = 0; i < 50; i++) {
		event_base_loop(p->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(200);
	}
	*state = p;
	return 0;
}

static int
setup_other_name(void **state)
{
	*state = pair_open("other.test");
	return 0;
}

static int
teardown(void **state)
{
	struct pair *p = *state;
	char cmd[128];

	if (p->server.bev != NULL)
		bufferevent_free(p->server.bev);
	if (p->client.bev != NULL)
		bufferevent_free(p->client.bev);
	/* The TLS sides are freed from the loop; let it run once more. */
	event_base_loop(p->base, EVLOOP_NONBLOCK);
	tls_free(p->server_tls);
	tls_free(p->client_tls);
	event_base_free(p->base);
	evbuffer_free(p->server.got);
	evbuffer_free(p->client.got);
	snprintf(cmd, sizeof cmd, "rm -rf %s", p->dir);
	assert_int_equal(system(cmd), 0);
	free(p);
	return 0;
}

/* Byte i of a test stream: a pattern that a lost or repeated record breaks. */
static unsigned char
pattern(size_t i)
{
	return (unsigned char)((i * 7 + i / 16411) & 0xff);
}

static void
add_pattern(struct evbuffer *b, size_t from, size_t n)
{
	unsigned char chunk[4096];
	size_t i, k;

	for (i = 0; i < n; i += k) {
		k = n - i < sizeof chunk ? n - i : sizeof chunk;
		for (size_t j = 0; j < k; j++)
			chunk[j] = pattern(from + i + j);
		evbuffer_add(b, chunk, k);
	}
}

static void
check_pattern(struct evbuffer *b, size_t n)
{
	unsigned char *d;
	size_t i;

	assert_int_equal(evbuffer_get_length(b), n);
	d = evbuffer_pullup(b, -1);
	for (i = 0; i < n; i++)
		if (d[i] != pattern(i))
			fail_msg("byte %zu differs", i);
}

static size_t want_len;

static int
server_has_want(struct pair *p)
{
	return evbuffer_get_length(p->server.got) >= want_len || p->server.eof;
}

static int
client_has_want(struct pair *p)
{
	return evbuffer_get_length(p->client.got) >= want_len || p->client.eof;
}

static int
client_ended(struct pair *p)
{
	return p->client.eof || p->client.error;
}

static int
server_ended(struct pair *p)
{
	return p->server.eof || p->server.error;
}

static void
test_pipelined_in_one_record(void **state)
{
	struct pair *p = *state;
	static const char req[] = "GET /a HTTP/1.1\r\nHost: " HOST "\r\n\r\n";
	char all[sizeof req * 8];
	size_t n = 0;
	int i;

	for (i = 0; i < 8; i++) {
		memcpy(all + n, req, sizeof req - 1);
		n += sizeof req - 1;
	}
	/* One add, one SSL_write: the eight requests travel in one record. */
	bufferevent_write(p->client.bev, all, n);
	want_len = n;
	run_until(p, server_has_want);
	assert_int_equal(evbuffer_get_length(p->server.got), n);
	assert_memory_equal(evbuffer_pullup(p->server.got, -1), all, n);
	assert_false(p->server.eof);
}

static void
test_megabytes_both_ways(void **state)
{
	struct pair *p = *state;
	struct evbuffer *b = evbuffer_new();
	size_t n = 3 * 1024 * 1024 + 12345;

	add_pattern(b, 0, n);
	bufferevent_write_buffer(p->server.bev, b);
	want_len = n;
	run_until(p, client_has_want);
	check_pattern(p->client.got, n);
	add_pattern(b, 0, n);
	bufferevent_write_buffer(p->client.bev, b);
	run_until(p, server_has_want);
	check_pattern(p->server.got, n);
	assert_false(p->client.eof || p->server.eof);
	evbuffer_free(b);
}

static int
server_gone(struct pair *p)
{
	return p->server.bev == NULL;
}

/* What was sent before the end arrives before the end. */
static void
test_end_after_data(void **state)
{
	struct pair *p = *state;
	static const char last[] = "the last request";

	bufferevent_write(p->client.bev, last, sizeof last - 1);
	bufferevent_free(p->client.bev);
	p->client.bev = NULL;
	run_until(p, server_ended);
	assert_true(p->server.eof);
	assert_false(p->server.error);
	assert_int_equal(p->server.eof_at, sizeof last - 1);
	assert_memory_equal(evbuffer_pullup(p->server.got, -1), last, sizeof last - 1);
}

/*
 * The server side is freed while the client reads nothing and the socket
 * is full: the records already made still arrive, then the end.
 */
static void
test_linger_after_free(void **state)
{
	struct pair *p = *state;
	struct evbuffer *b = evbuffer_new();
	size_t n = 100000;
	int i;

	bufferevent_disable(p->client.bev, EV_READ);
	add_pattern(b, 0, n);
	p->free_after = n;
	p->written = n;
	bufferevent_write_buffer(p->server.bev, b);
	run_until(p, server_gone);
	for (i = 0; i < 20; i++)
		event_base_loop(p->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(evbuffer_get_length(p->client.got), 0);
	bufferevent_enable(p->client.bev, EV_READ);
	run_until(p, client_ended);
	assert_true(p->client.eof);
	assert_int_equal(p->client.eof_at, n);
	check_pattern(p->client.got, n);
	evbuffer_free(b);
}

/* The server name the client sent reaches the peer's owner; the peer's own is accepted. */
static void
test_sni_reported(void **state)
{
	struct pair *p = *state;

	assert_int_equal(p->sni_calls, 1);
	assert_string_equal(p->sni, HOST);
	assert_false(p->sni_mismatch);
}

static int
both_ended(struct pair *p)
{
	return (p->server.error || p->server.eof) && (p->client.error || p->client.eof);
}

/* A name other than the peer's host is reported as such, and the handshake refused. */
static void
test_sni_other_refused(void **state)
{
	struct pair *p = *state;
	char why[256];
	int verify;

	run_until(p, both_ended);
	assert_int_equal(p->sni_calls, 1);
	assert_string_equal(p->sni, "other.test");
	assert_true(p->sni_mismatch);
	assert_false(p->server.connected);
	assert_false(p->client.connected);
	/* Refused by the server for the name, before the client could look at a leaf. */
	tls_error(p->client.bev, why, sizeof why, &verify);
	assert_false(verify);
	if (strstr(why, "it does not serve that name") == NULL)
		fail_msg("the client was not refused for the name: %s", why);
}

static void
test_store_check(void **state)
{
	char dir[] = "/tmp/test_proxy_tls_store.XXXXXX", path[96], cmd[96];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/good.pem", dir);
	write_self_signed(path);
	assert_null(tls_store_check(path));
	assert_non_null(tls_store_check(dir)); /* a directory */
	snprintf(path, sizeof path, "%s/missing.pem", dir);
	assert_non_null(tls_store_check(path));
	snprintf(path, sizeof path, "%s/text.pem", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("no certificate here\n-----BEGIN PRIVATE KEY-----\n", f);
	fclose(f);
	assert_string_equal(tls_store_check(path), "no PEM certificate in it");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * OpenSSL errors as the audit shows them: sentences for the reasons met
 * on either leg, the code in brackets only for the rest, nothing for the
 * bare SSL_get_error codes libevent queues among them.
 */
static void
test_error_text(void **state)
{
	static const struct {
		unsigned long e;
		const char *peer;
		const char *want; /* NULL: says nothing */
	} t[] = {
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_AD_REASON_OFFSET + SSL_AD_UNKNOWN_CA), "the client",
	     "the client refused the handshake with the TLS alert \"unknown CA\": it does not "
	     "trust the CA that issued the certificate"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_AD_REASON_OFFSET + SSL_AD_HANDSHAKE_FAILURE),
	     "the server",
	     "the server refused the handshake with the TLS alert \"handshake failure\": no TLS "
	     "parameters in common (version, cipher suite or group)"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_AD_REASON_OFFSET + SSL_AD_DECODE_ERROR), "the server",
	     "the server refused the handshake with the TLS alert \"decode error\""},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_WRONG_VERSION_NUMBER), "the server",
	     "the server did not speak TLS (wrong version number)"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_HTTP_REQUEST), "the client",
	     "the client sent a plain HTTP request where TLS was expected"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_NO_SHARED_CIPHER), "the client",
	     "the client offered no cipher suite egressd accepts (ECDHE with AES-GCM or "
	     "ChaCha20-Poly1305)"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_UNSUPPORTED_PROTOCOL), "the client",
	     "the client offered no TLS version egressd accepts (1.2 or later)"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_UNEXPECTED_EOF_WHILE_READING), "the server",
	     "the server closed the connection during the TLS handshake"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_CERTIFICATE_VERIFY_FAILED), "the server",
	     "certificate verify failed: the server's certificate is not trusted"},
	    {ERR_SYSTEM_FLAG | ECONNRESET, "the server",
	     "the connection to the server failed: Connection reset by peer"},
	    {ERR_PACK(ERR_LIB_SSL, 0, SSL_R_BAD_SIGNATURE), "the server",
	     "the TLS handshake with the server failed: bad signature [error:0A00007B]"},
	    {SSL_ERROR_SYSCALL, "the client", NULL},
	    {SSL_ERROR_SSL, "the client", NULL},
	};
	char out[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		out[0] = '\0';
		if (t[i].want == NULL) {
			assert_int_equal(tls_error_text(t[i].e, t[i].peer, out, sizeof out), 0);
			continue;
		}
		assert_int_equal(tls_error_text(t[i].e, t[i].peer, out, sizeof out), 1);
		if (strcmp(out, t[i].want) != 0)
			fail_msg("error %08lx: got \"%s\", want \"%s\"", t[i].e, out, t[i].want);
	}
	/* The trust hint follows the client's words, not OpenSSL's codes. */
	tls_error_text(ERR_PACK(ERR_LIB_SSL, 0, SSL_AD_REASON_OFFSET + SSL_AD_BAD_CERTIFICATE),
	               "the client", out, sizeof out);
	assert_true(tls_error_is_trust(out));
	tls_error_text(ERR_PACK(ERR_LIB_SSL, 0, SSL_R_NO_SHARED_CIPHER), "the client", out,
	               sizeof out);
	assert_false(tls_error_is_trust(out));
	assert_true(
	    tls_error_is_trust("the client closed the connection during the TLS handshake"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pipelined_in_one_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_megabytes_both_ways, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_end_after_data, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_linger_after_free, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sni_reported, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sni_other_refused, setup_other_name, teardown),
	    cmocka_unit_test(test_store_check),
	    cmocka_unit_test(test_error_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
