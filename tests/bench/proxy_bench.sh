#!/usr/bin/env bash
# Proxy benchmark: drives the same HTTP load through egressd and through
# haproxy, privoxy, squid and tinyproxy (and straight at the origin), all
# in one run, and prints one markdown table of req/s, latency percentiles,
# errors and same-run ratios, then the idle keep-alive memory per client
# connection of each proxy.
#
# The origin is nginx serving 100 bytes on loopback. Every peer runs from
# a config rendered from tests/bench/peers/ into a private temp dir, on its
# own free loopback port, with logging off, and is stopped by a trap. All
# traffic goes to 127.0.0.1; every loop is bounded in count and time.
# egressd takes part when $BUILD_DIR/egressd exists and is skipped
# otherwise. Missing peers are installed with apt-get (unless --no-install).
#
# usage: tests/bench/proxy_bench.sh [--duration S] [--rounds N] [--idle-conns N]
#            [--peers "direct egressd haproxy ..."] [--out FILE] [--no-install]

set -u

DURATION=8 # seconds of load per peer and scenario, split into ROUNDS runs
ROUNDS=3
IDLE_CONNS=1000
PEERS="direct egressd haproxy privoxy squid tinyproxy"
OUT=""
INSTALL=1
SCENARIOS="ka64 ka1 close16"

usage() {
	sed -n '15,16s/^# //p' "$0" >&2
	exit 2
}

SRC_DIR=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=lib.sh
. "$SRC_DIR/tests/bench/lib.sh"
bench_args 5000 "$@"

BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build}
PEER_DIR="$SRC_DIR/tests/bench/peers"

T=$(mktemp -d "${TMPDIR:-/tmp}/egress-bench.XXXXXX") || exit 1
# Peers that drop privileges (squid, tinyproxy, privoxy, nginx workers) must reach their files.
chmod 755 "$T"
declare -A RPS P50 P99 ERR KIB

trap cleanup EXIT
trap 'exit 130' INT TERM

# --- packages ---------------------------------------------------------------

install_peers() {
	local p missing=""
	for p in nginx haproxy privoxy squid tinyproxy; do
		# squid-openssl (the HTTPS benchmark's squid) is a squid too.
		[ "$p" = squid ] && dpkg-query -W -f='${Status}' squid-openssl 2>/dev/null |
			grep -q 'install ok installed' && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$INSTALL" -eq 0 ]; then
		log "not installing:$missing (--no-install): those peers are skipped"
		return 0
	fi
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo -n"
	log "installing:$missing"
	# shellcheck disable=SC2086
	if ! { DEBIAN_FRONTEND=noninteractive $sudo apt-get update -q >"$T/apt.log" 2>&1 &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
			$missing >>"$T/apt.log" 2>&1; }; then
		log "apt-get failed (see below): the missing peers are skipped"$'\n'"$(tail -5 "$T/apt.log")"
	fi
}

# --- helpers ----------------------------------------------------------------

# render TEMPLATE OUT PORT: fills the placeholders of a peer config.
render() {
	sed -e "s|@DIR@|$T|g" -e "s|@PORT@|$3|g" -e "s|@ORIGIN_PORT@|$ORIGIN_PORT|g" \
		-e "s|@NGINX_USER@|$NGINX_USER|" -e "s|@SQUID_USER@|$SQUID_USER|" \
		-e "s|@TINYPROXY_USER@|$TINYPROXY_USER|" "$PEER_DIR/$1" >"$2"
}

start_origin() {
	free_port || { log "no free port"; exit 1; }
	ORIGIN_PORT=$FREE
	mkdir -p "$T/nginx"
	render nginx-origin.conf "$T/nginx/nginx.conf" "$ORIGIN_PORT"
	if ! start origin 127.0.0.1 "$ORIGIN_PORT" nginx -e "$T/nginx/error.log" -p "$T/nginx" \
		-c "$T/nginx/nginx.conf" -g 'daemon off;'; then
		log "origin nginx failed: ${STATUS[origin]}"
		exit 1
	fi
}

# start_peer NAME: renders the peer's config and starts it; sets STATUS on failure.
start_peer() {
	local name=$1 port _
	free_port || { STATUS[$name]="no free port"; return 1; }
	port=$FREE
	mkdir -p "$T/$name"
	case "$name" in
	direct)
		PID[direct]=${PID[origin]}
		PORT[direct]=""
		return 0
		;;
	egressd)
		if [ ! -x "$BUILD_DIR/egressd" ]; then
			STATUS[egressd]="skipped: $BUILD_DIR/egressd is not built yet"
			return 1
		fi
		cp "$PEER_DIR/egressd.yaml" "$T/egressd/egressd.yaml"
		# --upstream-dns keeps even a stray lookup on loopback; 3> is the ready pipe.
		start egressd 127.0.0.1 "$port" "$BUILD_DIR/egressd" --config "$T/egressd/egressd.yaml" \
			--proxy "127.0.0.1:$port" --audit "$T/egressd/audit.jsonl" \
			--upstream-dns 127.0.0.1 --ready-fd 3 3>"$T/egressd/ready" || return 1
		for _ in $(seq 1 50); do
			grep -q READY "$T/egressd/ready" && return 0
			sleep 0.1
		done
		STATUS[egressd]="listening but never wrote READY on --ready-fd"
		return 1
		;;
	haproxy)
		have haproxy || { STATUS[$name]="skipped: not installed"; return 1; }
		render haproxy.cfg "$T/haproxy/haproxy.cfg" "$port"
		start haproxy 127.0.0.1 "$port" haproxy -db -f "$T/haproxy/haproxy.cfg"
		;;
	privoxy)
		have privoxy || { STATUS[$name]="skipped: not installed"; return 1; }
		render privoxy.conf "$T/privoxy/privoxy.conf" "$port"
		if [ "$(id -u)" -eq 0 ]; then
			start privoxy 127.0.0.1 "$port" privoxy --no-daemon --user nobody "$T/privoxy/privoxy.conf"
		else
			start privoxy 127.0.0.1 "$port" privoxy --no-daemon "$T/privoxy/privoxy.conf"
		fi
		;;
	squid)
		have squid || { STATUS[$name]="skipped: not installed"; return 1; }
		render squid.conf "$T/squid/squid.conf" "$port"
		[ "$(id -u)" -eq 0 ] && chown proxy "$T/squid"
		start squid 127.0.0.1 "$port" squid -N -f "$T/squid/squid.conf"
		;;
	tinyproxy)
		have tinyproxy || { STATUS[$name]="skipped: not installed"; return 1; }
		render tinyproxy.conf "$T/tinyproxy/tinyproxy.conf" "$port"
		[ "$(id -u)" -eq 0 ] && chown nobody "$T/tinyproxy"
		start tinyproxy 127.0.0.1 "$port" tinyproxy -d -c "$T/tinyproxy/tinyproxy.conf"
		;;
	*)
		STATUS[$name]="unknown peer"
		return 1
		;;
	esac
}

# loadgen_run NAME PEER ARGS...: one bounded load run; prints its RESULT line.
loadgen_run() {
	local name=$1 peer=$2
	shift 2
	local proxy=()
	[ -n "${PORT[$peer]}" ] && proxy=(--proxy "127.0.0.1:${PORT[$peer]}")
	timeout $((DURATION + 20)) "$LOADGEN" --url "http://127.0.0.1:$ORIGIN_PORT/bench" \
		"${proxy[@]}" --name "$name" --timeout 5 "$@" >"$T/$name.lg" 2>&1
	grep '^RESULT ' "$T/$name.lg" | tail -1
}

# field LINE KEY: the value of KEY=VALUE in a RESULT line.

# check PEER: a short warm-up that must succeed before the peer is measured.

# idle_mem PEER: KiB of the peer's RSS per idle keep-alive client connection.
idle_mem() {
	local peer=$1 before after lg _ ready held
	before=$(rss_kib "${PID[$peer]}")
	local proxy=()
	[ -n "${PORT[$peer]}" ] && proxy=(--proxy "127.0.0.1:${PORT[$peer]}")
	"$LOADGEN" --url "http://127.0.0.1:$ORIGIN_PORT/idle" "${proxy[@]}" --mode idle \
		--connections "$IDLE_CONNS" --duration 60 --timeout 10 --name "$peer-idle" \
		>"$T/$peer-idle.lg" 2>&1 &
	lg=$!
	BG_PIDS="$BG_PIDS $lg"
	ready=""
	for _ in $(seq 1 300); do
		ready=$(grep '^READY ' "$T/$peer-idle.lg")
		[ -n "$ready" ] && break
		kill -0 "$lg" 2>/dev/null || break
		sleep 0.1
	done
	sleep 1 # let the proxy finish its bookkeeping for the last connections
	after=$(rss_kib "${PID[$peer]}")
	# loadgen stops by itself after 60 s; the signal only ends the hold early.
	mine "$lg" && kill -TERM "$lg" 2>/dev/null
	wait "$lg" 2>/dev/null
	held=$(field "$(grep '^RESULT ' "$T/$peer-idle.lg")" held)
	if [ -z "$ready" ] || [ -z "$held" ]; then
		KIB[$peer]="n/a (no READY)"
	elif [ "$held" -lt $((IDLE_CONNS * 9 / 10)) ]; then
		KIB[$peer]="n/a: kept $held of $IDLE_CONNS open (the peer closes idle client connections)"
	else
		KIB[$peer]=$(awk -v a="$after" -v b="$before" -v n="$held" \
			'BEGIN { printf "%.1f", (a - b) / n }')
		KIB[$peer]="${KIB[$peer]} ($before → $after KiB, $held held)"
	fi
	log "  idle $peer: ${KIB[$peer]}"
	sleep 1 # the closed connections drain before the next peer
}

# median V...: the middle value (mean of the two middle ones for an even count).

version_of() {
	dpkg-query -W -f='${Version}' "$1" 2>/dev/null ||
		dpkg-query -W -f='${Version}' "$1-openssl" 2>/dev/null || echo "?"
}

# --- run --------------------------------------------------------------------

START_TIME=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
ulimit -n "$(ulimit -Hn)" 2>/dev/null
install_peers
have nginx || { log "nginx (the origin) is not installed: cannot run"; exit 1; }

loadgen_find || exit 1

NGINX_USER=""
SQUID_USER=""
TINYPROXY_USER=""
if [ "$(id -u)" -eq 0 ]; then
	NGINX_USER="user nobody nogroup;"
	SQUID_USER="cache_effective_user proxy"
	TINYPROXY_USER="User nobody\nGroup nogroup"
fi

start_origin
ACTIVE=""
for p in $PEERS; do
	if start_peer "$p" && check_peer "$p"; then
		ACTIVE="$ACTIVE $p"
		log "$p: ready${PORT[$p]:+ on 127.0.0.1:${PORT[$p]}}"
	else
		log "$p: ${STATUS[$p]}"
	fi
done
[ -n "$ACTIVE" ] || { log "no peer could run"; exit 1; }

# Idle memory first, on freshly started peers: an upper bound that includes
# first-time growth rather than a figure hidden by memory freed by the load.
log "idle keep-alive memory, $IDLE_CONNS connections each"
for p in $ACTIVE; do
	idle_mem "$p"
done

# Scenarios outside, then rounds, peers inside: a burst of other load on
# the machine hits every peer alike, and each figure is the median of its
# rounds.
ROUND_SECS=$(awk -v d="$DURATION" -v r="$ROUNDS" 'BEGIN { printf "%.2f", d / r }')
declare -A L_CPU CPU L_RPS L_P50 L_P99
for s in $SCENARIOS; do
	case "$s" in
	ka64) args=(--mode keepalive --connections 64) ;;
	ka1) args=(--mode keepalive --connections 1) ;;
	close16) args=(--mode close --connections 16) ;;
	esac
	for r in $(seq 1 "$ROUNDS"); do
		for p in $ACTIVE; do
			c0=$(cpu_ticks "${PID[$p]}")
			line=$(loadgen_run "$p-$s-$r" "$p" "${args[@]}" --duration "$ROUND_SECS")
			c1=$(cpu_ticks "${PID[$p]}")
			log "  $(head -1 "$T/$p-$s-$r.lg")"
			L_CPU[$p.$s]="${L_CPU[$p.$s]:-} $(cpu_ns_per "$c0" "$c1" "$(field "$line" requests)")"
			L_RPS[$p.$s]="${L_RPS[$p.$s]:-} $(field "$line" rps)"
			L_P50[$p.$s]="${L_P50[$p.$s]:-} $(field "$line" p50_ms)"
			L_P99[$p.$s]="${L_P99[$p.$s]:-} $(field "$line" p99_ms)"
			e=$(field "$line" errors)
			ERR[$p.$s]=$((${ERR[$p.$s]:-0} + ${e:-1}))
		done
	done
	for p in $ACTIVE; do
		# shellcheck disable=SC2086
		RPS[$p.$s]=$(median ${L_RPS[$p.$s]})
		# shellcheck disable=SC2086
		CPU[$p.$s]=$(median ${L_CPU[$p.$s]})
		# shellcheck disable=SC2086
		P50[$p.$s]=$(median ${L_P50[$p.$s]})
		# shellcheck disable=SC2086
		P99[$p.$s]=$(median ${L_P99[$p.$s]})
	done
done

# --- report -----------------------------------------------------------------

report() {
	local s p
	echo "## Proxy benchmark, $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r))"
	echo
	echo "Origin nginx $(version_of nginx), 100-byte response; per peer and scenario" \
		"$ROUNDS rounds of $ROUND_SECS s, interleaved across peers; each figure is the" \
		"median of the rounds (errors: the sum)." \
		"Peers: haproxy $(version_of haproxy), privoxy $(version_of privoxy)," \
		"squid $(version_of squid), tinyproxy $(version_of tinyproxy)."
	echo "Scenarios: ka64 = keep-alive, 64 connections; ka1 = keep-alive, one connection" \
		"(latency); close16 = a new connection per request, 16 at a time."
	echo
	echo "CPU µs/req: the peer's own CPU time (user and system, its processes and helpers)" \
		"per completed request, from /proc around each round; the direct row is the origin's."
	echo
	echo "| scenario | peer | req/s | CPU µs/req | p50 ms | p99 ms | errors | req/s ÷ haproxy | req/s ÷ direct | p99 ÷ haproxy | CPU ÷ haproxy |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for s in $SCENARIOS; do
		for p in $PEERS; do
			if [ "${STATUS[$p]:-}" != ok ]; then
				[ "$s" = ka64 ] && echo "| $s | $p | ${STATUS[$p]:-not run} | | | | | | | | |"
				continue
			fi
			echo "| $s | $p | ${RPS[$p.$s]:-?} | $(us "${CPU[$p.$s]:-}") | ${P50[$p.$s]:-?} |" \
				"${P99[$p.$s]:-?} | ${ERR[$p.$s]:-?} |" \
				"$(ratio "${RPS[$p.$s]}" "${RPS[haproxy.$s]:-}") |" \
				"$(ratio "${RPS[$p.$s]}" "${RPS[direct.$s]:-}") |" \
				"$(ratio "${P99[$p.$s]}" "${P99[haproxy.$s]:-}") |" \
				"$(ratio "${CPU[$p.$s]:-}" "${CPU[haproxy.$s]:-}") |"
		done
	done
	echo
	echo "Idle keep-alive memory: RSS of the peer's processes before and after $IDLE_CONNS" \
		"idle client connections (one request each), per connection."
	echo "The direct row is the origin nginx itself, for reference."
	echo
	echo "| peer | KiB per idle connection |"
	echo "| --- | --- |"
	for p in $ACTIVE; do
		echo "| $p | ${KIB[$p]:-?} |"
	done
	echo
	echo "Runs on this machine differ by ~35% from one run to the next: compare only" \
		"ratios taken within one run, never absolute numbers across runs."
	echo "Load average (1, 5, 15 min) at the start: $LOAD_START; at the end:" \
		"$(cut -d' ' -f1-3 /proc/loadavg) (the benchmark itself adds 2 to 3). Other work" \
		"on the cores skews the figures, single-threaded peers most."
	echo "Total time $(($(date +%s) - START_TIME)) s."
}

report >"$T/report.md"
cat "$T/report.md"
[ -n "$OUT" ] && cp "$T/report.md" "$OUT"
exit 0
