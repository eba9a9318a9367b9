/*
 * Unit tests for ca/ca.c: the per-run CA's extensions, criticality, key,
 * serial, subject and lifetime; name constraints present only when asked
 * and holding exactly the subtrees asked for; every refusal of ca_load
 * (loose key mode, non-CA, mismatched key, expired, encrypted key) and its
 * successes (EC, RSA, the openssl command docs/ca.md gives); and the two
 * exports, which hold the certificate and never a private key.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <dirent.h>
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
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "ca.h"

static char tmpdir[] = "/tmp/test_ca_ca.XXXXXX";
static char errbuf[256];

static char *
path_in(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static char *
file_read(const char *path, size_t *lenp)
{
	FILE *fp = fopen(path, "r");
	struct buf b;
	char chunk[4096];
	size_t n;

	assert_non_null(fp);
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		buf_add(&b, chunk, n);
	fclose(fp);
	buf_cstr(&b);
	if (lenp != NULL)
		*lenp = b.len;
	return buf_release(&b);
}

static void
file_write(const char *path, const char *data, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(data, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static struct ca *
new_ca(long lifetime, const char *const *names, size_t n)
{
	struct ca *ca = ca_new_ephemeral(lifetime, names, n, errbuf, sizeof errbuf);

	if (ca == NULL)
		fail_msg("ca_new_ephemeral: %s", errbuf);
	return ca;
}

static time_t
asn1_time(const ASN1_TIME *t)
{
	struct tm tm;

	assert_int_equal(ASN1_TIME_to_tm(t, &tm), 1);
	return timegm(&tm);
}

static X509_EXTENSION *
ext_get(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	if (i < 0)
		return NULL;
	assert_int_equal(X509_get_ext_by_NID(x, nid, i), -1); /* only one */
	return X509_get_ext(x, i);
}

/* Verifies x as a CA trusted for itself: a self-signed root. */
static int
verify_self(X509 *x)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int rv;

	X509_STORE_add_cert(store, x);
	X509_STORE_CTX_init(ctx, store, x, NULL);
	rv = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return rv;
}

static void
test_extensions(void **state)
{
	struct ca *ca = new_ca(CA_LIFETIME_DEFAULT, NULL, 0);
	X509 *x = ca_cert(ca);
	BASIC_CONSTRAINTS *bc;
	AUTHORITY_KEYID *akid;
	const ASN1_OCTET_STRING *ski;
	X509_EXTENSION *ext;
	char group[64];
	size_t glen;

	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	ext = ext_get(x, NID_basic_constraints);
	assert_non_null(ext);
	assert_int_equal(X509_EXTENSION_get_critical(ext), 1);
	bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
	assert_non_null(bc);
	assert_true(bc->ca);
	assert_non_null(bc->pathlen);
	assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
	BASIC_CONSTRAINTS_free(bc);

	ext = ext_get(x, NID_key_usage);
	assert_non_null(ext);
	assert_int_equal(X509_EXTENSION_get_critical(ext), 1);
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);

	ext = ext_get(x, NID_subject_key_identifier);
	assert_non_null(ext);
	assert_int_equal(X509_EXTENSION_get_critical(ext), 0);
	ski = X509_get0_subject_key_id(x);
	assert_non_null(ski);
	assert_int_equal(ASN1_STRING_length(ski), 20);
	ext = ext_get(x, NID_authority_key_identifier);
	assert_non_null(ext);
	assert_int_equal(X509_EXTENSION_get_critical(ext), 0);
	akid = X509_get_ext_d2i(x, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(akid);
	assert_non_null(akid->keyid);
	assert_int_equal(ASN1_OCTET_STRING_cmp(akid->keyid, ski), 0);
	AUTHORITY_KEYID_free(akid);

	assert_null(ext_get(x, NID_name_constraints));
	assert_int_equal(X509_get_ext_count(x), 4);

	/* ECDSA P-256 signed with SHA-256, self-signed and valid as a root. */
	assert_int_equal(EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_group_name(X509_get0_pubkey(x), group, sizeof group, &glen),
	                 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(x)), 1);
	assert_int_equal(X509_check_issued(x, x), X509_V_OK);
	assert_int_equal(verify_self(x), X509_V_OK);
	assert_int_equal(X509_check_ca(x), 1);

	/* The leaf key is a distinct P-256 key. */
	assert_int_equal(EVP_PKEY_get_base_id(ca_leaf_key(ca)), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_eq(ca_leaf_key(ca), X509_get0_pubkey(x)), 0);
	ca_free(ca);
}

static void
test_subject_serial(void **state)
{
	struct ca *a = new_ca(3600, NULL, 0), *b = new_ca(3600, NULL, 0);
	char cn_a[128], cn_b[128], org[128];
	const ASN1_INTEGER *sa, *sb;
	BIGNUM *bn;

	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(ca_cert(a)), NID_commonName,
	                                      cn_a, sizeof cn_a) > 0);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(ca_cert(b)), NID_commonName,
	                                      cn_b, sizeof cn_b) > 0);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(ca_cert(a)),
	                                      NID_organizationName, org, sizeof org) > 0);
	assert_string_equal(org, CA_ORG);
	assert_true(strncmp(cn_a, "egressd run CA ", 15) == 0);
	assert_true(strlen(cn_a) <= CA_CN_MAXLEN);
	assert_string_not_equal(cn_a, cn_b); /* the random id names the run */
	assert_int_equal(
	    X509_NAME_cmp(X509_get_subject_name(ca_cert(a)), X509_get_issuer_name(ca_cert(a))), 0);

	sa = X509_get0_serialNumber(ca_cert(a));
	sb = X509_get0_serialNumber(ca_cert(b));
	assert_int_equal(ASN1_STRING_type(sa), V_ASN1_INTEGER); /* not V_ASN1_NEG_INTEGER */
	assert_int_not_equal(ASN1_INTEGER_cmp(sa, sb), 0);
	bn = ASN1_INTEGER_to_BN(sa, NULL);
	assert_false(BN_is_zero(bn));
	assert_false(BN_is_negative(bn));
	assert_true(BN_num_bits(bn) <= 128 && BN_num_bits(bn) > 96);
	BN_free(bn);
	ca_free(a);
	ca_free(b);
}

static void
test_lifetime(void **state)
{
	static const long bad[] = {0, -1, CA_LIFETIME_MAX + 1};
	struct ca *ca;
	time_t now = time(NULL), nb, na;
	size_t i;

	ca = new_ca(86400, NULL, 0);
	nb = asn1_time(X509_get0_notBefore(ca_cert(ca)));
	na = asn1_time(X509_get0_notAfter(ca_cert(ca)));
	assert_true(nb >= now - CA_BACKDATE - 5 && nb <= now - CA_BACKDATE + 5);
	assert_true(na >= now + 86400 - 5 && na <= now + 86400 + 5);
	ca_free(ca);

	ca = new_ca(CA_LIFETIME_DEFAULT, NULL, 0);
	na = asn1_time(X509_get0_notAfter(ca_cert(ca)));
	assert_true(na >= now + 7 * 86400 - 5 && na <= now + 7 * 86400 + 5);
	ca_free(ca);

	for (i = 0; i < EG_NELEM(bad); i++) {
		errbuf[0] = '\0';
		assert_null(ca_new_ephemeral(bad[i], NULL, 0, errbuf, sizeof errbuf));
		assert_non_null(strstr(errbuf, "lifetime"));
	}
}

/* Renders a subtree list as "DNS:a IP:10.0.0.0/255.0.0.0 ..." for one-line comparisons. */
static void
subtrees_text(STACK_OF(GENERAL_SUBTREE) * sk, struct buf *out)
{
	GENERAL_SUBTREE *st;
	const unsigned char *p;
	char a[64], m[64];
	int i, type, len;
	void *v;

	buf_reset(out);
	buf_cstr(out);
	for (i = 0; i < sk_GENERAL_SUBTREE_num(sk); i++) {
		st = sk_GENERAL_SUBTREE_value(sk, i);
		assert_null(st->minimum);
		assert_null(st->maximum);
		v = GENERAL_NAME_get0_value(st->base, &type);
		p = ASN1_STRING_get0_data(v);
		len = ASN1_STRING_length(v);
		if (out->len > 0)
			buf_addc(out, ' ');
		if (type == GEN_DNS) {
			buf_printf(out, "DNS:%.*s", len, (const char *)p);
		} else {
			assert_int_equal(type, GEN_IPADD);
			assert_true(len == 8 || len == 32);
			inet_ntop(len == 8 ? AF_INET : AF_INET6, p, a, sizeof a);
			inet_ntop(len == 8 ? AF_INET : AF_INET6, p + len / 2, m, sizeof m);
			buf_printf(out, "IP:%s/%s", a, m);
		}
	}
}

static void
nc_expect(const char *const *names, size_t n, const char *permitted, const char *excluded)
{
	struct ca *ca = new_ca(3600, names, n);
	NAME_CONSTRAINTS *nc;
	X509_EXTENSION *ext;
	struct buf b;

	ext = ext_get(ca_cert(ca), NID_name_constraints);
	assert_non_null(ext);
	assert_int_equal(X509_EXTENSION_get_critical(ext), 1);
	nc = X509_get_ext_d2i(ca_cert(ca), NID_name_constraints, NULL, NULL);
	assert_non_null(nc);
	buf_init(&b);
	subtrees_text(nc->permittedSubtrees, &b);
	assert_string_equal(buf_cstr(&b), permitted);
	subtrees_text(nc->excludedSubtrees, &b);
	assert_string_equal(buf_cstr(&b), excluded);
	buf_free(&b);
	NAME_CONSTRAINTS_free(nc);
	assert_int_equal(verify_self(ca_cert(ca)), X509_V_OK);
	ca_free(ca);
}

static void
test_name_constraints(void **state)
{
	static const char *const names[] = {"*.x.com", "y.org", "API.Example.COM"};
	static const char *const mixed[] = {"a.test", "10.0.0.0/8", "2001:db8::/32", "192.0.2.7",
	                                    "[::1]"};
	static const char *const addrs[] = {"198.18.0.0/15"};

	nc_expect(names, 3, "DNS:.x.com DNS:y.org DNS:api.example.com",
	          "IP:0.0.0.0/0.0.0.0 IP:::/::");
	nc_expect(mixed, 5,
	          "DNS:a.test IP:10.0.0.0/255.0.0.0 IP:2001:db8::/ffff:ffff:: "
	          "IP:192.0.2.7/255.255.255.255 IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	          "");
	nc_expect(addrs, 1, "IP:198.18.0.0/255.254.0.0 DNS:invalid", "");
	/* An empty list that asks for constraints permits nothing real. */
	nc_expect(names, 0, "DNS:invalid", "IP:0.0.0.0/0.0.0.0 IP:::/::");
}

static void
test_name_constraints_bad(void **state)
{
	static const struct {
		const char *name;
		const char *err;
	} bad[] = {
	    {"*", "'*'"},
	    {"*.", "empty"},
	    {"", "empty"},
	    {"a.*.com", "'*'"},
	    {"*x.com", "'*'"},
	    {"x..com", "empty label"},
	    {"x.com.", "empty label"},
	    {"bad char.com", "invalid character"},
	    {"10.0.0.0/33", "prefix length"},
	    {"10.0.0.0/", "prefix length"},
	    {"::/129", "prefix length"},
	    {"10.0.0.0/8x", "prefix length"},
	};
	const char *one[1];
	size_t i;

	for (i = 0; i < EG_NELEM(bad); i++) {
		one[0] = bad[i].name;
		errbuf[0] = '\0';
		assert_null(ca_new_ephemeral(3600, one, 1, errbuf, sizeof errbuf));
		if (strstr(errbuf, bad[i].err) == NULL)
			fail_msg("\"%s\": error \"%s\" lacks \"%s\"", bad[i].name, errbuf,
			         bad[i].err);
	}
}

/* Options for a test certificate written to tmpdir. */
struct mk {
	int rsa;
	int ca;
	long nb; /* seconds from now */
	long na;
	mode_t key_mode;
	int other_key; /* write a key that does not match */
	int encrypt;
};

static void
mk_pair(const struct mk *o, const char *cert_path, const char *key_path)
{
	EVP_PKEY *key, *other = NULL;
	X509 *x = X509_new();
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	FILE *fp;

	key = o->rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
	assert_non_null(key);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 42);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	                           (const unsigned char *)"test dev CA", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_time_adj_ex(X509_getm_notBefore(x), 0, o->nb, NULL);
	X509_time_adj_ex(X509_getm_notAfter(x), 0, o->na, NULL);
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
	                          o->ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);

	fp = fopen(cert_path, "w");
	assert_non_null(fp);
	PEM_write_X509(fp, x);
	fclose(fp);
	if (o->other_key)
		other = EVP_EC_gen("P-256");
	fp = fopen(key_path, "w");
	assert_non_null(fp);
	if (o->encrypt)
		PEM_write_PrivateKey(fp, key, EVP_aes_256_cbc(), (unsigned char *)"secret", 6, NULL,
		                     NULL);
	else
		PEM_write_PrivateKey(fp, other != NULL ? other : key, NULL, NULL, 0, NULL, NULL);
	fclose(fp);
	assert_int_equal(chmod(key_path, o->key_mode), 0);
	EVP_PKEY_free(other);
	EVP_PKEY_free(key);
	X509_free(x);
}

/* The loaded CA signs a leaf that verifies against its certificate. */
static void
check_loaded(struct ca *ca)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509 *leaf;

	assert_int_equal(ca_mint(ca, "dev.example.com", 0, &leaf), 0);
	X509_STORE_add_cert(store, ca_cert(ca));
	X509_STORE_CTX_init(ctx, store, leaf, NULL);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "dev.example.com", 0);
	if (X509_verify_cert(ctx) != 1)
		fail_msg("verify: %s",
		         X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(leaf);
}

static void
test_load(void **state)
{
	static const struct {
		struct mk o;
		const char *err; /* NULL: loads */
	} cases[] = {
	    {{0, 1, -60, 86400, 0600, 0, 0}, NULL},
	    {{1, 1, -60, 86400, 0600, 0, 0}, NULL},
	    {{0, 1, -60, 86400, 0400, 0, 0}, NULL},
	    {{0, 1, -60, 86400, 0640, 0, 0}, "chmod 600"},
	    {{0, 1, -60, 86400, 0620, 0, 0}, "chmod 600"},
	    {{0, 1, -60, 86400, 0604, 0, 0}, "chmod 600"},
	    {{0, 1, -60, 86400, 0602, 0, 0}, "chmod 600"},
	    {{0, 1, -60, 86400, 0644, 0, 0}, "group or others"},
	    {{0, 0, -60, 86400, 0600, 0, 0}, "not a CA"},
	    {{0, 1, -60, 86400, 0600, 1, 0}, "does not match"},
	    {{0, 1, -7200, -3600, 0600, 0, 0}, "expired"},
	    {{0, 1, 3600, 7200, 0600, 0, 0}, "not yet valid"},
	    {{0, 1, -60, 86400, 0600, 0, 1}, "encrypted"},
	};
	char *cert = path_in("ca.pem"), *key = path_in("ca.key");
	struct ca *ca;
	size_t i;

	for (i = 0; i < EG_NELEM(cases); i++) {
		mk_pair(&cases[i].o, cert, key);
		errbuf[0] = '\0';
		ca = ca_load(cert, key, errbuf, sizeof errbuf);
		if (cases[i].err == NULL) {
			if (ca == NULL)
				fail_msg("case %zu: %s", i, errbuf);
			check_loaded(ca);
			ca_free(ca);
		} else {
			assert_null(ca);
			if (strstr(errbuf, cases[i].err) == NULL)
				fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, errbuf,
				         cases[i].err);
		}
		unlink(cert);
		unlink(key);
	}

	assert_null(ca_load(cert, key, errbuf, sizeof errbuf));
	assert_non_null(strstr(errbuf, "No such file"));
	/* A directory is not a key file; garbage is not a key. */
	assert_null(ca_load(cert, tmpdir, errbuf, sizeof errbuf));
	file_write(key, "not a key\n", 0600);
	assert_null(ca_load(cert, key, errbuf, sizeof errbuf));
	assert_non_null(strstr(errbuf, "PEM private key"));
	unlink(key);
	free(cert);
	free(key);
}

/* The openssl commands docs/ca.md gives make a CA that loads. */
static void
test_load_openssl_cli(void **state)
{
	char *cert = path_in("dev-ca.pem"), *key = path_in("dev-ca.key"), *cmd;
	struct ca *ca;

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		skip();
	cmd = xasprintf("cd %s && (umask 077 && openssl ecparam -name prime256v1 -genkey -noout "
	                "-out dev-ca.key) && openssl req -x509 -new -key dev-ca.key -sha256 "
	                "-days 825 -subj '/O=opencode-sandbox egressd/CN=egressd dev CA' "
	                "-addext 'basicConstraints=critical,CA:TRUE,pathlen:0' "
	                "-addext 'keyUsage=critical,keyCertSign,cRLSign' -out dev-ca.pem "
	                ">/dev/null 2>&1",
	                tmpdir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	ca = ca_load(cert, key, errbuf, sizeof errbuf);
	if (ca == NULL)
		fail_msg("ca_load: %s", errbuf);
	check_loaded(ca);
	ca_free(ca);
	unlink(cert);
	unlink(key);
	free(cert);
	free(key);
}

static int
dir_count(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static char *
cert_pem(X509 *x)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *p, *s;
	long len;

	PEM_write_bio_X509(bio, x);
	len = BIO_get_mem_data(bio, &p);
	s = xstrndup(p, (size_t)len);
	BIO_free(bio);
	return s;
}

static void
test_write_cert(void **state)
{
	struct ca *ca = new_ca(3600, NULL, 0);
	char *path = path_in("ca-out.pem"), *data, *pem = cert_pem(ca_cert(ca));
	struct stat st;
	X509 *x;
	FILE *fp;
	mode_t old = umask(0077);

	assert_int_equal(ca_write_cert(ca, path), 0);
	assert_int_equal(ca_write_cert(ca, path), 0); /* replaces */
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	data = file_read(path, NULL);
	assert_string_equal(data, pem);
	assert_non_null(strstr(data, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(data, "PRIVATE KEY"));
	assert_null(strstr(data, "KEY-----"));
	fp = fopen(path, "r");
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(x);
	assert_int_equal(X509_cmp(x, ca_cert(ca)), 0);
	X509_free(x);
	assert_int_equal(dir_count(tmpdir), 1); /* no temporary left behind */
	free(data);
	unlink(path);
	free(path);

	path = xasprintf("%s/missing/ca.pem", tmpdir);
	assert_int_equal(ca_write_cert(ca, path), -1);
	free(path);
	assert_int_equal(dir_count(tmpdir), 0);
	free(pem);
	ca_free(ca);
}

static void
test_write_bundle(void **state)
{
	static const char *const systems[] = {"SYSTEM CERTS\n", "NO NEWLINE AT END", ""};
	struct ca *ca = new_ca(3600, NULL, 0);
	char *sys = path_in("system.crt"), *out = path_in("bundle.crt"), *data, *want;
	char *pem = cert_pem(ca_cert(ca));
	struct stat st;
	size_t i;

	for (i = 0; i < EG_NELEM(systems); i++) {
		file_write(sys, systems[i], 0644);
		assert_int_equal(ca_write_bundle(ca, out, sys), 0);
		data = file_read(out, NULL);
		want = xasprintf(
		    "%s%s%s", systems[i],
		    *systems[i] != '\0' && systems[i][strlen(systems[i]) - 1] != '\n' ? "\n" : "",
		    pem);
		assert_string_equal(data, want);
		assert_null(strstr(data, "PRIVATE KEY"));
		assert_int_equal(stat(out, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0644);
		free(data);
		free(want);
	}
	unlink(sys);
	unlink(out);

	/* No system store: no bundle at all, rather than one that trusts only us. */
	assert_int_equal(ca_write_bundle(ca, out, sys), -1);
	assert_int_equal(access(out, F_OK), -1);
	assert_int_equal(dir_count(tmpdir), 0);

	if (access(CA_SYSTEM_BUNDLE, R_OK) == 0) {
		assert_int_equal(ca_write_bundle(ca, out, NULL), 0);
		data = file_read(out, &i);
		assert_true(i > strlen(pem));
		assert_string_equal(data + i - strlen(pem), pem);
		free(data);
		unlink(out);
	}
	free(sys);
	free(out);
	free(pem);
	ca_free(ca);
}

static int
setup(void **state)
{
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	return rmdir(tmpdir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extensions),
	    cmocka_unit_test(test_subject_serial),
	    cmocka_unit_test(test_lifetime),
	    cmocka_unit_test(test_name_constraints),
	    cmocka_unit_test(test_name_constraints_bad),
	    cmocka_unit_test(test_load),
	    cmocka_unit_test(test_load_openssl_cli),
	    cmocka_unit_test(test_write_cert),
	    cmocka_unit_test(test_write_bundle),
	};

	log_init("test_ca_ca", LOG_LVL_ERR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
