/*
 * The matcher behind one policy list (allowlist, blocklist, passthrough):
 * exact names, "*.suffix" wildcards, adblock-style trees (the apex and its
 * subdomains), addresses and CIDRs. Third-party lists reach a million
 * entries, so names live in one byte arena, entries are 16-byte records and
 * one open-addressing table indexes them by name. A lookup hashes every
 * suffix of the query in a single right-to-left pass and probes one slot run
 * per label: O(labels), never O(entries), and it never allocates.
 */
#include <ctype.h>
#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define DOMAIN_MAX_FILES	 UINT16_MAX
#define DOMAIN_ADDR_TEXT	 64

struct domain_entry {
	uint32_t	 off;	/* name bytes in the arena, no NUL */
	uint32_t	 line;
	uint32_t	 next;	/* next entry of the same name + 1; 0: none */
	uint16_t	 file;	/* files[file - 1]; 0: built in */
	uint8_t		 len;
	uint8_t		 kind;
};

struct domain_slot {
	uint32_t	 hash;	/* checked before any string compare */
	uint32_t	 entry;	/* first entry of this name + 1; 0: empty */
};

struct domain_addr_entry {
	struct cidr	 cidr;	/* an address is a /32 or /128 */
	uint32_t	 line;
	uint16_t	 file;
	uint8_t		 kind;
};

struct domain_set {
	char			*arena;
	size_t			 arena_len;
	size_t			 arena_cap;

	struct domain_entry	*entries;
	size_t			 nentries;
	size_t			 entries_cap;

	struct domain_slot	*slots;
	size_t			 nslots;	/* a power of two */
	size_t			 nnames;	/* slots in use */

	/*
	 * Label counts (bit n-1 for n labels, the last bit for 64 and more)
	 * of the wildcard and tree names: a parent suffix whose label count
	 * has no such entry is not probed at all.
	 */
	uint64_t		 parent_labels;

	struct domain_addr_entry *addrs;
	size_t			 naddrs;
	size_t			 addrs_cap;

	char			**files;
	size_t			 nfiles;
};

/* One step of FNV-1a; names are hashed from their last byte backwards. */
static inline uint32_t
domain_hash_step(uint32_t h, unsigned char c)
{
	return (h ^ c) * 16777619u;
}

/* FNV-1a mixes its high bits poorly; the table index uses the low ones. */
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
	set->slots = xcalloc(set->nslots, sizeof *set->slots);
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
	free(set->arena);
	free(set->entries);
	free(set->slots);
	free(set->addrs);
	free(set);
}

size_t
domain_set_count(const struct domain_set *set)
{
	return set->nentries + set->naddrs;
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

/* The slot holding name, or the empty slot where it would go. */
static struct domain_slot *
domain_set_slot(const struct domain_set *set, uint32_t hash, const char *name, size_t len)
{
	size_t mask = set->nslots - 1, i = hash & mask;
	const struct domain_entry *e;
	struct domain_slot *s;

	for (;;) {
		s = &set->slots[i];
		if (s->entry == 0)
			return s;
		if (s->hash == hash) {
			e = &set->entries[s->entry - 1];
			if (e->len == len && memcmp(set->arena + e->off, name, len) == 0)
				return s;
		}
		i = (i + 1) & mask;
	}
}

static void
domain_set_grow(struct domain_set *set)
{
	struct domain_slot *old = set->slots, *s;
	size_t oldn = set->nslots, i, mask;

	set->nslots = oldn * 2;
	set->slots = xcalloc(set->nslots, sizeof *set->slots);
	mask = set->nslots - 1;
	for (i = 0; i < oldn; i++) {
		if (old[i].entry == 0)
			continue;
		s = &set->slots[old[i].hash & mask];
		while (s->entry != 0) {
			if (++s == set->slots + set->nslots)
				s = set->slots;
		}
		*s = old[i];
	}
	free(old);
}

/* Adds a normalised name; a second entry of the same name and kind is dropped. */
static const char *
domain_set_insert(struct domain_set *set, enum domain_kind kind, const char *name, size_t len,
    const char *file, unsigned line)
{
	struct domain_slot *s;
	struct domain_entry *e;
	uint32_t hash, idx, *link;
	long fidx;

	hash = domain_hash(name, len);
	s = domain_set_slot(set, hash, name, len);
	link = &s->entry;
	while (*link != 0) {
		e = &set->entries[*link - 1];
		if (e->kind == kind)
			return NULL;
		link = &e->next;
	}
	if ((fidx = domain_set_intern(set, file)) == -1)
		return "too many list files";
	if (set->arena_len + len > UINT32_MAX || set->nentries >= UINT32_MAX - 1)
		return "too many entries";

	if (set->arena_len + len > set->arena_cap) {
		set->arena_cap = set->arena_cap == 0 ? 4096 : set->arena_cap * 2;
		if (set->arena_cap > UINT32_MAX)
			set->arena_cap = UINT32_MAX;
		set->arena = xreallocarray(set->arena, set->arena_cap, 1);
	}
	if (set->nentries == set->entries_cap) {
		set->entries_cap = set->entries_cap == 0 ? 256 : set->entries_cap * 2;
		set->entries = xreallocarray(set->entries, set->entries_cap, sizeof *set->entries);
	}
	idx = (uint32_t)set->nentries++;
	e = &set->entries[idx];
	e->off = (uint32_t)set->arena_len;
	e->len = (uint8_t)len;
	e->kind = (uint8_t)kind;
	e->file = (uint16_t)fidx;
	e->line = line;
	e->next = 0;
	memcpy(set->arena + set->arena_len, name, len);
	set->arena_len += len;
	if (kind == DOMAIN_WILDCARD || kind == DOMAIN_TREE)
		set->parent_labels |= domain_label_bit(name, len);

	if (s->entry != 0) {
		/* Another kind of the same name: chain it, the slot is taken. */
		*link = idx + 1;
		return NULL;
	}
	s->hash = hash;
	s->entry = idx + 1;
	if (++set->nnames * 2 > set->nslots)
		domain_set_grow(set);
	return NULL;
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
			return "numeric host; write the address as a dotted quad";
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
		return "numeric host; write the address as a dotted quad";
	*outlen = len;
	return NULL;
}

/* libpsl is built with its list on Debian; otherwise load the packaged one. */
static const psl_ctx_t *
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
 * Both sections of the list count, private ones too: "*.github.io" or
 * "*.s3.amazonaws.com" would open the list to every account on the
 * platform, which is the same mistake as "*.com". The default "*" rule
 * applies as well, so an unlisted single label ("*.internal") is a suffix.
 */
static int
domain_is_public_suffix(const char *name)
{
	const psl_ctx_t *psl = domain_psl();

	if (psl == NULL)
		return strchr(name, '.') == NULL;
	return psl_is_public_suffix2(psl, name, PSL_TYPE_ANY);
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
	char text[DOMAIN_ADDR_TEXT];
	int obvious;

	obvious = memchr(s, ':', len) != NULL || memchr(s, '/', len) != NULL || s[0] == '[';
	if (len >= sizeof text) {
		if (!obvious)
			return 0;
		*error = "invalid address";
		return 1;
	}
	memcpy(text, s, len);
	text[len] = '\0';
	*error = NULL;
	memset(c, 0, sizeof *c);
	if (memchr(s, '/', len) != NULL) {
		*kind = DOMAIN_CIDR;
		*error = addr_cidr_parse(text, c);
		return 1;
	}
	*kind = DOMAIN_ADDR;
	if (text[0] == '[') {
		if (len < 3 || text[len - 1] != ']') {
			*error = "invalid address";
			return 1;
		}
		text[len - 1] = '\0';
		if ((*error = addr_parse(text + 1, &c->net)) == NULL && c->net.af != AF_INET6)
			*error = "brackets are for IPv6 addresses";
	} else if ((*error = addr_parse(text, &c->net)) != NULL && !obvious)
		return 0;
	c->plen = c->net.af == AF_INET ? 32 : 128;
	return 1;
}

const char *
domain_set_add(struct domain_set *set, const char *pattern, size_t len, int flags,
    const char *file, unsigned line)
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

	if (kind == DOMAIN_EXACT && domain_parse_addr(pattern, len, &kind, &c, &error)) {
		if (error != NULL)
			return error;
		if (flags & DOMAIN_F_NO_ADDR)
			return "address entries are not allowed in this list";
		return domain_set_add_cidr(set, kind, &c, file, line);
	}
	if ((error = domain_name_normalise(pattern, len, 1, name, &n)) != NULL)
		return error;
	if (kind == DOMAIN_WILDCARD && (flags & DOMAIN_F_ALLOWLIST) && domain_is_public_suffix(name))
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
	size_t n;

	switch (kind) {
	case DOMAIN_EXACT:
	case DOMAIN_WILDCARD:
	case DOMAIN_TREE:
		if (len > 0 && memchr(name, '*', len) != NULL)
			return "'*' is only allowed as a leading \"*.\"";
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
domain_set_show(const struct domain_set *set, const struct domain_entry *e,
    struct domain_match *m)
{
	const char *name = set->arena + e->off;
	int n = e->len;

	m->kind = (enum domain_kind)e->kind;
	m->file = e->file == 0 ? NULL : set->files[e->file - 1];
	m->line = e->line;
	switch (m->kind) {
	case DOMAIN_WILDCARD:
		snprintf(m->pattern, sizeof m->pattern, "*.%.*s", n, name);
		break;
	case DOMAIN_TREE:
		snprintf(m->pattern, sizeof m->pattern, "||%.*s^", n, name);
		break;
	default:
		snprintf(m->pattern, sizeof m->pattern, "%.*s", n, name);
		break;
	}
}

/* The first entry of the chain for name whose kind is a or b, preferring a. */
static const struct domain_entry *
domain_set_find(const struct domain_set *set, uint32_t hash, const char *name, size_t len,
    enum domain_kind a, enum domain_kind b)
{
	const struct domain_slot *s;
	const struct domain_entry *e, *found = NULL;
	uint32_t i;

	s = domain_set_slot(set, hash, name, len);
	for (i = s->entry; i != 0; i = e->next) {
		e = &set->entries[i - 1];
		if (e->kind == a)
			return e;
		if (e->kind == b && found == NULL)
			found = e;
	}
	return found;
}

int
domain_set_match_name(const struct domain_set *set, const char *name, struct domain_match *m)
{
	uint32_t hashes[HOST_NAME_MAXLEN], h = 2166136261u;
	uint16_t starts[HOST_NAME_MAXLEN];
	const struct domain_entry *e;
	size_t len, i, n = 0;

	len = strnlen(name, HOST_NAME_MAXLEN + 1);
	if (len == 0 || len > HOST_NAME_MAXLEN)
		return 0;

	/*
	 * Hashing backwards yields the hash of every suffix on the way; their
	 * slots are prefetched together so the probes that follow overlap
	 * their cache misses instead of paying for them one after another.
	 */
	for (i = len; i-- > 0;) {
		h = domain_hash_step(h, (unsigned char)name[i]);
		if (i == 0 || name[i - 1] == '.') {
			starts[n] = (uint16_t)i;
			hashes[n] = domain_hash_final(h);
			if (i == 0 ||
			    (set->parent_labels & ((uint64_t)1 << (n > 63 ? 63 : n))))
				__builtin_prefetch(&set->slots[hashes[n] & (set->nslots - 1)]);
			n++;
		}
	}
	/* The name itself: exact, else a tree rooted here. */
	e = domain_set_find(set, hashes[n - 1], name, len, DOMAIN_EXACT, DOMAIN_TREE);
	/* Then its parents, the longest first, for wildcards and trees. */
	for (i = n - 1; e == NULL && i-- > 0;) {
		if (!(set->parent_labels & ((uint64_t)1 << (i > 63 ? 63 : i))))
			continue;
		e = domain_set_find(set, hashes[i], name + starts[i], len - starts[i],
		    DOMAIN_WILDCARD, DOMAIN_TREE);
	}
	if (e == NULL)
		return 0;
	if (m != NULL)
		domain_set_show(set, e, m);
	return 1;
}

/* Address entries are few (hand-written config), so a scan is enough. */
int
domain_set_match_addr(const struct domain_set *set, const struct addr *addr,
    struct domain_match *m)
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
