#!/usr/bin/env bash
# egressd operations: --ready-fd, refusing to be an open proxy, config
# errors (exit 2, FILE:LINE:COL), SIGHUP reload (new connections get the new
# policy, an open connection keeps its snapshot, a broken file keeps the old
# policy; each audited as a `policy` event), SIGTERM drain (an in-flight
# request within --grace finishes, one slower than the grace is cut, exit 0
# either way), and an audit file of whole JSON lines with daemon
# started/stopped events and an unbroken hash chain.
. "$(dirname "$0")/lib.sh"

start_origin
O=$ORIGIN_PORT
P="$T/policy.yaml"
policy() { # policy BLOCKLIST ALLOWLIST
	printf 'version: 1\nnetwork:\n  mode: practical\n  inheritGlobal: false\n  blocklist: [%s]\n  allowlist: [%s]\n' \
	    "$1" "$2" >"$P.tmp" && mv "$P.tmp" "$P"
}
code() { pcurl -o /dev/null -w '%{http_code}' "$@"; }
# wait_audit FILTER SECS: until the audit log has a line matching the filter.
wait_audit() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -n "$(audit_last "$1")" ] && return 0
		sleep 0.05
	done
	return 1
}

# --- --ready-fd, and refusing non-loopback and bad configs ---
policy '"blocked.test"' '"127.0.0.1", "allowed.test"'
start_egressd --config "$P" --upstream-dns "$ORIGIN_DNS" || exit 1
expect_eq "$(cat "$T/ready.$EG_N")" READY "--ready-fd gets READY"
expect_eq "$(code "http://allowed.test:$O/hello")" 200 "answers once READY"

run timeout 10 "$EGRESSD" --config "$P" --proxy "0.0.0.0:$(free_port)" --dns "127.0.0.1:$(free_port)" --audit "$T/x.jsonl"
expect_eq "$([ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && echo yes)" yes "0.0.0.0 refused (exit $RC)"
expect_contains "$ERR" "open proxy" "the refusal says open proxy"
printf 'version: 1\nnetwork:\n  mode: practical\n  allowMethods: 5\n' >"$T/bad.yaml"
run timeout 10 "$EGRESSD" --config "$T/bad.yaml" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" --audit "$T/x.jsonl"
expect_rc 2 "config error exits 2"
expect_eq "$(grep -cE "^$T/bad.yaml:4:[0-9]+: " <<<"$ERR")" 1 "config error names FILE:LINE:COL"

# --- SIGHUP: the new policy for new connections, the old one for open ones ---
hellos=$(origin_count 'select(.target == "/hello")')
python3 - "$EG_PORT" "$O" "$T/hup.go" >"$T/held.out" 2>&1 <<'PY' &
import os, socket, sys, time
port, o, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
req = ("GET http://allowed.test:%s/hello HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n" % (o, o)).encode()
def status():
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(4096)
        if not d:
            return "closed"
        data += d
    head, _, rest = data.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(rest) < n:
        rest += s.recv(4096)
    return head.split(b" ")[1].decode()
s.sendall(req)
out = [status()]
for _ in range(200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
s.sendall(req)
out.append(status())
print(" ".join(out))
PY
HELD=$!
track_pid "$HELD"
for ((i = 0; i < 100; i++)); do # its first request is through
	[ "$(origin_count 'select(.target == "/hello")')" -gt "$hellos" ] && break
	sleep 0.05
done
policy '"blocked.test", "allowed.test"' '"127.0.0.1"'
kill -HUP "$EG_PID"
wait_audit '.event == "policy" and .action == "allow"' 10
OUT=$(audit_last '.event == "policy"')
expect_eq "$(jqf .action):$(jqf .reason)" "allow:policy reloaded" "reload audited as a policy event"
expect_eq "$(code "http://allowed.test:$O/hello")" 403 "new connection gets the new policy"
OUT=$(audit_last '.event == "http" and .host == "allowed.test"')
expect_eq "$(jqf .rule):$(jqf .source)" "allowed.test:$P:5" "new policy's rule and source"
touch "$T/hup.go"
wait_exit "$HELD" 10
expect_eq "$(cat "$T/held.out")" "200 200" "an open connection keeps the policy it started with"

# --- SIGHUP with a broken file: the old policy stays ---
cp "$P" "$T/good.yaml"
printf 'version: 1\nnetwork:\n  blocklist: [\n' >"$P"
kill -HUP "$EG_PID"
wait_audit '.event == "policy" and .action == "block"' 10
OUT=$(audit_last '.event == "policy" and .action == "block"')
expect_contains "$(jqf .error)" "$P:" "failed reload audited with the error (FILE:LINE)"
expect_contains "$(jqf .reason)" "previous policy" "failed reload says the old policy stays"
expect_eq "$(kill -0 "$EG_PID" 2>/dev/null && echo up)" up "egressd survives a broken reload"
expect_eq "$(code "http://allowed.test:$O/hello")" 403 "old policy still blocks"
expect_eq "$(code "http://127.0.0.1:$O/hello")" 200 "old policy still allows"
cp "$T/good.yaml" "$P"
stop_egressd
expect_eq "$EXIT_RC" 0 "exit 0 after the reloads"

# --- SIGTERM: an in-flight request within the grace finishes ---
policy '"blocked.test"' '"127.0.0.1", "allowed.test"'
EG_AUDIT="$T/drain.jsonl"
start_egressd --config "$P" --upstream-dns "$ORIGIN_DNS" --grace 10 || exit 1
pcurl -o "$T/slow.body" -w '%{http_code}' "http://allowed.test:$O/slow?s=2" >"$T/slow.code" 2>&1 &
CURL=$!
track_pid "$CURL"
for ((i = 0; i < 100; i++)); do
	[ "$(origin_count 'select(.target == "/slow?s=2")')" -ge 1 ] && break
	sleep 0.05
done
t0=$(now_ms)
kill -TERM "$EG_PID"
wait_exit "$EG_PID" 15
dt=$(($(now_ms) - t0))
expect_eq "$EXIT_RC" 0 "exit 0 after draining"
wait_exit "$CURL" 5
expect_eq "$(cat "$T/slow.code")" 200 "in-flight request finished during the drain"
expect_eq "$(cat "$T/slow.body")" "slow answer" "in-flight response body whole"
expect_eq "$([ "$dt" -ge 1000 ] && [ "$dt" -le 8000 ] && echo yes)" yes "exit after the exchange (${dt} ms)"
OUT=$(audit_last '.event == "http" and .path == "/slow"')
expect_eq "$(jqf .status)" 200 "drained request audited 200"

# --- SIGTERM: a request slower than the grace is cut ---
start_egressd --config "$P" --upstream-dns "$ORIGIN_DNS" --grace 1 || exit 1
pcurl -o /dev/null -w '%{http_code}' "http://allowed.test:$O/slow?s=10" >"$T/cut.code" 2>/dev/null &
CURL=$!
track_pid "$CURL"
for ((i = 0; i < 100; i++)); do
	[ "$(origin_count 'select(.target == "/slow?s=10")')" -ge 1 ] && break
	sleep 0.05
done
t0=$(now_ms)
kill -TERM "$EG_PID"
wait_exit "$EG_PID" 10
dt=$(($(now_ms) - t0))
expect_eq "$EXIT_RC" 0 "exit 0 after cutting"
expect_eq "$([ "$dt" -le 2500 ] && echo yes)" yes "cut after the 1 s grace (${dt} ms)"
wait_exit "$CURL" 5
expect_eq "$([ "$(cat "$T/cut.code")" != 200 ] && echo yes)" yes "the slow request did not get a 200"
OUT=$(audit_last '.event == "http" and .path == "/slow" and .status != 200')
expect_contains "$(jqf .error)" "shutdown" "cut request audited with its error"

# --- the audit files: whole lines, daemon events, one hash chain ---
for f in "$T/audit.jsonl" "$T/drain.jsonl"; do
	n=$(wc -l <"$f")
	expect_eq "$(jq -c . "$f" 2>/dev/null | wc -l)" "$n" "$(basename "$f"): $n whole JSON lines"
	expect_eq "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" '\n' "$(basename "$f") ends with a newline"
done
expect_eq "$(jq -r 'select(.event == "daemon") | .reason' "$T/drain.jsonl" | paste -sd,)" \
    "started,stopped,started,stopped" "daemon started/stopped for both runs"
run python3 - "$T/drain.jsonl" <<'PY'
import hashlib, json, sys
prev, bad = "0" * 64, 0
for raw in open(sys.argv[1], "rb"):
    line = raw.rstrip(b"\n")
    if json.loads(line)["prev"] != prev:
        bad += 1
    prev = hashlib.sha256(line).hexdigest()
print(bad)
PY
expect_eq "$OUT" 0 "hash chain unbroken across two runs"
finish
