#!/usr/bin/env bash
# Memory: egressd in a cgroup of its own with a 64 MiB memory limit (made
# here: cgroup v2 memory.max where the memory controller can be delegated,
# else the v1 memory controller's memory.limit_in_bytes; skipped, with the
# reason, where neither can be made), and client load meant to push its
# memory: more connections than it may take, slow readers of 64 MiB
# bodies (nginx, sendfile) holding its buffers full, on top of a client
# that keeps making requests on the connections it already has. Checks:
# the limits fitted to the cgroup (--max-conns, --max-buffered) appear in
# status and metrics; egressd is never OOM-killed (the cgroup's oom_kill
# count stays 0 and the process lives); the existing connections are
# served throughout with no error; both limits shed, with their overload
# daemon lines, each episode ended by an "overload over" line once the
# load is gone; afterwards new requests are served and the buffers are
# empty. Loopback only; every wait is bounded.
# shellcheck source=lib.sh
. "$SRC_DIR/tests/soak/lib.sh"

soak_need jq curl nginx "$LOADGEN"
LIMIT_MB=64
PUSH_SECS=${MEMORY_PUSH_SECS:-20}

# --- the cgroup --------------------------------------------------------------------
# cg_mount FSTYPE [OPTION]: the mount point of a cgroup file system.
cg_mount() {
	awk -v t="$1" -v o="${2:-}" '{
		for (i = 7; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) == t && (o == "" || index("," $(i + 3) ",", "," o ",")))
			{ print $5; exit }
	}' /proc/self/mountinfo
}
if asan_build; then
	# Its shadow memory and quarantine are no measure of egressd's own.
	echo "SKIP: an AddressSanitizer build does not fit a 64 MiB memory limit"
	exit 0
fi
CG="" CG_KIND="" why=""
if [ "$(id -u)" -ne 0 ]; then
	why="not root"
else
	m2=$(cg_mount cgroup2)
	rel2=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if [ -n "$m2" ] && grep -qw memory "$m2$rel2/cgroup.controllers" 2>/dev/null; then
		# A new cgroup beside this one (a cgroup with processes cannot pass
		# controllers on), the memory controller enabled in the parent.
		parent=$(dirname "$m2$rel2")
		[ "$rel2" = / ] && parent=$m2
		if grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null ||
		    echo +memory >"$parent/cgroup.subtree_control" 2>/dev/null; then
			CG="$parent/egress-memory-$$"
			if mkdir "$CG" 2>/dev/null && echo $((LIMIT_MB << 20)) >"$CG/memory.max" &&
			    echo 0 >"$CG/memory.swap.max" 2>/dev/null; then
				CG_KIND=v2
			else
				rmdir "$CG" 2>/dev/null
				CG=""
			fi
		fi
		[ -z "$CG" ] && why="cgroup v2 memory controller cannot be delegated under $parent"
	else
		why="no cgroup v2 with the memory controller (cgroup2 at '${m2:-none}')"
	fi
	if [ -z "$CG" ]; then
		m1=$(cg_mount cgroup memory)
		rel1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
		if [ -n "$m1" ] && [ -n "$rel1" ]; then
			CG="$m1${rel1%/}/egress-memory-$$"
			if mkdir "$CG" 2>/dev/null &&
			    echo $((LIMIT_MB << 20)) >"$CG/memory.limit_in_bytes"; then
				CG_KIND=v1
				echo $((LIMIT_MB << 20)) >"$CG/memory.memsw.limit_in_bytes" 2>/dev/null
			else
				rmdir "$CG" 2>/dev/null
				CG=""
				why="$why; the v1 memory controller at $m1 cannot make a cgroup either"
			fi
		else
			why="$why; no v1 memory controller either"
		fi
	fi
fi
if [ -z "$CG" ]; then
	echo "SKIP: no memory cgroup can be made here: $why"
	exit 0
fi
echo "# cgroup $CG_KIND: $CG, memory limit $LIMIT_MB MiB ($why)"

# shellcheck disable=SC2317 # the EXIT trap runs it
cg_cleanup() {
	if [ -n "$CG" ] && [ -d "$CG" ]; then
		local p
		while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$CG/cgroup.procs"
		for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$CG" 2>/dev/null && break; sleep 0.2; done
	fi
	lib_cleanup
}
trap cg_cleanup EXIT

# oom_kills: processes the kernel killed for memory in the cgroup.
oom_kills() {
	if [ "$CG_KIND" = v2 ]; then
		awk '$1 == "oom_kill" {print $2}' "$CG/memory.events"
	else
		awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control"
	fi
}
# cg_peak_mb: the most the cgroup was charged, MiB.
cg_peak_mb() {
	local f="$CG/memory.peak"
	[ "$CG_KIND" = v1 ] && f="$CG/memory.max_usage_in_bytes"
	[ -r "$f" ] && echo $(($(cat "$f") >> 20)) || echo "?"
}

# --- egressd in the cgroup ------------------------------------------------------------
soak_pki
start_nginx
# 64 MiB bodies, from a file nginx sends with sendfile.
mkdir -p "$T/www/f"
truncate -s 64M "$T/www/f/64m"
chmod -R a+rX "$T/www"
sed -i 's|location = /1m { }|location = /1m { }\n\t\tlocation ^~ /f/ { }|' "$T/nginx/nginx.conf"
kill -HUP "$NGINX_PID"
sleep 0.5
cat >"$T/policy.yaml" <<'EOF'
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.0/8"]
EOF
cat >"$T/in-cgroup" <<EOF
#!/bin/sh
echo \$\$ >"$CG/cgroup.procs" || exit 111
exec "$BUILD_DIR/egressd" "\$@"
EOF
chmod +x "$T/in-cgroup"
EGRESSD="$T/in-cgroup"
METRICS_PORT=$(free_port)
SOCK="$T/control.sock"
start_egressd --config "$T/policy.yaml" --upstream-dns 127.0.0.1:1 \
    --metrics "127.0.0.1:$METRICS_PORT" --control "$SOCK" || exit 1
P=$EG_PORT
expect_eq "$(grep -c . "$CG/cgroup.procs")" 1 "egressd runs in the cgroup"

# The limits fitted to 64 MiB: a quarter for buffers, half for connections at 48 KiB.
want_conns=$(((LIMIT_MB << 20) / 2 / (48 * 1024)))
want_buf=$(((LIMIT_MB << 20) / 4))
expect_contains "$(cat "$EG_ERR")" \
    "memory limit $LIMIT_MB MiB (cgroup): at most $want_conns connections, $((want_buf >> 20)) MiB" \
    "egressd says what it fitted to the limit"
run "$POLICYCTL" status --control "$SOCK" --json
expect_eq "$(jq -r '[.connections.max, .connections.max_buffered_bytes] | @tsv' <<<"$OUT")" \
    "$want_conns	$want_buf" "status shows the fitted limits"
expect_eq "$(metric egressd_connections_max) $(metric egressd_buffered_max_bytes)" \
    "$want_conns $want_buf" "and so do the metrics"
RSS0=$(eg_kb VmRSS)

# --- the push -------------------------------------------------------------------
# A client with its connections open before the push, requesting throughout.
"$LOADGEN" --proxy "127.0.0.1:$P" --url "http://127.0.0.1:$NGINX_PORT/steady" --connections 4 \
    --pace 0.05 --timeout 20 --duration $((PUSH_SECS + 10)) --name steady >"$T/steady.out" 2>&1 &
STEADY=$!
track_pid $STEADY
sleep 2
# Slow readers of 64 MiB bodies: their buffers fill past the budget.
python3 "$SRC_DIR/tests/soak/pressure.py" --proxy "$P" --conns 400 --ramp 4 --rate 8192 \
    --seconds "$PUSH_SECS" --url "http://127.0.0.1:$NGINX_PORT/f/64m" >"$T/slow.out" 2>&1 &
SLOWP=$!
track_pid $SLOWP
# More connections than the limit: those past it wait in the listen queue.
"$LOADGEN" --proxy "127.0.0.1:$P" --url "http://127.0.0.1:$NGINX_PORT/crowd" --mode idle \
    --connections 800 --timeout $((PUSH_SECS - 8)) --duration $((PUSH_SECS - 6)) \
    --name crowd >"$T/crowd.out" 2>&1 &
CROWD=$!
track_pid $CROWD
peak_rss=0 peak_buf=0 peak_open=0
for ((i = 0; i < PUSH_SECS * 2; i++)); do
	sleep 0.5
	kill -0 "$EG_PID" 2>/dev/null || break
	r=$(eg_kb VmRSS)
	[ "${r:-0}" -gt "$peak_rss" ] && peak_rss=$r
	b=$(metric egressd_buffered_bytes)
	[ "$b" -gt "$peak_buf" ] && peak_buf=$b
	o=$(metric egressd_connections_open)
	[ "$o" -gt "$peak_open" ] && peak_open=$o
done
during_ov=$(curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^egressd_overload_episodes_total')
for p in $SLOWP $CROWD $STEADY; do
	wait_exit "$p" 60 || {
		bad "a client did not stop (pid $p)"
		kill -KILL "$p"
	}
done
expect_eq "$(kill -0 "$EG_PID" 2>/dev/null && echo alive)" alive "egressd lives through the push"
expect_eq "$(oom_kills)" 0 "the cgroup's oom_kill count stays 0"
S=$(cat "$T/slow.out")
echo "# slow readers: $S"
echo "# crowd: $(grep '^RESULT' "$T/crowd.out")"
echo "# steady: $(grep '^RESULT' "$T/steady.out")"
echo "# peak: VmRSS $peak_rss kB (from $RSS0), cgroup $(cg_peak_mb) MiB of $LIMIT_MB," \
    "buffered $((peak_buf >> 10)) KiB (budget $((want_buf >> 10)) KiB), $peak_open connections open"
echo "# $during_ov" | tr '\n' ' '
echo
R=$(grep '^RESULT' "$T/steady.out")
expect_eq "$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$R")" 0 \
    "the connections open before the push served throughout, no error"
expect_eq "$(sed -n 's/.* connects=\([0-9]*\).*/\1/p' <<<"$R")" 4 "on the same 4 connections"
expect_eq "$([ "$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$R")" -gt $((PUSH_SECS * 4)) ] && echo yes)" \
    yes "and kept going"
expect_eq "$([ "$(jq -r .ok <<<"$S")" -gt 0 ] && echo yes)" yes "slow readers were served"
expect_eq "$([ "$peak_open" -le "$want_conns" ] && echo yes)" yes \
    "never more connections than the limit ($peak_open)"
# Past the budget a connection may still queue 16 KiB for its peer and
# take one more read (16 KiB): the budget holds to within that, each.
bound=$((want_buf + want_conns * 32768))
expect_eq "$([ "$peak_buf" -le "$bound" ] && echo yes)" yes \
    "the buffers stay within the budget and 32 KiB a connection ($((peak_buf >> 10)) KiB, bound $((bound >> 10)) KiB)"

# --- shedding, said in the audit, and over once the load is gone -------------------
for ((i = 0; i < 100; i++)); do
	[ "$(metric egressd_overload)" -eq 0 ] && break
	sleep 0.1
done
sleep 1.2 # the once-a-second tick writes the "overload over" lines
for rule in max-conns max-buffered; do
	on=$(jq -c "select(.event == \"daemon\" and .reason == \"overload\" and .rule == \"$rule\")" "$EG_AUDIT" | wc -l)
	off=$(jq -c "select(.event == \"daemon\" and .reason == \"overload over\" and .rule == \"$rule\")" "$EG_AUDIT" | wc -l)
	echo "# $rule: $on episodes begun, $off ended"
	expect_eq "$([ "$on" -ge 1 ] && echo yes)" yes "the $rule limit was hit and said so in the audit"
	expect_eq "$off" "$on" "each $rule episode ended with an 'overload over' line"
done
expect_eq "$(metric egressd_overload)" 0 "no limit holds once the load is gone"
expect_eq "$(metric egressd_buffered_bytes)" 0 "the buffers are empty"
run pcurl -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/after"
expect_eq "$OUT" 200 "a new request is served after the push"
R=$("$LOADGEN" --proxy "127.0.0.1:$P" --url "http://127.0.0.1:$NGINX_PORT/after" --connections 8 \
    --duration 2 --name after | grep '^RESULT')
expect_eq "$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$R")" 0 "and load again, no error"
echo "# after: $R; VmRSS $(eg_kb VmRSS) kB"
expect_eq "$(oom_kills)" 0 "no OOM kill at the end either"
stop_egressd 30
expect_eq "$EXIT_RC" 0 "egressd stops cleanly"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "policyctl audit --verify ($OUT)"
finish
