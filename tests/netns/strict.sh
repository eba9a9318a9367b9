#!/usr/bin/env bash
# Strict mode end to end: sandbox-init runs in a sandbox namespace joined to
# an "internet" namespace, and a payload script (as an unprivileged test
# user) tries every way out. Allowed HTTP through the proxy works, a blocked
# host is refused; direct TCP (v4 and v6), UDP, QUIC, direct DNS and DNS over
# TLS never reach the internet; the payload holds no capability, cannot list
# or flush the rules, signal egressd or read its memory; the table is the
# one meant; a UDP packet sent just before the payload exits is audited and
# promptly stamped; and killing egressd leaves the payload with no network,
# then (failClosed) stops it. Transparent and resolver assertions are written
# and report PENDING until egressd has those listeners.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
lib_policy strict

cat >"$T/payload.sh" <<'EOT'
#!/bin/sh
# Each line: NAME=RESULT, read back by the test.
r() { printf '%s=%s\n' "$1" "$2"; }
r uid "$(id -u)"
r caps "$(grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status | awk '{print $2}' | sort -u | tr '\n' ' ')"
r nnp "$(awk '/^NoNewPrivs/ {print $2}' /proc/self/status)"
r proxy "$HTTP_PROXY"
r allowed "$(curl -s --max-time 10 http://allowed.test/)"
r blocked "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://blocked.test/)"
r direct4 "$(curl -s --noproxy '*' --max-time 4 http://198.18.0.1/ || echo fail)"
r direct6 "$(curl -s --noproxy '*' --max-time 4 'http://[2001:2::1]/' || echo fail)"
r transparent "$(curl -s --noproxy '*' --max-time 6 --resolve allowed.test:80:198.18.0.1 http://allowed.test/ || echo fail)"
r transparent_blocked "$(curl -s --noproxy '*' --max-time 6 -o /dev/null -w '%{http_code}' --resolve blocked.test:80:198.18.0.1 http://blocked.test/)"
r getent "$(getent ahostsv4 allowed.test | awk 'NR==1 {print $1}')"
r name_noproxy "$(curl -4 -s --noproxy '*' --max-time 8 http://allowed.test/ || echo fail)"
r transparent6 "$(curl -s --noproxy '*' --max-time 6 --resolve 'allowed.test:80:[2001:2::1]' http://allowed.test/ || echo fail)"
r udp "$(python3 -c '
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(b"x", ("198.18.0.1", 7)); print(s.recv(64).decode())
except OSError as e: print("fail", e.__class__.__name__)')"
r quic "$(python3 -c '
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(b"q", ("198.18.0.1", 443)); print(s.recv(64).decode())
except OSError as e: print("fail", e.__class__.__name__)')"
r dot "$(python3 -c '
import socket
try:
    c=socket.create_connection(("198.18.0.1", 853), timeout=3); print(c.recv(8).decode().strip())
except OSError as e: print("fail", e.__class__.__name__)')"
r dns_direct "$(python3 -c '
import socket, struct; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
q=struct.pack("!HHHHHH",7,0x100,1,0,0,0)+b"\x08sidedoor\x04test\x00\x00\x01\x00\x01"
try:
    s.sendto(q, ("198.18.0.1", 53)); a=s.recv(512); print("rcode", a[3]&15, "answers", a[7])
except OSError as e: print("fail", e.__class__.__name__)')"
r icmp "$(python3 -c '
import socket
try:
    s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); s.settimeout(2)
    s.sendto(b"\x08\x00\x00\x00\x00\x01\x00\x01", ("198.18.0.1", 0)); print(s.recv(64))
except OSError as e: print("fail", e.__class__.__name__)')"
r icmp6 "$(python3 -c '
import socket
try:
    s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_ICMPV6); s.settimeout(2)
    s.sendto(b"\x80\x00\x00\x00\x00\x01\x00\x01", ("2001:2::1", 0)); print(s.recv(64))
except OSError as e: print("fail", e.__class__.__name__)')"
r nft_list "$(nft list ruleset >/dev/null 2>&1 && echo open || echo refused)"
r nft_flush "$(nft flush ruleset >/dev/null 2>&1 && echo open || echo refused)"
EGPID=$(pgrep -u "$EG_UID" -x egressd | head -1)
r egpid "$EGPID"
r kill "$(kill -TERM "$EGPID" 2>/dev/null && echo open || echo refused)"
r mem "$(head -c1 /proc/$EGPID/mem >/dev/null 2>&1 && echo open || echo refused)"
r environ "$(cat /proc/$EGPID/environ >/dev/null 2>&1 && echo open || echo refused)"
r ca_var "${SSL_CERT_FILE:-unset}"
r https_allowed "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' https://allowed.test/ || true)"
exit 0
EOT
chmod 755 "$T/payload.sh"

# Unprivileged ICMP echo sockets for every group, as on many hosts: the
# rules, not the sysctl, must keep ICMP in.
in_box sysctl -q -w net.ipv4.ping_group_range="0 2147483647"
box_init --mode strict -- env EG_UID="$EG_UID" /bin/sh "$T/payload.sh"
expect_eq "$RC" 0 "strict payload exit status"
get() { printf '%s\n' "$OUT" | sed -n "s/^$1=//p" | head -1; }

expect_eq "$(get uid)" "$BOX_UID" "payload runs as the payload user"
expect_eq "$(get caps)" "0000000000000000 " "payload: every capability set empty (incl. bounding, ambient)"
expect_eq "$(get nnp)" 1 "payload: no_new_privs"
expect_eq "$(get proxy)" "http://127.0.0.1:18080" "HTTP_PROXY set for the payload"
expect_eq "$(get allowed)" "internet-origin" "allowed host through the proxy"
expect_eq "$(get blocked)" 403 "blocked host through the proxy"
expect_absent "$(get direct4)" "internet-origin" "direct IPv4 TCP does not reach the internet"
expect_absent "$(get direct6)" "internet-origin" "direct IPv6 TCP does not reach the internet"
expect_contains "$(get udp)" fail "UDP does not come back"
expect_contains "$(get quic)" fail "QUIC (UDP 443) does not come back"
expect_contains "$(get dot)" fail "DNS over TLS (853) does not connect"
expect_contains "$(get icmp)" fail "ICMP echo does not come back"
expect_contains "$(get icmp6)" fail "ICMPv6 echo does not come back"
expect_absent "$(get dns_direct)" "answers 1" "direct DNS gets no outside answer"
expect_eq "$(get nft_list)" refused "payload cannot list the ruleset"
expect_eq "$(get nft_flush)" refused "payload cannot flush the ruleset"
expect_ne "$(get egpid)" "" "egressd was running during the payload"
expect_eq "$(get kill)" refused "payload cannot signal egressd"
expect_eq "$(get mem)" refused "payload cannot read egressd's memory"
expect_eq "$(get environ)" refused "payload cannot read egressd's environment"

# What reached the internet: only egressd's requests, never the payload's.
INET=$(cat "$T/inet.log")
expect_absent "$INET" "http direct" "no direct HTTP request reached the internet"
expect_contains "$INET" "http via-egressd GET /" "the allowed request left through egressd"
expect_absent "$INET" "udp 7" "no UDP datagram reached the internet"
expect_absent "$INET" "udp 443" "no QUIC datagram reached the internet"
expect_absent "$INET" "tcp 853" "no DNS-over-TLS connection reached the internet"
expect_absent "$INET" "dns sidedoor.test" "no direct DNS query reached the internet"

# The rules stay, as meant, after the payload's attempts.
TABLE=$(in_box nft list table inet opencode_sandbox 2>&1)
expect_contains "$TABLE" "meta skuid $EG_UID accept" "egressd's uid alone may leave"
expect_contains "$TABLE" "meta l4proto tcp redirect to :18081" "TCP redirected to the transparent listener"
expect_contains "$TABLE" "udp dport 53 redirect to :53" "DNS redirected to the resolver"
expect_contains "$TABLE" "policy drop" "everything else dropped"

AUDIT=$(cat "$T/audit.jsonl" 2>/dev/null)
expect_contains "$AUDIT" '"host":"blocked.test"' "the blocked request is audited"

# Packets the rules drop are in the audit: who sent what where, and why.
pkt() { # pkt PROTO PORT|null HOST: the first matching packet event
	jq -c --arg p "$1" --argjson port "$2" --arg h "$3" --argjson uid "$BOX_UID" \
		'select(.event == "packet" and .proto == $p and (.port // null) == $port and
			.host == $h and .uid == $uid and .action == "block" and
			.rule == "strict-drop" and .mode == "strict")' "$T/audit.jsonl" 2>/dev/null | head -1
}
expect_ne "$(pkt udp 7 198.18.0.1)" "" "UDP attempt in the audit (proto, port, uid)"
expect_contains "$(pkt udp 443 198.18.0.1)" "QUIC" "QUIC attempt in the audit, named as QUIC"
expect_contains "$(pkt tcp 853 198.18.0.1)" "DNS over TLS" "DNS-over-TLS attempt in the audit"
expect_contains "$(pkt icmp null 198.18.0.1)" "ICMP" "ICMP attempt in the audit"
expect_ne "$(pkt icmpv6 null 2001:2::1)" "" "ICMPv6 attempt in the audit"
expect_eq "$(jq -c "select(.event == \"packet\" and .uid == $EG_UID)" "$T/audit.jsonl" | head -1)" "" \
	"egressd's own packets are never dropped nor logged"
expect_eq "$(jq -c 'select(.event == "packet" and .uid == null)' "$T/audit.jsonl" | head -1)" "" \
	"packets the kernel sends on its own (no socket, no uid) are not audited"

if egressd_has --transparent; then
	expect_eq "$(get transparent)" "internet-origin" "allowed host without proxy variables (transparent)"
	expect_eq "$(get transparent_blocked)" 403 "blocked host without proxy variables (transparent)"
	# Redirected IPv6 arrives at [::1]: egressd must serve every fd named "transparent".
	expect_eq "$(get transparent6)" "internet-origin" "allowed host over IPv6 without proxy variables"
	expect_contains "$AUDIT" '"host":"198.18.0.1"' "direct-address attempt audited"
else
	pending "transparent listener" "allowed host reachable with proxy variables unset"
	pending "transparent listener" "blocked host refused (403) with proxy variables unset"
	pending "transparent listener" "direct-address attempt in the audit"
	expect_absent "$(get transparent)" "internet-origin" "without the transparent listener nothing leaves"
fi
if egressd_has --dns; then
	expect_eq "$(get getent)" "198.18.0.1" "names resolve for the payload through egressd's resolver"
	expect_contains "$AUDIT" '"qname":"sidedoor.test"' "direct DNS attempt audited"
else
	pending "resolver" "names resolve for the payload through egressd's resolver"
	pending "resolver" "direct DNS attempt in the audit"
fi
if egressd_has --dns && egressd_has --transparent; then
	expect_eq "$(get name_noproxy)" "internet-origin" "name resolved by egressd, then transparent"
else
	pending "resolver + transparent listener" "a name reachable with proxy variables unset"
fi
if egressd_has --ca-out; then
	expect_ne "$(get ca_var)" unset "SSL_CERT_FILE points at the run bundle"
	expect_eq "$(get https_allowed)" 200 "allowed HTTPS with the run CA"
else
	pending "TLS interception" "allowed HTTPS verified with the run CA"
	expect_eq "$(get ca_var)" unset "no CA variable without a run CA"
fi

# A drop just before the payload exits is audited before egressd stops, and
# stamped when it happened (the NFLOG group flushes every packet at once).
box_init --mode strict -- python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
print("sent=%d" % int(time.time() * 1000), flush=True)
try:
    s.sendto(b"z", ("198.18.0.1", 4242))
except OSError:
    pass'
expect_eq "$RC" 0 "drop-then-exit payload exit status"
LAST=$(pkt udp 4242 198.18.0.1)
expect_ne "$LAST" "" "a UDP packet sent right before the payload exited is in the audit"
SENT=$(get sent)
LAG=$(printf '%s\n' "$LAST" | python3 -c '
import datetime, json, sys
ev = json.loads(sys.stdin.read() or "{}")
ts = datetime.datetime.strptime(ev.get("ts", "1970-01-01T00:00:00.000Z"), "%Y-%m-%dT%H:%M:%S.%fZ")
ms = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
print(ms - int(sys.argv[1]))' "$SENT")
if [ -n "$SENT" ] && [ "$LAG" -ge -50 ] && [ "$LAG" -lt 400 ]; then ok; else
	bad "the packet event is stamped when the packet was dropped: ${LAG} ms after the send"
fi

# egressd dies while the payload runs: no network, then the payload is stopped.
cat >"$T/payload2.sh" <<'EOT'
#!/bin/sh
trap 'echo got-term; exit 3' TERM
touch "$MARK"
i=0
while [ $i -lt 100 ]; do
	dead=; [ -e "$MARK.dead" ] && dead=1 && echo after-death
	curl -s --max-time 1 http://allowed.test/ 2>/dev/null | grep -q internet-origin &&
		echo "proxy-ok${dead:+ leaked}"
	curl -s --noproxy '*' --max-time 1 http://198.18.0.1/ 2>/dev/null | grep -q internet-origin &&
		echo "direct-ok leaked"
	sleep 0.2
	i=$((i + 1))
done
echo not-stopped
EOT
chmod 755 "$T/payload2.sh"
(
	for _ in $(seq 100); do [ -e "$T/w/mark" ] && break; sleep 0.1; done
	sleep 0.5
	pkill -KILL -u "$EG_UID" -x egressd
	touch "$T/w/mark.dead"
) &
KILLER=$!
box_init --mode strict -- env MARK="$T/w/mark" /bin/sh "$T/payload2.sh"
wait "$KILLER"
expect_eq "$RC" 125 "failClosed: sandbox-init exits 125 when egressd dies"
expect_contains "$ERR" "egressd exited" "a clear line when egressd dies"
expect_contains "$ERR" "the rules stay in force" "the line says the network stays closed"
expect_contains "$OUT" "proxy-ok" "the network worked through egressd before it died"
expect_contains "$OUT" "got-term" "failClosed stops the payload"
expect_absent "$OUT" "leaked" "no request left once egressd was gone"
expect_absent "$OUT" "not-stopped" "the payload did not run on"
TABLE=$(in_box nft list table inet opencode_sandbox 2>&1)
expect_contains "$TABLE" "policy drop" "rules remain after egressd died"

finish
