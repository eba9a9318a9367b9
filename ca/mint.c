/*
 * Leaf minting: a certificate for one host name or address, signed by the
 * CA, carrying the shared leaf key. Everything that is the same in every
 * leaf (issuer, key, key usages, key identifiers) is encoded once into a
 * template when the CA is made, so a new host costs one small decode, its
 * name, serial and validity, and one ECDSA signature.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#define CA_INTERNAL
#include "ca.h"

/*
 * Checks a host and writes its canonical form to out: a lowercase name of
 * LDH (and '_') labels, or an address as inet_ntop prints it, so "::1" and
 * "0:0::1" share one leaf. Names come from SNI and CONNECT lines, so
 * nothing here trusts them: no '*', no empty label, no label over 63.
 */
const char *
ca_mint_host_check(const char *host, int is_ip, char out[CA_HOST_BUFLEN])
{
	unsigned char addr[16];
	size_t len, label = 0, i;
	char c;

	if (host == NULL)
		return "no host";
	if (is_ip) {
		if (inet_pton(AF_INET, host, addr) == 1)
			return inet_ntop(AF_INET, addr, out, CA_HOST_BUFLEN) ? NULL : "bad address";
		if (inet_pton(AF_INET6, host, addr) == 1)
			return inet_ntop(AF_INET6, addr, out, CA_HOST_BUFLEN) ? NULL
			                                                      : "bad address";
		return "not an IPv4 or IPv6 address";
	}
	len = strlen(host);
	if (len == 0 || len > 253)
		return "host name empty or longer than 253 characters";
	for (i = 0; i < len; i++) {
		c = host[i];
		if (c == '.') {
			if (label == 0)
				return "empty label in host name";
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		           c == '_') {
			label++;
		} else if (c >= 'A' && c <= 'Z') {
			c += 'a' - 'A';
			label++;
		} else
			return "invalid character in host name";
		if (label > 63)
			return "label longer than 63 characters in host name";
		out[i] = c;
	}
	if (label == 0)
		return "empty label in host name";
	out[len] = '\0';
	return NULL;
}

/*
 * The AKI names the CA's subject key identifier, or, for a loaded CA that
 * has none, the SHA-1 of its public key (RFC 5280 4.2.1.2, method 1).
 */
static int
ca_mint_ext_aki(X509 *x, X509 *cacert)
{
	const ASN1_OCTET_STRING *ski = X509_get0_subject_key_id(cacert);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	AUTHORITY_KEYID *akid;
	int rv = -1;

	if ((akid = AUTHORITY_KEYID_new()) == NULL)
		return -1;
	if (ski != NULL)
		akid->keyid = ASN1_OCTET_STRING_dup(ski);
	else if (X509_pubkey_digest(cacert, EVP_sha1(), md, &mdlen) == 1 &&
	         (akid->keyid = ASN1_OCTET_STRING_new()) != NULL &&
	         ASN1_OCTET_STRING_set(akid->keyid, md, (int)mdlen) != 1) {
		ASN1_OCTET_STRING_free(akid->keyid);
		akid->keyid = NULL;
	}
	if (akid->keyid != NULL &&
	    X509_add1_ext_i2d(x, NID_authority_key_identifier, akid, 0, X509V3_ADD_DEFAULT) == 1)
		rv = 0;
	AUTHORITY_KEYID_free(akid);
	return rv;
}

/*
 * Builds the leaf template once the CA and the leaf key exist: a
 * certificate that only carries the extensions every leaf has (the
 * subject key identifier is the leaf key's, the same for all; the key is
 * set so that it can be computed). It is never signed nor sent. A mint
 * copies its extensions into a new
 * certificate rather than decoding a DER copy of it: in OpenSSL 3.0
 * decoding a certificate runs the provider decoder on its public key
 * (about 0.25 ms here), while setting the leaf key, a key of the legacy
 * type (see ca_finish), takes about 0.01 ms.
 */
int
ca_mint_prepare(struct ca *ca, char *err, size_t errlen)
{
	X509V3_CTX ctx;
	X509 *x;

	if ((ca->md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		goto err;
	if ((x = X509_new()) == NULL)
		goto err;
	X509V3_set_ctx(&ctx, ca->cert, x, NULL, NULL, 0);
	if (X509_set_pubkey(x, ca->leaf_key) != 1 ||
	    ca_ext_add(x, NULL, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
	    ca_ext_add(x, NULL, NID_key_usage, "critical,digitalSignature") != 0 ||
	    ca_ext_add(x, NULL, NID_ext_key_usage, "serverAuth") != 0 ||
	    ca_ext_add(x, &ctx, NID_subject_key_identifier, "hash") != 0 ||
	    ca_mint_ext_aki(x, ca->cert) != 0) {
		X509_free(x);
		goto err;
	}
	ca->leaf_tmpl = x;
	return 0;
err:
	ca_errf(err, errlen, "cannot prepare the leaf template");
	return -1;
}

void
ca_mint_release(struct ca *ca)
{
	X509_free(ca->leaf_tmpl);
	ca->leaf_tmpl = NULL;
	EVP_MD_free(ca->md);
	ca->md = NULL;
}

static int
ca_mint_san(X509 *x, const char *host, int is_ip)
{
	GENERAL_NAMES *gens;
	GENERAL_NAME *gn;
	ASN1_OCTET_STRING *ip = NULL;
	ASN1_IA5STRING *dns = NULL;
	int rv = -1;

	if ((gens = GENERAL_NAMES_new()) == NULL)
		return -1;
	if ((gn = GENERAL_NAME_new()) == NULL)
		goto out;
	if (sk_GENERAL_NAME_push(gens, gn) == 0) {
		GENERAL_NAME_free(gn);
		goto out;
	}
	if (is_ip) {
		if ((ip = a2i_IPADDRESS(host)) == NULL)
			goto out;
		GENERAL_NAME_set0_value(gn, GEN_IPADD, ip);
	} else {
		if ((dns = ASN1_IA5STRING_new()) == NULL ||
		    ASN1_STRING_set(dns, host, (int)strlen(host)) != 1) {
			ASN1_IA5STRING_free(dns);
			goto out;
		}
		GENERAL_NAME_set0_value(gn, GEN_DNS, dns);
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1)
		rv = 0;
out:
	GENERAL_NAMES_free(gens);
	return rv;
}

/*
 * Validity inside the CA's: from an hour back (clocks behind ours) but not
 * before the CA, to the leaf lifetime but not past the CA.
 */
static int
ca_mint_validity(const struct ca *ca, X509 *x)
{
	time_t now = time(NULL), nb, na;

	nb = now - CA_BACKDATE;
	if (nb < ca->not_before)
		nb = ca->not_before;
	na = now + ca->leaf_lifetime;
	if (na > ca->not_after)
		na = ca->not_after;
	if (na <= now || nb >= na)
		return -1; /* the CA has expired */
	if (ASN1_TIME_set(X509_getm_notBefore(x), nb) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), na) == NULL)
		return -1;
	return 0;
}

/*
 * A name's subject is its CN, cut to the 64 characters a CN may hold (the
 * SAN carries it whole). An address gets no CN: OpenSSL checks a CN that
 * looks like a host name against the CA's DNS name constraints, and a
 * dotted IPv4 address does, so it would fail under any constrained CA.
 * Verifiers match addresses against the SAN alone.
 */
static int
ca_mint_subject(X509 *x, const char *host, int is_ip)
{
	const char *value = host;
	int nid = NID_commonName;
	size_t len = strlen(host);

	if (is_ip) {
		nid = NID_organizationName;
		value = CA_ORG;
		len = strlen(CA_ORG);
	} else if (len > CA_CN_MAXLEN)
		len = CA_CN_MAXLEN;
	if (X509_NAME_add_entry_by_NID(X509_get_subject_name(x), nid, MBSTRING_ASC,
	                               (const unsigned char *)value, (int)len, -1, 0) != 1)
		return -1;
	return 0;
}

/*
 * Mints a leaf for host (a name, or an address when is_ip) into *out, which
 * the caller frees.
 */
int
ca_mint(struct ca *ca, const char *host, int is_ip, X509 **out)
{
	X509 *x = NULL;
	char canon[CA_HOST_BUFLEN], msg[384];
	const char *why;
	int i;

	*out = NULL;
	if ((why = ca_mint_host_check(host, is_ip, canon)) != NULL) {
		log_debug("mint: %s", why);
		return -1;
	}
	if ((x = X509_new()) == NULL || X509_set_version(x, X509_VERSION_3) != 1 ||
	    ca_serial_set(x) != 0 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	    ca_mint_subject(x, canon, is_ip) != 0 || ca_mint_validity(ca, x) != 0 ||
	    X509_set_pubkey(x, ca->leaf_key) != 1)
		goto err;
	for (i = 0; i < X509_get_ext_count(ca->leaf_tmpl); i++) {
		if (X509_add_ext(x, X509_get_ext(ca->leaf_tmpl, i), -1) != 1)
			goto err;
	}
	if (ca_mint_san(x, canon, is_ip) != 0 || X509_sign(x, ca->key, ca->md) <= 0)
		goto err;
	*out = x;
	return 0;
err:
	ca_errf(msg, sizeof msg, "cannot mint a certificate for %s", canon);
	log_warnx("%s", msg);
	X509_free(x);
	return -1;
}
