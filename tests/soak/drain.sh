#!/usr/bin/env bash
# SIGTERM under load drains. egressd serves a tagged client (faulty.py
# client --tag: each request an id in its path, logged by the origin),
# slow requests, a rate-limited download and one request longer than the
# grace period when SIGTERM comes. Then: a new connection is refused,
# the exchanges in flight finish (200, whole bodies), the one past the
# grace is cut and audited, egressd exits 0 within the grace period, every
# request that completed for a client has exactly one audit line (so has
# every request the origin saw), and policyctl audit --verify passes.
# shellcheck source=../integration/lib.sh
. "$SRC_DIR/tests/integration/lib.sh"
FAULTY="$SRC_DIR/tests/soak/faulty.py"
GRACE=4

expect_le() { # expect_le GOT MAX LABEL
	if [ -n "$1" ] && [ "$1" -le "$2" ] 2>/dev/null; then ok; else bad "$3: $1, want <= $2"; fi
}
expect_ge() { # expect_ge GOT MIN LABEL
	if [ "${1:-0}" -ge "$2" ] 2>/dev/null; then ok; else bad "$3: $1, want >= $2"; fi
}

for role in http dns; do
	python3 "$FAULTY" $role --port-file "$T/$role.port" --log "$T/$role.jsonl" --parent $$ \
	    >"$T/$role.out" 2>&1 &
	track_pid $!
	wait_file "$T/$role.port" 10 || {
		echo "faulty.py $role did not start: $(cat "$T/$role.out")" >&2
		exit 1
	}
done
FH_PORT=$(cat "$T/http.port")
cat >"$T/policy.yaml" <<EOF
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["127.0.0.1"]
EOF
start_egressd --config "$T/policy.yaml" --upstream-dns "127.0.0.1:$(cat "$T/dns.port")" \
    --grace "$GRACE" || exit 1

python3 "$FAULTY" client --proxy "$EG_PORT" --tag --interval 0.005 \
    --url "http://origin.test:$FH_PORT/id/" --stop-file "$T/stop" --log "$T/load.jsonl" \
    --parent $$ >"$T/load.out" 2>&1 &
LOAD_PID=$!
track_pid "$LOAD_PID"
# dl NAME ARGS...: curl through egressd in the background; code, exit, size in $T/NAME.res.
dl() {
	(pcurl -o "$T/$1.body" -w '%{http_code} %{size_download}' "${@:2}" >"$T/$1.res" \
	    2>"$T/$1.err"; echo " $?" >>"$T/$1.res") &
	DL="$DL $!"
}
DL=""
sleep 1
for i in 1 2 3 4; do
	dl "slow$i" "http://slow$i.test:$FH_PORT/slow?ms=1500"
done
dl big --limit-rate 2M "http://big.test:$FH_PORT/big?n=3000000"
dl cut "http://cut.test:$FH_PORT/slow?ms=20000"
sleep 0.5

T0=$(now_ms)
kill -TERM "$EG_PID"
sleep 0.3
# A connection tried now is refused at once, not left waiting in the
# backlog of a listener nobody accepts from until egressd exits.
TL=$(now_ms)
run pcurl --max-time 2 -o /dev/null -w '%{http_code}' "http://late.test:$FH_PORT/id/late-1"
expect_eq "$RC" 7 "a connection after SIGTERM is refused (curl 7)"
expect_le $(($(now_ms) - TL)) 1000 "a connection after SIGTERM is refused at once"
wait_exit "$EG_PID" $((GRACE + 5))
T1=$(now_ms)
expect_eq "$EXIT_RC" 0 "egressd exits 0"
expect_le $((T1 - T0)) $((GRACE * 1000 + 1000)) "egressd is gone within the grace period"
touch "$T/stop"
wait_exit "$LOAD_PID" 10
# shellcheck disable=SC2086 # one pid a word
wait $DL

for i in 1 2 3 4; do
	expect_eq "$(tr -s ' \n' ' ' <"$T/slow$i.res")" "200 2 0 " "slow request $i in flight finished"
	expect_eq "$(audit_last ".host == \"slow$i.test\"" | jq -r .status)" 200 \
	    "slow request $i: audited"
done
expect_eq "$(tr -s ' \n' ' ' <"$T/big.res")" "200 3000000 0 " "the download in flight finished whole"
expect_eq "$(audit_last '.host == "big.test"' | jq -r '[.status, .bytes_down] | @tsv')" \
    $'200\t3000000' "the download: audited whole"
expect_ne "$(cut -d' ' -f1 "$T/cut.res")" 200 "the request past the grace is cut"
OUT=$(audit_last '.host == "cut.test"')
expect_ne "$OUT" "" "the request past the grace: audited"
CUT_ERR=$(jqf '.error // ""')
expect_ne "$CUT_ERR" "" "the request past the grace: the line says it was cut"
expect_eq "$(jq -c 'select(.host == "late.test")' "$EG_AUDIT" | wc -l)" 0 \
    "the request after SIGTERM: no line (it was never read)"
expect_eq "$(jq -c 'select(.path == "/id/late-1")' "$T/http.jsonl" | wc -l)" 0 \
    "the request after SIGTERM never reached the origin"

# Every request completed for the client, and every one the origin saw, has one line.
ids_client() { jq -r 'select(.status == 200) | .id' "$T/load.jsonl" | sort; }
ids_origin() {
	jq -r 'select(.kind == "http" and (.path | startswith("/id/")) and .path != "/id/late-1")
	    | .path | ltrimstr("/id/")' "$T/http.jsonl" | sort
}
ids_audit() {
	jq -r 'select(.event == "http" and (.path | startswith("/id/"))) | .path | ltrimstr("/id/")' \
	    "$EG_AUDIT" | sort
}
N=$(ids_client | wc -l)
expect_ge "$N" 50 "the client was served before SIGTERM"
expect_eq "$(comm -23 <(ids_client) <(ids_audit) | wc -l)" 0 \
    "every request completed for the client has an audit line"
expect_eq "$(comm -23 <(ids_origin) <(ids_audit) | wc -l)" 0 \
    "every request the origin saw has an audit line"
expect_eq "$(ids_audit | uniq -d | wc -l)" 0 "no line twice"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "--verify passes"
if [ -n "${DRAIN_FIGURES:-}" ]; then
	printf 'drain\t%s requests served before SIGTERM; 6 in flight: 5 finished (200, whole), 1 past the %s s grace cut (%s); exit 0 after %s ms; every completed request audited\n' \
	    "$N" "$GRACE" "$CUT_ERR" "$((T1 - T0))" >"$DRAIN_FIGURES"
fi
finish
