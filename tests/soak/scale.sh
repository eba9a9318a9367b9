#!/usr/bin/env bash
# Scale: 10,000 concurrent client connections through one egressd, half
# idle keep-alive HTTP and half intercepted TLS held open (each after one
# request), with active load on top. The held connections open all at
# once, a kind at a time (loadgen --mode idle; SCALE_BATCH splits them
# into batches, each parked before the next starts), in bounded time,
# reported. Checks: every held connection served and none closed or
# refused; the active load's p99 with the 10,000 held within 2x of the
# same load alone, with no error and at its rate; RSS per held connection
# within the targets of the benchmarks (docs/dev/performance.md: 4 KiB
# per idle keep-alive connection, 64 KiB per idle intercepted one); held
# and quiet, egressd makes few system calls (strace, when there is one).
# The descriptor limit is raised to the hard limit. Loopback only; every wait
# is bounded.
# shellcheck source=lib.sh
. "$SRC_DIR/tests/soak/lib.sh"

soak_need jq curl openssl nginx "$LOADGEN"
HALF=${SCALE_HALF:-5000}
BATCH=${SCALE_BATCH:-5000}
ACTIVE_SECS=${SCALE_ACTIVE_SECS:-12}

# egressd holds a descriptor per client connection and per upstream one
# (idle clients' upstreams go back to the pool, at most 1024 in all), each
# loadgen one per client: the soft limit goes up to the hard one, and the
# hard one up too where that is allowed (CAP_SYS_RESOURCE).
NEED=$((2 * HALF + 4096))
ulimit -Hn $((NEED + 16384)) 2>/dev/null
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$NEED" ]; then
	echo "the descriptor limit is $(ulimit -n), below the $NEED egressd needs for $((2 * HALF)) connections" >&2
	exit 1
fi
echo "# descriptor limit $(ulimit -n)"

soak_pki
start_nginx
start_origin # its DNS responder: origin.test is 127.0.0.1
cat >"$T/policy.yaml" <<'EOF'
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.0/8"]
EOF
METRICS_PORT=$(free_port)
EGCA="$T/eg-ca.pem"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$T/pki/ca.pem" --ca-out "$EGCA" --metrics "127.0.0.1:$METRICS_PORT" \
    --max-conns $((2 * HALF + 1000)) --idle-timeout 600 || exit 1
P=$EG_PORT

# active NAME: the active load, paced keep-alive requests on 16 connections
# (about 1,600 a second at most) in three rounds of ACTIVE_SECS / 3; prints
# the RESULT line of the round with the median p99 (one noisy moment on a
# shared machine does not decide).
active() {
	local r
	for r in 1 2 3; do
		"$LOADGEN" --proxy "127.0.0.1:$P" --url "http://127.0.0.1:$NGINX_PORT/active" \
		    --connections 16 --pace 0.01 --duration "$(awk -v s="$ACTIVE_SECS" 'BEGIN {print s / 3}')" \
		    --name "$1" | grep '^RESULT'
	done | tee "$T/active.$1" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^p99_ms=/) print substr($i, 8), $0}' |
	    sort -n | sed -n '2s/^[^ ]* //p'
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# Warm up (the leaf for origin.test minted, the pools filled), then the load alone.
"$LOADGEN" --proxy "127.0.0.1:$P" --url "https://origin.test:$NGINX_TLS_PORT/" --cacert "$EGCA" \
    --connections 4 --duration 2 >/dev/null
active warm >/dev/null
ALONE=$(active alone)
echo "# $ALONE"

# hold KIND N ARGS...: N more idle connections of a kind (a loadgen held
# until the end), waiting for all of them to be parked (at most 120 s).
HOLD_N=0
hold() {
	local kind=$1 n=$2 out
	shift 2
	HOLD_N=$((HOLD_N + 1))
	out="$T/hold.$HOLD_N.out"
	"$LOADGEN" --proxy "127.0.0.1:$P" --mode idle --connections "$n" --duration 900 \
	    --timeout 60 --name "$kind$HOLD_N" "$@" >"$out" 2>&1 &
	track_pid $!
	HOLD_PIDS="${HOLD_PIDS:-} $!"
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q '^READY' "$out" 2>/dev/null && break
		sleep 0.1
	done
	if ! grep -q "^READY held=$n held_closed=0 not_kept=0 errors=0" "$out"; then
		bad "$kind batch $HOLD_N: $(head -n 3 "$out")"
	fi
}

RSS0=$(eg_kb VmRSS)
t0=$(now_ms)
for ((k = 0; k < HALF; k += BATCH)); do
	hold http $((HALF - k < BATCH ? HALF - k : BATCH)) --url "http://127.0.0.1:$NGINX_PORT/idle"
done
t1=$(now_ms)
# The heap a burst freed is handed back at the first quiet second after it.
sleep 3
RSS1=$(eg_kb VmRSS)
for ((k = 0; k < HALF; k += BATCH)); do
	hold tls $((HALF - k < BATCH ? HALF - k : BATCH)) \
	    --url "https://origin.test:$NGINX_TLS_PORT/idle" --cacert "$EGCA"
done
t2=$(now_ms)
# Idle intercepted connections hand their TLS buffers back within a second or two,
# and the heap the handshakes freed goes at the first quiet second after them.
sleep 3
RSS2=$(eg_kb VmRSS)
OPEN=$(metric egressd_connections_open)
echo "# ramp: $HALF HTTP in $(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100)) s," \
    "$HALF intercepted TLS in $(((t2 - t1) / 1000)).$(((t2 - t1) % 1000 / 100)) s" \
    "(batches of $BATCH); $OPEN open; $(eg_fds) descriptors"
expect_eq "$([ "$OPEN" -ge $((2 * HALF)) ] && echo yes)" yes "$((2 * HALF)) connections open at once ($OPEN)"

# Held and quiet, egressd should ask almost nothing of the kernel: no
# heap trim every second (madvise on every free page, given back already
# or not) when nothing was given up.
if command -v strace >/dev/null && timeout 3 strace -c -o "$T/strace" -p "$EG_PID" 2>/dev/null ||
    [ -s "$T/strace" ]; then
	calls=$(awk '$NF == "total" {print $4}' "$T/strace")
	echo "# idle with $OPEN held: $calls system calls in 3 s ($(awk '$NF == "madvise" {print $4}' "$T/strace") madvise)"
	expect_eq "$([ "${calls:-0}" -lt 100 ] && echo yes)" yes \
	    "an idle egressd with $OPEN connections makes few system calls ($calls in 3 s)"
else
	echo "# (no strace, or it may not trace: the idle system calls are not counted)"
fi

LOADED=$(active loaded)
echo "# $LOADED"
a99=$(field p99_ms "$ALONE") l99=$(field p99_ms "$LOADED")
ratio=$(awk -v a="$a99" -v l="$l99" 'BEGIN {printf "%.2f", (a > 0 ? l / a : 99)}')
echo "# active load p99: alone $a99 ms, with $((2 * HALF)) held $l99 ms: ${ratio}x"
expect_eq "$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^errors=/) n += substr($i, 8)} END {print n + 0}' "$T/active.loaded")" \
    0 "the active load on top: no error"
expect_eq "$(awk -v r="$ratio" 'BEGIN {print (r != "" && r + 0 <= 2.0) ? "yes" : "no"}')" yes \
    "p99 of the active load within 2x of the same load alone (${ratio}x)"
expect_eq "$(awk -v a="$(field rps "$ALONE")" -v l="$(field rps "$LOADED")" \
    'BEGIN {print (l >= a * 0.9) ? "yes" : "no"}')" yes "and it kept its rate"

# The held connections: all still open, then each one's loadgen reports.
expect_eq "$(metric egressd_connections_open)" "$OPEN" "no held connection was closed"
for p in $HOLD_PIDS; do kill -TERM "$p" 2>/dev/null; done
for p in $HOLD_PIDS; do wait_exit "$p" 30 || bad "a holding loadgen did not stop"; done
held=0 closed=0 errs=0
for f in "$T"/hold.*.out; do
	r=$(grep '^RESULT' "$f")
	held=$((held + $(field held "$r")))
	closed=$((closed + $(field held_closed "$r")))
	errs=$((errs + $(field errors "$r")))
done
expect_eq "$held $closed $errs" "$((2 * HALF)) 0 0" \
    "every held connection served (held, closed by egressd, errors)"
expect_eq "$(jq -c 'select(.event == "http" and .status != 200)' "$EG_AUDIT" | wc -l)" 0 \
    "every request audited 200"

http_kib=$(awk -v a="$RSS0" -v b="$RSS1" -v n="$HALF" 'BEGIN {printf "%.1f", (b - a) / n}')
tls_kib=$(awk -v a="$RSS1" -v b="$RSS2" -v n="$HALF" 'BEGIN {printf "%.1f", (b - a) / n}')
echo "# RSS: $RSS0 kB, $RSS1 kB with $HALF HTTP held ($http_kib KiB each)," \
    "$RSS2 kB with $HALF TLS more ($tls_kib KiB each)"
if asan_build; then
	echo "# (AddressSanitizer build: memory per connection not checked)"
else
	expect_eq "$(awk -v k="$http_kib" 'BEGIN {print (k <= 4.0) ? "yes" : "no"}')" yes \
	    "<= 4 KiB per idle keep-alive connection ($http_kib)"
	expect_eq "$(awk -v k="$tls_kib" 'BEGIN {print (k <= 64.0) ? "yes" : "no"}')" yes \
	    "<= 64 KiB per idle intercepted connection ($tls_kib)"
fi
expect_eq "$(jq -c 'select(.event == "daemon" and .reason == "overload")' "$EG_AUDIT" | wc -l)" \
    0 "no overload below the limits"
stop_egressd 30
expect_eq "$EXIT_RC" 0 "egressd stops cleanly"
finish
