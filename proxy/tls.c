/*
 * TLS interception: the run's CA and its leaf cache, the server context
 * that answers clients with a leaf for the host they sent CONNECT for, and
 * the client context that connects upstream verifying the chain and the
 * name, never more leniently than the client would on its own. Both legs
 * offer ALPN http/1.1 only: the HTTP engine behind them speaks HTTP/1.1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "ca.h"
#include "proxy.h"

static const unsigned char tls_alpn[] = "\x08http/1.1";

struct tls {
	struct ca *ca;
	struct ca_cache *leaves;
	SSL_CTX *server; /* faces the clients */
	SSL_CTX *client; /* faces the upstreams */
	char *ca_path;   /* where the CA certificate was written */
	char *bundle_path;
	char *run_dir; /* made for this run when no --ca-out was given; removed at exit */
	int conn_idx;  /* SSL ex_data index of the struct conn */
};

/* Accept http/1.1 when the client offers it; otherwise answer without ALPN. */
static int
tls_alpn_select_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel;

	if (SSL_select_next_proto(&sel, outlen, tls_alpn, sizeof tls_alpn - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/*
 * The name the client asks for must be the one it sent CONNECT for: the
 * leaf and the policy decision are both for the CONNECT host, so another
 * SNI would be a request for a host nobody decided.
 */
static int
tls_servername_cb(SSL *ssl, int *al, void *arg)
{
	struct tls *t = arg;
	struct conn *c = SSL_get_ex_data(ssl, t->conn_idx);
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	struct host h;

	if (c == NULL || sni == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	snprintf(c->dest->sni, sizeof c->dest->sni, "%s", sni);
	if (host_parse(sni, strlen(sni), &h) != NULL || h.kind != c->dest->host.kind ||
	    strcmp(h.name, c->dest->host.name) != 0) {
		c->flags |= CONN_F_SNI_MISMATCH;
		*al = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *
tls_server_ctx(struct tls *t, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "cannot create the TLS server context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/*
	 * Idle connections give their 16 KiB record buffers back. Session
	 * tickets let a client resume without a full handshake; the ticket
	 * keys, like the CA, live for this run only.
	 */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_select_cb, NULL);
	SSL_CTX_set_tlsext_servername_callback(ctx, tls_servername_cb);
	SSL_CTX_set_tlsext_servername_arg(ctx, t);
	return ctx;
}

static SSL_CTX *
tls_client_ctx(const char *upstream_ca, const char *system_ca, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	int ok;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "cannot create the TLS client context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(ctx, tls_alpn, sizeof tls_alpn - 1);
	/*
	 * The system store by its path (--system-ca), never SSL_CERT_FILE or
	 * OpenSSL's default paths: in the sandbox those lead to the bundle
	 * that holds our own CA, and egressd must not trust itself upstream.
	 */
	if (upstream_ca == NULL)
		upstream_ca = system_ca;
	ok = SSL_CTX_load_verify_locations(ctx, upstream_ca, NULL);
	if (ok != 1) {
		snprintf(err, errlen, "cannot load the upstream trust store %s", upstream_ca);
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* The permitted subtrees for name constraints: the allowlist as written. */
static const char **
tls_constraint_names(const struct config *cfg, size_t *n)
{
	const char **names;
	size_t i;

	names = xreallocarray(NULL, cfg->allowlist.n + 1, sizeof *names);
	for (i = 0; i < cfg->allowlist.n; i++)
		names[i] = cfg->allowlist.items[i].value;
	*n = cfg->allowlist.n;
	return names;
}

/* Write the CA where asked, or into a directory made for this run. */
static int
tls_export(struct tls *t, const struct tls_opts *o, char *err, size_t errlen)
{
	char tmpl[4096];
	const char *dir;
	char path[4096];

	if (o->ca_out != NULL) {
		t->ca_path = xstrdup(o->ca_out);
	} else {
		dir = getenv("RUNTIME_DIRECTORY");
		if (dir == NULL || *dir == '\0') {
			dir = getenv("TMPDIR");
			snprintf(tmpl, sizeof tmpl, "%s/egressd.XXXXXX",
			         dir != NULL && *dir == '/' ? dir : "/tmp");
			if (mkdtemp(tmpl) == NULL) {
				snprintf(err, errlen, "cannot make a directory for the CA: %s",
				         strerror(errno));
				return -1;
			}
			t->run_dir = xstrdup(tmpl);
			dir = t->run_dir;
		}
		snprintf(path, sizeof path, "%s/egressd-ca.pem", dir);
		t->ca_path = xstrdup(path);
		if (o->ca_bundle_out == NULL) {
			snprintf(path, sizeof path, "%s/egressd-bundle.pem", dir);
			t->bundle_path = xstrdup(path);
		}
	}
	if (o->ca_bundle_out != NULL)
		t->bundle_path = xstrdup(o->ca_bundle_out);
	if (ca_write_cert(t->ca, t->ca_path) == -1) {
		snprintf(err, errlen, "cannot write the CA certificate to %s", t->ca_path);
		return -1;
	}
	if (t->bundle_path != NULL &&
	    ca_write_bundle(t->ca, t->bundle_path,
	                    o->system_ca ? o->system_ca : CA_SYSTEM_BUNDLE) == -1) {
		if (o->ca_bundle_out != NULL) {
			snprintf(err, errlen, "cannot write the CA bundle to %s", t->bundle_path);
			return -1;
		}
		free(t->bundle_path); /* our own extra: not fatal */
		t->bundle_path = NULL;
	}
	return 0;
}

/*
 * Keys live in this process only: no core file and no ptrace by another
 * process of the same user can read them out.
 */
static void
tls_protect_memory(void)
{
	struct rlimit rl = {0, 0};

	if (setrlimit(RLIMIT_CORE, &rl) == -1)
		log_warn("setrlimit RLIMIT_CORE");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		log_warn("prctl PR_SET_DUMPABLE");
}

struct tls *
tls_new(const struct tls_opts *o, const struct config *cfg, char *err, size_t errlen)
{
	struct tls *t;
	const char **names = NULL;
	size_t n = 0;
	char cerr[512];

	tls_protect_memory();
	t = xcalloc(1, sizeof *t);
	t->conn_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	if ((o->ca_cert == NULL) != (o->ca_key == NULL)) {
		snprintf(err, errlen, "--ca-cert and --ca-key go together");
		goto fail;
	}
	if (o->ca_cert != NULL) {
		if ((t->ca = ca_load(o->ca_cert, o->ca_key, cerr, sizeof cerr)) == NULL) {
			snprintf(err, errlen, "%s", cerr);
			goto fail;
		}
	} else {
		if (cfg->mode == MODE_STRICT && cfg->ca_name_constraints)
			names = tls_constraint_names(cfg, &n);
		t->ca = ca_new_ephemeral((long)cfg->ca_lifetime_hours * 3600, names, n, cerr,
		                         sizeof cerr);
		free(names);
		if (t->ca == NULL) {
			snprintf(err, errlen, "%s", cerr);
			goto fail;
		}
	}
	t->leaves = ca_cache_new(t->ca, 0);
	if ((t->server = tls_server_ctx(t, err, errlen)) == NULL ||
	    (t->client =
	         tls_client_ctx(o->upstream_ca, o->system_ca ? o->system_ca : CA_SYSTEM_BUNDLE, err,
	                        errlen)) == NULL ||
	    tls_export(t, o, err, errlen) == -1)
		goto fail;
	return t;
fail:
	tls_free(t);
	return NULL;
}

void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	if (t->run_dir != NULL) {
		(void)unlink(t->ca_path);
		if (t->bundle_path != NULL)
			(void)unlink(t->bundle_path);
		(void)rmdir(t->run_dir);
	}
	ca_cache_free(t->leaves);
	ca_free(t->ca);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t->ca_path);
	free(t->bundle_path);
	free(t->run_dir);
	free(t);
}

const char *
tls_ca_path(const struct tls *t)
{
	return t->ca_path;
}

const char *
tls_bundle_path(const struct tls *t)
{
	return t->bundle_path;
}

/* The lines a user pastes to trust the run's CA. */
void
tls_print_trust(const struct tls *t, FILE *f)
{
	const char *b = t->bundle_path;

	fprintf(f,
	        "egressd: HTTPS is intercepted with the CA in %s\n"
	        "egressd: to trust it, paste:\n"
	        "  export NODE_EXTRA_CA_CERTS=%s\n",
	        t->ca_path, t->ca_path);
	if (b != NULL)
		fprintf(f,
		        "  export SSL_CERT_FILE=%s REQUESTS_CA_BUNDLE=%s\n"
		        "  export CURL_CA_BUNDLE=%s GIT_SSL_CAINFO=%s\n",
		        b, b, b, b);
}

/*
 * A TLS bufferevent reads 4 KiB at a time unless its input has a high
 * mark; with one it reads whole records until the mark, so a body moves
 * in full 16 KiB records (written one per chain on the other side) rather
 * than in quarters. The relay's backpressure keeps inputs far below it.
 */
static void
tls_tune(struct bufferevent *bev)
{
	bufferevent_setwatermark(bev, EV_READ, 0, RELAY_HIGH_MARK);
}

/*
 * Turn the client's plain socket into the server end of TLS with a leaf
 * for the CONNECT host. The socket bufferevent lets go of its descriptor
 * (nothing may be buffered in it) and a TLS one takes it over.
 */
struct bufferevent *
tls_accept(struct tls *t, struct event_base *base, struct conn *c, struct bufferevent **plainp)
{
	struct bufferevent *bev, *plain = *plainp;
	X509 *leaf;
	SSL *ssl;
	int fd = bufferevent_getfd(plain);

	if ((leaf = ca_cache_get(t->leaves, c->dest->host.name, c->dest->host.kind == HOST_ADDR)) ==
	    NULL)
		return NULL;
	if ((ssl = SSL_new(t->server)) == NULL) {
		X509_free(leaf);
		return NULL;
	}
	if (SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, ca_leaf_key(t->ca)) != 1) {
		X509_free(leaf);
		SSL_free(ssl);
		return NULL;
	}
	X509_free(leaf);
	SSL_set_ex_data(ssl, t->conn_idx, c);
	bufferevent_setfd(plain, -1);
	bufferevent_free(plain);
	*plainp = NULL;
	bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
	                                     BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	/* Many clients close without close_notify; that is the end of the stream. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	tls_tune(bev);
	return bev;
}

/*
 * The client end of TLS towards an upstream over a connected socket: SNI
 * for a name, and verification of the chain and of the name or address.
 */
struct bufferevent *
tls_connect(struct tls *t, struct event_base *base, int fd, const struct host *h)
{
	struct bufferevent *bev;
	SSL *ssl;
	int ok;

	if ((ssl = SSL_new(t->client)) == NULL)
		return NULL;
	if (h->kind == HOST_ADDR)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), h->name);
	else
		ok =
		    SSL_set_tlsext_host_name(ssl, h->name) == 1 && SSL_set1_host(ssl, h->name) == 1;
	if (ok != 1) {
		SSL_free(ssl);
		return NULL;
	}
	X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_CONNECTING,
	                                     BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	tls_tune(bev);
	return bev;
}

/*
 * Why a handshake failed, for a 502 body or an audit line. *verify is set
 * when the peer's certificate was the problem.
 */
void
tls_error(struct bufferevent *bev, char *out, size_t len, int *verify)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e;
	long v;
	char buf[256];

	*verify = 0;
	if (ssl != NULL && !SSL_is_server(ssl) && (v = SSL_get_verify_result(ssl)) != X509_V_OK) {
		*verify = 1;
		snprintf(out, len, "certificate verify failed: %s",
		         X509_verify_cert_error_string(v));
		while (bufferevent_get_openssl_error(bev) != 0)
			;
		return;
	}
	if ((e = bufferevent_get_openssl_error(bev)) != 0) {
		ERR_error_string_n(e, buf, sizeof buf);
		snprintf(out, len, "%s", buf);
		while (bufferevent_get_openssl_error(bev) != 0)
			;
		return;
	}
	if (errno != 0)
		snprintf(out, len, "handshake failed: %s", strerror(errno));
	else
		snprintf(out, len, "connection closed during the handshake");
}

/* Whether a client handshake error reads as "the client does not trust us". */
int
tls_error_is_trust(const char *msg)
{
	return strstr(msg, "unknown ca") != NULL || strstr(msg, "bad certificate") != NULL ||
	       strstr(msg, "certificate unknown") != NULL ||
	       strstr(msg, "closed during the handshake") != NULL ||
	       strstr(msg, "unexpected eof") != NULL;
}
