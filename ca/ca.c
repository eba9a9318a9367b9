/*
 * The CA itself: a per-run ECDSA P-256 authority made in memory, or a
 * persistent one loaded from a developer's files, plus the export of its
 * certificate (alone, or appended to the system store) for clients to
 * trust. The CA key is held only as an EVP_PKEY in this process: nothing
 * here can write it, and EVP_PKEY_free clears OpenSSL's key material when
 * it is released, so there is no hand-made zeroising to get wrong.
 */
/* For the EC_KEY calls of ca_leaf_keygen: deprecated, not removed, in OpenSSL 3. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define CA_INTERNAL
#include "ca.h"

#define CA_CN_PREFIX   "egressd run CA"
#define CA_HOST_MAXLEN 23 /* what fits beside the prefix, time and id in 64 */

/*
 * Formats an error and appends OpenSSL's most recent reason, then empties
 * the error queue: a stale entry left there would later be mistaken by
 * SSL_get_error for a failure of an unrelated connection.
 */
void
ca_errf(char *err, size_t errlen, const char *fmt, ...)
{
	char msg[256], ossl[256] = "";
	unsigned long e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if ((e = ERR_peek_last_error()) != 0)
		ERR_error_string_n(e, ossl, sizeof ossl);
	ERR_clear_error();
	if (err == NULL || errlen == 0)
		return;
	if (*ossl != '\0')
		snprintf(err, errlen, "%s (%s)", msg, ossl);
	else
		snprintf(err, errlen, "%s", msg);
}

/* A random, positive 128-bit serial (RFC 5280 allows up to 20 octets). */
int
ca_serial_set(X509 *x)
{
	BIGNUM *bn;
	int rv = -1;

	if ((bn = BN_new()) == NULL)
		return -1;
	do {
		if (BN_rand(bn, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
			goto err;
	} while (BN_is_zero(bn));
	if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto err;
	rv = 0;
err:
	BN_free(bn);
	return rv;
}

static int
ca_time_get(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	*out = timegm(&tm);
	return 0;
}

int
ca_ext_add(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext;
	int rv;

	if ((ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value)) == NULL)
		return -1;
	rv = X509_add_ext(x, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return rv;
}

/*
 * Checks a name-constraint DNS entry: the names a leaf may carry, so the
 * same rules as ca_mint_host_check, plus a word on a misplaced '*'.
 */
static const char *
ca_nc_name_check(const char *s)
{
	char canon[CA_HOST_BUFLEN];

	if (strchr(s, '*') != NULL)
		return "'*' is allowed only as a leading \"*.\"";
	return ca_mint_host_check(s, 0, canon);
}

static int
ca_nc_push(STACK_OF(GENERAL_SUBTREE) * *sk, GENERAL_NAME *gn)
{
	GENERAL_SUBTREE *st;

	if (*sk == NULL && (*sk = sk_GENERAL_SUBTREE_new_null()) == NULL)
		goto err;
	if ((st = GENERAL_SUBTREE_new()) == NULL)
		goto err;
	GENERAL_NAME_free(st->base);
	st->base = gn;
	if (sk_GENERAL_SUBTREE_push(*sk, st) == 0) {
		GENERAL_SUBTREE_free(st);
		return -1;
	}
	return 0;
err:
	GENERAL_NAME_free(gn);
	return -1;
}

static int
ca_nc_push_dns(STACK_OF(GENERAL_SUBTREE) * *sk, const char *name)
{
	GENERAL_NAME *gn;
	ASN1_IA5STRING *s;
	size_t i, len = strlen(name);
	char buf[256];

	for (i = 0; i < len && i < sizeof buf - 1; i++)
		buf[i] = (name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i];
	buf[i] = '\0';
	if ((gn = GENERAL_NAME_new()) == NULL)
		return -1;
	if ((s = ASN1_IA5STRING_new()) == NULL || ASN1_STRING_set(s, buf, (int)i) != 1) {
		ASN1_IA5STRING_free(s);
		GENERAL_NAME_free(gn);
		return -1;
	}
	GENERAL_NAME_set0_value(gn, GEN_DNS, s);
	return ca_nc_push(sk, gn);
}

/* Pushes an iPAddress subtree: the address then the mask, 8 or 32 bytes. */
static int
ca_nc_push_ip(STACK_OF(GENERAL_SUBTREE) * *sk, const uint8_t *addr, int alen, int plen)
{
	GENERAL_NAME *gn;
	ASN1_OCTET_STRING *s;
	uint8_t b[32];
	int i;

	memset(b, 0, sizeof b);
	for (i = 0; i < alen; i++) {
		if (plen >= 8 * (i + 1))
			b[alen + i] = 0xff;
		else if (plen > 8 * i)
			b[alen + i] = (uint8_t)(0xff << (8 - (plen - 8 * i)));
		b[i] = addr[i] & b[alen + i];
	}
	if ((gn = GENERAL_NAME_new()) == NULL)
		return -1;
	if ((s = ASN1_OCTET_STRING_new()) == NULL || ASN1_OCTET_STRING_set(s, b, 2 * alen) != 1) {
		ASN1_OCTET_STRING_free(s);
		GENERAL_NAME_free(gn);
		return -1;
	}
	GENERAL_NAME_set0_value(gn, GEN_IPADD, s);
	return ca_nc_push(sk, gn);
}

/*
 * Parses "ADDR" or "ADDR/LEN" (v4 or v6, v6 optionally in brackets).
 * Returns 1 for an address entry, 0 for anything else, -1 for an address
 * with a bad prefix length.
 */
static int
ca_nc_addr_parse(const char *s, uint8_t *addr, int *alen, int *plen)
{
	char buf[64], *slash, *end, *p = buf;
	long l;

	if (str_copy(buf, sizeof buf, s) >= sizeof buf)
		return 0;
	if ((slash = strchr(buf, '/')) != NULL)
		*slash++ = '\0';
	if (*p == '[' && p[strlen(p) - 1] == ']') {
		p[strlen(p) - 1] = '\0';
		p++;
	}
	if (inet_pton(AF_INET, p, addr) == 1)
		*alen = 4;
	else if (inet_pton(AF_INET6, p, addr) == 1)
		*alen = 16;
	else
		return 0;
	*plen = 8 * *alen;
	if (slash == NULL)
		return 1;
	errno = 0;
	l = strtol(slash, &end, 10);
	if (*slash < '0' || *slash > '9' || *end != '\0' || errno != 0 || l > *plen)
		return -1;
	*plen = (int)l;
	return 1;
}

/*
 * Builds the nameConstraints value from allowlist entries. An X.509 name
 * type with no subtree at all is unconstrained (RFC 5280 4.2.1.10), so a
 * list without address entries excludes every IPv4 and IPv6 address, and a
 * list without names permits only the reserved "invalid" domain: either
 * way a leaked key cannot reach past the list through the other type.
 */
static NAME_CONSTRAINTS *
ca_nc_build(const char *const *names, size_t n, char *err, size_t errlen)
{
	static const uint8_t zero[16];
	NAME_CONSTRAINTS *nc;
	const char *why, *name;
	uint8_t addr[16];
	int alen, plen, r, ndns = 0, nip = 0;
	size_t i;

	if ((nc = NAME_CONSTRAINTS_new()) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		name = names[i];
		if ((r = ca_nc_addr_parse(name, addr, &alen, &plen)) < 0) {
			ca_errf(err, errlen, "name constraint \"%s\": bad prefix length", name);
			goto err;
		}
		if (r == 1) {
			if (ca_nc_push_ip(&nc->permittedSubtrees, addr, alen, plen) != 0)
				goto fail;
			nip++;
			continue;
		}
		if (strncmp(name, "*.", 2) == 0)
			name++; /* "*.x.com" is the subtree ".x.com": subdomains only */
		if ((why = ca_nc_name_check(*name == '.' ? name + 1 : name)) != NULL) {
			ca_errf(err, errlen, "name constraint \"%s\": %s", names[i], why);
			goto err;
		}
		if (ca_nc_push_dns(&nc->permittedSubtrees, name) != 0)
			goto fail;
		ndns++;
	}
	if (ndns == 0 && ca_nc_push_dns(&nc->permittedSubtrees, "invalid") != 0)
		goto fail;
	if (nip == 0 && (ca_nc_push_ip(&nc->excludedSubtrees, zero, 4, 0) != 0 ||
	                 ca_nc_push_ip(&nc->excludedSubtrees, zero, 16, 0) != 0))
		goto fail;
	return nc;
fail:
	ca_errf(err, errlen, "cannot build name constraints");
err:
	NAME_CONSTRAINTS_free(nc);
	return NULL;
}

/* "egressd run CA <host> <UTC time> <id>", kept within the 64 a CN may hold. */
static int
ca_subject_set(X509 *x, time_t now)
{
	X509_NAME *nm = X509_get_subject_name(x);
	char host[256] = "localhost", when[20], cn[CA_CN_MAXLEN + 1], *p;
	unsigned char id[4];
	struct tm tm;

	if (gethostname(host, sizeof host) != 0 || *host == '\0')
		str_copy(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	/* Whatever the system calls itself, the CN gets plain ASCII. */
	for (p = host; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			*p = '-';
	}
	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
	if (RAND_bytes(id, sizeof id) != 1)
		return -1;
	snprintf(cn, sizeof cn, "%s %.*s %s %02x%02x%02x%02x", CA_CN_PREFIX, CA_HOST_MAXLEN, host,
	         when, id[0], id[1], id[2], id[3]);
	if (X509_NAME_add_entry_by_txt(nm, "O", MBSTRING_UTF8, (const unsigned char *)CA_ORG, -1,
	                               -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
	                               0) != 1)
		return -1;
	return X509_set_issuer_name(x, nm) == 1 ? 0 : -1;
}

/* Makes and self-signs the CA certificate for ca->key. */
static X509 *
ca_cert_build(struct ca *ca, long lifetime, NAME_CONSTRAINTS *nc)
{
	X509 *x;
	X509V3_CTX ctx;
	time_t now = time(NULL);

	if ((x = X509_new()) == NULL)
		return NULL;
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_serial_set(x) != 0 ||
	    ca_subject_set(x, now) != 0 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), now - CA_BACKDATE) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), now + lifetime) == NULL ||
	    X509_set_pubkey(x, ca->key) != 1)
		goto err;
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	/* The SKI goes first: the AKI of a self-signed certificate copies it. */
	if (ca_ext_add(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") != 0 ||
	    ca_ext_add(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") != 0 ||
	    ca_ext_add(x, &ctx, NID_subject_key_identifier, "hash") != 0 ||
	    ca_ext_add(x, &ctx, NID_authority_key_identifier, "keyid:always") != 0)
		goto err;
	if (nc != NULL &&
	    X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) != 1)
		goto err;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		goto err;
	return x;
err:
	X509_free(x);
	return NULL;
}

/*
 * The P-256 key every leaf shares, made as a key of the legacy type (an
 * EC_KEY inside the EVP_PKEY): OpenSSL 3.0 writes such a key into a new
 * certificate with its method table and keeps the key itself as the
 * certificate's public key, where a provider key goes through an encoder
 * and a decoder on every leaf (0.4 ms against 0.01 ms). The key is as
 * random and as private as any other: generated in memory from the same
 * generator, never exported. The EC_KEY calls are deprecated in OpenSSL 3
 * but kept there; the deprecation warnings are silenced for this file.
 */
static EVP_PKEY *
ca_leaf_keygen(void)
{
	EC_KEY *ec;
	EVP_PKEY *pk;

	if ((ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1)) == NULL)
		return NULL;
	if (EC_KEY_generate_key(ec) != 1 || (pk = EVP_PKEY_new()) == NULL) {
		EC_KEY_free(ec);
		return NULL;
	}
	if (EVP_PKEY_assign_EC_KEY(pk, ec) != 1) {
		EVP_PKEY_free(pk);
		EC_KEY_free(ec);
		return NULL;
	}
	return pk;
}

/* Reads the validity into ca, makes the leaf key and the leaf template. */
static int
ca_finish(struct ca *ca, char *err, size_t errlen)
{
	if (ca_time_get(X509_get0_notBefore(ca->cert), &ca->not_before) != 0 ||
	    ca_time_get(X509_get0_notAfter(ca->cert), &ca->not_after) != 0) {
		ca_errf(err, errlen, "cannot read the CA validity");
		return -1;
	}
	if ((ca->leaf_key = ca_leaf_keygen()) == NULL) {
		ca_errf(err, errlen, "cannot generate the leaf key");
		return -1;
	}
	ca->leaf_lifetime = CA_LEAF_LIFETIME_DEFAULT;
	return ca_mint_prepare(ca, err, errlen);
}

struct ca *
ca_new_ephemeral(long lifetime, const char *const *permitted, size_t n, char *err, size_t errlen)
{
	struct ca *ca;
	NAME_CONSTRAINTS *nc = NULL;

	if (lifetime <= 0 || lifetime > CA_LIFETIME_MAX) {
		ca_errf(err, errlen, "CA lifetime %ld s is out of range (1 s to 10 years)",
		        lifetime);
		return NULL;
	}
	if (permitted != NULL && (nc = ca_nc_build(permitted, n, err, errlen)) == NULL)
		return NULL;
	ca = xcalloc(1, sizeof *ca);
	if ((ca->key = EVP_EC_gen("P-256")) == NULL) {
		ca_errf(err, errlen, "cannot generate the CA key");
		goto err;
	}
	if ((ca->cert = ca_cert_build(ca, lifetime, nc)) == NULL) {
		ca_errf(err, errlen, "cannot build the CA certificate");
		goto err;
	}
	if (ca_finish(ca, err, errlen) != 0)
		goto err;
	NAME_CONSTRAINTS_free(nc);
	return ca;
err:
	NAME_CONSTRAINTS_free(nc);
	ca_free(ca);
	return NULL;
}

/* Refuses encrypted keys instead of letting OpenSSL prompt on a terminal. */
static int
ca_no_passphrase_cb(char *buf, int size, int rwflag, void *arg)
{
	(void)buf, (void)size, (void)rwflag, (void)arg;
	return -1;
}

static EVP_PKEY *
ca_key_read(const char *path, char *err, size_t errlen)
{
	EVP_PKEY *key = NULL;
	struct stat st;
	FILE *fp;
	int fd, type;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		ca_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	/* fstat on the opened fd: no window for the file to be swapped. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		ca_errf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
		ca_errf(
		    err, errlen,
		    "%s: CA key is accessible by group or others (mode %03o); run: chmod 600 %s",
		    path, (unsigned)(st.st_mode & 0777), path);
		close(fd);
		return NULL;
	}
	if ((fp = fdopen(fd, "r")) == NULL) {
		ca_errf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	key = PEM_read_PrivateKey(fp, NULL, ca_no_passphrase_cb, NULL);
	fclose(fp);
	if (key == NULL) {
		ca_errf(err, errlen,
		        "%s: cannot read a PEM private key (encrypted keys are not supported)",
		        path);
		return NULL;
	}
	type = EVP_PKEY_get_base_id(key);
	if (type != EVP_PKEY_EC && type != EVP_PKEY_RSA) {
		ca_errf(err, errlen, "%s: the CA key must be EC or RSA", path);
		EVP_PKEY_free(key);
		return NULL;
	}
	return key;
}

static X509 *
ca_cert_read(const char *path, char *err, size_t errlen)
{
	X509 *x;
	FILE *fp;

	if ((fp = fopen(path, "re")) == NULL) {
		ca_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	x = PEM_read_X509(fp, NULL, ca_no_passphrase_cb, NULL);
	fclose(fp);
	if (x == NULL)
		ca_errf(err, errlen, "%s: cannot read a PEM certificate", path);
	return x;
}

/* Refuses a certificate that cannot serve as our CA. */
static int
ca_cert_check(X509 *x, EVP_PKEY *key, const char *cpath, const char *kpath, char *err,
              size_t errlen)
{
	uint32_t flags = X509_get_extension_flags(x);

	if ((flags & EXFLAG_CA) == 0 || X509_get_version(x) != X509_VERSION_3) {
		ca_errf(err, errlen, "%s: not a CA certificate (needs basicConstraints CA:TRUE)",
		        cpath);
		return -1;
	}
	if ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(x) & KU_KEY_CERT_SIGN) == 0) {
		ca_errf(err, errlen, "%s: key usage does not allow signing certificates", cpath);
		return -1;
	}
	if (X509_check_private_key(x, key) != 1) {
		ca_errf(err, errlen, "%s does not match the certificate %s", kpath, cpath);
		return -1;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		ca_errf(err, errlen, "%s: certificate has expired", cpath);
		return -1;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		ca_errf(err, errlen, "%s: certificate is not yet valid", cpath);
		return -1;
	}
	return 0;
}

struct ca *
ca_load(const char *cert_path, const char *key_path, char *err, size_t errlen)
{
	struct ca *ca = xcalloc(1, sizeof *ca);

	if ((ca->key = ca_key_read(key_path, err, errlen)) == NULL ||
	    (ca->cert = ca_cert_read(cert_path, err, errlen)) == NULL ||
	    ca_cert_check(ca->cert, ca->key, cert_path, key_path, err, errlen) != 0 ||
	    ca_finish(ca, err, errlen) != 0) {
		ca_free(ca);
		return NULL;
	}
	if (X509_check_issued(ca->cert, ca->cert) != X509_V_OK)
		log_warnx("%s: CA certificate is not self-signed; clients must trust its root",
		          cert_path);
	return ca;
}

void
ca_free(struct ca *ca)
{
	if (ca == NULL)
		return;
	ca_mint_release(ca);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	free(ca);
}

X509 *
ca_cert(const struct ca *ca)
{
	return ca->cert;
}

EVP_PKEY *
ca_leaf_key(const struct ca *ca)
{
	return ca->leaf_key;
}

/* How long new leaves last (still cut at the CA's notAfter); 0 or less: the default. */
void
ca_set_leaf_lifetime(struct ca *ca, long secs)
{
	ca->leaf_lifetime = secs > 0 ? secs : CA_LEAF_LIFETIME_DEFAULT;
}

static int
ca_write_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Writes head then the CA certificate in PEM to a temporary file beside
 * path and renames it over path, so a reader sees the old file or the new
 * one, never half of one.
 */
static int
ca_write_atomic(const struct ca *ca, const char *path, const struct buf *head)
{
	BIO *bio;
	char *pem, *tmp;
	long pemlen;
	int fd, rv = -1;

	tmp = xasprintf("%s.XXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		log_warn("%s", tmp);
		free(tmp);
		return -1;
	}
	if ((bio = BIO_new(BIO_s_mem())) == NULL || PEM_write_bio_X509(bio, ca->cert) != 1) {
		ERR_clear_error();
		log_warnx("%s: cannot encode the CA certificate", path);
		goto out;
	}
	pemlen = BIO_get_mem_data(bio, &pem);
	if ((head != NULL && ca_write_all(fd, head->data, head->len) != 0) ||
	    ca_write_all(fd, pem, (size_t)pemlen) != 0 || fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
		log_warn("%s", tmp);
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		log_warn("%s", tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		log_warn("rename %s", path);
		goto out;
	}
	rv = 0;
out:
	BIO_free(bio);
	if (fd != -1)
		close(fd);
	if (rv != 0)
		unlink(tmp);
	free(tmp);
	return rv;
}

/* Writes the CA certificate alone (PEM, mode 0644). */
int
ca_write_cert(const struct ca *ca, const char *path)
{
	return ca_write_atomic(ca, path, NULL);
}

/*
 * Writes the system store followed by the CA certificate: for clients whose
 * variable (SSL_CERT_FILE and the like) replaces the store instead of
 * adding to it. A missing system store is an error, since a bundle holding
 * only our CA would break every connection that is not intercepted.
 */
int
ca_write_bundle(const struct ca *ca, const char *path, const char *system_path)
{
	struct buf head;
	char chunk[8192];
	size_t n;
	FILE *fp;
	int rv;

	if (system_path == NULL)
		system_path = CA_SYSTEM_BUNDLE;
	if ((fp = fopen(system_path, "re")) == NULL) {
		log_warn("%s", system_path);
		return -1;
	}
	buf_init(&head);
	while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		buf_add(&head, chunk, n);
	if (ferror(fp)) {
		log_warn("%s", system_path);
		fclose(fp);
		buf_free(&head);
		return -1;
	}
	fclose(fp);
	if (head.len > 0 && head.data[head.len - 1] != '\n')
		buf_addc(&head, '\n');
	rv = ca_write_atomic(ca, path, &head);
	buf_free(&head);
	return rv;
}
