#!/usr/bin/env bash
# WebSocket through egressd in practical mode, with a real client
# (wsclient.py) and origin (origin.py's /ws echo, which logs every frame it
# receives with its payload). Checks: an upgrade to a host the allowlist
# does not name is refused 403 (rule websocket; explain agrees), also with a
# subprotocol other than GraphQL; an allowlisted host is relayed untouched
# (fragments, binary frames and the extension offer reach the origin as
# sent); graphql-transport-ws and graphql-ws: connection_init, query and
# subscription operations reach the origin and are audited, a mutation gets
# close 4403 and never reaches the origin (audited block), as do a message
# of the other subprotocol, a binary message, JSON that is not a message,
# a persisted query without its document and a member the protocol does not
# define; a fragmented operation with a ping between its fragments goes up
# as one masked frame after the ping, without the extension offer;
# unreadable frames (unmasked, reserved bits, larger than maxGraphqlBody)
# close with 1002/1009 and are audited; a 101 that chooses no GraphQL
# subprotocol or an extension, and an upgrade with a body, are refused;
# onViolation: flag lets a plain WebSocket and a mutation through, flagged;
# and the same inside an intercepted wss:// connection.
# Needs root: the HTTPS origin listens on port 443 of a loopback address.
# shellcheck source=lib.sh
. "$SRC_DIR/tests/integration/lib.sh"
# shellcheck source=../lib/sh/pki.sh
. "$SRC_DIR/tests/lib/sh/pki.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "proxy_websocket needs root: its origin listens on port 443 of a loopback address" >&2
	exit 1
fi

ADDR="127.79.$((RANDOM % 250 + 1)).1"
pki_make ws-test-ca origin.test allowed.test || exit 1
start_origin --bind "$ADDR" --tls-cert "$T/origin.pem" --tls-key "$T/origin.key" \
    --tls-port 443 --tls-port-file "$T/origin.tls"
wait_file "$T/origin.tls" 10 || {
	echo "HTTPS origin did not start: $(cat "$T/origin.out")" >&2
	exit 1
}
OP=$ORIGIN_PORT

cat >"$T/policy.yaml" <<EOF
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.0/8", "allowed.test"]
  maxGraphqlBody: 4096
EOF
printf 'version: 1\nnetwork:\n  onViolation: flag\n' >"$T/flag.yaml"
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$T/testca.pem" --ca-out "$T/eg-ca.pem" || exit 1

# ws URL ARGS...: wsclient.py through egressd; its lines in OUT.
ws() {
	local url=$1
	shift
	run timeout 60 python3 "$SRC_DIR/tests/integration/wsclient.py" \
	    --proxy "127.0.0.1:$EG_PORT" --cafile "$T/eg-ca.pem" "$@" "$url"
}
# ws_conn: the origin's connection id of the last WebSocket upgrade it got.
ws_conn() {
	jq -rs '[.[] | select(.target? and (.target | startswith("/ws")))] | last | .conn // 0' \
	    "$ORIGIN_LOG"
}
# frames CID: the frames the origin got on that connection, one JSON line each.
frames() { jq -c --argjson c "$1" 'select(.conn == $c and .ws_frame != null)' "$ORIGIN_LOG"; }
# ws_audit N FILTER: the last N websocket audit events matching FILTER, as TSV.
ws_audit() {
	sleep 0.2
	jq -rs --argjson n "$1" "[.[] | select(.event == \"websocket\" and ($2))] | .[-\$n:][] |
	    [.action, .rule, (.graphql.operation // \"-\"), (.graphql.name // \"-\")] | @tsv" \
	    "$EG_AUDIT"
}
INIT='text:{"type":"connection_init","payload":{}}'
sub() { printf 'text:{"type":"subscribe","id":"%s","payload":{"query":"%s"}}' "$1" "$2"; }
start() { printf 'text:{"type":"start","id":"%s","payload":{"query":"%s"}}' "$1" "$2"; }

# --- an unlisted host: a plain WebSocket is a write channel ---
before=$(ws_conn)
ws "ws://origin.test:$OP/ws" --send text:hello
expect_eq "$(printf '%s' "$OUT" | head -n 1)" "status 403 websocket" "plain WebSocket to an unlisted host: 403 ($ERR)"
expect_eq "$(ws_conn)" "$before" "the upgrade never reached the origin"
sleep 0.2
expect_eq "$(audit_last '.event == "http" and .path == "/ws"' | jq -r '[.action, .rule, .status] | @tsv')" \
    "block	websocket	403" "audited: block, rule websocket"
printf 'GET http://origin.test:%s/ws HTTP/1.1\r\nHost: origin.test:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' \
    "$OP" "$OP" >"$T/plain.req"
run python3 "$SRC_DIR/tests/integration/rawhttp.py" send "$EG_PORT" --wait 5 <"$T/plain.req"
expect_contains "$(jqf '.responses[0].body')" "policyctl explain --header 'Upgrade: websocket' origin.test" \
    "the 403 names the explain command with the upgrade"
run "$POLICYCTL" explain --config "$T/policy.yaml" --json --header 'Upgrade: websocket' \
    "http://origin.test:$OP/ws"
expect_eq "$(jqf '[.action, .rule] | @tsv')" "block	websocket" "explain agrees"
ws "ws://origin.test:$OP/ws" --protocol chat --protocol graphql-ws --send text:hello
expect_eq "$(printf '%s' "$OUT" | head -n 1)" "status 403 websocket" \
    "a subprotocol besides the GraphQL ones: 403"
run "$POLICYCTL" explain --config "$T/policy.yaml" --json --header 'Upgrade: websocket' \
    --header 'Sec-WebSocket-Protocol: graphql-transport-ws' "http://origin.test:$OP/ws"
expect_eq "$(jqf '[.action, .rule] | @tsv')" "allow	websocket-graphql" "explain: GraphQL subprotocol allowed"
expect_contains "$(jqf '.notes[]')" "messages are inspected" "explain notes the inspection"

# --- an allowlisted host: relayed untouched ---
ws "ws://allowed.test:$OP/ws" --extensions permessage-deflate --send text:hello \
    --send 'frag:a|b|c' --send binary:xyz --send 'text:{"type":"subscribe","payload":{"query":"mutation { x }"}}'
expect_eq "$OUT" "status 101
protocol -
text hello
text abc
binary 78797a
text {\"type\":\"subscribe\",\"payload\":{\"query\":\"mutation { x }\"}}" "allowlisted host: every message echoed ($ERR)"
cid=$(ws_conn)
expect_eq "$(frames "$cid" | jq -r '"\(.ws_frame)/\(.fin)"' | tr '\n' ' ')" \
    "1/true 1/false 0/false 0/true 2/true 1/true " "the fragments reached the origin as sent"
expect_eq "$(jq -r --argjson c "$cid" 'select(.conn == $c and .target != null) | .headers[] |
    select(.[0] == "Sec-WebSocket-Extensions") | .[1]' "$ORIGIN_LOG")" permessage-deflate \
    "and the extension offer with them"
expect_eq "$(ws_audit 1 'true' | wc -l)" 0 "an allowlisted WebSocket has no message events"

# --- graphql-transport-ws: queries and subscriptions up, a mutation refused ---
ws "ws://origin.test:$OP/ws" --protocol graphql-transport-ws --extensions permessage-deflate \
    --send "$INIT" --send "$(sub 1 'query Q { a }')" --send "$(sub 2 'subscription S { b }')" \
    --send "$(sub 3 'mutation M { c }')" --send "$(sub 4 '{ d }')"
expect_eq "$OUT" "status 101
protocol graphql-transport-ws
text {\"type\":\"connection_init\",\"payload\":{}}
text {\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"query Q { a }\"}}
text {\"type\":\"subscribe\",\"id\":\"2\",\"payload\":{\"query\":\"subscription S { b }\"}}
close 4403 egressd: message refused (rule graphql-mutation)" \
    "graphql-transport-ws: init, query, subscription echoed; the mutation closed with 4403 ($ERR)"
cid=$(ws_conn)
expect_eq "$(frames "$cid" | wc -l)" 3 "the origin got three messages"
expect_eq "$(frames "$cid" | grep -c mutation)" 0 "and never the mutation"
expect_eq "$(frames "$cid" | jq -r '[.ws_frame, .fin, .masked, .rsv] | @tsv' | sort -u)" \
    "1	true	true	0" "each as one masked text frame"
expect_eq "$(jq -r --argjson c "$cid" 'select(.conn == $c and .target != null) | [.headers[][0]] |
    index("Sec-WebSocket-Extensions")' "$ORIGIN_LOG")" null "the extension offer was not sent up"
expect_eq "$(ws_audit 3 'true')" "allow	websocket-graphql	query	Q
allow	websocket-graphql	subscription	S
block	graphql-mutation	mutation	M" "each operation audited, the mutation as a block"
expect_eq "$(audit_last '.event == "http" and .path == "/ws"' | jq -r '[.action, .rule, .status] | @tsv')" \
    "allow	websocket-graphql	101" "the upgrade audited as allowed with inspection"

# --- graphql-ws (subscriptions-transport-ws) ---
ws "ws://origin.test:$OP/ws" --protocol graphql-ws --send "$INIT" \
    --send "$(start 1 '{ a }')" --send "$(start 2 'mutation { c }')"
expect_eq "$(printf '%s' "$OUT" | tail -n 2)" "text {\"type\":\"start\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\"}}
close 4403 egressd: message refused (rule graphql-mutation)" "graphql-ws: query up, mutation refused ($ERR)"
expect_eq "$(frames "$(ws_conn)" | grep -c mutation)" 0 "the origin never saw the mutation"
expect_eq "$(ws_audit 2 'true')" "allow	websocket-graphql	query	-
block	graphql-mutation	mutation	-" "graphql-ws operations audited"

# --- messages that are not provably reads ---
refused() { # refused LABEL PROTOCOL SPEC: the message closes with 4403 and never goes up
	ws "ws://origin.test:$OP/ws" --protocol "$2" --send "$INIT" --send "$3"
	expect_eq "$(printf '%s' "$OUT" | tail -n 1)" \
	    "close 4403 egressd: message refused (rule websocket-message)" "$1 ($ERR)"
	expect_eq "$(frames "$(ws_conn)" | wc -l)" 1 "$1: only connection_init reached the origin"
}
refused "graphql-ws: a graphql-transport-ws message" graphql-ws "$(sub 1 '{ a }')"
refused "a binary message" graphql-transport-ws binary:xyz
refused "JSON that is not a message" graphql-transport-ws 'text:{"type":"subscribe"'
refused "a persisted query without its document" graphql-transport-ws \
    'text:{"type":"subscribe","id":"1","payload":{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ab"}}}}'
refused "a member the protocol does not define" graphql-transport-ws \
    'text:{"type":"subscribe","id":"1","payload":{"query":"{ a }","Query":"mutation { b }"}}'
expect_eq "$(ws_audit 1 'true' | cut -f1,2)" "block	websocket-message" "refusals audited"

# --- a fragmented operation with a ping between the fragments ---
ws "ws://origin.test:$OP/ws" --protocol graphql-transport-ws \
    --send 'fragping:{"type":"subscribe","id":"1",|"payload":{"query":"{ a }"}|}'
expect_eq "$OUT" "status 101
protocol graphql-transport-ws
pong between
text {\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\"}}" \
    "a fragmented operation is held whole; the ping goes first ($ERR)"
expect_eq "$(frames "$(ws_conn)" | jq -r '"\(.ws_frame)/\(.fin)/\(.masked)"' | tr '\n' ' ')" \
    "9/true/true 1/true/true " "the origin got the ping, then the message as one frame"

# --- frames egressd cannot read ---
frame_error() { # frame_error LABEL SPEC CODE
	ws "ws://origin.test:$OP/ws" --protocol graphql-transport-ws --send "$2"
	expect_contains "$(printf '%s' "$OUT" | tail -n 1 | cut -c1-60)" "close $3 " "$1 ($ERR)"
	expect_eq "$(frames "$(ws_conn)" | wc -l)" 0 "$1: nothing reached the origin"
	expect_eq "$(ws_audit 1 'true' | cut -f1,2)" "block	websocket-frame" "$1: audited"
}
frame_error "an unmasked frame" 'unmasked:{"type":"ping"}' 1002
frame_error "a frame with a reserved bit" 'rsv:{"type":"ping"}' 1002
frame_error "a message larger than maxGraphqlBody" big:5000 1009

# --- the 101 must keep the frames readable ---
ws "ws://origin.test:$OP/ws?proto=none" --protocol graphql-ws --send "$INIT"
expect_eq "$(printf '%s' "$OUT" | head -n 1)" "status 502" "a 101 without a GraphQL subprotocol: 502"
ws "ws://origin.test:$OP/ws?ext=1" --protocol graphql-ws --send "$INIT"
expect_eq "$(printf '%s' "$OUT" | head -n 1)" "status 502" "a 101 with an extension: 502"
printf 'GET http://origin.test:%s/ws HTTP/1.1\r\nHost: origin.test:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-ws\r\nContent-Length: 5\r\n\r\nhello' \
    "$OP" "$OP" >"$T/body.req"
run python3 "$SRC_DIR/tests/integration/rawhttp.py" send "$EG_PORT" --wait 5 <"$T/body.req"
expect_eq "$(jqf '.responses[0].status')" 400 "an inspected upgrade with a body: 400"

# --- inside an intercepted wss:// connection ---
ws wss://origin.test/ws --send text:hello
expect_eq "$(printf '%s' "$OUT" | head -n 1)" "status 403 websocket" "wss: plain WebSocket refused ($ERR)"
ws wss://origin.test/ws --protocol graphql-transport-ws --send "$INIT" \
    --send "$(sub 1 'query Q { a }')" --send "$(sub 2 'mutation M { c }')"
expect_eq "$(printf '%s' "$OUT" | tail -n 2)" "text {\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"query Q { a }\"}}
close 4403 egressd: message refused (rule graphql-mutation)" "wss: query up, mutation refused ($ERR)"
cid=$(ws_conn)
expect_eq "$(jq -r --argjson c "$cid" 'select(.conn == $c and .target != null) | .tls' "$ORIGIN_LOG")" \
    true "over TLS to the origin"
expect_eq "$(frames "$cid" | grep -c mutation)" 0 "wss: the origin never saw the mutation"
sleep 0.2
expect_eq "$(jq -rs '[.[] | select(.event == "websocket")] | last | [.action, .rule, .scheme, .host] | @tsv' "$EG_AUDIT")" \
    "block	graphql-mutation	https	origin.test" "wss: the refusal audited with scheme https"
ws wss://allowed.test/ws --send 'frag:a|b'
expect_eq "$(printf '%s' "$OUT" | tail -n 1)" "text ab" "wss: an allowlisted host relayed untouched ($ERR)"
expect_eq "$(frames "$(ws_conn)" | wc -l)" 2 "wss: its fragments as sent"

# --- onViolation: flag lets violations through, flagged ---
stop_egressd
start_egressd --config "$T/policy.yaml" --config "$T/flag.yaml" --upstream-dns "$ORIGIN_DNS" \
    --upstream-ca "$T/testca.pem" --ca-out "$T/eg-ca.pem" || exit 1
ws "ws://origin.test:$OP/ws" --send text:hello
expect_eq "$OUT" "status 101
protocol -
text hello" "flag: a plain WebSocket goes through ($ERR)"
sleep 0.3
expect_eq "$(audit_last '.event == "http" and .path == "/ws"' | jq -r '[.action, .rule, .status] | @tsv')" \
    "flag	websocket	101" "flag: audited as flagged"
ws "ws://origin.test:$OP/ws" --protocol graphql-transport-ws --send "$(sub 1 'mutation M { c }')" \
    --send "$(sub 2 '{ a }')"
expect_eq "$(printf '%s' "$OUT" | tail -n 2)" "text {\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"mutation M { c }\"}}
text {\"type\":\"subscribe\",\"id\":\"2\",\"payload\":{\"query\":\"{ a }\"}}" "flag: the mutation goes through ($ERR)"
expect_eq "$(frames "$(ws_conn)" | grep -c mutation)" 1 "flag: the origin got it"
expect_eq "$(ws_audit 2 'true')" "flag	graphql-mutation	mutation	M
allow	websocket-graphql	query	-" "flag: the mutation audited as flagged"
frame_error "flag: an unmasked frame still closes" 'unmasked:{"type":"ping"}' 1002

kill -0 "$EG_PID" 2>/dev/null
expect_eq $? 0 "egressd is still running"
finish
