# shellcheck shell=bash
# Counted assertions for every shell test suite (integration, netns, image):
# each expect_* adds one pass or one failure, finish prints the totals and
# exits non-zero on any failure. A call to a command that does not exist (a
# misspelt or missing helper) is a failure too, never a silent pass: bash
# runs command_not_found_handle in a subshell, so it leaves a mark in a file
# that finish counts. Source it from a suite's lib.sh.

PASS=0
FAIL=0
PENDING=0
EXPECT_UNKNOWN=$(mktemp "${TMPDIR:-/tmp}/egress-expect.XXXXXX")

ok() { PASS=$((PASS + 1)); }
bad() {
	FAIL=$((FAIL + 1))
	printf 'FAIL: %s\n' "$*" >&2
}
# pending FEATURE LABEL: an assertion written but waiting on a feature.
pending() {
	PENDING=$((PENDING + 1))
	printf 'PENDING (%s): %s\n' "$1" "$2" >&2
}
expect_eq() { # expect_eq GOT WANT LABEL
	if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}
expect_ne() { # expect_ne GOT UNWANTED LABEL
	if [ "$1" != "$2" ]; then ok; else bad "$3: got '$1'"; fi
}
expect_contains() { # expect_contains TEXT NEEDLE LABEL
	case "$1" in
	*"$2"*) ok ;;
	*) bad "$3: '$2' not in:"$'\n'"$1" ;;
	esac
}
expect_absent() { # expect_absent TEXT NEEDLE LABEL
	case "$1" in
	*"$2"*) bad "$3: '$2' found in:"$'\n'"$1" ;;
	*) ok ;;
	esac
}
expect_line() { # expect_line TEXT LINE LABEL: TEXT has LINE as a whole line
	if printf '%s\n' "$1" | grep -qxF -- "$2"; then ok; else
		bad "$3: no line '$2' in:"$'\n'"$1"
	fi
}
command_not_found_handle() {
	printf 'FAIL: %s: command not found (a test helper missing?)\n' "$1" >&2
	printf '%s\n' "$1" >>"$EXPECT_UNKNOWN"
	return 127
}
finish() {
	local unknown
	unknown=$(wc -l <"$EXPECT_UNKNOWN" 2>/dev/null || echo 0)
	rm -f "$EXPECT_UNKNOWN"
	FAIL=$((FAIL + unknown))
	if [ "$PENDING" -gt 0 ]; then
		printf '%d passed, %d failed, %d pending\n' "$PASS" "$FAIL" "$PENDING"
	else
		printf '%d passed, %d failed\n' "$PASS" "$FAIL"
	fi
	[ "$FAIL" -eq 0 ]
	exit $?
}
skip() {
	rm -f "$EXPECT_UNKNOWN"
	printf 'SKIP: %s\n' "$*"
	exit 0
}
