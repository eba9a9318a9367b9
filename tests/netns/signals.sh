#!/usr/bin/env bash
# sandbox-init as an init: CMD's exit status comes back unchanged, 128+N
# when CMD is killed by signal N; SIGTERM (and the other forwarded signals)
# sent to sandbox-init reach CMD's process group; orphans are reaped (no
# zombies); egressd is stopped when CMD ends. Also run as PID 1 of its own
# PID namespace, the way the image runs it.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
lib_policy practical

START=$(date +%s)
box_init -- /bin/sh -c 'exit 42'
expect_eq "$RC" 42 "exit status propagates"
expect_absent "$ERR" "did not stop in time" "egressd stops on SIGTERM when CMD ends"
if [ $(($(date +%s) - START)) -lt 10 ]; then ok; else bad "a run of a trivial CMD took 10 s or more"; fi
box_init -- /bin/sh -c 'kill -KILL $$'
expect_eq "$RC" 137 "killed by SIGKILL: 128+9"
box_init -- /nonexistent/cmd
expect_eq "$RC" 127 "command not found: 127"
expect_eq "$(pgrep -u "$EG_UID" -x egressd)" "" "egressd stopped after CMD ended"

# Forwarded signals: the payload reports each one it gets, then exits 7 on TERM.
cat >"$T/payload.sh" <<'EOT'
#!/bin/sh
for s in HUP USR1 USR2 WINCH; do trap "echo got-$s" $s; done
trap 'echo got-TERM; exit 7' TERM
touch "$MARK"
i=0
while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
echo no-term
EOT
chmod 755 "$T/payload.sh"
rm -f "$T/w/mark"
box_sig() {
	in_box timeout 60 "$SANDBOX_INIT" --egressd "$EGRESSD" --user "$BOX_UID" \
		--egress-user "$EG_UID" --run-dir "$T/run" --global-config "$T/policy.yaml" \
		--project-config none --trust-store none "$@" >"$T/out" 2>"$T/err" &
	INIT=$!
	for _ in $(seq 100); do [ -e "$T/w/mark" ] && break; sleep 0.1; done
}
box_sig -- env MARK="$T/w/mark" /bin/sh "$T/payload.sh"
SI=$(pgrep -P "$INIT" -x sandbox-init || pgrep -P "$(pgrep -P "$INIT" | head -1)" -x sandbox-init)
[ -n "$SI" ] || SI=$(pgrep -n -x sandbox-init)
for s in HUP USR1 USR2 WINCH; do
	kill -s $s "$SI"
	sleep 0.3
done
kill -TERM "$SI"
wait "$INIT"
RC=$?
OUT=$(cat "$T/out")
expect_eq "$RC" 7 "SIGTERM reached CMD, which exited 7"
for s in HUP USR1 USR2 WINCH TERM; do
	expect_contains "$OUT" "got-$s" "SIG$s forwarded to CMD"
done
expect_absent "$OUT" "no-term" "CMD did not run to its end"

# Orphans: a grandchild that exits after its parent is reaped by sandbox-init.
cat >"$T/orphans.sh" <<'EOT'
#!/bin/sh
( sh -c 'sleep 0.3' & ) # the subshell exits: sleep is orphaned
sleep 1
echo "zombies=$(ps -e -o stat=,ppid= | awk -v p="$PPID" '$1 ~ /^Z/ && $2 == p' | wc -l)"
EOT
chmod 755 "$T/orphans.sh"
box_init -- /bin/sh "$T/orphans.sh"
expect_eq "$RC" 0 "orphan payload exit status"
expect_contains "$OUT" "zombies=0" "orphans reaped: no zombie under sandbox-init"

# As PID 1 of a new PID namespace (the image's situation).
# shellcheck disable=SC2016 # the payload's shell expands it
in_box timeout 60 unshare --pid --fork --mount-proc "$SANDBOX_INIT" --egressd "$EGRESSD" \
	--user "$BOX_UID" --egress-user "$EG_UID" --run-dir "$T/run" \
	--global-config "$T/policy.yaml" --project-config none --trust-store none \
	--resolv-conf none -- /bin/sh -c 'echo "ppid=$PPID"; ( sh -c "sleep 0.2" & ); sleep 0.6;
	echo "zombies=$(ps -e -o stat= | grep -c ^Z)"; exit 5' >"$T/out" 2>"$T/err"
RC=$?
OUT=$(cat "$T/out")
expect_eq "$RC" 5 "as PID 1: exit status"
expect_contains "$OUT" "ppid=1" "as PID 1: sandbox-init is the payload's parent"
expect_contains "$OUT" "zombies=0" "as PID 1: no zombies"

finish
