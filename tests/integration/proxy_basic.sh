#!/usr/bin/env bash
# egressd end to end with real clients (curl and raw sockets) against our
# own origin (origin.py, which also answers DNS for *.test with 127.0.0.1):
# allowed GET with its audit event, blocked POST (403 body, X-Egress-Rule,
# nothing at the origin), flag mode, blocklisted name (blocked before any DNS
# query), the private-address guard with and without the 127.0.0.1 entry,
# TCP_NODELAY on accepted sockets, keep-alive reuse, chunked and close-delimited bodies both ways, HEAD,
# 100-continue, pipelining, GraphQL query/mutation (bodies of any type),
# plain HTTP inside a CONNECT to an unlisted host's other port cut (the
# CONNECT decided as policyctl explain decides it), 502 on a refused upstream, 504 on a silent one, the
# slowloris head timeout, and 502 on an oversize response head.
. "$(dirname "$0")/lib.sh"
RAW="$SRC_DIR/tests/integration/rawhttp.py"

start_origin
O=$ORIGIN_PORT

write_policy() { # write_policy FILE ONVIOLATION ALLOW-127
	{
		echo "version: 1"
		echo "network:"
		echo "  mode: practical"
		echo "  inheritGlobal: false"
		echo '  blocklist: ["blocked.test", "198.18.5.5"]'
		if [ "$3" = yes ]; then
			echo '  allowlist: ["127.0.0.1", "allowed.test"]'
		else
			echo '  allowlist: ["allowed.test"]'
		fi
		echo "  allowMethods: [GET, HEAD, OPTIONS]"
		echo "  allowGraphqlQueries: true"
		echo "  onViolation: $2"
	} >"$1"
}
P="$T/policy.yaml"
write_policy "$P" block yes

start_egressd --config "$P" --upstream-dns "$ORIGIN_DNS" --response-timeout 2 \
    --header-timeout 2 || exit 1
A_PORT=$EG_PORT A_PID=$EG_PID A_AUDIT=$EG_AUDIT

# status_of FILE: the status code of the last response head in a curl -D dump.
status_of() { awk '/^HTTP\//{s=$2} END{print s}' "$1"; }
header_of() { # header_of FILE NAME
	tr -d '\r' <"$1" | awk -v n="$2" -F': ' 'tolower($1) == tolower(n) {v=$2} END{print v}'
}

# --- GET allowed: body intact, query forwarded, audited without the query ---
curl -sS --max-time 10 --noproxy '*' -o "$T/direct.body" "http://127.0.0.1:$O/hello"
run pcurl -D "$T/h" -o "$T/get.body" "http://plain.test:$O/hello?token=secret"
expect_rc 0 "GET through the proxy"
expect_eq "$(status_of "$T/h")" 200 "GET status"
expect_eq "$(sha256sum <"$T/get.body")" "$(sha256sum <"$T/direct.body")" "GET body intact"
expect_eq "$(stat -c %s "$T/get.body")" 100 "GET body is 100 bytes"
expect_eq "$(origin_count 'select(.target == "/hello?token=secret")')" 1 "origin got the query"
expect_eq "$(jq -r 'select(.target == "/hello?token=secret") | [.headers[][0]
    | ascii_downcase] | index("proxy-connection") == null' "$ORIGIN_LOG")" true \
    "no hop-by-hop header reached the origin"
EV=$(audit_last '.event == "http" and .host == "plain.test" and .method == "GET"')
OUT=$EV
expect_eq "$(jqf .action)" allow "GET audited allow"
expect_eq "$(jqf .status)" 200 "GET audited status"
expect_eq "$(jqf .bytes_down)" 100 "GET audited bytes_down"
expect_eq "$(jqf .path)" /hello "GET audited path without the query string"
expect_eq "$(jqf '.duration_ms | type')" number "GET audited duration_ms"
expect_eq "$(jqf .port)" "$O" "GET audited port"
expect_eq "$(grep -c secret "$A_AUDIT")" 0 "query string never in the audit log"

# --- POST blocked: 403 naming the rule, nothing at the origin ---
before=$(origin_count 'select(.method)')
run pcurl -D "$T/h" -o "$T/b" -X POST --data-binary 'a=1' "http://plain.test:$O/echo"
BODY=$(cat "$T/b")
expect_eq "$(status_of "$T/h")" 403 "POST to a plain host is 403"
expect_eq "$(header_of "$T/h" X-Egress-Rule)" method-not-allowed "X-Egress-Rule header"
expect_contains "$BODY" "rule: method-not-allowed (methods, $P:7)" "403 body names rule and source"
expect_contains "$BODY" \
    "policyctl explain --method POST --content-type 'application/x-www-form-urlencoded' --body FILE plain.test" \
    "403 body names policyctl explain, with the body that was held"
expect_eq "$(origin_count 'select(.method)')" "$before" "blocked POST never reached the origin"
OUT=$(audit_last '.event == "http" and .method == "POST" and .host == "plain.test"')
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .status)" "block:method-not-allowed:403" "POST audited block"
expect_eq "$(jqf .source)" "$P:7" "block audited with its source"
expect_eq "$(jqf '.bytes_up // 0')" 0 "a blocked POST sent no body bytes towards the destination"

# --- blocklisted name: 403 before any resolution ---
run pcurl -D "$T/h" -o "$T/b" "http://blocked.test:$O/hello"
expect_eq "$(status_of "$T/h")" 403 "blocklisted name is 403"
expect_eq "$(header_of "$T/h" X-Egress-Rule)" blocked.test "blocklist rule header"
expect_contains "$(cat "$T/b")" "rule: blocked.test (blocklist, $P:5)" "blocklist rule in body"
expect_eq "$(origin_count 'select(.dns == "blocked.test")')" 0 "blocked name never resolved"
OUT=$(audit_last '.host == "blocked.test"')
expect_eq "$(jqf .action):$(jqf .rule)" "block:blocked.test" "blocklist audited"
run pcurl -D "$T/h" -o "$T/b" "http://198.18.5.5:$O/hello"
expect_eq "$(status_of "$T/h")" 403 "blocklisted address is 403"
expect_eq "$(header_of "$T/h" X-Egress-Rule)" 198.18.5.5 "blocklisted address rule"

# --- policyctl explain gives the proxy's decision (same code path) ---
OUT=$(audit_last '.event == "http" and .method == "POST" and .host == "plain.test"')
want="$(jqf .action):$(jqf .rule):$(jqf .source)"
run "$POLICYCTL" explain --config "$P" --json --method POST "http://plain.test:$O/echo"
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .source)" "$want" "explain = proxy for POST"

# --- client sockets have TCP_NODELAY (set on the listener, inherited) ---
run python3 "$SRC_DIR/tests/integration/nodelay.py" "$A_PID" "$A_PORT"
expect_eq "$(jqf '"\(.sockets) \(.nodelay)"')" "1 1" "accepted client socket has TCP_NODELAY"

# --- keep-alive: two requests on one client connection, one upstream ---
run pcurl -w '%{num_connects}\n' "http://plain.test:$O/conns" "http://plain.test:$O/conns"
n1=$(sed -n 1p <<<"$OUT") c1=$(sed -n 2p <<<"$OUT") n2=$(sed -n 3p <<<"$OUT") c2=$(sed -n 4p <<<"$OUT")
expect_eq "$c1:$c2" "1:0" "curl reused its proxy connection"
expect_eq "$n2" "$n1" "origin saw no new connection for the second request"
expect_eq "$(jq -r 'select(.target == "/conns") | .conn' "$ORIGIN_LOG" | sort -u | wc -l)" 1 \
    "both requests came on one upstream connection"

# --- chunked request body to an allowlisted name, chunked/close responses ---
head -c 300000 /dev/urandom >"$T/up.bin"
run pcurl -H 'Transfer-Encoding: chunked' -X POST --data-binary @"$T/up.bin" \
    "http://allowed.test:$O/echo"
expect_rc 0 "chunked POST"
expect_eq "$(jqf .len):$(jqf .sha256)" "300000:$(sha256sum <"$T/up.bin" | cut -d' ' -f1)" \
    "chunked request body arrived whole"
OUT=$(audit_last '.event == "http" and .host == "allowed.test" and .method == "POST"')
expect_eq "$(jqf .action):$(jqf .bytes_up)" "allow:300000" "chunked POST audited with bytes_up"
curl -sS --max-time 10 --noproxy '*' -o "$T/direct.chunked" "http://127.0.0.1:$O/chunked"
run pcurl -D "$T/h" -o "$T/c.body" "http://allowed.test:$O/chunked"
expect_eq "$(sha256sum <"$T/c.body")" "$(sha256sum <"$T/direct.chunked")" "chunked response intact"
expect_eq "$(header_of "$T/h" Transfer-Encoding)" chunked "chunked response stays chunked for 1.1"
run pcurl --http1.0 -D "$T/h" -o "$T/c10.body" "http://allowed.test:$O/chunked"
expect_eq "$(sha256sum <"$T/c10.body")" "$(sha256sum <"$T/direct.chunked")" "chunked response re-framed for 1.0"
expect_eq "$(header_of "$T/h" Transfer-Encoding)" "" "no Transfer-Encoding to an HTTP/1.0 client"
curl -sS --max-time 10 --noproxy '*' -o "$T/direct.close" "http://127.0.0.1:$O/close"
run pcurl -D "$T/h" -o "$T/cl.body" "http://allowed.test:$O/close"
expect_eq "$(sha256sum <"$T/cl.body")" "$(sha256sum <"$T/direct.close")" "close-delimited response intact"

# --- HEAD: headers only, and the connection stays usable ---
run python3 "$RAW" send "$A_PORT" --head-methods HEAD,GET < <(printf 'HEAD http://plain.test:%s/hello HTTP/1.1\r\nHost: plain.test:%s\r\n\r\nGET http://plain.test:%s/hello HTTP/1.1\r\nHost: plain.test:%s\r\nConnection: close\r\n\r\n' "$O" "$O" "$O" "$O")
expect_eq "$(jqf '[.responses[].status] | join(",")')" "200,200" "HEAD then GET on one connection"
expect_eq "$(jqf '.responses[0].body_len'):$(jqf '.responses[0].headers[] | select(.[0] | ascii_downcase == "content-length") | .[1]')" \
    "0:100" "HEAD has no body but states the length"
expect_eq "$(jqf '.responses[1].body_len'):$(jqf .trailing)" "100:0" "GET after HEAD framed right"

# --- Expect: 100-continue ---
head -c 5000 /dev/urandom >"$T/e.bin"
run pcurl -v -H 'Expect: 100-continue' -X POST --data-binary @"$T/e.bin" "http://allowed.test:$O/echo"
expect_contains "$ERR" "HTTP/1.1 100 Continue" "client got 100 Continue"
expect_eq "$(jqf .len):$(jqf .sha256)" "5000:$(sha256sum <"$T/e.bin" | cut -d' ' -f1)" "100-continue body arrived"

# --- pipelining: three requests in one write, answered in order ---
before=$(origin_count 'select(.method)')
req() { printf 'GET http://plain.test:%s%s HTTP/1.1\r\nHost: plain.test:%s\r\n%b\r\n' "$O" "$1" "$O" "$2"; }
run python3 "$RAW" send "$A_PORT" < <(req '/status?code=201' ''; req /hello ''; req '/status?code=202' 'Connection: close\r\n')
expect_eq "$(jqf '[.responses[].status] | join(",")')" "201,200,202" "pipelined answers in order"
expect_eq "$(jqf .closed)" true "Connection: close honoured after the pipeline"
expect_eq "$(jq -r 'select(.method) | .target' "$ORIGIN_LOG" | tail -n 3 | paste -sd' ')" \
    "/status?code=201 /hello /status?code=202" "origin got the pipeline in order"
expect_eq "$(origin_count 'select(.method)')" "$((before + 3))" "exactly three requests upstream"

# --- GraphQL: a query is allowed, a mutation is blocked before the origin ---
printf '{"query":"{ x }"}' >"$T/q.json"
printf '{"query":"mutation { y }"}' >"$T/m.json"
run pcurl -D "$T/h" -H 'Content-Type: application/json' --data-binary @"$T/q.json" \
    "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 200 "GraphQL query POST allowed"
expect_eq "$(jqf .sha256)" "$(sha256sum <"$T/q.json" | cut -d' ' -f1)" "GraphQL query body intact"
OUT=$(audit_last '.event == "http" and .graphql != null and .graphql.operation == "query"')
expect_eq "$(jqf .action)" allow "GraphQL query audited allow"
expect_eq "$(jqf .bytes_up)" "$(stat -c %s "$T/q.json")" "the held and sent query counted in bytes_up"
GQ="$(jqf .action):$(jqf .rule)"
before=$(origin_count 'select(.method == "POST")')
run pcurl -D "$T/h" -o "$T/b" -H 'Content-Type: application/json' --data-binary @"$T/m.json" \
    "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 403 "GraphQL mutation blocked"
expect_eq "$(origin_count 'select(.method == "POST")')" "$before" "mutation never reached the origin"
OUT=$(audit_last '.event == "http" and .graphql.operation == "mutation"')
expect_eq "$(jqf .action)" block "GraphQL mutation audited block"
expect_eq "$(jqf '.bytes_up // 0')" 0 "the held and refused mutation is not counted in bytes_up"
GM="$(jqf .action):$(jqf .rule)"
run "$POLICYCTL" explain --config "$P" --json --method POST --content-type application/json \
    --body "$T/q.json" "http://plain.test:$O/echo"
expect_eq "$(jqf .action):$(jqf .rule)" "$GQ" "explain = proxy for a GraphQL query"
run "$POLICYCTL" explain --config "$P" --json --method POST --content-type application/json \
    --body "$T/m.json" "http://plain.test:$O/echo"
expect_eq "$(jqf .action):$(jqf .rule)" "$GM" "explain = proxy for a GraphQL mutation"

# --- a body can carry GraphQL whatever its type: GET with a form body, a
# compressed body, and an untyped JSON body are held and classified ---
before=$(origin_count 'select(.method == "GET" and .target == "/echo")')
run pcurl -D "$T/h" -o "$T/b" -X GET -H 'Content-Type: application/x-www-form-urlencoded' \
    --data-binary 'query=mutation%20%7B%20y%20%7D' "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 403 "GET with a form body holding a mutation is blocked"
OUT=$(audit_last '.event == "http" and .method == "GET" and .path == "/echo"')
expect_eq "$(jqf .rule):$(jqf .graphql.operation)" "graphql-mutation:mutation" "form-body mutation classified"
printf '{"query":"{ x }"}' | gzip -c >"$T/q.json.gz"
run pcurl -D "$T/h" -o "$T/b" -X GET -H 'Content-Type: application/json' \
    -H 'Content-Encoding: gzip' --data-binary @"$T/q.json.gz" "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 403 "a compressed body cannot be proved a query"
OUT=$(audit_last '.event == "http" and .method == "GET" and .path == "/echo"')
expect_eq "$(jqf .rule)" "graphql-not-query" "compressed body audited as not provably a query"
run pcurl -D "$T/h" -o "$T/b" -X GET -H 'Content-Type:' --data-binary @"$T/m.json" \
    "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 403 "untyped JSON body holding a mutation is blocked"
run pcurl -D "$T/h" -o "$T/b" -X GET -H 'Content-Type: text/plain' --data-binary 'hello' \
    "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 403 "a GET with a plain body that is not GraphQL is blocked"
OUT=$(audit_last '.event == "http" and .method == "GET" and .path == "/echo"')
expect_eq "$(jqf .rule)" "body-on-read-method" "a body on a GET audited as such"
expect_eq "$(origin_count 'select(.method == "GET" and .target == "/echo")')" "$before" \
    "no GET with a body reached the origin"

# --- CONNECT: a tunnel to an unlisted host on any port is intercepted, so
# plain HTTP sent inside it (curl -p) is cut and audited, never relayed ---
before=$(origin_count 'select(.target == "/hello")')
run pcurl -p -D "$T/h" -o "$T/b" "http://plain.test:$O/hello"
if [ "$RC" -ne 0 ]; then ok; else bad "plain HTTP inside a CONNECT to an unlisted host's port $O must be cut"; fi
expect_eq "$(status_of "$T/h")" 200 "the CONNECT itself is answered (the tunnel is intercepted)"
sleep 0.2
OUT=$(audit_last '.event == "connect" and .host == "plain.test"')
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .source):$(jqf .port)" "block:not-tls:builtin:$O" \
    "the cut tunnel is audited"
expect_contains "$(jqf .reason)" "plain HTTP" "and the reason says what the client sent"
expect_eq "$(origin_count 'select(.target == "/hello")')" "$before" "nothing reached the origin"
run "$POLICYCTL" explain --config "$P" --json --method CONNECT "plain.test:$O"
expect_eq "$(jqf .action):$(jqf .rule)" "allow:unlisted-host" "explain = proxy for the CONNECT itself"
# A client that opens the tunnel and sends nothing is cut after
# --header-timeout (2 s here), and the CONNECT is audited with why.
run timeout 20 python3 - "$EG_PORT" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
s.sendall(b"CONNECT silent.test:8443 HTTP/1.1\r\nHost: silent.test:8443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
t0 = time.time()
try:
    s.recv(4096)
except OSError:
    pass
print(head.split(b"\r\n")[0].decode(), round(time.time() - t0))
EOF
expect_eq "${OUT% *}" "HTTP/1.1 200 Connection established" "a silent client gets its tunnel"
secs=${OUT##* }
expect_eq "$([ "$secs" -ge 1 ] && [ "$secs" -le 6 ] && echo yes)" yes "and is cut after the header timeout (${secs} s)"
sleep 0.2
OUT=$(audit_last '.event == "connect" and .host == "silent.test"')
expect_eq "$(jqf .error)" "no TLS ClientHello in time" "the cut is audited with why"
run pcurl -p -D "$T/h" -o "$T/b" "http://127.0.0.1:$O/hello"
expect_eq "$(status_of "$T/h")" 200 "CONNECT to an allowlisted address opens a tunnel"
expect_eq "$(stat -c %s "$T/b")" 100 "the tunnel carries the exchange"
OUT=$(audit_last '.event == "connect" and .host == "127.0.0.1"')
expect_eq "$(jqf .action):$(jqf .status)" "allow:200" "tunnel audited with its status"

# --- upstream refused: 502 with the error audited ---
closed=$(free_port)
run pcurl -D "$T/h" -o "$T/b" "http://127.0.0.1:$closed/x"
expect_eq "$(status_of "$T/h")" 502 "refused upstream is 502"
OUT=$(audit_last ".event == \"http\" and .port == $closed")
expect_eq "$(jqf .status)" 502 "502 audited"
expect_eq "$(jqf '.error | length > 0')" true "502 audited with an error"

# --- silent upstream: 504 after --response-timeout 2 ---
t0=$(now_ms)
run pcurl -D "$T/h" -o "$T/b" "http://plain.test:$O/silent"
dt=$(($(now_ms) - t0))
expect_eq "$(status_of "$T/h")" 504 "silent upstream is 504"
expect_eq "$([ "$dt" -ge 1500 ] && [ "$dt" -le 8000 ] && echo yes)" yes "504 after about 2 s (took ${dt} ms)"
OUT=$(audit_last '.event == "http" and .path == "/silent"')
expect_eq "$(jqf .status):$(jqf '.error | length > 0')" "504:true" "504 audited with an error"

# --- slowloris: half a head, stalled or trickled, cut after --header-timeout 2 ---
run python3 "$RAW" stall "$A_PORT" --max 10 < <(printf 'GET http://plain.test:%s/hello HTTP/1.1\r\nHost: x\r\n' "$O")
expect_eq "$(jqf .closed)" true "stalled head: connection closed"
expect_eq "$(jqf '.seconds >= 1.5 and .seconds <= 5')" true "stalled head cut after ~2 s ($(jqf .seconds) s)"
run python3 "$RAW" stall "$A_PORT" --trickle 0.3 --max 10 < <(printf 'GET http://plain.test:%s/hello HTTP/1.1\r\nX-Long: ' "$O")
expect_eq "$(jqf .closed)" true "trickled head: connection closed"
expect_eq "$(jqf '.seconds >= 1.5 and .seconds <= 5')" true "trickling does not extend the head timeout ($(jqf .seconds) s)"

# --- flag mode: the violation is forwarded and audited as flag ---
FP="$T/flag.yaml"
write_policy "$FP" flag yes
EG_AUDIT="$T/flag.jsonl"
start_egressd --config "$FP" --upstream-dns "$ORIGIN_DNS" || exit 1
before=$(origin_count 'select(.method == "POST")')
run pcurl -D "$T/h" --data-binary 'flagged' "http://plain.test:$O/echo"
expect_eq "$(status_of "$T/h")" 200 "flag mode forwards the POST"
expect_eq "$(jqf .len)" 7 "flagged body reached the origin"
expect_eq "$(origin_count 'select(.method == "POST")')" "$((before + 1))" "origin got the flagged POST"
OUT=$(audit_last '.event == "http" and .method == "POST"')
expect_eq "$(jqf .action):$(jqf .rule):$(jqf .status)" "flag:method-not-allowed:200" "audited as flag"
stop_egressd
expect_eq "$EXIT_RC" 0 "flag-mode egressd exits 0"

# --- the private-address guard without the 127.0.0.1 entry ---
NP="$T/noloop.yaml"
write_policy "$NP" block no
EG_AUDIT="$T/noloop.jsonl"
start_egressd --config "$NP" --upstream-dns "$ORIGIN_DNS" || exit 1
before=$(origin_count 'select(.method)')
run pcurl -D "$T/h" -o "$T/b" "http://127.0.0.1:$O/hello"
expect_eq "$(status_of "$T/h")" 403 "127.0.0.1 blocked without the allowlist entry"
expect_eq "$(header_of "$T/h" X-Egress-Rule)" private-address "private-address rule"
run pcurl -D "$T/h" -o "$T/b" "http://plain.test:$O/hello"
expect_eq "$(status_of "$T/h")" 403 "a name resolving to 127.0.0.1 is blocked too"
expect_eq "$(header_of "$T/h" X-Egress-Rule)" private-address "guard applied to the resolved address"
expect_eq "$(origin_count 'select(.method)')" "$before" "guarded requests never reached the origin"
OUT=$(audit_last '.event == "http" and .host == "127.0.0.1"')
expect_eq "$(jqf .action):$(jqf .rule)" "block:private-address" "guard audited"
stop_egressd

# --- an oversize response head (last: it used to crash egressd): 502 ---
EG_PID=$A_PID EG_PORT=$A_PORT
# --- interim responses: a few are dropped, an endless stream is cut ---
run pcurl -D "$T/h" -o "$T/b" "http://plain.test:$O/interim?n=3"
expect_eq "$(status_of "$T/h")" 200 "interim responses before the final one are dropped"
expect_eq "$(cat "$T/b")" "final" "the final response arrives"
run pcurl -D "$T/h" -o "$T/b" "http://plain.test:$O/interim?n=100"
expect_eq "$(status_of "$T/h")" 502 "an upstream that only sends interim responses is cut"

run pcurl -D "$T/h" -o "$T/b" "http://plain.test:$O/bighead?n=100000"
expect_eq "$(status_of "$T/h")" 502 "oversize response head is 502"
expect_eq "$(kill -0 "$A_PID" 2>/dev/null && echo up)" up "egressd survives an oversize response head"

stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0 on SIGTERM"
expect_eq "$(jq -c . "$A_AUDIT" >/dev/null 2>&1 && echo ok)" ok "audit file is whole JSON lines"
finish
