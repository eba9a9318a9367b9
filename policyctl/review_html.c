/*
 * `policyctl audit --html FILE`: the summary as one self-contained page
 * for people who would rather look than read: the overview, a per-host
 * table sorted by clicking a column, a timeline of requests coloured by
 * action, and the list of blocks and flags. Styles and scripts are inline
 * and a Content-Security-Policy forbids loading anything, so the page
 * works offline and cannot leak what it shows. Every string of the log is
 * untrusted: it is HTML-escaped in markup and, in the embedded data,
 * JSON-escaped with '<', '>' and '&' as \u escapes so no value can close
 * the script element; the script only ever sets textContent.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "review_int.h"

#define REVIEW_HTML_EVENTS 20000 /* timeline points */
#define REVIEW_HTML_ROWS   5000  /* rows of the blocks and flags table */

struct review_page {
	struct buf events; /* JSON array elements for the timeline */
	struct buf viol;   /* table rows */
	unsigned long nevents;
	unsigned long nviol;
};

static void
review_html_esc(struct buf *b, const char *s)
{
	const char *p;

	for (p = s; p != NULL && *p != '\0'; p++) {
		switch (*p) {
		case '&':
			buf_adds(b, "&amp;");
			break;
		case '<':
			buf_adds(b, "&lt;");
			break;
		case '>':
			buf_adds(b, "&gt;");
			break;
		case '"':
			buf_adds(b, "&quot;");
			break;
		case '\'':
			buf_adds(b, "&#39;");
			break;
		default:
			buf_addc(b, *p);
		}
	}
}

/* A JSON string that is safe inside <script>. */
static void
review_html_json(struct buf *b, const char *s)
{
	struct buf t;
	size_t i;

	buf_init(&t);
	json_escape_str(&t, s);
	for (i = 0; i < t.len; i++) {
		if (t.data[i] == '<')
			buf_adds(b, "\\u003c");
		else if (t.data[i] == '>')
			buf_adds(b, "\\u003e");
		else if (t.data[i] == '&')
			buf_adds(b, "\\u0026");
		else
			buf_addc(b, t.data[i]);
	}
	buf_free(&t);
}

static void
review_html_cell(struct buf *b, const char *s)
{
	buf_adds(b, "<td>");
	review_html_esc(b, s != NULL ? s : "");
	buf_adds(b, "</td>");
}

static void
review_html_cb(const struct review_event *ev, void *arg)
{
	struct review_page *pg = arg;
	struct buf *b;

	if (pg->nevents < REVIEW_HTML_EVENTS) {
		b = &pg->events;
		buf_printf(b, "%s[%" PRId64 ",\"%s\",", pg->nevents > 0 ? "," : "", ev->ts_ms,
		           review_act_name(ev->act));
		review_html_json(b, ev->event);
		buf_addc(b, ',');
		review_html_json(b, ev->method);
		buf_addc(b, ',');
		review_html_json(b, ev->host);
		buf_addc(b, ',');
		review_html_json(b, ev->path);
		buf_addc(b, ',');
		review_html_json(b, ev->rule);
		buf_addc(b, ',');
		review_html_json(b, ev->ts);
		buf_addc(b, ']');
	}
	pg->nevents++;
	if (ev->act != REVIEW_ACT_BLOCK && ev->act != REVIEW_ACT_FLAG)
		return;
	if (pg->nviol++ >= REVIEW_HTML_ROWS)
		return;
	b = &pg->viol;
	buf_printf(b, "<tr class=\"%s\">", review_act_name(ev->act));
	review_html_cell(b, ev->ts);
	review_html_cell(b, review_act_name(ev->act));
	review_html_cell(b, ev->event);
	review_html_cell(b, ev->method);
	review_html_cell(b, ev->host);
	review_html_cell(b, ev->dns ? ev->qtype : ev->path);
	review_html_cell(b, ev->rule);
	review_html_cell(b, ev->source);
	review_html_cell(b, ev->reason);
	buf_adds(b, "</tr>\n");
}

static const char review_html_style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;"
    "text-align:left;vertical-align:top}td.n,th.n{text-align:right}"
    "th{cursor:pointer;user-select:none;background:#f4f4f4}"
    "th[aria-sort=ascending]::after{content:' \\25B2'}"
    "th[aria-sort=descending]::after{content:' \\25BC'}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dd{margin:0}"
    ".allow{color:#1a7f37}.flag{color:#9a6700}.block{color:#cf222e}"
    "#timeline{position:relative;height:78px;border:1px solid #ccc;background:#fafafa}"
    ".tl-ev{position:absolute;width:3px;height:20px;opacity:.75}"
    ".tl-ev.allow{background:#2da44e;top:4px}.tl-ev.flag{background:#d4a72c;top:29px}"
    ".tl-ev.block{background:#cf222e;top:54px}.tl-ev.none{background:#888;top:29px}"
    ".legend span{margin-right:1.2em}code{word-break:break-all}";

/* Sorting, the initial order, and the timeline: textContent only. */
static const char review_html_script[] =
    "(function(){'use strict';\n"
    "var t=document.getElementById('hosts');\n"
    "function key(r,i,num){var c=r.cells[i];return num?Number(c.getAttribute('data-v')):"
    "c.textContent;}\n"
    "function sortBy(th,dir){var i=th.cellIndex,num=th.classList.contains('n');"
    "var rows=Array.prototype.slice.call(t.tBodies[0].rows);"
    "rows.sort(function(a,b){var x=key(a,i,num),y=key(b,i,num);"
    "var c=num?x-y:(x<y?-1:x>y?1:0);return dir==='ascending'?c:-c;});"
    "rows.forEach(function(r){t.tBodies[0].appendChild(r);});"
    "Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h){"
    "h.removeAttribute('aria-sort');});th.setAttribute('aria-sort',dir);"
    "t.setAttribute('data-sorted',th.getAttribute('data-key')+'-'+dir);}\n"
    "Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th){"
    "th.addEventListener('click',function(){sortBy(th,th.getAttribute('aria-sort')==="
    "'descending'?'ascending':'descending');});});\n"
    "sortBy(t.tHead.rows[0].cells[1],'descending');\n"
    "var ev=JSON.parse(document.getElementById('events').textContent);\n"
    "var tl=document.getElementById('timeline');var lo=Infinity,hi=-Infinity;\n"
    "ev.forEach(function(e){if(e[0]<lo)lo=e[0];if(e[0]>hi)hi=e[0];});\n"
    "var span=hi>lo?hi-lo:1;\n"
    "ev.forEach(function(e){var d=document.createElement('div');"
    "d.className='tl-ev '+(e[1]==='-'?'none':e[1]);"
    "d.style.left=(ev.length===1?50:(e[0]-lo)/span*99.5)+'%';"
    "d.title=[e[7],e[1],e[2],e[3],(e[4]||'')+(e[5]||''),e[6]?'rule '+e[6]:'']"
    ".filter(Boolean).join(' ');tl.appendChild(d);});\n"
    "tl.setAttribute('data-count',String(ev.length));\n"
    "})();\n";

static void
review_html_overview(struct buf *b, const struct review_tally *s)
{
	unsigned i;

	buf_adds(b, "<dl id=\"overview\"><dt>File</dt><dd><code>");
	review_html_esc(b, s->name);
	buf_printf(b, "</code></dd><dt>Lines</dt><dd>%lu (%lu matching events, %lu bad)</dd>",
	           s->lines, s->events, s->bad);
	if (s->events > 0) {
		buf_adds(b, "<dt>Span</dt><dd>");
		review_html_esc(b, s->first_ts);
		buf_adds(b, " &ndash; ");
		review_html_esc(b, s->last_ts);
		buf_adds(b, "</dd>");
	}
	buf_printf(b,
	           "<dt>Actions</dt><dd id=\"actions\"><span class=\"allow\">%" PRIu64
	           " allowed</span>, <span class=\"flag\">%" PRIu64
	           " flagged</span>, <span class=\"block\">%" PRIu64 " blocked</span>, %" PRIu64
	           " without an action</dd><dt>Events</dt><dd>",
	           s->count[REVIEW_ACT_ALLOW], s->count[REVIEW_ACT_FLAG],
	           s->count[REVIEW_ACT_BLOCK], s->count[REVIEW_ACT_NONE]);
	for (i = 0; i < s->ntypes; i++) {
		buf_adds(b, i > 0 ? ", " : "");
		review_html_esc(b, s->types[i]);
		buf_printf(b, " %" PRIu64, s->type_n[i]);
	}
	buf_adds(b, "</dd>");
	if (s->bad > 0) {
		buf_adds(b, "<dt>Bad lines</dt><dd>");
		for (i = 0; i < s->bad && i < REVIEW_SHOW_BAD; i++)
			buf_printf(b, "%sline %lu (%s)", i > 0 ? ", " : "", s->bad_lines[i],
			           s->bad_why[i]);
		buf_adds(b, "</dd>");
	}
	buf_adds(b, "</dl>\n");
}

static void
review_html_num(struct buf *b, uint64_t v)
{
	buf_printf(b, "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", v, v);
}

static void
review_html_hosts(struct buf *b, const struct review_tally *s)
{
	static const char *cols[][2] = {
	    {"host", ""},  {"requests", "n"}, {"dns", "n"},     {"methods", ""},  {"up", "n"},
	    {"down", "n"}, {"allowed", "n"},  {"flagged", "n"}, {"blocked", "n"},
	};
	struct review_host **v, *h;
	char bytes[32];
	size_t i;
	unsigned m;

	buf_adds(b, "<h2>Hosts</h2>\n<table id=\"hosts\"><thead><tr>");
	for (i = 0; i < EG_NELEM(cols); i++)
		buf_printf(b, "<th data-key=\"%s\" class=\"%s\" tabindex=\"0\">%s</th>", cols[i][0],
		           cols[i][1], cols[i][0]);
	buf_adds(b, "</tr></thead>\n<tbody>\n");
	v = review_tally_sorted(s);
	for (i = 0; (h = v[i]) != NULL; i++) {
		buf_adds(b, "<tr>");
		review_html_cell(b, h->name);
		review_html_num(b, h->n);
		review_html_num(b, h->dns);
		buf_adds(b, "<td>");
		for (m = 0; m < h->nmethods; m++) {
			buf_adds(b, m > 0 ? ", " : "");
			review_html_esc(b, h->methods[m]);
		}
		buf_adds(b, h->more_methods ? ", &hellip;</td>" : "</td>");
		review_text_bytes(bytes, sizeof bytes, h->up);
		buf_printf(b, "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>", h->up, bytes);
		review_text_bytes(bytes, sizeof bytes, h->down);
		buf_printf(b, "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>", h->down, bytes);
		review_html_num(b, h->count[REVIEW_ACT_ALLOW]);
		review_html_num(b, h->count[REVIEW_ACT_FLAG]);
		review_html_num(b, h->count[REVIEW_ACT_BLOCK]);
		buf_adds(b, "</tr>\n");
	}
	free(v);
	buf_adds(b, "</tbody></table>\n");
}

static void
review_html_page(FILE *out, const struct review_tally *s, const struct review_page *pg)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	             "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
	             "<meta name=\"viewport\" content=\"width=device-width\">\n<title>Audit log: ");
	review_html_esc(&b, s->name);
	buf_printf(&b, "</title>\n<style>%s</style></head>\n<body>\n<h1>Audit log review</h1>\n",
	           review_html_style);
	review_html_overview(&b, s);
	review_html_hosts(&b, s);
	buf_adds(&b, "<h2>Timeline</h2>\n<p class=\"legend\"><span class=\"allow\">allowed "
	             "(top)</span><span class=\"flag\">flagged (middle)</span><span "
	             "class=\"block\">blocked (bottom)</span></p>\n<div id=\"timeline\"></div>\n");
	if (pg->nevents > REVIEW_HTML_EVENTS)
		buf_printf(&b, "<p>The timeline shows the first %d of %lu events.</p>\n",
		           REVIEW_HTML_EVENTS, pg->nevents);
	buf_printf(&b,
	           "<h2>Blocked and flagged (%lu)</h2>\n<table id=\"violations\"><thead><tr>"
	           "<th>time</th><th>action</th><th>event</th><th>method</th><th>host</th>"
	           "<th>path</th><th>rule</th><th>source</th><th>reason</th></tr></thead>\n"
	           "<tbody>\n",
	           pg->nviol);
	fwrite(b.data, 1, b.len, out);
	fwrite(pg->viol.data, 1, pg->viol.len, out);
	buf_reset(&b);
	buf_adds(&b, "</tbody></table>\n");
	if (pg->nviol > REVIEW_HTML_ROWS)
		buf_printf(&b,
		           "<p>The table shows the first %d; policyctl audit --blocked lists "
		           "them all.</p>\n",
		           REVIEW_HTML_ROWS);
	buf_adds(&b, "<script type=\"application/json\" id=\"events\">[");
	fwrite(b.data, 1, b.len, out);
	fwrite(pg->events.data, 1, pg->events.len, out);
	buf_reset(&b);
	buf_printf(&b, "]</script>\n<script>\n%s</script>\n</body></html>\n", review_html_script);
	fwrite(b.data, 1, b.len, out);
	buf_free(&b);
}

/* Write the page for the file in to out; 0, or -1 on a read error. */
int
review_html(FILE *in, FILE *out, const struct review_opts *o)
{
	struct review_tally s;
	struct review_page pg;
	int rc = -1;

	memset(&pg, 0, sizeof pg);
	buf_init(&pg.events);
	buf_init(&pg.viol);
	buf_reserve(&pg.events, 1);
	buf_reserve(&pg.viol, 1);
	review_tally_init(&s, o->name);
	if (review_scan(in, o, &s, review_html_cb, &pg) == -1)
		goto out;
	if (s.bad > 0)
		fprintf(o->err, "policyctl: %s: %lu bad line%s skipped (first: line %lu)\n",
		        o->name, s.bad, s.bad == 1 ? "" : "s", s.bad_lines[0]);
	review_html_page(out, &s, &pg);
	rc = ferror(out) ? -1 : 0;
out:
	review_tally_free(&s);
	buf_free(&pg.events);
	buf_free(&pg.viol);
	return rc;
}
