#!/usr/bin/env bash
# The resolver inside egressd, driven by dig against a stub authority
# (dns_stub.py) on loopback: allowed names over UDP and TCP (A, AAAA);
# blocked exact and wildcard names and CNAME chains into them answered
# NXDOMAIN with an Extended DNS Error; private answers for public names
# dropped unless an exact allowlist entry lifts the guard; the built-in
# DNS-over-HTTPS list; ECH removed from HTTPS records; TTL caching, expiry
# and negative caching; coalescing of identical concurrent questions;
# truncation and the client's TCP retry; pipelined TCP queries; malformed
# queries answered FORMERR and unsupported ones REFUSED or NOTIMP while the
# daemon keeps serving; the dns audit events (every one with its action and
# rule, malformed queries included); strict and off modes.

# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

start_stub
P="$T/policy.yaml"
write_dns_policy "$P" practical
start_resolver --config "$P" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1

# --- allowed names resolve, over UDP and over TCP ---
dq www.example.test A
expect_eq "$(dq_status)" NOERROR "A over UDP: status"
expect_eq "$(dq_answers A)" 198.18.0.10 "A over UDP: address"
dq www.example.test AAAA
expect_eq "$(dq_answers AAAA)" 2001:2::10 "AAAA over UDP"
dq +tcp www.example.test AAAA
expect_eq "$(dq_answers AAAA)" 2001:2::10 "AAAA over TCP"
expect_contains "$OUT" "(TCP)" "AAAA over TCP went over TCP"
dq +tcp alias.example.test A
expect_eq "$(dq_answers A)" 198.18.0.10 "CNAME to an allowed name, over TCP"

# --- blocked names never leave ---
N0=$(wc -l <"$STUB_LOG")
dq blocked.example.test A
expect_eq "$(dq_status)" NXDOMAIN "blocked exact name: NXDOMAIN"
expect_contains "$(dq_ede)" "15 (Blocked)" "blocked exact name: EDE 15"
expect_contains "$(dq_ede)" "blocked.example.test (blocklist" "blocked exact name: EDE names the rule"
dq +tcp deep.a.ads.example.test AAAA
expect_eq "$(dq_status)" NXDOMAIN "blocked wildcard name over TCP: NXDOMAIN"
expect_contains "$(dq_ede)" '*.ads.example.test' "blocked wildcard: EDE names the rule"
expect_eq "$(wc -l <"$STUB_LOG")" "$N0" "blocked names were not asked upstream"
EV=$(audit_last '.event == "dns" and .qname == "blocked.example.test"')
OUT=$EV
expect_eq "$(jqf '[.action, .rule, .qtype, .rcode] | join(" ")')" \
    "block blocked.example.test A NXDOMAIN" "audit: blocked query"

# --- well-known DNS-over-HTTPS services: the built-in list ---
dq dns.google A
expect_eq "$(dq_status)" NXDOMAIN "DoH provider: NXDOMAIN"
expect_contains "$(dq_ede)" "doh-provider (doh, builtin)" "DoH provider: EDE names the built-in rule"
expect_eq "$(stub_count dns.google)" 0 "DoH provider name not asked upstream"

# --- CNAME cloaking ---
dq cloak.example.test A
expect_eq "$(dq_status)" NXDOMAIN "CNAME into a blocked name: NXDOMAIN"
expect_contains "$(dq_ede)" '*.ads.example.test' "CNAME cloaking: EDE names the rule"
expect_eq "$(dq_answers A)" "" "CNAME cloaking: no address leaks"

# --- rebinding: private answers for public names are dropped ---
dq rebind.example.test A
expect_eq "$(dq_status)" NXDOMAIN "public name on 127.0.0.1: dropped"
expect_contains "$(dq_ede)" "private-address" "rebinding: EDE names the rule"
dq rebind10.example.test A
expect_eq "$(dq_answers A)" "" "public name on 10.1.2.3: dropped"
dq mixed.example.test A
expect_eq "$(dq_answers A)" 198.18.0.15 "mixed answer: only the public address stays"
dq trusted.example.test A
expect_eq "$(dq_answers A)" 10.9.9.9 "exact allowlist entry lifts the guard"

# --- ECH and address hints leave HTTPS records ---
dq ech.example.test HTTPS
expect_contains "$OUT" 'alpn="h2"' "HTTPS record kept"
case "$OUT" in *ech=* | *ipv4hint=*) bad "HTTPS record still has ech or ipv4hint: $OUT" ;; *) ok ;; esac

# --- caching by TTL, expiry, negative caching ---
dq short.example.test A
dq short.example.test A
expect_eq "$(stub_count short.example.test 1)" 1 "second query answered from the cache"
EV=$(audit_last '.event == "dns" and .qname == "short.example.test"')
OUT=$EV
expect_eq "$(jqf .cached)" true "audit marks the cache hit"
sleep 2.2
dq short.example.test A
expect_eq "$(stub_count short.example.test 1)" 2 "expired after its TTL (2 s)"
dq nope.example.test A
expect_eq "$(dq_status)" NXDOMAIN "unknown name: NXDOMAIN"
dq nope.example.test A
expect_eq "$(stub_count nope.example.test 1)" 1 "NXDOMAIN cached (SOA minimum 5 s)"

# --- coalescing: one upstream question for 20 identical concurrent ones ---
for i in $(seq 1 20); do
	dig @127.0.0.1 -p "$DNS_PORT" +tries=1 +time=8 +short slow.example.test A >"$T/slow.$i" &
done
wait_jobs=0
for i in $(seq 1 20); do
	for ((k = 0; k < 200; k++)); do [ -s "$T/slow.$i" ] && break; sleep 0.05; done
	if [ "$(cat "$T/slow.$i")" = 198.18.0.16 ]; then
		wait_jobs=$((wait_jobs + 1))
	else
		printf '# coalescing: client %s got: %s\n' "$i" "$(cat "$T/slow.$i")" >&2
	fi
done
expect_eq "$wait_jobs" 20 "coalescing: every client got the answer"
# One question: its first try, and the retransmission that follows once the
# measured timeout (a few hundred ms here) passes without an answer.
N=$(stub_count slow.example.test 1)
if [ "$N" -ge 1 ] && [ "$N" -le 2 ]; then ok; else bad "coalescing: $N upstream queries, want 1 or 2"; fi

# --- truncation: a large answer is cut over UDP, complete over TCP ---
dq +ignore +noedns big.example.test TXT
expect_contains "$OUT" " tc" "UDP without EDNS: TC set"
dq big.example.test TXT
expect_contains "$OUT" "(TCP)" "dig retried over TCP after TC"
expect_eq "$(printf '%s\n' "$OUT" | awk '$4 == "TXT"' | wc -l)" 1 "TXT answer complete over TCP"

# --- TCP: pipelined queries in one segment, each answered (in any order) ---
python3 - "$DNS_PORT" >"$T/pipelined" <<'EOF'
import socket, struct, sys
def query(qid, name):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0\0\1\0\1"
    return struct.pack(">H", len(q)) + q
names = ["www.example.test", "blocked.example.test", "pipe1.example.test",
         "alias.example.test", "slow.example.test"]
t = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t.settimeout(8)
t.sendall(b"".join(query(100 + i, n) for i, n in enumerate(names)))
buf, got = b"", {}
while len(got) < len(names):
    data = t.recv(65535)
    if not data:
        break
    buf += data
    while len(buf) >= 2 and len(buf) >= 2 + struct.unpack(">H", buf[:2])[0]:
        n = struct.unpack(">H", buf[:2])[0]
        msg, buf = buf[2:2 + n], buf[2 + n:]
        got[struct.unpack(">H", msg[:2])[0]] = msg[3] & 15
print(" ".join("%d:%d" % (k, got[k]) for k in sorted(got)))
EOF
expect_eq "$(cat "$T/pipelined")" "100:0 101:3 102:3 103:0 104:0" "TCP: five pipelined queries answered"

# --- malformed queries: FORMERR or silence, and the daemon serves on ---
python3 - "$DNS_PORT" >"$T/malformed" <<'EOF'
import socket, sys
port = int(sys.argv[1])
hdr = bytes.fromhex("beef01000001000000000000")
cases = [
    hdr + bytes.fromhex("c00c00010001"),            # pointer loop in the question
    hdr + bytes.fromhex("0561620001"),              # truncated label
    bytes.fromhex("beef01000000000000000000"),      # no question
    hdr + b"\x3f" + b"a" * 63 + b"\x3f" + b"a" * 63 + b"\x3f" + b"a" * 63 + b"\x3f" + b"a" * 63 + b"\x00\x00\x01\x00\x01",
    bytes.fromhex("beef0100000100010000000001610000010001"),  # answer count in a query
    b"\x00" * 5,                                   # not even a header
]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
got = []
for c in cases:
    s.sendto(c, ("127.0.0.1", port))
    try:
        r, _ = s.recvfrom(4096)
        got.append(str(r[3] & 15))
    except socket.timeout:
        got.append("-")
t = socket.create_connection(("127.0.0.1", port))
t.sendall(len(cases[0]).to_bytes(2, "big") + cases[0])
t.settimeout(2)
r = t.recv(4096)
got.append(str(r[5] & 15) if len(r) >= 6 else "-")
print(" ".join(got))
EOF
expect_eq "$(cat "$T/malformed")" "1 1 1 1 1 - 1" "malformed queries: FORMERR, silence without a header"
# Queries of a kind the resolver does not serve: REFUSED (class CH, a zone
# transfer), NOTIMP (an opcode other than QUERY), and a response sent to it.
python3 - "$DNS_PORT" >"$T/unsupported" <<'EOF'
import socket, sys
port = int(sys.argv[1])
q = bytes.fromhex("01610474657374 00")  # a.test
cases = [
    bytes.fromhex("bee1 0100 0001 0000 0000 0000") + q + bytes.fromhex("0010 0003"),  # TXT CH
    bytes.fromhex("bee2 0100 0001 0000 0000 0000") + q + bytes.fromhex("00fc 0001"),  # AXFR
    bytes.fromhex("bee3 2100 0001 0000 0000 0000") + q + bytes.fromhex("0001 0001"),  # opcode 4
    bytes.fromhex("bee4 8180 0001 0000 0000 0000") + q + bytes.fromhex("0001 0001"),  # a response
]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
got = []
for c in cases:
    s.sendto(c, ("127.0.0.1", port))
    try:
        r, _ = s.recvfrom(4096)
        got.append(str(r[3] & 15))
    except socket.timeout:
        got.append("-")
print(" ".join(got))
EOF
expect_eq "$(cat "$T/unsupported")" "5 5 4 -" "unsupported queries: REFUSED, NOTIMP, silence for a response"
sleep 0.3
# Every dns event carries action and rule, the malformed and refused ones too.
expect_eq "$(jq -c 'select(.event == "dns" and (.action == null or .rule == null or .source == null))' "$EG_AUDIT" | wc -l)" 0 \
    "every dns audit event names its action, rule and source"
expect_eq "$(jq -r 'select(.event == "dns" and .rule == "malformed-query") | [.action, .rcode // "-"] | join(" ")' "$EG_AUDIT" | sort | uniq -c | awk '{print $1, $2, $3}' | tr '\n' ',')" \
    "2 block -,6 block FORMERR," "malformed queries audited as blocks (FORMERR, or no answer at all)"
expect_eq "$(jq -r 'select(.event == "dns" and .rule == "unsupported-query") | [.action, .rcode, .error] | join(" ")' "$EG_AUDIT" | tr '\n' ',')" \
    "block REFUSED only class IN is served,block REFUSED zone transfers are not served,block NOTIMP opcode not supported," \
    "unsupported queries audited as blocks, with what was refused"
expect_eq "$(audit_last '.event == "dns" and .error == "a response, not a query"' | jq -r '[.action, .rule, .source] | @tsv')" \
    "block	malformed-query	builtin" "a response sent to the resolver is audited too"
dq www.example.test A
expect_eq "$(dq_answers A)" 198.18.0.10 "still serving after malformed queries"
if kill -0 "$EG_PID" 2>/dev/null; then ok; else bad "egressd died"; fi
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM (and clean under the sanitizers)"

# --- strict mode: only allowlisted names; off mode: nothing ---
S="$T/strict.yaml"
write_dns_policy "$S" strict
start_resolver --config "$S" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1
dq www.example.test A
expect_eq "$(dq_status)" NXDOMAIN "strict: unlisted name blocked"
expect_contains "$(dq_ede)" "strict-default-deny" "strict: EDE names the rule"
dq trusted.example.test A
expect_eq "$(dq_answers A)" 10.9.9.9 "strict: allowlisted name resolves"
O="$T/off.yaml"
write_dns_policy "$O" "off"
start_resolver --config "$O" --upstream-dns "127.0.0.1:$STUB_PORT" || exit 1
dq trusted.example.test A
expect_eq "$(dq_status)" REFUSED "off: even an allowlisted name is refused"

finish
