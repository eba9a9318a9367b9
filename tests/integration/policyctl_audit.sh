#!/usr/bin/env bash
# policyctl audit on audit files recorded here by a real egressd (two runs
# on one file: onViolation block, then flag) driven by curl: the summary
# (text, --json, colour only on a terminal), every filter, bad lines
# counted and never fatal, stdin, --verify on the intact file and on an
# edited line, a deleted line and a truncated tail, --suggest (loads with
# policyctl check and allows what was blocked, per policyctl explain),
# --follow picking up appended, rotated and truncated files and ending on
# SIGTERM/SIGINT, --html opened in headless Chromium (table rows and
# timeline built by its scripts, untrusted strings escaped, no external
# resources), and usage errors. With REVIEW_RECORD=DIR the normalised
# recording is also written there (tests/data/review/session.jsonl).
. "$(dirname "$0")/lib.sh"
NORMALIZE="$SRC_DIR/tests/integration/policyctl_audit_normalize.py"

start_origin
O=$ORIGIN_PORT
write_policy() { # write_policy FILE ONVIOLATION
	cat >"$1" <<YAML
version: 1
network:
  mode: practical
  inheritGlobal: false
  blocklist: ["blocked.test", "*.tracker.test"]
  allowlist: ["127.0.0.1", "allowed.test"]
  allowMethods: [GET, HEAD]
  onViolation: $2
YAML
}
write_policy "$T/policy.yaml" block
write_policy "$T/flag.yaml" flag
A="$T/audit.jsonl"
EG_AUDIT=$A

# --- record: a session with allowed, blocked and flagged requests ---
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" || exit 1
pcurl -o /dev/null "http://allowed.test:$O/a"
pcurl -o /dev/null "http://plain.test:$O/b?token=secret"
pcurl -o /dev/null -d x=1 "http://plain.test:$O/post"
pcurl -o /dev/null "http://blocked.test:$O/c"
pcurl -o /dev/null "http://a.tracker.test:$O/c"
pcurl -o /dev/null "https://b.tracker.test/" 2>/dev/null
pcurl -o /dev/null "http://c.tracker.test:$O/d"
pcurl -o /dev/null -d x=1 "http://x.cdn.test:$O/upload"
pcurl -o /dev/null -d x=1 "http://y.cdn.test:$O/upload"
pcurl -o /dev/null --path-as-is "http://plain.test:$O/x<script>alert(1)</script>"
pcurl -o /dev/null -I "http://plain.test:$O/h"
stop_egressd
start_egressd --config "$T/flag.yaml" --upstream-dns "$ORIGIN_DNS" || exit 1
pcurl -o /dev/null -d x=2 "http://plain.test:$O/post2"
pcurl -o /dev/null -X PUT -d x=3 "http://x.cdn.test:$O/put"
pcurl -o /dev/null "http://allowed.test:$O/z"
stop_egressd
expect_eq "$(wc -l <"$A")" 18 "recorded 14 requests and 4 daemon lines"
if [ -n "${REVIEW_RECORD:-}" ]; then
	python3 "$NORMALIZE" "$A" "$REVIEW_RECORD/session.jsonl"
fi

# --- summary ---
run "$POLICYCTL" audit "$A"
expect_rc 0 "summary"
expect_line "$OUT" "actions:   5 allowed, 2 flagged, 7 blocked, 4 without an action" "counts by action"
expect_line "$OUT" "blocked and flagged (9)" "every block and flag listed"
expect_contains "$OUT" "POST    plain.test:$O/post  rule method-not-allowed ($T/policy.yaml:" "block line"
expect_contains "$OUT" "CONNECT b.tracker.test:443  rule *.tracker.test" "blocked CONNECT"
expect_contains "$OUT" "PUT     x.cdn.test:$O/put  rule method-not-allowed ($T/flag.yaml:" "flag line"
case "$OUT" in *$'\033'*) bad "colour when piped" ;; *) ok ;; esac
row=$(printf '%s\n' "$OUT" | grep -E '^plain\.test ')
expect_eq "$(echo "$row" | awk '{print $2, $4, $(NF-2), $(NF-1), $NF}')" "5 GET,POST,HEAD 3 1 1" "plain.test row"

run "$POLICYCTL" audit --json "$A"
expect_rc 0 "json summary"
expect_eq "$(jqf '[.lines, .events, .bad_lines.count] | join(" ")')" "18 18 0" "json counts"
expect_eq "$(jqf '.actions | [.allow, .flag, .block, .none] | join(" ")')" "5 2 7 4" "json actions"
expect_eq "$(jqf '.event_types | [.daemon, .http, .connect] | join(" ")')" "4 13 1" "json event types"
expect_eq "$(jqf '.hosts[0] | [.host, .requests, .allow, .flag, .block] | join(" ")')" \
    "plain.test 5 3 1 1" "json busiest host first"
expect_eq "$(jqf '[.violations[] | .host] | join(",")')" \
    "plain.test,blocked.test,a.tracker.test,b.tracker.test,c.tracker.test,x.cdn.test,y.cdn.test,plain.test,x.cdn.test" \
    "json violations in file order"
expect_eq "$(jqf '.violations[0].path')" "/post" "json path"
expect_eq "$(jqf '.first < .last')" "true" "json span"
expect_eq "$(jqf '[.violations[] | select(.path != null and (.path | contains("?")))] | length')" 0 \
    "no query string anywhere"

# --- colour only on a terminal, and never with NO_COLOR ---
if command -v script >/dev/null; then
	script -qec "$POLICYCTL audit --blocked $A" /dev/null </dev/null >"$T/tty.out" 2>&1
	if grep -q $'\033\\[31mblock' "$T/tty.out"; then ok; else bad "no colour on a terminal"; fi
	NO_COLOR=1 script -qec "$POLICYCTL audit --blocked $A" /dev/null </dev/null >"$T/tty.out" 2>&1
	if grep -q $'\033' "$T/tty.out"; then bad "colour despite NO_COLOR"; else ok; fi
else
	bad "script(1) is missing: cannot test colour on a terminal"
fi

# --- filters ---
count() { run "$POLICYCTL" audit --json "$@" "$A"; jqf .events; }
expect_eq "$(count --blocked)" 7 "--blocked"
expect_eq "$(count --flagged)" 2 "--flagged"
expect_eq "$(count --blocked --flagged)" 9 "--blocked --flagged"
expect_eq "$(count --host '*.tracker.test')" 3 "--host glob"
expect_eq "$(count --host 'PLAIN.TEST')" 5 "--host is case-insensitive"
expect_eq "$(count --event connect)" 1 "--event connect"
expect_eq "$(count --event daemon,connect)" 5 "--event list"
expect_eq "$(count --event dns)" 0 "--event dns"
T5=$(sed -n 5p "$A" | jq -r .ts)
T9=$(sed -n 9p "$A" | jq -r .ts)
expect_eq "$(count --since "$T5" --until "$T9")" "$(jq -r --arg a "$T5" --arg b "$T9" \
    'select(.ts >= $a and .ts < $b) | .ts' "$A" | wc -l)" "--since/--until RFC 3339"
expect_eq "$(count --since 1h)" 18 "--since 1h"
expect_eq "$(count --until 1h)" 0 "--until 1h"
run "$POLICYCTL" audit --host '*.cdn.test' --flagged "$A"
expect_line "$OUT" "blocked and flagged (1)" "filters combine"

# --- stdin, and bad lines counted, never fatal ---
run sh -c "cat '$A' | '$POLICYCTL' audit --json"
expect_eq "$(jqf .events)" 18 "stdin when not a terminal"
run sh -c "'$POLICYCTL' audit --json - <'$A'"
expect_eq "$(jqf .events)" 18 "- is stdin"
{ head -n 3 "$A"; echo 'not json'; echo '{"v":1}'; tail -n +4 "$A"; } >"$T/bad.jsonl"
run "$POLICYCTL" audit "$T/bad.jsonl"
expect_rc 0 "bad lines are not fatal"
expect_contains "$OUT" "bad lines: 2, not audit events: line 4 (not JSON), line 5 (no time (\"ts\"))" \
    "bad lines by number"
expect_contains "$OUT" "lines:     20 (18 matching events, 2 bad)" "bad lines counted"

# --- verify ---
run "$POLICYCTL" audit --verify "$A"
expect_rc 0 "intact chain"
expect_line "$OUT" "18 lines, 2 runs, chain OK" "verify OK"
sed '6s/"path":"\/c"/"path":"\/e"/' "$A" >"$T/edited.jsonl"
run "$POLICYCTL" audit --verify "$T/edited.jsonl"
expect_rc 1 "edited line breaks the chain"
expect_line "$OUT" "line 7: prev does not match line 6: line 6 was changed" "edited line named"
sed '6d' "$A" >"$T/deleted.jsonl"
run "$POLICYCTL" audit --verify --json "$T/deleted.jsonl"
expect_rc 1 "deleted line breaks the chain"
expect_eq "$(jqf '[.first_break, .problems[0].kind] | join(" ")')" "6 removed" "deleted line found"
head -c -30 "$A" >"$T/torn.jsonl"
run "$POLICYCTL" audit --verify "$T/torn.jsonl"
expect_rc 1 "truncated tail"
expect_contains "$OUT" "line 18: truncated tail: the file ends inside this line" "tail reported as such"
run "$POLICYCTL" audit "$T/torn.jsonl"
expect_rc 0 "summary of a torn file"
expect_contains "$OUT" "the file ends inside line 18" "summary notes the torn tail"

# --- suggest: loads, and allows what was blocked ---
run "$POLICYCTL" audit --suggest "$A"
expect_rc 0 "suggest"
printf '%s\n' "$OUT" >"$T/suggest.yaml"
expect_contains "$OUT" '- "*.tracker.test" # 3 requests (3 blocked, 0 flagged) to 3 hosts' "grouped suffix"
expect_contains "$OUT" '- "*.cdn.test" # 3 requests (2 blocked, 1 flagged) to 2 hosts' "grouped with a flag"
expect_contains "$OUT" '- "plain.test" # 2 requests (1 blocked, 1 flagged)' "exact host"
expect_contains "$OUT" '- "blocked.test" # 1 request' "blocklisted host"
run "$POLICYCTL" check --config "$T/suggest.yaml"
expect_rc 0 "suggestion loads with policyctl check"
for u in http://a.tracker.test/ http://blocked.test/; do
	run "$POLICYCTL" explain --config "$T/policy.yaml" --config "$T/suggest.yaml" --json "$u"
	expect_eq "$(jqf .action)" allow "suggestion allows $u"
done
run "$POLICYCTL" explain --config "$T/policy.yaml" --config "$T/suggest.yaml" --json \
    --method POST http://z.cdn.test/
expect_eq "$(jqf .action)" allow "suggested wildcard allows POST"
run "$POLICYCTL" audit --suggest --event dns "$A"
printf '%s\n' "$OUT" >"$T/empty.yaml"
expect_contains "$OUT" "allowlist: []" "nothing to suggest"
run "$POLICYCTL" check --config "$T/empty.yaml"
expect_rc 0 "empty suggestion loads"
# Packets the strict rules dropped (as egressd writes them from NFLOG) are
# listed and filtered as packet events, but never turned into allowlist
# entries: no entry would let UDP or QUIC out.
P="$T/packets.jsonl"
for port in 7 443; do
	printf '{"v":1,"ts":"2026-11-29T23:38:33.789Z","seq":1,"event":"packet","action":"block","rule":"strict-drop","source":"nftables","reason":"dropped","mode":"strict","client":"198.18.0.2:35396","host":"198.18.0.9","port":%s,"proto":"udp","uid":1000,"prev":"x"}\n' "$port"
done >"$P"
run "$POLICYCTL" audit --json --event packet "$P"
expect_eq "$(jqf .events)" 2 "--event packet"
run "$POLICYCTL" audit --blocked "$P"
expect_contains "$OUT" "block packet  198.18.0.9:443  rule strict-drop" "dropped packets listed as blocked"
run "$POLICYCTL" audit --suggest "$P"
expect_eq "$(printf '%s\n' "$OUT" | grep -c '198.18.0.9')" 0 "no allowlist entry suggested for dropped packets"
expect_contains "$OUT" "allowlist: []" "the suggestion for dropped packets alone is empty"

# --- follow: appended, rotated and truncated files; ends on a signal ---
F="$T/live.jsonl"
head -n 2 "$A" >"$F"
"$POLICYCTL" audit --follow --blocked "$F" >"$T/follow.out" 2>"$T/follow.err" &
FPID=$!
track_pid "$FPID"
follow_has() { # follow_has N: until the output has N lines (5 s)
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(wc -l <"$T/follow.out")" -ge "$1" ] && return 0
		sleep 0.05
	done
	return 1
}
sed -n 3,5p "$A" >>"$F"
if follow_has 2; then ok; else bad "follow: appended blocks not shown"; fi
sed -n 6p "$A" | head -c 50 >>"$F"
sleep 0.5
expect_eq "$(wc -l <"$T/follow.out")" 2 "follow waits for a whole line"
sed -n 6p "$A" | tail -c +51 >>"$F"
if follow_has 3; then ok; else bad "follow: line completed later not shown"; fi
mv "$F" "$F.1"
sed -n 7p "$A" >>"$F.1" # the old file's last words still count
sed -n 8p "$A" >"$F"
if follow_has 5; then ok; else bad "follow: rotation not followed"; fi
: >"$F"
sed -n 9p "$A" >>"$F"
if follow_has 6; then ok; else bad "follow: truncation not followed"; fi
expect_eq "$(cut -c27-31 "$T/follow.out" | sort -u)" "block" "follow prints blocks only"
kill -TERM "$FPID"
wait_exit "$FPID" 5
expect_eq "$EXIT_RC" 0 "follow ends on SIGTERM"
expect_contains "$(cat "$T/follow.err")" "file rotated" "rotation noticed"
expect_contains "$(cat "$T/follow.err")" "file truncated" "truncation noticed"
"$POLICYCTL" audit --follow --json "$A" >"$T/follow2.out" 2>&1 &
FPID=$!
track_pid "$FPID"
for ((i = 0; i < 100; i++)); do [ "$(wc -l <"$T/follow2.out")" -ge 18 ] && break; sleep 0.05; done
kill -INT "$FPID"
wait_exit "$FPID" 5
expect_eq "$EXIT_RC" 0 "follow ends on SIGINT"
expect_eq "$(jq -s 'length' "$T/follow2.out")" 18 "follow --json prints JSON lines"

# --- html in headless Chromium ---
run "$POLICYCTL" audit --html "$T/page.html" "$A"
expect_rc 0 "html written"
if grep -Eiq '(src|href|action)[[:space:]]*=|url\(|@import|https?://' "$T/page.html"; then
	bad "html refers to something outside the page"
else ok; fi
if grep -q '<script>alert' "$T/page.html"; then bad "html: raw <script> from the log"; else ok; fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	bad "chromium is not installed: the html page cannot be checked"
else
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" \
	    --dump-dom "file://$T/page.html" >"$T/dom.html" 2>"$T/chromium.err"
	expect_eq "$?" 0 "chromium dumps the page"
	DOM=$(cat "$T/dom.html")
	expect_contains "$DOM" '<table id="hosts" data-sorted="requests-descending">' "host table sorted by script"
	expect_eq "$(python3 - "$T/dom.html" <<'PY'
import html.parser, sys
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.rows = 0; self.ev = {}; self.cnt = None
        self.scripts = 0; self.first = None; self.cell = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs); self.stack.append((tag, a))
        if tag == "table" and a.get("id") == "hosts": self.in_hosts = True
        if tag == "tr" and getattr(self, "in_hosts", False) and self.in_body: self.rows += 1; self.cell = 0
        if tag == "tbody": self.in_body = True
        if tag == "td" and self.cell is not None: self.cell += 1
        if tag == "div" and "tl-ev" in a.get("class", ""):
            k = a["class"].split()[1]; self.ev[k] = self.ev.get(k, 0) + 1
        if tag == "div" and a.get("id") == "timeline": self.cnt = a.get("data-count")
        if tag == "script" and "type" not in a: self.scripts += 1
    def handle_endtag(self, tag):
        if tag == "table": self.in_hosts = False
        if tag == "tbody": self.in_body = False
    def handle_data(self, d):
        if self.cell == 1 and self.rows == 1 and self.first is None: self.first = d
    in_body = False
p = P(); p.feed(open(sys.argv[1]).read())
print(p.rows, p.first, p.cnt, p.ev.get("allow", 0), p.ev.get("flag", 0), p.ev.get("block", 0),
      p.ev.get("none", 0), p.scripts)
PY
)" "8 plain.test 18 5 2 7 4 1" "rows, timeline points by action, one script"
	expect_contains "$DOM" "/x&lt;script&gt;alert(1)&lt;/script&gt;" "path shown escaped"
	if grep -q '<script>alert' "$T/dom.html"; then bad "script from the log in the DOM"; else ok; fi
fi

# --- usage and IO errors exit 2 ---
for args in "--bogus" "--event smtp" "--since yesterday" "--verify --blocked" \
    "--follow --suggest" "--suggest --json" "--html $T/x.html --verify" "$A $A"; do
	# shellcheck disable=SC2086
	run "$POLICYCTL" audit $args "$A"
	expect_rc 2 "usage error: $args"
done
run "$POLICYCTL" audit "$T/missing.jsonl"
expect_rc 2 "missing file"
expect_contains "$ERR" "No such file" "missing file named"
run "$POLICYCTL" audit --html /nonexistent/dir/x.html "$A"
expect_rc 2 "unwritable html"
finish
