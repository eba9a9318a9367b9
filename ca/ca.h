/*
 * The ca module: the certificate authority egressd uses to intercept TLS.
 * A per-run ECDSA P-256 CA is made in memory at start (or a persistent one
 * is loaded on a developer box), leaves are minted per host on demand with
 * one shared key, and a bounded LRU keeps the minted leaves. Only the CA
 * certificate ever leaves the process; no function writes a private key.
 */
#ifndef CA_H
#define CA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common.h"

/* ca.c */
#define CA_LIFETIME_DEFAULT      (7L * 24 * 3600)
#define CA_LIFETIME_MAX          (10L * 366 * 24 * 3600)
#define CA_LEAF_LIFETIME_DEFAULT (7L * 24 * 3600)
#define CA_BACKDATE              3600 /* clocks a little behind ours still accept */
#define CA_SYSTEM_BUNDLE         "/etc/ssl/certs/ca-certificates.crt"
#define CA_ORG                   "opencode-sandbox egressd"
struct ca;
struct ca *ca_new_ephemeral(long, const char *const *, size_t, char *, size_t);
struct ca *ca_load(const char *, const char *, char *, size_t);
void ca_free(struct ca *);
X509 *ca_cert(const struct ca *);
EVP_PKEY *ca_leaf_key(const struct ca *);
void ca_set_leaf_lifetime(struct ca *, long);
int ca_write_cert(const struct ca *, const char *);
int ca_write_bundle(const struct ca *, const char *, const char *);

/* mint.c */
#define CA_CN_MAXLEN 64 /* ub-common-name */
int ca_mint(struct ca *, const char *, int, X509 **);

/* cache.c */
#define CA_CACHE_DEFAULT 1024
struct ca_cache;
struct ca_cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t mints;
	uint64_t evictions;
	size_t entries;
};
struct ca_cache *ca_cache_new(struct ca *, size_t);
void ca_cache_free(struct ca_cache *);
X509 *ca_cache_get(struct ca_cache *, const char *, int);
void ca_cache_stats(const struct ca_cache *, struct ca_cache_stats *);

#ifdef CA_INTERNAL
/*
 * Shared by the ca/ sources only; every other module sees struct ca as
 * opaque. What every leaf has in common (issuer, key usages, key
 * identifiers) is built once into a template certificate, whose
 * extensions a mint copies before adding the name, serial, validity and
 * the leaf key.
 */
struct ca {
	X509 *cert;
	EVP_PKEY *key;      /* signs leaves; lives in this process only */
	EVP_PKEY *leaf_key; /* one P-256 key shared by every leaf */
	time_t not_before;
	time_t not_after;
	long leaf_lifetime;
	X509 *leaf_tmpl; /* the extensions every leaf has; never signed nor sent */
	EVP_MD *md;      /* SHA-256, fetched once */
};
void ca_errf(char *, size_t, const char *, ...) EG_PRINTF(3, 4);
int ca_serial_set(X509 *);
int ca_ext_add(X509 *, X509V3_CTX *, int, const char *);
#define CA_HOST_BUFLEN 256
const char *ca_mint_host_check(const char *, int, char[CA_HOST_BUFLEN]);
int ca_mint_prepare(struct ca *, char *, size_t);
void ca_mint_release(struct ca *);
#endif

#endif
