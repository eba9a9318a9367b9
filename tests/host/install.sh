#!/usr/bin/env bash
# make install's layout (cmake --install with DESTDIR, as make install runs
# it): the four programs, the man pages, the bash and zsh completions and
# the image's build inputs under share/opencode-sandbox/build; every file
# the Containerfile copies from its context is one image/build-inputs
# lists; and the installed opencode-sandbox, with no source tree to fall
# back on, builds from the installed inputs (against the fake runtime),
# whose digest is the source tree's, so that doctor agrees on "built from
# these inputs" whichever of the two built the image; the installed inputs
# configure on their own, as the image's build stage configures them.
set -u
: "${BUILD_DIR:?BUILD_DIR must point at the build directory}"
: "${SRC_DIR:?SRC_DIR must point at the source tree}"
# shellcheck source=../lib/sh/expect.sh
. "$SRC_DIR/tests/lib/sh/expect.sh"

T=$(mktemp -d /tmp/osb-install.XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"; rm -f "$EXPECT_UNKNOWN"' EXIT

# The prefix the build was configured with (make install passes PREFIX).
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD_DIR/CMakeCache.txt")
if DESTDIR="$T/root" cmake --install "$BUILD_DIR" >"$T/install.log" 2>&1; then ok; else
	bad "cmake --install: $(tail -n 5 "$T/install.log")"
	finish
fi
R=$T/root$PREFIX
for f in bin/opencode-sandbox bin/egressd bin/policyctl bin/sandbox-init \
	share/man/man1/opencode-sandbox.1 share/man/man1/policyctl.1 share/man/man8/egressd.8 \
	share/man/man8/sandbox-init.8 share/bash-completion/completions/opencode-sandbox \
	share/zsh/vendor-completions/_opencode-sandbox \
	share/opencode-sandbox/build/image/Containerfile \
	share/opencode-sandbox/build/image/build-inputs share/opencode-sandbox/build/CMakeLists.txt \
	share/opencode-sandbox/build/host/main.c share/opencode-sandbox/build/image/profiles/openai.yaml; do
	if [ -s "$R/$f" ]; then ok; else bad "make install puts $f in PREFIX"; fi
done
if [ -x "$R/bin/opencode-sandbox" ]; then ok; else bad "the program is executable"; fi

# Every COPY from the build context is a listed build input.
python3 - "$SRC_DIR" >"$T/copies" <<'PY'
import sys
root = sys.argv[1]
listed = [l.strip() for l in open(root + "/image/build-inputs") if l.strip() and not l.startswith("#")]
for line in open(root + "/image/Containerfile"):
    w = line.split()
    if not w or w[0] != "COPY" or any(x.startswith("--from") for x in w):
        continue
    for src in w[1:-1]:
        src = src.rstrip("/")
        if not any(src == l or src.startswith(l + "/") for l in listed):
            print("not a listed build input: " + src)
PY
expect_eq "$(cat "$T/copies")" "" "the Containerfile copies only listed build inputs"

# The installed inputs alone configure, as the Containerfile's build stage
# configures them (no tests/ there: nothing may need a test's file).
if cmake -S "$R/share/opencode-sandbox/build" -B "$T/configure" -DCMAKE_BUILD_TYPE=Release \
	-DEGRESS_WERROR=ON >"$T/configure.log" 2>&1; then ok; else
	bad "the installed build inputs configure without the source tree: $(grep -m 3 -A 3 'CMake Error' "$T/configure.log")"
fi

# The installed program finds the installed inputs (no OPENCODE_SANDBOX_DATADIR, no checkout).
mkdir -p "$T/bin" "$T/home" "$T/fake"
ln -s "$SRC_DIR/tests/host/fake_runtime.py" "$T/bin/podman"
(cd "$T/home" && env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T/home" FAKE_DIR="$T/fake" \
	"$R/bin/opencode-sandbox" image build >"$T/out" 2>&1)
expect_eq "$?" 0 "the installed opencode-sandbox builds the image ($(tail -n 2 "$T/out"))"
expect_contains "$(cat "$T/fake/calls")" "-f
$R/share/opencode-sandbox/build/image/Containerfile" "... from the installed Containerfile"
expect_contains "$(cat "$T/fake/calls")" "
$R/share/opencode-sandbox/build" "... with the installed inputs as the context"
INSTALLED=$(sed -n 's/^io.opencode-sandbox.inputs=//p' "$T/fake/calls")
rm -f "$T/fake/calls"
(cd "$T/home" && env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T/home" FAKE_DIR="$T/fake" \
	"$BUILD_DIR/opencode-sandbox" image build >"$T/out" 2>&1)
expect_contains "$(cat "$T/fake/calls")" "
$SRC_DIR" "the program in its build directory builds from its source tree"
expect_eq "$(sed -n 's/^io.opencode-sandbox.inputs=//p' "$T/fake/calls")" "$INSTALLED" \
	"the installed inputs' digest is the source tree's"
expect_eq "${#INSTALLED}" 64 "... a SHA-256"

finish
