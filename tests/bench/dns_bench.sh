#!/usr/bin/env bash
# Resolver benchmark: dnsperf against egressd, dnsmasq and unbound side by
# side in one run, each a forwarding cache with the same 100,000-name
# blocklist in front of the same local authority (dnsmasq answering every
# name under benchtld with 198.18.0.1, TTL 1 h). Prints one markdown table:
# queries/s for cached allowed names, blocked names and cache misses (unique
# names), the time from start to answering with the list loaded, the
# resident size with the list, and each server's CPU time (user and
# system, from /proc) per cached query, per blocked query and per miss,
# which depends less on what else the machine does than queries/s; then
# the ratios of egressd to unbound.
# All servers run at once; each scenario is measured in ROUNDS rounds that
# take the servers in turn, and each figure is the median of its rounds, so
# a slow moment of the machine does not land on one server alone. Every
# round of the miss scenario asks names no earlier round asked.
#
# Configs are rendered from tests/bench/peers/dns_* into a private temp
# dir; every server gets its own free loopback port and is stopped by a
# trap. egressd writes its audit log to a file in that dir, as in use.
# Missing tools (dnsperf, dnsmasq, unbound) are installed with apt-get
# unless --no-install.
#
# usage: tests/bench/dns_bench.sh [--duration S] [--rounds N] [--clients N] [--names N]
#            [--peers "egressd dnsmasq unbound"] [--out FILE] [--no-install]

set -u

DURATION=9 # seconds per server and scenario, split into ROUNDS runs
ROUNDS=3
CLIENTS=8
NAMES=100000
PEERS="egressd dnsmasq unbound"
OUT=""
INSTALL=1

usage() {
	awk '/^# usage:/ {u = 1} u && /^#/ {sub(/^# /, ""); print; next} u {exit}' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--duration) DURATION=${2:?}; shift 2 ;;
	--rounds) ROUNDS=${2:?}; shift 2 ;;
	--clients) CLIENTS=${2:?}; shift 2 ;;
	--names) NAMES=${2:?}; shift 2 ;;
	--peers) PEERS=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--no-install) INSTALL=0; shift ;;
	*) usage ;;
	esac
done

case "$DURATION$ROUNDS" in '' | *[!0-9]*) usage ;; esac
if [ "$ROUNDS" -lt 1 ] || [ "$ROUNDS" -gt 10 ] || [ "$DURATION" -lt "$ROUNDS" ]; then
	echo "--rounds: 1..10, and --duration at least one second per round" >&2
	exit 2
fi
ROUND_S=$((DURATION / ROUNDS))

SRC_DIR=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build}
PEER_DIR="$SRC_DIR/tests/bench/peers"
T=$(mktemp -d "${TMPDIR:-/tmp}/dns-bench.XXXXXX")
PIDS=""
cleanup() {
	local p
	for p in $PIDS; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

need() { # need CMD PACKAGE
	command -v "$1" >/dev/null 2>&1 && return 0
	[ "$INSTALL" = 1 ] || { echo "missing $1 (package $2)" >&2; return 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1 ||
	    { apt-get update -q >/dev/null 2>&1 &&
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1; }
	command -v "$1" >/dev/null 2>&1
}
need dnsperf dnsperf || exit 1
need dnsmasq dnsmasq-base || exit 1
case " $PEERS " in *" unbound "*) need unbound unbound || PEERS=${PEERS/unbound/} ;; esac
# A packaged unbound or dnsmasq service must not hold the ports or the CPU.
systemctl stop unbound dnsmasq >/dev/null 2>&1 || true

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

render() { # render TEMPLATE OUT KEY=VALUE...
	local tpl=$1 out=$2 kv
	shift 2
	cp "$tpl" "$out"
	for kv in "$@"; do
		sed -i "s|@${kv%%=*}@|${kv#*=}|g" "$out"
	done
}

# answers PORT NAME: true once the server at PORT answers NAME.
answers() { dig @127.0.0.1 -p "$1" +tries=1 +time=1 +short "$2" A 2>/dev/null | grep -q .; }

# launch PORT ERRFILE CMD...: starts CMD, prints "PID SECONDS": its pid and
# the time from just before its exec until it answers a query on PORT (one
# every 5 ms). The clock starts in the same process that polls, after the
# interpreter is up, so neither the shell nor Python's start-up is counted.
launch() {
	python3 - "$@" <<'EOF'
import socket, struct, subprocess, sys, time
port, err, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\3www\x08benchtld\0\0\1\0\1"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.005)
start = time.time_ns()
p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=open(err, "w"))
for _ in range(4000):
    try:
        s.sendto(q, ("127.0.0.1", port))
        r, _ = s.recvfrom(4096)
        if len(r) > 12 and struct.unpack(">H", r[6:8])[0] > 0:
            print(p.pid, "%.3f" % ((time.time_ns() - start) / 1e9))
            sys.exit(0)
    except OSError:
        if p.poll() is not None:
            break
        time.sleep(0.005)
print(p.pid, "-")
EOF
}

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo -; }

# --- the data: blocklist in three formats, three query files ---
python3 - "$T" "$NAMES" "$ROUNDS" <<'EOF'
import sys, random
t, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(42)
alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
names = set()
while len(names) < n:
    names.add("".join(rng.choice(alpha) for _ in range(rng.randint(6, 14))) + "." +
              rng.choice(["ads", "track", "stats", "pixel", "metrics"]) + ".benchtld")
names = sorted(names)
with open(t + "/block.list", "w") as f:
    f.writelines("||%s^\n" % x for x in names)
with open(t + "/dnsmasq_block.conf", "w") as f:
    f.writelines("address=/%s/\n" % x for x in names)
with open(t + "/unbound_block.conf", "w") as f:
    f.writelines('local-zone: "%s." always_nxdomain\n' % x for x in names)
with open(t + "/q_blocked", "w") as f:
    f.writelines("%s A\n" % x for x in rng.sample(names, min(10000, n)))
with open(t + "/q_cached", "w") as f:
    f.writelines("c%d.cached.benchtld A\n" % i for i in range(200))
for r in range(1, rounds + 1):
    with open(t + "/q_miss_%d" % r, "w") as f:
        f.writelines("m%d-%d-%d.miss.benchtld A\n" % (r, i, rng.randint(0, 1 << 30))
                     for i in range(600000))
EOF

AUTH_PORT=$(free_port)
render "$PEER_DIR/dns_authority.conf" "$T/authority.conf" "PORT=$AUTH_PORT"
dnsmasq --keep-in-foreground --conf-file="$T/authority.conf" --pid-file= 2>"$T/authority.err" &
PIDS="$PIDS $!"

start_peer() { # start_peer NAME PORT: starts it, sets PEER_PID, LOAD_S
	local cmd=()
	case "$1" in
	egressd)
		render "$PEER_DIR/dns_egressd.yaml" "$T/egressd.yaml" "BLOCK_FILE=$T/block.list"
		cmd=("$BUILD_DIR/egressd" --config "$T/egressd.yaml" --proxy 127.0.0.1:0
		    --dns "127.0.0.1:$2" --upstream-dns "127.0.0.1:$AUTH_PORT"
		    --audit "$T/audit.jsonl")
		;;
	dnsmasq)
		render "$PEER_DIR/dns_dnsmasq.conf" "$T/dnsmasq.conf" "PORT=$2" \
		    "AUTH_PORT=$AUTH_PORT" "BLOCK_CONF=$T/dnsmasq_block.conf"
		cmd=(dnsmasq --keep-in-foreground --conf-file="$T/dnsmasq.conf" --pid-file=)
		;;
	unbound)
		render "$PEER_DIR/dns_unbound.conf" "$T/unbound.conf" "PORT=$2" \
		    "AUTH_PORT=$AUTH_PORT" "BLOCK_CONF=$T/unbound_block.conf"
		cmd=(unbound -d -c "$T/unbound.conf")
		;;
	esac
	read -r PEER_PID LOAD_S < <(launch "$2" "$T/$1.err" "${cmd[@]}")
	PIDS="$PIDS $PEER_PID"
}

# stop PID: TERM, then KILL if it is still there after 5 s.
stop() {
	local _
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 1 50); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
}

# cpu_ticks PID: the user and system time PID has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# perf PORT FILE PID: "QPS CPU" for one round of dnsperf over FILE: queries/s,
# and the server's CPU time (user and system) per completed query, in ns.
perf() {
	local t0 t1
	t0=$(cpu_ticks "$3")
	dnsperf -s 127.0.0.1 -p "$1" -d "$2" -l "$ROUND_S" -c "$CLIENTS" -q 500 -t 5 \
	    >"$T/perf.out" 2>&1
	t1=$(cpu_ticks "$3")
	awk -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" '
	    /Queries completed/ {n = $3}
	    /Queries per second/ {q = int($4)}
	    END {printf "%s %s\n", q, (n > 0 ? int(ticks / hz * 1e9 / n) : "-")}' "$T/perf.out"
}

for _ in $(seq 1 50); do answers "$AUTH_PORT" www.benchtld && break; sleep 0.1; done

# median N...: the median of the numbers given (the lower one of an even count).
median() { printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }

declare -A QPS_CACHED QPS_BLOCKED QPS_MISS CPU_CACHED CPU_BLOCKED CPU_MISS LOAD RSS PORT_OF PID_OF RUNS CPUS
RUNNING=""
# Each server is started alone (ready time and RSS are its own), then stays up.
for peer in $PEERS; do
	[ "$peer" = egressd ] && [ ! -x "$BUILD_DIR/egressd" ] && continue
	port=$(free_port)
	start_peer "$peer" "$port"
	LOAD[$peer]=$LOAD_S
	RSS[$peer]=$(rss_mib "$PEER_PID")
	PORT_OF[$peer]=$port
	PID_OF[$peer]=$PEER_PID
	RUNNING="$RUNNING $peer"
	# Warm the cache with the names of the cached set.
	dnsperf -s 127.0.0.1 -p "$port" -d "$T/q_cached" -n 1 -c 1 >/dev/null 2>&1
done
for round in $(seq 1 "$ROUNDS"); do
	for scen in cached blocked miss; do
		file="$T/q_$scen"
		[ "$scen" = miss ] && file="$T/q_miss_$round"
		for peer in $RUNNING; do
			read -r qps cpu < <(perf "${PORT_OF[$peer]}" "$file" "${PID_OF[$peer]}")
			RUNS[$peer.$scen]="${RUNS[$peer.$scen]:-} ${qps:-}"
			CPUS[$peer.$scen]="${CPUS[$peer.$scen]:-} ${cpu:-}"
		done
	done
done
for peer in $RUNNING; do
	# shellcheck disable=SC2086
	QPS_CACHED[$peer]=$(median ${RUNS[$peer.cached]})
	# shellcheck disable=SC2086
	QPS_BLOCKED[$peer]=$(median ${RUNS[$peer.blocked]})
	# shellcheck disable=SC2086
	QPS_MISS[$peer]=$(median ${RUNS[$peer.miss]})
	# shellcheck disable=SC2086
	CPU_CACHED[$peer]=$(median ${CPUS[$peer.cached]})
	# shellcheck disable=SC2086
	CPU_BLOCKED[$peer]=$(median ${CPUS[$peer.blocked]})
	# shellcheck disable=SC2086
	CPU_MISS[$peer]=$(median ${CPUS[$peer.miss]})
	stop "${PID_OF[$peer]}"
done

ratio() { # ratio A B: A/B with two decimals, or -
	if [ -n "${1:-}" ] && [ -n "${2:-}" ] && [ "${2:-0}" != 0 ] && [ "$1" != - ] && [ "$2" != - ]; then
		echo "scale=2; $1 / $2" | bc
	else
		echo -
	fi
}

{
	echo "| server | cached q/s | blocked q/s | miss q/s | ready with list (s) | RSS with list (MiB) | CPU ns per cached query | CPU ns per blocked query | CPU ns per miss |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for peer in $RUNNING; do
		[ -n "${QPS_CACHED[$peer]:-}" ] || continue
		echo "| $peer | ${QPS_CACHED[$peer]} | ${QPS_BLOCKED[$peer]} | ${QPS_MISS[$peer]} |" \
		    "${LOAD[$peer]} | ${RSS[$peer]} | ${CPU_CACHED[$peer]:--} | ${CPU_BLOCKED[$peer]:--} | ${CPU_MISS[$peer]:--} |"
	done
	if [ -n "${QPS_CACHED[egressd]:-}" ] && [ -n "${QPS_CACHED[unbound]:-}" ]; then
		echo
		echo "egressd / unbound: cached $(ratio "${QPS_CACHED[egressd]}" "${QPS_CACHED[unbound]}")," \
		    "blocked $(ratio "${QPS_BLOCKED[egressd]}" "${QPS_BLOCKED[unbound]}")," \
		    "misses $(ratio "${QPS_MISS[egressd]}" "${QPS_MISS[unbound]}")"
	fi
	echo
	echo "($NAMES-name blocklist; dnsperf -c $CLIENTS -q 500; per server and scenario the median" \
	    "of $ROUNDS rounds of $ROUND_S s, taken in turn; $(nproc) cores; $(date -u +%Y-%m-%d))"
} | tee "${OUT:-/dev/null}"
