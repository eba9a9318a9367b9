/*
 * The audit log's hash chain, the one implementation both sides use: the
 * writer (audit.c) puts into each line's "prev" the SHA-256 of the line
 * before it, and `policyctl audit --verify` (policyctl/review_verify.c)
 * recomputes the same hashes to find lines removed, inserted or edited.
 * A link is the digest of a line's bytes without its newline, in
 * lowercase hex; the first line of a chain links to 64 zeros.
 */
#include <stdlib.h>

/*
 * SHA256_Init and friends are deprecated in OpenSSL 3 in favour of EVP,
 * but not removed. The chain hashes every line, and EVP_DigestInit_ex
 * there frees and makes a provider context each time (about a tenth of
 * a DNS query's cost in egressd); the low-level calls run the same SHA-256
 * code (SHA-NI where the CPU has it) on a context of our own.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "audit.h"

_Static_assert(SHA256_DIGEST_LENGTH * 2 == CHAIN_HEX, "a link is a hex SHA-256");

const char chain_zeros[CHAIN_HEX + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

struct chain {
	SHA256_CTX sha;
};

struct chain *
chain_new(void)
{
	return xcalloc(1, sizeof(struct chain));
}

void
chain_free(struct chain *c)
{
	free(c);
}

/* Start the link of a new line. */
void
chain_begin(struct chain *c)
{
	if (SHA256_Init(&c->sha) != 1)
		fatalx("audit chain: SHA-256 init failed");
}

/* More bytes of the line; a line may come in any number of pieces. */
void
chain_update(struct chain *c, const void *p, size_t len)
{
	if (len > 0 && SHA256_Update(&c->sha, p, len) != 1)
		fatalx("audit chain: SHA-256 update failed");
}

/* The line's link: what the next line's "prev" holds. */
void
chain_end(struct chain *c, char link[CHAIN_HEX + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	if (SHA256_Final(md, &c->sha) != 1)
		fatalx("audit chain: SHA-256 final failed");
	str_hex(link, md, sizeof md);
}

/* The link of a line held whole. */
void
chain_line(struct chain *c, const void *p, size_t len, char link[CHAIN_HEX + 1])
{
	chain_begin(c);
	chain_update(c, p, len);
	chain_end(c, link);
}
