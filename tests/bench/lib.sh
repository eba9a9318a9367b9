# shellcheck shell=bash
# Shared by the benchmark scripts (proxy_bench.sh, tls_bench.sh): their
# common options, background processes started and stopped under their
# own pid, free loopback ports,
# RSS of a process tree, and the small statistics of the reports. The
# sourcing script sets T (its temp dir) and defines loadgen_run; it reads
# the tables start and check_peer fill (PID, PORT, STATUS by peer name),
# FREE after free_port and its options after bench_args.

BG_PIDS=""
USED_PORTS=" "
declare -gA PID PORT STATUS

log() { printf '%s\n' "$*" >&2; }

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

# mine PID: PID is still a child of this script (not a reused pid).
mine() { [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]; }

# cleanup: TERM then KILL every background process of ours, remove $T.
cleanup() {
	local p _
	for p in $BG_PIDS; do
		mine "$p" && kill -TERM "$p" 2>/dev/null
	done
	for p in $BG_PIDS; do
		for _ in $(seq 1 30); do
			mine "$p" || break
			sleep 0.1
		done
		mine "$p" && kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}

# port_open PORT [ADDR]: something accepts on ADDR:PORT (default loopback).
port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/${2:-127.0.0.1}/$1" 2>/dev/null; }

# free_port: sets FREE to an unused loopback port below the ephemeral range,
# never one handed out before in this run.
# shellcheck disable=SC2034 # FREE is for the caller
free_port() {
	local _ p
	for _ in $(seq 1 100); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		case "$USED_PORTS" in *" $p "*) continue ;; esac
		if ! port_open "$p"; then
			USED_PORTS="$USED_PORTS$p "
			FREE=$p
			return 0
		fi
	done
	return 1
}

# start NAME ADDR PORT CMD...: runs CMD in the background and waits (15 s at
# most) until it listens on ADDR:PORT; STATUS[NAME] says why when it fails.
# shellcheck disable=SC2034 # PORT and STATUS are for the sourcing script
start() {
	local name=$1 addr=$2 port=$3 _
	shift 3
	"$@" >"$T/$name.out" 2>&1 &
	PID[$name]=$!
	PORT[$name]=$port
	BG_PIDS="$BG_PIDS $!"
	for _ in $(seq 1 150); do
		if ! kill -0 "${PID[$name]}" 2>/dev/null; then
			STATUS[$name]="exited at start-up: $(tail -c 300 "$T/$name.out" | tr '\n' ' ')"
			return 1
		fi
		port_open "$port" "$addr" && return 0
		sleep 0.1
	done
	STATUS[$name]="did not listen within 15 s"
	return 1
}

# rss_kib PID: resident KiB of PID and its children (three levels).
rss_kib() {
	local p total=0 v
	for p in $(tree_pids "$1"); do
		v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		total=$((total + ${v:-0}))
	done
	echo "$total"
}

# tree_pids PID: PID and its children, three levels down.
tree_pids() {
	local all="$1" level="$1" next p _
	for _ in 1 2 3; do
		next=""
		for p in $level; do
			next="$next $(ps -o pid= --ppid "$p" 2>/dev/null)"
		done
		[ -z "${next// /}" ] && break
		all="$all $next"
		level=$next
	done
	echo "$all"
}

# cpu_ticks PID: user and system clock ticks used so far by PID and its
# children (helpers, workers): the server's own CPU, not the load client's.
cpu_ticks() {
	local p total=0 v
	for p in $(tree_pids "$1"); do
		v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null)
		total=$((total + ${v:-0}))
	done
	echo "$total"
}

# cpu_ns_per T0 T1 N: CPU ns per unit from two cpu_ticks readings and a count.
cpu_ns_per() {
	awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1e9 / hz / n; else printf "" }'
}

# us NS: nanoseconds as microseconds with one decimal, or "?" when empty.
us() { awk -v n="$1" 'BEGIN { if (n != "") printf "%.1f", n / 1000; else printf "?" }'; }

# field LINE NAME: the value of NAME= in a loadgen RESULT line.
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# check_peer NAME: a short keep-alive run through NAME must succeed.
# shellcheck disable=SC2034 # STATUS is for the sourcing script
check_peer() {
	local line
	line=$(loadgen_run "$1-check" "$1" --mode keepalive --connections 8 --duration 1)
	if [ -z "$line" ] || [ "$(field "$line" requests)" = 0 ] ||
		[ "$(field "$line" errors)" != 0 ]; then
		STATUS[$1]="failed its check: $(head -c 400 "$T/$1-check.lg" | tr '\n' ' ')"
		return 1
	fi
	STATUS[$1]=ok
}

median() {
	printf '%s\n' "$@" | grep . | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2];
			else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else printf "n/a" }'; }

# loadgen_find: LOADGEN set to $BUILD_DIR/loadgen when it is built with TLS
# support, else to a copy compiled here from its sources (libevent, OpenSSL).
loadgen_find() {
	LOADGEN="$BUILD_DIR/loadgen"
	if [ -x "$LOADGEN" ] && "$LOADGEN" --help 2>&1 | grep -q -- --cacert; then
		return 0
	fi
	LOADGEN="$T/loadgen"
	# shellcheck disable=SC2046
	gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Wno-unused-parameter \
		"$SRC_DIR"/tests/bench/loadgen.c "$SRC_DIR"/tests/bench/loadgen_http.c \
		"$SRC_DIR"/tests/bench/loadgen_tls.c -o "$LOADGEN" \
		$(pkg-config --cflags --libs libevent libevent_openssl libssl libcrypto) ||
		{ log "cannot build loadgen"; return 1; }
}

# bench_args IDLE_MAX ARGS...: the options both scripts take, into DURATION,
# ROUNDS, PEERS, IDLE_CONNS (1..IDLE_MAX), OUT and INSTALL, whose defaults
# the script set; anything else, or a value out of range, calls its usage.
# shellcheck disable=SC2034 # the options are for the sourcing script
bench_args() {
	local idle_max=$1
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--duration) DURATION=${2:?}; shift 2 ;;
		--rounds) ROUNDS=${2:?}; shift 2 ;;
		--peers) PEERS=${2:?}; shift 2 ;;
		--idle-conns) IDLE_CONNS=${2:?}; shift 2 ;;
		--out) OUT=${2:?}; shift 2 ;;
		--no-install) INSTALL=0; shift ;;
		*) usage ;;
		esac
	done
	case "$DURATION" in '' | *[!0-9]*) usage ;; esac
	case "$IDLE_CONNS" in '' | *[!0-9]*) usage ;; esac
	case "$ROUNDS" in '' | *[!0-9]*) usage ;; esac
	if [ "$DURATION" -lt 1 ] || [ "$DURATION" -gt 120 ]; then
		echo "--duration: 1..120" >&2
		exit 2
	fi
	if [ "$ROUNDS" -lt 1 ] || [ "$ROUNDS" -gt 10 ]; then
		echo "--rounds: 1..10" >&2
		exit 2
	fi
	if [ "$IDLE_CONNS" -lt 1 ] || [ "$IDLE_CONNS" -gt "$idle_max" ]; then
		echo "--idle-conns: 1..$idle_max" >&2
		exit 2
	fi
}
