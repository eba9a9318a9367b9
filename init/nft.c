/*
 * The network modes as nftables rules, through libnftables (no shell, no
 * nft binary). One table of the inet family (IPv4 and IPv6 alike) belongs
 * to the launcher; it is replaced in a single transaction, so the payload
 * never runs under half a ruleset, and read back afterwards and compared
 * with what was meant, so a kernel that silently accepted less is caught.
 *
 * strict: in the nat output chain every uid but egressd's has its TCP
 * redirected to the transparent listener and its DNS (UDP and TCP 53) to
 * the resolver, both on loopback; the filter output chain then drops
 * whatever is not loopback (other UDP and QUIC, ICMP, DNS over TLS on 853,
 * raw IP), egressd's uid alone going out. off: the filter chain drops
 * everything that is not loopback, for every uid. practical: no table.
 * Before each drop a rate-limited log rule hands the packet to the NFLOG
 * group egressd reads, so the drops are audited, not only counted. Only
 * packets a process sent are logged ("meta skuid >= 0" does not match a
 * packet without a socket): the kernel's own (a late ACK of a closed
 * redirected connection, multicast listener reports) are dropped quietly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nftables/libnftables.h>

#include "init.h"

/*
 * A port the payload serves the host on (opencode serve, published by the
 * runtime): the replies of connections the host opened may leave. Only
 * established ones: a connection the payload opens from that port is new,
 * and stays dropped (or, in strict mode, redirected to egressd).
 */
static void
nft_rules_serve(const struct nft_rules *r, struct buf *b)
{
	size_t i;

	for (i = 0; i < r->nserve; i++)
		buf_printf(b, "\t\ttcp sport %u ct state established accept\n",
		           (unsigned)r->serve_ports[i]);
}

/*
 * The rules are written in the form `nft list` prints them back
 * (numeric priorities), so the read-back is a line-by-line comparison.
 */
static void
nft_rules_strict(const struct nft_rules *r, struct buf *b)
{
	unsigned uid = (unsigned)r->egress_uid;

	buf_printf(b,
	           "\tchain nat_output {\n"
	           "\t\ttype nat hook output priority -100; policy accept;\n"
	           "\t\toif \"lo\" accept\n"
	           "\t\tmeta skuid %u accept\n"
	           "\t\ttcp dport 853 accept\n"
	           "\t\tudp dport 53 redirect to :%u\n"
	           "\t\ttcp dport 53 redirect to :%u\n"
	           "\t\tmeta l4proto tcp redirect to :%u\n"
	           "\t}\n",
	           uid, r->dns_port, r->dns_port, r->transparent_port);
	/*
	 * After a redirect the packet heads for 127.0.0.1 or ::1 but the
	 * output interface the filter hook sees is still the one first
	 * routed to, hence the loopback address rules. Neighbour discovery
	 * is sent by the kernel with no socket, so no uid: without it
	 * egressd's own IPv6 would stop working. Unprivileged processes
	 * cannot forge it (no raw sockets).
	 */
	buf_printf(b,
	           "\tchain filter_output {\n"
	           "\t\ttype filter hook output priority 0; policy drop;\n"
	           "\t\toif \"lo\" accept\n"
	           "\t\tmeta skuid %u accept\n"
	           "\t\tip daddr 127.0.0.0/8 accept\n"
	           "\t\tip6 daddr ::1 accept\n"
	           "\t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, "
	           "nd-neighbor-advert } accept\n",
	           uid);
	nft_rules_serve(r, b);
	buf_printf(b,
	           "\t\tmeta skuid >= 0 " NFT_LOG_RATE " log prefix \"strict-drop\" group %u\n"
	           "\t\tcounter packets 0 bytes 0 drop comment \"strict: not through egressd\"\n"
	           "\t}\n",
	           NFT_LOG_GROUP);
}

static void
nft_rules_off(const struct nft_rules *r, struct buf *b)
{
	buf_adds(b, "\tchain filter_output {\n"
	            "\t\ttype filter hook output priority 0; policy drop;\n"
	            "\t\toif \"lo\" accept\n"
	            "\t\tip daddr 127.0.0.0/8 accept\n"
	            "\t\tip6 daddr ::1 accept\n");
	nft_rules_serve(r, b);
	buf_printf(b,
	           "\t\tmeta skuid >= 0 " NFT_LOG_RATE " log prefix \"off-drop\" group %u\n"
	           "\t\tcounter packets 0 bytes 0 drop comment \"off: no network\"\n"
	           "\t}\n",
	           NFT_LOG_GROUP);
}

/* The table as `nft list table` shows it; empty in practical mode. */
void
nft_rules_build(const struct nft_rules *r, struct buf *b)
{
	if (r->mode == MODE_PRACTICAL)
		return;
	buf_adds(b, "table inet " NFT_TABLE " {\n");
	if (r->mode == MODE_STRICT)
		nft_rules_strict(r, b);
	else
		nft_rules_off(r, b);
	buf_adds(b, "}\n");
}

/*
 * Runs nft commands in one batch (one kernel transaction). The listing,
 * when asked for, lands in out; a failure leaves nft's own message in err.
 */
int
nft_run(const char *cmds, struct buf *out, char *err, size_t errlen)
{
	struct nft_ctx *ctx;
	const char *msg;
	size_t n;
	int rc;

	if ((ctx = nft_ctx_new(NFT_CTX_DEFAULT)) == NULL) {
		snprintf(err, errlen, "libnftables: cannot create a context");
		return -1;
	}
	nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_NUMERIC_PRIO);
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	rc = nft_run_cmd_from_buffer(ctx, cmds);
	if (rc != 0) {
		msg = nft_ctx_get_error_buffer(ctx);
		if (msg == NULL || *msg == '\0')
			msg = "failed";
		n = strlen(msg);
		while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
			n--;
		snprintf(err, errlen, "%.*s", (int)n, msg);
	} else if (out != NULL)
		buf_adds(out, nft_ctx_get_output_buffer(ctx));
	nft_ctx_free(ctx);
	return rc == 0 ? 0 : -1;
}

/*
 * Replaces the launcher's table in one transaction: "add" makes sure the
 * "delete" has something to delete, and the new table follows, so the
 * ruleset goes from old to new with no moment in between.
 */
int
nft_rules_apply(const struct nft_rules *r, char *err, size_t errlen)
{
	struct buf b;
	int rc;

	buf_init(&b);
	buf_adds(&b, "add table inet " NFT_TABLE "\ndelete table inet " NFT_TABLE "\n");
	nft_rules_build(r, &b);
	rc = nft_run(buf_cstr(&b), NULL, err, errlen);
	buf_free(&b);
	return rc;
}

/* The launcher's table, gone; quiet when it was not there. */
int
nft_rules_remove(char *err, size_t errlen)
{
	return nft_run("add table inet " NFT_TABLE "\ndelete table inet " NFT_TABLE "\n", NULL, err,
	               errlen);
}

/* Next non-blank line of *p, trimmed, with counter values zeroed. */
static int
nft_next_line(const char **p, char *line, size_t len)
{
	const char *s, *e;
	char *c;
	size_t n;

	for (;;) {
		s = *p;
		if (*s == '\0')
			return 0;
		e = strchr(s, '\n');
		*p = e != NULL ? e + 1 : s + strlen(s);
		if (e == NULL)
			e = s + strlen(s);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (s == e)
			continue;
		n = (size_t)(e - s);
		if (n >= len)
			n = len - 1;
		memcpy(line, s, n);
		line[n] = '\0';
		if ((c = strstr(line, "counter packets ")) != NULL) {
			char *bytes = strstr(c, " bytes ");
			char *rest;

			if (bytes != NULL) {
				rest = bytes + 7;
				while (*rest >= '0' && *rest <= '9')
					rest++;
				memmove(c + 8, rest, strlen(rest) + 1);
			}
		}
		return 1;
	}
}

/*
 * Compares a listing of the table with the rules meant; NULL when they
 * are the same, else what differs. Counters are ignored.
 */
const char *
nft_rules_compare(const struct nft_rules *r, const char *listing)
{
	static char why[512];
	char want[512], got[512];
	const char *pw, *pg;
	struct buf b;
	int hw, hg;

	buf_init(&b);
	nft_rules_build(r, &b);
	pw = buf_cstr(&b);
	pg = listing;
	for (;;) {
		hw = nft_next_line(&pw, want, sizeof want);
		hg = nft_next_line(&pg, got, sizeof got);
		if (!hw && !hg)
			break;
		if (hw != hg || strcmp(want, got) != 0) {
			snprintf(why, sizeof why, "expected \"%s\", found \"%s\"",
			         hw ? want : "(end)", hg ? got : "(end)");
			buf_free(&b);
			return why;
		}
	}
	buf_free(&b);
	return NULL;
}

/* Reads the table back from the kernel and checks it is what was meant. */
int
nft_rules_verify(const struct nft_rules *r, char *err, size_t errlen)
{
	struct buf out;
	const char *why;
	int rc = -1;

	buf_init(&out);
	if (r->mode == MODE_PRACTICAL) {
		/* No table is the whole ruleset of this mode. */
		if (nft_run("list table inet " NFT_TABLE "\n", &out, err, errlen) == 0)
			snprintf(err, errlen, "table inet %s is present in practical mode",
			         NFT_TABLE);
		else
			rc = 0;
		goto out;
	}
	if (nft_run("list table inet " NFT_TABLE "\n", &out, err, errlen) == -1)
		goto out;
	if ((why = nft_rules_compare(r, buf_cstr(&out))) != NULL) {
		snprintf(err, errlen, "the rules read back differ: %s", why);
		goto out;
	}
	rc = 0;
out:
	buf_free(&out);
	return rc;
}
