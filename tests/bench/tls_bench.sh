#!/usr/bin/env bash
# HTTPS interception benchmark: drives the same HTTPS load through egressd,
# squid with ssl_bump (squid-openssl, security_file_certgen) and mitmproxy
# (mitmdump, regular mode), and straight at the origin, all in one run, and
# prints one markdown table of req/s, MiB/s, latency percentiles, errors and
# same-run ratios, then the memory per idle intercepted connection of each
# proxy and the verdict on the targets of the interception issue.
#
# The origin is nginx on port 443 of its own loopback address, with an
# RSA-2048 certificate for origin.test from a test CA made here with openssl;
# it serves 100 bytes (/bench) and a 1 MiB file (/1m). Every proxy verifies
# the origin against that test CA and is trusted by the load client through
# its own CA (egressd's run CA from --ca-out; for squid and mitmproxy an
# RSA-2048 interception CA made here). origin.test resolves through a DNS stub
# on loopback (egressd), a hosts file (squid) or a private /etc/hosts in a
# mount namespace (mitmproxy). All traffic is on loopback; every wait and
# every load run is bounded; a trap stops everything. Needs root (port 443).
#
# usage: tests/bench/tls_bench.sh [--duration S] [--rounds N] [--idle-conns N]
#            [--peers "direct egressd squid-bump mitmproxy"] [--out FILE] [--no-install]

set -u

DURATION=8 # seconds of load per peer and scenario, split into ROUNDS runs
ROUNDS=3
IDLE_CONNS=500
PEERS="direct egressd squid-bump mitmproxy"
OUT=""
INSTALL=1
SCENARIOS=${SCENARIOS:-"ka64 close16 big4"}

usage() {
	sed -n '19,20s/^# //p' "$0" >&2
	exit 2
}

SRC_DIR=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=lib.sh
. "$SRC_DIR/tests/bench/lib.sh"
bench_args 2000 "$@"
if [ "$(id -u)" -ne 0 ]; then
	echo "tls_bench.sh needs root: the origin listens on port 443 of a loopback address" >&2
	exit 2
fi

BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build}
PEER_DIR="$SRC_DIR/tests/bench/peers"

T=$(mktemp -d "${TMPDIR:-/tmp}/egress-tlsbench.XXXXXX") || exit 1
# Peers that drop privileges (squid and its helpers, nginx workers) must reach their files.
chmod 755 "$T"
declare -A CA RPS MIBS P50 P99 ERR KIB

trap cleanup EXIT
trap 'exit 130' INT TERM

# --- packages ---------------------------------------------------------------

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# squid-openssl replaces the GnuTLS squid package (they conflict): both
# install /usr/sbin/squid, and only the OpenSSL build can bump.
install_peers() {
	local p missing=""
	for p in nginx squid-openssl mitmproxy; do
		installed "$p" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$INSTALL" -eq 0 ]; then
		log "not installing:$missing (--no-install): those peers are skipped"
		return 0
	fi
	log "installing:$missing"
	# shellcheck disable=SC2086
	if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q >"$T/apt.log" 2>&1 &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$missing >>"$T/apt.log" 2>&1; }; then
		log "apt-get failed (see below): the missing peers are skipped"$'\n'"$(tail -5 "$T/apt.log")"
	fi
}

# --- helpers ----------------------------------------------------------------

# render TEMPLATE OUT PORT: fills the placeholders of a peer config.
render() {
	sed -e "s|@DIR@|$T|g" -e "s|@PORT@|$3|g" -e "s|@ORIGIN_ADDR@|$ORIGIN_ADDR|g" \
		-e "s|@NGINX_USER@|$NGINX_USER|" -e "s|@SQUID_USER@|$SQUID_USER|" \
		"$PEER_DIR/$1" >"$2"
}

# mkca NAME: a self-signed RSA-2048 CA in $P/NAME.pem, $P/NAME.key.
mkca() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.pem" -days 2 \
		-subj "/CN=egress bench $1" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>>"$T/pki.log"
}

# make_pki: the origin's test CA and leaf, and the interception CA of squid and mitmproxy.
make_pki() {
	P="$T/pki"
	mkdir -p "$P"
	mkca testca
	mkca bumpca
	openssl req -newkey rsa:2048 -nodes -keyout "$P/origin.key" -out "$P/origin.csr" \
		-subj "/CN=origin.test" 2>>"$T/pki.log"
	printf 'subjectAltName=DNS:origin.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
		>"$P/origin.ext"
	openssl x509 -req -in "$P/origin.csr" -CA "$P/testca.pem" -CAkey "$P/testca.key" \
		-CAcreateserial -days 2 -extfile "$P/origin.ext" -out "$P/origin.pem" 2>>"$T/pki.log"
	if [ ! -s "$P/origin.pem" ] || [ ! -s "$P/bumpca.pem" ]; then
		log "cannot make the test PKI: $(cat "$T/pki.log")"
		exit 1
	fi
}

# pick_origin_addr: a random 127.X.Y.1 where nothing listens on 443.
pick_origin_addr() {
	local _
	for _ in $(seq 1 20); do
		ORIGIN_ADDR="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).1"
		port_open 443 "$ORIGIN_ADDR" || return 0
	done
	log "no free loopback address for the origin"
	exit 1
}

start_origin() {
	mkdir -p "$T/nginx" "$T/www"
	head -c 1048576 /dev/urandom >"$T/www/1m"
	chmod 644 "$T/www/1m" "$P/origin.key"
	render tls_nginx-origin.conf "$T/nginx/nginx.conf" 443
	if ! start origin "$ORIGIN_ADDR" 443 nginx -e "$T/nginx/error.log" -p "$T/nginx" \
		-c "$T/nginx/nginx.conf" -g 'daemon off;'; then
		log "origin nginx failed: ${STATUS[origin]}"
		exit 1
	fi
	printf '%s origin.test\n' "$ORIGIN_ADDR" >"$T/hosts"
	chmod 644 "$T/hosts"
}

# start_dns: the test origin's DNS responder answers origin.test on a loopback UDP port.
start_dns() {
	local _
	python3 "$SRC_DIR/tests/lib/py/origin.py" --log "$T/dns.jsonl" --port-file "$T/dns.http" \
		--dns-port-file "$T/dns.port" --dns-map "origin.test=$ORIGIN_ADDR" --parent $$ \
		--max-seconds 7200 >"$T/dns.out" 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	for _ in $(seq 1 100); do
		[ -s "$T/dns.port" ] && break
		sleep 0.1
	done
	DNS_PORT=$(cat "$T/dns.port" 2>/dev/null)
}

# wait_ready FILE: egressd writes READY on its --ready-fd once it serves.
wait_ready() {
	local _
	for _ in $(seq 1 50); do
		grep -q READY "$1" && return 0
		sleep 0.1
	done
	return 1
}

# start_peer NAME: renders the peer's config and starts it; sets STATUS on failure.
start_peer() {
	local name=$1 port
	free_port || { STATUS[$name]="no free port"; return 1; }
	port=$FREE
	mkdir -p "$T/$name"
	case "$name" in
	direct)
		PID[direct]=${PID[origin]}
		PORT[direct]=""
		CA[direct]="$P/testca.pem"
		;;
	egressd)
		if [ ! -x "$BUILD_DIR/egressd" ]; then
			STATUS[egressd]="skipped: $BUILD_DIR/egressd is not built yet"
			return 1
		fi
		[ -n "$DNS_PORT" ] || { STATUS[egressd]="skipped: the DNS stub did not start"; return 1; }
		cp "$PEER_DIR/tls_egressd.yaml" "$T/egressd/egressd.yaml"
		CA[egressd]="$T/egressd/ca.pem"
		free_port || { STATUS[egressd]="no free port"; return 1; }
		# Its own DNS listener on a free port too; 3> is the ready pipe.
		start egressd 127.0.0.1 "$port" "$BUILD_DIR/egressd" --config "$T/egressd/egressd.yaml" \
			--proxy "127.0.0.1:$port" --dns "127.0.0.1:$FREE" --audit "$T/egressd/audit.jsonl" \
			--upstream-dns "127.0.0.1:$DNS_PORT" --upstream-ca "$P/testca.pem" \
			--ca-out "${CA[egressd]}" --ready-fd 3 3>"$T/egressd/ready" || return 1
		wait_ready "$T/egressd/ready" ||
			{ STATUS[egressd]="listening but never wrote READY on --ready-fd"; return 1; }
		EG_START_LINES=$(wc -l <"$T/egressd.out")
		;;
	squid-bump)
		installed squid-openssl || { STATUS[$name]="skipped: squid-openssl not installed"; return 1; }
		CA[$name]="$P/bumpca.pem"
		render squid_bump.conf "$T/$name/squid.conf" "$port"
		/usr/lib/squid/security_file_certgen -c -s "$T/$name/ssl_db" -M 16MB \
			>"$T/$name/certgen.out" 2>&1 ||
			{ STATUS[$name]="security_file_certgen -c failed: $(cat "$T/$name/certgen.out")"; return 1; }
		chown -R proxy "$T/$name" "$P/bumpca.key"
		start "$name" 127.0.0.1 "$port" squid -N -f "$T/$name/squid.conf"
		;;
	mitmproxy)
		have mitmdump || { STATUS[$name]="skipped: mitmproxy not installed"; return 1; }
		CA[$name]="$P/bumpca.pem"
		cat "$P/bumpca.key" "$P/bumpca.pem" >"$T/$name/mitmproxy-ca.pem"
		render tls_mitmproxy.yaml "$T/$name/config.yaml" "$port"
		# A private /etc/hosts, seen by mitmdump alone (its own mount namespace).
		# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
		start "$name" 127.0.0.1 "$port" unshare --mount --propagation private sh -c \
			'mount --bind "$1" /etc/hosts && exec mitmdump --set confdir="$2" -q' \
			sh "$T/hosts" "$T/$name"
		;;
	*)
		STATUS[$name]="unknown peer"
		return 1
		;;
	esac
}

# loadgen_run NAME PEER ARGS...: one bounded load run; prints its RESULT line.
loadgen_run() {
	local name=$1 peer=$2 path=/bench
	shift 2
	local via=(--resolve "$ORIGIN_ADDR")
	[ -n "${PORT[$peer]}" ] && via=(--proxy "127.0.0.1:${PORT[$peer]}")
	case "$name" in *big4*) path=/1m ;; esac
	timeout $((DURATION + 30)) "$LOADGEN" --url "https://origin.test$path" --cacert "${CA[$peer]}" \
		"${via[@]}" --name "$name" --timeout 10 "$@" >"$T/$name.lg" 2>&1
	grep '^RESULT ' "$T/$name.lg" | tail -1
}

# field LINE KEY: the value of KEY=VALUE in a RESULT line.

# check PEER: a short warm-up that must succeed before the peer is measured.

# idle_mem PEER: KiB of the peer's RSS per idle intercepted keep-alive connection.
idle_mem() {
	local peer=$1 before after lg _ ready held
	before=$(rss_kib "${PID[$peer]}")
	local via=(--resolve "$ORIGIN_ADDR")
	[ -n "${PORT[$peer]}" ] && via=(--proxy "127.0.0.1:${PORT[$peer]}")
	"$LOADGEN" --url "https://origin.test/bench" --cacert "${CA[$peer]}" "${via[@]}" --mode idle \
		--connections "$IDLE_CONNS" --duration 180 --timeout 30 --name "$peer-idle" \
		>"$T/$peer-idle.lg" 2>&1 &
	lg=$!
	BG_PIDS="$BG_PIDS $lg"
	ready=""
	for _ in $(seq 1 900); do
		ready=$(grep '^READY ' "$T/$peer-idle.lg")
		[ -n "$ready" ] && break
		kill -0 "$lg" 2>/dev/null || break
		sleep 0.1
	done
	sleep 1 # let the proxy finish its bookkeeping for the last connections
	after=$(rss_kib "${PID[$peer]}")
	# loadgen stops by itself after 180 s; the signal only ends the hold early.
	mine "$lg" && kill -TERM "$lg" 2>/dev/null
	wait "$lg" 2>/dev/null
	held=$(field "$(grep '^RESULT ' "$T/$peer-idle.lg")" held)
	if [ -z "$ready" ] || [ -z "$held" ]; then
		KIB[$peer]="n/a (no READY: $(tail -c 200 "$T/$peer-idle.lg" | tr '\n' ' '))"
	elif [ "$held" -lt $((IDLE_CONNS * 9 / 10)) ]; then
		KIB[$peer]="n/a: kept $held of $IDLE_CONNS open ($ready)"
	else
		KIB[$peer]=$(awk -v a="$after" -v b="$before" -v n="$held" \
			'BEGIN { printf "%.1f", (a - b) / n }')
		KIB[$peer]="${KIB[$peer]} ($before → $after KiB, $held held)"
	fi
	log "  idle $peer: ${KIB[$peer]}"
	sleep 2 # the closed connections drain before the next peer
}

# median V...: the middle value (mean of the two middle ones for an even count).

# verdict VALUE OP LIMIT: yes or no (n/a when the value is missing).
verdict() {
	awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { if (v == "" || v == "n/a") { print "n/a"; exit }
		ok = op == ">=" ? v + 0 >= l + 0 : v + 0 <= l + 0; print ok ? "yes" : "no" }'
}

version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }

# --- run --------------------------------------------------------------------

START_TIME=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
ulimit -n "$(ulimit -Hn)" 2>/dev/null
install_peers
have nginx || { log "nginx (the origin) is not installed: cannot run"; exit 1; }

loadgen_find || exit 1

NGINX_USER=""
SQUID_USER=""
if [ "$(id -u)" -eq 0 ]; then
	NGINX_USER="user nobody nogroup;"
	SQUID_USER="cache_effective_user proxy"
fi

make_pki
pick_origin_addr
start_origin
start_dns
log "origin: nginx on $ORIGIN_ADDR:443 (origin.test); DNS stub on 127.0.0.1:${DNS_PORT:-none}"
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

# Idle memory first, on freshly started (and warmed-up) peers: an upper
# bound that includes first-time growth.
log "idle intercepted connections: $IDLE_CONNS each"
for p in $ACTIVE; do
	idle_mem "$p"
done

# Scenarios outside, then rounds, peers inside: a burst of other load on
# the machine hits every peer alike; each figure is the median of its rounds.
ROUND_SECS=$(awk -v d="$DURATION" -v r="$ROUNDS" 'BEGIN { printf "%.2f", d / r }')
declare -A L_CPU CPU L_RPS L_MIBS L_P50 L_P99
for s in $SCENARIOS; do
	case "$s" in
	ka64) args=(--mode keepalive --connections 64) ;;
	close16) args=(--mode close --connections 16) ;;
	big4) args=(--mode keepalive --connections 4) ;;
	esac
	for r in $(seq 1 "$ROUNDS"); do
		for p in $ACTIVE; do
			c0=$(cpu_ticks "${PID[$p]}")
			line=$(loadgen_run "$p-$s-$r" "$p" "${args[@]}" --duration "$ROUND_SECS")
			c1=$(cpu_ticks "${PID[$p]}")
			log "  $(head -1 "$T/$p-$s-$r.lg")"
			L_CPU[$p.$s]="${L_CPU[$p.$s]:-} $(cpu_ns_per "$c0" "$c1" "$(field "$line" requests)")"
			L_RPS[$p.$s]="${L_RPS[$p.$s]:-} $(field "$line" rps)"
			L_MIBS[$p.$s]="${L_MIBS[$p.$s]:-} $(field "$line" mib_s)"
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
		MIBS[$p.$s]=$(median ${L_MIBS[$p.$s]})
		# shellcheck disable=SC2086
		P50[$p.$s]=$(median ${L_P50[$p.$s]})
		# shellcheck disable=SC2086
		P99[$p.$s]=$(median ${L_P99[$p.$s]})
	done
done

# Whatever egressd said on stderr after its start-up lines (warnings, errors).
EG_STDERR=""
[ -s "$T/egressd.out" ] && EG_STDERR=$(tail -n +"$((${EG_START_LINES:-0} + 1))" "$T/egressd.out" |
	sort | uniq -c | sort -rn | head -5)

# --- report -----------------------------------------------------------------

report() {
	local s p a b d sq=squid-bump
	echo "## HTTPS interception benchmark, $(date -u +%Y-%m-%d) ($(nproc) cores, $(uname -r))"
	echo
	echo "Origin nginx $(version_of nginx) on port 443, RSA-2048 certificate from a test CA," \
		"TLS 1.2-1.3, no session resumption; 100-byte response (1 MiB in big4)." \
		"Per peer and scenario $ROUNDS rounds of $ROUND_SECS s, interleaved across peers; each" \
		"figure is the median of the rounds (errors: the sum). Peers: squid-openssl" \
		"$(version_of squid-openssl) (ssl_bump, security_file_certgen), mitmproxy" \
		"$(version_of mitmproxy) (mitmdump, regular mode); squid and mitmproxy sign with an" \
		"RSA-2048 test CA, egressd with its ECDSA P-256 run CA."
	echo "Scenarios: ka64 = keep-alive, 64 connections; close16 = a new TCP connection," \
		"CONNECT and TLS handshake per request, 16 at a time; big4 = 1 MiB bodies," \
		"keep-alive, 4 connections."
	echo
	echo "CPU µs/req: the peer's own CPU time (user and system, its processes and helpers)" \
		"per completed request, from /proc around each round; the direct row is the origin's."
	echo
	echo "| scenario | peer | req/s | MiB/s | CPU µs/req | p50 ms | p99 ms | errors | ÷ squid-bump | ÷ direct | p99 ÷ squid-bump | CPU ÷ squid-bump |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	for s in $SCENARIOS; do
		for p in $PEERS; do
			if [ "${STATUS[$p]:-}" != ok ]; then
				[ "$s" = ka64 ] && echo "| $s | $p | ${STATUS[$p]:-not run} | | | | | | | | | |"
				continue
			fi
			# big4 is compared on MiB/s, the others on req/s.
			a=${RPS[$p.$s]:-} b=${RPS[$sq.$s]:-} d=${RPS[direct.$s]:-}
			[ "$s" = big4 ] && a=${MIBS[$p.$s]:-} b=${MIBS[$sq.$s]:-} d=${MIBS[direct.$s]:-}
			echo "| $s | $p | ${RPS[$p.$s]:-?} | ${MIBS[$p.$s]:-?} | $(us "${CPU[$p.$s]:-}") |" \
				"${P50[$p.$s]:-?} | ${P99[$p.$s]:-?} | ${ERR[$p.$s]:-?} | $(ratio "$a" "$b") |" \
				"$(ratio "$a" "$d") | $(ratio "${P99[$p.$s]}" "${P99[$sq.$s]:-}") |" \
				"$(ratio "${CPU[$p.$s]:-}" "${CPU[$sq.$s]:-}") |"
		done
	done
	echo
	echo "Idle intercepted connections: RSS of the peer's processes (helpers included) before" \
		"and after $IDLE_CONNS idle keep-alive connections, each after one request through" \
		"CONNECT and TLS, per connection. The direct row is the origin nginx itself, for reference."
	echo
	echo "| peer | KiB per idle connection |"
	echo "| --- | --- |"
	for p in $ACTIVE; do
		echo "| $p | ${KIB[$p]:-?} |"
	done
	echo
	local ka cl cd bg kib
	ka=$(ratio "${RPS[egressd.ka64]:-}" "${RPS[$sq.ka64]:-}")
	cl=$(ratio "${RPS[egressd.close16]:-}" "${RPS[$sq.close16]:-}")
	cd=$(ratio "${RPS[egressd.close16]:-}" "${RPS[direct.close16]:-}")
	bg=$(ratio "${MIBS[egressd.big4]:-}" "${MIBS[$sq.big4]:-}")
	kib=${KIB[egressd]:-n/a}
	kib=${kib%% *}
	echo "Targets (egressd, this run):"
	echo
	echo "| target | this run | met |"
	echo "| --- | --- | --- |"
	echo "| keep-alive (ka64) >= 3x squid-bump | ${ka}x | $(verdict "$ka" ">=" 3) |"
	echo "| new connection per request (close16) >= 3x squid-bump | ${cl}x | $(verdict "$cl" ">=" 3) |"
	echo "| new connection per request (close16) >= 0.5x direct | ${cd}x | $(verdict "$cd" ">=" 0.5) |"
	echo "| 1 MiB bodies (big4) >= 3x squid-bump | ${bg}x | $(verdict "$bg" ">=" 3) |"
	echo "| <= 64 KiB per idle intercepted connection | $kib KiB | $(verdict "$kib" "<=" 64) |"
	echo
	if [ -n "$EG_STDERR" ]; then
		echo "egressd's stderr during the run (count, line):"
		echo
		printf '%s\n' "$EG_STDERR" | sed 's/^/    /'
		echo
	fi
	echo "Runs on a shared machine differ from one run to the next: compare only ratios taken" \
		"within one run, never absolute numbers across runs."
	echo "Load average (1, 5, 15 min) at the start: $LOAD_START; at the end:" \
		"$(cut -d' ' -f1-3 /proc/loadavg) (the benchmark itself adds 2 to 3)."
	echo "Total time $(($(date +%s) - START_TIME)) s."
}

report >"$T/report.md"
cat "$T/report.md"
[ -n "$OUT" ] && cp "$T/report.md" "$OUT"
exit 0
