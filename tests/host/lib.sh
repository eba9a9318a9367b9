# shellcheck shell=bash
# Shared by the host tests (golden.sh, commands.sh): the real
# opencode-sandbox against fake podman, docker and container executables
# (fake_runtime.py, first in PATH) that record every argv and the
# environment they were given, and copy the files they were handed. Each
# case runs in a fresh home, state and project with a clean environment;
# its transcript (exit status, the `run` argv, the runtime's other calls,
# stdout and stderr, normalized by normalize.py) must equal
# tests/host/golden/NAME.txt. GOLDEN_UPDATE=1 rewrites the golden files.
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
# shellcheck disable=SC2034 # OUT and ERR are for the scripts
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

