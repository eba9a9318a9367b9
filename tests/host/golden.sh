#!/usr/bin/env bash
# Golden argv tests of opencode-sandbox (seed 003 §17.2): the real binary
# runs against fake podman, docker and container executables
# (fake_runtime.py, first in PATH) that record every argv and the
# environment they were given, and copy the policy files and the OpenCode
# overlay they were handed. Each case runs in a fresh home, state and
# project, with a clean environment; its transcript (exit status, the
# `run` argv, the runtime's other calls, stdout and stderr, normalized by
# normalize.py) must equal tests/host/golden/NAME.txt, and the case's
# assertions name what it is about: every row of the argument rules,
# configuration precedence and inheritGlobal, seed 000's file, consent,
# providers, readonly, resources, strict/off, redaction, --keep, serve
# ports, path refusals, each preflight message, the exit status, signals
# and the summary line. GOLDEN_UPDATE=1 rewrites the golden files.
set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"

BIN=$BUILD_DIR/opencode-sandbox
GOLDEN=$SRC_DIR/tests/host/golden
T=$(mktemp -d /tmp/osb-host.XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"; rm -f "$EXPECT_UNKNOWN"' EXIT
mkdir -p "$T/bin" "$T/nobin"
for n in podman docker container; do
	ln -s "$SRC_DIR/tests/host/fake_runtime.py" "$T/bin/$n"
done
CPUS=$(nproc)
[ "$CPUS" -gt 4 ] && CPUS=4
N=0
SEEN=" "

# begin NAME: a fresh home ($H), project ($P, the working directory), fake dir ($F).
begin() {
	CASE=$1
	case $SEEN in *" $CASE "*) bad "case $CASE defined twice" ;; esac
	SEEN="$SEEN$CASE "
	N=$((N + 1))
	H=$T/$N/home
	P=$H/proj
	F=$T/$N/fake
	mkdir -p "$H" "$P" "$F"
	CWD=$P
	EXTRA=()
	PATHS="$T/bin:/usr/bin:/bin"
}

# osb ARGS...: opencode-sandbox in $CWD with a clean environment plus EXTRA
# (NAME=VALUE words); RC, OUT, ERR, and RUN (the normalized run argv).
osb() {
	(cd "$CWD" && env -i PATH="$PATHS" HOME="$H" LANG=C FAKE_DIR="$F" \
		FAKE_ENV="ANTHROPIC_API_KEY OPENCODE_SANDBOX_NETWORK_MODE" \
		"${EXTRA[@]+"${EXTRA[@]}"}" "$BIN" "$@" </dev/null >"$F/out" 2>"$F/err")
	RC=$?
	OUT=$(cat "$F/out")
	ERR=$(cat "$F/err")
	RUN=$(if [ -f "$F/run.argv" ]; then norm <"$F/run.argv"; fi)
}

# The container's name in the last run, to normalize it.
cname() { [ -f "$F/run.argv" ] && sed -n '/^--name$/{n;p;q}' "$F/run.argv"; }
norm() { python3 "$SRC_DIR/tests/host/normalize.py" "$T/$N" "$(cname)" "$CPUS" "$T"; }

# golden: the transcript of the last osb, compared with tests/host/golden/CASE.txt.
golden() {
	local got want=$GOLDEN/$CASE.txt
	got=$({
		echo "exit: $RC"
		echo "--- run"
		if [ -f "$F/run.argv" ]; then cat "$F/run.argv"; else echo "(not run)"; fi
		echo "--- other runtime calls"
		[ -f "$F/calls" ] && awk '/^=== /{if (l) print l; l=substr($0, 5); next} {l = l " " $0} END {if (l) print l}' "$F/calls" | grep -v '^[a-z]* run --' | grep -v '^[a-z]* run$'
		echo "--- stdout"
		cat "$F/out"
		echo "--- stderr"
		cat "$F/err"
	} | norm)
	if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
		printf '%s\n' "$got" >"$want"
		ok
		return
	fi
	if [ -f "$want" ] && [ "$got" = "$(cat "$want")" ]; then ok; else
		bad "$CASE: transcript differs from $want:"$'\n'"$(diff <(printf '%s\n' "$got") "$want" | head -n 40)"
	fi
}

# arg_after FLAG: the run argv's word after the first FLAG.
arg_after() { printf '%s\n' "$RUN" | sed -n "/^$1\$/{n;p;q}"; }
# oc_args: what comes after sandbox-init's "--" (opencode and its arguments), on one line.
oc_args() { printf '%s\n' "$RUN" | sed -n '/^--$/,$p' | sed 1d | paste -sd' '; }
staged() { cat "$F/staged/$1" 2>/dev/null; }
calls() { cat "$F/calls" 2>/dev/null; }

# --- the argument rules (seed 003 §6.3) ---

begin no-args
osb
golden
expect_eq "$RC" 0 "no arguments: runs"
expect_eq "$(oc_args)" "opencode" "no arguments: opencode alone, always prepended"
expect_contains "$RUN" "type=bind,source=\$T/home/proj,target=/workspace" "the working directory is the project"

begin root-help
osb --help
golden
expect_eq "$(oc_args)" "opencode --help" "root --help is OpenCode's"

begin root-h
osb -h
golden
expect_eq "$(oc_args)" "opencode -h" "root -h is OpenCode's"

begin dot
osb .
golden
expect_eq "$(oc_args)" "opencode" "an existing directory is the project, not an argument"

begin dot-help
osb . --help
golden
expect_eq "$(oc_args)" "opencode --help" "the project, then OpenCode's arguments"

begin run-alone
osb run
golden
expect_eq "$(oc_args)" "opencode" "run alone is the wrapper's run"

begin run-dir
mkdir -p "$H/other"
osb run "$H/other"
golden
expect_contains "$RUN" "source=\$T/home/other,target=/workspace" "run DIR: DIR is the project"
expect_eq "$(oc_args)" "opencode" "run DIR: nothing for OpenCode"

begin run-dir-args
mkdir -p "$H/other"
osb run "$H/other" --model anthropic/claude-sonnet-4-5
golden
expect_eq "$(oc_args)" "opencode --model anthropic/claude-sonnet-4-5" "run DIR ARGS: the rest is OpenCode's"

begin run-prompt
osb run "summarize this repo"
golden
expect_eq "$(oc_args)" "opencode run summarize this repo" "run PROMPT is OpenCode's own run"
expect_eq "$(printf '%s\n' "$RUN" | tail -n 1)" "summarize this repo" "the prompt stays one argument"

begin run-prompt-flag-after
osb run "summarize" --network-mode strict
golden
expect_eq "$(oc_args)" "opencode run summarize" "a wrapper flag after a positional word is taken out"
expect_eq "$(arg_after --mode)" strict "... and applied"
expect_eq "$(arg_after --cap-add)" NET_ADMIN "strict adds NET_ADMIN"

begin escape-help
osb -- --help
golden
expect_eq "$(oc_args)" "opencode --help" "-- --help: OpenCode's"

begin escape-run
osb . -- run "summarize this repo"
golden
expect_eq "$(oc_args)" "opencode run summarize this repo" ". -- run PROMPT"

begin escape-wrapper-flag
osb -- --dry-run
golden
expect_eq "$(oc_args)" "opencode --dry-run" "after --, a wrapper flag is OpenCode's"

begin model-flag
osb --model anthropic/claude-sonnet-4-5
golden
expect_eq "$(oc_args)" "opencode --model anthropic/claude-sonnet-4-5" "OpenCode's options pass through"

begin subdir
mkdir -p "$P/sub"
osb sub --print-logs
golden
expect_contains "$RUN" "source=\$T/home/proj/sub,target=/workspace" "a relative directory is the project"
expect_eq "$(oc_args)" "opencode --print-logs" "unknown options are OpenCode's"

begin dir-after-option
mkdir -p "$H/other"
osb --print-logs "$H/other"
golden
expect_contains "$RUN" "source=\$T/home/other,target=/workspace" "the first positional word is the project, after options"

begin inline-value
osb --network-mode=off
golden
expect_eq "$(arg_after --mode)" off "--flag=value"
expect_eq "$(arg_after --cap-add)" NET_ADMIN "off adds NET_ADMIN"

begin reserved-doctor
osb doctor
golden
expect_eq "$RC" 2 "a reserved word of another subcommand"
expect_eq "$(calls)" "" "... runs nothing"

begin help
osb help
golden
expect_eq "$RC" 0 "help is the wrapper's"
expect_contains "$OUT" "--network-mode" "help lists the flags"
expect_eq "$(calls)" "" "help runs nothing"

begin missing-value
osb --config
golden
expect_eq "$RC" 2 "a flag without its value"
expect_contains "$ERR" "--config needs a value" "... says so"

begin dry-run
osb run "summarize" --dry-run
golden
expect_eq "$RC" 0 "dry run"
expect_eq "$(calls)" "" "dry run: the runtime is not even asked"
expect_contains "$OUT" "nothing was started or contacted" "dry run says so"
expect_contains "$OUT" "opencode run summarize" "dry run shows the command"
if [ -e "$H/.local/state/opencode-sandbox" ]; then bad "dry run made state directories"; else ok; fi

# --- container options ---

begin readonly
osb --readonly
golden
expect_contains "$RUN" "source=\$T/home/proj,target=/workspace,readonly" "--readonly mounts the project read-only"

begin resources
osb --cpus 1.5 --memory 1g
golden
expect_eq "$(arg_after --cpus)" 1.5 "--cpus"
expect_eq "$(arg_after --memory)" 1g "--memory"

begin bad-cpus
osb --cpus lots
golden
expect_eq "$RC" 2 "a bad --cpus"
expect_contains "$ERR" 'command line: cpus: "lots" is not a number of CPUs' "... is checked like the file's key"

begin keep
osb --keep
golden
expect_absent "$RUN" "--rm" "--keep: no --rm"
expect_contains "$ERR" "kept the container" "--keep says what it kept"

begin debug
osb --debug
golden
expect_contains "$RUN" "--verbose" "--debug: sandbox-init verbose"
expect_contains "$RUN" "--egressd-arg=--verbose" "--debug: egressd verbose"
expect_contains "$ERR" "+ $T/bin/podman run --rm" "--debug prints the command"

begin image-flag
osb --image example.test/sandbox:1
golden
expect_contains "$RUN" "example.test/sandbox:1" "--image"
expect_contains "$(calls)" "image
exists
example.test/sandbox:1" "the image is checked before the run"

begin serve
osb serve
golden
expect_eq "$(arg_after --publish)" 127.0.0.1:4096:4096 "serve publishes on 127.0.0.1 only"
expect_eq "$(oc_args)" "opencode serve --port 4096 --hostname 0.0.0.0" "serve gets a known port and listens in the container"
expect_eq "$(arg_after --serve-port)" 4096 "sandbox-init lets the replies out in strict/off"

begin serve-port
osb serve --port 8080
golden
expect_eq "$(arg_after --publish)" 127.0.0.1:8080:8080 "serve --port N publishes N"

begin web-hostname
osb web --port=5000 --hostname 127.0.0.1
golden
expect_eq "$(arg_after --publish)" 127.0.0.1:5000:5000 "web --port=N"
expect_eq "$(oc_args)" "opencode web --port=5000 --hostname 127.0.0.1" "the user's --hostname is kept"

begin tty
(cd "$P" && env -i PATH="$PATHS" HOME="$H" LANG=C TERM=xterm-256color FAKE_DIR="$F" \
	script -qec "$BIN" /dev/null >/dev/null 2>&1)
RC=$?
echo "(under script(1))" >"$F/out"
: >"$F/err"
RUN=$(norm <"$F/run.argv")
golden
expect_contains "$RUN" "--tty" "a terminal on stdin: --tty"
expect_contains "$RUN" "--env
TERM" "the terminal's TERM passes (by name)"

# --- configuration ---

GLOBAL=.config/opencode-sandbox/config.yaml

begin global-config
mkdir -p "$H/.config/opencode-sandbox"
cat >"$H/$GLOBAL" <<'EOT'
version: 1
image:
  name: registry.example/osb:2
resources:
  cpus: 6
  memory: 2g
container:
  namePrefix: mybox
  remove: false
network:
  mode: strict
  allowlist: [global.example]
EOT
osb
golden
expect_contains "$RUN" "registry.example/osb:2" "image.name"
expect_eq "$(arg_after --cpus)" 6 "resources.cpus"
expect_eq "$(arg_after --memory)" 2g "resources.memory"
expect_absent "$RUN" "--rm" "container.remove: false"
expect_contains "$(cname)" "mybox-proj-" "container.namePrefix"
expect_eq "$(arg_after --mode)" strict "network.mode"
expect_contains "$(staged config/policy.yaml)" '"global.example"' "the global allowlist reaches sandbox-init"

begin xdg-config-home
mkdir -p "$H/xdg/opencode-sandbox"
printf 'version: 1\nnetwork:\n  mode: off\n' >"$H/xdg/opencode-sandbox/config.yaml"
EXTRA=(XDG_CONFIG_HOME="$H/xdg")
osb
golden
expect_eq "$(arg_after --mode)" off "the global file under \$XDG_CONFIG_HOME"

begin cli-overrides
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  mode: strict\nresources:\n  cpus: 6\nproject:\n  readonly: false\n' >"$H/$GLOBAL"
osb --network-mode practical --cpus 1.5 --readonly
golden
expect_eq "$(arg_after --mode)" practical "--network-mode wins over the files"
expect_absent "$RUN" "NET_ADMIN" "practical: no NET_ADMIN"
expect_eq "$(arg_after --cpus)" 1.5 "--cpus wins"
expect_contains "$RUN" "target=/workspace,readonly" "--readonly wins"

begin config-flag
printf 'version: 1\nnetwork:\n  allowlist: [flag.example]\n' >"$H/extra.yaml"
osb --config "$H/extra.yaml" --allow cli.example
golden
expect_contains "$(staged config/policy.yaml)" '"flag.example"' "--config reaches sandbox-init as trusted configuration"
expect_contains "$(staged config/policy.yaml)" '"cli.example"' "--allow reaches sandbox-init as trusted configuration"
expect_eq "$(arg_after --project-config)" none "no project file is read from the workspace"

begin config-error
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nopencode:\n  mountHostConfg: false\n' >"$H/$GLOBAL"
osb
golden
expect_eq "$RC" 2 "a typo in a wrapper section"
expect_contains "$ERR" "config.yaml:3:3: unknown key \"mountHostConfg\" in opencode" "... is an error with file:line:col"
expect_eq "$(calls)" "" "... before anything starts"

begin inherit-global
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  allowlist: [global.example]\n  blocklist: [ads.example]\n' >"$H/$GLOBAL"
printf 'version: 1\nnetwork:\n  allowlist: [project.example]\n' >"$P/.opencode-sandbox.yaml"
osb --accept-policy-changes
golden
expect_contains "$(staged config/policy.yaml)" '"global.example"' "inheritGlobal: true keeps the global allowlist"
expect_contains "$(staged config/policy.yaml)" '"project.example"' "... and appends the project's"
expect_contains "$(staged config/policy.yaml)" '"ads.example"' "... and the global blocklist"

begin inherit-replace
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nnetwork:\n  allowlist: [global.example]\n' >"$H/$GLOBAL"
printf 'version: 1\nnetwork:\n  inheritGlobal: false\n  allowlist: [project.example]\n' >"$P/.opencode-sandbox.yaml"
osb --accept-policy-changes
golden
expect_absent "$(staged config/policy.yaml)" '"global.example"' "inheritGlobal: false replaces the global list"
expect_contains "$(staged config/policy.yaml)" '"project.example"' "... with the project's"
expect_contains "$ERR" "inheritGlobal: false: the project's lists replace the global ones" "consent says the lists are dropped"

begin project-upward
mkdir -p "$P/deep/er"
printf 'version: 1\nproject:\n  readonly: true\n' >"$P/.opencode-sandbox.yaml"
CWD=$P/deep/er
osb --accept-policy-changes
golden
expect_contains "$RUN" "source=\$T/home/proj/deep/er,target=/workspace,readonly" "the nearest .opencode-sandbox.yaml above the project"

begin seed000
mkdir -p "$P/.opencode"
cat >"$P/.opencode/sandbox.json" <<'EOT'
{
  "network": {"observe": true, "allow_methods": ["GET", "HEAD", "OPTIONS", "PUT"],
              "allow_graphql_queries": false},
  "filesystem": {"inherit_permissions": true, "allow_write": [], "deny_read": []},
  "auto_allow_clean": true,
  "verbose": true,
  "docker": {"image": "opencode-sandbox:local"}
}
EOT
osb --accept-policy-changes
golden
expect_contains "$RUN" "opencode-sandbox:local" "seed 000's docker.image is the image"
expect_contains "$RUN" "--verbose" "seed 000's verbose is --debug"
expect_contains "$(staged config/policy.yaml)" '"PUT"' "seed 000's allow_methods"
expect_contains "$ERR" "network.observe has no effect here" "seed 000's observe is noted"
expect_contains "$ERR" "filesystem.allow_write has no effect here" "seed 000's filesystem keys are noted"

begin seed000-typo
mkdir -p "$P/.opencode"
printf '{"network": {"allow_method": ["GET"]}}\n' >"$P/.opencode/sandbox.json"
osb
golden
expect_eq "$RC" 2 "a typo in seed 000's file"
expect_contains "$ERR" "sandbox.json:1:14: unknown key \"allow_method\" in network" "... with file:line:col"

begin seed003-defaults
# The files seed 003's `init --global` and `init` write, as they are.
mkdir -p "$H/.config/opencode-sandbox" "$H/.local/share/opencode"
cat >"$H/$GLOBAL" <<'EOT'
version: 1

image:
  name: ghcr.io/rabbitcybersec/opencode-sandbox:latest
  autoBuild: false

opencode:
  mountHostConfig: true
  mountHostData: true
  generatedConfig: true
  autoupdate: false

skills:
  importedDir: ~/.config/opencode-sandbox/skills
  include:
    - "*"
  exclude: []

network:
  mode: practical
  blocklist: []
  allowlist: []
  proxyPort: 18080
  dnsPort: 15353
  failClosed: true

resources:
  cpus: 4
  memory: 4g
EOT
cat >"$P/.opencode-sandbox.yaml" <<'EOT'
version: 1

image:
  name: ghcr.io/rabbitcybersec/opencode-sandbox:latest
  autoBuild: false

project:
  target: /workspace
  readonly: false

opencode:
  mountHostConfig: true
  mountHostData: true
  generatedConfig: true
  autoupdate: false

skills:
  importedDir: .opencode-sandbox/skills
  include:
    - "*"
  exclude: []

network:
  # Inherit global network defaults and add project-specific rules here.
  inheritGlobal: true
  mode: practical
  blocklist: []
  allowlist: []

resources:
  cpus: 4
  memory: 4g

container:
  namePrefix: opencode-sandbox
  remove: true
EOT
echo '{"anthropic": {"type": "api", "key": "k"}}' >"$H/.local/share/opencode/auth.json"
osb
golden
expect_eq "$RC" 0 "seed 003's default files: a project file that changes nothing in effect runs"
expect_contains "$(staged config/policy.yaml)" '"api.anthropic.com"' "... and the first run reaches its model"
expect_contains "$RUN" "ghcr.io/rabbitcybersec/opencode-sandbox:latest" "... in the image they name"

begin unused-keys
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nskills:\n  exposeGlobalSkills: true\n' >"$H/$GLOBAL"
osb
golden
expect_contains "$ERR" "skills.exposeGlobalSkills is not used by a run" "a key of a later subcommand is said, not dropped silently"

# --- consent for project policy files ---

begin consent-refused
printf 'version: 1\nnetwork:\n  allowlist: [evil.example]\n' >"$P/.opencode-sandbox.yaml"
osb
golden
expect_eq "$RC" 2 "a new project file, nobody to ask: refused"
expect_contains "$ERR" "+ allowlisted (every method): evil.example" "the change in plain words"
expect_eq "$(calls)" "" "nothing started"

begin consent-accepted
printf 'version: 1\nnetwork:\n  allowlist: [ok.example]\n' >"$P/.opencode-sandbox.yaml"
osb --accept-policy-changes
expect_eq "$RC" 0 "accepted with --accept-policy-changes"
rm -f "$F/calls" "$F/run.argv"
osb
golden
expect_eq "$RC" 0 "unchanged since accepted: runs without asking"
expect_contains "$(staged config/policy.yaml)" '"ok.example"' "an accepted file is trusted configuration"
printf 'version: 1\nnetwork:\n  allowlist: [ok.example, more.example]\n  mode: strict\n' >"$P/.opencode-sandbox.yaml"
rm -f "$F/calls" "$F/run.argv"
osb
expect_eq "$RC" 2 "changed after acceptance: refused again"
expect_contains "$ERR" "+ allowlisted (every method): more.example" "the new entry is named"
expect_contains "$ERR" "network mode: practical -> strict" "the mode change is named"

begin consent-declined
printf 'version: 1\nnetwork:\n  allowlist: [evil.example]\n  blocklist: [ads.example]\n' >"$P/.opencode-sandbox.yaml"
(cd "$P" && printf 'n\n' | env -i PATH="$PATHS" HOME="$H" LANG=C FAKE_DIR="$F" \
	script -qec "$BIN run 'hello'" /dev/null >"$F/tty.out" 2>&1)
RC=$?
echo "(under script(1))" >"$F/out"
: >"$F/err"
RUN=$(norm <"$F/run.argv")
golden
expect_eq "$RC" 0 "declined at the prompt: the run goes on"
expect_eq "$(arg_after --project-config)" /sandbox/config/project-1.yaml "the file goes in as the untrusted project file"
expect_absent "$(staged config/policy.yaml)" "evil.example" "its allowlist is not trusted"
expect_eq "$(staged config/project-1.yaml)" "$(cat "$P/.opencode-sandbox.yaml")" "the bytes checked are the bytes handed in"
expect_contains "$(cat "$F/tty.out")" "Accept?" "the question was asked"

begin consent-symlink
printf 'version: 1\n' >"$H/elsewhere.yaml"
ln -s "$H/elsewhere.yaml" "$P/.opencode-sandbox.yaml"
osb
golden
expect_eq "$RC" 2 "a project file that is a symbolic link is refused"

# --- providers ---

begin providers-auth
mkdir -p "$H/.local/share/opencode"
echo '{"anthropic": {"type": "api", "key": "sk-ant-secret"}}' >"$H/.local/share/opencode/auth.json"
osb
golden
expect_contains "$(staged config/policy.yaml)" '"api.anthropic.com"' "auth.json's provider is allowlisted"
expect_contains "$ERR" "anthropic (api.anthropic.com; credentials in auth.json)" "... and said why"
expect_contains "$RUN" "auth.json,target=/home/opencode/.local/share/opencode/auth.json,readonly" "auth.json read-only"
expect_contains "$(staged opencode/opencode.json)" '"anthropic"' "the overlay enables the sandbox's providers"
expect_absent "$OUT$ERR$RUN" "sk-ant-secret" "the key is never printed or passed"

begin providers-custom
mkdir -p "$H/.config/opencode"
cat >"$H/.config/opencode/opencode.json" <<'EOT'
{
  // a custom provider
  "provider": {"mine": {"npm": "@ai-sdk/openai-compatible",
                        "options": {"baseURL": "https://llm.example.com/v1"},}},
  "model": "mine/m1",
}
EOT
osb
golden
expect_contains "$(staged config/policy.yaml)" '"llm.example.com"' "a custom provider's baseURL host"
expect_contains "$RUN" "opencode.json,target=/home/opencode/.config/opencode/opencode.json,readonly" "the config file, read-only"

begin providers-none
osb --no-providers
golden
expect_absent "$(staged config/policy.yaml)" "opencode.ai" "--no-providers allowlists nothing"

begin providers-default
osb
golden
expect_contains "$(staged config/policy.yaml)" '"opencode.ai"' "nothing set up: OpenCode's own models"

begin providers-env
EXTRA=(ANTHROPIC_API_KEY=sk-ant-env-secret)
osb --print-command
golden
expect_contains "$RUN" "--env
ANTHROPIC_API_KEY
" "the key variable is passed by name"
expect_absent "$RUN$ERR" "sk-ant-env-secret" "never its value in the argv or the printed command"
expect_contains "$(cat "$F/env")" "run ANTHROPIC_API_KEY=sk-ant-env-secret" "the runtime gets it from the environment"

begin redact-apple
EXTRA=(ANTHROPIC_API_KEY=sk-ant-env-secret)
osb --runtime container --print-command
golden
expect_contains "$RUN" "ANTHROPIC_API_KEY=sk-ant-env-secret" "Apple's container needs the value in the argv"
expect_contains "$ERR" "'ANTHROPIC_API_KEY=<redacted>'" "--print-command redacts it"
expect_absent "$ERR" "sk-ant-env-secret" "... never printed"

# --- the user's files ---

begin host-config
mkdir -p "$H/.config/opencode/agent" "$H/.config/opencode/node_modules" "$H/.ssh"
echo '{}' >"$H/.config/opencode/opencode.json"
echo '{}' >"$H/.config/opencode/package.json"
echo x >"$H/.config/opencode/agent/r.md"
printf '[user]\n\tname = T\n' >"$H/.gitconfig"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$H/.config/opencode/agent.sock"
osb
golden
expect_contains "$RUN" "agent,target=/home/opencode/.config/opencode/agent,readonly" "a folder of the config, read-only"
expect_absent "$RUN" "node_modules" "what OpenCode manages is left out"
expect_absent "$RUN" "package.json" "package.json is left out"
expect_absent "$RUN" "agent.sock" "a socket is never mounted"
expect_absent "$RUN" ".ssh" "the .ssh directory is never mounted"
expect_contains "$RUN" ".gitconfig,target=/home/opencode/.gitconfig,readonly" "the .gitconfig, read-only"
expect_contains "$ERR" "agent.sock: not mounted: is a socket" "the socket is said"
expect_contains "$(cat "$F/home.list")" ".config/opencode/opencode.json" "mount points are made in the staged home"

begin no-host-config
mkdir -p "$H/.config/opencode" "$H/.local/share/opencode" "$H/.config/opencode-sandbox"
echo '{}' >"$H/.config/opencode/opencode.json"
echo '{}' >"$H/.local/share/opencode/auth.json"
printf 'version: 1\nopencode:\n  mountHostConfig: false\n  mountHostData: false\n  generatedConfig: false\n' >"$H/$GLOBAL"
osb
golden
expect_absent "$RUN" ".config/opencode/opencode.json" "mountHostConfig: false"
expect_absent "$RUN" "auth.json" "mountHostData: false"
expect_absent "$RUN" "OPENCODE_CONFIG" "generatedConfig: false: no overlay"

begin extra-mounts
mkdir -p "$H/.config/opencode-sandbox" "$H/data"
printf 'version: 1\nproject:\n  extraMounts: ["~/data:/data", "~/data:/data2:rw"]\n' >"$H/$GLOBAL"
osb
golden
expect_contains "$RUN" "source=\$T/home/data,target=/data,readonly" "extraMounts read-only by default"
expect_contains "$RUN" "source=\$T/home/data,target=/data2
" "extraMounts :rw"

begin extra-mount-home
mkdir -p "$H/.config/opencode-sandbox"
printf 'version: 1\nproject:\n  extraMounts: ["~:/h"]\n' >"$H/$GLOBAL"
osb
golden
expect_eq "$RC" 2 "an extra mount of the home directory is refused"
expect_contains "$ERR" "is your home directory" "... saying why"

begin upstream-ca
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=corp-ca \
	-keyout "$F/ca.key" -out "$H/corp-ca.pem" -days 2 >/dev/null 2>&1
osb --upstream-ca "$H/corp-ca.pem"
golden
expect_eq "$(arg_after --upstream-ca)" /sandbox/config/upstream-ca.pem "--upstream-ca reaches sandbox-init"
expect_eq "$(staged config/upstream-ca.pem)" "$(cat "$H/corp-ca.pem")" "... as a copy in the trusted files"

begin upstream-ca-bad
echo "not a certificate" >"$H/bad.pem"
osb --upstream-ca "$H/bad.pem"
golden
expect_eq "$RC" 2 "an upstream CA without a certificate"
expect_contains "$ERR" "no PEM certificate" "... says so"

# --- path refusals ---

begin refuse-root
CWD=/
osb
golden
expect_eq "$RC" 2 "/ is never a project"
expect_contains "$ERR" "project / is the root directory" "... says so"

begin refuse-home
CWD=$H
osb
golden
expect_eq "$RC" 2 "the home directory is never a project"
expect_contains "$ERR" "is your home directory" "... says so"

begin refuse-home-symlink
ln -s "$H" "$H/proj/link-to-home"
osb link-to-home
golden
expect_eq "$RC" 2 "a link to the home directory is resolved and refused"

begin refuse-comma
mkdir -p "$H/a,b"
CWD="$H/a,b"
osb
golden
expect_eq "$RC" 2 "a project path a mount cannot carry"

# --- runtimes and preflight ---

begin no-runtime
PATHS=$T/nobin
osb
golden
expect_contains "$ERR" "no container runtime found in PATH" "no runtime"
expect_eq "$RC" 125 "... is a runtime error"

begin runtime-missing
PATHS=$T/nobin
osb --runtime docker
golden
expect_contains "$ERR" "docker not found in PATH" "the runtime asked for is missing"

begin runtime-bogus
osb --runtime lxc
golden
expect_contains "$ERR" "--runtime lxc: expected podman, docker or container" "an unknown runtime"

begin docker-daemon-down
EXTRA=(FAKE_NO_DAEMON=1)
osb --runtime docker
golden
expect_contains "$ERR" "the Docker daemon is not running" "daemon not running"
expect_absent "$(calls)" "=== docker
run" "... nothing run"

begin apple-stopped
EXTRA=(FAKE_NO_DAEMON=1)
osb --runtime container
golden
expect_contains "$ERR" "container system start" "Apple's service stopped"

begin image-missing
EXTRA=(FAKE_NO_IMAGE=1)
osb
golden
expect_contains "$ERR" "run \`opencode-sandbox image build\`" "image missing"

begin strict-no-cap
EXTRA=(FAKE_NO_CAP_ADD=1)
osb --runtime container --network-mode strict
golden
expect_contains "$ERR" "strict mode needs CAP_NET_ADMIN" "strict on a runtime without --cap-add"
expect_contains "$ERR" "--network-mode practical" "... says how to run practical mode"

begin docker-root
chown -R 1234:1234 "$P"
osb --runtime docker
golden
expect_eq "$(arg_after --user)" 1234:1234 "root on a rootful runtime: the project's owner is the payload"
expect_eq "$(arg_after --home)" /home/opencode "... with the image's home"

begin apple
osb --runtime container
golden
expect_contains "$RUN" "--read-only" "Apple: read-only root"
expect_absent "$RUN" "--userns" "Apple: no user namespace flags"

begin podman-rootless
chown -R 65534:65534 "$T/$N"
(cd "$P" && setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATHS" HOME="$H" \
	LANG=C FAKE_DIR="$F" "$BIN" >"$F/out" 2>"$F/err")
RC=$?
ERR=$(cat "$F/err")
RUN=$(norm <"$F/run.argv")
golden
expect_eq "$(arg_after --userns)" keep-id:uid=1000,gid=1000 "rootless podman: the user is the payload (keep-id)"
expect_eq "$(arg_after --audit-owner)" 1000:1000 "... and gets the audit log at the end"

begin docker-user
chown -R 65534:65534 "$T/$N"
(cd "$P" && setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH="$PATHS" HOME="$H" \
	LANG=C FAKE_DIR="$F" "$BIN" --runtime docker >"$F/out" 2>"$F/err")
RC=$?
RUN=$(norm <"$F/run.argv")
golden
expect_eq "$(arg_after --user)" 65534:65534 "rootful docker as a user: the user's uid is the payload"
expect_eq "$(arg_after --audit-owner)" 65534:65534 "... and gets the audit log"

# --- exit status, signals, the summary ---

begin exit-status
EXTRA=(FAKE_EXIT=7)
osb
golden
expect_eq "$RC" 7 "OpenCode's exit status is returned"

begin sigterm
(cd "$P" && exec env -i PATH="$PATHS" HOME="$H" LANG=C FAKE_DIR="$F" FAKE_RUN_WAIT=1 \
	"$BIN" </dev/null >"$F/out" 2>"$F/err") &
pid=$!
for _ in $(seq 100); do [ -s "$F/run.pid" ] && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
RC=$?
RUN=$(norm <"$F/run.argv")
golden
expect_eq "$RC" 143 "SIGTERM: the run ends with the container's status"
expect_eq "$(cat "$F/run.signal" 2>/dev/null)" 15 "SIGTERM reached the container (RT kill --signal TERM)"
expect_contains "$(calls)" "kill
--signal
TERM" "it was passed with the runtime's kill"
expect_contains "$(calls)" "rm
--force" "the container is removed"

begin summary
cat >"$F/audit.jsonl" <<'EOT'
{"v":1,"seq":1,"event":"daemon","reason":"started"}
{"v":1,"seq":2,"event":"dns","action":"allow","rule":"default","qname":"a.example"}
{"v":1,"seq":3,"event":"connect","action":"allow","rule":"intercept","host":"a.example","tls":"intercept"}
{"v":1,"seq":4,"event":"http","action":"allow","method":"GET","host":"a.example"}
{"v":1,"seq":5,"event":"http","action":"block","method":"POST","host":"b.example"}
{"v":1,"seq":6,"event":"http","action":"flag","method":"PUT","host":"c.example"}
{"v":1,"seq":7,"event":"connect","action":"block","host":"d.example"}
{"v":1,"seq":8,"event":"daemon","reason":"stopped"}
EOT
EXTRA=(FAKE_AUDIT="$F/audit.jsonl")
osb
golden
expect_contains "$ERR" "opencode-sandbox: 4 requests, 2 blocked, 1 flagged; review: policyctl audit " "the summary line"
expect_contains "$ERR" "/logs/audit-events.jsonl" "... names the run's audit file"

echo "host golden: $N cases"
if [ "$N" -ge 40 ]; then ok; else bad "at least 40 cases: $N"; fi
finish
