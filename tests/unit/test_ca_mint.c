/*
 * Unit tests for ca/mint.c: a minted leaf verifies with X509_verify_cert
 * against a store holding only the CA (purpose sslserver, host or address
 * checked); its SAN, subject, extensions, key, serial and validity are
 * exactly as promised; hostile host strings are refused; under name
 * constraints a permitted name verifies and any other fails. Ends with TLS
 * handshakes over a socketpair: a server picking leaves by SNI from the
 * cache, a client trusting only the CA, ALPN http/1.1.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ca.h"

static char errbuf[256];

static struct ca *
new_ca(long lifetime, const char *const *names, size_t n)
{
	struct ca *ca = ca_new_ephemeral(lifetime, names, n, errbuf, sizeof errbuf);

	if (ca == NULL)
		fail_msg("ca_new_ephemeral: %s", errbuf);
	return ca;
}

static X509 *
mint(struct ca *ca, const char *host, int is_ip)
{
	X509 *x = NULL;

	if (ca_mint(ca, host, is_ip, &x) != 0)
		fail_msg("ca_mint %s failed", host);
	assert_non_null(x);
	return x;
}

static time_t
asn1_time(const ASN1_TIME *t)
{
	struct tm tm;

	assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
	return timegm(&tm);
}

/*
 * X509_verify_cert with a store holding only the CA, purpose sslserver,
 * the name (or address) required to match. Returns the verify error.
 */
static int
verify(struct ca *ca, X509 *leaf, const char *host, int is_ip)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	int rv;

	assert_int_equal(X509_STORE_add_cert(store, ca_cert(ca)), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	assert_int_equal(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
	param = X509_STORE_CTX_get0_param(ctx);
	if (is_ip)
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(param, host), 1);
	else
		assert_int_equal(X509_VERIFY_PARAM_set1_host(param, host, 0), 1);
	rv = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return rv;
}

static void
assert_verifies(struct ca *ca, X509 *leaf, const char *host, int is_ip)
{
	int e = verify(ca, leaf, host, is_ip);

	if (e != X509_V_OK)
		fail_msg("%s: %s", host, X509_verify_cert_error_string(e));
}

/* The single SAN entry: its type and value (a name, or an address as text). */
static int
san_get(X509 *x, char *out, size_t outlen)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	GENERAL_NAME *gn;
	ASN1_STRING *s;
	int type;

	assert_non_null(gens);
	assert_int_equal(sk_GENERAL_NAME_num(gens), 1);
	gn = sk_GENERAL_NAME_value(gens, 0);
	s = GENERAL_NAME_get0_value(gn, &type);
	if (type == GEN_DNS)
		snprintf(out, outlen, "%.*s", ASN1_STRING_length(s),
		         (const char *)ASN1_STRING_get0_data(s));
	else
		inet_ntop(ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s),
		          out, (socklen_t)outlen);
	GENERAL_NAMES_free(gens);
	return type;
}

static int
ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

static void
test_leaf_dns(void **state)
{
	struct ca *ca = new_ca(CA_LIFETIME_DEFAULT, NULL, 0);
	X509 *leaf = mint(ca, "www.example.com", 0), *again;
	AUTHORITY_KEYID *akid;
	BASIC_CONSTRAINTS *bc;
	char san[300], cn[300];
	BIGNUM *bn;

	assert_verifies(ca, leaf, "www.example.com", 0);
	assert_int_equal(verify(ca, leaf, "example.com", 0), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(verify(ca, leaf, "www.example.org", 0), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(X509_check_host(leaf, "www.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "WWW.EXAMPLE.COM", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(leaf, "a.www.example.com", 0, 0, NULL), 0);

	assert_int_equal(san_get(leaf, san, sizeof san), GEN_DNS);
	assert_string_equal(san, "www.example.com");
	assert_int_equal(
	    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof cn),
	    15);
	assert_string_equal(cn, "www.example.com");
	assert_int_equal(
	    X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(ca_cert(ca))), 0);

	/* Extensions: exactly these six, criticality as promised. */
	assert_int_equal(X509_get_ext_count(leaf), 6);
	assert_int_equal(ext_critical(leaf, NID_basic_constraints), 1);
	bc = X509_get_ext_d2i(leaf, NID_basic_constraints, NULL, NULL);
	assert_false(bc->ca);
	BASIC_CONSTRAINTS_free(bc);
	assert_int_equal(ext_critical(leaf, NID_key_usage), 1);
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	assert_int_equal(ext_critical(leaf, NID_ext_key_usage), 0);
	assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
	assert_int_equal(ext_critical(leaf, NID_subject_alt_name), 0);
	assert_int_equal(ext_critical(leaf, NID_subject_key_identifier), 0);
	assert_non_null(X509_get0_subject_key_id(leaf));
	akid = X509_get_ext_d2i(leaf, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(akid);
	assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid, X509_get0_subject_key_id(ca_cert(ca))),
	                 0);
	AUTHORITY_KEYID_free(akid);
	assert_int_equal(X509_check_purpose(leaf, X509_PURPOSE_SSL_SERVER, 0), 1);
	assert_int_equal(X509_check_ca(leaf), 0);

	/* The shared key, an ECDSA-SHA256 signature by the CA, a fresh serial each time. */
	assert_int_equal(EVP_PKEY_eq(X509_get0_pubkey(leaf), ca_leaf_key(ca)), 1);
	assert_int_equal(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_verify(leaf, X509_get0_pubkey(ca_cert(ca))), 1);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL);
	assert_false(BN_is_zero(bn));
	assert_false(BN_is_negative(bn));
	assert_true(BN_num_bits(bn) <= 128 && BN_num_bits(bn) > 96);
	BN_free(bn);
	again = mint(ca, "www.example.com", 0);
	assert_int_not_equal(
	    ASN1_INTEGER_cmp(X509_get0_serialNumber(leaf), X509_get0_serialNumber(again)), 0);
	/* Both leaves share one subject key identifier: one key. */
	assert_int_equal(
	    ASN1_OCTET_STRING_cmp(X509_get0_subject_key_id(leaf), X509_get0_subject_key_id(again)),
	    0);
	X509_free(again);
	X509_free(leaf);
	ca_free(ca);
}

static void
test_leaf_case_folded(void **state)
{
	struct ca *ca = new_ca(3600, NULL, 0);
	X509 *leaf = mint(ca, "API.Example.COM", 0);
	char san[300];

	assert_int_equal(san_get(leaf, san, sizeof san), GEN_DNS);
	assert_string_equal(san, "api.example.com");
	assert_verifies(ca, leaf, "api.example.com", 0);
	X509_free(leaf);
	ca_free(ca);
}

static void
test_leaf_ip(void **state)
{
	static const struct {
		const char *in;
		const char *san;
		int len;
	} cases[] = {
	    {"192.0.2.1", "192.0.2.1", 4},
	    {"127.0.0.1", "127.0.0.1", 4},
	    {"2001:db8::1", "2001:db8::1", 16},
	    {"2001:0DB8:0:0::0001", "2001:db8::1", 16},
	    {"::1", "::1", 16},
	    {"::ffff:192.0.2.9", "::ffff:192.0.2.9", 16},
	};
	struct ca *ca = new_ca(3600, NULL, 0);
	GENERAL_NAMES *gens;
	char san[64];
	X509 *leaf;
	size_t i;

	for (i = 0; i < EG_NELEM(cases); i++) {
		leaf = mint(ca, cases[i].in, 1);
		assert_int_equal(san_get(leaf, san, sizeof san), GEN_IPADD);
		assert_string_equal(san, cases[i].san);
		gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
		assert_int_equal(ASN1_STRING_length(sk_GENERAL_NAME_value(gens, 0)->d.ip),
		                 cases[i].len);
		GENERAL_NAMES_free(gens);
		assert_int_equal(X509_check_ip_asc(leaf, cases[i].san, 0), 1);
		assert_int_equal(X509_check_ip_asc(leaf, "192.0.2.200", 0), 0);
		assert_verifies(ca, leaf, cases[i].san, 1);
		assert_int_equal(verify(ca, leaf, "198.51.100.7", 1),
		                 X509_V_ERR_IP_ADDRESS_MISMATCH);
		/* An address leaf has no CN (see ca_mint_subject) and is no host name. */
		assert_int_equal(
		    X509_NAME_get_index_by_NID(X509_get_subject_name(leaf), NID_commonName, -1),
		    -1);
		assert_int_equal(X509_check_host(leaf, cases[i].san, 0, 0, NULL), 0);
		X509_free(leaf);
	}
	ca_free(ca);
}

static void
test_long_name(void **state)
{
	char host[260], cn[300], san[300];
	struct ca *ca = new_ca(3600, NULL, 0);
	X509 *leaf;
	size_t len;

	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 characters, the longest name. */
	memset(host, 'a', 253);
	host[63] = host[127] = host[191] = '.';
	host[253] = '\0';
	leaf = mint(ca, host, 0);
	assert_int_equal(san_get(leaf, san, sizeof san), GEN_DNS);
	assert_string_equal(san, host);
	len = (size_t)X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn,
	                                        sizeof cn);
	assert_int_equal(len, CA_CN_MAXLEN);
	assert_memory_equal(cn, host, CA_CN_MAXLEN);
	assert_int_equal(X509_check_host(leaf, host, 0, 0, NULL), 1);
	assert_verifies(ca, leaf, host, 0);
	X509_free(leaf);

	/* 64 is kept whole. */
	memset(host, 'b', 64);
	host[30] = '.';
	host[64] = '\0';
	leaf = mint(ca, host, 0);
	len = (size_t)X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn,
	                                        sizeof cn);
	assert_int_equal(len, 64);
	assert_string_equal(cn, host);
	X509_free(leaf);
	ca_free(ca);
}

static void
test_bad_hosts(void **state)
{
	static const struct {
		const char *host;
		int is_ip;
	} bad[] = {
	    {"", 0},
	    {".", 0},
	    {"a..b", 0},
	    {".a.com", 0},
	    {"a.com.", 0},
	    {"*.a.com", 0},
	    {"a b.com", 0},
	    {"a.com\n", 0},
	    {"a.com\r\nX: y", 0},
	    {"a/b", 0},
	    {"a@b.com", 0},
	    {"\xc3\xa9.com", 0},
	    {"1.2.3", 1},
	    {"example.com", 1},
	    {"[::1]", 1},
	    {"192.0.2.1/24", 1},
	    {"", 1},
	    {NULL, 0},
	};
	struct ca *ca = new_ca(3600, NULL, 0);
	char host[300];
	X509 *leaf;
	size_t i;

	for (i = 0; i < EG_NELEM(bad); i++) {
		leaf = (X509 *)1;
		if (ca_mint(ca, bad[i].host, bad[i].is_ip, &leaf) != -1)
			fail_msg("case %zu minted", i);
		assert_null(leaf);
	}
	memset(host, 'a', 254);
	host[63] = host[127] = host[191] = '.';
	host[254] = '\0';
	assert_int_equal(ca_mint(ca, host, 0, &leaf), -1); /* 254 characters */
	memset(host, 'a', 64);
	strcpy(host + 64, ".com");
	assert_int_equal(ca_mint(ca, host, 0, &leaf), -1); /* a 64-character label */
	host[1] = '.';
	assert_int_equal(ca_mint(ca, host, 0, &leaf), 0); /* now 1 + 62 */
	X509_free(leaf);
	assert_int_equal(ERR_peek_error(), 0); /* nothing left in OpenSSL's queue */
	ca_free(ca);
}

static void
test_validity(void **state)
{
	struct ca *ca = new_ca(CA_LIFETIME_DEFAULT, NULL, 0);
	time_t now = time(NULL), ca_nb, ca_na, nb, na;
	X509 *leaf = mint(ca, "a.example", 0);

	ca_nb = asn1_time(X509_get0_notBefore(ca_cert(ca)));
	ca_na = asn1_time(X509_get0_notAfter(ca_cert(ca)));
	nb = asn1_time(X509_get0_notBefore(leaf));
	na = asn1_time(X509_get0_notAfter(leaf));
	assert_true(nb >= ca_nb && na <= ca_na);
	assert_true(nb >= now - CA_BACKDATE - 5 && nb <= now - CA_BACKDATE + 5);
	assert_true(na >= now + CA_LEAF_LIFETIME_DEFAULT - 5 && na <= ca_na);
	X509_free(leaf);

	/* A shorter leaf lifetime is honoured. */
	ca_set_leaf_lifetime(ca, 3600);
	leaf = mint(ca, "b.example", 0);
	na = asn1_time(X509_get0_notAfter(leaf));
	assert_true(na >= now + 3600 - 5 && na <= now + 3600 + 5);
	X509_free(leaf);
	ca_free(ca);

	/* A CA shorter than the leaf lifetime cuts the leaf at its own end. */
	ca = new_ca(600, NULL, 0);
	leaf = mint(ca, "c.example", 0);
	assert_int_equal(asn1_time(X509_get0_notAfter(leaf)),
	                 asn1_time(X509_get0_notAfter(ca_cert(ca))));
	assert_true(asn1_time(X509_get0_notBefore(leaf)) >=
	            asn1_time(X509_get0_notBefore(ca_cert(ca))));
	assert_verifies(ca, leaf, "c.example", 0);
	X509_free(leaf);
	ca_free(ca);
}

static void
test_name_constraints(void **state)
{
	static const char *const names[] = {"*.x.com", "y.org", "192.0.2.0/24", "2001:db8:1::/48"};
	static const char *const names_only[] = {"x.com"};
	static const struct {
		const char *host;
		int is_ip;
		int err_full;  /* verify error against the first CA */
		int err_names; /* against the names-only CA */
	} cases[] = {
	    {"a.x.com", 0, X509_V_OK, X509_V_OK},
	    {"deep.a.x.com", 0, X509_V_OK, X509_V_OK},
	    {"x.com", 0, X509_V_ERR_PERMITTED_VIOLATION, X509_V_OK},
	    {"y.org", 0, X509_V_OK, X509_V_ERR_PERMITTED_VIOLATION},
	    {"sub.y.org", 0, X509_V_OK, X509_V_ERR_PERMITTED_VIOLATION},
	    {"evily.org", 0, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_PERMITTED_VIOLATION},
	    {"y.org.evil.com", 0, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_PERMITTED_VIOLATION},
	    {"evil.com", 0, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_PERMITTED_VIOLATION},
	    {"xx.com", 0, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_PERMITTED_VIOLATION},
	    {"192.0.2.5", 1, X509_V_OK, X509_V_ERR_EXCLUDED_VIOLATION},
	    {"198.51.100.1", 1, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION},
	    {"2001:db8:1::9", 1, X509_V_OK, X509_V_ERR_EXCLUDED_VIOLATION},
	    {"2001:db8:2::9", 1, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION},
	    {"::ffff:192.0.2.5", 1, X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION},
	};
	struct ca *full = new_ca(3600, names, EG_NELEM(names));
	struct ca *only = new_ca(3600, names_only, 1);
	X509 *leaf;
	size_t i;
	int e;

	for (i = 0; i < EG_NELEM(cases); i++) {
		leaf = mint(full, cases[i].host, cases[i].is_ip);
		if ((e = verify(full, leaf, cases[i].host, cases[i].is_ip)) != cases[i].err_full)
			fail_msg("%s (full): %s", cases[i].host, X509_verify_cert_error_string(e));
		X509_free(leaf);
		leaf = mint(only, cases[i].host, cases[i].is_ip);
		if ((e = verify(only, leaf, cases[i].host, cases[i].is_ip)) != cases[i].err_names)
			fail_msg("%s (names): %s", cases[i].host, X509_verify_cert_error_string(e));
		X509_free(leaf);
	}
	ca_free(full);
	ca_free(only);
}

/*
 * TLS over a socketpair, both ends non-blocking in this one thread: the
 * server picks its leaf in the SNI callback from the cache (the shape
 * egressd uses), the client trusts only the CA and checks the name.
 */
struct tls_server {
	struct ca *ca;
	struct ca_cache *cache;
};

static int
sni_cb(SSL *ssl, int *alert, void *arg)
{
	struct tls_server *srv = arg;
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	X509 *leaf;
	int ok;

	if (name == NULL)
		return SSL_TLSEXT_ERR_OK; /* the context's default leaf */
	if ((leaf = ca_cache_get(srv->cache, name, 0)) == NULL) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	ok = SSL_use_certificate(ssl, leaf) == 1 &&
	     SSL_use_PrivateKey(ssl, ca_leaf_key(srv->ca)) == 1;
	X509_free(leaf); /* the SSL holds its own reference */
	return ok ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int
alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
        unsigned int inlen, void *arg)
{
	static const unsigned char http11[] = "\x08http/1.1";
	unsigned char *sel;

	if (SSL_select_next_proto(&sel, outlen, http11, sizeof http11 - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *
server_ctx(struct tls_server *srv, const char *default_ip)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	X509 *leaf;

	assert_non_null(ctx);
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_tlsext_servername_callback(ctx, sni_cb);
	SSL_CTX_set_tlsext_servername_arg(ctx, srv);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, NULL);
	/* Without SNI (an address) the server falls back to this leaf. */
	leaf = ca_cache_get(srv->cache, default_ip, 1);
	assert_non_null(leaf);
	assert_int_equal(SSL_CTX_use_certificate(ctx, leaf), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, ca_leaf_key(srv->ca)), 1);
	X509_free(leaf);
	return ctx;
}

static SSL_CTX *
client_ctx(X509 *trusted)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	static const unsigned char http11[] = "\x08http/1.1";

	assert_non_null(ctx);
	/* Only the one CA: no default paths. */
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), trusted), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	assert_int_equal(SSL_CTX_set_alpn_protos(ctx, http11, sizeof http11 - 1), 0);
	return ctx;
}

/* Drives both ends until each has finished or failed; returns 0 if both finished. */
static int
handshake(SSL *c, SSL *s)
{
	int cdone = 0, sdone = 0, cfail = 0, sfail = 0, r, i;

	for (i = 0; i < 1000 && ((!cdone && !cfail) || (!sdone && !sfail)); i++) {
		if (!cdone && !cfail) {
			if ((r = SSL_do_handshake(c)) == 1)
				cdone = 1;
			else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ &&
			         SSL_get_error(c, r) != SSL_ERROR_WANT_WRITE)
				cfail = 1;
		}
		if (!sdone && !sfail) {
			if ((r = SSL_do_handshake(s)) == 1)
				sdone = 1;
			else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ &&
			         SSL_get_error(s, r) != SSL_ERROR_WANT_WRITE)
				sfail = 1;
		}
		/* After a failure the other side may wait for bytes that never come. */
		if ((cfail || sfail) && i > 50)
			break;
	}
	ERR_clear_error();
	return cdone && sdone ? 0 : -1;
}

/*
 * One handshake: SNI sni (NULL: none), the client requiring name (or the
 * address when is_ip). Returns 0 on success; *verr gets the client's
 * verify result.
 */
static int
tls_run(struct tls_server *srv, X509 *trusted, const char *sni, const char *name, int is_ip,
        long *verr)
{
	SSL_CTX *sctx = server_ctx(srv, "127.0.0.1"), *cctx = client_ctx(trusted);
	SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
	const unsigned char *proto;
	unsigned int plen;
	char buf[8];
	int fds[2], rv;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
	SSL_set_fd(c, fds[0]);
	SSL_set_fd(s, fds[1]);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	if (sni != NULL)
		assert_int_equal(SSL_set_tlsext_host_name(c, sni), 1);
	if (is_ip)
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), name), 1);
	else
		assert_int_equal(SSL_set1_host(c, name), 1);

	rv = handshake(c, s);
	*verr = SSL_get_verify_result(c);
	if (rv == 0) {
		SSL_get0_alpn_selected(c, &proto, &plen);
		assert_int_equal(plen, 8);
		assert_memory_equal(proto, "http/1.1", 8);
		SSL_get0_alpn_selected(s, &proto, &plen);
		assert_int_equal(plen, 8);
		assert_memory_equal(proto, "http/1.1", 8);
		/* Application data flows both ways. */
		assert_int_equal(SSL_write(c, "ping", 4), 4);
		assert_int_equal(SSL_read(s, buf, sizeof buf), 4);
		assert_memory_equal(buf, "ping", 4);
	}
	SSL_free(c);
	SSL_free(s);
	close(fds[0]);
	close(fds[1]);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	return rv;
}

static void
test_tls_handshake(void **state)
{
	struct tls_server srv;
	struct ca_cache_stats st;
	struct ca *other = new_ca(3600, NULL, 0);
	long verr;

	srv.ca = new_ca(3600, NULL, 0);
	srv.cache = ca_cache_new(srv.ca, 0);

	assert_int_equal(
	    tls_run(&srv, ca_cert(srv.ca), "api.example.com", "api.example.com", 0, &verr), 0);
	assert_int_equal(verr, X509_V_OK);
	/* Same name again: the cached leaf, no second mint. */
	assert_int_equal(
	    tls_run(&srv, ca_cert(srv.ca), "api.example.com", "api.example.com", 0, &verr), 0);
	ca_cache_stats(srv.cache, &st);
	assert_int_equal(st.mints, 2); /* 127.0.0.1 (default) + api.example.com */

	/* The leaf names the SNI host; a client expecting another name refuses it. */
	assert_int_equal(
	    tls_run(&srv, ca_cert(srv.ca), "api.example.com", "other.example.com", 0, &verr), -1);
	assert_int_equal(verr, X509_V_ERR_HOSTNAME_MISMATCH);

	/* A client that does not trust our CA refuses the leaf. */
	assert_int_equal(
	    tls_run(&srv, ca_cert(other), "api.example.com", "api.example.com", 0, &verr), -1);
	assert_true(verr == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
	            verr == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE);

	/* No SNI, an address: the default leaf carries IP:127.0.0.1. */
	assert_int_equal(tls_run(&srv, ca_cert(srv.ca), NULL, "127.0.0.1", 1, &verr), 0);
	assert_int_equal(verr, X509_V_OK);
	assert_int_equal(tls_run(&srv, ca_cert(srv.ca), NULL, "127.0.0.2", 1, &verr), -1);
	assert_int_equal(verr, X509_V_ERR_IP_ADDRESS_MISMATCH);

	ca_cache_free(srv.cache);
	ca_free(srv.ca);
	ca_free(other);
}

/* Under name constraints the handshake works for a permitted name only. */
static void
test_tls_name_constraints(void **state)
{
	static const char *const names[] = {"*.allowed.test", "127.0.0.1"};
	struct tls_server srv;
	long verr;

	srv.ca = new_ca(3600, names, EG_NELEM(names));
	srv.cache = ca_cache_new(srv.ca, 0);
	assert_int_equal(
	    tls_run(&srv, ca_cert(srv.ca), "www.allowed.test", "www.allowed.test", 0, &verr), 0);
	assert_int_equal(
	    tls_run(&srv, ca_cert(srv.ca), "www.denied.test", "www.denied.test", 0, &verr), -1);
	assert_int_equal(verr, X509_V_ERR_PERMITTED_VIOLATION);
	ca_cache_free(srv.cache);
	ca_free(srv.ca);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_leaf_dns),
	    cmocka_unit_test(test_leaf_case_folded),
	    cmocka_unit_test(test_leaf_ip),
	    cmocka_unit_test(test_long_name),
	    cmocka_unit_test(test_bad_hosts),
	    cmocka_unit_test(test_validity),
	    cmocka_unit_test(test_name_constraints),
	    cmocka_unit_test(test_tls_handshake),
	    cmocka_unit_test(test_tls_name_constraints),
	};

	log_init("test_ca_mint", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
