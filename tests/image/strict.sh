#!/usr/bin/env bash
# Strict mode of the image on the internal test network, started with
# --cap-add NET_ADMIN: with every proxy variable unset, HTTPS and HTTP to the
# allowlisted host still work (nftables redirects them to egressd's
# transparent listener) and a POST there arrives; a host on no list, a
# blocklisted host and a direct address are refused; `sandbox-init
# --selftest` passes, every side door closed and the trust checks of curl,
# Python, Node and git ok (egressd's memory, signals and CA key out of the
# payload's reach are probes of the selftest). Without NET_ADMIN, strict refuses to start and CMD never runs; off
# mode lets nothing out.
. "$(dirname "$0")/lib.sh"

image_build || { bad "the image builds"; finish; }
lib_net_up || { bad "test network"; finish; }
lib_policy strict '"allowed.test"'

mkdir -p "$T/ws"
cat >"$T/ws/strict.sh" <<'EOT'
# Runs as the payload with no proxy variables; prints "LABEL VALUE" lines.
unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
echo "allowed-https $(code https://allowed.test/hello)"
echo "allowed-http $(code http://allowed.test/)"
head -c 50000 /dev/urandom >/tmp/body
echo "allowed-post $(curl -s --max-time 10 -X POST --data-binary @/tmp/body https://allowed.test/echo | tr -d ' \n')"
echo "body-sha $(sha256sum </tmp/body | cut -d' ' -f1)"
echo "python-https $(python3 -c 'import urllib.request as u
print(u.urlopen("https://allowed.test/hello", timeout=10).status)' 2>&1 | tail -n 1)"
echo "node-https $(node -e 'require("https").get("https://allowed.test/hello",
	r => console.log(r.statusCode)).on("error", e => console.log(e.message))')"
echo "other-https $(code https://readonly.test/hello)"
echo "blocked-http $(code http://blocked.test/)"
echo "direct-addr $(code http://198.18.0.1/)"
echo "dns-other $(python3 -c 'import socket
try:
    print(socket.gethostbyname("readonly.test"))
except OSError:
    print("refused")')"
echo "dns-allowed $(python3 -c 'import socket; print(socket.gethostbyname("allowed.test"))')"
echo "mode $OPENCODE_SANDBOX_MODE"
exit 5
EOT
chmod 644 "$T/ws/strict.sh"

box --cap-add NET_ADMIN -- --mode strict -- bash /workspace/strict.sh
expect_eq "$RC" 5 "strict: the container exits with the payload's status"
[ "$RC" = 5 ] || printf '%s\n' "$ERR" | tail -n 20 >&2
expect_eq "$(row mode)" strict "strict: the payload is told the mode"
expect_eq "$(row allowed-https)" 200 "strict, no proxy variables: HTTPS to the allowlisted host"
expect_eq "$(row allowed-http)" 200 "strict, no proxy variables: HTTP to the allowlisted host"
expect_eq "$(row python-https)" 200 "strict, no proxy variables: Python HTTPS to the allowlisted host"
expect_eq "$(row node-https)" 200 "strict, no proxy variables: Node HTTPS to the allowlisted host"
expect_eq "$(row allowed-post)" "{\"len\":50000,\"sha256\":\"$(row body-sha)\"}" \
	"strict: a POST to the allowlisted host arrives whole"
expect_eq "$(row other-https)" 000 "strict: HTTPS to a host on no list fails (default deny)"
expect_eq "$(row blocked-http)" 000 "strict: a blocklisted name does not resolve"
expect_eq "$(row direct-addr)" 403 "strict: HTTP to a bare address gets egressd's 403"
expect_eq "$(row dns-other)" refused "strict: the resolver answers no name off the allowlist"
expect_eq "$(row dns-allowed)" 198.18.0.1 "strict: the resolver answers allowlisted names"
AUDIT=$(cat "$T/state/audit-events.jsonl" 2>/dev/null)
expect_contains "$AUDIT" '"qname":"readonly.test"' "strict: the refused name is in the audit log"
expect_contains "$AUDIT" '"rule":"blocked.test"' "strict: the blocklisted name is in the audit log"
expect_contains "$AUDIT" '"host":"198.18.0.1","port":80' "strict: the direct address is in the audit log"
expect_contains "$AUDIT" '"mode":"strict"' "strict: egressd decided in strict mode"

# The selftest, in the image, against the test network.
PROBES=(--probe-addr 198.18.0.1 --probe-addr6 2001:2::1 --probe-host sidedoor.test
	--probe-doh https://blocked.test/dns-query --probe-https https://allowed.test/hello)
box --cap-add NET_ADMIN -- --mode strict --selftest "${PROBES[@]}" -- true
expect_eq "$RC" 0 "strict: sandbox-init --selftest passes"
for p in tcp-direct tcp-name udp quic dns-direct dns-over-tls dns-over-https ipv6 \
	nft-list nft-flush signal-egressd egressd-memory ca-key; do
	expect_eq "$(row $p)" closed "strict selftest: $p"
done
for t in curl python3 node git; do
	expect_eq "$(row trust-$t)" ok "strict selftest: $t trusts the run CA through egressd"
done
[ "$RC" = 0 ] || printf '%s\n%s\n' "$OUT" "$ERR" | tail -n 30 >&2
# The probes the rules dropped are in the audit, with the payload's uid.
for door in "udp 443 quic" "tcp 853 dns-over-tls" "udp 7 udp"; do
	# shellcheck disable=SC2086 # split "PROTO PORT NAME" into $1 $2 $3
	set -- $door
	expect_eq "$(jq -c "select(.event == \"packet\" and .proto == \"$1\" and .port == $2 and
		.uid == 1000 and .rule == \"strict-drop\") | .host" "$T/state/audit-events.jsonl" \
		2>/dev/null | head -1)" '"198.18.0.1"' "strict selftest: the dropped $3 probe is in the audit log"
done

# Without NET_ADMIN: refused, CMD never ran.
rm -f "$T/ws/ran"
box -- --mode strict -- sh -c 'touch /workspace/ran'
expect_eq "$RC" 125 "strict without NET_ADMIN: exit 125"
expect_contains "$ERR" "NET_ADMIN" "strict without NET_ADMIN: the message names the capability"
if [ ! -e "$T/ws/ran" ]; then ok; else bad "strict without NET_ADMIN: CMD ran"; fi

# off: nothing leaves, not even through egressd.
box --cap-add NET_ADMIN -- --mode off -- sh -c \
	'curl -s -o /dev/null -w "%{http_code}\n" --max-time 10 http://allowed.test/;
	 env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY curl -s -o /dev/null -w "%{http_code}\n" --max-time 5 http://198.18.0.1/'
expect_eq "$(printf '%s\n' "$OUT" | tr '\n' ' ')" "403 000 " \
	"off: the proxy refuses, a direct connection fails"

echo "strict done after $(elapsed)s"
finish
