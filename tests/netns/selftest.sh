#!/usr/bin/env bash
# sandbox-init --selftest in strict mode, against the test internet: every
# side-door probe reports "closed", the JSON form says the same, trust
# checks run through egressd with the run CA (rows for absent tools say
# "absent"), and in practical mode the selftest fails, naming the open doors.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
lib_policy strict
PROBES=(--probe-addr 198.18.0.1 --probe-addr6 2001:2::1 --probe-host sidedoor.test
	--probe-doh https://blocked.test/dns-query --probe-https https://allowed.test/)

box_init --mode strict --selftest "${PROBES[@]}"
row() { printf '%s\n' "$OUT" | awk -v p="$1" '$1 == p {print $2}'; }
for p in tcp-direct tcp-name udp quic dns-direct dns-over-tls dns-over-https ipv6 \
	nft-list nft-flush signal-egressd egressd-memory ca-key; do
	expect_eq "$(row $p)" closed "strict selftest: $p"
done
for t in curl python3 node git; do
	r=$(row trust-$t)
	if command -v $t >/dev/null; then
		expect_eq "$r" ok "strict selftest: trust through egressd with $t"
	else
		expect_eq "$r" absent "strict selftest: $t absent is reported as absent"
	fi
done
expect_eq "$RC" 0 "strict selftest passes (exit 0)"
expect_contains "$OUT" "every side door is closed" "the verdict line"
AUDIT=$(cat "$T/audit.jsonl")
expect_contains "$AUDIT" '"host":"blocked.test"' "the DoH attempt is in the audit"
# Every network side door the selftest knocked on left its trace: the
# ones egressd serves as its own events, the ones the rules drop as
# packet events, each with the payload's uid.
ev() { # ev JQ-CONDITION LABEL
	expect_ne "$(jq -c "select($1)" "$T/audit.jsonl" 2>/dev/null | head -1)" "" "$2"
}
ev '(.event == "http" or .event == "tcp") and .host == "198.18.0.1" and .port == 80 and .action == "block"' \
	"selftest tcp-direct: in the audit (transparent listener)"
ev '(.event == "http" or .event == "tcp") and .host == "2001:2::1" and .port == 80 and .action == "block"' \
	"selftest ipv6: in the audit (transparent listener)"
ev '.event == "dns" and .qname == "sidedoor.test"' \
	"selftest tcp-name and dns-direct: the name is in the audit (resolver)"
for door in "udp 7 udp" "udp 443 quic" "tcp 853 dns-over-tls"; do
	# shellcheck disable=SC2086 # split "PROTO PORT NAME" into $1 $2 $3
	set -- $door
	ev ".event == \"packet\" and .proto == \"$1\" and .port == $2 and .host == \"198.18.0.1\" and
		.uid == $BOX_UID and .rule == \"strict-drop\"" "selftest $3: the dropped packet is in the audit"
done

box_init --mode strict --selftest --json "${PROBES[@]}"
expect_eq "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["ok"], all(p["result"] in ("closed","ok","absent") for p in d["probes"]))')" \
	"True True" "--json: one object, every probe closed or ok"
in_box nft delete table inet opencode_sandbox

lib_policy practical
box_init --selftest "${PROBES[@]}"
expect_eq "$RC" 1 "practical selftest fails"
expect_eq "$(row tcp-direct)" OPEN "practical: direct TCP is open (it is a guardrail)"
expect_eq "$(row udp)" OPEN "practical: UDP is open"
expect_eq "$(row nft-flush)" closed "practical: the payload still cannot touch the rules"

finish
