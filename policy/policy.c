/*
 * The decision engine. A policy is an immutable, reference-counted snapshot
 * compiled from a merged configuration: the host lists become matchers, the
 * third-party list files are loaded, and from then on decisions only read
 * it. The proxy, the resolver and policyctl all decide through
 * policy_decide() (and, for the addresses a name resolves to,
 * policy_check_addr()), so they cannot disagree. Here is the order of the
 * decision (DESIGN §5); its step 4, the method, GraphQL and WebSocket
 * rules of practical mode, is practical.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

/* "file:line", or "builtin" without a file; out has room for a line number. */
static void
policy_source(const char *file, unsigned line, char *out, size_t len)
{
	size_t n;

	if (file == NULL) {
		str_copy(out, len, "builtin");
		return;
	}
	n = str_copy(out, len - 22, file);
	out[n++] = ':';
	str_u64(out + n, line);
}

void
policy_loc_format(const struct cfg_loc *loc, char *out, size_t len)
{
	policy_source(loc->file, loc->line, out, len);
}

static void
policy_match_source(const struct domain_match *m, char *out, size_t len)
{
	policy_source(m->file, m->line, out, len);
}

/* Compile one config host list into a matcher; errors name the entry. */
static int
policy_build_set(struct domain_set *set, const struct cfg_list *list, int flags, const char *what,
                 struct buf *errs)
{
	const struct cfg_item *it;
	const char *err;
	size_t i;
	int rc = 0;

	for (i = 0; i < list->n; i++) {
		it = &list->items[i];
		err = domain_set_add(set, it->value, strlen(it->value), flags, it->loc.file,
		                     it->loc.line);
		if (err == NULL)
			continue;
		buf_printf(errs, "%s:%u:%u: %s entry \"%s\": %s\n",
		           it->loc.file ? it->loc.file : "builtin", it->loc.line, it->loc.col, what,
		           it->value, err);
		rc = -1;
	}
	return rc;
}

/* Allowlist wildcards over shared platforms: accepted, but said out loud. */
static void
policy_warn_shared(const struct cfg_list *list, struct buf *warn)
{
	const struct cfg_item *it;
	size_t i;

	for (i = 0; i < list->n; i++) {
		it = &list->items[i];
		if (!domain_wildcard_shared(it->value))
			continue;
		buf_printf(warn,
		           "%s:%u:%u: allowlist entry \"%s\" covers a platform where anyone can "
		           "publish: it lets every tenant receive any method; list the exact hosts "
		           "you need instead\n",
		           it->loc.file ? it->loc.file : "builtin", it->loc.line, it->loc.col,
		           it->value);
	}
}

/* Load network.blocklistFiles into the blocklist; unreadable files are errors. */
static int
policy_load_lists(struct policy *p, struct buf *errs, struct buf *warn)
{
	const struct cfg_list *files = &p->cfg->blocklist_files;
	struct listfile_stats st;
	const struct cfg_item *it;
	size_t i, j, shown;
	int rc = 0;

	for (i = 0; i < files->n; i++) {
		it = &files->items[i];
		memset(&st, 0, sizeof st);
		if (listfile_load(p->block, it->value, &st) == -1) {
			buf_printf(errs, "%s:%u:%u: blocklistFiles entry \"%s\": %s\n",
			           it->loc.file ? it->loc.file : "builtin", it->loc.line,
			           it->loc.col, it->value, st.error);
			rc = -1;
			continue;
		}
		if (st.invalid == 0)
			continue;
		buf_printf(warn, "%s: %lu entries, %lu invalid line%s ignored (line", it->value,
		           st.entries, st.invalid, st.invalid == 1 ? "" : "s");
		shown = st.invalid < LISTFILE_SHOW_INVALID ? st.invalid : LISTFILE_SHOW_INVALID;
		for (j = 0; j < shown; j++)
			buf_printf(warn, "%s%lu", j == 0 ? " " : ", ", st.first_invalid[j]);
		buf_printf(warn, "%s)\n", st.invalid > shown ? ", ..." : "");
	}
	return rc;
}

/*
 * Compile cfg into a policy. The policy owns cfg from here on, whether or
 * not this succeeds. Errors are appended to errs as FILE:LINE:COL lines.
 */
struct policy *
policy_new(struct config *cfg, struct buf *errs)
{
	struct policy *p;
	struct buf warn;
	int rc = 0;

	p = xcalloc(1, sizeof *p);
	p->refcnt = 1;
	p->cfg = cfg;
	p->allow = domain_set_new();
	p->block = domain_set_new();
	p->passthrough = domain_set_new();
	buf_init(&warn);

	if (policy_build_set(p->allow, &cfg->allowlist, DOMAIN_F_ALLOWLIST, "allowlist", errs) ==
	    -1)
		rc = -1;
	policy_warn_shared(&cfg->allowlist, &warn);
	if (policy_build_set(p->block, &cfg->blocklist, 0, "blocklist", errs) == -1)
		rc = -1;
	if (policy_build_set(p->passthrough, &cfg->passthrough, DOMAIN_F_NO_ADDR, "passthrough",
	                     errs) == -1)
		rc = -1;
	if (policy_load_lists(p, errs, &warn) == -1)
		rc = -1;
	p->warnings = buf_release(&warn);
	if (rc == -1) {
		policy_unref(p);
		return NULL;
	}
	return p;
}

struct policy *
policy_ref(struct policy *p)
{
	p->refcnt++;
	return p;
}

void
policy_unref(struct policy *p)
{
	if (p == NULL || --p->refcnt > 0)
		return;
	domain_set_free(p->allow);
	domain_set_free(p->block);
	domain_set_free(p->passthrough);
	config_free(p->cfg);
	free(p->warnings);
	free(p);
}

enum policy_mode
policy_mode(const struct policy *p)
{
	return p->cfg->mode;
}

const struct config *
policy_config(const struct policy *p)
{
	return p->cfg;
}

/* Lines about list files that loaded with invalid lines; "" when none. */
const char *
policy_warnings(const struct policy *p)
{
	return p->warnings;
}

/* Whether HTTPS to host is tunnelled without interception; by name only. */
int
policy_passthrough(const struct policy *p, const struct host *h, struct domain_match *m)
{
	if (h->kind != HOST_NAME)
		return 0;
	return domain_set_match_name(p->passthrough, h->name, m);
}

const char *
policy_action_name(enum policy_action a)
{
	switch (a) {
	case ACTION_ALLOW:
		return "allow";
	case ACTION_FLAG:
		return "flag";
	case ACTION_BLOCK:
		break;
	}
	return "block";
}

/* The list's name in explain's and the resolver's text; NULL for none. */
const char *
policy_list_name(enum policy_list l)
{
	switch (l) {
	case POLICY_LIST_NONE:
		break;
	case POLICY_LIST_ALLOWLIST:
		return "allowlist";
	case POLICY_LIST_BLOCKLIST:
		return "blocklist";
	case POLICY_LIST_DOH:
		return "doh";
	case POLICY_LIST_MODE:
		return "mode";
	case POLICY_LIST_METHODS:
		return "methods";
	case POLICY_LIST_GRAPHQL:
		return "graphql";
	case POLICY_LIST_WEBSOCKET:
		return "websocket";
	case POLICY_LIST_ADDRESS:
		return "address";
	case POLICY_LIST_NAME:
		return "name";
	}
	return NULL;
}

const char *
policy_mode_note(enum policy_mode m)
{
	switch (m) {
	case MODE_PRACTICAL:
		return "practical mode blocks normal DNS/proxy traffic but cannot guarantee "
		       "direct-IP blocking";
	case MODE_STRICT:
		return "strict mode: only allowlisted hosts are reachable, and all egress is "
		       "forced through egressd";
	case MODE_OFF:
		break;
	}
	return "off mode: nothing leaves the sandbox";
}

/* reason = subject + text, without a format parse on the common paths. */
void
policy_reason(struct decision *d, const char *subject, const char *text)
{
	size_t n = str_copy(d->reason, sizeof d->reason, subject);

	str_copy(d->reason + n, sizeof d->reason - n, text);
}

void
policy_decision_set(struct decision *d, enum policy_action action, const char *rule,
                    enum policy_list list)
{
	d->action = action;
	str_copy(d->rule, sizeof d->rule, rule);
	d->list = list;
}

static void
policy_decision_match(struct decision *d, enum policy_action action, const struct domain_match *m,
                      enum policy_list list)
{
	policy_decision_set(d, action, m->pattern, list);
	policy_match_source(m, d->source, sizeof d->source);
}

/* A request that breaks the practical-mode rules: block or flag it. */
void
policy_violation(const struct policy *p, struct decision *d, const char *rule,
                 enum policy_list list, const struct cfg_loc *loc)
{
	enum policy_action a;
	size_t n;

	a = p->cfg->on_violation == VIOLATION_FLAG ? ACTION_FLAG : ACTION_BLOCK;
	policy_decision_set(d, a, rule, list);
	policy_loc_format(loc, d->source, sizeof d->source);
	if (a == ACTION_FLAG) {
		n = strlen(d->reason);
		snprintf(d->reason + n, sizeof d->reason - n, "; let through (onViolation: flag)");
	}
}

/*
 * One client message on a WebSocket allowed with ws_inspect: a query or
 * a subscription goes up; a mutation, a document that is not provably
 * a query, or anything that is not a client message of the subprotocol
 * is a violation. Control messages (connection_init, ping, complete...)
 * are allowed without a rule.
 */
void
policy_decide_ws_message(const struct policy *p, const struct gql_ws_msg *m, struct decision *d)
{
	const struct config *cfg = p->cfg;
	const char *what;

	memset(d, 0, sizeof *d);
	d->action = ACTION_ALLOW;
	if (m->kind == GQL_WS_CONTROL)
		return;
	if (m->kind == GQL_WS_INVALID) {
		snprintf(d->reason, sizeof d->reason, "WebSocket message refused: %s", m->reason);
		policy_violation(p, d, "websocket-message", POLICY_LIST_WEBSOCKET, &cfg->mode_loc);
		return;
	}
	d->graphql_present = 1;
	d->gql = m->gql;
	what = graphql_op_name(m->gql.op);
	if (m->gql.op == GQL_QUERY || m->gql.op == GQL_SUBSCRIPTION) {
		policy_decision_set(d, ACTION_ALLOW, "websocket-graphql", POLICY_LIST_WEBSOCKET);
		policy_loc_format(&cfg->allow_graphql_queries_loc, d->source, sizeof d->source);
		snprintf(d->reason, sizeof d->reason, "GraphQL %s%s%s over WebSocket is read-only",
		         what, m->gql.name[0] ? " " : "", m->gql.name);
		return;
	}
	if (m->gql.op == GQL_MUTATION)
		snprintf(d->reason, sizeof d->reason,
		         "GraphQL mutation%s%s over WebSocket is a write",
		         m->gql.name[0] ? " " : "", m->gql.name);
	else
		snprintf(d->reason, sizeof d->reason,
		         "GraphQL over WebSocket not provably a query (%s)",
		         m->gql.reason ? m->gql.reason : "unparsable");
	policy_violation(p, d, m->gql.op == GQL_MUTATION ? "graphql-mutation" : "graphql-not-query",
	                 POLICY_LIST_WEBSOCKET, &cfg->allow_graphql_queries_loc);
}

/*
 * DESIGN §5 steps 1-4 (with mode off decided first): the host as
 * written, the method and (for GraphQL) the body.
 */
static void
policy_decide_host(const struct policy *p, const struct policy_request *req, struct decision *d)
{
	const struct config *cfg = p->cfg;
	const struct host *h = req->host;
	struct domain_match m;
	const char *doh, *provider;
	int hit, tunnel;

	memset(d, 0, sizeof *d);
	tunnel = req->method != NULL && strcmp(req->method, "CONNECT") == 0;
	if (req->method != NULL && !tunnel) {
		graphql_classify_request(req->method, req->content_type, req->body, req->body_len,
		                         req->body_truncated, req->query, &d->gql);
		d->graphql_present = d->gql.op != GQL_NONE;
		if (req->body_encoded && req->body_len > 0) {
			/* Compressed bytes could hold anything a server inflates. */
			d->gql.op = GQL_UNKNOWN;
			d->gql.name[0] = '\0';
			d->gql.reason = "body has a Content-Encoding and cannot be classified";
			d->gql.pure = 0;
			d->gql.impure = "the body has a Content-Encoding";
			d->graphql_present = 1;
		}
	}

	/*
	 * Off means no network at all: it is decided before the allowlist,
	 * because the payload can still reach egressd over loopback in that
	 * mode and an allowlisted host must not become a way out.
	 */
	if (cfg->mode == MODE_OFF) {
		policy_decision_set(d, ACTION_BLOCK, "mode-off", POLICY_LIST_MODE);
		policy_loc_format(&cfg->mode_loc, d->source, sizeof d->source);
		snprintf(d->reason, sizeof d->reason, "network mode is off: nothing leaves");
		return;
	}

	/* 1. The allowlist wins over everything else, all methods. */
	if (h->kind == HOST_NAME)
		hit = domain_set_match_name(p->allow, h->name, &m);
	else
		hit = domain_set_match_addr(p->allow, &h->addr, &m);
	if (hit) {
		policy_decision_match(d, ACTION_ALLOW, &m, POLICY_LIST_ALLOWLIST);
		d->name_allowlisted = 1;
		d->name_exact_allow = h->kind == HOST_NAME && m.kind == DOMAIN_EXACT;
		policy_reason(d, h->name, " is on the allowlist (all methods)");
		return;
	}

	/* 2. The blocklist. */
	if (h->kind == HOST_NAME)
		hit = domain_set_match_name(p->block, h->name, &m);
	else
		hit = domain_set_match_addr(p->block, &h->addr, &m);
	if (hit) {
		policy_decision_match(d, ACTION_BLOCK, &m, POLICY_LIST_BLOCKLIST);
		policy_reason(d, h->name, " is on the blocklist");
		return;
	}

	/*
	 * 2b. Well-known DNS-over-HTTPS services, by name or, for an
	 * address literal, by their published resolver addresses: a
	 * resolver the policy cannot see into. Only the allowlist
	 * overrides this.
	 */
	if (cfg->block_doh_providers && doh_match(h, &doh, &provider)) {
		policy_decision_set(d, ACTION_BLOCK, "doh-provider", POLICY_LIST_DOH);
		str_copy(d->source, sizeof d->source, "builtin");
		if (provider != NULL)
			snprintf(d->reason, sizeof d->reason,
			         "%s is an address of the %s DNS service (built-in list entry %s); "
			         "network.blockDohProviders: false turns the list off",
			         h->name, provider, doh);
		else
			snprintf(d->reason, sizeof d->reason,
			         "%s is a DNS-over-HTTPS service (built-in list entry %s); "
			         "network.blockDohProviders: false turns the list off",
			         h->name, doh);
		return;
	}

	/* 3. Strict mode denies by default. */
	if (cfg->mode == MODE_STRICT) {
		policy_decision_set(d, ACTION_BLOCK, "strict-default-deny", POLICY_LIST_MODE);
		policy_loc_format(&cfg->mode_loc, d->source, sizeof d->source);
		snprintf(d->reason, sizeof d->reason,
		         "strict mode: only allowlisted hosts are reachable");
		return;
	}

	/*
	 * 4. Practical mode: read-only methods and GraphQL queries. A
	 * tunnel to a host no list names is allowed on any port because the
	 * proxy intercepts it: HTTPS on 8443 is still HTTPS, the method rules
	 * decide each request inside, and a tunnel whose first bytes are not
	 * a TLS ClientHello (SSH, SMTP, a database) is cut there.
	 */
	if (req->method == NULL || tunnel) {
		policy_decision_set(d, ACTION_ALLOW, "unlisted-host", POLICY_LIST_MODE);
		policy_loc_format(&cfg->mode_loc, d->source, sizeof d->source);
		policy_reason(d, h->name,
		              tunnel
		                  ? " is not listed; the tunnel is intercepted and practical "
		                    "mode checks each request's method inside"
		                  : " is not listed; practical mode checks each request's method");
		return;
	}
	/*
	 * An upgrade must pass the method rules first (its overrides, a
	 * document in its URL), then the WebSocket rule.
	 */
	practical_decide(p, req, d);
	if (d->action == ACTION_ALLOW)
		practical_upgrade(p, req, d);
}

/*
 * Decide a request: steps 1-4 on its host as written, its method and (for
 * GraphQL) its body, then step 5 when the host is an address literal, the
 * address connected to. A name's addresses are known only after
 * resolution: the proxy checks each with policy_addr_allowed() and words
 * a refusal with policy_check_addr(). A request without a method (a DNS
 * name) connects nowhere, so step 5 does not apply to it. The proxy,
 * policyctl explain and the tests all decide through here.
 */
void
policy_decide(const struct policy *p, const struct policy_request *req, struct decision *d)
{
	policy_decide_host(p, req, d);
	d->body_matters = d->list == POLICY_LIST_METHODS || d->list == POLICY_LIST_GRAPHQL;
	if (req->method != NULL && req->host->kind == HOST_ADDR)
		policy_check_addr(p, &req->host->addr, d);
}

/*
 * Step 5: the address actually connected to (after resolution, so DNS
 * rebinding cannot dodge it). Blocklist address entries apply unless the
 * name was allowlisted, then the private-address guard: lifted by an
 * allowlist address entry covering the address, or an exact-name
 * allowlist entry for the requested host; metadata addresses yield only
 * to an address entry. d holds policy_decide()'s answer and is updated.
 */
void
policy_check_addr(const struct policy *p, const struct addr *addr, struct decision *d)
{
	struct domain_match m;
	struct addr a;
	const char *special;
	char text[64];

	if (d->action == ACTION_BLOCK || policy_addr_allowed(p, addr, d))
		return;
	addr_unmap(addr, &a);
	addr_format(&a, text, sizeof text);
	if (!domain_set_match_addr(p->allow, &a, NULL) && !d->name_allowlisted &&
	    domain_set_match_addr(p->block, &a, &m)) {
		policy_decision_match(d, ACTION_BLOCK, &m, POLICY_LIST_BLOCKLIST);
		snprintf(d->reason, sizeof d->reason, "destination address %s is on the blocklist",
		         text);
		return;
	}
	special = addr_special(&a);
	policy_decision_set(d, ACTION_BLOCK, "private-address", POLICY_LIST_ADDRESS);
	str_copy(d->source, sizeof d->source, "builtin");
	if (addr_is_metadata(&a))
		snprintf(d->reason, sizeof d->reason,
		         "destination %s is a cloud metadata address; only an allowlist address "
		         "entry lifts this",
		         text);
	else
		snprintf(
		    d->reason, sizeof d->reason,
		    "destination %s is not globally reachable (%s); an allowlist address entry "
		    "or an exact-name allowlist entry lifts this",
		    text, special);
}

/*
 * Whether step 5 lets a request with decision d reach addr, without
 * touching d: the check the proxy makes for every candidate and pooled
 * address, where only a refusal needs its words. A blocked decision
 * reaches nothing.
 */
int
policy_addr_allowed(const struct policy *p, const struct addr *addr, const struct decision *d)
{
	struct addr a;
	int addr_allowed;

	if (d->action == ACTION_BLOCK)
		return 0;
	addr_unmap(addr, &a);
	addr_allowed = domain_set_match_addr(p->allow, &a, NULL);
	if (!addr_allowed && !d->name_allowlisted && domain_set_match_addr(p->block, &a, NULL))
		return 0;
	if (addr_allowed || addr_special(&a) == NULL)
		return 1;
	return d->name_exact_allow && !addr_is_metadata(&a);
}
