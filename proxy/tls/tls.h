/*
 * TLS for egressd: the ClientHello reader (SNI), the interception
 * contexts with the run CA, the handshakes with clients and upstreams,
 * and what their errors mean. tls_int.h joins tls.c and tlsio.c.
 */
#ifndef TLS_H
#define TLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "policy.h"

struct bufferevent;
struct event_base;

/* sni.c */
#define SNI_HELLO_MAX 16384 /* bytes of ClientHello read, joined from its records */
enum sni_result {
	SNI_MORE,    /* a prefix of a ClientHello: read more */
	SNI_FOUND,   /* name holds the host_name */
	SNI_ABSENT,  /* a ClientHello without a server name */
	SNI_NOT_TLS, /* the bytes are not a TLS handshake */
	SNI_ERROR,   /* a malformed ClientHello; err says why */
};
enum sni_result sni_parse(const unsigned char *, size_t, char *, size_t, const char **);

/* tls.c */
struct tls_opts {
	const char *ca_out;
	const char *ca_bundle_out;
	const char *ca_cert;
	const char *ca_key;
	const char *upstream_ca;
	const char *system_ca; /* the system store; NULL: CA_SYSTEM_BUNDLE */
};
/*
 * The client a server-side handshake answers (tls_accept): the host its
 * leaf is minted for, and where the server name the client sends is
 * reported. A name other than host's refuses the handshake (with an
 * unrecognized_name alert) after it is reported. The SSL keeps a pointer
 * to the peer: it must stay valid until the bufferevent is freed.
 */
struct tls_peer {
	const struct host *host;
	void (*sni_cb)(void *arg, const char *sni, int mismatch); /* NULL: not reported */
	void *arg;
};
struct tls *tls_new(const struct tls_opts *, const struct config *, char *, size_t);
void tls_free(struct tls *);
const char *tls_store_check(const char *);
const char *tls_store_check_full(const char *);
void tls_start(struct tls *, struct event_base *);
const char *tls_ca_path(const struct tls *);
struct tls_ca_info {
	char fingerprint[3 * 32]; /* SHA-256, AB:CD:... */
	time_t not_after;
	uint64_t leaves_minted;
	uint64_t leaves_cached;
};
void tls_ca_info(const struct tls *, struct tls_ca_info *);
const char *tls_bundle_path(const struct tls *);
void tls_print_trust(const struct tls *, FILE *);
struct bufferevent *tls_accept(struct tls *, struct event_base *, struct tls_peer *,
                               struct bufferevent **);
struct bufferevent *tls_connect(struct tls *, struct event_base *, int, const struct host *);
void tls_error(struct bufferevent *, char *, size_t, int *);
int tls_error_text(unsigned long, const char *, char *, size_t);
void tls_idle(struct bufferevent *);
int tls_error_is_trust(const char *);

#endif
