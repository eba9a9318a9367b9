#!/usr/bin/env bash
# The resolver's upstream side and its place in egressd: a dead upstream
# answered SERVFAIL (EDE 22) within the deadline; failover from a dead first
# upstream to a live second one; the proxy resolving through the resolver
# in-process (curl to a name only the stub knows), with a CNAME chain into
# a blocked name refused by the proxy too; the built-in DoH list in the
# proxy and in policyctl explain, by name and by address literal (CONNECT
# 1.1.1.1:443 refused, no connection made); SIGHUP swapping the policy the resolver
# applies; a lost datagram asked again after the upstream's measured timeout, and
# a slow answer to an earlier try still taken after the retransmission, and
# the sockets of retransmissions bounded under a flood.

# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

start_stub --silent
DEAD=$STUB_PORT
start_stub
LIVE=$STUB_PORT
P="$T/policy.yaml"
write_dns_policy "$P" practical

# --- a dead upstream: SERVFAIL within the deadline (4 s), not a hang ---
start_resolver --config "$P" --upstream-dns "127.0.0.1:$DEAD" || exit 1
T0=$(now_ms)
dq www.example.test A
T1=$(now_ms)
expect_eq "$(dq_status)" SERVFAIL "dead upstream: SERVFAIL"
expect_contains "$(dq_ede)" "22 (No Reachable Authority)" "dead upstream: EDE 22"
if [ $((T1 - T0)) -le 6000 ]; then ok; else bad "SERVFAIL took $((T1 - T0)) ms"; fi
# 600 questions to the dead upstream, each asked again after 1.5 s: earlier
# tries keep listening only within one socket per question and 256 more,
# so the flood cannot take the descriptors the proxy needs (1200 without).
python3 - "$DNS_PORT" <<'EOF'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(600):
    if i % 25 == 0:
        time.sleep(0.005)  # paced: the datagrams must not overflow the socket
    name = b"".join(bytes([len(l)]) + l for l in [b"flood%d" % i, b"example", b"test"])
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + b"\0\0\1\0\1",
             ("127.0.0.1", int(sys.argv[1])))
EOF
sleep 2.3
N=$(find "/proc/$EG_PID/fd" -lname 'socket:*' | wc -l)
if [ "$N" -ge 500 ] && [ "$N" -le 900 ]; then ok; else bad "flood: $N sockets open, want 500 to 900"; fi
stop_egressd

# --- failover: the first upstream is dead, the second answers ---
start_resolver --config "$P" --upstream-dns "127.0.0.1:$DEAD" --upstream-dns "127.0.0.1:$LIVE" ||
    exit 1
T0=$(now_ms)
dq www.example.test A
T1=$(now_ms)
expect_eq "$(dq_answers A)" 198.18.0.10 "failover to the second upstream"
if [ $((T1 - T0)) -le 3500 ]; then ok; else bad "failover took $((T1 - T0)) ms"; fi
# The live upstream is now preferred: the next miss is answered at once.
T0=$(now_ms)
dq alias.example.test A
T1=$(now_ms)
expect_eq "$(dq_answers A)" 198.18.0.10 "after failover"
if [ $((T1 - T0)) -le 1000 ]; then ok; else bad "preferred upstream: took $((T1 - T0)) ms"; fi

# --- the proxy resolves in-process, through the same policy ---
start_origin
run pcurl -o "$T/body" -w '%{http_code}' "http://origin.example.test:$ORIGIN_PORT/hello"
expect_eq "$OUT" 200 "curl through the proxy to a name only the stub knows"
expect_eq "$(stub_count origin.example.test 1)" 1 "the proxy asked the stub (A)"
dq origin.example.test A
expect_eq "$(dq_answers A)" 127.0.0.1 "the payload gets the same answer (exact allowlist)"
expect_eq "$(stub_count origin.example.test 1)" 1 "the payload's query came from the shared cache"
run pcurl -o "$T/body" -w '%{http_code}' "http://cloakweb.example.test:$ORIGIN_PORT/hello"
expect_eq "$OUT" 403 "proxy: CNAME into a blocked name refused"
EV=$(audit_last '.event == "http" and .host == "cloakweb.example.test"')
OUT=$EV
expect_eq "$(jqf .rule)" '*.ads.example.test' "proxy audit names the CNAME's rule"
run pcurl -o "$T/body" -w '%{http_code}' "http://rebind.example.test:$ORIGIN_PORT/hello"
expect_eq "$OUT" 403 "proxy: a public name on 127.0.0.1 is refused by the guard"

# --- the built-in DoH list holds in the proxy too ---
run pcurl -o /dev/null -w '%{http_connect}' "https://dns.google/dns-query"
expect_eq "$OUT" 403 "proxy: CONNECT to a DoH provider refused"
EV=$(audit_last '.event == "connect" and .host == "dns.google"')
OUT=$EV
expect_eq "$(jqf '.rule + " " + .source')" "doh-provider builtin" "proxy audit: doh-provider, builtin"
run "$POLICYCTL" explain --config "$P" --json https://dns.google/dns-query
expect_eq "$(jqf '.action + " " + .rule')" "block doh-provider" "policyctl explain agrees"

# ... and for the services' addresses written as literals (DoH by IP, DoT):
# refused before any connection, so no byte leaves (the audit has no addr).
# Each address is asked of policyctl first: should the list ever lose it,
# the test fails there instead of sending egressd off the machine.
for target in 1.1.1.1:443 "[2606:4700:4700::1111]:443" 9.9.9.9:853; do
	written=${target%:*}
	host=${written#[}
	host=${host%]}
	run "$POLICYCTL" explain --config "$P" --method CONNECT --json "$written"
	if [ "$(jqf .rule)" != doh-provider ]; then
		bad "policyctl explain $written: '$(jqf .rule)', want doh-provider; not sent"
		continue
	fi
	printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$target" "$target" |
	    python3 "$SRC_DIR/tests/integration/rawhttp.py" send "$EG_PORT" --wait 5 >"$T/raw.json"
	OUT=$(cat "$T/raw.json")
	expect_eq "$(jqf '.responses[0].status')" 403 "proxy: CONNECT $target refused"
	expect_contains "$(jqf '.responses[0].body')" "doh-provider" "403 body for $target names the rule"
	OUT=$(audit_last ".event == \"connect\" and .host == \"$host\"")
	expect_eq "$(jqf '.action + " " + .rule + " " + .source')" "block doh-provider builtin" \
	    "proxy audit for $target: doh-provider"
	expect_eq "$(jqf '.addr // "none"')" none "no connection was made to $target"
done
run "$POLICYCTL" explain --config "$P" --json https://1.1.1.1/dns-query
expect_eq "$(jqf '.action + " " + .rule + " " + .list')" "block doh-provider doh" \
    "policyctl explain https://1.1.1.1/dns-query names the rule"
expect_contains "$(jqf .reason)" "Cloudflare" "explain names the provider"

# --- SIGHUP: the resolver applies the new policy ---
dq www.example.test A
expect_eq "$(dq_status)" NOERROR "before reload: allowed"
sed -i 's/blocklist: \[/blocklist: ["www.example.test", /' "$P"
kill -HUP "$EG_PID"
for ((i = 0; i < 100; i++)); do
	audit_last '.event == "policy"' | grep -q reloaded && break
	sleep 0.05
done
dq www.example.test A
expect_eq "$(dq_status)" NXDOMAIN "after reload: the cached name is blocked"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM"

# --- retransmission after the measured timeout, earlier tries still heard ---
# One answered question gives the upstream a round-trip time of about a
# millisecond, so its timeout drops from the 1500 ms a new upstream starts
# with to the 100 ms floor.
write_dns_policy "$P" practical
start_resolver --config "$P" --upstream-dns "127.0.0.1:$LIVE" || exit 1
dq www.example.test A
expect_eq "$(dq_answers A)" 198.18.0.10 "retransmission: the upstream answers"
# The first datagram for lossy is lost: asked again after the measured
# timeout, not after the 1500 ms a try takes when nothing was measured.
T0=$(now_ms)
dq lossy.example.test A
T1=$(now_ms)
expect_eq "$(dq_answers A)" 198.18.0.17 "a lost datagram: answered by the retransmission"
expect_eq "$(stub_count lossy.example.test 1)" 2 "a lost datagram: asked twice"
if [ $((T1 - T0)) -lt 1000 ]; then ok; else bad "lost datagram: answered after $((T1 - T0)) ms"; fi
# late answers its first query only, after 600 ms: the retransmission sent
# meanwhile gets nothing, and the first try's socket still takes the answer.
dq late.example.test A
expect_eq "$(dq_status)" NOERROR "a slow answer to an earlier try: taken"
expect_eq "$(dq_answers A)" 198.18.0.18 "a slow answer to an earlier try: its address"
expect_eq "$(stub_count late.example.test 1)" 2 "a slow answer: the question was sent again meanwhile"
stop_egressd

finish
