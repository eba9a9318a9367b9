/*
 * TLS interception: the run's CA and its leaf cache, the server context
 * that answers clients with a leaf for the host they sent CONNECT for, and
 * the client context that connects upstream verifying the chain and the
 * name, never more leniently than the client would on its own, against a
 * trust store parsed while egressd gets ready. Both legs offer ALPN
 * http/1.1 only: the HTTP engine behind them speaks HTTP/1.1. The sockets
 * under both legs are tlsio.c's.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "tls.h"
#include "tls_int.h"

static const unsigned char tls_alpn[] = "\x08http/1.1";

#define TLS_STORE_MAX (64 * 1024 * 1024) /* bytes of a trust store file */

/*
 * TLS 1.3 suites, AES-128-GCM first: the suite every TLS 1.3 peer has to
 * implement, as strong as the traffic needs, and about 15 % less CPU per
 * byte than AES-256-GCM here. Every byte through an intercepted connection
 * is decrypted and encrypted again, so this is most of egressd's work on a
 * large body. Offered in this order upstream; chosen in this order from the
 * client's offer, except that a client which puts ChaCha20 first (one
 * without AES instructions) gets it (SSL_OP_PRIORITIZE_CHACHA).
 */
static const char tls13_suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
/*
 * TLS 1.2 towards the clients: the leaf key is ECDSA P-256, so ECDHE-ECDSA
 * with an AEAD cipher only, in the same order. Upstream keeps OpenSSL's
 * default list, which servers that know nothing newer still share.
 */
static const char tls12_server_ciphers[] = "ECDHE-ECDSA-AES128-GCM-SHA256:"
                                           "ECDHE-ECDSA-AES256-GCM-SHA384:"
                                           "ECDHE-ECDSA-CHACHA20-POLY1305";

struct tls {
	struct ca *ca;
	struct ca_cache *leaves;
	SSL_CTX *server; /* faces the clients */
	SSL_CTX *client; /* faces the upstreams */
	char *ca_path;   /* where the CA certificate was written */
	char *bundle_path;
	char *run_dir; /* made for this run when no --ca-out was given; removed at exit */
	int peer_idx;  /* SSL ex_data index of the struct tls_peer (tls_accept's) */
	int io_idx;    /* SSL ex_data index of the struct tlsio */
	struct tlsio_list lingering;
	/*
	 * The upstream trust store takes tens of milliseconds to parse (the
	 * system bundle): it is parsed after READY (tls_start) or by the first
	 * upstream handshake, whichever comes first, never before READY.
	 * OpenSSL 3.0 is not safe to parse it in a thread while the loop
	 * handshakes: its method store races.
	 */
	int store_state;
#define TLS_STORE_PENDING 0
#define TLS_STORE_READY   1
#define TLS_STORE_FAILED  2
	int store_scheduled;
	char *store_path;
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
 * The name the client asks for must be the peer's host, the one it sent
 * CONNECT for: the leaf and the policy decision are both for that host,
 * so another SNI would be a request for a host nobody decided. The name
 * is reported to the peer's owner either way.
 */
static int
tls_servername_cb(SSL *ssl, int *al, void *arg)
{
	struct tls *t = arg;
	struct tls_peer *peer = SSL_get_ex_data(ssl, t->peer_idx);
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	struct host h;
	int mismatch;

	if (peer == NULL || sni == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	mismatch = host_parse(sni, strlen(sni), &h) != NULL || h.kind != peer->host->kind ||
	           strcmp(h.name, peer->host->name) != 0;
	if (peer->sni_cb != NULL)
		peer->sni_cb(peer->arg, sni, mismatch);
	if (mismatch) {
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
	 * Record buffers stay while a connection is busy and are given back
	 * once it is idle (tls_idle). Session tickets let a client resume
	 * without a full handshake; the ticket keys, like the CA, live for
	 * this run only.
	 */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
	                             SSL_OP_PRIORITIZE_CHACHA);
	if (SSL_CTX_set_ciphersuites(ctx, tls13_suites) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, tls12_server_ciphers) != 1) {
		snprintf(err, errlen, "cannot set the TLS server's cipher suites");
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_select_cb, NULL);
	SSL_CTX_set_tlsext_servername_callback(ctx, tls_servername_cb);
	SSL_CTX_set_tlsext_servername_arg(ctx, t);
	return ctx;
}

static SSL_CTX *
tls_client_ctx(char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "cannot create the TLS client context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	if (SSL_CTX_set_ciphersuites(ctx, tls13_suites) != 1) {
		snprintf(err, errlen, "cannot set the TLS client's cipher suites");
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(ctx, tls_alpn, sizeof tls_alpn - 1);
	return ctx;
}

/*
 * What can be told about a trust store before parsing it: a regular file
 * we can read, with at least one PEM certificate or CRL in it. NULL when
 * it looks like one; the parse itself comes after READY (tls_start).
 */
const char *
tls_store_check(const char *path)
{
	static const char *const kinds[] = {"-----BEGIN CERTIFICATE-----",
	                                    "-----BEGIN TRUSTED CERTIFICATE-----",
	                                    "-----BEGIN X509 CRL-----"};
	struct stat st;
	char *data;
	size_t n, i;
	FILE *f;
	int fd, found = 0;

	/* Non-blocking, so that a FIFO given by mistake cannot hang the start. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return strerror(errno);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return "not a regular file";
	}
	if (st.st_size > TLS_STORE_MAX) {
		fclose(f);
		return "larger than 64 MiB";
	}
	data = xmalloc((size_t)st.st_size + 1);
	n = fread(data, 1, (size_t)st.st_size, f);
	fclose(f);
	data[n] = '\0';
	for (i = 0; i < EG_NELEM(kinds) && !found; i++)
		found = strstr(data, kinds[i]) != NULL;
	free(data);
	return found ? NULL : "no PEM certificate in it";
}

/*
 * The trust store, parsed: 0, or -1 when it cannot be, and then no
 * upstream is verified (so none is connected to). A failure is said once,
 * loudly: every intercepted request fails until a restart.
 */
static int
tls_store_wait(struct tls *t)
{
	char err[256];
	unsigned long e;

	if (t->store_state != TLS_STORE_PENDING)
		return t->store_state == TLS_STORE_READY ? 0 : -1;
	if (SSL_CTX_load_verify_locations(t->client, t->store_path, NULL) == 1) {
		t->store_state = TLS_STORE_READY;
		return 0;
	}
	if ((e = ERR_peek_last_error()) != 0)
		ERR_error_string_n(e, err, sizeof err);
	else
		snprintf(err, sizeof err, "no certificate could be read");
	ERR_clear_error();
	log_warnx("cannot load the upstream trust store %s: %s; every upstream TLS connection "
	          "fails until egressd restarts with a good store",
	          t->store_path, err);
	t->store_state = TLS_STORE_FAILED;
	return -1;
}

/*
 * For --check: the store egressd would verify upstreams against, checked
 * and parsed in full now (a check may take the time a start does not).
 * NULL when it loads, else why not, in a static buffer.
 */
const char *
tls_store_check_full(const char *path)
{
	static char why[256];
	const char *err;
	X509_STORE *st;
	unsigned long e;
	int ok;

	if ((err = tls_store_check(path)) != NULL)
		return err;
	if ((st = X509_STORE_new()) == NULL)
		return "out of memory";
	ok = X509_STORE_load_file(st, path);
	X509_STORE_free(st);
	if (ok == 1)
		return NULL;
	if ((e = ERR_peek_last_error()) != 0)
		ERR_error_string_n(e, why, sizeof why);
	else
		snprintf(why, sizeof why, "no certificate could be read");
	ERR_clear_error();
	return why;
}

static void
tls_store_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)tls_store_wait(arg);
}

/*
 * Parse the upstream trust store from the event loop as soon as it runs:
 * called once egressd is ready, so the parse does not delay READY and is
 * over before most clients come.
 */
void
tls_start(struct tls *t, struct event_base *base)
{
	static const struct timeval now = {0, 0};

	if (t->store_state == TLS_STORE_PENDING && !t->store_scheduled)
		t->store_scheduled =
		    event_base_once(base, -1, EV_TIMEOUT, tls_store_cb, t, &now) == 0;
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
	const char *serr;

	tls_protect_memory();
	t = xcalloc(1, sizeof *t);
	t->peer_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	t->io_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, tlsio_ex_free_cb);
	t->store_state = TLS_STORE_FAILED; /* until the check below passes */
	TAILQ_INIT(&t->lingering);
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
	/*
	 * The system store by its path (--system-ca), never SSL_CERT_FILE or
	 * OpenSSL's default paths: in the sandbox those lead to the bundle
	 * that holds our own CA, and egressd must not trust itself upstream.
	 */
	t->store_path = xstrdup(o->upstream_ca         ? o->upstream_ca
	                        : o->system_ca != NULL ? o->system_ca
	                                               : CA_SYSTEM_BUNDLE);
	if ((serr = tls_store_check(t->store_path)) != NULL) {
		snprintf(err, errlen, "cannot load the upstream trust store %s: %s", t->store_path,
		         serr);
		goto fail;
	}
	if ((t->server = tls_server_ctx(t, err, errlen)) == NULL ||
	    (t->client = tls_client_ctx(err, errlen)) == NULL ||
	    tls_export(t, o, err, errlen) == -1)
		goto fail;
	t->store_state = TLS_STORE_PENDING;
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
	tlsio_list_free(&t->lingering);
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
	free(t->store_path);
	free(t);
}

const char *
tls_ca_path(const struct tls *t)
{
	return t->ca_path;
}

/*
 * What status shows of the CA: the certificate's SHA-256 fingerprint
 * (as openssl x509 -fingerprint -sha256 prints it), its expiry and the
 * leaves minted. Nothing of a key.
 */
void
tls_ca_info(const struct tls *t, struct tls_ca_info *info)
{
	static const char hex[] = "0123456789ABCDEF";
	struct ca_cache_stats st;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	const ASN1_TIME *na;
	struct tm tm;
	X509 *x = ca_cert(t->ca);

	memset(info, 0, sizeof *info);
	if (X509_digest(x, EVP_sha256(), md, &n) == 1 && n * 3 <= sizeof info->fingerprint) {
		for (i = 0; i < n; i++) {
			info->fingerprint[3 * i] = hex[md[i] >> 4];
			info->fingerprint[3 * i + 1] = hex[md[i] & 0xf];
			info->fingerprint[3 * i + 2] = i + 1 < n ? ':' : '\0';
		}
	}
	if ((na = X509_get0_notAfter(x)) != NULL && ASN1_TIME_to_tm(na, &tm) == 1)
		info->not_after = timegm(&tm);
	ca_cache_stats(t->leaves, &st);
	info->leaves_minted = st.mints;
	info->leaves_cached = st.entries;
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
 * Turn the client's plain socket into the server end of TLS with a leaf
 * for the peer's host. The socket bufferevent lets go of its descriptor
 * (nothing may be buffered in it) and a TLS one takes it over. The SSL
 * holds peer as ex_data, read by the SNI callback during the handshake;
 * the caller keeps it until the returned bufferevent is freed.
 */
struct bufferevent *
tls_accept(struct tls *t, struct event_base *base, struct tls_peer *peer,
           struct bufferevent **plainp)
{
	struct bufferevent *plain = *plainp;
	X509 *leaf;
	SSL *ssl;
	int fd = bufferevent_getfd(plain);

	if ((leaf = ca_cache_get(t->leaves, peer->host->name, peer->host->kind == HOST_ADDR)) ==
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
	SSL_set_ex_data(ssl, t->peer_idx, peer);
	/* The store is parsed while this client's handshake is on the wire, if not yet. */
	tls_start(t, base);
	bufferevent_setfd(plain, -1);
	bufferevent_free(plain);
	*plainp = NULL;
	return tlsio_bev_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, t->io_idx, &t->lingering);
}

/*
 * The client end of TLS towards an upstream over a connected socket: SNI
 * for a name, and verification of the chain and of the name or address.
 * Takes fd unless it returns NULL.
 */
struct bufferevent *
tls_connect(struct tls *t, struct event_base *base, int fd, const struct host *h)
{
	SSL *ssl;
	int ok;

	if (tls_store_wait(t) == -1 || (ssl = SSL_new(t->client)) == NULL)
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
	return tlsio_bev_new(base, fd, ssl, BUFFEREVENT_SSL_CONNECTING, t->io_idx, &t->lingering);
}

/*
 * An idle TLS connection gives its record buffers (about 34 KiB) back.
 * Called from the once-a-second tick for connections between requests,
 * rather than by SSL_MODE_RELEASE_BUFFERS after every read and write,
 * which made each request pay for allocating and freeing them (a few
 * per cent of egressd under keep-alive load). OpenSSL keeps buffers that
 * still hold data, and allocates them again on the next read or write.
 */
void
tls_idle(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	if (ssl != NULL && SSL_is_init_finished(ssl))
		(void)SSL_free_buffers(ssl);
}

/* What OpenSSL's own reasons mean, in words; "PEER" stands for the other end. */
static const struct {
	int reason;
	const char *text;
} tls_reasons[] = {
    {SSL_R_WRONG_VERSION_NUMBER, "PEER did not speak TLS (wrong version number)"},
    {SSL_R_WRONG_SSL_VERSION, "PEER did not speak TLS (wrong version number)"},
    {SSL_R_HTTP_REQUEST, "PEER sent a plain HTTP request where TLS was expected"},
    {SSL_R_HTTPS_PROXY_REQUEST, "PEER sent a proxy request (CONNECT) where TLS was expected"},
    {SSL_R_PACKET_LENGTH_TOO_LONG, "PEER did not speak TLS (its first record is not TLS)"},
    {SSL_R_UNSUPPORTED_PROTOCOL, "PEER offered no TLS version egressd accepts (1.2 or later)"},
    {SSL_R_VERSION_TOO_LOW, "PEER offered only TLS versions older than 1.2, which egressd refuses"},
    {SSL_R_VERSION_TOO_HIGH, "PEER chose a TLS version egressd did not offer"},
    {SSL_R_NO_PROTOCOLS_AVAILABLE, "no TLS version is enabled for this connection"},
    {SSL_R_NO_SHARED_CIPHER,
     "PEER offered no cipher suite egressd accepts (ECDHE with AES-GCM or ChaCha20-Poly1305)"},
    {SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS, "PEER and egressd share no signature algorithm"},
    {SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM, "PEER and egressd share no signature algorithm"},
    {SSL_R_NO_SUITABLE_KEY_SHARE, "PEER and egressd share no key exchange group"},
    {SSL_R_NO_SHARED_GROUPS, "PEER and egressd share no key exchange group"},
    {SSL_R_UNEXPECTED_EOF_WHILE_READING, "PEER closed the connection during the TLS handshake"},
    {SSL_R_CERTIFICATE_VERIFY_FAILED,
     "certificate verify failed: PEER's certificate is not trusted"},
    {SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, "PEER sent no certificate"},
    {SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC,
     "a TLS record from PEER failed its integrity check"},
    {SSL_R_RECORD_LENGTH_MISMATCH, "PEER sent a malformed TLS record"},
    {SSL_R_BAD_RECORD_TYPE, "PEER sent a malformed TLS record"},
    {SSL_R_UNEXPECTED_RECORD, "PEER sent a TLS record out of order"},
    {SSL_R_UNEXPECTED_MESSAGE, "PEER sent a handshake message out of order"},
    {SSL_R_BAD_KEY_SHARE, "PEER sent a malformed key share"},
    {SSL_R_UNSAFE_LEGACY_RENEGOTIATION_DISABLED,
     "PEER does not support secure renegotiation (RFC 5746), which egressd requires"},
    {SSL_R_DH_KEY_TOO_SMALL, "PEER's Diffie-Hellman key is too small to be safe"},
    {SSL_R_EE_KEY_TOO_SMALL, "PEER's certificate has a key too small to be safe"},
    {SSL_R_CA_KEY_TOO_SMALL, "PEER's certificate chain has a CA key too small to be safe"},
    {SSL_R_CA_MD_TOO_WEAK, "PEER's certificate chain is signed with a hash too weak to be safe"},
    {SSL_R_NO_APPLICATION_PROTOCOL,
     "PEER speaks no application protocol egressd offers (HTTP/1.1)"},
    {SSL_R_CALLBACK_FAILED, "egressd refused the handshake (the server name check failed)"},
};

/* What a TLS alert the peer sent says about the failure; "" when the name says it. */
static const char *
tls_alert_meaning(int alert)
{
	switch (alert) {
	case SSL_AD_UNKNOWN_CA:
		return ": it does not trust the CA that issued the certificate";
	case SSL_AD_BAD_CERTIFICATE:
	case SSL_AD_CERTIFICATE_UNKNOWN:
	case SSL_AD_UNSUPPORTED_CERTIFICATE:
		return ": it refused the certificate";
	case SSL_AD_CERTIFICATE_EXPIRED:
		return ": it found the certificate expired (is a clock wrong?)";
	case SSL_AD_HANDSHAKE_FAILURE:
	case SSL_AD_INSUFFICIENT_SECURITY:
		return ": no TLS parameters in common (version, cipher suite or group)";
	case SSL_AD_PROTOCOL_VERSION:
		return ": it does not speak the TLS versions offered";
	case SSL_AD_UNRECOGNIZED_NAME:
		return ": it does not serve that name";
	case SSL_AD_NO_APPLICATION_PROTOCOL:
		return ": no application protocol in common";
	}
	return "";
}

/* text with PEER replaced by peer, into out. */
static void
tls_say(char *out, size_t len, const char *text, const char *peer)
{
	const char *at = strstr(text, "PEER");

	if (at == NULL)
		snprintf(out, len, "%s", text);
	else
		snprintf(out, len, "%.*s%s%s", (int)(at - text), text, peer, at + 4);
}

/*
 * One OpenSSL error as a sentence, peer naming the other end ("the
 * client", "the server"). The reasons egressd meets are put in words; any
 * other keeps OpenSSL's text, with the code in brackets. Returns 0 for
 * the bare SSL_get_error() codes libevent queues among the errors (1 and
 * 5, with no library): they say nothing the others do not.
 */
int
tls_error_text(unsigned long e, const char *peer, char *out, size_t len)
{
	const char *why;
	int reason = ERR_GET_REASON(e);
	size_t i;

	if (ERR_SYSTEM_ERROR(e)) {
		snprintf(out, len, "the connection to %s failed: %s", peer, strerror(reason));
		return 1;
	}
	if (ERR_GET_LIB(e) == 0 && e <= SSL_ERROR_WANT_CLIENT_HELLO_CB)
		return 0;
	if (ERR_GET_LIB(e) == ERR_LIB_SSL) {
		if (reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256) {
			snprintf(out, len, "%s refused the handshake with the TLS alert \"%s\"%s",
			         peer, SSL_alert_desc_string_long(reason - SSL_AD_REASON_OFFSET),
			         tls_alert_meaning(reason - SSL_AD_REASON_OFFSET));
			return 1;
		}
		for (i = 0; i < EG_NELEM(tls_reasons); i++)
			if (tls_reasons[i].reason == reason) {
				tls_say(out, len, tls_reasons[i].text, peer);
				return 1;
			}
	}
	why = ERR_reason_error_string(e);
	snprintf(out, len, "the TLS handshake with %s failed: %s [error:%08lX]", peer,
	         why != NULL ? why : "reason unknown to OpenSSL", e);
	return 1;
}

/*
 * Why a handshake failed, for a 502 body or an audit line: a sentence,
 * from the first error that says something. *verify is set when the
 * peer's certificate was the problem.
 */
void
tls_error(struct bufferevent *bev, char *out, size_t len, int *verify)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	const char *peer = ssl != NULL && SSL_is_server(ssl) ? "the client" : "the server";
	unsigned long e;
	int found = 0;
	long v;

	*verify = 0;
	if (ssl != NULL && !SSL_is_server(ssl) && (v = SSL_get_verify_result(ssl)) != X509_V_OK) {
		*verify = 1;
		snprintf(out, len, "certificate verify failed: %s",
		         X509_verify_cert_error_string(v));
		found = 1;
	}
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (!found)
			found = tls_error_text(e, peer, out, len);
	if (found)
		return;
	if (errno != 0)
		snprintf(out, len, "the connection to %s failed during the TLS handshake: %s", peer,
		         strerror(errno));
	else
		snprintf(out, len, "%s closed the connection during the TLS handshake", peer);
}

/* Whether a client handshake error reads as "the client does not trust us". */
int
tls_error_is_trust(const char *msg)
{
	return strstr(msg, "\"unknown CA\"") != NULL ||
	       strstr(msg, "\"bad certificate\"") != NULL ||
	       strstr(msg, "\"certificate unknown\"") != NULL ||
	       strstr(msg, "closed the connection during the TLS handshake") != NULL;
}
