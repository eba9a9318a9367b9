#!/usr/bin/env bash
# Fail closed: when the mode cannot be enforced or egressd cannot be made
# ready, the command never runs and sandbox-init exits non-zero with a
# message that names what is missing and how to run practical mode. Without
# CAP_NET_ADMIN, practical mode (which needs no rules) still runs.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
lib_policy strict
MARK="$T/w/cmd-ran"

# No CAP_NET_ADMIN: removed from the bounding set before exec.
nocap() { in_box setpriv --bounding-set -net_admin --inh-caps -net_admin "$@"; }
for mode in strict off; do
	rm -f "$MARK"
	nocap timeout 60 "$SANDBOX_INIT" --egressd "$EGRESSD" --user "$BOX_UID" \
		--egress-user "$EG_UID" --run-dir "$T/run" --global-config "$T/policy.yaml" \
		--project-config none --mode $mode -- /bin/touch "$MARK" >"$T/out" 2>"$T/err"
	RC=$?
	ERR=$(cat "$T/err")
	expect_eq "$RC" 125 "$mode without CAP_NET_ADMIN: exit 125"
	expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" not-run "$mode without CAP_NET_ADMIN: CMD never ran"
	expect_contains "$ERR" "CAP_NET_ADMIN is missing" "$mode: the message names what is missing"
	expect_contains "$ERR" "--mode practical" "$mode: the message says how to run practical mode"
	expect_eq "$(pgrep -u "$EG_UID" -x egressd)" "" "$mode: egressd stopped after the refusal"
done
expect_absent "$(in_box nft list ruleset 2>&1)" opencode_sandbox "no table left by the refusals"

rm -f "$MARK"
nocap timeout 60 "$SANDBOX_INIT" --egressd "$EGRESSD" --user "$BOX_UID" \
	--egress-user "$EG_UID" --run-dir "$T/run" --global-config "$T/policy.yaml" \
	--project-config none --mode practical -- /bin/touch "$MARK" >"$T/out" 2>"$T/err"
expect_eq "$?" 0 "practical needs no CAP_NET_ADMIN"
expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" ran "practical: CMD ran"

# egressd never ready: it exits at once (/bin/false), or never says READY.
rm -f "$MARK"
box_init --egressd /bin/false -- /bin/touch "$MARK"
expect_eq "$RC" 125 "egressd exits before ready: exit 125"
expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" not-run "egressd not ready: CMD never ran"
expect_contains "$ERR" "before it was ready" "the message says egressd was not ready"
printf '#!/bin/sh\nexec sleep 30\n' >"$T/mute-egressd"
chmod 755 "$T/mute-egressd"
box_init --egressd "$T/mute-egressd" --ready-timeout 1 -- /bin/touch "$MARK"
expect_eq "$RC" 125 "egressd silent: exit 125"
expect_contains "$ERR" "not ready within 1000 ms" "the message gives the timeout"
expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" not-run "egressd silent: CMD never ran"

# A configuration error: exit 2, FILE:LINE:COL, nothing started.
printf 'version: 1\nnetwork:\n  mode: sideways\n' >"$T/bad.yaml"
chmod 644 "$T/bad.yaml"
box_init --config "$T/bad.yaml" -- /bin/touch "$MARK"
expect_eq "$RC" 2 "configuration error: exit 2"
expect_contains "$ERR" "$T/bad.yaml:3:" "configuration error: FILE:LINE:COL"
expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" not-run "configuration error: CMD never ran"

# The payload may not be egressd's user (its traffic would be let out), nor root.
box_init --user "$EG_UID" -- /bin/touch "$MARK"
expect_eq "$RC" 125 "payload as egressd's user is refused"
box_init --user 0 -- /bin/touch "$MARK"
expect_eq "$RC" 125 "payload as root is refused"
expect_eq "$([ -e "$MARK" ] && echo ran || echo not-run)" not-run "refused users: CMD never ran"

finish
