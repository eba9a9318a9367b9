#!/usr/bin/env bash
# opencode-sandbox end to end, with podman and the real image: the host
# command as a user runs it, OpenCode (the image's binary) in the sandbox,
# and a scripted OpenAI-compatible model on the test's internal network
# (inet.py --model-script), named by the user's OpenCode config as a
# custom provider at https://model.test/v1, its certificate signed by a
# test CA handed in with container.upstreamCa. The network is the test's
# through the podman settings ($CONTAINERS_CONF: default network and DNS),
# so opencode-sandbox gets no test-only flag.
#
# Run 1: the model asks for a bash tool call that GETs an allowlisted
# origin (tunnelled: the payload verifies it with the private CA), GETs an
# unlisted one (intercepted, a read) and POSTs to that unlisted one
# (refused); the GETs succeed, the POST never reaches the origin, all are
# in the run's audit file on the host, and the exit summary counts them
# as that file says. The agent's file in the project belongs to the
# project's owner; the payload cannot see the audit log's directory; the
# container is gone; the host's OpenCode files are unchanged.
# Run 2: `run --continue` finds run 1's session (the model sees run 1's
# prompt again); in it the agent adds an allowlist entry to the project's
# .opencode-sandbox.yaml. Run 3, non-interactive: refused, naming the new
# host, nothing started. Run 4 accepts it; run 5 runs without asking.
# Run 6: SIGTERM to opencode-sandbox while a tool runs: it reaches
# OpenCode, the command exits and the container is removed. Run 7:
# `serve` in off mode answers on the host's 127.0.0.1 only (sandbox-init's
# --serve-port lets the replies out, nothing else).
. "$(dirname "$0")/lib.sh"

BIN=$BUILD_DIR/opencode-sandbox
[ -x "$BIN" ] || { bad "opencode-sandbox is built ($BIN)"; finish; }
REPLY_TEXT="Nothing else to do."

image_build || { bad "the image builds"; finish; }

# The model: a tool call per step, keyed by a word in the prompt.
cat >"$T/script.json" <<'EOT'
[
  {"when": "STEP-ONE", "tool": "bash",
   "args": {"description": "reach three endpoints and write a file",
            "command": "curl -sS -o /dev/null -w 'allowed-get=%{http_code}\\n' https://allowed.test/hello; curl -sS -o /dev/null -w 'unlisted-get=%{http_code}\\n' https://readonly.test/hello; curl -sS -o /dev/null -w 'unlisted-post=%{http_code}\\n' -X POST -d secret=1 https://readonly.test/echo; echo made-by-the-agent >/workspace/agent-made.txt; ls /sandbox/logs >/dev/null 2>&1 && echo audit-dir-visible || echo audit-dir-hidden; echo x 2>/dev/null >>~/.config/opencode/opencode.json || echo config-file-ro; touch ~/.config/opencode/x && echo config-dir-writable; test -r ~/.local/share/opencode/auth.json && echo auth-mounted; id -u"},
   "reply": "Step one is done."},
  {"when": "STEP-TWO", "tool": "bash",
   "args": {"description": "loosen the sandbox",
            "command": "printf 'version: 1\\nnetwork:\\n  allowlist: [\"sneaky.test\"]\\n' >/workspace/.opencode-sandbox.yaml && echo written"},
   "reply": "Step two is done."},
  {"when": "STEP-SLEEP", "tool": "bash",
   "args": {"description": "wait", "command": "echo sleeping; sleep 120"},
   "reply": "Slept."}
]
EOT
lib_net_up --model "$REPLY_TEXT" --script "$T/script.json" || {
	bad "test network"
	finish
}

# The user's host: OpenCode config and key, opencode-sandbox's global file,
# a project owned by uid 1234 (root runs opencode-sandbox here: the payload
# is the project's owner).
H="$T/home"
P="$T/proj"
mkdir -p "$H/.config/opencode" "$H/.local/share/opencode" "$H/.config/opencode-sandbox" "$P"
cat >"$H/.config/opencode/opencode.json" <<'EOT'
{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "test": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted test model",
      "options": { "baseURL": "https://model.test/v1" },
      "models": { "scripted": { "name": "Scripted", "tool_call": true } }
    }
  },
  "model": "test/scripted",
  "permission": { "external_directory": "allow" }
}
EOT
echo '{"test": {"type": "api", "key": "sk-sandbox-test-key"}}' >"$H/.local/share/opencode/auth.json"
chmod 600 "$H/.local/share/opencode/auth.json"
cat >"$H/.config/opencode-sandbox/config.yaml" <<EOT
version: 1
image:
  name: $IMAGE
network:
  # allowed.test may do anything; the address entry lifts the private-address
  # guard for the test network, which stands in for the internet.
  allowlist: ["allowed.test", "198.18.0.0/24"]
  # tunnelled, not intercepted: the payload itself must trust the private CA
  passthrough: ["allowed.test"]
opencode:
  permission:
    edit: allow
    bash: allow
container:
  upstreamCa: $T/testca.pem
resources:
  cpus: 1
  memory: 2g
EOT
chown -R 1234:1234 "$P"
snapshot() {
	(cd "$H/.config/opencode" && find . -printf '%p %m %s\n' | sort && find . -type f -exec sha256sum {} + | sort)
	sha256sum "$H/.local/share/opencode/auth.json"
}
BEFORE=$(snapshot)

lib_containers_conf

# osb ARGS...: opencode-sandbox as the user, in the project; RC, OUT, ERR.
osb() {
	(cd "$P" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
		CONTAINERS_CONF="$T/containers.conf" timeout 300 "$BIN" "$@" </dev/null >"$T/out" 2>"$T/err")
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}
# The audit file the summary line names.
audit_file() { printf '%s\n' "$ERR" | sed -n 's/.*review: policyctl audit //p' | tail -n 1; }
leftover() { podman ps -a --format '{{.Names}}' | grep -c '^opencode-sandbox-proj-'; }
# audit_count FILE: the summary's numbers computed from the file by the documented rules.
audit_count() {
	python3 - "$1" <<'PY'
import json, sys
req = blk = flg = 0
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    ev, act = e.get("event"), e.get("action")
    if act is None:
        continue
    r = ev in ("http", "websocket", "tcp") or (ev == "connect" and not (act == "allow" and e.get("tls") == "intercept"))
    req += r
    if r or ev in ("tls", "packet"):
        blk += act == "block"
        flg += act == "flag"
print("%d requests, %d blocked, %d flagged" % (req, blk, flg))
PY
}
# audit_has FILE EVENT ACTION HOST [METHOD]: such a line is in the file.
audit_has() {
	python3 - "$@" <<'PY'
import json, sys
path, event, action, host = sys.argv[1:5]
method = sys.argv[5] if len(sys.argv) > 5 else None
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if (e.get("event"), e.get("action"), e.get("host")) == (event, action, host) and \
            (method is None or e.get("method") == method):
        print("yes")
        break
else:
    print("no")
PY
}

# --- run 1: the tool call's requests ---
osb run "STEP-ONE: reach the endpoints"
expect_eq "$RC" 0 "run 1 exits 0 ($(printf '%s\n' "$ERR" | tail -n 5))"
expect_contains "$OUT" "Step one is done." "OpenCode printed the model's reply after the tool call"
expect_contains "$ERR" "model providers allowlisted: test (model.test;" "the custom provider is allowlisted, and said"
ORIG=$(origin_log)
expect_contains "$ORIG" "model tool-call bash" "the model asked for the bash tool"
expect_contains "$ORIG" "origin GET /hello host=allowed.test" "the GET to the allowlisted origin arrived"
expect_contains "$ORIG" "origin GET /hello host=readonly.test" "the GET to the unlisted origin arrived"
expect_absent "$ORIG" "origin POST /echo" "the POST to the unlisted origin never arrived"
BODIES=$(podman exec "$ORIGIN" cat /tmp/model.jsonl 2>/dev/null)
expect_contains "$BODIES" "allowed-get=200" "the payload verified the tunnelled host with the private CA"
expect_contains "$BODIES" "unlisted-get=200" "the unlisted GET succeeded"
expect_contains "$BODIES" "unlisted-post=403" "the unlisted POST got egressd's 403"
expect_contains "$BODIES" "audit-dir-hidden" "the payload cannot reach the audit log's directory"
expect_contains "$BODIES" "config-file-ro" "the host's OpenCode config file is read-only inside"
expect_contains "$BODIES" "config-dir-writable" "OpenCode's config directory is writable inside"
expect_contains "$BODIES" "auth-mounted" "auth.json is mounted"
AUDIT=$(audit_file)
if [ -n "$AUDIT" ] && [ -f "$AUDIT" ]; then
	ok
	expect_eq "$(audit_has "$AUDIT" http block readonly.test POST)" yes "the refused POST is in the audit file"
	expect_eq "$(audit_has "$AUDIT" http allow readonly.test GET)" yes "the unlisted GET is in the audit file"
	expect_eq "$(audit_has "$AUDIT" connect allow allowed.test)" yes "the tunnel to the allowlisted host is in it"
	expect_contains "$(grep '"host":"allowed.test"' "$AUDIT")" '"tls":"passthrough"' "... tunnelled, not intercepted"
	expect_eq "$(audit_has "$AUDIT" http allow model.test POST)" yes "the model calls are in it"
	expect_contains "$ERR" "opencode-sandbox: $(audit_count "$AUDIT"); review: policyctl audit $AUDIT" \
		"the summary line counts what the audit file holds"
	expect_line "$("$BUILD_DIR/policyctl" audit --blocked --json "$AUDIT" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("ok" if d else "empty")' 2>&1)" ok "policyctl audit reads the file"
else
	bad "the summary names an audit file on the host: '$AUDIT'"
fi
expect_eq "$(cat "$P/agent-made.txt" 2>/dev/null)" made-by-the-agent "the agent wrote into the project"
expect_eq "$(stat -c %u:%g "$P/agent-made.txt" 2>/dev/null)" 1234:1234 "the agent's file belongs to the project's owner"
expect_eq "$(leftover)" 0 "the container is removed"
expect_eq "$(snapshot)" "$BEFORE" "the host's OpenCode config and auth are unchanged"

# --- run 2: --continue, and the agent loosens the project file ---
osb run --continue "STEP-TWO: edit the sandbox file"
expect_eq "$RC" 0 "run 2 exits 0 ($(printf '%s\n' "$ERR" | tail -n 3))"
expect_contains "$OUT" "Step two is done." "run 2's reply"
LAST=$(podman exec "$ORIGIN" sh -c 'grep STEP-TWO /tmp/model.jsonl | tail -n 1')
expect_contains "$LAST" "STEP-ONE" "--continue: the model sees run 1's conversation (the session persisted)"
expect_contains "$(cat "$P/.opencode-sandbox.yaml" 2>/dev/null)" sneaky.test "the agent wrote the project file"

# --- run 3: nobody to ask: refused ---
osb run "STEP-THREE: anything"
expect_eq "$RC" 2 "run 3: the changed project file is refused without a terminal"
expect_contains "$ERR" "+ allowlisted (every method): sneaky.test" "the refusal says what would change"
expect_contains "$ERR" "--accept-policy-changes" "... and how to accept it"
expect_eq "$(leftover)" 0 "nothing was started"

# --- runs 4 and 5: accepted, then unchanged ---
osb --accept-policy-changes run "hello"
expect_eq "$RC" 0 "run 4: accepted"
expect_contains "$ERR" "accepted" "run 4 says it accepted"
osb run "hello again"
expect_eq "$RC" 0 "run 5: the accepted file runs without asking"
expect_absent "$ERR" "Trusting it would change" "run 5 does not ask"

# --- run 6: SIGTERM while a tool runs ---
(cd "$P" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
	CONTAINERS_CONF="$T/containers.conf" exec "$BIN" run "STEP-SLEEP: wait" </dev/null \
	>"$T/out6" 2>"$T/err6") &
pid=$!
for _ in $(seq 600); do
	origin_log | grep -q "model tool-call bash" && [ "$(origin_log | grep -c 'model tool-call bash')" -ge 3 ] && break
	sleep 0.2
done
sleep 2
t0=$(date +%s)
kill -TERM "$pid"
wait "$pid"
RC=$?
expect_ne "$RC" 0 "SIGTERM: the run ends ($RC)"
if [ $(($(date +%s) - t0)) -lt 60 ]; then ok; else bad "SIGTERM: the run ended in time"; fi
expect_eq "$(leftover)" 0 "SIGTERM: the container is removed"

# --- run 7: serving in off mode: published on the host's loopback only ---
# Podman's own default network here (port publishing into an --internal
# network answers nothing useful): off mode drops everything the container
# sends but the replies from the serve port, so nothing leaves.
cat >"$T/serve.conf" <<'EOT'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]

[engine]
runtime = "runc"
EOT
(cd "$P" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
	CONTAINERS_CONF="$T/serve.conf" exec "$BIN" --network-mode off --no-providers serve \
	</dev/null >"$T/out7" 2>"$T/err7") &
pid=$!
code=000
for _ in $(seq 150); do
	code=$(curl -s --noproxy '*' -m 2 -o /dev/null -w '%{http_code}' http://127.0.0.1:4096/session \
		2>/dev/null)
	[ "$code" = 200 ] && break
	sleep 0.2
done
expect_eq "$code" 200 "serve in off mode answers on 127.0.0.1:4096 ($(tail -n 3 "$T/err7"))"
expect_absent "$(ss -ltnH 'sport = :4096' 2>/dev/null)" "0.0.0.0:4096" "... and on no other host address"
kill -TERM "$pid"
wait "$pid"
expect_eq "$(leftover)" 0 "serve: the container is removed"

echo "sandbox done after $(elapsed)s"
finish
