# shellcheck shell=bash
# Shared helpers for the image tests: the local Debian base
# (scripts/make-base-image, cached), the image built with podman from this
# tree (layer cache kept between runs, the project's sources always copied
# and compiled anew when they change), a private temp dir, counted
# assertions, and an internal podman network with an origin container: the
# test "internet" (tests/lib/py/inet.py) at 198.18.0.1 answering DNS, HTTP
# and HTTPS with a test CA. Nothing leaves the machine: the network is
# --internal. Run as root from ctest with BUILD_DIR and SRC_DIR set.

set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
SRC_DIR=$(cd "$SRC_DIR" && pwd)
# Absolute: podman's helper processes run from other directories.
export CONTAINERS_CONF="$SRC_DIR/image/containers.conf"
IMAGE=${OPENCODE_SANDBOX_TEST_IMAGE:-localhost/opencode-sandbox:test}
BASE_IMAGE=localhost/debian-base:bookworm
# shellcheck disable=SC2034 # for the scripts (the pinned version)
OPENCODE_VERSION=$(sed -n 's/^ARG OPENCODE_VERSION=//p' "$SRC_DIR/image/Containerfile" | head -n 1)

# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (podman with nftables inside containers)"
for tool in podman debootstrap openssl python3; do
	command -v "$tool" >/dev/null || skip "needs $tool (scripts/install-deps)"
done

ID=$$
NET="osb-$ID"
ORIGIN="osb-origin-$ID"
T=$(mktemp -d /tmp/egress-image.XXXXXX)
chmod 755 "$T"
LIB_CONTAINERS=""

lib_cleanup() {
	local c
	rm -f "$EXPECT_UNKNOWN"
	for c in $LIB_CONTAINERS; do
		podman rm -f -t 0 "$c" >/dev/null 2>&1
	done
	podman network rm -f "$NET" >/dev/null 2>&1
	rm -rf "$T"
}
trap lib_cleanup EXIT

# Seconds since the test started, for the timing lines in the log.
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }

# The base image (once per machine) and the sandbox image from this tree.
# The layer cache makes a re-run quick; a change in the sources re-runs the
# compile stage. Output in $T/build.log, shown on failure.
image_build() {
	# IMAGE_TEST_REUSE=1: keep an image already built (iterating on a test).
	if [ "${IMAGE_TEST_REUSE:-0}" = 1 ] && podman image exists "$IMAGE"; then
		echo "reusing $IMAGE (IMAGE_TEST_REUSE=1)"
		return 0
	fi
	if ! "$SRC_DIR/scripts/make-base-image" >"$T/base.log" 2>&1; then
		cat "$T/base.log" >&2
		return 1
	fi
	echo "base image ready after $(elapsed)s"
	# This machine's trust store, for npm behind a TLS-intercepting proxy.
	local secret=()
	[ -s /etc/ssl/certs/ca-certificates.crt ] &&
		secret=(--secret "id=build-ca,src=/etc/ssl/certs/ca-certificates.crt")
	if ! timeout 1200 podman build --jobs 2 -f "$SRC_DIR/image/Containerfile" \
		--build-arg BASE="$BASE_IMAGE" "${secret[@]+"${secret[@]}"}" -t "$IMAGE" \
		"$SRC_DIR" >"$T/build.log" 2>&1; then
		tail -n 60 "$T/build.log" >&2
		return 1
	fi
	echo "image $IMAGE built after $(elapsed)s"
}

# A test CA and the origin's certificate for the test names.
lib_test_ca() {
	pki_make image-test-ca allowed.test readonly.test blocked.test model.test || return 1
	mkdir -p "$T/origin"
	cp "$T/origin.pem" "$T/origin.key" "$SRC_DIR/tests/lib/py/inet.py" \
		"$SRC_DIR/tests/lib/py/origin.py" "$T/origin/"
	chmod 644 "$T/testca.pem" "$T/origin/"*
}

# The internal network (IPv4 and IPv6, no route out) and the origin container
# on it at 198.18.0.1 / 2001:2::1, run from the sandbox image's own python3:
# inet.py (DNS: every name is 198.18.0.1; HTTP on 80 answering
# "internet-origin"; the side-door ports) and origin.py on 443 (HTTPS with
# the test CA; /hello, /echo answering a body's length and SHA-256) and
# 8080, logging each request as JSON.
# lib_net_up --model REPLY: HTTPS on 443 is instead inet.py's scripted
# OpenAI-compatible model API answering REPLY (model.test is in the
# certificate), each request a "model ..." line of origin_log and its body a
# line of /tmp/model.jsonl in the origin container; origin.py does not run.
# lib_net_up --model REPLY --script FILE: the model also asks for tool calls
# (inet.py --model-script, FILE copied in), and answers GET /hello and
# POST /echo for the tools.
lib_net_up() {
	local model="" script=""
	[ "${1-}" = --model ] && model=${2?lib_net_up --model needs the reply}
	[ "${3-}" = --script ] && script=${4?lib_net_up --script needs a file}
	lib_test_ca || return 1
	if [ -n "$script" ]; then
		cp "$script" "$T/origin/script.json"
		chmod 644 "$T/origin/script.json"
	fi
	podman network create --internal --subnet 198.18.0.0/24 --gateway 198.18.0.254 \
		--ipv6 --subnet 2001:2::/64 --gateway 2001:2::fe "$NET" >"$T/net.log" 2>&1 || {
		cat "$T/net.log" >&2
		return 1
	}
	LIB_CONTAINERS="$LIB_CONTAINERS $ORIGIN"
	# shellcheck disable=SC2016 # the container's shell expands the script
	timeout 120 podman run -d --name "$ORIGIN" --network "$NET" --ip 198.18.0.1 --ip6 2001:2::1 \
		-v "$T/origin:/origin:ro" -e MODEL_REPLY="$model" --entrypoint sh "$IMAGE" -c '
		if [ -n "$MODEL_REPLY" ]; then
			echo 443 >/tmp/tls-port
			set --
			[ -f /origin/script.json ] && set -- --model-script /origin/script.json
			exec python3 /origin/inet.py --lifetime 1200 --tls-cert /origin/origin.pem \
				--tls-key /origin/origin.key --model-reply "$MODEL_REPLY" \
				--model-log /tmp/model.jsonl "$@"
		fi
		python3 /origin/origin.py --bind 198.18.0.1 --port 8080 --tls-port 443 \
			--tls-port-file /tmp/tls-port --tls-cert /origin/origin.pem \
			--tls-key /origin/origin.key --log /tmp/origin.jsonl --max-seconds 1200 \
			>/dev/null &
		exec python3 /origin/inet.py --lifetime 1200' >"$T/origin.log" 2>&1 || {
		cat "$T/origin.log" >&2
		return 1
	}
	local _
	for _ in $(seq 100); do
		podman logs "$ORIGIN" 2>/dev/null | grep -q ready &&
			podman exec "$ORIGIN" test -s /tmp/tls-port 2>/dev/null && return 0
		sleep 0.1
	done
	echo "the origin container did not start:" >&2
	podman logs "$ORIGIN" >&2
	return 1
}

# What reached the origin: inet.py's lines (one per request or datagram),
# then origin.py's JSON lines.
origin_log() {
	podman logs "$ORIGIN" 2>/dev/null
	podman exec "$ORIGIN" cat /tmp/origin.jsonl 2>/dev/null
}

# lib_policy MODE [ALLOWLIST]: the global policy the sandbox runs with,
# mounted over the image's. allowed.test may do anything, blocked.test
# nothing; the default allowlist also lifts the private-address guard for
# the test network, so other names there are reachable read-only.
lib_policy() {
	cat >"$T/policy.yaml" <<EOT
version: 1
network:
  mode: $1
  allowlist: [${2-"allowed.test", "198.18.0.0/24"}]
  blocklist: ["blocked.test"]
  failClosed: true
audit:
  path: /sandbox/logs/audit-events.jsonl
EOT
	chmod 644 "$T/policy.yaml"
}

# box [ENGINE-ARGS...] -- [SANDBOX-INIT-ARGS...] -- CMD...: the sandbox image
# on the test network, resolving through the origin, with the test policy, a
# host state dir ($T/state) and a project dir ($T/ws) mounted, the test CA as
# egressd's upstream trust. stdout in $OUT, stderr in $ERR, status in $RC.
# shellcheck disable=SC2034 # RC, OUT and ERR are for the caller
box() {
	local eng=() init=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		eng+=("$1")
		shift
	done
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		init+=("$1")
		shift
	done
	shift
	mkdir -p "$T/state" "$T/ws"
	chmod 1777 "$T/ws"
	timeout 300 podman run --rm --network "$NET" --dns 198.18.0.1 \
		-v "$T/ws:/workspace" -v "$T/state:/sandbox/logs" \
		-v "$T/policy.yaml:/etc/opencode-sandbox/policy.yaml:ro" \
		-v "$T/testca.pem:/etc/opencode-sandbox/test-upstream-ca.pem:ro" \
		"${eng[@]+"${eng[@]}"}" --entrypoint sandbox-init "$IMAGE" \
		--egressd-arg=--upstream-ca=/etc/opencode-sandbox/test-upstream-ca.pem \
		"${init[@]+"${init[@]}"}" -- "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

# lib_containers_conf: $T/containers.conf, podman's settings for runs of
# opencode-sandbox on the test network: the project's (runc, ulimits) and
# the test network with its resolver as the default for new containers, so
# that opencode-sandbox needs no flag of its own for the test.
lib_containers_conf() {
	cat >"$T/containers.conf" <<EOT
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]
dns_servers = ["198.18.0.1"]

[engine]
runtime = "runc"

[network]
default_network = "$NET"
EOT
}

# row NAME: the value after NAME in $OUT's "NAME VALUE" lines.
row() { printf '%s\n' "$OUT" | awk -v p="$1" '$1 == p {print $2; exit}'; }
# rest NAME: everything after "NAME " on its line of $OUT.
rest() { printf '%s\n' "$OUT" | sed -n "s/^$1 //p" | head -n 1; }
