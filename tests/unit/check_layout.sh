#!/usr/bin/env bash
# scripts/check-layout, the include-rule check of `make lint`, run on the
# fixture tree tests/data/layout/: every include there is allowed but one,
# proxy/tls/tls.c including the proxy above it. The report must name that
# one, as tests/data/layout.err has it, and the exit status must be 1.
set -u
SRC_DIR=${SRC_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/egress-layout.XXXXXX")
trap 'rm -rf "$T"' EXIT

python3 "$SRC_DIR/scripts/check-layout" "$SRC_DIR/tests/data/layout" >"$T/out" 2>"$T/err"
expect_eq "$?" 1 "an upward include fails the check"
expect_eq "$(cat "$T/err")" "$(cat "$SRC_DIR/tests/data/layout.err")" "the report names the one upward include"
expect_eq "$(cat "$T/out")" "" "nothing on stdout when the check fails"
finish
