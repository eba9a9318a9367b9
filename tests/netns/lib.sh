# shellcheck shell=bash
# Shared helpers for the network-namespace tests: two namespaces joined by
# a veth pair, "internet" (198.18.0.1, 2001:2::1, running inet.py) and
# "sandbox" (198.18.0.2, 2001:2::2, default route to the internet), throwaway
# users for egressd and the payload, a private temp dir, counted assertions
# and a cleanup trap that removes all of it. Run as root from ctest with
# BUILD_DIR and SRC_DIR set; every wait is bounded.

set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
SANDBOX_INIT="$BUILD_DIR/sandbox-init"
EGRESSD="$BUILD_DIR/egressd"
export PYTHONDONTWRITEBYTECODE=1

# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, nftables)"
for tool in ip nft python3 curl setpriv; do
	command -v "$tool" >/dev/null || skip "needs $tool"
done
[ -x "$SANDBOX_INIT" ] || skip "sandbox-init not built"
[ -x "$EGRESSD" ] || skip "egressd not built"

ID=$$
NS_INET="egi-$ID"
NS_BOX="egs-$ID"
T=$(mktemp -d /tmp/egress-netns.XXXXXX)
chmod 755 "$T" # egressd and the payload read files here
mkdir -m 1777 "$T/w" # and the payload writes its marks here
LIB_PIDS=""
LIB_USERS=""

lib_cleanup() {
	local p u
	rm -f "$EXPECT_UNKNOWN"
	for p in $LIB_PIDS; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	ip netns pids "$NS_BOX" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns pids "$NS_INET" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$NS_BOX" 2>/dev/null
	ip netns del "$NS_INET" 2>/dev/null
	rm -rf "/etc/netns/$NS_BOX"
	for u in $LIB_USERS; do
		userdel "$u" 2>/dev/null
	done
	rm -rf "$T"
}
trap lib_cleanup EXIT

# Throwaway system users (no home, no shell): uids for egressd and the payload.
# (Registered for removal here, not in a subshell, so the trap sees them.)
lib_user() { # lib_user NAME
	useradd --system --no-create-home --shell /usr/sbin/nologin "$1" >/dev/null 2>&1 || return 1
	LIB_USERS="$LIB_USERS $1"
}
EG_USER="egt$ID"
BOX_USER="ebt$ID"
if ! lib_user "$EG_USER" || ! lib_user "$BOX_USER"; then
	skip "cannot create test users (useradd)"
fi
EG_UID=$(id -u "$EG_USER")
BOX_UID=$(id -u "$BOX_USER")

in_box() { ip netns exec "$NS_BOX" "$@"; }
in_inet() { ip netns exec "$NS_INET" "$@"; }

# A test CA and a certificate for allowed.test (egressd trusts it upstream).
lib_test_ca() {
	pki_make netns-test-ca allowed.test blocked.test || return 1
	chmod 644 "$T/testca.pem"
}

# Builds both namespaces and starts the internet's servers.
lib_net_up() {
	ip netns add "$NS_INET" || return 1
	ip netns add "$NS_BOX" || return 1
	ip link add "vi$ID" type veth peer name "vb$ID" || return 1
	ip link set "vi$ID" netns "$NS_INET"
	ip link set "vb$ID" netns "$NS_BOX"
	in_inet ip link set lo up
	in_box ip link set lo up
	in_inet ip addr add 198.18.0.1/24 dev "vi$ID"
	in_box ip addr add 198.18.0.2/24 dev "vb$ID"
	in_inet ip -6 addr add 2001:2::1/64 dev "vi$ID" nodad
	in_box ip -6 addr add 2001:2::2/64 dev "vb$ID" nodad
	in_inet ip link set "vi$ID" up
	in_box ip link set "vb$ID" up
	in_box ip route add default via 198.18.0.1
	in_box ip -6 route add default via 2001:2::1
	# ip netns exec binds this over /etc/resolv.conf in the sandbox.
	mkdir -p "/etc/netns/$NS_BOX"
	echo "nameserver 198.18.0.1" >"/etc/netns/$NS_BOX/resolv.conf"
	lib_test_ca || return 1
	in_inet python3 "$SRC_DIR/tests/lib/py/inet.py" --lifetime 600 \
		--tls-cert "$T/origin.pem" --tls-key "$T/origin.key" >"$T/inet.log" 2>&1 &
	LIB_PIDS="$LIB_PIDS $!"
	local _
	for _ in $(seq 50); do
		grep -q ready "$T/inet.log" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "inet.py did not start:" >&2
	cat "$T/inet.log" >&2
	return 1
}

# The policy of the tests: allowed.test reachable, blocked.test blocked.
lib_policy() { # lib_policy MODE
	cat >"$T/policy.yaml" <<EOT
version: 1
network:
  mode: $1
  allowlist: ["allowed.test"]
  blocklist: ["blocked.test"]
  failClosed: true
audit:
  path: $T/audit.jsonl
EOT
	chmod 644 "$T/policy.yaml"
}

# egressd knows a flag (features landing in parallel are detected, not assumed).
egressd_has() { "$EGRESSD" --help 2>&1 | grep -q -- "$1"; }

# box_init ARGS... -- CMD...: sandbox-init in the sandbox namespace with the
# test users, run dir and policy; stdout in $T/out and $OUT, stderr in
# $T/err and $ERR, status in $RC.
# shellcheck disable=SC2034 # RC, OUT and ERR are for the caller
box_init() {
	local up=()
	egressd_has --upstream-ca && up=(--egressd-arg=--upstream-ca="$T/testca.pem")
	echo "nameserver 198.18.0.1" >"/etc/netns/$NS_BOX/resolv.conf"
	in_box timeout 90 "$SANDBOX_INIT" --egressd "$EGRESSD" --user "$BOX_UID" \
		--egress-user "$EG_UID" --run-dir "$T/run" --global-config "$T/policy.yaml" \
		--project-config none --resolv-conf /etc/resolv.conf --trust-store none \
		"${up[@]+"${up[@]}"}" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}
