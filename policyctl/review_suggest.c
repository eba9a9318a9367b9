/*
 * `policyctl audit --suggest`: a YAML fragment for .opencode-sandbox.yaml
 * whose network.allowlist would let through what the session had blocked
 * or flagged. It is a starting point a person edits, never applied by
 * itself, so each entry says how many requests it covers. Hosts are
 * grouped into one "*.suffix" entry only where several of them share a
 * registrable domain (libpsl), so a wildcard never spans a public suffix
 * and never a platform of the list's private section (each tenant of
 * github.io is its own registrable domain). Every entry is checked with
 * the very function the config loader uses, so the fragment always loads.
 * Nothing is ever proposed that would open what the private-address guard
 * protects: not an address that is not globally reachable (loopback,
 * RFC 1918, link-local, cloud metadata, ...), and not an exact name the
 * guard blocked (an exact entry lifts the guard for that name). The
 * fragment lists those hosts in a comment and says why.
 */
#include <stdlib.h>
#include <string.h>

#include <libpsl.h>

#include "review_int.h"

#define REVIEW_SUGGEST_NAMES 3  /* hosts named in an entry's comment */
#define REVIEW_SUGGEST_GUARD 10 /* hosts the guard protects named in the fragment */

struct review_entry {
	char pattern[HOST_NAME_MAXLEN + 3];
	uint64_t n;
	uint64_t blocked;
	uint64_t flagged;
	struct review_host *hosts[REVIEW_SUGGEST_NAMES];
	size_t nhosts;
	const char *rule;
};

struct review_collect {
	struct review_tally viol;  /* blocks and flags an allowlist entry lifts */
	struct review_tally exact; /* ... of which the private-address guard blocked */
};

/* A host left out because an entry would open what the address guard protects. */
struct review_guarded {
	struct review_host *host;
	char why[128];
};

/*
 * Mode off blocks even the allowlist; reload events name no host; a packet
 * the mode's rules dropped (UDP, QUIC, ICMP) no allowlist entry lets out.
 * The private-address guard yields to an exact name, never to a wildcard.
 */
static void
review_suggest_cb(const struct review_event *ev, void *arg)
{
	struct review_collect *c = arg;

	if ((ev->act != REVIEW_ACT_BLOCK && ev->act != REVIEW_ACT_FLAG) || ev->host == NULL)
		return;
	if (ev->rule != NULL && strcmp(ev->rule, "mode-off") == 0)
		return;
	if (strcmp(ev->event, "policy") == 0 || strcmp(ev->event, "daemon") == 0 ||
	    strcmp(ev->event, "packet") == 0)
		return;
	review_tally_add(&c->viol, ev);
	if (ev->rule != NULL && strcmp(ev->rule, "private-address") == 0)
		review_tally_add(&c->exact, ev);
}

static int
review_entry_cmp(const void *a, const void *b)
{
	const struct review_entry *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->pattern, y->pattern);
}

/* Whether the config loader takes pattern as an allowlist entry. */
static int
review_entry_valid(const char *pattern)
{
	struct domain_set *set = domain_set_new();
	int ok;

	ok = domain_set_add(set, pattern, strlen(pattern), DOMAIN_F_ALLOWLIST, NULL, 0) == NULL;
	domain_set_free(set);
	return ok;
}

static void
review_entry_add(struct review_entry *e, struct review_host *h)
{
	e->n += h->count[REVIEW_ACT_BLOCK] + h->count[REVIEW_ACT_FLAG];
	e->blocked += h->count[REVIEW_ACT_BLOCK];
	e->flagged += h->count[REVIEW_ACT_FLAG];
	if (e->nhosts < REVIEW_SUGGEST_NAMES)
		e->hosts[e->nhosts] = h;
	if (e->rule == NULL)
		e->rule = h->rule;
	e->nhosts++;
}

/* The registrable domain a host may be grouped under, or NULL. */
static const char *
review_group_of(const psl_ctx_t *psl, const struct review_tally *exact, const char *name)
{
	const char *reg;

	if (psl == NULL || review_tally_find(exact, name) != NULL)
		return NULL;
	if ((reg = psl_registrable_domain(psl, name)) == NULL || strcmp(reg, name) == 0)
		return NULL;
	return reg;
}

/*
 * Why no entry may be proposed for a host the address guard protects, or
 * NULL: an address that is not globally reachable (no entry at all: an
 * address entry is exactly what lifts the guard), or a name the guard
 * blocked (an exact entry would lift it for that name).
 */
static const char *
review_guarded_why(const struct review_collect *c, const struct host *hp, char *out, size_t len)
{
	const char *special;

	if (hp->kind == HOST_ADDR) {
		if ((special = addr_special(&hp->addr)) == NULL)
			return NULL;
		if (addr_is_metadata(&hp->addr))
			snprintf(out, len, "a cloud metadata address");
		else
			snprintf(out, len, "not globally reachable (%s)", special);
		return out;
	}
	if (review_tally_find(&c->exact, hp->name) == NULL)
		return NULL;
	snprintf(out, len,
	         "blocked by rule private-address: an exact entry would let it reach the "
	         "internal address it resolved to");
	return out;
}

/*
 * Turn the hosts into entries: a registrable domain shared by two or more
 * hosts becomes "*.domain" (its apex, if blocked too, stays an entry of its
 * own: a wildcard does not match it); every other host is exact. Hosts
 * the loader would refuse are counted in *skipped; hosts the address guard
 * protects go to guarded (room for every host), counted in *nguarded.
 */
static struct review_entry *
review_entries(struct review_collect *c, size_t *count, uint64_t *skipped,
               struct review_guarded *guarded, size_t *nguarded)
{
	const psl_ctx_t *psl = domain_psl();
	struct review_host **v = review_tally_sorted(&c->viol);
	struct review_entry *e;
	const char **group;
	struct host hp;
	char why[128];
	size_t i, j, n = 0, nv;

	for (nv = 0; v[nv] != NULL; nv++)
		;
	e = xcalloc(nv + 1, sizeof *e);
	group = xcalloc(nv + 1, sizeof *group);
	for (i = 0; i < nv; i++) {
		if (host_parse(v[i]->name, strlen(v[i]->name), &hp) != NULL ||
		    strcmp(hp.name, v[i]->name) != 0 || !review_entry_valid(hp.name)) {
			*skipped += v[i]->count[REVIEW_ACT_BLOCK] + v[i]->count[REVIEW_ACT_FLAG];
			v[i] = NULL;
			continue;
		}
		if (review_guarded_why(c, &hp, why, sizeof why) != NULL) {
			guarded[*nguarded].host = v[i];
			str_copy(guarded[*nguarded].why, sizeof guarded[*nguarded].why, why);
			(*nguarded)++;
			v[i] = NULL;
			continue;
		}
		if (hp.kind == HOST_NAME)
			group[i] = review_group_of(psl, &c->exact, v[i]->name);
	}
	for (i = 0; i < nv; i++) {
		if (v[i] == NULL)
			continue;
		for (j = i + 1; group[i] != NULL && j < nv; j++)
			if (v[j] != NULL && group[j] != NULL && strcmp(group[i], group[j]) == 0)
				break;
		snprintf(e[n].pattern, sizeof e[n].pattern, "*.%s", group[i] ? group[i] : "");
		if (group[i] == NULL || j == nv || !review_entry_valid(e[n].pattern)) {
			str_copy(e[n].pattern, sizeof e[n].pattern, v[i]->name);
			review_entry_add(&e[n++], v[i]);
			v[i] = NULL;
			continue;
		}
		for (j = i; j < nv; j++) {
			if (v[j] == NULL || group[j] == NULL || strcmp(group[i], group[j]) != 0)
				continue;
			review_entry_add(&e[n], v[j]);
			if (j != i)
				v[j] = NULL;
		}
		v[i] = NULL;
		n++;
	}
	qsort(e, n, sizeof *e, review_entry_cmp);
	free(group);
	free(v);
	*count = n;
	return e;
}

/* Text for a YAML comment: printable ASCII only, nothing that ends it. */
static void
review_comment(struct buf *b, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s != NULL && s[i] != '\0' && i < max; i++)
		buf_addc(b, s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
	if (s != NULL && i == max && s[i] != '\0')
		buf_adds(b, "...");
}

static void
review_entry_print(struct buf *b, const struct review_entry *e)
{
	size_t i;

	buf_printf(b, "    - \"%s\" # %llu request%s (%llu blocked, %llu flagged)", e->pattern,
	           (unsigned long long)e->n, e->n == 1 ? "" : "s", (unsigned long long)e->blocked,
	           (unsigned long long)e->flagged);
	if (e->pattern[0] == '*') {
		buf_printf(b, " to %zu hosts: ", e->nhosts);
		for (i = 0; i < e->nhosts && i < REVIEW_SUGGEST_NAMES; i++)
			buf_printf(b, "%s%s", i > 0 ? ", " : "", e->hosts[i]->name);
		if (e->nhosts > REVIEW_SUGGEST_NAMES)
			buf_adds(b, ", ...");
	}
	if (e->rule != NULL) {
		buf_adds(b, "; rule ");
		review_comment(b, e->rule, 80);
	}
	buf_addc(b, '\n');
}

/* The hosts left out for the address guard's sake, with the reason for each. */
static void
review_guarded_print(struct buf *b, const struct review_guarded *g, size_t n)
{
	uint64_t k;
	size_t i;

	if (n == 0)
		return;
	buf_adds(b, "# Not suggested: an allowlist entry would open what the private-address "
	            "guard protects\n# (internal and cloud metadata addresses):\n");
	for (i = 0; i < n && i < REVIEW_SUGGEST_GUARD; i++) {
		k = g[i].host->count[REVIEW_ACT_BLOCK] + g[i].host->count[REVIEW_ACT_FLAG];
		buf_adds(b, "#   ");
		review_comment(b, g[i].host->name, 80);
		buf_printf(b, ": %llu request%s; %s\n", (unsigned long long)k, k == 1 ? "" : "s",
		           g[i].why);
	}
	if (n > REVIEW_SUGGEST_GUARD)
		buf_printf(b, "#   ... and %zu more\n", n - REVIEW_SUGGEST_GUARD);
}

/* Write the fragment; 0, or -1 when the input cannot be read. */
int
review_suggest(FILE *in, FILE *out, const struct review_opts *o)
{
	struct review_collect c;
	struct review_tally all;
	struct review_guarded *guarded;
	struct review_entry *e;
	struct buf b;
	uint64_t skipped = 0, total;
	size_t n, i, nguarded = 0;
	int rc = -1;

	review_tally_init(&all, o->name);
	review_tally_init(&c.viol, o->name);
	review_tally_init(&c.exact, o->name);
	buf_init(&b);
	if (review_scan(in, o, &all, review_suggest_cb, &c) == -1)
		goto out;
	if (all.bad > 0)
		fprintf(o->err, "policyctl: %s: %lu bad line%s skipped (first: line %lu)\n",
		        o->name, all.bad, all.bad == 1 ? "" : "s", all.bad_lines[0]);
	guarded = xcalloc(c.viol.nhosts + 1, sizeof *guarded);
	e = review_entries(&c, &n, &skipped, guarded, &nguarded);
	total = c.viol.count[REVIEW_ACT_BLOCK] + c.viol.count[REVIEW_ACT_FLAG];
	buf_adds(&b, "# Suggested by policyctl audit --suggest from ");
	review_comment(&b, o->name, 200);
	buf_printf(&b,
	           "\n# %llu blocked and %llu flagged requests to %zu hosts. Review each entry "
	           "before use:\n# an allowlist entry lets every method through to the hosts it "
	           "matches.\n",
	           (unsigned long long)c.viol.count[REVIEW_ACT_BLOCK],
	           (unsigned long long)c.viol.count[REVIEW_ACT_FLAG], c.viol.nhosts);
	if (skipped > 0)
		buf_printf(&b,
		           "# %llu request%s to hosts that cannot be allowlisted %s left out.\n",
		           (unsigned long long)skipped, skipped == 1 ? "" : "s",
		           skipped == 1 ? "is" : "are");
	review_guarded_print(&b, guarded, nguarded);
	if (n == 0)
		buf_adds(&b, total == 0 ? "# Nothing was blocked or flagged.\n" : "");
	buf_printf(&b, "network:\n  allowlist:%s\n", n == 0 ? " []" : "");
	for (i = 0; i < n; i++)
		review_entry_print(&b, &e[i]);
	fwrite(b.data, 1, b.len, out);
	free(e);
	free(guarded);
	rc = 0;
out:
	buf_free(&b);
	review_tally_free(&c.exact);
	review_tally_free(&c.viol);
	review_tally_free(&all);
	return rc;
}
