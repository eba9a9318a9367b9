#!/usr/bin/env bash
# OpenCode itself, end to end, as a user runs it: opencode-sandbox with a
# host home holding an OpenCode config (a custom OpenAI-compatible provider
# at https://model.test/v1, an agent folder) and the provider's key in
# auth.json, mounted file by file the way docs/opencode-sandbox.md says,
# and the provider's host allowlisted by opencode-sandbox itself from that
# config. The "internet" is the test network, where model.test is a
# scripted streaming model API (tests/lib/py/inet.py --model-reply) behind
# HTTPS with the test CA, handed to egressd as the upstream CA
# (--upstream-ca), so egressd verifies it as it would a real provider.
# `opencode run` must print the scripted reply; the model API must have
# seen the streamed chat request with the key from auth.json, through
# egressd (the audit log has the allowed POST); the host's config must be
# byte for byte as before. Then the same run with --no-providers: OpenCode
# stops at once with egressd's 403, and no POST reaches the model.
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

# opencode-sandbox's global file: the image, and the address entry that
# lifts the private-address guard for the test network, which stands in
# for the public internet.
mkdir -p "$H/.config/opencode-sandbox"
cat >"$H/.config/opencode-sandbox/config.yaml" <<EOT
version: 1
image:
  name: $IMAGE
network:
  allowlist: ["198.18.0.0/24"]
EOT
lib_containers_conf

# Every name, mode, owner, size and hash under the host's OpenCode dirs.
snapshot() {
	(cd "$H" && find .config/opencode .local/share/opencode -printf '%p %y %m %U:%G %s %T@\n' |
		sort && find .config/opencode .local/share/opencode -type f -exec sha256sum {} + | sort)
}
BEFORE=$(snapshot)

# sandbox_run [FLAGS...]: opencode-sandbox as the user in the project, on
# the test network, `opencode run` with a prompt; RC, OUT, ERR, SECS, and
# AUDIT, the audit file the summary line names.
sandbox_run() {
	local t0
	t0=$(date +%s)
	(cd "$T/proj" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
		CONTAINERS_CONF="$T/containers.conf" timeout 300 "$BUILD_DIR/opencode-sandbox" \
		--print-command --upstream-ca "$T/testca.pem" "$@" \
		run "What is the answer? Reply in one line." </dev/null >"$T/out" 2>"$T/err")
	RC=$?
	SECS=$(($(date +%s) - t0))
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	AUDIT=$(printf '%s\n' "$ERR" | sed -n 's/.*review: policyctl audit //p' | tail -n 1)
	if podman ps -a --format '{{.Names}}' | grep -q '^opencode-sandbox-proj-'; then
		bad "the container is gone after the run"
	fi
}

# audit_has ACTION METHOD HOST PATH: an http event in the state dir's log.
audit_has() {
	python3 - "$AUDIT" "$@" <<'PY'
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

sandbox_run
expect_eq "$RC" 0 "opencode run exits 0 ($(printf '%s\n' "$ERR" | tail -n 5))"
expect_contains "$OUT" "$REPLY_TEXT" "opencode run prints the scripted model's reply"
expect_absent "$ERR$OUT" "FileSystem.writeFile" "OpenCode writes in its config directory"
expect_contains "$ERR" "source=$CFG/opencode.json,target=/home/opencode/.config/opencode/opencode.json,readonly" \
	"opencode-sandbox mounts the config file read-only"
expect_contains "$ERR" "source=$CFG/agent,target=/home/opencode/.config/opencode/agent,readonly" \
	"opencode-sandbox mounts the agent folder read-only"
expect_absent "$ERR" "source=$CFG," "opencode-sandbox never mounts the config directory itself"
expect_contains "$ERR" "model providers allowlisted: test (model.test;" "the provider's host is allowlisted from the config"

ORIG=$(origin_log)
expect_contains "$ORIG" "model POST /v1/chat/completions stream=1 model=scripted host=model.test auth=Bearer_sk-sandbox-test-key" \
	"the model API saw a streamed chat request, with the key from auth.json"
BODIES=$(podman exec "$ORIGIN" cat /tmp/model.jsonl 2>/dev/null)
expect_contains "$BODIES" "What is the answer? Reply in one line." "the prompt reached the model"
expect_eq "$(audit_has allow POST model.test /v1/chat/completions)" yes \
	"the audit log has the allowed POST to the model host (through egressd)"
expect_eq "$(snapshot)" "$BEFORE" "the host's OpenCode config and auth are unchanged"
if [ -e "$CFG/.gitignore" ]; then bad "OpenCode's .gitignore was written on the host"; else ok; fi

# The same with --no-providers: nothing allowlists model.test, so the POST
# meets the read-only method rules, as with no provider set up.
POSTS=$(origin_log | grep -c '^model POST')
sandbox_run --no-providers
expect_ne "$RC" 0 "with --no-providers opencode run fails"
if [ "$SECS" -lt 60 ]; then ok; else bad "it fails at once, not after retries: ${SECS}s"; fi
expect_contains "$ERR$OUT" "Blocked by the egress policy" "OpenCode shows egressd's 403"
expect_contains "$ERR$OUT" "method-not-allowed" "the 403 names the rule"
expect_eq "$(origin_log | grep -c '^model POST')" "$POSTS" "no POST reached the model"
expect_eq "$(audit_has block POST model.test /v1/chat/completions)" yes \
	"the audit log has the blocked POST"
expect_eq "$(snapshot)" "$BEFORE" "the host's OpenCode config is still unchanged"

echo "opencode done after $(elapsed)s"
finish
