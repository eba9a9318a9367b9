/*
 * The server name a TLS client asks for, read from its ClientHello before
 * anything is answered: the transparent listener decides a redirected
 * connection by that name. The bytes come from an untrusted client, so
 * every length is checked against what encloses it, and anything that is
 * not a well-formed ClientHello is an error, never a guess.
 */
#include <string.h>

#include "tls.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_HS_CLIENT_HELLO  1
#define TLS_EXT_SERVER_NAME  0
#define TLS_RECORD_MAX       (16384 + 256) /* plaintext limit, with slack for old stacks */

/* A cursor over bytes whose every read is bounds-checked. */
struct sni_cur {
	const unsigned char *p;
	size_t left;
};

static int
sni_u8(struct sni_cur *c, unsigned *v)
{
	if (c->left < 1)
		return -1;
	*v = c->p[0];
	c->p++;
	c->left--;
	return 0;
}

static int
sni_u16(struct sni_cur *c, unsigned *v)
{
	if (c->left < 2)
		return -1;
	*v = (unsigned)c->p[0] << 8 | c->p[1];
	c->p += 2;
	c->left -= 2;
	return 0;
}

static int
sni_skip(struct sni_cur *c, size_t n)
{
	if (c->left < n)
		return -1;
	c->p += n;
	c->left -= n;
	return 0;
}

/* A sub-cursor over the next n bytes, which c then skips. */
static int
sni_sub(struct sni_cur *c, size_t n, struct sni_cur *sub)
{
	if (c->left < n)
		return -1;
	sub->p = c->p;
	sub->left = n;
	c->p += n;
	c->left -= n;
	return 0;
}

/* The server_name extension (RFC 6066 §3): exactly one host_name. */
static const char *
sni_server_name(struct sni_cur *ext, char *name, size_t namelen, int *found)
{
	struct sni_cur list, entry;
	unsigned n, type, len;

	if (sni_u16(ext, &n) == -1 || sni_sub(ext, n, &list) == -1 || ext->left != 0 || n == 0)
		return "malformed server_name extension";
	while (list.left > 0) {
		if (sni_u8(&list, &type) == -1 || sni_u16(&list, &len) == -1 ||
		    sni_sub(&list, len, &entry) == -1)
			return "malformed server_name entry";
		if (type != 0)
			continue; /* no other name type is defined; skip it */
		if (*found)
			return "more than one host_name in server_name";
		if (len == 0 || len >= namelen)
			return "server name empty or too long";
		if (memchr(entry.p, '\0', len) != NULL)
			return "NUL in the server name";
		memcpy(name, entry.p, len);
		name[len] = '\0';
		*found = 1;
	}
	return NULL;
}

/* The ClientHello body: skip to the extensions and find server_name. */
static const char *
sni_client_hello(struct sni_cur *hello, char *name, size_t namelen, int *found)
{
	struct sni_cur exts, ext;
	unsigned v, n, type, seen_sni = 0;
	const char *err;

	if (sni_u16(hello, &v) == -1 || (v >> 8) != 3)
		return "unsupported ClientHello version";
	if (sni_skip(hello, 32) == -1 || sni_u8(hello, &n) == -1 || n > 32 ||
	    sni_skip(hello, n) == -1)
		return "malformed ClientHello session id";
	if (sni_u16(hello, &n) == -1 || n < 2 || (n & 1) || sni_skip(hello, n) == -1)
		return "malformed ClientHello cipher suites";
	if (sni_u8(hello, &n) == -1 || n < 1 || sni_skip(hello, n) == -1)
		return "malformed ClientHello compression methods";
	if (hello->left == 0)
		return NULL; /* no extensions at all */
	if (sni_u16(hello, &n) == -1 || sni_sub(hello, n, &exts) == -1 || hello->left != 0)
		return "malformed ClientHello extensions";
	while (exts.left > 0) {
		if (sni_u16(&exts, &type) == -1 || sni_u16(&exts, &n) == -1 ||
		    sni_sub(&exts, n, &ext) == -1)
			return "malformed ClientHello extension";
		if (type != TLS_EXT_SERVER_NAME)
			continue;
		if (seen_sni++)
			return "server_name extension sent twice";
		if ((err = sni_server_name(&ext, name, namelen, found)) != NULL)
			return err;
	}
	return NULL;
}

/*
 * Read the SNI from the first bytes a client sent. The ClientHello may be
 * split over several handshake records; their fragments are joined (up to
 * SNI_HELLO_MAX bytes) before it is parsed. name gets the host_name as
 * sent (the caller normalises and checks it). *err is set on SNI_ERROR.
 */
enum sni_result
sni_parse(const unsigned char *buf, size_t len, char *name, size_t namelen, const char **err)
{
	unsigned char hs[SNI_HELLO_MAX];
	size_t have = 0, need = 0, rlen;
	struct sni_cur hello;
	int found = 0;

	*err = NULL;
	name[0] = '\0';
	if (len == 0)
		return SNI_MORE;
	if (buf[0] != TLS_RECORD_HANDSHAKE)
		return SNI_NOT_TLS;
	for (;;) {
		if (len < 5)
			return SNI_MORE;
		if (buf[0] != TLS_RECORD_HANDSHAKE || buf[1] != 3) {
			*err = have == 0 ? "not a TLS handshake record" : "ClientHello interrupted";
			return have == 0 ? SNI_NOT_TLS : SNI_ERROR;
		}
		rlen = (size_t)buf[3] << 8 | buf[4];
		if (rlen == 0 || rlen > TLS_RECORD_MAX) {
			*err = "bad TLS record length";
			return SNI_ERROR;
		}
		if (len < 5 + rlen)
			return SNI_MORE;
		if (have + rlen > sizeof hs) {
			*err = "ClientHello too large";
			return SNI_ERROR;
		}
		memcpy(hs + have, buf + 5, rlen);
		have += rlen;
		buf += 5 + rlen;
		len -= 5 + rlen;
		if (need == 0 && have >= 4) {
			if (hs[0] != TLS_HS_CLIENT_HELLO) {
				*err = "first handshake message is not a ClientHello";
				return SNI_ERROR;
			}
			need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			if (need > sizeof hs) {
				*err = "ClientHello too large";
				return SNI_ERROR;
			}
		}
		if (need != 0 && have >= need)
			break;
	}
	hello.p = hs + 4;
	hello.left = need - 4;
	if ((*err = sni_client_hello(&hello, name, namelen, &found)) != NULL) {
		name[0] = '\0';
		return SNI_ERROR;
	}
	return found ? SNI_FOUND : SNI_ABSENT;
}
