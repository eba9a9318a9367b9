/*
 * The matcher behind one policy list (allowlist, blocklist, passthrough):
 * exact names, "*.suffix" wildcards, adblock-style trees (the apex and its
 * subdomains), addresses and CIDRs. Third-party lists reach a million
 * entries and a lookup must cost O(labels), never O(entries), without
 * allocating: see struct domain_set for the layout that makes it fast.
 */
#include <ctype.h>
#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

#define DOMAIN_MAX_FILES   UINT16_MAX
#define DOMAIN_RESERVE_MAX (1 << 22) /* what a hint may make room for */
#define DOMAIN_ADDR_TEXT   64

static const char domain_err_numeric[] = "numeric host; write the address as a dotted quad";
static const char domain_err_url[] = "entries are hosts, not URLs";

#define DOMAIN_INLINE 20 /* name bytes a record holds itself */
#define DOMAIN_HEAD   16 /* of a longer name: the rest is in the tails */

/* A name entry: 32 bytes, in the slot its name hashes to. */
struct domain_rec {
	uint32_t hash;
	uint32_t line;
	uint16_t file; /* files[file - 1]; 0: built in */
	uint8_t kind;
	uint8_t len;
	union {
		char name[DOMAIN_INLINE];
		struct {
			char head[DOMAIN_HEAD];
			uint32_t tail; /* offset of name[DOMAIN_HEAD..] in tails */
		} l;
	} u;
};

struct domain_addr_entry {
	struct cidr cidr; /* an address is a /32 or /128 */
	uint32_t line;
	uint16_t file;
	uint8_t kind;
};

/*
 * Names sit in an open-addressing table (linear probing) kept as two
 * arrays of one slot each: a byte tag per slot, 0 when the slot is free,
 * else 8 bits of the name's hash, and the records. A million entries take
 * 1.3 MiB of tags, which stay in the CPU cache, so the probes of a lookup
 * that finds nothing (most of them: every parent suffix of a name is
 * probed) never reach memory, and one that finds its name reads a single
 * record, which holds the name itself unless it is long. The slot is
 * hash * nslots / 2^32, so the table grows by half, not double.
 */
struct domain_set {
	uint8_t *tags;
	struct domain_rec *recs;
	size_t nslots;
	size_t nrecs;

	char *tails; /* name[DOMAIN_HEAD..] of names longer than DOMAIN_INLINE */
	size_t tails_len;
	size_t tails_cap;

	/*
	 * Label counts (bit n-1 for n labels, the last bit for 64 and more)
	 * of the wildcard and tree names: a parent suffix whose label count
	 * has no such entry is not probed at all.
	 */
	uint64_t parent_labels;

	struct domain_addr_entry *addrs;
	size_t naddrs;
	size_t addrs_cap;

	char **files;
	size_t nfiles;
};

/* One step of FNV-1a; names are hashed from their last byte backwards. */
static inline uint32_t
domain_hash_step(uint32_t h, unsigned char c)
{
	return (h ^ c) * 16777619u;
}

/* FNV-1a alone mixes poorly; the slot takes the high bits, the tag the low ones. */
static inline uint32_t
domain_hash_final(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static uint32_t
domain_hash(const char *name, size_t len)
{
	uint32_t h = 2166136261u;

	while (len > 0)
		h = domain_hash_step(h, (unsigned char)name[--len]);
	return domain_hash_final(h);
}

static uint64_t
domain_label_bit(const char *name, size_t len)
{
	size_t i, n = 1;

	for (i = 0; i < len; i++) {
		if (name[i] == '.')
			n++;
	}
	return (uint64_t)1 << (n > 64 ? 63 : n - 1);
}

struct domain_set *
domain_set_new(void)
{
	struct domain_set *set;

	set = xcalloc(1, sizeof *set);
	set->nslots = 16;
	set->tags = xcalloc(set->nslots, 1);
	set->recs = xcalloc(set->nslots, sizeof *set->recs);
	return set;
}

void
domain_set_free(struct domain_set *set)
{
	size_t i;

	if (set == NULL)
		return;
	for (i = 0; i < set->nfiles; i++)
		free(set->files[i]);
	free(set->files);
	free(set->tags);
	free(set->recs);
	free(set->tails);
	free(set->addrs);
	free(set);
}

size_t
domain_set_count(const struct domain_set *set)
{
	return set->nrecs + set->naddrs;
}

/*
 * Returns the file's index + 1 (0 for built in), or -1 when there are too
 * many files. Entries come in long runs from one file, so the last file is
 * compared first.
 */
static long
domain_set_intern(struct domain_set *set, const char *file)
{
	size_t i;

	if (file == NULL)
		return 0;
	if (set->nfiles > 0 && strcmp(set->files[set->nfiles - 1], file) == 0)
		return (long)set->nfiles;
	for (i = 0; i + 1 < set->nfiles; i++) {
		if (strcmp(set->files[i], file) == 0)
			return (long)i + 1;
	}
	if (set->nfiles >= DOMAIN_MAX_FILES)
		return -1;
	set->files = xreallocarray(set->files, set->nfiles + 1, sizeof *set->files);
	set->files[set->nfiles++] = xstrdup(file);
	return (long)set->nfiles;
}

static inline size_t
domain_slot_of(const struct domain_set *set, uint32_t hash)
{
	return (size_t)(((uint64_t)hash * set->nslots) >> 32);
}

static inline uint8_t
domain_tag_of(uint32_t hash)
{
	return (uint8_t)hash != 0 ? (uint8_t)hash : 1;
}

static int
domain_rec_equal(const struct domain_set *set, const struct domain_rec *r, uint32_t hash,
                 const char *name, size_t len)
{
	if (r->hash != hash || r->len != len)
		return 0;
	if (len <= DOMAIN_INLINE)
		return memcmp(r->u.name, name, len) == 0;
	return memcmp(r->u.l.head, name, DOMAIN_HEAD) == 0 &&
	       memcmp(set->tails + r->u.l.tail, name + DOMAIN_HEAD, len - DOMAIN_HEAD) == 0;
}

/*
 * The record of name whose kind is a (else b), or NULL. One name may have
 * a record of each kind: they sit in the same probe run.
 */
static const struct domain_rec *
domain_set_find(const struct domain_set *set, uint32_t hash, const char *name, size_t len,
                enum domain_kind a, enum domain_kind b)
{
	const struct domain_rec *r, *found = NULL;
	uint8_t tag = domain_tag_of(hash);
	size_t i = domain_slot_of(set, hash);

	for (; set->tags[i] != 0; i = i + 1 == set->nslots ? 0 : i + 1) {
		if (set->tags[i] != tag)
			continue;
		r = &set->recs[i];
		if (!domain_rec_equal(set, r, hash, name, len))
			continue;
		if (r->kind == a)
			return r;
		if (r->kind == b && found == NULL)
			found = r;
	}
	return found;
}

static void
domain_set_resize(struct domain_set *set, size_t nslots)
{
	uint8_t *otags = set->tags;
	struct domain_rec *orecs = set->recs;
	size_t on = set->nslots, i, j;

	set->nslots = nslots;
	set->tags = xcalloc(set->nslots, 1);
	set->recs = xcalloc(set->nslots, sizeof *set->recs);
	for (i = 0; i < on; i++) {
		if (otags[i] == 0)
			continue;
		j = domain_slot_of(set, orecs[i].hash);
		while (set->tags[j] != 0)
			j = j + 1 == set->nslots ? 0 : j + 1;
		set->tags[j] = otags[i];
		set->recs[j] = orecs[i];
	}
	free(otags);
	free(orecs);
}

/*
 * Make room for n more names at once (a hint: a list file about to be
 * loaded), so that the table is not rebuilt a dozen times on the way.
 */
void
domain_set_reserve(struct domain_set *set, size_t n)
{
	size_t want;

	if (n > DOMAIN_RESERVE_MAX)
		n = DOMAIN_RESERVE_MAX;
	want = (set->nrecs + n + 1) * 4 / 3 + 1;
	if (want > set->nslots)
		domain_set_resize(set, want);
}

/* Adds a normalised name; a second entry of the same name and kind is dropped. */
static const char *
domain_set_insert_hashed(struct domain_set *set, enum domain_kind kind, const char *name,
                         size_t len, uint32_t hash, const char *file, unsigned line)
{
	uint8_t tag = domain_tag_of(hash);
	struct domain_rec *r;
	size_t i;
	long fidx;

	if (set->nrecs >= UINT32_MAX - 1)
		return "too many entries";
	/* At most 3/4 full: a probe run always ends at a free slot. */
	if ((set->nrecs + 1) * 4 > set->nslots * 3)
		domain_set_resize(set, set->nslots + set->nslots / 2);
	for (i = domain_slot_of(set, hash); set->tags[i] != 0;
	     i = i + 1 == set->nslots ? 0 : i + 1) {
		r = &set->recs[i];
		if (set->tags[i] == tag && r->kind == kind &&
		    domain_rec_equal(set, r, hash, name, len))
			return NULL;
	}
	if ((fidx = domain_set_intern(set, file)) == -1)
		return "too many list files";
	r = &set->recs[i];
	memset(r, 0, sizeof *r);
	r->hash = hash;
	r->line = line;
	r->file = (uint16_t)fidx;
	r->kind = (uint8_t)kind;
	r->len = (uint8_t)len;
	if (len <= DOMAIN_INLINE)
		memcpy(r->u.name, name, len);
	else {
		if (set->tails_len + len > UINT32_MAX)
			return "too many entries";
		if (set->tails_len + len > set->tails_cap) {
			set->tails_cap = set->tails_cap == 0 ? 4096 : set->tails_cap * 2;
			set->tails = xreallocarray(set->tails, set->tails_cap, 1);
		}
		memcpy(r->u.l.head, name, DOMAIN_HEAD);
		r->u.l.tail = (uint32_t)set->tails_len;
		memcpy(set->tails + set->tails_len, name + DOMAIN_HEAD, len - DOMAIN_HEAD);
		set->tails_len += len - DOMAIN_HEAD;
	}
	set->tags[i] = tag;
	set->nrecs++;
	if (kind == DOMAIN_WILDCARD || kind == DOMAIN_TREE)
		set->parent_labels |= domain_label_bit(name, len);
	return NULL;
}

static const char *
domain_set_insert(struct domain_set *set, enum domain_kind kind, const char *name, size_t len,
                  const char *file, unsigned line)
{
	return domain_set_insert_hashed(set, kind, name, len, domain_hash(name, len), file, line);
}

/* A last label that is a number makes a host an IPv4 address (WHATWG URL). */
static int
domain_name_is_numeric(const char *name, size_t len)
{
	size_t start = len, i;

	while (start > 0 && name[start - 1] != '.')
		start--;
	if (start == len)
		return 0;
	i = start;
	if (len - start >= 2 && name[i] == '0' && name[i + 1] == 'x') {
		for (i += 2; i < len; i++) {
			if (!isxdigit((unsigned char)name[i]))
				return 0;
		}
		return 1;
	}
	for (; i < len; i++) {
		if (!isdigit((unsigned char)name[i]))
			return 0;
	}
	return 1;
}

/* What a byte of a list file's name becomes: lowercase, or 0 when no name may hold it. */
#define DOMAIN_LC_LETTER(u) [u] = (u) | 0x20, [(u) | 0x20] = (u) | 0x20
#define DOMAIN_LC_SAME(c)   [c] = (c)
static const uint8_t domain_lc[256] = {
    DOMAIN_LC_LETTER('A'), DOMAIN_LC_LETTER('B'), DOMAIN_LC_LETTER('C'), DOMAIN_LC_LETTER('D'),
    DOMAIN_LC_LETTER('E'), DOMAIN_LC_LETTER('F'), DOMAIN_LC_LETTER('G'), DOMAIN_LC_LETTER('H'),
    DOMAIN_LC_LETTER('I'), DOMAIN_LC_LETTER('J'), DOMAIN_LC_LETTER('K'), DOMAIN_LC_LETTER('L'),
    DOMAIN_LC_LETTER('M'), DOMAIN_LC_LETTER('N'), DOMAIN_LC_LETTER('O'), DOMAIN_LC_LETTER('P'),
    DOMAIN_LC_LETTER('Q'), DOMAIN_LC_LETTER('R'), DOMAIN_LC_LETTER('S'), DOMAIN_LC_LETTER('T'),
    DOMAIN_LC_LETTER('U'), DOMAIN_LC_LETTER('V'), DOMAIN_LC_LETTER('W'), DOMAIN_LC_LETTER('X'),
    DOMAIN_LC_LETTER('Y'), DOMAIN_LC_LETTER('Z'), DOMAIN_LC_SAME('0'),   DOMAIN_LC_SAME('1'),
    DOMAIN_LC_SAME('2'),   DOMAIN_LC_SAME('3'),   DOMAIN_LC_SAME('4'),   DOMAIN_LC_SAME('5'),
    DOMAIN_LC_SAME('6'),   DOMAIN_LC_SAME('7'),   DOMAIN_LC_SAME('8'),   DOMAIN_LC_SAME('9'),
    DOMAIN_LC_SAME('-'),   DOMAIN_LC_SAME('_'),   DOMAIN_LC_SAME('.'),
};

/* Whether the label of len bytes at p is an A-label: host_name_check() decodes those. */
static int
domain_label_xn(const char *p, size_t len)
{
	return len >= 4 && memcmp(p, "xn--", 4) == 0;
}

/*
 * The one pass a list file's names take: lowercase into out, check what
 * host_name_check() checks, and hash (backwards, as domain_hash() does),
 * with a table instead of tests per character. Returns 0 at the first
 * thing it does not like, and at an A-label ("xn--"), and the caller takes
 * the slow path, which decodes A-labels and finds the words for an error.
 */
static int
domain_name_fast(const char *name, size_t len, char *out, uint32_t *hash)
{
	uint32_t h = 2166136261u;
	size_t i, label = 0;
	unsigned c, bad = 0;

	for (i = len; i-- > 0;) {
		c = domain_lc[(unsigned char)name[i]];
		out[i] = (char)c;
		h = domain_hash_step(h, (unsigned char)c);
		if (c == '.') {
			bad |= label == 0 || domain_label_xn(out + i + 1, label);
			label = 0;
			continue;
		}
		bad |= c == 0;
		label++;
		bad |= label > HOST_LABEL_MAXLEN;
	}
	out[len] = '\0';
	*hash = domain_hash_final(h);
	return !bad && label > 0 && !domain_label_xn(out, label);
}

/*
 * Normalises a name into out (HOST_NAME_MAXLEN + 1 bytes). Plain ASCII is
 * lowercased and checked here, which is what makes big list files fast;
 * anything else goes through host_parse for IDNA.
 */
static const char *
domain_name_normalise(const char *name, size_t len, int full, char *out, size_t *outlen)
{
	struct host h;
	const char *error;
	size_t i;

	if (len == 0)
		return "empty entry";
	for (i = 0; !full && i < len; i++) {
		if ((unsigned char)name[i] >= 0x80 || name[i] == '\0')
			break;
	}
	if (full || i < len) {
		if ((error = host_parse(name, len, &h)) != NULL)
			return error;
		if (h.kind != HOST_NAME)
			return domain_err_numeric;
		*outlen = strlen(h.name);
		memcpy(out, h.name, *outlen + 1);
		return NULL;
	}
	if (name[len - 1] == '.')
		len--;
	if (len == 0)
		return "empty entry";
	if (len > HOST_NAME_MAXLEN)
		return "host name too long";
	for (i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)name[i]);
	out[len] = '\0';
	if ((error = host_name_check(out, len)) != NULL)
		return error;
	if (domain_name_is_numeric(out, len))
		return domain_err_numeric;
	*outlen = len;
	return NULL;
}

/* libpsl is built with its list on Debian; otherwise load the packaged one. */
const psl_ctx_t *
domain_psl(void)
{
	static psl_ctx_t *loaded;
	static int tried;

	if (psl_builtin() != NULL)
		return psl_builtin();
	if (!tried) {
		tried = 1;
		loaded = psl_latest(NULL);
	}
	return loaded;
}

/*
 * The ICANN section of the list counts ("*.com", "*.co.uk"), and so does
 * the default "*" rule, so an unlisted single label ("*.internal") is a
 * suffix too. The private section does not: its entries are platforms run
 * by one organisation ("githubusercontent.com", "github.io"), and
 * allowing "*.githubusercontent.com" is a deliberate, documented choice
 * (it trusts every tenant of that platform; docs/config.md says so).
 */
static int
domain_is_public_suffix(const char *name)
{
	const psl_ctx_t *psl = domain_psl();

	if (psl == NULL)
		return strchr(name, '.') == NULL;
	return psl_is_public_suffix2(psl, name, PSL_TYPE_ICANN);
}

/*
 * Whether pattern is a wildcard over a suffix of the list's private
 * section: a platform where anyone can publish ("*.herokuapp.com"). Such
 * an allowlist entry is accepted, but it trusts every tenant, so the
 * policy warns about it.
 */
int
domain_wildcard_shared(const char *pattern)
{
	const psl_ctx_t *psl = domain_psl();

	if (psl == NULL || strncmp(pattern, "*.", 2) != 0)
		return 0;
	return psl_is_public_suffix2(psl, pattern + 2, PSL_TYPE_PRIVATE | PSL_TYPE_NO_STAR_RULE);
}

static const char *
domain_set_add_cidr(struct domain_set *set, enum domain_kind kind, const struct cidr *in,
                    const char *file, unsigned line)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	struct domain_addr_entry *a;
	struct cidr c = *in;
	size_t i;
	long fidx;

	/* A v4-mapped entry is stored as IPv4 so that both spellings match. */
	if (c.net.af == AF_INET6 && c.plen >= 96 && memcmp(c.net.a, mapped, 12) == 0) {
		memmove(c.net.a, c.net.a + 12, 4);
		memset(c.net.a + 4, 0, 12);
		c.net.af = AF_INET;
		c.plen -= 96;
	}
	for (i = 0; i < set->naddrs; i++) {
		a = &set->addrs[i];
		if (a->kind == kind && a->cidr.plen == c.plen && a->cidr.net.af == c.net.af &&
		    memcmp(a->cidr.net.a, c.net.a, sizeof c.net.a) == 0)
			return NULL;
	}
	if ((fidx = domain_set_intern(set, file)) == -1)
		return "too many list files";
	if (set->naddrs == set->addrs_cap) {
		set->addrs_cap = set->addrs_cap == 0 ? 8 : set->addrs_cap * 2;
		set->addrs = xreallocarray(set->addrs, set->addrs_cap, sizeof *set->addrs);
	}
	a = &set->addrs[set->naddrs++];
	a->cidr = c;
	a->kind = (uint8_t)kind;
	a->file = (uint16_t)fidx;
	a->line = line;
	return NULL;
}

/*
 * An address entry: "a.b.c.d", an IPv6 address with or without brackets,
 * or "net/len". Returns 1 and sets *error when s is one (or is clearly
 * meant as one and is malformed), 0 when s should be read as a name.
 */
static int
domain_parse_addr(const char *s, size_t len, enum domain_kind *kind, struct cidr *c,
                  const char **error)
{
	char text[DOMAIN_ADDR_TEXT], *slash;
	int obvious;

	obvious = memchr(s, ':', len) != NULL || memchr(s, '/', len) != NULL || s[0] == '[';
	if (len >= sizeof text) {
		if (!obvious)
			return 0;
		*error = memchr(s, '/', len) != NULL && memchr(s, ':', len) == NULL
		             ? domain_err_url
		             : "invalid address";
		return 1;
	}
	memcpy(text, s, len);
	text[len] = '\0';
	*error = NULL;
	memset(c, 0, sizeof *c);
	if ((slash = memchr(text, '/', len)) != NULL) {
		*kind = DOMAIN_CIDR;
		*slash = '\0';
		if (addr_parse(text, &c->net) != NULL && memchr(s, ':', len) == NULL) {
			*error = domain_err_url;
			return 1;
		}
		*slash = '/';
		*error = addr_cidr_parse(text, c);
		return 1;
	}
	if (text[0] == '[') {
		*kind = DOMAIN_ADDR;
		if (len < 3 || text[len - 1] != ']') {
			*error = "invalid address";
			return 1;
		}
		text[len - 1] = '\0';
		if ((*error = addr_parse(text + 1, &c->net)) == NULL && c->net.af != AF_INET6)
			*error = "brackets are for IPv6 addresses";
	} else if ((*error = addr_parse(text, &c->net)) != NULL && !obvious)
		return 0;
	*kind = DOMAIN_ADDR;
	c->plen = c->net.af == AF_INET ? 32 : 128;
	return 1;
}

const char *
domain_set_add(struct domain_set *set, const char *pattern, size_t len, int flags, const char *file,
               unsigned line)
{
	char name[HOST_NAME_MAXLEN + 1];
	enum domain_kind kind = DOMAIN_EXACT;
	const char *error;
	struct cidr c;
	size_t n;

	if (len == 0)
		return "empty entry";
	if (memchr(pattern, '\0', len) != NULL)
		return "invalid character in entry";
	if (len == 1 && pattern[0] == '*')
		return "a bare \"*\" would match every host";
	if (len >= 2 && pattern[0] == '*' && pattern[1] == '.') {
		kind = DOMAIN_WILDCARD;
		pattern += 2;
		len -= 2;
		if (len == 0)
			return "wildcard without a suffix";
	}
	if (memchr(pattern, '*', len) != NULL)
		return "'*' is only allowed as a leading \"*.\"";
	if (memmem(pattern, len, "://", 3) != NULL)
		return domain_err_url;

	if (kind == DOMAIN_EXACT && domain_parse_addr(pattern, len, &kind, &c, &error)) {
		if (error != NULL)
			return error;
		if (flags & DOMAIN_F_NO_ADDR)
			return "address entries are not allowed in this list";
		return domain_set_add_cidr(set, kind, &c, file, line);
	}
	if ((error = domain_name_normalise(pattern, len, 1, name, &n)) != NULL) {
		if (kind == DOMAIN_WILDCARD && error == domain_err_numeric)
			return "wildcard over an address";
		return error;
	}
	if (kind == DOMAIN_WILDCARD && (flags & DOMAIN_F_ALLOWLIST) &&
	    domain_is_public_suffix(name))
		return "wildcard over a public suffix";
	return domain_set_insert(set, kind, name, n, file, line);
}

const char *
domain_set_add_kind(struct domain_set *set, enum domain_kind kind, const char *name, size_t len,
                    const char *file, unsigned line)
{
	char norm[HOST_NAME_MAXLEN + 1];
	enum domain_kind akind;
	const char *error;
	struct cidr c;
	uint32_t hash;
	size_t n;

	switch (kind) {
	case DOMAIN_EXACT:
	case DOMAIN_WILDCARD:
	case DOMAIN_TREE:
		if (len > 0 && memchr(name, '*', len) != NULL)
			return "'*' is only allowed as a leading \"*.\"";
		/* The common entry, in one pass: the hash comes with the check. */
		n = len > 0 && name[len - 1] == '.' ? len - 1 : len;
		if (n > 0 && n <= HOST_NAME_MAXLEN && domain_name_fast(name, n, norm, &hash) &&
		    !domain_name_is_numeric(norm, n))
			return domain_set_insert_hashed(set, kind, norm, n, hash, file, line);
		if ((error = domain_name_normalise(name, len, 0, norm, &n)) != NULL)
			return error;
		return domain_set_insert(set, kind, norm, n, file, line);
	case DOMAIN_ADDR:
	case DOMAIN_CIDR:
		if (len == 0)
			return "empty entry";
		if (!domain_parse_addr(name, len, &akind, &c, &error))
			return "invalid address";
		if (error != NULL)
			return error;
		if (akind != kind)
			return kind == DOMAIN_CIDR ? "not a CIDR" : "not an address";
		return domain_set_add_cidr(set, kind, &c, file, line);
	}
	return "unknown entry kind";
}

static void
domain_set_show(const struct domain_set *set, const struct domain_rec *r, struct domain_match *m)
{
	size_t n = r->len, o = 0;
	char *out = m->pattern;

	/* Built by hand: the resolver shows a match for every blocked query. */
	_Static_assert(sizeof m->pattern >= 2 + UINT8_MAX + 2, "a pattern fits");
	m->kind = (enum domain_kind)r->kind;
	m->file = r->file == 0 ? NULL : set->files[r->file - 1];
	m->line = r->line;
	if (m->kind == DOMAIN_WILDCARD) {
		memcpy(out, "*.", 2);
		o = 2;
	} else if (m->kind == DOMAIN_TREE) {
		memcpy(out, "||", 2);
		o = 2;
	}
	if (n <= DOMAIN_INLINE)
		memcpy(out + o, r->u.name, n);
	else {
		memcpy(out + o, r->u.l.head, DOMAIN_HEAD);
		memcpy(out + o + DOMAIN_HEAD, set->tails + r->u.l.tail, n - DOMAIN_HEAD);
	}
	o += n;
	if (m->kind == DOMAIN_TREE)
		out[o++] = '^';
	out[o] = '\0';
}

static int
domain_set_probes(const struct domain_set *set, size_t level, size_t nlevels)
{
	return level + 1 == nlevels ||
	       (set->parent_labels & ((uint64_t)1 << (level > 63 ? 63 : level))) != 0;
}

int
domain_set_match_name(const struct domain_set *set, const char *name, struct domain_match *m)
{
	uint32_t hashes[HOST_NAME_MAXLEN], h = 2166136261u;
	uint16_t starts[HOST_NAME_MAXLEN];
	const struct domain_rec *r = NULL;
	size_t len, i, n = 0, slot;

	len = strnlen(name, HOST_NAME_MAXLEN + 1);
	if (len == 0 || len > HOST_NAME_MAXLEN)
		return 0;

	/* Hashing backwards yields the hash of every suffix on the way. */
	for (i = len; i-- > 0;) {
		h = domain_hash_step(h, (unsigned char)name[i]);
		if (i == 0 || name[i - 1] == '.') {
			starts[n] = (uint16_t)i;
			hashes[n++] = domain_hash_final(h);
		}
	}
	/*
	 * Start loading every record a tag already points at, so that those
	 * memory reads overlap instead of following one another.
	 */
	for (i = 0; i < n; i++) {
		if (!domain_set_probes(set, i, n))
			continue;
		slot = domain_slot_of(set, hashes[i]);
		if (set->tags[slot] == domain_tag_of(hashes[i]))
			__builtin_prefetch(&set->recs[slot]);
	}
	/* The name itself: exact, else a tree rooted here. */
	r = domain_set_find(set, hashes[n - 1], name, len, DOMAIN_EXACT, DOMAIN_TREE);
	/* Then its parents, the longest first, for wildcards and trees. */
	for (i = n - 1; r == NULL && i-- > 0;) {
		if (domain_set_probes(set, i, n))
			r = domain_set_find(set, hashes[i], name + starts[i], len - starts[i],
			                    DOMAIN_WILDCARD, DOMAIN_TREE);
	}
	if (r == NULL)
		return 0;
	if (m != NULL)
		domain_set_show(set, r, m);
	return 1;
}

/* Address entries are few (hand-written config), so a scan is enough. */
int
domain_set_match_addr(const struct domain_set *set, const struct addr *addr, struct domain_match *m)
{
	const struct domain_addr_entry *a, *best = NULL;
	struct addr q;
	size_t i;

	addr_unmap(addr, &q);
	for (i = 0; i < set->naddrs; i++) {
		a = &set->addrs[i];
		if ((best == NULL || a->cidr.plen > best->cidr.plen) && addr_in_cidr(&q, &a->cidr))
			best = a;
	}
	if (best == NULL)
		return 0;
	if (m != NULL) {
		m->kind = (enum domain_kind)best->kind;
		m->file = best->file == 0 ? NULL : set->files[best->file - 1];
		m->line = best->line;
		if (best->kind == DOMAIN_ADDR)
			addr_format(&best->cidr.net, m->pattern, sizeof m->pattern);
		else
			addr_cidr_format(&best->cidr, m->pattern, sizeof m->pattern);
	}
	return 1;
}
