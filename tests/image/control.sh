#!/usr/bin/env bash
# egressd's control socket in the image, used the way a user inside the
# sandbox uses it: a POST, and a GET to a host the baked policy blocks, are
# blocked with a 403, and the exact command each 403 names, run as the
# payload user, answers `blocked` with the proxy's rule, from the running
# egressd (not the embedded default, which allows that GET); `policyctl
# status` works for the payload; `policyctl reload` is refused to it; root
# in the container reloads (the payload sees the new generation). The
# socket is sandbox-init's in the root-owned run directory: the payload can
# connect to it but can neither remove it nor write beside it.
. "$(dirname "$0")/lib.sh"

image_build || { bad "the image builds"; finish; }
lib_net_up || { bad "test network"; finish; }
lib_policy practical

mkdir -p "$T/ws" "$T/state"
chmod 1777 "$T/ws"
cat >"$T/ws/payload.sh" <<'EOT'
# Runs as the payload; prints "LABEL VALUE" lines, waits for the host's reload.
echo "post-code $(curl -s -D /tmp/h -o /tmp/b -w '%{http_code}' --max-time 20 -X POST -d x https://readonly.test/hello)"
echo "post-rule $(tr -d '\r' </tmp/h | sed -n 's/^X-Egress-Rule: //p')"
cmd=$(sed -n 's/^To see why: //p' /tmp/b)
echo "hint $cmd"
printf x >/tmp/body
eval "${cmd//FILE//tmp/body}" >/tmp/explain 2>&1
echo "explain-rc $?"
echo "explain-first $(head -n 1 /tmp/explain)"
echo "explain-rule $(sed -n 's/^matched rule: \([^ ]*\) .*/\1/p' /tmp/explain)"
echo "explain-policy $(sed -n 's/^policy: //p' /tmp/explain)"
echo "explain-live $(policyctl explain --json readonly.test | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["policy_source"], o["resolved"]["status"])')"
# A GET the baked policy blocks and the embedded default would allow.
echo "blk-code $(curl -s -D /tmp/h2 -o /tmp/b2 -w '%{http_code}' --max-time 20 http://blocked.test/)"
echo "blk-rule $(tr -d '\r' </tmp/h2 | sed -n 's/^X-Egress-Rule: //p')"
cmd=$(sed -n 's/^To see why: //p' /tmp/b2)
echo "blk-hint $cmd"
eval "$cmd" >/tmp/explain2 2>&1
echo "blk-first $(head -n 1 /tmp/explain2)"
echo "blk-explain-rule $(sed -n 's/^matched rule: \([^ ]*\) .*/\1/p' /tmp/explain2)"
policyctl status >/tmp/status 2>&1
echo "status-rc $?"
echo "status-first $(head -n 1 /tmp/status)"
policyctl reload >/tmp/reload 2>&1
echo "reload-rc $?"
echo "reload-err $(tail -n 1 /tmp/reload)"
echo "sock $(stat -c '%a %U' /run/opencode-sandbox/egressd.sock)"
echo "rundir $(stat -c '%a %U' /run/opencode-sandbox)"
touch /run/opencode-sandbox/x 2>/dev/null && echo "rundir-write yes" || echo "rundir-write no"
rm -f /run/opencode-sandbox/egressd.sock 2>/dev/null
[ -S /run/opencode-sandbox/egressd.sock ] && echo "sock-kept yes" || echo "sock-kept no"
echo ready >/workspace/ready
for _ in $(seq 600); do [ -e /workspace/done ] && break; sleep 0.2; done
echo "gen-after $(policyctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["policy"]["generation"])')"
EOT
chmod 644 "$T/ws/payload.sh"

C="osb-control-$ID"
LIB_CONTAINERS="$LIB_CONTAINERS $C"
timeout 120 podman run -d --name "$C" --network "$NET" --dns 198.18.0.1 \
	-v "$T/ws:/workspace" -v "$T/state:/sandbox/logs" \
	-v "$T/policy.yaml:/etc/opencode-sandbox/policy.yaml:ro" \
	-v "$T/testca.pem:/etc/opencode-sandbox/test-upstream-ca.pem:ro" \
	--entrypoint sandbox-init "$IMAGE" \
	--egressd-arg=--upstream-ca=/etc/opencode-sandbox/test-upstream-ca.pem \
	-- bash /workspace/payload.sh >"$T/run.log" 2>&1 || bad "the container starts: $(cat "$T/run.log")"
for _ in $(seq 600); do
	[ -e "$T/ws/ready" ] && break
	podman container exists "$C" || break
	sleep 0.2
done
expect_eq "$(cat "$T/ws/ready" 2>/dev/null)" ready "the payload got through its checks"

# Root in the container may reload.
ROOT_OUT=$(podman exec -u 0 "$C" policyctl reload 2>"$T/reload.err")
expect_eq "$?" 0 "policyctl reload as root ($(cat "$T/reload.err"))"
expect_eq "$ROOT_OUT" "policy reloaded: generation 2, mode practical" "root's reload loads"
touch "$T/ws/done"
timeout 60 podman wait "$C" >/dev/null 2>&1
OUT=$(podman logs "$C" 2>/dev/null)
ERR=$(podman logs "$C" 2>&1 >/dev/null)

expect_eq "$(row post-code)" 403 "the payload's POST is blocked"
expect_eq "$(row post-rule)" method-not-allowed "with its rule"
expect_contains "$(rest hint)" "policyctl explain --method POST" "the 403 names the command"
expect_absent "$(rest hint)" "--config" "a command that needs no files in the image"
expect_eq "$(row explain-rc)" 0 "the 403's command runs as the payload"
expect_eq "$(rest explain-first)" "blocked: readonly.test" "and answers blocked"
expect_eq "$(row explain-rule)" "$(row post-rule)" "with the proxy's rule"
expect_contains "$(rest explain-policy)" "the running egressd" "from the running egressd"
expect_contains "$(rest explain-policy)" "/etc/opencode-sandbox/policy.yaml" \
	"whose files it names"
expect_eq "$(rest explain-live)" "egressd ok" "live explain resolves the name through egressd"
expect_eq "$(row blk-code)" 403 "a GET to the baked blocklist is blocked"
expect_eq "$(rest blk-hint)" "policyctl explain blocked.test" "its 403 names the plain command"
expect_eq "$(rest blk-first)" "blocked: blocked.test" \
	"which answers blocked, as the proxy did (the embedded default would allow it)"
expect_eq "$(row blk-explain-rule)" "$(row blk-rule)" "with the proxy's rule"
expect_eq "$(row status-rc)" 0 "policyctl status works for the payload"
expect_contains "$(rest status-first)" "mode practical" "status shows the mode"
expect_eq "$(row reload-rc)" 1 "policyctl reload is refused to the payload"
expect_contains "$(rest reload-err)" "forbidden: reload is allowed only to root and to egressd's own user" \
	"the refusal says who may"
expect_eq "$(rest sock)" "666 root" "the socket is root's, open for connecting"
expect_eq "$(rest rundir)" "755 root" "the run directory is root's"
expect_eq "$(row rundir-write)" no "the payload cannot write the run directory"
expect_eq "$(row sock-kept)" yes "the payload cannot remove the socket"
expect_eq "$(row gen-after)" 2 "the payload sees root's reload"
[ "$(row gen-after)" = 2 ] || printf '%s\n' "$ERR" | tail -n 20 >&2
finish
