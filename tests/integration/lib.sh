# shellcheck shell=bash
# Shared helpers for the integration scripts: a private temp dir removed on
# exit, assertions that count (tests/lib/sh/expect.sh), and a closing
# "N passed, N failed" line; for the proxy scripts also the test origin
# (tests/lib/py/origin.py), egressd started on a free port, and bounded
# waits; for the resolver scripts a stub authority and dig. Background
# processes a script starts through these helpers are killed on exit.
# Scripts run from ctest with BUILD_DIR and SRC_DIR set.

set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
# shellcheck disable=SC2034 # for the scripts
POLICYCTL="$BUILD_DIR/policyctl"
EGRESSD="$BUILD_DIR/egressd"
ORIGIN_PY="$SRC_DIR/tests/lib/py/origin.py"
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

T=$(mktemp -d "${TMPDIR:-/tmp}/egress-it.XXXXXX")
LIB_PIDS=""
lib_cleanup() {
	local p
	rm -f "$EXPECT_UNKNOWN"
	for p in $LIB_PIDS; do
		kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap lib_cleanup EXIT
# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"

# run CMD...: runs a command, leaving OUT (stdout), ERR (stderr) and RC.
run() {
	"$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

expect_rc() { # expect_rc WANT LABEL
	if [ "$RC" -eq "$1" ]; then ok; else bad "$2: exit $RC, want $1 (stderr: $ERR)"; fi
}

# jqf FILTER: apply a jq filter to OUT.
jqf() { printf '%s' "$OUT" | jq -r "$1"; }

# track_pid PID: kill PID when the script exits.
track_pid() { LIB_PIDS="$LIB_PIDS $1"; }

# now_ms: a monotonic-enough clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# free_port: a loopback TCP port nothing listens on, never one this script
# was already given (the kernel may hand out the same free port twice in a
# row, in a fresh network namespace especially).
free_port() {
	python3 - "$T/ports.given" <<'EOF'
import socket, sys
path = sys.argv[1]
try:
    with open(path) as f:
        given = set(f.read().split())
except OSError:
    given = set()
for _ in range(100):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    # Free for UDP too: the resolver's port is bound both ways.
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", port))
        udp_free = True
    except OSError:
        udp_free = False
    u.close()
    s.close()
    if udp_free and str(port) not in given:
        break
else:
    sys.exit("no free port that was not given out already")
with open(path, "a") as f:
    f.write("%d\n" % port)
print(port)
EOF
}

# wait_file FILE [SECS]: until FILE exists and is not empty.
wait_file() {
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_port PORT [SECS]: until something accepts on 127.0.0.1:PORT.
wait_port() {
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_exit PID SECS: until PID is gone; sets EXIT_RC (its status, or 255
# if it is still running after SECS). PID must be a child of this shell.
# shellcheck disable=SC2034 # EXIT_RC is for the caller
wait_exit() {
	local i
	EXIT_RC=255
	for ((i = 0; i < $2 * 20; i++)); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			EXIT_RC=$?
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# start_origin [ARGS...]: runs origin.py with its DNS responder (ARGS go to
# origin.py); sets ORIGIN_PORT, ORIGIN_DNS (127.0.0.1:PORT for
# --upstream-dns), ORIGIN_LOG, ORIGIN_PID.
# shellcheck disable=SC2034 # ORIGIN_PORT and ORIGIN_DNS are for the caller
start_origin() {
	ORIGIN_LOG="$T/origin.jsonl"
	rm -f "$T/origin.port" "$T/origin.dns"
	: >"$ORIGIN_LOG"
	python3 "$ORIGIN_PY" --log "$ORIGIN_LOG" --port-file "$T/origin.port" \
	    --dns-port-file "$T/origin.dns" --parent $$ "$@" >"$T/origin.out" 2>&1 &
	ORIGIN_PID=$!
	track_pid "$ORIGIN_PID"
	if ! wait_file "$T/origin.port" 10; then
		echo "origin did not start: $(cat "$T/origin.out")" >&2
		exit 1
	fi
	ORIGIN_PORT=$(cat "$T/origin.port")
	ORIGIN_DNS="127.0.0.1:$(cat "$T/origin.dns")"
}

# origin_count FILTER: how many lines of the origin's log match a jq filter
# (e.g. 'select(.method == "POST")').
origin_count() { jq -c "$1" "$ORIGIN_LOG" | wc -l; }

# start_egressd ARGS...: egressd on a free loopback port with --ready-fd and
# --audit "$EG_AUDIT" (default $T/audit.jsonl) and --dns on a free port (unless
# given), waiting (bounded) for READY.
# Sets EG_PORT, EG_PID, EG_ERR; returns 1 if it did not get ready.
EG_N=0
start_egressd() {
	local try
	# A port found free can be taken by another test before egressd binds
	# it: then, and only then, start again on other free ports.
	for try in 1 2 3 4 5; do
		start_egressd_once "$@" && return 0
		kill -0 "$EG_PID" 2>/dev/null && break
		grep -q "Address already in use" "$EG_ERR" 2>/dev/null || break
		echo "egressd: a port was taken meanwhile (try $try), starting on others" >&2
	done
	echo "egressd did not get ready: $(cat "$EG_ERR")" >&2
	return 1
}

start_egressd_once() {
	EG_N=$((EG_N + 1))
	EG_PORT=$(free_port)
	EG_ERR="$T/egressd.$EG_N.err"
	: "${EG_AUDIT:=$T/audit.jsonl}"
	# The resolver listens too: on a free port unless the caller names one.
	local dns=()
	case " $* " in
	*" --dns "*) ;;
	*) EG_DNS_PORT=$(free_port); dns=(--dns "127.0.0.1:$EG_DNS_PORT") ;;
	esac
	"$EGRESSD" --proxy "127.0.0.1:$EG_PORT" "${dns[@]}" --audit "$EG_AUDIT" --ready-fd 3 "$@" \
	    3>"$T/ready.$EG_N" 2>"$EG_ERR" &
	EG_PID=$!
	track_pid "$EG_PID"
	local i
	for ((i = 0; i < ${EG_START_SECS:-20} * 20; i++)); do
		grep -q READY "$T/ready.$EG_N" 2>/dev/null && return 0
		kill -0 "$EG_PID" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

# eg_kb FIELD: a size from egressd's /proc status (VmRSS, VmHWM), in kB.
eg_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$EG_PID/status"; }

# eg_rss_peak PID: egressd's largest VmRSS (kB) seen while PID runs,
# sampled every 0.25 s for at most 100 s.
eg_rss_peak() {
	local peak=0 r i
	for ((i = 0; i < 400; i++)); do
		kill -0 "$1" 2>/dev/null || break
		r=$(eg_kb VmRSS)
		[ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
		sleep 0.25
	done
	echo "$peak"
}

# stop_egressd: SIGTERM and a bounded wait; sets EXIT_RC.
stop_egressd() {
	kill -TERM "$EG_PID" 2>/dev/null
	wait_exit "$EG_PID" "${1:-15}"
}

# pcurl ARGS...: curl through egressd, never bypassing it for 127.0.0.1.
pcurl() {
	env -u no_proxy -u NO_PROXY -u http_proxy -u HTTP_PROXY curl -sS --max-time 30 \
	    --proxy "http://127.0.0.1:$EG_PORT" "$@"
}

# audit_last FILTER: the last audit line matching a jq select, compact.
audit_last() { jq -c "select($1)" "$EG_AUDIT" | tail -n 1; }

# asan_build: true when egressd was built with AddressSanitizer.
asan_build() { grep -q __asan_init "$EGRESSD" 2>/dev/null; }

# --- the resolver scripts (dns_*.sh): the stub authority (dns_stub.py with
# tests/data/resolver/stub.zone), egressd with its DNS listener on a free
# port, and dig against it.

DNS_STUB_PY="$SRC_DIR/tests/integration/dns_stub.py"
DNS_ZONE="$SRC_DIR/tests/data/resolver/stub.zone"
STUB_N=0

# start_stub [--silent]: a stub authority; sets STUB_PORT, STUB_LOG, STUB_PID.
# shellcheck disable=SC2034 # STUB_PORT is for the caller
start_stub() {
	STUB_N=$((STUB_N + 1))
	STUB_LOG="$T/stub.$STUB_N.jsonl"
	: >"$STUB_LOG"
	python3 "$DNS_STUB_PY" --zone "$DNS_ZONE" --port-file "$T/stub.$STUB_N.port" \
	    --log "$STUB_LOG" --parent $$ "$@" >"$T/stub.$STUB_N.out" 2>&1 &
	STUB_PID=$!
	track_pid "$STUB_PID"
	if ! wait_file "$T/stub.$STUB_N.port" 10; then
		echo "stub did not start: $(cat "$T/stub.$STUB_N.out")" >&2
		exit 1
	fi
	STUB_PORT=$(cat "$T/stub.$STUB_N.port")
}

# stub_count NAME [TYPE]: queries the stub saw for NAME (of TYPE, a number).
stub_count() {
	if [ $# -ge 2 ]; then
		jq -c "select(.name == \"$1\" and .type == $2)" "$STUB_LOG" | wc -l
	else
		jq -c "select(.name == \"$1\")" "$STUB_LOG" | wc -l
	fi
}

# start_resolver ARGS...: egressd with --dns on a free port; sets DNS_PORT.
start_resolver() {
	DNS_PORT=$(free_port)
	start_egressd --dns "127.0.0.1:$DNS_PORT" "$@"
}

# dq ARGS...: dig against egressd's resolver, one try; output in OUT.
dq() {
	run dig @127.0.0.1 -p "$DNS_PORT" +tries=1 +time=8 "$@"
}

# dq_status: the status of the last dq ("NOERROR", "NXDOMAIN", ...).
dq_status() { printf '%s\n' "$OUT" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -n 1; }

# dq_answers TYPE: the answer values of that type in the last dq, sorted.
dq_answers() {
	printf '%s\n' "$OUT" | awk -v t="$1" '/^;/ {next} $4 == t {print $5}' | sort | tr '\n' ' ' |
	    sed 's/ $//'
}

# dq_ede: the EDE line of the last dq.
dq_ede() { printf '%s\n' "$OUT" | grep 'EDE:' | head -n 1; }

write_dns_policy() { # write_dns_policy FILE MODE
	cat >"$1" <<EOF
version: 1
network:
  mode: $2
  inheritGlobal: false
  blocklist: ["blocked.example.test", "*.ads.example.test"]
  allowlist: ["198.18.0.0/15", "2001:2::/48", "trusted.example.test", "origin.example.test"]
EOF
}
