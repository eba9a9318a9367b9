#!/usr/bin/env bash
# egressd's transparent listener in a network namespace of its own, with
# a real nftables redirect: TCP from uid 65534 (the "payload") to ports
# 80, 443 and 2222 goes to egressd's --transparent port; egressd (root)
# alone reaches the origins on 198.18.0.10 (HTTP 80, HTTPS 443). Checks:
# HTTPS decided by SNI and intercepted (GET allowed, POST 403 inside TLS);
# a forged SNI reaches only the host it names (not the address the client
# dialled); no SNI -> decided by the original address (blocked unless
# allowlisted); plain HTTP decided by Host; bytes that are neither TLS nor
# HTTP blocked and audited as `tcp`; a redirected connection that sends
# nothing is audited when it closes and when the header timeout cuts it; a
# connection made to the listener directly is refused and audited (rule
# not-redirected); every decision is in the audit log.
set -u
: "${BUILD_DIR:?}" "${SRC_DIR:?}"

if [ "$(id -u)" -ne 0 ]; then
	echo "transparent.sh needs root (ip netns, nftables)" >&2
	exit 1
fi
if [ -z "${IN_NETNS:-}" ]; then
	NS="egress-tp-$$"
	ip netns add "$NS" || exit 1
	IN_NETNS=1 timeout 300 ip netns exec "$NS" bash "$0"
	rc=$?
	ip netns del "$NS"
	exit $rc
fi

# shellcheck source=../integration/lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

ip link set lo up
ip addr add 198.18.0.10/15 dev lo

P="$T/pki"
mkdir -p "$P"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 \
    -subj "/CN=egress test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$P/o.key" -out "$P/o.csr" -subj "/CN=origin.test" 2>/dev/null
printf 'subjectAltName=DNS:origin.test,DNS:other.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$P/o.ext"
openssl x509 -req -in "$P/o.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
    -extfile "$P/o.ext" -out "$P/o.pem" 2>/dev/null

# The origin: HTTP on 198.18.0.10:80, HTTPS on :443, names *.test -> 198.18.0.10.
start_origin --bind 198.18.0.10 --port 80 --tls-cert "$P/o.pem" --tls-key "$P/o.key" \
    --tls-port 443 --tls-port-file "$T/origin.tls"
wait_file "$T/origin.tls" 10 || exit 1

cat >"$T/policy.yaml" <<EOF
version: 1
network:
  mode: strict
  allowlist: ["origin.test", "other.test", "198.18.0.10"]
  allowMethods: [GET, HEAD]
EOF
# Strict mode allows only the allowlist; methods inside are then free. A
# second policy in practical mode checks methods inside redirected TLS.
cat >"$T/practical.yaml" <<EOF
version: 1
network:
  mode: practical
  allowlist: ["198.18.0.10"]
EOF

TP=$(free_port)
start_egressd --config "$T/practical.yaml" --transparent "127.0.0.1:$TP" --header-timeout 2 \
    --upstream-dns "$ORIGIN_DNS" --upstream-ca "$P/ca.pem" --ca-out "$T/eg-ca.pem" || exit 1

nft -f - <<EOF
table inet egress_test {
	chain out {
		type nat hook output priority -100; policy accept;
		meta skuid 65534 tcp dport { 80, 443, 2222 } redirect to :$TP
	}
}
EOF
chmod 755 "$T"
chmod 644 "$T/eg-ca.pem"
mkdir -m 1777 "$T/pay" # where the payload's curl may write
# as_payload CMD...: run as uid 65534 with no proxy variables.
as_payload() {
	env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u ALL_PROXY -u all_proxy \
	    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
# shellcheck disable=SC2317 # called through run
pay_curl() { as_payload curl -sS --max-time 20 --cacert "$T/eg-ca.pem" "$@"; }

# --- HTTPS by SNI, intercepted ---
run pay_curl -o "$T/pay/body" -w '%{http_code}' --resolve origin.test:443:198.18.0.10 https://origin.test/hello
expect_eq "$OUT" 200 "redirected HTTPS GET is intercepted and allowed ($ERR)"
expect_contains "$(cat "$T/pay/body")" "hello from origin" "body from the origin"
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "origin.test"' | jq -r '[.action, .tls, .sni] | @tsv')" \
    "allow	intercept	origin.test" "redirected TLS audited by its SNI"
run pay_curl -o /dev/null -w '%{http_code}' -d x=1 --resolve origin.test:443:198.18.0.10 https://origin.test/echo
expect_eq "$OUT" 403 "redirected HTTPS POST blocked inside TLS"
expect_eq "$(origin_count 'select(.method == "POST")')" 0 "the POST never reached the origin"

# --- a forged SNI reaches the host it names, not the dialled address ---
# The client dials 198.18.0.99 (nothing there) with SNI origin.test: egressd
# resolves origin.test itself and connects to 198.18.0.10.
run pay_curl -o /dev/null -w '%{http_code}' --resolve origin.test:443:198.18.0.99 https://origin.test/hello
expect_eq "$OUT" 200 "SNI decides the upstream, not the original address"
expect_eq "$(audit_last '.event == "http" and .path == "/hello"' | jq -r .addr)" 198.18.0.10 \
    "egressd connected to the SNI host's own address"

# --- no SNI: decided by the original address ---
run pay_curl -o /dev/null -w '%{http_code}' -k https://198.18.0.99/hello
if [ "$RC" -ne 0 ]; then ok; else bad "TLS without SNI to an address that is not allowlisted must fail"; fi
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "198.18.0.99"' | jq -r '[.action, .port] | @tsv')" \
    "block	443" "address-only TLS audited as blocked"

# --- plain HTTP by Host ---
run as_payload curl -sS --max-time 20 -o /dev/null -w '%{http_code}' --resolve origin.test:80:198.18.0.10 http://origin.test/hello
expect_eq "$OUT" 200 "redirected plain HTTP decided by Host ($ERR)"
expect_eq "$(audit_last '.event == "http" and .scheme == "http" and .path == "/hello"' | jq -r '[.action, .host] | @tsv')" \
    "allow	origin.test" "plain redirected request audited with its Host"
run as_payload curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -X DELETE --resolve origin.test:80:198.18.0.10 http://origin.test/echo
expect_eq "$OUT" 403 "redirected plain DELETE blocked"

# --- neither TLS nor HTTP: blocked, audited as tcp ---
as_payload bash -c 'exec 3<>/dev/tcp/198.18.0.99/2222; printf "SSH-2.0-probe\r\n" >&3; timeout 5 cat <&3 >/dev/null' 2>/dev/null
sleep 0.3
expect_eq "$(audit_last '.event == "tcp" and .port == 2222' | jq -r '[.action, .host] | @tsv')" \
    "block	198.18.0.99" "non-TLS non-HTTP bytes to port 2222 blocked and audited as tcp"
as_payload bash -c 'exec 3<>/dev/tcp/198.18.0.99/443; printf "SSH-2.0-probe\r\n" >&3; timeout 5 cat <&3 >/dev/null' 2>/dev/null
sleep 0.3
expect_eq "$(audit_last '.event == "tcp" and .port == 443' | jq -r '[.action, .rule, .host] | @tsv')" \
    "block	not-http-or-tls	198.18.0.99" "non-TLS bytes on 443 go only to allowlisted addresses"

# --- redirected, then not a byte: audited when it closes and when it is cut ---
as_payload bash -c 'exec 3<>/dev/tcp/198.18.0.98/2222; exec 3>&-' 2>/dev/null
sleep 0.3
expect_eq "$(audit_last '.event == "tcp" and .host == "198.18.0.98"' | jq -r '[.action, .rule, .port, .error] | @tsv')" \
    "block	client-silent	2222	client closed before sending anything" \
    "a redirected connection closed before its first byte is audited"
t0=$(now_ms)
as_payload timeout 8 python3 -c '
import socket, sys
s = socket.create_connection(("198.18.0.97", 2222), timeout=8)
print("cut" if s.recv(1) == b"" else "data")' >"$T/silent.out" 2>&1
took=$(($(now_ms) - t0))
expect_eq "$(cat "$T/silent.out")" cut "a silent redirected connection is cut"
if [ "$took" -ge 1500 ] && [ "$took" -lt 6000 ]; then ok; else bad "cut after ${took} ms, want the 2 s header timeout"; fi
expect_eq "$(audit_last '.event == "tcp" and .host == "198.18.0.97"' | jq -r '[.action, .rule, .port, .error] | @tsv')" \
    "block	client-silent	2222	redirected client sent nothing in time" \
    "a redirected connection cut at the header timeout is audited"

# --- a direct connection to the transparent port is refused ---
run curl -sS --max-time 5 "http://127.0.0.1:$TP/hello"
if [ "$RC" -ne 0 ]; then ok; else bad "a connection that was not redirected must be refused"; fi
expect_contains "$(cat "$EG_ERR")" "not redirected" "and logged as such"
sleep 0.2
expect_eq "$(audit_last '.event == "tcp" and .rule == "not-redirected"' | jq -r '[.action, .source, .error, (.host // "-")] | @tsv')" \
    "block	builtin	not redirected	-" "a direct connection is audited as not redirected"
expect_contains "$(audit_last '.rule == "not-redirected"' | jq -r .reason)" "not redirected by the sandbox's rules" \
    "with a reason that says so"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"

# --- strict mode: only the allowlist; a redirected name off the list is cut ---
start_egressd --config "$T/policy.yaml" --transparent "127.0.0.1:$TP" \
    --upstream-dns "$ORIGIN_DNS" --upstream-ca "$P/ca.pem" --ca-out "$T/eg-ca.pem" || exit 1
chmod 644 "$T/eg-ca.pem"
run pay_curl -o /dev/null -w '%{http_code}' --resolve origin.test:443:198.18.0.10 https://origin.test/hello
expect_eq "$OUT" 200 "strict: allowlisted name through the redirect"
run pay_curl -o /dev/null -w '%{http_code}' --resolve blocked.test:443:198.18.0.10 https://blocked.test/hello
if [ "$RC" -ne 0 ]; then ok; else bad "strict: a name off the allowlist must not connect"; fi
sleep 0.2
expect_eq "$(audit_last '.event == "connect" and .host == "blocked.test"' | jq -r '[.action, .rule] | @tsv')" \
    "block	strict-default-deny" "strict: blocked name audited"
stop_egressd

nft delete table inet egress_test
finish
