#!/usr/bin/env bash
# The workspace's project file under sandbox-init: the payload can edit it
# between runs, so sandbox-init hands it to egressd as --project-config and
# only what tightens is taken. A project file that tries to loosen a strict
# global policy (allowlist and passthrough entries, inheritGlobal: false, a
# looser mode, onViolation: flag, failClosed: false, blockDohProviders:
# false, audit.path) changes nothing the payload can use: the host it
# allowlists stays unreachable, HTTPS to an allowlisted host is still
# intercepted, and each ignored key is a warning on stderr and a `policy`
# audit event with its line. A project file that tightens (mode off over a
# practical global policy, a blocklist entry) is taken.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
lib_policy strict
P="$T/project.yaml"
cat >"$P" <<EOT
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["open.test"]
  passthrough: ["allowed.test"]
  onViolation: flag
  failClosed: false
  blockDohProviders: false
audit:
  path: $T/w/payload-audit.jsonl
EOT
chmod 666 "$P" # the payload's to write, as in a workspace

cat >"$T/payload.sh" <<'EOT'
#!/bin/sh
r() { printf '%s=%s\n' "$1" "$2"; }
r mode "$OPENCODE_SANDBOX_MODE"
r open_proxy "$(curl -s -o /dev/null -w "%{http_code}" --max-time 8 http://open.test/)"
r open_direct "$(curl -s --noproxy '*' --max-time 8 http://open.test/ || echo fail)"
r allowed "$(curl -s --max-time 8 http://allowed.test/ || echo fail)"
r https_allowed "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' https://allowed.test/ || true)"
EGPID=$(pgrep -u "$EG_UID" -x egressd | head -1)
r cmdline "$(tr '\0' ' ' </proc/$EGPID/cmdline)"
exit 0
EOT
chmod 755 "$T/payload.sh"
get() { printf '%s\n' "$OUT" | sed -n "s/^$1=//p" | head -1; }

box_init --project-config "$P" -- env EG_UID="$EG_UID" /bin/sh "$T/payload.sh"
expect_eq "$RC" 0 "payload exit status"
expect_eq "$(get mode)" strict "the project file cannot loosen strict"
expect_eq "$(get open_proxy)" 403 "a host only the project file allowlists: refused by the proxy"
expect_absent "$(get open_direct)" internet-origin "and not reachable through the transparent listener"
expect_eq "$(get allowed)" internet-origin "the trusted allowlist still works"
if egressd_has --ca-out; then
	expect_eq "$(get https_allowed)" 200 "allowed HTTPS with the run CA"
	expect_eq "$(jq -r 'select(.event == "connect" and .host == "allowed.test") | .tls' "$T/audit.jsonl" | head -1)" \
		intercept "passthrough from the project file is ignored: HTTPS is still intercepted"
fi
expect_contains "$(get cmdline)" "--project-config $P " "egressd gets the project file as --project-config"
expect_absent "$(get cmdline)" "--config $P " "never as a trusted --config"
for kl in network.mode:3 network.inheritGlobal:4 network.allowlist:5 network.passthrough:6 \
	network.onViolation:7 network.failClosed:8 network.blockDohProviders:9 audit.path:11; do
	k=${kl%:*} l=${kl#*:}
	expect_contains "$ERR" "warning: $P:$l:3: $k is ignored" "stderr warns of $k"
	expect_eq "$(jq -c --arg k "$k" --arg s "$P:$l" \
		'select(.event == "policy" and .rule == "project-file" and .source == $s and
			(.reason | startswith($k + " is ignored")))' "$T/audit.jsonl" | wc -l)" 1 \
		"a policy audit event names $k at line $l"
done
if [ -e "$T/w/payload-audit.jsonl" ]; then bad "the project file chose the audit path"; else ok; fi
expect_absent "$(cat "$T/inet.log")" "open.test" "nothing reached the internet for open.test"

# Tightening is taken: mode off over a practical global policy.
in_box nft delete table inet opencode_sandbox 2>/dev/null
lib_policy practical
printf 'version: 1\nnetwork:\n  mode: "off"\n  blocklist: ["more.test"]\n' >"$P"
# shellcheck disable=SC2016 # the payload's shell expands it
box_init --project-config "$P" -- /bin/sh -c 'echo "mode=$OPENCODE_SANDBOX_MODE"; curl -s -o /dev/null -w "allowed=%{http_code}\n" --max-time 8 http://allowed.test/'
expect_eq "$(get mode)" off "the project file may tighten practical to off"
expect_eq "$(get allowed)" 403 "off: the proxy refuses"
expect_contains "$(in_box nft list table inet opencode_sandbox 2>&1)" 'comment "off: no network"' \
	"off mode's rules are in force"
expect_eq "$(jq -c 'select(.event == "policy" and .rule == "project-file")' "$T/audit.jsonl" | wc -l)" 8 \
	"nothing ignored from a tightening file (the 8 events are the first run's)"
in_box nft delete table inet opencode_sandbox 2>/dev/null

finish
