#!/usr/bin/env bash
# opencode-sandbox's commands with podman and the real image, as a user
# meets them on a first setup (seed 003 §6.1):
# 1. `make install` (into a staging root), then the installed
#    opencode-sandbox builds the image from its installed build inputs,
#    with no source tree to fall back on;
# 2. `doctor` passes on this machine, the image built from those inputs;
#    a second build, from inputs that differ in their digest only (every
#    layer cached), labels the image with the new digest;
# 3. `init --global`, `init`, and a run on the project works end to end
#    (OpenCode answers through the scripted model of inet.py) without a
#    question about the new project file;
# 4. `skills import` of a folder with two skills, then OpenCode's own
#    listings of the skills in a run: `opencode debug skill`, and the
#    skill tool's list the model is sent, exactly the two imported (with
#    OpenCode's built-in one), none of the host's skill folders;
# 5. `policy test --project` gives, for each of a set of requests, the
#    action and rule egressd of a run gave the same requests (its audit
#    log).
# The image is $OPENCODE_SANDBOX_TEST_IMAGE (localhost/opencode-sandbox:cli
# when this suite runs beside others).
. "$(dirname "$0")/lib.sh"

echo "image $IMAGE"
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

# --- 1. make install, then image build from the installed inputs ---
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD_DIR/CMakeCache.txt")
if ! DESTDIR="$T/inst" cmake --install "$BUILD_DIR" >"$T/install.log" 2>&1; then
	cat "$T/install.log" >&2
	bad "make install"
	finish
fi
OSB=$T/inst$PREFIX/bin/opencode-sandbox
"$SRC_DIR/scripts/make-base-image" >"$T/base.log" 2>&1 || {
	cat "$T/base.log" >&2
	bad "the base image"
	finish
}
ca=()
[ -s "$CA_BUNDLE" ] && ca=(--build-ca "$CA_BUNDLE")
BUILT=0
if [ "${IMAGE_TEST_REUSE:-0}" = 1 ] && podman image exists "$IMAGE"; then
	echo "reusing $IMAGE (IMAGE_TEST_REUSE=1)"
else
	BUILT=1
	(cd "$T" && env HOME="$T/builder" timeout 1200 "$OSB" image build --tag "$IMAGE" \
		--base "$BASE_IMAGE" "${ca[@]+"${ca[@]}"}" >"$T/build.log" 2>&1)
	RC=$?
	expect_eq "$RC" 0 "the installed opencode-sandbox builds the image ($(tail -n 3 "$T/build.log"))"
	[ "$RC" -eq 0 ] || finish
	expect_contains "$(cat "$T/build.log")" "built $IMAGE from $T/inst$PREFIX/share/opencode-sandbox/build" \
		"... from the installed build inputs"
	expect_contains "$(cat "$T/build.log")" "next: " "... and says what to do next"
	echo "image built after $(elapsed)s"
fi

# The user: a fresh home, a project, OpenCode set up for the scripted model.
H=$T/home
P=$T/proj
mkdir -p "$H/.config/opencode" "$H/.local/share/opencode" "$P"
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
  "permission": { "bash": "allow", "edit": "allow", "external_directory": "allow" }
}
EOT
echo '{"test": {"type": "api", "key": "sk-cli-test-key"}}' >"$H/.local/share/opencode/auth.json"
# The host's own skill folders: never exposed by a run.
mkdir -p "$H/.config/opencode/skills/host-only" "$H/.claude/skills/claude-only"
printf -- '---\nname: host-only\ndescription: A skill of the host.\n---\n' >"$H/.config/opencode/skills/host-only/SKILL.md"
printf -- '---\nname: claude-only\ndescription: A Claude skill of the host.\n---\n' >"$H/.claude/skills/claude-only/SKILL.md"
# The project is a user's (root runs opencode-sandbox here: the payload is the owner).
chown 1234:1234 "$P"

cat >"$T/script.json" <<'EOT'
[
  {"when": "STEP-AGREE", "tool": "bash",
   "args": {"description": "requests the policy decides",
            "command": "for r in 'GET https://allowed.test/hello' 'POST https://allowed.test/echo' 'GET https://readonly.test/hello' 'POST https://readonly.test/echo' 'GET https://tracker.test/hello' 'GET https://blocked.test/hello' 'DELETE https://readonly.test/hello'; do set -- $r; d=; [ $1 = POST ] && d='-d x=1'; echo \"$1 $2 $(curl -sS -o /dev/null -w '%{http_code}' -X $1 $d $2 2>/dev/null)\"; done"},
   "reply": "Requests made."}
]
EOT
lib_net_up --model "Hello from the scripted model." --script "$T/script.json" || {
	bad "test network"
	finish
}
lib_containers_conf

# osb ARGS...: the installed opencode-sandbox as the user, in the project.
osb() {
	(cd "$P" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
		CONTAINERS_CONF="$T/containers.conf" timeout 300 "$OSB" "$@" </dev/null >"$T/out" 2>"$T/err")
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

# --- 3a. init ---
osb init --global
expect_eq "$RC" 0 "init --global ($ERR)"
osb init
expect_eq "$RC" 0 "init ($ERR)"
# The settings of this machine: the image, the test network's private CA, and
# the test network's addresses (the private-address guard); blocked.test for
# the policy checks below.
G=$H/.config/opencode-sandbox/config.yaml
sed -i "s|^  name: .*|  name: $IMAGE|; s|^  allowlist: \[\]|  allowlist: [\"198.18.0.0/24\"]|; s|^  blocklist: \[\]|  blocklist: [\"blocked.test\"]|" "$G"
printf 'container:\n  upstreamCa: %s\n' "$T/testca.pem" >>"$G"
sed -i "s|^  name: .*|  name: $IMAGE|" "$P/.opencode-sandbox.yaml"

# --- 2. doctor ---
osb doctor --json
expect_eq "$RC" 0 "doctor passes on this machine ($(printf '%s' "$OUT" | python3 -c '
import json, sys
print([c for c in json.load(sys.stdin)["checks"] if c["status"] in ("fail", "warn")])' 2>&1))"
expect_eq "$(printf '%s' "$OUT" | python3 -c '
import json, sys
s = {c["id"]: c["status"] for c in json.load(sys.stdin)["checks"]}
print(s.get("runtime.service"), s.get("image.present"), s.get("image.opencode"), s.get("image.build"), s.get("strict.support"), s.get("config.project"))' 2>&1)" \
	"pass pass pass pass pass pass" "doctor: the runtime, the image built from the installed inputs, strict mode, the project file"
expect_contains "$(printf '%s' "$OUT" | python3 -c '
import json, sys
print([c["message"] for c in json.load(sys.stdin)["checks"] if c["id"] == "image.build"])' 2>&1)" \
	"egressd $(sed -n 's/^set(EGRESS_VERSION \(.*\))$/\1/p' "$SRC_DIR/CMakeLists.txt"), built from" "... and names the version of its egressd"

# --- 2b. a second build from other inputs, every layer cached ---
# Only the digest differs (image/build-inputs is hashed, not copied): the
# image must still get the new digest (podman 4.3 keeps a cached LABEL
# layer whatever a build argument's value).
if [ "$BUILT" = 1 ]; then
	cp -a "$T/inst$PREFIX/share/opencode-sandbox" "$T/inputs2"
	echo "# another revision" >>"$T/inputs2/build/image/build-inputs"
	(cd "$T" && env HOME="$T/builder" OPENCODE_SANDBOX_DATADIR="$T/inputs2" timeout 1200 "$OSB" image build \
		--tag "$IMAGE" --base "$BASE_IMAGE" "${ca[@]+"${ca[@]}"}" >"$T/build2.log" 2>&1)
	expect_eq "$?" 0 "a second image build from other inputs ($(tail -n 3 "$T/build2.log"))"
	OPENCODE_SANDBOX_DATADIR="$T/inputs2" osb doctor --json
	expect_eq "$(printf '%s' "$OUT" | python3 -c '
import json, sys
print([c["status"] for c in json.load(sys.stdin)["checks"] if c["id"] == "image.build"])' 2>&1)" \
		"['pass']" "... labels the image with the new inputs' digest"
fi

# --- 3b. the run ---
osb run "STEP-HELLO: say hello"
expect_eq "$RC" 0 "a run after init exits 0 ($(printf '%s\n' "$ERR" | tail -n 3))"
expect_contains "$OUT" "Hello from the scripted model." "OpenCode answered through the scripted model"
expect_absent "$ERR" "Trusting it would change" "the file init wrote is taken without a question"
expect_contains "$ERR" "model providers allowlisted: test (model.test;" "the model provider is allowlisted"

# --- 4. skills ---
mkdir -p "$T/skills/review/refs" "$T/skills/deploy"
printf -- '---\nname: review\ndescription: Reviews a diff for bugs.\n---\nRead refs/checklist.md.\n' >"$T/skills/review/SKILL.md"
echo "check the tests" >"$T/skills/review/refs/checklist.md"
printf -- '---\nname: deploy\ndescription: Deploys the project.\n---\nRun make deploy.\n' >"$T/skills/deploy/SKILL.md"
osb skills import "$T/skills"
expect_eq "$RC" 0 "skills import of a folder with two skills ($ERR)"
osb debug skill
expect_eq "$RC" 0 "opencode debug skill in the sandbox ($(printf '%s\n' "$ERR" | tail -n 2))"
expect_eq "$(printf '%s' "$OUT" | python3 -c '
import json, sys
print(" ".join(sorted(s["name"] for s in json.load(sys.stdin))))' 2>&1)" \
	"customize-opencode deploy review" "OpenCode's own listing: the imported skills and its built-in one, no host skill"
expect_contains "$(printf '%s' "$OUT" | python3 -c '
import json, sys
print(" ".join(s["location"] for s in json.load(sys.stdin)))' 2>&1)" \
	"/home/opencode/.config/opencode/skills/review/SKILL.md" "... read from the read-only mount"
: >"$T/before"
podman exec "$ORIGIN" sh -c 'wc -l </tmp/model.jsonl' >"$T/before" 2>/dev/null
osb run "STEP-SKILLS: which skills?"
expect_eq "$RC" 0 "a run with the imported skills ($(printf '%s\n' "$ERR" | tail -n 2))"
# What OpenCode sent the model: the skills its system prompt offers (the skill tool's list).
SENT=$(podman exec "$ORIGIN" sh -c "tail -n +$(($(cat "$T/before" 2>/dev/null || echo 0) + 1)) /tmp/model.jsonl" |
	python3 -c '
import json, re, sys
names, tool = set(), False
for line in sys.stdin:
    try:
        ask = json.loads(line)
    except ValueError:
        continue
    tool |= any(t.get("function", {}).get("name") == "skill" for t in ask.get("tools") or [])
    for m in ask.get("messages") or []:
        c = m.get("content")
        text = c if isinstance(c, str) else " ".join(p.get("text", "") for p in c or [] if isinstance(p, dict))
        for block in re.findall(r"<available_skills>(.*?)</available_skills>", text, re.S):
            names.update(re.findall(r"<name>([^<]+)</name>", block))
print(("skill-tool " if tool else "") + " ".join(sorted(names)))' 2>&1)
expect_eq "$SENT" "skill-tool customize-opencode deploy review" \
	"OpenCode offers the model its skill tool and, as available skills, exactly the imported ones"

# --- 5. policy test agrees with the run's egressd ---
cat >"$P/.opencode-sandbox.yaml" <<'EOT'
version: 1
network:
  allowlist: ["allowed.test"]
  blocklist: ["tracker.test"]
EOT
osb --accept-policy-changes run "STEP-AGREE: make the requests"
expect_eq "$RC" 0 "the run making the requests ($(printf '%s\n' "$ERR" | tail -n 2))"
AUDIT=$(printf '%s\n' "$ERR" | sed -n 's/.*review: policyctl audit //p' | tail -n 1)
if [ -n "$AUDIT" ] && [ -f "$AUDIT" ]; then ok; else bad "the run's audit log: '$AUDIT'"; fi
for r in "GET https://allowed.test/hello" "POST https://allowed.test/echo" "GET https://readonly.test/hello" \
	"POST https://readonly.test/echo" "GET https://tracker.test/hello" "GET https://blocked.test/hello" \
	"DELETE https://readonly.test/hello"; do
	# shellcheck disable=SC2086 # METHOD URL, split
	set -- $r
	osb policy test "$2" --method "$1" --project "$P" --json
	said=$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d["rule"])' 2>&1)
	did=$(python3 - "$AUDIT" "$1" "$2" <<'PY'
import json, sys
from urllib.parse import urlsplit
path, method, url = sys.argv[1:4]
host = urlsplit(url).hostname
found = "no audit line"
for line in open(path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("host") != host:
        continue
    if e.get("event") == "http" and e.get("method") == method:
        found = "%s %s" % (e.get("action"), e.get("rule"))
        break
    if e.get("event") == "connect" and e.get("action") == "block":
        found = "%s %s" % (e.get("action"), e.get("rule"))
        break
print(found)
PY
	)
	expect_eq "$said" "$did" "policy test --project agrees with the run's egressd: $1 $2"
done
BODIES=$(podman exec "$ORIGIN" cat /tmp/model.jsonl 2>/dev/null)
expect_contains "$BODIES" "POST https://readonly.test/echo 403" "the run's egressd refused the POST it said it would"

echo "cli done after $(elapsed)s"
finish
