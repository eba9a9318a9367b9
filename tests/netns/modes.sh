#!/usr/bin/env bash
# Off and practical modes, end to end in a sandbox namespace. Off: nothing
# leaves, neither through the proxy (its policy blocks all) nor around it,
# and the rules are in place. Practical: no rules at all; the proxy
# variables lead through egressd (allowed host works, blocked host 403),
# and, as the documentation says, a program ignoring them still gets out.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }

cat >"$T/payload.sh" <<'EOT'
#!/bin/sh
r() { printf '%s=%s\n' "$1" "$2"; }
r allowed "$(curl -s --max-time 8 http://allowed.test/ || echo fail)"
r blocked "$(curl -s -o /dev/null -w '%{http_code}' --max-time 8 http://blocked.test/)"
r direct "$(curl -s --noproxy '*' --max-time 4 http://198.18.0.1/ || echo fail)"
r udp "$(python3 -c '
import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(b"x", ("198.18.0.1", 7)); print(s.recv(64).decode())
except OSError as e: print("fail", e.__class__.__name__)')"
r flood "$(python3 -c '
import socket, time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); n=0; t=time.time()
for i in range(3000):
    try: s.sendto(b"f", ("198.18.0.1", 9))
    except OSError: n+=1
print(n, round(time.time()-t, 2))')"
r mode "$OPENCODE_SANDBOX_MODE"
exit 0
EOT
chmod 755 "$T/payload.sh"
get() { printf '%s\n' "$OUT" | sed -n "s/^$1=//p" | head -1; }

# off
lib_policy off
: >"$T/inet.log.before"
box_init -- /bin/sh "$T/payload.sh"
expect_eq "$RC" 0 "off: payload exit status"
expect_eq "$(get mode)" off "off: mode from the global configuration"
expect_absent "$(get allowed)" "internet-origin" "off: allowed host unreachable through the proxy"
expect_eq "$(get blocked)" 403 "off: the proxy refuses"
expect_absent "$(get direct)" "internet-origin" "off: direct TCP does not leave"
expect_contains "$(get udp)" fail "off: UDP does not leave"
INET=$(cat "$T/inet.log")
expect_absent "$INET" "http " "off: no HTTP request reached the internet"
expect_absent "$INET" "udp " "off: no datagram reached the internet"
TABLE=$(in_box nft list table inet opencode_sandbox 2>&1)
expect_contains "$TABLE" 'comment "off: no network"' "off: the off table is in force"
expect_eq "$(printf '%s\n' "$TABLE" | grep -c 'skuid [0-9]* accept')" 0 \
	"off: no uid may leave, egressd's included"
# The drops are audited, and a flood of them is bounded by the rule's limit.
offpkt() { # offpkt PROTO PORT: how many packet events match
	jq -c --arg p "$1" --argjson port "$2" --argjson uid "$BOX_UID" \
		'select(.event == "packet" and .proto == $p and .port == $port and .uid == $uid and
			.rule == "off-drop" and .mode == "off" and .action == "block")' \
		"$T/audit.jsonl" 2>/dev/null | wc -l
}
expect_ne "$(offpkt udp 7)" 0 "off: the UDP attempt is in the audit"
expect_ne "$(offpkt tcp 80)" 0 "off: the direct TCP attempt is in the audit"
FLOOD=$(offpkt udp 9)
expect_eq "$(get flood | cut -d' ' -f1)" 3000 "off: every datagram of a flood is refused (EPERM)"
if [ "$FLOOD" -ge 20 ] && [ "$FLOOD" -le 150 ]; then ok; else
	bad "off: a flood of 3000 drops gives 20..150 audit events (limit 20/s, burst 50): $FLOOD"
fi
expect_contains "$(tail -1 "$T/audit.jsonl")" '"reason":"stopped"' \
	"off: egressd flushed its audit and stopped cleanly after the flood"

# practical (the off table from before is removed by nothing: start clean)
in_box nft delete table inet opencode_sandbox
lib_policy practical
box_init -- /bin/sh "$T/payload.sh"
expect_eq "$RC" 0 "practical: payload exit status"
expect_eq "$(get mode)" practical "practical: mode"
expect_eq "$(get allowed)" "internet-origin" "practical: allowed host through the proxy"
expect_eq "$(get blocked)" 403 "practical: blocked host refused by the proxy"
expect_eq "$(get direct)" "internet-origin" "practical: a proxy-ignoring client still gets out (documented)"
TABLE=$(in_box nft list ruleset 2>&1)
expect_absent "$TABLE" "opencode_sandbox" "practical: no rules installed"

# --mode on the command line wins over the configuration; a project file may
# tighten the mode but not loosen it.
lib_policy strict
cat >"$T/project.yaml" <<'EOT'
version: 1
network:
  mode: practical
EOT
chmod 644 "$T/project.yaml"
# shellcheck disable=SC2016 # the payload's shell expands it
in_box timeout 60 "$SANDBOX_INIT" --egressd "$EGRESSD" --user "$BOX_UID" \
	--egress-user "$EG_UID" --run-dir "$T/run" --global-config "$T/policy.yaml" \
	--project-config "$T/project.yaml" --trust-store none -- /bin/sh -c 'echo "$OPENCODE_SANDBOX_MODE"' \
	>"$T/out" 2>"$T/err"
expect_eq "$(cat "$T/out")" strict "a project file cannot loosen strict to practical"
expect_contains "$(cat "$T/err")" "$T/project.yaml:3:3: network.mode is ignored" "and says so"
in_box nft delete table inet opencode_sandbox

finish
