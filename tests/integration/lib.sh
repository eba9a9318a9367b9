# Shared helpers for the integration scripts: a private temp dir removed on
# exit, assertions that count, and a closing "N passed, N failed" line.
# Scripts run from ctest with BUILD_DIR and SRC_DIR set.

set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
POLICYCTL="$BUILD_DIR/policyctl"

T=$(mktemp -d "${TMPDIR:-/tmp}/egress-it.XXXXXX")
trap 'rm -rf "$T"' EXIT
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); }
bad() {
	FAIL=$((FAIL + 1))
	printf 'FAIL: %s\n' "$*" >&2
}

# run CMD...: runs a command, leaving OUT (stdout), ERR (stderr) and RC.
run() {
	"$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}

expect_rc() { # expect_rc WANT LABEL
	if [ "$RC" -eq "$1" ]; then ok; else bad "$2: exit $RC, want $1 (stderr: $ERR)"; fi
}

expect_line() { # expect_line TEXT LINE LABEL: TEXT has LINE as a whole line
	if printf '%s\n' "$1" | grep -qxF -- "$2"; then ok; else
		bad "$3: no line '$2' in:"$'\n'"$1"
	fi
}

expect_contains() { # expect_contains TEXT NEEDLE LABEL
	case "$1" in
	*"$2"*) ok ;;
	*) bad "$3: '$2' not in:"$'\n'"$1" ;;
	esac
}

expect_eq() { # expect_eq GOT WANT LABEL
	if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}

# jqf FILTER: apply a jq filter to OUT.
jqf() { printf '%s' "$OUT" | jq -r "$1"; }

finish() {
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ]
	exit $?
}
