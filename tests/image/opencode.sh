#!/usr/bin/env bash
# OpenCode itself, end to end, as a user runs it: scripts/sandbox with a
# host home holding an OpenCode config (a custom OpenAI-compatible provider
# at https://model.test/v1, an agent folder) and the provider's key in
# auth.json, mounted the way scripts/sandbox and docs/image.md do, and a
# global policy that allowlists the provider's host as a custom provider
# profile would. The "internet" is the test network, where model.test is a
# scripted streaming model API (tests/lib/py/inet.py --model-reply) behind
# HTTPS with the test CA, which stands in for the image's system store, so
# egressd verifies it as it would a real provider. `opencode run` must
# print the scripted reply; the model API must have seen the streamed chat
# request with the key from auth.json, through egressd (the audit log has
# the allowed POST); the host's config must be byte for byte as before.
# Then the same run without the allowlist: OpenCode stops at once with
# egressd's 403, and no POST reaches the model.
. "$(dirname "$0")/lib.sh"

REPLY_TEXT="The sandbox answer is 42, streamed by the scripted model."
image_build || { bad "the image builds"; finish; }
lib_net_up --model "$REPLY_TEXT" || { bad "test network"; finish; }

# The user's host: config, credentials, a project. Files belong to uid 1000,
# the payload's uid, as on a host whose user is uid 1000; auth.json is 0600
# as OpenCode writes it.
H="$T/home"
CFG="$H/.config/opencode"
mkdir -p "$CFG/agent" "$H/.local/share/opencode" "$T/proj" "$T/state"
cat >"$CFG/opencode.json" <<'EOT'
{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "test": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted test model",
      "options": { "baseURL": "https://model.test/v1" },
      "models": { "scripted": { "name": "Scripted" } }
    }
  },
  "model": "test/scripted"
}
EOT
printf -- '---\ndescription: Reviews changes\n---\nYou review changes.\n' >"$CFG/agent/reviewer.md"
echo '{"test": {"type": "api", "key": "sk-sandbox-test-key"}}' >"$H/.local/share/opencode/auth.json"
chmod 600 "$H/.local/share/opencode/auth.json"
chown -R 1000:1000 "$H" "$T/proj"

# A global policy with the provider's host allowlisted (what a provider
# profile does for the built-in providers).
cat >"$T/model-policy.yaml" <<'EOT'
version: 1
network:
  mode: practical
  allowlist: ["model.test"]
  failClosed: true
audit:
  path: /sandbox/logs/audit-events.jsonl
EOT
chmod 644 "$T/model-policy.yaml"

# Every name, mode, owner, size and hash under the host's OpenCode dirs.
snapshot() {
	(cd "$H" && find . -printf '%p %y %m %U:%G %s %T@\n' | sort &&
		find . -type f -exec sha256sum {} + | sort)
}
BEFORE=$(snapshot)

N=0
# sandbox_run NAME [SANDBOX-OPTIONS...]: scripts/sandbox as the user, on the
# test network, `opencode run` with a prompt; RC, OUT, ERR, SECS.
sandbox_run() {
	local name="osb-oc-$ID-$N"
	N=$((N + 1))
	LIB_CONTAINERS="$LIB_CONTAINERS $name"
	local t0
	t0=$(date +%s)
	HOME="$H" timeout 300 "$SRC_DIR/scripts/sandbox" --engine podman --image "$IMAGE" \
		--project "$T/proj" --state "$T/state" "$@" \
		--engine-arg=--name="$name" --engine-arg=--network="$NET" --engine-arg=--dns=198.18.0.1 \
		--engine-arg=--volume="$T/testca.pem:/etc/ssl/certs/ca-certificates.system.crt:ro" \
		-- opencode run "What is the answer? Reply in one line." </dev/null >"$T/out" 2>"$T/err"
	RC=$?
	SECS=$(($(date +%s) - t0))
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	if podman container exists "$name"; then
		bad "the container $name is gone after the run"
	fi
}

# audit_has ACTION METHOD HOST PATH: an http event in the state dir's log.
audit_has() {
	python3 - "$T/state/audit-events.jsonl" "$@" <<'PY'
import json, sys
path, action, method, host, target = sys.argv[1:]
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if (e.get("event"), e.get("action"), e.get("method"), e.get("host"), e.get("path")) == \
            ("http", action, method, host, target):
        print("yes")
        break
else:
    print("no")
PY
}

sandbox_run --policy "$T/model-policy.yaml"
expect_eq "$RC" 0 "opencode run exits 0 ($(printf '%s\n' "$ERR" | grep -v '^  export' | tail -n 5))"
expect_contains "$OUT" "$REPLY_TEXT" "opencode run prints the scripted model's reply"
expect_absent "$ERR$OUT" "FileSystem.writeFile" "OpenCode writes in its config directory"
expect_contains "$ERR" "-v $CFG/opencode.json:/home/opencode/.config/opencode/opencode.json:ro" \
	"scripts/sandbox mounts the config file read-only"
expect_contains "$ERR" "-v $CFG/agent:/home/opencode/.config/opencode/agent:ro" \
	"scripts/sandbox mounts the agent folder read-only"
expect_absent "$ERR" "-v $CFG:" "scripts/sandbox never mounts the config directory itself"

ORIG=$(origin_log)
expect_contains "$ORIG" "model POST /v1/chat/completions stream=1 model=scripted host=model.test auth=Bearer_sk-sandbox-test-key" \
	"the model API saw a streamed chat request, with the key from auth.json"
BODIES=$(podman exec "$ORIGIN" cat /tmp/model.jsonl 2>/dev/null)
expect_contains "$BODIES" "What is the answer? Reply in one line." "the prompt reached the model"
expect_eq "$(audit_has allow POST model.test /v1/chat/completions)" yes \
	"the audit log has the allowed POST to the model host (through egressd)"
expect_eq "$(snapshot)" "$BEFORE" "the host's OpenCode config and auth are unchanged"
if [ -e "$CFG/.gitignore" ]; then bad "OpenCode's .gitignore was written on the host"; else ok; fi

# The same without the allowlist: the address entry only lifts the
# private-address guard for the test network, standing in for the public
# internet, so the POST meets the read-only method rules, as with the baked
# policy and no provider profile.
sed 's|allowlist: \["model.test"\]|allowlist: ["198.18.0.0/24"]|' "$T/model-policy.yaml" >"$T/no-profile.yaml"
chmod 644 "$T/no-profile.yaml"
POSTS=$(origin_log | grep -c '^model POST')
sandbox_run --policy "$T/no-profile.yaml"
expect_ne "$RC" 0 "without the allowlist opencode run fails"
if [ "$SECS" -lt 60 ]; then ok; else bad "it fails at once, not after retries: ${SECS}s"; fi
expect_contains "$ERR$OUT" "Blocked by the egress policy" "OpenCode shows egressd's 403"
expect_contains "$ERR$OUT" "method-not-allowed" "the 403 names the rule"
expect_eq "$(origin_log | grep -c '^model POST')" "$POSTS" "no POST reached the model"
expect_eq "$(audit_has block POST model.test /v1/chat/completions)" yes \
	"the audit log has the blocked POST"
expect_eq "$(snapshot)" "$BEFORE" "the host's OpenCode config is still unchanged"

echo "opencode done after $(elapsed)s"
finish
