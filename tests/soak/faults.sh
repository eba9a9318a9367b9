#!/usr/bin/env bash
# Faults are contained to the request they hit. One egressd, a well-behaved
# client (faulty.py client: a keep-alive connection, a new connection per
# request and requests inside an intercepted tunnel) asking all the time,
# and peers that misbehave on command (faulty.py): an upstream that refuses
# connections, resets mid-body, half-closes before and during its answer,
# answers bytes that are not HTTP; a TLS server that stalls in the
# handshake, behind an intercepted request and behind a CONNECT tunnel; the
# upstream resolver slow, silent, answering garbage (bytes, another query
# id, a cut message) and down; hosts the CA cannot mint a leaf for; a
# client vanishing in the middle of its request body and of a response.
# Each fault gets its status or cut and an audit line with its reason; the
# well-behaved client gets a 200 for every request, none slower than a
# bound; egressd stays up and, once the clients are gone, holds the file
# descriptors it held before (plus the idle upstreams it pools).
# shellcheck disable=SC2153 # FH_PORT, FS_PORT, FD_PORT, FD_PID: set by start_faulty
# shellcheck source=../integration/lib.sh
. "$SRC_DIR/tests/integration/lib.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"
FAULTY="$SRC_DIR/tests/soak/faulty.py"
RAW="$SRC_DIR/tests/integration/rawhttp.py"
GOOD_MAX_MS=${GOOD_MAX_MS:-1500} # the slowest good request allowed

pki_make "egress fault test CA" goodtls.test || {
	echo "cannot make the test PKI" >&2
	exit 1
}
start_origin --tls-cert "$T/origin.pem" --tls-key "$T/origin.key" --tls-port-file "$T/origin.tls"
wait_file "$T/origin.tls" 10 || exit 1
TLS_PORT=$(cat "$T/origin.tls")

# start_faulty ROLE NAME [ARGS]: a faulty.py peer; its port in NAME_PORT.
start_faulty() {
	local role=$1 name=$2
	shift 2
	rm -f "$T/$name.port"
	python3 "$FAULTY" "$role" --port-file "$T/$name.port" --log "$T/$name.jsonl" \
	    --parent $$ "$@" >>"$T/$name.out" 2>&1 &
	track_pid $!
	printf -v "${name}_PID" %s $!
	wait_file "$T/$name.port" 10 || {
		echo "faulty $role did not start: $(cat "$T/$name.out")" >&2
		exit 1
	}
	printf -v "${name}_PORT" %s "$(cat "$T/$name.port")"
}
start_faulty http FH
start_faulty stall FS
start_faulty dns FD --slow 2
CLOSED=$(free_port) # nothing listens here

P="$T/policy.yaml"
cat >"$P" <<EOF
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["127.0.0.1", "tunnel.test", "stream-close.test", "stream-reset.test"]
  allowMethods: [GET, HEAD, OPTIONS, POST]
EOF
MPORT=$(free_port)
start_egressd --config "$P" --upstream-dns "127.0.0.1:$FD_PORT" --upstream-ca "$T/testca.pem" \
    --ca-out "$T/egress-ca.pem" --metrics "127.0.0.1:$MPORT" --connect-timeout 5 \
    --response-timeout 3 --header-timeout 3 || exit 1

metric() { # metric NAME: its value (the first series)
	curl -s --noproxy '*' --max-time 5 "http://127.0.0.1:$MPORT/metrics" |
	    awk -v n="$1" '$1 == n || index($1, n "{") == 1 {print $2; exit}'
}
fds() { find "/proc/$EG_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
FDS0=$(fds)

# The well-behaved client, asking from now until the faults are done.
python3 "$FAULTY" client --proxy "$EG_PORT" --url "http://good.test:$ORIGIN_PORT/hello" \
    --tls-host "goodtls.test:$TLS_PORT" --cafile "$T/egress-ca.pem" --stop-file "$T/stop" \
    --log "$T/good.jsonl" --parent $$ >"$T/good.out" 2>&1 &
GOOD_PID=$!
track_pid "$GOOD_PID"
for ((i = 0; i < 100; i++)); do
	[ "$(jq -c 'select(.status == 200)' "$T/good.jsonl" 2>/dev/null | wc -l)" -ge 3 ] && break
	sleep 0.1
done

# fcurl NAME ARGS...: curl through egressd; sets CODE, RC and MS (elapsed).
fcurl() {
	local t0
	t0=$(now_ms)
	CODE=$(pcurl -o "$T/$1.body" -w '%{http_code}' "${@:2}" 2>"$T/$1.err")
	RC=$?
	MS=$(($(now_ms) - t0))
}
# bg NAME ARGS...: fcurl in the background, its CODE RC MS in $T/NAME.res.
bg() {
	(fcurl "$@"; echo "$CODE $RC $MS" >"$T/$1.res") &
	BG="$BG $!"
}
res() { read -r CODE RC MS <"$T/$1.res"; }
# ev FILTER: the last audit line matching FILTER, compact; in OUT too.
ev() { OUT=$(audit_last "$1"); }
# expect_ev FILTER JQ WANT LABEL: the last audit line matching FILTER has JQ == WANT.
expect_ev() {
	ev "$1"
	expect_eq "$(jqf "$2")" "$3" "$4 ($OUT)"
}
expect_ge() { # expect_ge GOT MIN LABEL
	if [ "${1:-0}" -ge "$2" ] 2>/dev/null; then ok; else bad "$3: $1, want >= $2"; fi
}
expect_le() { # expect_le GOT MAX LABEL
	if [ -n "$1" ] && [ "$1" -le "$2" ] 2>/dev/null; then ok; else bad "$3: $1, want <= $2"; fi
}
# figure NAME TEXT: one line for docs/reliability-faults.md.
figure() { printf '%s\t%s\n' "$1" "$2" >>"$T/figures"; }

# --- the upstream misbehaves: refused, reset, half-closed, garbage ---
fcurl refused "http://refused.test:$CLOSED/ok"
expect_eq "$CODE" 502 "refused upstream: 502"
expect_ev '.host == "refused.test"' '[.status, .error] | @tsv' $'502\tupstream connection failed' \
    "refused upstream: audited"
figure refused "$CODE, $(jqf .error)"

fcurl reset "http://reset.test:$FH_PORT/reset"
expect_eq "$CODE.$RC" 200.18 "reset mid-body: the head went out, the body is cut (curl 18)"
expect_ev '.host == "reset.test"' '[.status, .bytes_down, .error] | @tsv' \
    $'200\t32768\tupstream error' "reset mid-body: audited with the bytes carried"
figure reset "cut after the head and 32768 bytes, $(jqf .error)"

fcurl halfclose "http://halfclose.test:$FH_PORT/halfclose"
expect_eq "$CODE" 502 "upstream half-closes before answering: 502"
expect_ev '.host == "halfclose.test"' '[.status, .error] | @tsv' \
    $'502\tupstream closed without a response' "half-close before the answer: audited"
figure halfclose "$CODE, $(jqf .error)"

fcurl halfbody "http://halfbody.test:$FH_PORT/halfclose-body"
expect_eq "$CODE.$RC" 200.18 "upstream half-closes mid-body: cut (curl 18)"
expect_ev '.host == "halfbody.test"' '[.status, .bytes_down, .error] | @tsv' \
    $'200\t32768\tupstream closed during the response body' "half-close mid-body: audited"
figure halfbody "cut after the head and 32768 bytes, $(jqf .error)"

fcurl garbage "http://garbage.test:$FH_PORT/garbage"
expect_eq "$CODE" 502 "upstream answers garbage: 502"
expect_ev '.host == "garbage.test"' '.status' 502 "garbage answer: audited"
expect_ne "$(jqf '.error // ""')" "" "garbage answer: the audit line says what was wrong"
figure garbage "$CODE, $(jqf .error)"

# --- stalls, all at once: a TLS handshake behind an intercepted request and
# behind a tunnel, the resolver slow, silent and answering garbage ---
BG=""
bg stall --cacert "$T/egress-ca.pem" "https://stall.test:$FS_PORT/"
bg tstall --max-time 4 --cacert "$T/egress-ca.pem" "https://tunnel.test:$FS_PORT/"
bg slow "http://slow-a.test:$FH_PORT/ok"
for f in silent garbage badid short; do
	bg "dns-$f" "http://$f-a.test:$FH_PORT/ok"
done
DNS_PORT=$EG_DNS_PORT
for f in silent garbage badid short slow; do
	(dq "$f-b.test" A; printf '%s\n' "$OUT" >"$T/dig-$f.out") &
	BG="$BG $!"
done
# shellcheck disable=SC2086 # one pid a word
wait $BG

res stall
expect_eq "$CODE" 504 "TLS server stalls in the handshake (intercepted): 504"
expect_ev '.host == "stall.test" and .event == "http"' '[.status, .error] | @tsv' \
    $'504\tupstream connect timed out' "TLS stall (intercepted): audited"
figure tls-stall "$CODE after ${MS} ms (--connect-timeout 5), $(jqf .error)"
res tstall
expect_eq "$CODE.$RC" 000.28 "TLS server stalls behind a tunnel: the client's own timeout"
ev '.host == "tunnel.test"'
expect_eq "$(jqf '[.event, .tls, .status] | @tsv')" $'connect\ttunnel\t200' \
    "TLS stall (tunnel): a connect event once the client left"
figure tunnel-stall "tunnel open until the client left (${MS} ms), connect event, bytes_up $(jqf .bytes_up)"
res slow
expect_eq "$CODE" 200 "slow resolver (2 s): answered late"
expect_ge "$MS" 1900 "slow resolver: the answer waited for it"
figure dns-slow "200 after ${MS} ms"
for f in silent garbage badid short; do
	res "dns-$f"
	expect_eq "$CODE" 502 "resolver $f: 502"
	expect_ev ".host == \"$f-a.test\"" '[.status, .error] | @tsv' \
	    $'502\tcannot resolve upstream host' "resolver $f: audited"
	figure "dns-$f" "$CODE after ${MS} ms, $(jqf .error)"
	OUT=$(cat "$T/dig-$f.out")
	expect_eq "$(dq_status)" SERVFAIL "resolver $f: DNS clients get SERVFAIL"
	expect_contains "$(dq_ede)" "EDE: 22" "resolver $f: with EDE 22 (No Reachable Authority)"
	expect_ev ".qname == \"$f-b.test\"" '[.rcode, .error] | @tsv' \
	    $'SERVFAIL\tno upstream answered' "resolver $f: the DNS query audited"
done
OUT=$(cat "$T/dig-slow.out")
expect_eq "$(dq_status)" NOERROR "slow resolver: DNS clients get the late answer"

# --- the resolver down: nothing listens on its port; then back ---
kill "$FD_PID"
wait "$FD_PID" 2>/dev/null
fcurl down "http://down-a.test:$FH_PORT/ok"
expect_eq "$CODE" 502 "resolver down: 502"
expect_ev '.host == "down-a.test"' '[.status, .error] | @tsv' \
    $'502\tcannot resolve upstream host' "resolver down: audited"
figure dns-down "$CODE after ${MS} ms, $(jqf .error)"
dq down-b.test A
expect_eq "$(dq_status)" SERVFAIL "resolver down: DNS clients get SERVFAIL"
start_faulty dns FD --slow 2 --port "$FD_PORT"
fcurl back "http://back.test:$FH_PORT/ok"
expect_eq "$CODE" 200 "resolver back: served again"

# --- names the CA cannot mint a leaf for, in CONNECT and in SNI ---
for h in 'bad..name.test' 'xn--zz.test' '1.2.3.4.5' \
    "$(printf 'a%.0s' {1..63}).$(printf 'b%.0s' {1..63}).$(printf 'c%.0s' {1..63}).$(printf 'd%.0s' {1..60}).test"; do
	printf 'CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n' "$h" "$FS_PORT" "$h" "$FS_PORT" |
	    python3 "$RAW" send "$EG_PORT" --wait 3 >"$T/mint.json"
	expect_eq "$(jq -r '.responses[0].status' "$T/mint.json")" 400 "CONNECT ${h:0:20}: 400"
	expect_ev '.event == "connect"' '.status' 400 "CONNECT ${h:0:20}: audited"
	expect_ne "$(jqf '.error // ""')" "" "CONNECT ${h:0:20}: the audit line says why"
	figure "mint ${h:0:24}" "400, $(jqf .error)"
done
MINTED=$(metric egressd_tls_leaves_minted_total)
for sni in 'bad..name.test' 'other.test'; do
	timeout 10 openssl s_client -proxy "127.0.0.1:$EG_PORT" -connect "mint.test:$FS_PORT" \
	    -servername "$sni" -CAfile "$T/egress-ca.pem" </dev/null >"$T/sni.out" 2>&1
	expect_contains "$(cat "$T/sni.out")" "no peer certificate available" "SNI $sni: no handshake"
	expect_ev '.host == "mint.test" and .event == "connect"' '[.action, .rule] | @tsv' \
	    $'block\tsni-mismatch' "SNI $sni: cut, audited sni-mismatch"
	figure "sni $sni" "cut, rule $(jqf .rule)"
done
expect_eq "$(metric egressd_tls_leaves_minted_total)" "$MINTED" "no leaf minted for those names"

# --- a client vanishing in the middle of its request body, and of a response ---
# A POST to an unlisted host is held whole before it goes (it may be
# GraphQL); one to an allowlisted host streams.
for h in sink-close sink-reset stream-close stream-reset; do
	r=""
	[ "${h#*-}" = reset ] && r=--reset
	python3 "$FAULTY" vanish --proxy "$EG_PORT" --url "http://$h.test:$FH_PORT/sink" \
	    --post 10000000 --send 262144 $r --log /dev/null >/dev/null
	for ((i = 0; i < 50; i++)); do
		[ -n "$(audit_last ".host == \"$h.test\"")" ] && break
		sleep 0.1
	done
	expect_ev ".host == \"$h.test\"" '.method' POST "client gone mid-body ($h): audited"
	expect_ne "$(jqf '.error // ""')" "" "client gone mid-body ($h): the line says so"
	figure "client-body $h" "audit status $(jqf '.status // "-"'), $(jqf .error), bytes_up $(jqf .bytes_up)"
done
for ((i = 0; i < 50; i++)); do
	[ "$(jq -c 'select(.kind == "sink")' "$T/FH.jsonl" | wc -l)" -ge 2 ] && break
	sleep 0.1
done
expect_eq "$(jq -c 'select(.kind == "sink" and .whole)' "$T/FH.jsonl" | wc -l)" 0 \
    "client gone mid-body: the origin never saw a whole body"
expect_eq "$(jq -c 'select(.kind == "sink" and (.whole | not))' "$T/FH.jsonl" | wc -l)" 2 \
    "client gone mid-body: the origin saw both streamed bodies cut, the held ones never came"
for how in close reset; do
	r=""
	[ $how = reset ] && r=--reset
	python3 "$FAULTY" vanish --proxy "$EG_PORT" --url "http://big-$how.test:$FH_PORT/big?n=500000000" \
	    --read 1048576 $r --log /dev/null >/dev/null
	for ((i = 0; i < 50; i++)); do
		[ -n "$(audit_last ".host == \"big-$how.test\"")" ] && break
		sleep 0.1
	done
	expect_ev ".host == \"big-$how.test\"" '.status' 200 "client gone mid-response ($how): audited"
	expect_eq "$(jqf '.bytes_down < 500000000')" true "client gone mid-response ($how): a part carried"
	figure "client-response-$how" "audit status 200, $(jqf '.error // "-"'), bytes_down $(jqf .bytes_down)"
done
for ((i = 0; i < 50; i++)); do
	[ "$(jq -c 'select(.kind == "big")' "$T/FH.jsonl" | wc -l)" -ge 2 ] && break
	sleep 0.1
done
expect_eq "$(jq -c 'select(.kind == "big" and (.whole | not))' "$T/FH.jsonl" | wc -l)" 2 \
    "client gone mid-response: egressd let the upstream go too"

# --- the well-behaved client throughout ---
touch "$T/stop"
wait_exit "$GOOD_PID" 10
N=$(jq -s length "$T/good.jsonl")
expect_ge "$N" 200 "the good client kept asking"
expect_eq "$(jq -c 'select(.status != 200)' "$T/good.jsonl" | head -n 3)" "" \
    "the good client got 200 for every request"
for k in keepalive new tls; do
	expect_ge "$(jq -c "select(.kind == \"$k\" and .status == 200)" "$T/good.jsonl" | wc -l)" 50 \
	    "the good client's $k requests went on"
done
MAXMS=$(jq -s 'map(.ms) | max | floor' "$T/good.jsonl")
expect_le "$MAXMS" "$GOOD_MAX_MS" "no good request waited on a fault"
figure good "$N requests, all 200, slowest ${MAXMS} ms"

# --- egressd is up and holds what it held before ---
expect_eq "$(kill -0 "$EG_PID" 2>/dev/null && echo up)" up "egressd is up"
for ((i = 0; i < 100; i++)); do
	open=$(metric egressd_connections_open)
	idle=$(metric egressd_upstream_idle_connections)
	[ "$open" = 0 ] && [ "$(fds)" -le $((FDS0 + idle)) ] && break
	sleep 0.1
done
expect_eq "$(metric egressd_connections_open)" 0 "no connection left open"
expect_le "$(fds)" "$((FDS0 + $(metric egressd_upstream_idle_connections)))" \
    "fds back to the baseline ($FDS0) plus the idle upstreams pooled"
figure fds "baseline $FDS0, after $(fds) with $(metric egressd_upstream_idle_connections) idle upstreams pooled"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"
run "$POLICYCTL" audit --verify "$EG_AUDIT"
expect_rc 0 "the audit chain verifies"
if [ -n "${FAULTS_FIGURES:-}" ]; then cp "$T/figures" "$FAULTS_FIGURES"; fi
finish
