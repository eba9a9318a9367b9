#!/usr/bin/env bash
# HTTPS interception end to end. A test PKI (RSA-2048 CA and leaves, made
# here with openssl) and three HTTPS origins on port 443 of their own
# loopback addresses: one good, one whose certificate names another host,
# one signed by a CA egressd does not trust. egressd runs with
# --upstream-ca (the test CA) and exports its run CA with --ca-out; curl,
# openssl s_client and a WebSocket client drive it. Checks: GET allowed and
# POST blocked inside TLS, GraphQL query/mutation over HTTPS (block and flag
# modes), upstream certificate problems -> 502 and audited, SNI/CONNECT
# mismatch refused, Host mismatch refused, a client that does not trust the
# CA audited with a hint and a readable error, passthrough tunnelled
# untouched (its ClientHello read first: another SNI, or bytes that are not
# TLS, are cut), HTTPS to another port of an unlisted host intercepted like
# 443 and plain HTTP or other bytes inside such a tunnel cut, connect events
# carrying the SNI, upstream TLS errors audited as sentences, WebSocket echo
# (wss and ws), the leaf verifies against the run CA, the CA key is in no
# file egressd writes, its environment or its arguments, large bodies both
# ways and pipelined requests in one record arrive intact, idle
# intercepted connections give their TLS buffers back, and a bad
# upstream trust store is refused (or, when only parsing finds it, fails
# every upstream handshake).
# Binding port 443 needs root.
# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "proxy_tls needs root: its origins listen on port 443 of loopback addresses" >&2
	exit 1
fi

NET="127.77.$((RANDOM % 250 + 1))"
GOOD="$NET.1" WRONG="$NET.2" ROGUE="$NET.3"
P="$T/pki"
mkdir -p "$P"

# mkca NAME: a self-signed RSA-2048 CA in $P/NAME.pem, $P/NAME.key.
mkca() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.pem" -days 2 \
	    -subj "/CN=egress test $1" -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}
# mkleaf NAME CA SAN: a server certificate signed by CA.
mkleaf() {
	openssl req -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.csr" \
	    -subj "/CN=$1" 2>/dev/null
	printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
	    "$3" >"$P/$1.ext"
	openssl x509 -req -in "$P/$1.csr" -CA "$P/$2.pem" -CAkey "$P/$2.key" -CAcreateserial \
	    -days 2 -extfile "$P/$1.ext" -out "$P/$1.pem" 2>/dev/null
}
mkca testca
mkca rogueca
mkleaf good testca "DNS:origin.test,DNS:pass.test,DNS:allowed.test,DNS:gql.test"
mkleaf wrong testca "DNS:other.test"
mkleaf rogue rogueca "DNS:rogue.test"
if [ ! -s "$P/good.pem" ] || [ ! -s "$P/wrong.pem" ] || [ ! -s "$P/rogue.pem" ]; then
	echo "cannot make the test PKI" >&2
	exit 1
fi

start_origin --bind "$GOOD" --tls-cert "$P/good.pem" --tls-key "$P/good.key" \
    --tls-port 443 --tls-port-file "$T/origin.tls" \
    --dns-map "wrong.test=$WRONG" --dns-map "rogue.test=$ROGUE"
wait_file "$T/origin.tls" 10 || {
	echo "HTTPS origin did not start: $(cat "$T/origin.out")" >&2
	exit 1
}
for o in wrong rogue; do
	addr=$WRONG
	[ $o = rogue ] && addr=$ROGUE
	python3 "$ORIGIN_PY" --log "$T/$o.jsonl" --bind "$addr" --parent $$ \
	    --tls-cert "$P/$o.pem" --tls-key "$P/$o.key" --tls-port 443 \
	    --tls-port-file "$T/$o.tls" >"$T/$o.out" 2>&1 &
	track_pid $!
	wait_file "$T/$o.tls" 10 || {
		echo "origin $o did not start: $(cat "$T/$o.out")" >&2
		exit 1
	}
done

# A second HTTPS origin on another port of the good address: HTTPS to a
# port other than 443 (as 8443 would be), and its plain port.
python3 "$ORIGIN_PY" --log "$T/alt.jsonl" --bind "$GOOD" --parent $$ --port-file "$T/alt.port" \
    --tls-cert "$P/good.pem" --tls-key "$P/good.key" --tls-port-file "$T/alt.tls" >"$T/alt.out" 2>&1 &
track_pid $!
if ! wait_file "$T/alt.tls" 10 || ! wait_file "$T/alt.port" 10; then
	echo "origin alt did not start: $(cat "$T/alt.out")" >&2
	exit 1
fi
ALT=$(cat "$T/alt.tls") ALT_PLAIN=$(cat "$T/alt.port")
# Two upstreams that fail the TLS handshake, on the good address: one
# answers a ClientHello with an SSH banner, one closes the connection.
for mode in banner close; do
	python3 - "$GOOD" "$T/$mode.port" "$mode" $$ >"$T/$mode.out" 2>&1 <<'PY' &
import os, socket, sys, time
addr, port_file, mode, parent = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ls = socket.socket()
ls.bind((addr, 0))
ls.listen(16)
ls.settimeout(1.0)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % ls.getsockname()[1])
os.rename(port_file + ".tmp", port_file)
deadline = time.time() + 600
while time.time() < deadline:
    try:
        os.kill(parent, 0)
    except OSError:
        break
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    c.settimeout(5.0)
    try:
        c.recv(4096)
        if mode == "banner":
            c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
    except OSError:
        pass
    c.close()
PY
	track_pid $!
	wait_file "$T/$mode.port" 10 || {
		echo "the $mode server did not start: $(cat "$T/$mode.out")" >&2
		exit 1
	}
done
BANNER=$(cat "$T/banner.port") CLOSER=$(cat "$T/close.port")

cat >"$T/policy.yaml" <<EOF
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.0/8", "allowed.test"]
  passthrough: ["pass.test"]
EOF
cat >"$T/flag.yaml" <<EOF
version: 1
network:
  onViolation: flag
EOF

EGCA="$T/eg-ca.pem"
EGB="$T/eg-bundle.pem"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --upstream-ca "$P/testca.pem" \
    --ca-out "$EGCA" --ca-bundle-out "$EGB" || exit 1
tcurl() { pcurl --cacert "$EGCA" "$@"; }

# --- GET allowed inside TLS; what the origin and the audit saw ---
run tcurl -o "$T/body" -w '%{http_code} %{ssl_verify_result}' https://origin.test/hello
expect_eq "$OUT" "200 0" "GET https through egressd, verified against the run CA"
expect_contains "$(cat "$T/body")" "hello from origin" "response body"
line=$(jq -c 'select(.target == "/hello" and .tls == true)' "$ORIGIN_LOG" | tail -n 1)
expect_eq "$(printf '%s' "$line" | jq -r .sni)" origin.test "upstream TLS sends SNI"
expect_eq "$(printf '%s' "$line" | jq -r .cipher)" TLS_AES_128_GCM_SHA256 \
    "upstream TLS offers AES-128-GCM first (the origin takes the client's order)"
expect_eq "$(printf '%s' "$line" | jq -r .method)" GET "origin got the GET, origin-form"
expect_eq "$(audit_last '.event == "connect" and .host == "origin.test"' | jq -r '[.action, .tls, .status, .port, .sni] | @tsv')" \
    "allow	intercept	200	443	origin.test" "CONNECT audited as intercepted, with the SNI the client sent"
expect_eq "$(audit_last '.event == "http" and .path == "/hello"' | jq -r '[.action, .scheme, .method, .status, .host, .addr] | @tsv')" \
    "allow	https	GET	200	origin.test	$GOOD" "request inside TLS audited with scheme https"

# --- keep-alive inside one TLS connection: two requests, one client handshake ---
nconnect=$(jq -c 'select(.event == "connect")' "$EG_AUDIT" | wc -l)
run tcurl -o /dev/null -o /dev/null -w '%{http_code}\n' https://origin.test/hello https://origin.test/chunked
expect_eq "$(printf '%s' "$OUT" | tr '\n' ' ')" "200 200" "two requests over one intercepted connection"
sleep 0.2
expect_eq "$(jq -c 'select(.event == "connect")' "$EG_AUDIT" | wc -l)" $((nconnect + 1)) "one CONNECT for both"

# --- large bodies through both TLS legs, intact ---
# The generator numbers its blocks: a lost, repeated or reordered record
# changes the hash. A download streams through the relay in full records;
# once more with Connection: close to a client that reads slowly, so egressd
# closes while records it made are still waiting for the socket; and an
# upload (an allowlisted host takes any method).
sha() { sha256sum | cut -d' ' -f1; }
BIG=$((9 * 1024 * 1024 + 12345))
want=$(python3 "$ORIGIN_PY" --log /dev/null --gen "$BIG" | sha)
expect_eq "$(tcurl --max-time 60 "https://origin.test/big?n=$BIG" | sha)" "$want" \
    "9 MiB download through interception intact"
expect_eq "$(tcurl --max-time 60 --limit-rate 3M -H 'Connection: close' "https://origin.test/big?n=$BIG" | sha)" \
    "$want" "and with Connection: close to a slow reader"
# A slow reader of a large intercepted download: both TLS legs hold back
# (the ciphertext read from the origin pauses at its bound, decrypting
# stops while the client side is full), so egressd's memory stays flat.
SLOW=$((40 * 1024 * 1024))
start_rss=$(eg_kb VmRSS)
tcurl --max-time 90 --limit-rate 4M -o "$T/slow.out" "https://origin.test/big?n=$SLOW" 2>"$T/slow.err" &
CURL_PID=$!
track_pid "$CURL_PID"
max_rss=$(eg_rss_peak "$CURL_PID")
wait "$CURL_PID"
expect_eq "$?" 0 "slow intercepted download finished ($(cat "$T/slow.err"))"
expect_eq "$(sha <"$T/slow.out")" "$(python3 "$ORIGIN_PY" --log /dev/null --gen "$SLOW" | sha)" \
    "slow intercepted download intact"
echo "# slow TLS reader: $SLOW bytes at 4 MiB/s, egressd VmRSS ${start_rss} -> peak ${max_rss} kB"
if ! asan_build; then
	expect_eq "$([ "$((max_rss - start_rss))" -lt 16384 ] && echo yes)" yes \
	    "egressd did not buffer the slow intercepted response (grew $((max_rss - start_rss)) kB)"
fi
# Idle intercepted keep-alive connections give their TLS record buffers
# back once they wait for a next request (at egressd's once-a-second
# tick): 200 of them, each after a 64 KiB response, cost well under the
# ~34 KiB per connection that kept buffers would add.
start_rss=$(eg_kb VmRSS)
mkfifo "$T/idle.in"
python3 "$SRC_DIR/tests/integration/idleconns.py" --proxy "127.0.0.1:$EG_PORT" --cafile "$EGCA" \
    --hold 60 200 "https://origin.test/big?n=65536" <"$T/idle.in" >"$T/idle.out" 2>"$T/idle.err" &
IDLE_PID=$!
track_pid "$IDLE_PID"
exec 7>"$T/idle.in"
for ((i = 0; i < 600; i++)); do
	[ -s "$T/idle.out" ] && break
	kill -0 "$IDLE_PID" 2>/dev/null || break
	sleep 0.1
done
expect_eq "$(cat "$T/idle.out")" "READY 200" "200 idle intercepted connections held ($(cat "$T/idle.err"))"
sleep 2.5
idle_rss=$(eg_kb VmRSS)
per_conn=$(((idle_rss - start_rss) / 200))
echo "# 200 idle intercepted connections: egressd VmRSS ${start_rss} -> ${idle_rss} kB, ${per_conn} kB each"
if ! asan_build; then
	expect_eq "$([ "$per_conn" -le 48 ] && echo yes)" yes \
	    "an idle intercepted connection costs <= 48 kB (${per_conn} kB)"
fi
expect_eq "$(tcurl --max-time 10 -s -o /dev/null -w '%{http_code}' https://origin.test/hello)" 200 \
    "egressd serves while holding them"
exec 7>&-
wait "$IDLE_PID"
expect_eq "$?" 0 "the idle connections ended cleanly"
python3 "$ORIGIN_PY" --log /dev/null --gen $((5 * 1024 * 1024 + 777)) >"$T/up.bin"
run tcurl --max-time 60 -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$T/up.bin" \
    https://allowed.test/echo
expect_eq "$(jqf .sha256)" "$(sha <"$T/up.bin")" "5 MiB upload through interception intact"

# --- pipelined requests in one TLS record: every one answered, in order ---
reqs=""
for i in $(seq 1 19); do
	reqs="${reqs}GET /hello?n=$i HTTP/1.1\r\nHost: origin.test\r\n\r\n"
done
reqs="${reqs}GET /hello?n=20 HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n"
printf '%b' "$reqs" >"$T/pipelined"
run timeout 20 openssl s_client -quiet -proxy "127.0.0.1:$EG_PORT" -connect origin.test:443 \
    -servername origin.test -CAfile "$EGCA" -verify_return_error -ign_eof <"$T/pipelined"
expect_eq "$(printf '%s\n' "$OUT" | grep -c 'hello from origin')" 20 \
    "20 requests sent in one TLS record are all answered"
expect_eq "$(jq -r 'select((.target // "") | startswith("/hello?n=")) | .target' "$ORIGIN_LOG" | tail -n 20 | tr '\n' ' ')" \
    "$(for i in $(seq 1 20); do printf '/hello?n=%s ' "$i"; done)" "and reach the origin in order"

# --- POST blocked inside TLS ---
before=$(origin_count 'select(.method == "POST")')
run tcurl -D "$T/h" -o "$T/body" -w '%{http_code}' -d 'x=1' https://origin.test/echo
expect_eq "$OUT" 403 "POST inside TLS is blocked"
expect_contains "$(cat "$T/body")" \
    "policyctl explain --method POST --content-type 'application/x-www-form-urlencoded' --body FILE origin.test" \
    "403 body names the explain command"
expect_contains "$(tr -d '\r' <"$T/h")" "X-Egress-Rule: method-not-allowed" "403 carries X-Egress-Rule"
expect_eq "$(origin_count 'select(.method == "POST")')" "$before" "blocked POST never reached the origin"
expect_eq "$(audit_last '.event == "http" and .method == "POST"' | jq -r '[.action, .scheme, .status] | @tsv')" \
    "block	https	403" "blocked POST audited"

# --- GraphQL over HTTPS ---
run tcurl -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"query":"query Me { viewer { login } }"}' https://gql.test/echo
expect_eq "$OUT" 200 "GraphQL query over HTTPS is allowed"
expect_eq "$(audit_last '.event == "http" and .host == "gql.test"' | jq -r '[.action, .graphql.operation] | @tsv')" \
    "allow	query" "GraphQL query audited"
run tcurl -o "$T/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"query":"mutation Del { deleteRepo(id: 1) { id } }"}' https://gql.test/echo
expect_eq "$OUT" 403 "GraphQL mutation over HTTPS is blocked"
expect_eq "$(audit_last '.event == "http" and .host == "gql.test"' | jq -r '[.action, .graphql.operation, .graphql.name] | @tsv')" \
    "block	mutation	Del" "GraphQL mutation audited as blocked"

# --- allowlisted name on 443: intercepted, every method allowed ---
run tcurl -o /dev/null -w '%{http_code}' -X DELETE https://allowed.test/echo
expect_eq "$OUT" 200 "DELETE to an allowlisted host inside TLS"

# --- Host header naming another host than the CONNECT ---
run tcurl -o /dev/null -w '%{http_code}' -H 'Host: other.test' https://origin.test/hello
expect_eq "$OUT" 421 "a Host other than the CONNECT host is refused"

# --- upstream certificate for another name, and from an unknown issuer ---
run tcurl -o "$T/body" -w '%{http_code}' https://wrong.test/hello
expect_eq "$OUT" 502 "upstream certificate for the wrong name -> 502"
expect_contains "$(cat "$T/body")" "certificate verify failed" "502 names the verification failure"
expect_eq "$(audit_last '.event == "tls" and .host == "wrong.test"' | jq -r '[.action, .rule] | @tsv')" \
    "block	upstream-certificate" "wrong-name upstream audited as a tls event"
expect_eq "$(audit_last '.event == "http" and .host == "wrong.test"' | jq -r .status)" 502 "and as an http 502"
expect_eq "$(jq -c 'select(.method)' "$T/wrong.jsonl" | wc -l)" 0 "no request reached the wrong-name origin"
run tcurl -o "$T/body" -w '%{http_code}' https://rogue.test/hello
expect_eq "$OUT" 502 "upstream certificate from an unknown issuer -> 502"
expect_contains "$(cat "$T/body")" "local issuer" "502 says the issuer is unknown"
expect_eq "$(jq -c 'select(.method)' "$T/rogue.jsonl" | wc -l)" 0 "no request reached the rogue origin"

# --- a client that does not trust the run CA ---
run pcurl --cacert "$P/testca.pem" -o /dev/null https://origin.test/hello
if [ "$RC" -ne 0 ]; then ok; else bad "a client without the run CA must refuse our leaf"; fi
sleep 0.2
line=$(audit_last '.event == "tls" and .host == "origin.test" and .hint != null')
expect_contains "$line" "$EGCA" "tls audit event hints at the CA file"
expect_contains "$line" "NODE_EXTRA_CA_CERTS" "and at the variables that install it"
expect_eq "$(printf '%s' "$line" | jq -r '[.action, .rule, .source] | @tsv')" "block	client-tls	builtin" \
    "the tls event names its rule"
expect_eq "$(printf '%s' "$line" | jq -r .error)" \
    'the client refused the handshake with the TLS alert "unknown CA": it does not trust the CA that issued the certificate' \
    "the error is a sentence, not an OpenSSL code"

# --- SNI that differs from the CONNECT host ---
run timeout 20 openssl s_client -proxy "127.0.0.1:$EG_PORT" -connect origin.test:443 \
    -servername evil.test -CAfile "$EGCA" </dev/null
if [ "$RC" -ne 0 ]; then ok; else bad "a handshake with SNI evil.test inside CONNECT origin.test must fail"; fi
sleep 0.2
expect_eq "$(audit_last '.rule == "sni-mismatch"' | jq -r '[.event, .host, .sni, .action, .tls] | @tsv')" \
    "connect	origin.test	evil.test	block	intercept" "SNI mismatch audited on the CONNECT"

# --- cipher suites towards the client ---
# suite_with ARGS...: the suite a client offering what ARGS say is given.
suite_with() {
	timeout 20 openssl s_client -brief -proxy "127.0.0.1:$EG_PORT" -connect origin.test:443 \
	    -servername origin.test -CAfile "$EGCA" "$@" </dev/null 2>&1 |
	    sed -n 's/^\(Ciphersuite\|Cipher\) *: *//p' | head -n 1
}
expect_eq "$(suite_with)" TLS_AES_128_GCM_SHA256 \
    "a client offering OpenSSL's default order (AES-256 first) is given AES-128-GCM"
expect_eq "$(suite_with -ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256)" \
    TLS_CHACHA20_POLY1305_SHA256 "a client putting ChaCha20 first is given ChaCha20"
expect_eq "$(suite_with -tls1_2)" ECDHE-ECDSA-AES128-GCM-SHA256 "TLS 1.2: ECDHE-ECDSA with AES-128-GCM"
run timeout 20 openssl s_client -brief -proxy "127.0.0.1:$EG_PORT" -connect origin.test:443 \
    -servername origin.test -CAfile "$EGCA" -tls1_2 -cipher 'AES128-SHA:ECDHE-ECDSA-AES128-SHA' </dev/null
if [ "$RC" -ne 0 ]; then ok; else bad "a TLS 1.2 client offering only CBC suites must be refused"; fi

# --- the leaf: for the host, signed by the run CA, verifiable ---
timeout 20 openssl s_client -proxy "127.0.0.1:$EG_PORT" -connect origin.test:443 \
    -servername origin.test </dev/null 2>/dev/null | openssl x509 >"$T/leaf.pem" 2>/dev/null
run openssl verify -CAfile "$EGCA" -verify_hostname origin.test "$T/leaf.pem"
expect_rc 0 "leaf verifies against the run CA for origin.test"
run openssl verify -CAfile "$EGCA" -verify_hostname other.test "$T/leaf.pem"
if [ "$RC" -ne 0 ]; then ok; else bad "the leaf must not verify for another name"; fi

# --- passthrough: the client sees the origin's own certificate ---
run pcurl --cacert "$P/testca.pem" -o /dev/null -w '%{http_code}' https://pass.test/hello
expect_eq "$OUT" 200 "passthrough host reached with the origin's own certificate"
run pcurl --cacert "$EGCA" -o /dev/null https://pass.test/hello
if [ "$RC" -ne 0 ]; then ok; else bad "a passthrough host must not be served with our leaf"; fi
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "pass.test"' | jq -r '[.action, .tls] | @tsv')" \
    "allow	passthrough" "passthrough audited"
run pcurl --cacert "$P/testca.pem" -o /dev/null -w '%{http_code}' -d 'x=1' https://pass.test/echo
expect_eq "$OUT" 200 "passthrough is decided by name only (a POST inside is not seen)"
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "pass.test"' | jq -r '[.action, .tls, .sni] | @tsv')" \
    "allow	passthrough	pass.test" "a passthrough connect event carries the SNI"
# Domain fronting: a tunnel opened for the passthrough name, a ClientHello
# for another name the same server holds. egressd reads the ClientHello
# before it relays a byte, and cuts the tunnel.
before=$(origin_count 'select(.target == "/hello")')
printf 'GET /hello HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n' >"$T/front.req"
run timeout 20 openssl s_client -quiet -proxy "127.0.0.1:$EG_PORT" -connect pass.test:443 \
    -servername origin.test -CAfile "$P/testca.pem" -ign_eof <"$T/front.req"
if [ "$RC" -ne 0 ]; then ok; else bad "a passthrough tunnel whose SNI names another host must be cut ($OUT)"; fi
expect_eq "$(printf '%s' "$OUT" | grep -c 'hello from origin')" 0 "no answer came through it"
expect_eq "$(origin_count 'select(.target == "/hello")')" "$before" "nothing reached the origin"
sleep 0.2
OUT=$(audit_last '.event == "connect" and .host == "pass.test"')
expect_eq "$(jqf '[.action, .rule, .source, .sni, .tls] | @tsv')" \
    "block	sni-mismatch	builtin	origin.test	passthrough" "the cut passthrough tunnel is audited"
expect_contains "$(jqf .reason)" "origin.test differs from the CONNECT host pass.test" "with a readable reason"
# No SNI at all: the tunnel still reaches only the decided host; allowed.
run timeout 20 openssl s_client -proxy "127.0.0.1:$EG_PORT" -connect pass.test:443 -noservername \
    -CAfile "$P/testca.pem" -verify_return_error </dev/null
expect_rc 0 "a passthrough ClientHello without SNI goes through"
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "pass.test"' | jq -r '[.action, .tls, .sni // "-"] | @tsv')" \
    "allow	passthrough	-" "and is audited without sni"
# Bytes that are not TLS: a passthrough tunnel carries TLS only.
run pcurl -p -o /dev/null http://pass.test:443/hello
if [ "$RC" -ne 0 ]; then ok; else bad "plain HTTP inside a passthrough tunnel must be cut"; fi
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "pass.test"' | jq -r '[.action, .rule, .tls] | @tsv')" \
    "block	not-tls	passthrough" "plain HTTP in a passthrough tunnel audited"

# A ClientHello that reaches egressd in two pieces is read whole before the
# decision, intercepted or passthrough.
SPLIT="$SRC_DIR/tests/integration/tlssplit.py"
run timeout 30 python3 "$SPLIT" --proxy "$EG_PORT" --connect origin.test:443 --cafile "$EGCA" /hello
expect_eq "${OUT% *}" "HTTP/1.1 200" "an intercepted ClientHello sent in two pieces ($ERR)"
run timeout 30 python3 "$SPLIT" --proxy "$EG_PORT" --connect pass.test:443 --cafile "$P/testca.pem" /hello
expect_eq "${OUT% *}" "HTTP/1.1 200" "a passthrough ClientHello sent in two pieces ($ERR)"
run timeout 30 python3 "$SPLIT" --proxy "$EG_PORT" --connect pass.test:443 --sni origin.test \
    --cafile "$P/testca.pem" /hello
expect_contains "$OUT" "closed" "a split ClientHello naming another host is cut all the same"

# --- HTTPS on another port of an unlisted host: intercepted exactly as on 443 ---
run tcurl -o "$T/body" -w '%{http_code} %{ssl_verify_result}' "https://origin.test:$ALT/hello"
expect_eq "$OUT" "200 0" "HTTPS to port $ALT of an unlisted host, verified against the run CA"
expect_contains "$(cat "$T/body")" "hello from origin" "its response body"
expect_eq "$(audit_last ".event == \"connect\" and .port == $ALT" | jq -r '[.action, .rule, .tls, .sni] | @tsv')" \
    "allow	unlisted-host	intercept	origin.test" "the CONNECT to port $ALT is intercepted"
line=$(jq -c 'select(.target == "/hello")' "$T/alt.jsonl" | tail -n 1)
expect_eq "$(printf '%s' "$line" | jq -r '[.tls, .sni] | @tsv')" "true	origin.test" \
    "the upstream leg is TLS to origin.test:$ALT"
expect_eq "$(printf '%s' "$line" | jq -r '.headers[] | select(.[0] | ascii_downcase == "host") | .[1]')" \
    "origin.test:$ALT" "with the port in its Host"
expect_eq "$(audit_last ".event == \"http\" and .port == $ALT" | jq -r '[.action, .scheme, .method, .status] | @tsv')" \
    "allow	https	GET	200" "the GET inside is decided and audited"
run tcurl -o "$T/body" -w '%{http_code}' -d 'x=1' "https://origin.test:$ALT/echo"
expect_eq "$OUT" 403 "POST inside TLS on port $ALT is blocked"
expect_eq "$(jq -c 'select(.method == "POST")' "$T/alt.jsonl" | wc -l)" 0 "and never reached the origin"
expect_eq "$(audit_last ".event == \"http\" and .port == $ALT and .method == \"POST\"" | jq -r '[.action, .rule, .status] | @tsv')" \
    "block	method-not-allowed	403" "the blocked POST audited"
run tcurl -o "$T/body" -w '%{http_code}' "https://other.test:$ALT/hello"
expect_eq "$OUT" 502 "the upstream certificate is checked on port $ALT too (it does not name other.test)"
expect_contains "$(cat "$T/body")" "certificate verify failed" "and the 502 says so"
# Plain HTTP sent inside such a tunnel (curl -p), to a port where a plain
# HTTP server listens: cut, audited, never relayed.
before=$(jq -c 'select(.target == "/hello")' "$T/alt.jsonl" | wc -l)
run pcurl -p -o /dev/null "http://origin.test:$ALT_PLAIN/hello"
if [ "$RC" -ne 0 ]; then ok; else bad "plain HTTP inside a CONNECT to an unlisted host must be cut"; fi
expect_eq "$(jq -c 'select(.target == "/hello")' "$T/alt.jsonl" | wc -l)" "$before" "it never reached the HTTP server"
sleep 0.2
OUT=$(audit_last ".event == \"connect\" and .port == $ALT_PLAIN")
expect_eq "$(jqf '[.action, .rule, .source, .tls] | @tsv')" "block	not-tls	builtin	intercept" \
    "plain HTTP in an intercepted tunnel audited"
expect_contains "$(jqf .reason)" "plain HTTP" "with a reason that says what came"
# Another protocol (an SSH banner) after the 200: cut as well.
run timeout 20 python3 - "$EG_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT origin.test:22 HTTP/1.1\r\nHost: origin.test:22\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(4096)
    if not b:
        break
    head += b
print(head.split(b"\r\n")[0].decode())
s.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
try:
    print("closed" if s.recv(4096) == b"" else "open")
except ConnectionResetError:
    print("closed")
PY
expect_eq "$(printf '%s' "$OUT" | tr '\n' ' ')" "HTTP/1.1 200 Connection established closed" \
    "an SSH banner inside a CONNECT to port 22 is cut"
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .port == 22' | jq -r '[.action, .rule] | @tsv')" \
    "block	not-tls" "and audited"

# --- upstream TLS errors are audited as sentences ---
run tcurl -o "$T/body" -w '%{http_code}' "https://origin.test:$BANNER/hello"
expect_eq "$OUT" 502 "an upstream that does not speak TLS -> 502"
OUT=$(audit_last ".event == \"tls\" and .port == $BANNER")
expect_eq "$(jqf '[.rule, .error] | @tsv')" "upstream-tls	the server did not speak TLS (wrong version number)" \
    "its audit error is a sentence"
run tcurl -o "$T/body" -w '%{http_code}' "https://origin.test:$CLOSER/hello"
expect_eq "$OUT" 502 "an upstream that closes during the handshake -> 502"
OUT=$(audit_last ".event == \"tls\" and .port == $CLOSER")
expect_eq "$(jqf '[.rule, .error] | @tsv')" \
    "upstream-tls	the server closed the connection during the TLS handshake" "its audit error is a sentence"

# --- WebSocket echo to an allowlisted host, over wss (intercepted) and ws ---
# (An unlisted host's WebSocket is refused or inspected: proxy_websocket.sh.)
run python3 "$SRC_DIR/tests/integration/wsclient.py" --proxy "127.0.0.1:$EG_PORT" \
    --cafile "$EGCA" wss://allowed.test/ws "hello over wss"
expect_eq "$OUT" "hello over wss" "WebSocket echo through an intercepted connection ($ERR)"
run python3 "$SRC_DIR/tests/integration/wsclient.py" --proxy "127.0.0.1:$EG_PORT" \
    "ws://allowed.test:$ORIGIN_PORT/ws" "hello over ws"
expect_eq "$OUT" "hello over ws" "WebSocket echo through the plain proxy ($ERR)"
sleep 0.3
expect_eq "$(audit_last '.event == "http" and .path == "/ws" and .scheme == "https"' | jq -r '[.action, .status] | @tsv')" \
    "allow	101" "WebSocket audited with status 101"

# --- the CA key: never in a file egressd writes, its environment or arguments ---
for f in "$EGCA" "$EGB" "$EG_AUDIT"; do
	if grep -q 'PRIVATE KEY' "$f"; then bad "$f holds a private key"; else ok; fi
done
expect_eq "$(grep -c 'BEGIN CERTIFICATE' "$EGCA")" 1 "--ca-out holds one certificate"
if [ "$(grep -c 'BEGIN CERTIFICATE' "$EGB")" -gt 1 ]; then ok; else bad "--ca-bundle-out holds the system store too"; fi
if tail -n 30 "$EGB" | grep -q "$(sed -n 2p "$EGCA")"; then ok; else bad "bundle ends with the run CA"; fi
if tr '\0' '\n' <"/proc/$EG_PID/environ" | grep -qi 'PRIVATE'; then bad "key in environment"; else ok; fi
if tr '\0' ' ' <"/proc/$EG_PID/cmdline" | grep -qi 'PRIVATE\|\.key'; then bad "key in arguments"; else ok; fi
expect_eq "$(awk '/Max core file size/ {print $5}' "/proc/$EG_PID/limits")" 0 "core dumps are off"
run stat -c %a "$EGCA"
expect_eq "$OUT" 644 "the exported certificate is world-readable (it is public)"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM ($(tail -n 3 "$EG_ERR"))"

# --- flag mode: a mutation over HTTPS is forwarded and audited as flag ---
start_egressd --config "$T/policy.yaml" --config "$T/flag.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$P/testca.pem" --ca-out "$EGCA" || exit 1
run pcurl --cacert "$EGCA" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"query":"mutation Flagged { x }"}' https://gql.test/echo
expect_eq "$OUT" 200 "flag mode forwards a mutation over HTTPS"
expect_eq "$(audit_last '.event == "http" and .host == "gql.test"' | jq -r '[.action, .graphql.operation] | @tsv')" \
    "flag	mutation" "and audits it as flag"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM ($(tail -n 3 "$EG_ERR"))"

# --- without --ca-out: a per-run file, printed, removed at exit ---
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --upstream-ca "$P/testca.pem" || exit 1
ca=$(sed -n 's/^egressd: HTTPS is intercepted with the CA in //p' "$EG_ERR")
if [ -n "$ca" ] && [ -s "$ca" ]; then ok; else bad "egressd prints where the per-run CA is ($(cat "$EG_ERR"))"; fi
expect_contains "$(cat "$EG_ERR")" "export NODE_EXTRA_CA_CERTS=$ca" "and the lines to trust it"
if grep -q 'PRIVATE KEY' "$(dirname "$ca")"/*; then bad "per-run dir holds a key"; else ok; fi
run pcurl --cacert "$ca" -o /dev/null -w '%{http_code}' https://origin.test/hello
expect_eq "$OUT" 200 "the per-run CA file is the one egressd signs with"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM ($(tail -n 3 "$EG_ERR"))"
if [ ! -e "$ca" ]; then ok; else bad "the per-run CA file is removed at exit"; fi

# --- --system-ca: the store for upstream verification and the head of the bundle ---
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --system-ca "$P/testca.pem" \
    --ca-out "$T/sys-ca.pem" --ca-bundle-out "$T/sys-bundle.pem" || exit 1
run pcurl --cacert "$T/sys-ca.pem" -o /dev/null -w '%{http_code}' https://origin.test/hello
expect_eq "$OUT" 200 "upstream verified against --system-ca"
expect_eq "$(grep -c 'BEGIN CERTIFICATE' "$T/sys-bundle.pem")" 2 "bundle = --system-ca + run CA"
expect_eq "$(openssl x509 -in "$T/sys-bundle.pem" -noout -subject)" \
    "$(openssl x509 -in "$P/testca.pem" -noout -subject)" "the bundle starts with the system store"
run pcurl --cacert "$T/sys-ca.pem" -o /dev/null -w '%{http_code}' https://rogue.test/hello
expect_eq "$OUT" 502 "and only that store: the rogue origin is still refused"
stop_egressd

# --- the upstream trust store: checked before READY, parsed after it ---
printf 'not a certificate\n' >"$T/bad-store.pem"
run "$EGRESSD" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" --audit "$T/x.jsonl" \
    --upstream-ca "$T/bad-store.pem"
if [ "$RC" -ne 0 ]; then ok; else bad "a trust store without a certificate must be refused at start"; fi
expect_contains "$ERR" "cannot load the upstream trust store $T/bad-store.pem" "the refusal names the store"
printf -- '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' >"$T/corrupt-store.pem"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --upstream-ca "$T/corrupt-store.pem" \
    --ca-out "$T/corrupt-ca.pem" || exit 1
before=$(origin_count 'select(.target == "/hello")')
run pcurl --cacert "$T/corrupt-ca.pem" -o /dev/null -w '%{http_code}' https://origin.test/hello
expect_eq "$OUT" 502 "a store that does not parse verifies nothing: 502"
expect_eq "$(origin_count 'select(.target == "/hello")')" "$before" "and no request reached the origin"
expect_contains "$(cat "$EG_ERR")" "cannot load the upstream trust store $T/corrupt-store.pem" \
    "egressd says why on stderr"
stop_egressd
# --check parses the store in full, so a store that only the parse finds bad is caught too.
run "$EGRESSD" --check --config "$T/policy.yaml" --upstream-ca "$T/corrupt-store.pem"
expect_eq "$RC" 2 "--check: a store that does not parse is a configuration error"
expect_contains "$ERR" "the upstream trust store $T/corrupt-store.pem cannot be used" "--check names the store"
run "$EGRESSD" --check --config "$T/policy.yaml" --upstream-ca "$P/testca.pem"
expect_eq "$RC:$OUT" "0:configuration OK" "--check: a good store passes"

# --- a persistent CA (--ca-cert/--ca-key): used as is; a key others can read is refused ---
(umask 077 && openssl ecparam -name prime256v1 -genkey -noout -out "$P/dev.key")
openssl req -x509 -new -key "$P/dev.key" -sha256 -days 30 -subj "/O=opencode-sandbox egressd/CN=dev CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$P/dev.pem" 2>/dev/null
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --upstream-ca "$P/testca.pem" \
    --ca-cert "$P/dev.pem" --ca-key "$P/dev.key" --ca-out "$T/dev-out.pem" || exit 1
run pcurl --cacert "$P/dev.pem" -o /dev/null -w '%{http_code}' https://origin.test/hello
expect_eq "$OUT" 200 "leaves signed by the persistent CA"
expect_eq "$(openssl x509 -in "$T/dev-out.pem" -noout -fingerprint)" \
    "$(openssl x509 -in "$P/dev.pem" -noout -fingerprint)" "--ca-out exports the persistent CA"
stop_egressd
chmod 644 "$P/dev.key"
run "$EGRESSD" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" --audit "$T/x.jsonl" --ca-cert "$P/dev.pem" --ca-key "$P/dev.key"
if [ "$RC" -ne 0 ]; then ok; else bad "a CA key readable by others must be refused"; fi
expect_contains "$ERR" "chmod 600" "the refusal says how to fix it"
run "$EGRESSD" --proxy "127.0.0.1:$(free_port)" --dns "127.0.0.1:$(free_port)" --audit "$T/x.jsonl" --ca-cert "$P/dev.pem"
if [ "$RC" -ne 0 ]; then ok; else bad "--ca-cert without --ca-key must be refused"; fi

finish
