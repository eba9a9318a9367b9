#!/usr/bin/env bash
# Slow readers, with socket buffers too small to hide anything: egressd,
# a test origin and a client run in a network namespace of their own whose
# TCP buffers are fixed at 16 KiB, so egressd's own buffers do the holding.
# A client that reads in bursts (slowreader.py) asks for many large bodies
# on one keep-alive connection, intercepted (both TLS legs) and plain:
# egressd stops reading the origin and resumes many times per response,
# and the end of a body often arrives while it waits. Checks: every body
# intact and in order, egressd still running, each exchange audited once
# with its status and size, and a last response with Connection: close
# ends the connection after all of it was written.
# Needs root (a network namespace; the HTTPS origin binds port 443).
if [ "${1:-}" != "--inside" ]; then
	[ "$(id -u)" -eq 0 ] || {
		echo "proxy_slow_reader needs root: it makes a network namespace" >&2
		exit 1
	}
	NS="egsr-$$"
	ip netns add "$NS" || exit 1
	trap 'ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null; ip netns del "$NS" 2>/dev/null' EXIT
	ip netns exec "$NS" ip link set lo up || exit 1
	# min, default, max: 16 KiB and no growth, for every socket in the namespace.
	ip netns exec "$NS" sysctl -q -w net.ipv4.tcp_rmem="4096 16384 16384" \
	    net.ipv4.tcp_wmem="4096 16384 16384" || exit 1
	ip netns exec "$NS" bash "$0" --inside
	exit $?
fi

# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"
READER="$SRC_DIR/tests/integration/slowreader.py"

expect_eq "$(sysctl -n net.ipv4.tcp_wmem | tr -s '\t ' ' ')" "4096 16384 16384" \
    "socket buffers fixed small in the test's namespace"

pki_make slow-test-ca origin.test || exit 1
start_origin --tls-cert "$T/origin.pem" --tls-key "$T/origin.key" \
    --tls-port 443 --tls-port-file "$T/origin.tls" --dns-map "origin.test=127.0.0.1"
wait_file "$T/origin.tls" 10 || {
	echo "HTTPS origin did not start: $(cat "$T/origin.out")" >&2
	exit 1
}
cat >"$T/policy.yaml" <<YAML
version: 1
network:
  allowlist: ["127.0.0.1"]
YAML
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$T/testca.pem" --ca-out "$T/eg-ca.pem" || exit 1

# 40 sizes from 300 KB to 1 MB, none a multiple of a record or a block.
sizes=()
for i in $(seq 0 39); do
	sizes+=($((300000 + (i * 104729) % 700000)))
done
total=0
for n in "${sizes[@]}"; do total=$((total + n)); done

# reader NAME URL [ARGS...]: a slow reader over one connection.
reader() {
	local name=$1 url=$2
	shift 2
	timeout 120 python3 "$READER" --proxy "127.0.0.1:$EG_PORT" --cafile "$T/eg-ca.pem" \
	    "$@" "$url" "${sizes[@]}" >"$T/$name.out" 2>"$T/$name.err"
	echo $?
}
audited() { # audited SCHEME: "count bytes" of the 200 exchanges with that scheme
	jq -rs --arg s "$1" '[.[] | select(.event == "http" and .scheme == $s and .status == 200)]
	    | "\(length) \(map(.bytes_down) | add)"' "$EG_AUDIT"
}

rc=$(reader tls https://origin.test)
expect_eq "$rc" 0 "40 intercepted bodies to a slow reader over one connection ($(tail -n 1 "$T/tls.err"))"
expect_eq "$(grep -c ' ok$' "$T/tls.out")" 40 "each one intact"
kill -0 "$EG_PID" 2>/dev/null
expect_eq $? 0 "egressd is still running"
sleep 0.2
expect_eq "$(audited https)" "40 $total" "each audited once, with its size"

rc=$(reader plain "http://origin.test:$ORIGIN_PORT")
expect_eq "$rc" 0 "40 plain bodies to a slow reader over one connection ($(tail -n 1 "$T/plain.err"))"
expect_eq "$(grep -c ' ok$' "$T/plain.out")" 40 "each one intact"
sleep 0.2
expect_eq "$(audited http)" "40 $total" "each audited once, with its size"

rc=$(reader close https://origin.test --close)
expect_eq "$rc" 0 "and again, the last request with Connection: close ($(tail -n 1 "$T/close.err"))"
expect_eq "$(tail -n 1 "$T/close.out")" closed "egressd closes after writing all of the last body"
kill -0 "$EG_PID" 2>/dev/null
expect_eq $? 0 "egressd is still running"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd stops cleanly"
finish
