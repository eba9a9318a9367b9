#!/usr/bin/env bash
# Golden tests of opencode-sandbox's commands other than the run (seed 003
# §7, §17.2), with the fake runtimes of lib.sh: help and COMMAND --help;
# doctor against a matrix of broken environments (no runtime, a stopped
# daemon, podman's storage gone, a missing image, an image from other build
# inputs, invalid global and project configuration, unwritable state, strict
# mode without --cap-add, Apple's runtime on Linux), each with the expected
# status per check, and that doctor writes nothing; init's files, which load
# without a warning and change nothing a run would ask about; skills import
# and list (the manifest and its hashes, every refusal, prefixes, updates,
# the project scope and its links, a name in both scopes) and the skills a
# run exposes; config path and show (secrets never printed); image build and
# upgrade (their argv, the label, the build CA, failures, --method).
# Every case's transcript is compared with tests/host/golden/NAME.txt.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

GLOBAL=.config/opencode-sandbox/config.yaml

# A stand-in for the installed build inputs: what image build builds from
# and doctor hashes (OPENCODE_SANDBOX_DATADIR points at it).
INPUTS=$T/share
mkdir -p "$INPUTS/build/image" "$INPUTS/build/common"
printf 'common\nimage/Containerfile\nimage/build-inputs\n' >"$INPUTS/build/image/build-inputs"
printf 'FROM scratch\n' >"$INPUTS/build/image/Containerfile"
printf 'int x;\n' >"$INPUTS/build/common/x.c"

# check ID: the status of one check in the last `doctor --json`.
check() {
	printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((c["status"] for c in d["checks"] if c["id"] == sys.argv[1]), "absent"))' "$1" 2>&1
}
# message ID: its message.
message() {
	printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((c["message"] for c in d["checks"] if c["id"] == sys.argv[1]), ""))' "$1" 2>&1
}
# statuses ID...: "id=status" words, for a row of the matrix at once.
statuses() {
	local id out=""
	for id in "$@"; do out="$out $id=$(check "$id")"; done
	echo "${out# }"
}
jsonok() { printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ok"])' 2>&1; }

# The inputs' digest, as image build hands it to the build (a build against
# the fake runtime, outside any case).
mkdir -p "$T/probe/home" "$T/probe/fake"
(cd "$T/probe/home" && env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T/probe/home" LANG=C \
	FAKE_DIR="$T/probe/fake" OPENCODE_SANDBOX_DATADIR="$INPUTS" "$BIN" image build \
	>/dev/null 2>&1)
DIGEST=$(sed -n 's/^io.opencode-sandbox.inputs=//p' "$T/probe/fake/calls" | head -n 1)
if [ ${#DIGEST} -eq 64 ]; then ok; else bad "image build hands the inputs' digest to the build: '$DIGEST'"; fi

# --- help ---

begin help-command
osb help skills
golden
expect_eq "$RC" 0 "help skills"
expect_contains "$OUT" "usage: opencode-sandbox skills import SOURCE" "help skills: skills import"
expect_contains "$OUT" "usage: opencode-sandbox skills list" "... and skills list"

begin help-dash
osb image build --help
golden
expect_eq "$RC" 0 "image build --help"
expect_contains "$OUT" "usage: opencode-sandbox image build" "COMMAND --help is the command's help"
expect_eq "$(calls)" "" "... and runs nothing"
osb help image build
expect_contains "$OUT" "usage: opencode-sandbox image build" "help image build says the same"

begin help-unknown
osb help nope
golden
expect_eq "$RC" 2 "help of a command that does not exist"
expect_contains "$ERR" "no command \"nope\"; the commands: run, doctor" "... lists the commands"

begin command-unknown-option
osb init --frobnicate
golden
expect_eq "$RC" 2 "an option a command does not have"
expect_contains "$ERR" "opencode-sandbox init: unknown option --frobnicate (see \`opencode-sandbox help init\`)" "... says so and where the help is"

# --- doctor: a matrix of environments ---

begin doctor-ready
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" FAKE_LABELS="{\"ai.opencode.version\":\"1.18.33\",\"io.opencode-sandbox.inputs\":\"$DIGEST\",\"io.opencode-sandbox.version\":\"0.1.0\"}")
BEFORE=$(find "$H" | sort)
osb doctor --json
golden
expect_eq "$(find "$H" | sort)" "$BEFORE" "doctor changes nothing: no state or config directory made"
expect_eq "$RC" 0 "doctor: nothing fails, exit 0"
expect_eq "$(jsonok)" True "... and ok is true"
expect_eq "$(statuses host.os macos.version macos.arch runtime.binary runtime.version runtime.service image.present image.opencode image.build strict.support)" \
	"host.os=pass macos.version=skip macos.arch=skip runtime.binary=pass runtime.version=pass runtime.service=pass image.present=pass image.opencode=pass image.build=pass strict.support=pass" \
	"doctor: a ready machine"
expect_eq "$(statuses opencode.config opencode.auth config.global config.project skills state.dirs providers)" \
	"opencode.config=pass opencode.auth=pass config.global=pass config.project=pass skills=pass state.dirs=pass providers=pass" \
	"doctor: a ready machine (configuration)"
expect_contains "$(message image.opencode)" "OpenCode 1.18.33" "the image's OpenCode version"
expect_contains "$(message image.build)" "egressd 0.1.0, built from the build inputs installed now" "... its egressd's version and build inputs"
expect_contains "$(message macos.version)" "not macOS" "the macOS checks are skipped with the reason"
expect_absent "$(calls)" "=== podman
run
--rm" "doctor runs no container"
osb doctor
expect_contains "$OUT" "opencode-sandbox doctor: 15 pass, 0 warn, 0 fail, 3 skip: ready to run" "doctor's text summary"

begin doctor-no-runtime
PATHS=$T/nobin
osb doctor --json
golden
expect_eq "$RC" 1 "no runtime: doctor fails"
expect_eq "$(jsonok)" False "... ok false"
expect_eq "$(statuses runtime.binary runtime.version runtime.service image.present strict.support)" \
	"runtime.binary=fail runtime.version=skip runtime.service=skip image.present=skip strict.support=skip" \
	"no runtime: the runtime fails, what needs it is skipped"
expect_contains "$(message runtime.binary)" "install podman or docker" "... and says what to install"

begin doctor-docker-stopped
EXTRA=(FAKE_NO_DAEMON=1)
osb doctor --json --runtime docker
golden
expect_eq "$RC" 1 "a stopped Docker daemon: doctor fails"
expect_eq "$(statuses runtime.binary runtime.version runtime.service image.present)" \
	"runtime.binary=pass runtime.version=pass runtime.service=fail image.present=skip" \
	"stopped daemon"
expect_contains "$(message runtime.service)" "systemctl start docker" "... says how to start it"

begin doctor-podman-storage
EXTRA=(FAKE_NO_DAEMON=1)
osb doctor --json
golden
expect_eq "$(statuses runtime.service image.present)" "runtime.service=fail image.present=skip" \
	"podman's storage or machine not answering"
expect_contains "$(message runtime.service)" "podman machine start" "... says how to start the machine"

begin doctor-apple-stopped
EXTRA=(FAKE_NO_DAEMON=1)
osb doctor --json --runtime container
golden
expect_eq "$(statuses runtime.binary runtime.version runtime.service macos.version macos.arch)" \
	"runtime.binary=pass runtime.version=pass runtime.service=fail macos.version=skip macos.arch=skip" \
	"Apple's container on Linux: the service, and the macOS checks skipped"
expect_contains "$(message runtime.service)" "container system start" "... says how to start it"

begin doctor-missing-image
EXTRA=(FAKE_NO_IMAGE=1)
osb doctor --json
golden
expect_eq "$RC" 1 "a missing image: doctor fails"
expect_eq "$(statuses image.present image.opencode image.build)" \
	"image.present=fail image.opencode=skip image.build=skip" "missing image"
expect_contains "$(message image.present)" "opencode-sandbox image build" "... says how to build it"

begin doctor-stale-image
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" FAKE_LABELS='{"io.opencode-sandbox.inputs":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}')
osb doctor --json
golden
expect_eq "$RC" 0 "an image from other build inputs: a warning, not a failure"
expect_eq "$(statuses image.opencode image.build)" "image.opencode=warn image.build=warn" \
	"other build inputs, no OpenCode label"
expect_contains "$(message image.build)" "built from other build inputs (the image's 0123456789ab" "... names both digests"
# A run on that image: said before it starts, with what to do.
osb --no-providers --version
expect_contains "$ERR" "the image localhost/opencode-sandbox:latest was built from other build inputs than this installation's (0123456789ab" \
	"a run on an image from other build inputs says so"
expect_contains "$ERR" "rebuild it with \`opencode-sandbox image build\`" "... and what to do"
# The same image labelled with the installed inputs: nothing said.
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" FAKE_LABELS="{\"io.opencode-sandbox.inputs\":\"$DIGEST\"}")
osb --no-providers --version
expect_eq "$(printf '%s\n' "$ERR" | grep -c 'other build inputs')" 0 "a run on an image from the installed inputs says nothing of it"

begin doctor-invalid-project
printf 'version: 1\nnetwork:\n  mode: practical\n  alowlist: [x.example]\n' >"$P/.opencode-sandbox.yaml"
osb doctor --json
golden
expect_eq "$RC" 1 "an invalid project file: doctor fails"
expect_eq "$(statuses config.global config.project skills state.dirs providers)" \
	"config.global=pass config.project=fail skills=skip state.dirs=skip providers=skip" \
	"invalid project configuration"
expect_contains "$(message config.project)" ".opencode-sandbox.yaml:4:3: unknown key \"alowlist\" in network" "... with file:line:col"

begin doctor-invalid-global
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nresources:\n  cpus: lots\nnetwork:\n  mode: paranoid\n' >"$H/$GLOBAL"
osb doctor --json
golden
expect_eq "$(statuses config.global config.project)" "config.global=fail config.project=fail" \
	"invalid global configuration"
expect_contains "$(message config.global)" "config.yaml:3:9: cpus: \"lots\" is not a number of CPUs" "every error ..."
expect_contains "$(message config.global)" "config.yaml:5:9:" "... each with its place"

begin doctor-unwritable-state
echo "a file" >"$H/blocker"
EXTRA=(XDG_STATE_HOME="$H/blocker/state")
osb doctor --json
golden
expect_eq "$RC" 1 "unwritable state: doctor fails"
expect_eq "$(check state.dirs)" fail "state directory under a file"
expect_contains "$(message state.dirs)" "has a file where a directory must be" "... says why"

begin doctor-unwritable-state-user
mkdir -p "$H/ro"
chmod 555 "$H/ro"
chown -R 65534:65534 "$T/$N"
chmod 555 "$H/ro"
(cd "$P" && setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATHS" HOME="$H" \
	LANG=C FAKE_DIR="$F" XDG_STATE_HOME="$H/ro/state" "$BIN" doctor --json >"$F/out" 2>"$F/err")
RC=$?
OUT=$(cat "$F/out")
ERR=$(cat "$F/err")
golden
expect_eq "$(check state.dirs)" fail "a state directory the user cannot write"
expect_contains "$(message state.dirs)" "is not writable" "... says so"

begin doctor-strict-no-cap
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  mode: strict\n' >"$H/$GLOBAL"
EXTRA=(FAKE_NO_CAP_ADD=1)
osb doctor --json
golden
expect_eq "$(check strict.support)" fail "strict mode configured on a runtime without --cap-add"
osb doctor --json --config /dev/null
rm -f "$H/$GLOBAL"
osb doctor --json
expect_eq "$(check strict.support)" warn "practical mode on such a runtime: a warning"

begin doctor-usage
osb doctor extra
golden
expect_eq "$RC" 2 "doctor takes no positional argument"

# --- init ---

begin init-project
osb init
cat "$P/.opencode-sandbox.yaml" >>"$F/out"
golden
expect_eq "$RC" 0 "init writes the project file"
expect_contains "$(cat "$P/.opencode-sandbox.yaml")" "inheritGlobal: true" "seed 003's project template"
expect_contains "$(cat "$P/.opencode-sandbox.yaml")" "#   allowMethods: [GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE]" "how to open writes, commented"
expect_contains "$(cat "$P/.opencode-sandbox.yaml")" "#   mode: strict" "how to turn strict mode on, commented"
"$BUILD_DIR/policyctl" check --config "$P/.opencode-sandbox.yaml" >/dev/null 2>"$F/check.err"
expect_eq "$?:$(cat "$F/check.err")" "0:" "policyctl check loads it without a warning"
"$BUILD_DIR/policyctl" check --project-config "$P/.opencode-sandbox.yaml" >/dev/null 2>"$F/check.err"
expect_eq "$?:$(cat "$F/check.err")" "0:" "... even as an untrusted project file"
rm -f "$F/calls"
osb
expect_eq "$RC" 0 "a run takes the file init wrote"
expect_absent "$ERR" "Trusting it would change" "... without asking (it changes nothing in effect)"
expect_absent "$ERR" "has no effect" "... and without a note on any of its keys"

begin init-global
osb init --global
cat "$H/$GLOBAL" >>"$F/out"
golden
expect_eq "$RC" 0 "init --global"
expect_contains "$(cat "$H/$GLOBAL")" "proxyPort: 18080" "seed 003's global template"
"$BUILD_DIR/policyctl" check --config "$H/$GLOBAL" >/dev/null 2>"$F/check.err"
expect_eq "$?:$(cat "$F/check.err")" "0:" "policyctl check loads it without a warning"
osb doctor --json
expect_eq "$(check config.global)" pass "doctor: the global file is valid"

begin init-refuses
printf 'version: 1\nnetwork:\n  allowlist: [mine.example]\n' >"$P/.opencode-sandbox.yaml"
osb init
golden
expect_eq "$RC" 2 "init does not replace a file"
expect_contains "$(cat "$P/.opencode-sandbox.yaml")" "mine.example" "... which is unchanged"
osb init --force
expect_eq "$RC" 0 "--force replaces it"
expect_contains "$(cat "$P/.opencode-sandbox.yaml.bak")" "mine.example" "... keeping the old one as .bak"
expect_absent "$(cat "$P/.opencode-sandbox.yaml")" "mine.example" "... and writing the template"

begin init-found
mkdir -p "$H/.config/opencode" "$H/.local/share/opencode" "$P/.opencode/skills/a" "$H/.claude/skills/b" "$H/.claude/skills/c"
echo '{"model": "openai/gpt-5"}' >"$H/.config/opencode/opencode.json"
echo '{"anthropic": {"type": "api", "key": "sk-ant-secret"}}' >"$H/.local/share/opencode/auth.json"
echo '{}' >"$P/opencode.json"
printf -- '---\nname: a\ndescription: a\n---\n' >"$P/.opencode/skills/a/SKILL.md"
printf -- '---\nname: b\ndescription: b\n---\n' >"$H/.claude/skills/b/SKILL.md"
printf -- '---\nname: c\ndescription: c\n---\n' >"$H/.claude/skills/c/SKILL.md"
osb init
cat "$P/.opencode-sandbox.yaml" >>"$F/out"
golden
WROTE=$(cat "$P/.opencode-sandbox.yaml")
TILDE="~"
expect_contains "$WROTE" "$TILDE/.config/opencode/opencode.json: your OpenCode config" "init says what it found: the config"
expect_contains "$WROTE" "opencode.json in the project: OpenCode reads it" "... the project's OpenCode config"
expect_contains "$WROTE" ".opencode/skills: 1 skill of the project" "... the project's skills"
expect_contains "$WROTE" "$TILDE/.claude/skills: 2 skills, not exposed in the sandbox; to use them: opencode-sandbox skills import $TILDE/.claude/skills" "... the host's skills, to import"
expect_contains "$WROTE" "openai: api.openai.com" "... and the providers it will allowlist"
expect_absent "$WROTE" "sk-ant-secret" "... never a key"

begin init-usage
osb init --global --project .
golden
expect_eq "$RC" 2 "--global and --project together"
mkdir -p "$H/other"
osb init --project "$H/other"
expect_eq "$RC" 0 "init --project PATH"
if [ -f "$H/other/.opencode-sandbox.yaml" ] && [ ! -e "$P/.opencode-sandbox.yaml" ]; then ok; else
	bad "init --project PATH writes into PATH, not the working directory"
fi
osb init --project "$H"
expect_eq "$RC" 2 "init --project with the home directory"
expect_contains "$ERR" "is your home directory: name a project directory inside it" "... is refused"

# --- skills ---

# skillsrc DIR: two skills, one with a nested file and a link inside the source.
skillsrc() {
	mkdir -p "$1/review/refs" "$1/deploy"
	printf -- '---\nname: review\ndescription: Reviews a diff for bugs.\n---\nSee refs/checklist.md.\n' >"$1/review/SKILL.md"
	printf 'check the tests\n' >"$1/review/refs/checklist.md"
	printf -- '---\nname: deploy\ndescription: >\n  Deploys the\n  project.\nlicense: MIT\n---\nRun make deploy.\n' >"$1/deploy/SKILL.md"
	printf 'shared notes\n' >"$1/NOTES.md"
	ln -s ../../NOTES.md "$1/review/refs/notes.md"
	mkdir -p "$1/not-a-skill"
}
# treehash DIR: a skill's hash, as docs/opencode-sandbox.md tells to compute it.
treehash() { (cd "$1" && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }
staged_skills() { find "$F/staged/skills" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | paste -sd' '; }
manifest() { python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(" ".join("%s:%s:%s" % (s["name"], s["scope"], s["sha256"]) for s in m["skills"]))' "$1" 2>&1; }

begin skills-import
skillsrc "$H/src"
osb skills import "$H/src"
golden
expect_eq "$RC" 0 "skills import of a folder with two skills"
GS=$H/.config/opencode-sandbox/skills
expect_eq "$(manifest "$H/.config/opencode-sandbox/skills-manifest.json")" \
	"deploy:global:$(treehash "$GS/deploy") review:global:$(treehash "$GS/review")" \
	"skills-manifest.json: each skill with its scope and the SHA-256 of its files"
expect_eq "$(cat "$GS/review/refs/notes.md")" "shared notes" "a link inside the source is copied as its file"
if [ -L "$GS/review/refs/notes.md" ]; then bad "the copy holds no link"; else ok; fi
expect_eq "$(cat "$GS/review/refs/checklist.md")" "check the tests" "the skill's files are copied with it"
expect_contains "$ERR" "not-a-skill: no SKILL.md, not a skill (skipped)" "a folder without SKILL.md is said"
mkdir -p "$H/.config/opencode/skills/host-only"
printf -- '---\nname: host-only\ndescription: h\n---\n' >"$H/.config/opencode/skills/host-only/SKILL.md"
osb skills list --json
expect_eq "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join("%s=%s/%s" % (s["name"], s["status"], s["scope"]) for s in json.load(sys.stdin)["skills"]))')" \
	"deploy=active/global review=active/global host-only=available/host" "skills list --json"
rm -f "$F/calls" "$F/run.argv"
osb
expect_eq "$RC" 0 "a run with imported skills"
expect_contains "$RUN" "scratch/skills,target=/home/opencode/.config/opencode/skills,readonly" "the run mounts the imported skills read-only where OpenCode looks"
expect_eq "$(staged_skills)" "deploy review" "... exactly the imported ones"
expect_absent "$RUN" "source=$H/.config/opencode/skills" "the host's skill folder is not mounted"
expect_contains "$ERR" ".config/opencode/skills: not mounted: a run exposes imported skills only" "... and that is said"
osb skills import "$H/.config/opencode/skills/host-only"
osb skills list --json
expect_eq "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join("%s=%s/%s" % (s["name"], s["status"], s["scope"]) for s in json.load(sys.stdin)["skills"] if s["name"] == "host-only"))')" \
	"host-only=active/global host-only=imported/host" "a host skill once imported is listed as imported, not available"
osb skills list
expect_contains "$OUT" ".config/opencode/skills/host-only: imported as host-only (global)" "... under which name and scope"
osb
expect_contains "$ERR" ".config/opencode/skills: not mounted: a run exposes imported skills only (its skills are imported)" \
	"a run no longer offers to import a folder whose skills are imported"

begin skills-refused
skillsrc "$H/src"
ln -s /etc/hostname "$H/src/deploy/escape"
mkdir -p "$H/src/twin"
printf -- '---\nname: review\ndescription: the same name\n---\n' >"$H/src/twin/SKILL.md"
mkdir -p "$H/src/bare"
printf 'no frontmatter\n' >"$H/src/bare/SKILL.md"
osb skills import "$H/src"
golden
expect_eq "$RC" 2 "an import with a bad skill"
expect_contains "$ERR" "deploy/escape: a symbolic link out of the source" "a link out of the source is refused"
expect_contains "$ERR" "the name review is taken by $H/src/review in the same import" "a name twice in one import"
expect_contains "$ERR" "bare: SKILL.md does not open with YAML frontmatter" "a SKILL.md without frontmatter"
if [ -e "$H/.config/opencode-sandbox" ]; then bad "nothing is written when a skill is refused"; else ok; fi
osb skills import "$H/nowhere"
expect_eq "$RC" 2 "a source that does not exist"

begin skills-prefix
skillsrc "$H/src"
mkdir -p "$H/other/review"
printf -- '---\nname: review\ndescription: Another review.\n---\n' >"$H/other/review/SKILL.md"
osb skills import "$H/src"
osb skills import "$H/other"
expect_eq "$RC" 2 "a name imported from another source is refused"
expect_contains "$ERR" "review is already imported from $H/src/review (--name-prefix PREFIX" "... saying how to import it"
osb skills import "$H/other" --name-prefix team-
golden
expect_eq "$RC" 0 "--name-prefix imports it"
expect_contains "$(cat "$H/.config/opencode-sandbox/skills/team-review/SKILL.md")" 'name: "team-review"' "... renamed in its SKILL.md"
osb skills import "$H/src/deploy"
expect_contains "$OUT" "updated deploy (global)" "importing the same source again updates it"
osb skills import "$H/src/review"
expect_contains "$ERR" "review/refs/notes.md: a symbolic link out of the source" "the source is the root links must stay in"

begin skills-dry-run
skillsrc "$H/src"
osb skills import "$H/src" --dry-run --include 'rev*'
golden
expect_contains "$OUT" "would import review (global)" "--dry-run says what it would import"
expect_contains "$ERR" "deploy ($H/src/deploy): left out by --include/--exclude" "--include"
if [ -e "$H/.config/opencode-sandbox" ]; then bad "--dry-run writes nothing"; else ok; fi

begin skills-project
skillsrc "$H/src"
osb skills import "$H/src" --scope project --exclude deploy
golden
expect_eq "$RC" 0 "an import into the project"
expect_eq "$(manifest "$P/.opencode-sandbox/skills-manifest.json")" \
	"review:project:$(treehash "$P/.opencode-sandbox/skills/review")" "the project's manifest"
rm -f "$F/calls" "$F/run.argv"
osb
expect_eq "$(staged_skills)" "review" "a run exposes the project's imports"
echo "changed by the agent" >>"$P/.opencode-sandbox/skills/review/SKILL.md"
osb
expect_contains "$ERR" "skill review changed since it was imported" "a changed project skill is said"
mv "$P/.opencode-sandbox" "$H/elsewhere"
ln -s "$H/elsewhere" "$P/.opencode-sandbox"
rm -f "$F/run.argv"
osb
expect_eq "$RC" 2 "a project's imports reached through a link"
expect_contains "$ERR" "skills-manifest.json: reached through a symbolic link" "... are refused"
osb skills import "$H/src" --project "$P"
expect_eq "$RC" 2 "... and never written through"

begin skills-both-scopes
skillsrc "$H/src"
osb skills import "$H/src"
mkdir -p "$P/.opencode-sandbox/skills/review"
cp "$H/src/review/SKILL.md" "$P/.opencode-sandbox/skills/review/"
printf '{"version": 1, "skills": [{"name": "review", "source": "x", "sha256": "y"}]}\n' >"$P/.opencode-sandbox/skills-manifest.json"
rm -f "$F/calls"
osb
golden
expect_eq "$RC" 2 "a name imported globally and into the project stops the run"
expect_contains "$ERR" "skill review is imported both globally" "... saying so"
osb skills list
expect_contains "$OUT" "duplicate" "skills list shows it"
osb doctor --json
expect_eq "$(check skills)" fail "doctor fails on it"
osb skills import "$H/src/deploy" --scope project
expect_eq "$RC" 2 "an import into the project of a name imported globally"

# --- policy test ---

# verdict: action, rule and source of the last --json answer.
verdict() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["action"], d["rule"], d["source"])' 2>&1; }

begin policy-test-global
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  blocklist: ["*.segment.io"]\n  allowlist: ["api.github.com"]\n' >"$H/$GLOBAL"
osb policy test https://api.segment.io/v1/track
golden
expect_eq "$RC" 0 "policy test: exit 0 whatever the answer"
expect_contains "$OUT" "blocked: api.segment.io
matched rule: *.segment.io (blocklist, $H/$GLOBAL:3)" "the seed's lines: the rule with its file and line"
expect_contains "$OUT" "mode: practical" "... the mode"
expect_contains "$OUT" "note: practical mode blocks normal DNS/proxy traffic but cannot guarantee direct-IP blocking" "... and the note"
osb policy test api.github.com --method POST --json
expect_eq "$(verdict)" "allow api.github.com $H/$GLOBAL:4" "--json: an allowlisted host, every method"
ANSWER=$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); [d.pop(k) for k in ("policy", "policy_source")]; print(json.dumps(d, sort_keys=True))')
"$BUILD_DIR/policyctl" explain --config "$H/$GLOBAL" --method POST --json api.github.com >"$F/explain.json" 2>"$F/explain.err"
expect_eq "$ANSWER" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("policy", "policy_source")]; print(json.dumps(d, sort_keys=True))' "$F/explain.json")" \
	"the same answer as policyctl explain on the same file"
osb policy test example.com --method DELETE
expect_contains "$OUT" "blocked: example.com
matched rule: method-not-allowed (methods, builtin)" "a write to a host on no list: blocked by the method rules"

begin policy-test-providers
mkdir -p "$H/.local/share/opencode"
echo '{"anthropic": {"type": "api", "key": "sk-ant-secret"}}' >"$H/.local/share/opencode/auth.json"
osb policy test https://api.anthropic.com/v1/messages --method POST
golden
expect_contains "$OUT" "allowed: api.anthropic.com
matched rule: api.anthropic.com (allowlist, (providers):" "the model provider a run allowlists"
expect_absent "$OUT$ERR" "sk-ant-secret" "... never its key"

begin policy-test-project
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  blocklist: ["*.segment.io"]\n' >"$H/$GLOBAL"
printf 'version: 1\nnetwork:\n  allowlist: ["api.project.test"]\n  blocklist: ["tracker.test"]\n' >"$P/.opencode-sandbox.yaml"
osb policy test api.project.test --method POST --project "$P"
golden
expect_contains "$OUT" "blocked: api.project.test" "a project file not accepted: its allowlist is not taken"
expect_contains "$ERR" "answered as a run has them until you accept them" "... and that is said"
osb policy test tracker.test --project "$P"
expect_contains "$OUT" "blocked: tracker.test
matched rule: tracker.test (blocklist, $P/.opencode-sandbox.yaml:4)" "... its blocklist is (it tightens)"
osb policy test tracker.test
expect_contains "$OUT" "allowed: tracker.test" "without --project: the global policy only"
osb --accept-policy-changes
osb policy test api.project.test --method POST --project "$P" --json
expect_eq "$(verdict)" "allow api.project.test $P/.opencode-sandbox.yaml:3" "accepted: the project's allowlist is taken, as in the run"
expect_eq "$(grep -c '"api.project.test"' "$F/staged/config/policy.yaml")" 1 "... which the run handed to egressd"

begin policy-test-errors
osb policy test
golden
expect_eq "$RC" 2 "policy test without a host"
osb policy test example.com --method 'GE T'
expect_eq "$RC" 2 "a method that is not one"
osb policy test 'http://exa mple.com/'
expect_eq "$RC" 2 "a URL that does not parse"
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  blocklist: "x"\n' >"$H/$GLOBAL"
osb policy test example.com
expect_eq "$RC" 2 "a configuration error"
expect_contains "$ERR" "config.yaml:3:" "... with its place"

# --- config ---

begin config-path
mkdir -p "$P/.opencode"
echo '{}' >"$P/.opencode/sandbox.json"
osb config path
golden
expect_contains "$OUT" "global: $H/$GLOBAL (none yet)" "config path: the global file"
expect_contains "$OUT" "project: $P/.opencode/sandbox.json" "... and the project's"
osb config path --global
expect_eq "$OUT" "$H/$GLOBAL" "config path --global"

begin config-path-none
osb config path --project "$P"
golden
expect_eq "$RC" 1 "config path --project without a project file"

begin config-show
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nresources:\n  memory: 2g\nnetwork:\n  blocklist: ["*.segment.io"]\n' >"$H/$GLOBAL"
EXTRA=(ANTHROPIC_API_KEY=sk-ant-show-secret)
osb config show
golden
expect_contains "$OUT" "resources.memory: 2g  # $H/$GLOBAL:3" "each value with its source"
expect_contains "$OUT" "container.remove: true  # default" "... or default"
expect_contains "$OUT" '"*.segment.io"  # '"$H/$GLOBAL:5" "the policy with its sources"
expect_contains "$OUT" "ANTHROPIC_API_KEY=<redacted>" "a key is passed by name"
expect_absent "$OUT$ERR" "sk-ant-show-secret" "... never printed"
osb config show --json
expect_eq "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["wrapper"]["resources.memory"], d["network"]["blocklist"][0]["value"], d["environment"])')" \
	"{'value': '2g', 'source': '$H/$GLOBAL:3'} *.segment.io ['ANTHROPIC_API_KEY']" "config show --json"
expect_absent "$OUT" "sk-ant-show-secret" "... never the key"

# --- image build and upgrade ---

begin image-build
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" ANTHROPIC_API_KEY=sk-ant-build-secret)
osb image build
golden
expect_eq "$RC" 0 "image build"
expect_contains "$(calls)" "build
-f
$INPUTS/build/image/Containerfile
-t
localhost/opencode-sandbox:latest
--label
io.opencode-sandbox.inputs=$DIGEST
--label
io.opencode-sandbox.version=$(sed -n 's/^set(EGRESS_VERSION \(.*\))$/\1/p' "$SRC_DIR/CMakeLists.txt")
$INPUTS/build" "from the installed build inputs, labelled with their digest and the version"
expect_absent "$(calls)" "sk-ant-build-secret" "nothing of the user's goes into the build"
expect_contains "$OUT" "next: \`opencode-sandbox doctor\`" "it prints the next command"

begin image-build-flags
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nimage:\n  name: example.test/osb:2\n  base: localhost/debian-base:bookworm\n' >"$H/$GLOBAL"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=proxy-ca \
	-keyout "$F/ca.key" -out "$H/proxy-ca.pem" -days 2 >/dev/null 2>&1
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS")
osb image build --opencode-version v1.17.0 --build-ca "$H/proxy-ca.pem"
golden
expect_contains "$(calls)" "-t
example.test/osb:2" "the configured image.name is the tag"
expect_contains "$(calls)" "BASE=localhost/debian-base:bookworm" "image.base is the base"
expect_contains "$(calls)" "OPENCODE_VERSION=1.17.0" "--opencode-version, its v dropped"
expect_contains "$(calls)" "--secret
id=build-ca,src=$H/proxy-ca.pem" "--build-ca is a build secret"
osb image build --tag other:1 --build-ca "$H/.config/opencode-sandbox/config.yaml"
expect_eq "$RC" 2 "a build CA without a certificate"
osb image build --tag other:1
expect_contains "$OUT" "\`opencode-sandbox --image other:1\` runs it" "another tag: how to run it"

begin image-build-docker
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" FAKE_ENV=DOCKER_BUILDKIT)
osb image build --runtime docker
golden
expect_contains "$(cat "$F/env")" "build DOCKER_BUILDKIT=1" "docker builds with BuildKit (the Containerfile's secret mount)"

begin image-build-errors
EXTRA=(OPENCODE_SANDBOX_DATADIR="$H/none")
osb image build
golden
expect_eq "$RC" 2 "no build inputs"
expect_contains "$ERR" "no build inputs in $H/none/build" "... says where it looked"
EXTRA=(OPENCODE_SANDBOX_DATADIR="$INPUTS" FAKE_BUILD_EXIT=3)
osb image build
expect_eq "$RC" 1 "a failed build"
expect_contains "$ERR" "podman build failed (exit 3)" "... says so"
osb image build --opencode-version '1.0;rm'
expect_eq "$RC" 2 "a version that is not one"
PATHS=$T/nobin
osb image build
expect_eq "$RC" 125 "no runtime"

begin upgrade
EXTRA=(FAKE_USER=opencode FAKE_OPENCODE_VERSION=1.18.40)
osb upgrade 1.18.40
cat "$F/build-1.Containerfile" "$F/build-2.Containerfile" >>"$F/out"
golden
expect_eq "$RC" 0 "upgrade"
expect_absent "$(calls)" "=== podman
pull" "a localhost/ image is not pulled"
expect_contains "$(cat "$F/build-1.Containerfile")" "npm install -g --no-audit --no-fund \"opencode-ai@\${OPENCODE_TARGET}\"" "npm installs opencode-ai@TARGET"
expect_contains "$(cat "$F/build-1.Containerfile")" "COPY --from=npm /opencode /usr/local/bin/opencode" "... and only the binary goes into the image"
expect_absent "$(sed -n '/^FROM \${IMAGE}$/,$p' "$F/build-1.Containerfile")" "USER" "the image's user is left as it was"
expect_contains "$(calls)" "OPENCODE_TARGET=1.18.40" "the target"
expect_contains "$(cat "$F/build-2.Containerfile")" 'LABEL ai.opencode.version="1.18.40"' "the new version as a label"
expect_contains "$(calls)" "-t
localhost/opencode-sandbox:latest" "tagged as the configured image"
expect_contains "$OUT" "1.18.33 -> 1.18.40 (user opencode kept)" "it says what changed"

begin upgrade-pull
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nimage:\n  name: registry.example/osb:1\n' >"$H/$GLOBAL"
EXTRA=(FAKE_PULL_FAIL=1)
osb upgrade
golden
expect_contains "$(calls)" "pull
registry.example/osb:1" "a registry's image is pulled first"
expect_contains "$ERR" "could not pull registry.example/osb:1" "a failed pull is said"
expect_contains "$(calls)" "OPENCODE_TARGET=latest" "the default target is latest"
expect_eq "$RC" 0 "... and the local image upgraded"

begin upgrade-refusals
osb upgrade --method curl
golden
expect_eq "$RC" 2 "OpenCode's --method"
expect_contains "$ERR" "--method curl is OpenCode's own upgrade" "... is refused with the reason"
osb upgrade '1.0 && rm -rf /'
expect_eq "$RC" 2 "a target that is not an npm version"
EXTRA=(FAKE_NO_IMAGE=1)
osb upgrade
expect_eq "$RC" 125 "no image to upgrade"
expect_contains "$ERR" "build it first" "... says what to do"
EXTRA=(FAKE_BUILD_EXIT=1)
osb upgrade
expect_eq "$RC" 1 "a failed upgrade build"
expect_contains "$ERR" "is unchanged" "... leaves the image as it was"

echo "host commands: $N cases"
finish
