#!/usr/bin/env bash
# What sandbox-init hands on, and what it does not. Descriptors: a
# root-only file left open on fds 7 and 70 by whoever started sandbox-init
# reaches neither the payload (it cannot read fd 7, /proc/self/fd/7 does not
# exist) nor egressd (none of its fds is that file). The audit log: with no
# audit.path in a trusted file it never goes to the payload's terminal, but
# to --log-dir when that exists, else to RUN_DIR/logs (egressd's alone,
# 0700/0600), and sandbox-init says where once. The environment: the
# payload gets OPENCODE_SANDBOX_NETWORK_MODE with the mode in force, and
# egressd's lines to paste are not printed (sandbox-init set all of it).
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }

# --- descriptors ---
lib_policy strict
printf 'top-secret\n' >"$T/secret"
chmod 600 "$T/secret"
cat >"$T/fds.sh" <<'EOT'
#!/bin/sh
r() { printf '%s=%s\n' "$1" "$2"; }
r fd7 "$(cat <&7 2>/dev/null || echo closed)"
r fd70 "$(bash -c 'cat <&70' 2>/dev/null || echo closed)"
r procfd7 "$(cat /proc/self/fd/7 2>/dev/null || echo closed)"
r secret_links "$(for f in /proc/$$/fd/*; do readlink "$f"; done | grep -c secret)"
touch "$MARK"
i=0
while [ ! -e "$MARK.seen" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
EOT
chmod 755 "$T/fds.sh"
(
	for _ in $(seq 200); do [ -e "$T/w/mark" ] && break; sleep 0.1; done
	pid=$(pgrep -u "$EG_UID" -x egressd | head -1)
	for f in "/proc/$pid/fd"/*; do readlink "$f"; done >"$T/egressd-fds"
	touch "$T/w/mark.seen"
) &
CHECKER=$!
box_init --mode strict -- env MARK="$T/w/mark" /bin/sh "$T/fds.sh" 7<"$T/secret" 70<"$T/secret"
wait "$CHECKER"
get() { printf '%s\n' "$OUT" | sed -n "s/^$1=//p" | head -1; }
expect_eq "$RC" 0 "payload exit status"
expect_eq "$(get fd7)" closed "the payload cannot read the inherited fd 7"
expect_eq "$(get fd70)" closed "nor fd 70"
expect_eq "$(get procfd7)" closed "/proc/self/fd/7 is not the inherited file"
expect_eq "$(get secret_links)" 0 "no fd of the payload is the file"
expect_ne "$(cat "$T/egressd-fds")" "" "egressd's descriptors were read"
expect_absent "$(cat "$T/egressd-fds")" "$T/secret" "no fd of egressd is the inherited file"
expect_absent "$(cat "$T/egressd-fds")" "$T/policy.yaml" "nor a configuration file"
expect_absent "$ERR" "paste" "strict: egressd prints no lines to paste under sandbox-init"
in_box nft delete table inet opencode_sandbox 2>/dev/null

# --- the audit log's place, the environment, no lines to paste ---
cat >"$T/noaudit.yaml" <<EOT
version: 1
network:
  mode: practical
  allowlist: ["allowed.test"]
EOT
chmod 644 "$T/noaudit.yaml"
mkdir -m 755 "$T/logs"
# shellcheck disable=SC2016 # the payload's shell expands it
PAYLOAD='echo "netmode=$OPENCODE_SANDBOX_NETWORK_MODE"; curl -s -o /dev/null --max-time 8 http://allowed.test/'
box_init --global-config "$T/noaudit.yaml" --log-dir "$T/logs" -- /bin/sh -c "$PAYLOAD"
expect_eq "$RC" 0 "practical run without audit.path"
expect_eq "$(get netmode)" practical "OPENCODE_SANDBOX_NETWORK_MODE is the mode in force"
expect_absent "$OUT" '"event"' "no audit line on the payload's output"
expect_contains "$ERR" "the audit log is $T/logs/audit-events.jsonl" "sandbox-init says where the audit log is"
expect_eq "$(printf '%s\n' "$ERR" | grep -c 'the audit log is')" 1 "once"
expect_contains "$(cat "$T/logs/audit-events.jsonl" 2>/dev/null)" '"host":"allowed.test"' \
	"the audit log is in --log-dir"
expect_eq "$(stat -c '%a %u' "$T/logs/audit-events.jsonl" 2>/dev/null)" "600 $EG_UID" \
	"the audit file is egressd's, mode 0600"
expect_absent "$ERR" "paste" "egressd prints no lines to paste under sandbox-init"
expect_absent "$ERR" "export HTTP_PROXY" "nor the proxy variables"

# No --log-dir: a folder of the run dir, egressd's alone; the payload can neither read nor write it.
cat >"$T/peek.sh" <<EOT
#!/bin/sh
echo "netmode=\$OPENCODE_SANDBOX_NETWORK_MODE"
echo "read=\$(cat "$T/run/logs/audit-events.jsonl" >/dev/null 2>&1 && echo open || echo refused)"
echo "write=\$( (echo x >>"$T/run/logs/audit-events.jsonl") 2>/dev/null && echo open || echo refused)"
echo "create=\$( (echo x >"$T/run/logs/other") 2>/dev/null && echo open || echo refused)"
EOT
chmod 755 "$T/peek.sh"
box_init --global-config "$T/noaudit.yaml" --log-dir "$T/missing" --mode strict -- /bin/sh "$T/peek.sh"
expect_eq "$RC" 0 "strict run without audit.path or a log dir"
expect_eq "$(get netmode)" strict "OPENCODE_SANDBOX_NETWORK_MODE follows --mode"
expect_contains "$ERR" "the audit log is $T/run/logs/audit-events.jsonl" "the run dir's log folder, said on stderr"
expect_eq "$(stat -c '%a %u' "$T/run/logs" 2>/dev/null)" "700 $EG_UID" "the log folder is egressd's, mode 0700"
expect_eq "$(stat -c '%a %u' "$T/run/logs/audit-events.jsonl" 2>/dev/null)" "600 $EG_UID" \
	"the audit file is egressd's, mode 0600"
expect_contains "$(cat "$T/run/logs/audit-events.jsonl" 2>/dev/null)" '"reason":"stopped"' \
	"egressd wrote and closed its log there"
expect_eq "$(get read)" refused "the payload cannot read the audit log"
expect_eq "$(get write)" refused "the payload cannot append to the audit log"
expect_eq "$(get create)" refused "the payload cannot create files in the log folder"
expect_absent "$OUT" '"event"' "no audit line on the payload's output"
in_box nft delete table inet opencode_sandbox 2>/dev/null

finish
