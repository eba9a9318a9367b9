#!/usr/bin/env bash
# egressd's control socket (--control) end to end with policyctl and a
# misbehaving client (ctlclient.py): status (version, pid, policy files
# with their mtimes and "changed", counters by event and action after real
# requests, the top blocked hosts with their rules, connections, the CA's
# fingerprint and expiry as openssl reads them, the audit path and last
# seq), `status --prometheus` accepted by promtool, reload (a good file
# takes effect in live explain, a bad one keeps the policy and says why,
# both audited), reload refused to any uid but root and egressd's own while
# status and explain stay open to them (SO_PEERCRED, egressd run as its
# own user), explain's errors, the socket left behind by a dead egressd
# replaced and a live one or a file never taken over, the socket removed at
# exit, and abuse: malformed and oversize lines, a line without a newline,
# a silent client, 500 clients at once (with and without large unfinished
# lines): each gets a clear one-line error or its answer, egressd's memory
# stays bounded and it keeps proxying throughout.
. "$(dirname "$0")/lib.sh"
CTL="$SRC_DIR/tests/integration/ctlclient.py"

start_origin
O=$ORIGIN_PORT
cat >"$T/policy.yaml" <<'EOF'
version: 1
network:
  mode: practical
  blocklist: ["blocked.test"]
  allowlist: ["127.0.0.1"]
EOF
SOCK="$T/control.sock"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --control "$SOCK" \
    --ca-out "$T/ca.pem" || exit 1
expect_eq "$(stat -c %a "$SOCK")" 666 "the socket is open to every local user"
expect_contains "$(cat "$EG_ERR")" "control socket on $SOCK" "egressd says where the socket is"

# --- status after real traffic ---
for i in 1 2 3; do pcurl -o /dev/null "http://plain.test:$O/hello?i=$i"; done
pcurl -o /dev/null -X POST -d 12345 "http://127.0.0.1:$O/echo" # the allowlisted address
for i in 1 2; do pcurl -o /dev/null -X POST -d x "http://plain.test:$O/echo"; done
pcurl -o /dev/null "http://blocked.test:$O/x"
run "$POLICYCTL" status --control "$SOCK" --json
expect_rc 0 "status --json"
S=$OUT
expect_eq "$(jq -r .pid <<<"$S")" "$EG_PID" "status: pid"
expect_eq "$(jq -r .mode <<<"$S")" practical "status: mode"
expect_eq "$(jq -r '.version | length > 0' <<<"$S")" true "status: version"
expect_eq "$(jq -r '.policy.generation' <<<"$S")" 1 "status: policy generation"
expect_eq "$(jq -r '.policy.files[0].path + " " + .policy.files[0].kind' <<<"$S")" \
    "$T/policy.yaml config" "status: the policy's file"
expect_eq "$(jq -r '.policy.files[0].mtime' <<<"$S" | cut -c1-19)" \
    "$(date -u -r "$T/policy.yaml" +%Y-%m-%dT%H:%M:%S)" "status: the file's mtime"
expect_eq "$(jq -r '.policy.files[0].changed' <<<"$S")" false "status: not changed since"
expect_eq "$(jq -r '.requests.http | "\(.allow) \(.flag) \(.block)"' <<<"$S")" "4 0 3" \
    "status: http counters by action"
expect_eq "$(jq -r '.top_blocked[0] | "\(.host) \(.count) \(.rule) \(.list)"' <<<"$S")" \
    "plain.test 2 method-not-allowed methods" "status: the host blocked most, with its rule"
expect_eq "$(jq -r '.top_blocked[1] | "\(.host) \(.count) \(.rule) \(.source)"' <<<"$S")" \
    "blocked.test 1 blocked.test $T/policy.yaml:4" "status: the next one, with its source"
expect_eq "$(jq -r '.bytes.up > 0 and .bytes.down > 0' <<<"$S")" true "status: bytes each way"
expect_eq "$(jq -r '.connections.accepted.proxy' <<<"$S")" 7 "status: connections accepted"
expect_eq "$(jq -r '.ca.fingerprint_sha256' <<<"$S")" \
    "$(openssl x509 -in "$T/ca.pem" -noout -fingerprint -sha256 | sed 's/.*=//')" \
    "status: the CA's fingerprint is the exported certificate's"
expect_eq "$(date -u -d "$(jq -r .ca.not_after <<<"$S")" +%s)" \
    "$(date -u -d "$(openssl x509 -in "$T/ca.pem" -noout -enddate | sed 's/.*=//')" +%s)" \
    "status: the CA's expiry"
expect_eq "$(jq -r .audit.path <<<"$S")" "$EG_AUDIT" "status: the audit path"
expect_eq "$(jq -r .audit.last_seq <<<"$S")" "$(tail -n 1 "$EG_AUDIT" | jq -r .seq)" \
    "status: the last seq is the audit log's"
expect_absent "$S" "i=3" "status holds no query string"
run "$POLICYCTL" status --control "$SOCK"
expect_rc 0 "status for people"
expect_contains "$OUT" "egressd " "status text: egressd's line"
expect_line "$OUT" "  http     4 / 0 / 3" "status text: http counters"
expect_contains "$OUT" "plain.test  method-not-allowed (methods, " "status text: blocked most"
run "$POLICYCTL" status --control "$SOCK" --prometheus
expect_rc 0 "status --prometheus"
expect_line "$OUT" 'egressd_requests_total{event="http",action="block"} 3' \
    "the exposition counts the blocks"
printf '%s\n' "$OUT" >"$T/metrics.txt"
if command -v promtool >/dev/null; then
	run promtool check metrics <"$T/metrics.txt"
	expect_rc 0 "promtool accepts the exposition ($OUT)"
else
	bad "promtool is missing (scripts/install-deps)"
fi
run "$POLICYCTL" status --control "$SOCK" --json --prometheus
expect_rc 2 "--json and --prometheus together are a usage error"

# --- explain's errors are the socket's, said plainly ---
run "$POLICYCTL" explain --control "$SOCK" 'http://exa mple.com/'
expect_rc 2 "a target that does not parse"
run "$POLICYCTL" explain --control "$SOCK" --method 'G T' example.com
expect_rc 2 "a bad method"

# --- reload: good, then bad, both audited ---
sleep 1.1 # a new mtime
sed -i 's/  blocklist: \["blocked.test"\]/  blocklist: ["blocked.test", "newly.test"]/' \
    "$T/policy.yaml"
run "$POLICYCTL" status --control "$SOCK" --json
expect_eq "$(jqf '.policy.files[0].changed')" true "status: the file changed since it was loaded"
run "$POLICYCTL" explain --control "$SOCK" --json newly.test
expect_eq "$(jqf .action)" allow "before reload: the live policy is the old one"
run "$POLICYCTL" reload --control "$SOCK"
expect_rc 0 "reload as root"
expect_line "$OUT" "policy reloaded: generation 2, mode practical" "reload says what loaded"
run "$POLICYCTL" explain --control "$SOCK" --json newly.test
expect_eq "$(jqf '.action + " " + .rule + " " + (.policy.generation | tostring)')" \
    "block newly.test 2" "after reload: live explain answers from the new policy"
expect_eq "$(audit_last '.rule == "policy.reload"' | jq -r .action)" allow "the reload is audited"
printf 'network: [\n' >>"$T/policy.yaml"
run "$POLICYCTL" reload --control "$SOCK"
expect_rc 1 "a reload that does not load exits 1"
expect_contains "$ERR" "$T/policy.yaml:" "it names the file and line"
expect_contains "$ERR" "egressd keeps the policy in force (generation 2)" "and says the old one stays"
expect_eq "$(audit_last '.rule == "policy.reload"' | jq -r .action)" block \
    "the failed reload is audited"
run "$POLICYCTL" explain --control "$SOCK" --json newly.test
expect_eq "$(jqf .action)" block "the policy in force is still generation 2's"
run "$POLICYCTL" status --control "$SOCK" --json
expect_eq "$(jqf '"\(.reloads.ok) \(.reloads.failed)"')" "1 1" "status counts reloads by result"

# --- abuse ---
rss0=$(eg_kb VmRSS)
run python3 "$CTL" "$SOCK" send "b'garbage\\n'"
expect_eq "$(jqf '.answer.code + " " + (.answer.ok | tostring)')" "bad-request false" \
    "a line that is not JSON: a clear error"
expect_contains "$(jqf .answer.error)" "not JSON" "the error says what is wrong"
expect_eq "$(jqf '.closed')" true "and the connection ends"
run python3 "$CTL" "$SOCK" send "b'{\"cmd\":\"status\"}\\n{\"cmd\":\"reload\"}\\n'"
expect_eq "$(jqf '.lines')" 1 "one request a connection: the second line is not read"
run python3 "$CTL" "$SOCK" send "b'{\"cmd\":\"status\"}\\r\\n'"
expect_eq "$(jqf '.answer.ok')" true "a CRLF line end is taken"
run python3 "$CTL" "$SOCK" send "b'{\"cmd\":\"status\"}'" --shut
expect_contains "$(jqf .answer.error)" "without a newline" "a request cut before its newline"
run python3 "$CTL" "$SOCK" oversize 3000000
expect_eq "$(jqf .answer.code)" too-large "an oversize line: too-large"
expect_eq "$(jqf '.sent < 2200000')" true "egressd stops reading at the limit ($(jqf .sent))"
run python3 "$CTL" "$SOCK" idle
expect_eq "$(jqf .answer.code)" timeout "a silent client: a timeout answer"
expect_eq "$(jqf '.seconds >= 4 and .seconds < 9')" true "after about 5 seconds ($(jqf .seconds))"
run python3 "$CTL" "$SOCK" send "b'{\"cmd\":\"st'" # no newline, left open
expect_eq "$(jqf .answer.code)" timeout "half a request left open: a timeout answer"

# 500 clients at once, with small requests and with large unfinished ones,
# while the proxy keeps serving.
(for i in $(seq 20); do pcurl -o /dev/null -w '%{http_code}\n' "http://plain.test:$O/hello"; done) \
    >"$T/during" &
busy_pid=$!
run python3 "$CTL" "$SOCK" crowd 500
expect_eq "$(jqf '.ok + .busy')" 500 "500 clients: each gets its answer or busy ($OUT)"
expect_eq "$(jqf '.ok >= 64')" true "as many as egressd serves at once are answered"
expect_eq "$(jqf '.unanswered')" 0 "none is left hanging"
run python3 "$CTL" "$SOCK" crowd 500 --partial 900000
expect_eq "$(jqf '.other | length')" 0 "500 large requests: each gets its answer or busy ($OUT)"
expect_eq "$(jqf '.unanswered')" 0 "500 large requests: none left hanging"
expect_eq "$(jqf '.ok >= 1 and .busy > 400')" true \
    "a few are answered, most told busy: the bytes held are bounded"
wait "$busy_pid"
expect_eq "$(sort -u "$T/during")" 200 "the proxy kept answering throughout"
rss1=$(eg_kb VmHWM)
# AddressSanitizer keeps freed memory in quarantine: sizes say nothing there.
if ! asan_build; then
	expect_eq "$([ $((rss1 - rss0)) -lt 65536 ] && echo yes)" yes \
	    "egressd's peak memory grew by less than 64 MiB ($rss0 kB -> $rss1 kB)"
fi
run "$POLICYCTL" status --control "$SOCK" --json
expect_eq "$(jqf .control_clients)" 1 "every abusive client is gone (only this one)"
expect_eq "$(pcurl -o /dev/null -w '%{http_code}' "http://plain.test:$O/hello")" 200 \
    "egressd still proxies"

# --- the socket's lifetime ---
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd stops cleanly"
expect_eq "$([ -e "$SOCK" ] && echo there || echo gone)" gone "egressd removes its socket at exit"
run "$POLICYCTL" status --control "$SOCK"
expect_rc 2 "status with no egressd"
expect_contains "$ERR" "no egressd control socket at $SOCK" "says no socket is there"
# A socket a dead egressd left is replaced; a file, or a live socket, is not.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
run "$POLICYCTL" status --control "$SOCK"
expect_rc 2 "a socket nobody answers on"
expect_contains "$ERR" "does not answer" "says it does not answer"
printf 'version: 1\n' >"$T/ok.yaml"
start_egressd --config "$T/ok.yaml" --control "$SOCK" --upstream-dns "$ORIGIN_DNS" ||
    bad "egressd replaces a stale socket"
FIRST_PID=$EG_PID
"$EGRESSD" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" --control "$SOCK" \
    --config "$T/ok.yaml" --audit "$T/a2.jsonl" >"$T/out2" 2>"$T/err2" &
track_pid $!
wait_exit $! 10
expect_ne "$EXIT_RC" 0 "a second egressd on a live socket fails"
expect_contains "$(cat "$T/err2")" "another process answers on $SOCK" "and says why"
run "$POLICYCTL" status --control "$SOCK" --json
expect_eq "$(jqf .pid)" "$FIRST_PID" "the first egressd keeps its socket"
stop_egressd
: >"$T/plain-file"
"$EGRESSD" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" \
    --control "$T/plain-file" --config "$T/ok.yaml" --audit "$T/a3.jsonl" 2>"$T/err3" &
track_pid $!
wait_exit $! 10
expect_ne "$EXIT_RC" 0 "a file where the socket goes is not taken over"
expect_contains "$(cat "$T/err3")" "exists and is not a socket" "and says why"
expect_eq "$(stat -c %F "$T/plain-file")" "regular empty file" "the file is left alone"

# --- who may reload: root and egressd's own user (SO_PEERCRED) ---
NOBODY=65534
if command -v setpriv >/dev/null; then
	# shellcheck disable=SC2317 # called through run
	as() { setpriv --reuid "$1" --regid "$1" --clear-groups "${@:2}"; }
	mkdir -m 0777 "$T/shared"
	cp "$T/ok.yaml" "$T/shared/ok.yaml"
	chmod 0755 "$T"
	chmod 0644 "$T/shared/ok.yaml"
	: >"$T/shared/audit.jsonl"
	chown "$NOBODY" "$T/shared/audit.jsonl"
	EG2_SOCK="$T/shared/c.sock"
	setpriv --reuid "$NOBODY" --regid "$NOBODY" --clear-groups "$EGRESSD" \
	    --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" \
	    --config "$T/shared/ok.yaml" --audit "$T/shared/audit.jsonl" --control "$EG2_SOCK" \
	    --upstream-dns "$ORIGIN_DNS" --ready-fd 3 3>"$T/ready.nobody" >/dev/null \
	    2>"$T/err.nobody" &
	NB_PID=$!
	track_pid "$NB_PID"
	wait_file "$T/ready.nobody" 10 || bad "egressd as nobody: $(cat "$T/err.nobody")"
	run as 65533 "$POLICYCTL" reload --control "$EG2_SOCK"
	expect_rc 1 "reload by another user is refused"
	expect_contains "$ERR" "forbidden: reload is allowed only to root and to egressd's own user (uid $NOBODY); the client is uid 65533" \
	    "the refusal says who may"
	run as 65533 "$POLICYCTL" status --control "$EG2_SOCK" --json
	expect_eq "$(jqf .uid)" "$NOBODY" "status is open to another user"
	run as 65533 "$POLICYCTL" explain --control "$EG2_SOCK" --json example.com
	expect_eq "$(jqf .policy_source)" egressd "explain is open to another user"
	run as "$NOBODY" "$POLICYCTL" reload --control "$EG2_SOCK"
	expect_rc 0 "egressd's own user may reload"
	run "$POLICYCTL" reload --control "$EG2_SOCK"
	expect_rc 0 "root may reload"
	expect_line "$OUT" "policy reloaded: generation 3, mode practical" "both reloads took"
	kill -TERM "$NB_PID"
	wait_exit "$NB_PID" 10
else
	bad "setpriv is missing (util-linux)"
fi
finish
