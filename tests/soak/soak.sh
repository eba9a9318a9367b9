#!/usr/bin/env bash
# The soak: SOAK_SECONDS (180 in CI, 1800 under make soak) of mixed load
# through one egressd: keep-alive and new-connection HTTP and intercepted
# HTTPS (loadgen against nginx), passthrough CONNECT tunnels, WebSocket,
# GraphQL POSTs and DNS queries to egressd's resolver (mixed.py against
# the test origin, whose DNS responder is the resolver's upstream), a slow
# reader of large bodies, and a SIGHUP reload every 20 s. Every request
# carries a numbered id in its path. Sampled every 10 s: RSS, descriptors,
# open connections (metrics) and audit lines. Checks: after the first 10 %
# of the run RSS grows less than 5 %; the descriptors return to their
# baseline once the load stops; every request a client saw answered is in
# the audit exactly once; every passthrough tunnel is audited; every reload
# is audited; `policyctl audit --verify` passes. Loopback only; every loop
# is bounded by the run's length.
# shellcheck source=lib.sh
. "$SRC_DIR/tests/soak/lib.sh"

soak_need jq curl openssl nginx "$LOADGEN"
SECS=${SOAK_SECONDS:-180}
[ "$SECS" -ge 30 ] || SECS=30
RAMP=$((SECS / 10)) # RSS is compared from here on

soak_pki
start_nginx
# The origin ends itself after --max-seconds (900 by default): it must outlive the run.
start_origin --max-seconds $((SECS + 600))
O=$ORIGIN_PORT
cat >"$T/policy.yaml" <<'EOF'
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.0/8", "ws.test"]
  passthrough: ["pass.test"]
EOF
METRICS_PORT=$(free_port)
EGCA="$T/eg-ca.pem"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$T/pki/ca.pem" --ca-out "$EGCA" --metrics "127.0.0.1:$METRICS_PORT" || exit 1
P=$EG_PORT

FD0=$(eg_fds)
echo "# egressd $EG_PID: baseline $FD0 descriptors, VmRSS $(eg_kb VmRSS) kB; $SECS s of load"

# --- the load -----------------------------------------------------------------
mkdir -p "$T/ids" "$T/lg"
LG_PIDS=""
# lg NAME ARGS...: one loadgen for the whole run, its answered ids in ids/NAME.
lg() {
	local name=$1
	shift
	"$LOADGEN" --proxy "127.0.0.1:$P" --duration "$SECS" --timeout 20 --name "$name" \
	    --tag "$name" --ids "$T/ids/$name" "$@" >"$T/lg/$name.out" 2>&1 &
	track_pid $!
	LG_PIDS="$LG_PIDS $!"
}
lg ka --url "http://127.0.0.1:$NGINX_PORT/" --connections 8 --pace 0.01
lg close --url "http://127.0.0.1:$NGINX_PORT/" --connections 2 --mode close --pace 0.01
lg tls --url "https://origin.test:$NGINX_TLS_PORT/" --cacert "$EGCA" --connections 4 --pace 0.01
lg tlsnew --url "https://origin.test:$NGINX_TLS_PORT/" --cacert "$EGCA" --connections 1 \
    --mode close --pace 0.02
# Passthrough: egressd sees a tunnel, not its requests; one tunnel a request.
lg pass --url "https://pass.test:$NGINX_TLS_PORT/" --cacert "$T/pki/ca.pem" --connections 1 \
    --mode close --pace 0.02
python3 "$SRC_DIR/tests/soak/mixed.py" --proxy "$P" --dns "$EG_DNS_PORT" --origin "$O" \
    --nginx "$NGINX_PORT" \
    --seconds "$SECS" --out "$T/ids" >"$T/mixed.out" 2>"$T/mixed.err" &
MIXED_PID=$!
track_pid "$MIXED_PID"

# The slow reader: 8 MiB bodies read at 2 MiB/s, one after another.
(
	end=$(($(date +%s) + SECS - 5))
	i=0
	while [ "$(date +%s)" -lt "$end" ]; do
		i=$((i + 1))
		if pcurl --max-time 30 --limit-rate 2M -o /dev/null \
		    "http://127.0.0.1:$NGINX_PORT/big/slow-$i"; then
			echo "$i" >>"$T/ids/slow"
		fi
	done
) &
SLOW_PID=$!
track_pid "$SLOW_PID"

# --- sampling and reloads -------------------------------------------------------
printf 't_s\trss_kb\tfds\topen_conns\taudit_lines\n' >"$T/samples.tsv"
start=$(date +%s)
hups=0
RSS_RAMP=0
RSS_MAX=0
for ((k = 1; k <= SECS / 10; k++)); do
	# wait for the next 10 s mark, sending SIGHUP at each 20 s mark
	while [ $(($(date +%s) - start)) -lt $((k * 10)) ]; do sleep 0.5; done
	if ((k % 2 == 0)) && [ $((k * 10)) -lt "$SECS" ]; then
		kill -HUP "$EG_PID" && hups=$((hups + 1))
	fi
	rss=$(eg_kb VmRSS)
	printf '%d\t%s\t%s\t%s\t%s\n' $((k * 10)) "$rss" "$(eg_fds)" \
	    "$(metric egressd_connections_open)" "$(audit_lines)" >>"$T/samples.tsv"
	if [ $((k * 10)) -ge "$RAMP" ] && [ "$RSS_RAMP" -eq 0 ]; then
		RSS_RAMP=$rss
	fi
	[ "$rss" -gt "$RSS_MAX" ] && RSS_MAX=$rss
	kill -0 "$EG_PID" 2>/dev/null || break
done
sed 's/^/# /' "$T/samples.tsv"

for p in $LG_PIDS $MIXED_PID $SLOW_PID; do
	wait_exit "$p" 60 || bad "a client did not stop (pid $p)"
done
expect_eq "$(kill -0 "$EG_PID" 2>/dev/null && echo alive)" alive "egressd ran the whole soak"

# --- what the clients saw -------------------------------------------------------
total=0
for f in "$T"/lg/*.out; do
	line=$(grep '^RESULT' "$f")
	name=$(basename "$f" .out)
	echo "# $line"
	n=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$line")
	e=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$line")
	total=$((total + ${n:-0}))
	expect_eq "${e:-x}" 0 "loadgen $name: no errors"
	expect_eq "$([ "${n:-0}" -gt 0 ] && echo yes)" yes "loadgen $name: requests answered"
done
M=$(cat "$T/mixed.out")
echo "# mixed: $M"
for kind in ws gql dns; do
	expect_eq "$(jq -r ".$kind.failed" <<<"$M")" 0 "$kind: no failures ($(jq -c ".$kind.errors" <<<"$M"))"
	expect_eq "$(jq -r ".$kind.ok > 0" <<<"$M")" true "$kind: some answered"
	total=$((total + $(jq -r ".$kind.ok" <<<"$M")))
done
nslow=$(wc -l <"$T/ids/slow" 2>/dev/null || echo 0)
expect_eq "$([ "$nslow" -gt 0 ] && echo yes)" yes "the slow reader read $nslow bodies"
total=$((total + nslow))
echo "# $total requests answered in $SECS s ($((total / SECS)) a second)"

# --- the audit --------------------------------------------------------------------
# Descriptors back to the baseline once the load is gone: idle upstream
# connections leave the pool within 30 s.
fds=$(eg_fds)
for ((i = 0; i < 90 && fds > FD0; i++)); do
	sleep 0.5
	fds=$(eg_fds)
done
echo "# descriptors: $FD0 before, $fds after the load"
expect_eq "$([ "$fds" -le "$FD0" ] && echo yes)" yes "descriptors back to the baseline ($fds, was $FD0)"
expect_eq "$(metric egressd_connections_open)" 0 "no connection open after the load"

growth=$(((RSS_MAX - RSS_RAMP) * 1000 / (RSS_RAMP > 0 ? RSS_RAMP : 1)))
echo "# RSS: $RSS_RAMP kB at ${RAMP} s, at most $RSS_MAX kB after: +$((growth / 10)).$((growth % 10)) %"
if asan_build; then
	echo "# (AddressSanitizer build: RSS growth not checked, its quarantine grows by design)"
else
	expect_eq "$([ "$growth" -lt 50 ] && echo yes)" yes \
	    "RSS grows less than 5 % after the first 10 % of the run"
fi

stop_egressd 30
expect_eq "$EXIT_RC" 0 "egressd stops cleanly"
# The audit in one pass: event, path or name, and what the checks need.
audit_tsv
awk -F'\t' '$1 == "http" {print $2}' "$T/audit.tsv" >"$T/audit.paths"
for name in ka close tls tlsnew ws gql; do
	ids_check "$name" "$T/ids/$name" "$name"
done
ids_check slow "$T/ids/slow" "slow reader"
expect_eq "$(awk -F'\t' '$1 == "http" && $2 ~ /^\/gql-/ && $4 == "query"' "$T/audit.tsv" | wc -l)" \
    "$(wc -l <"$T/ids/gql")" "every GraphQL POST audited as a query"
# DNS: one dns event for each question answered (the names repeat, so by count).
nd=$(awk -F'\t' '$1 == "dns" && $2 ~ /^d[0-9]+\.soak\.test$/' "$T/audit.tsv" | wc -l)
echo "# dns: $(wc -l <"$T/ids/dns") answered, $nd audited"
expect_eq "$nd" "$(wc -l <"$T/ids/dns")" "dns: each answered query audited once"
# Passthrough: one connect event a tunnel (loadgen connects once a request).
pc=$(sed -n 's/.* connects=\([0-9]*\).*/\1/p' <<<"$(grep '^RESULT' "$T/lg/pass.out")")
pa=$(awk -F'\t' '$1 == "connect" && $2 == "pass.test" && $3 == "passthrough"' "$T/audit.tsv" | wc -l)
echo "# passthrough: $pc tunnels opened, $pa audited"
expect_eq "$pa" "$pc" "every passthrough tunnel audited once"
expect_eq "$(awk -F'\t' '$1 == "policy" && $5 == "policy.reload" && $6 == "allow"' "$T/audit.tsv" | wc -l)" \
    "$hups" "each of the $hups reloads audited"
expect_eq "$(awk -F'\t' '$1 == "daemon" && $7 == "overload"' "$T/audit.tsv" | wc -l)" \
    0 "no overload at this load"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "policyctl audit --verify ($OUT)"
echo "# audit: $(wc -l <"$T/audit.tsv") lines, $(du -k "$EG_AUDIT" | cut -f1) kB"
finish
