#!/usr/bin/env bash
# The Debian package: `make package` builds opencode-sandbox_VERSION_ARCH.deb,
# whose dependencies are shared libraries only; `apt install ./FILE.deb`
# installs it into a clean Debian 12 container (the local base image, with
# nothing of the checkout), where opencode-sandbox help, doctor (which has
# no container runtime to find there, and says so), policy test (the global
# file's rule, with its file and line) and image build --help work, the man
# pages and completions are where man and the shells look, and the image's
# build inputs are where image build finds them.
. "$(dirname "$0")/lib.sh"

"$SRC_DIR/scripts/make-base-image" >"$T/base.log" 2>&1 || {
	cat "$T/base.log" >&2
	bad "the base image"
	finish
}
if ! make -C "$SRC_DIR" package BUILD="$T/build" JOBS=2 >"$T/package.log" 2>&1; then
	tail -n 30 "$T/package.log" >&2
	bad "make package"
	finish
fi
DEB=$(find "$T/build-package" -maxdepth 1 -name 'opencode-sandbox_*.deb' | head -n 1)
if [ -n "$DEB" ]; then ok; else
	bad "make package makes a .deb"
	finish
fi
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
others=$(printf '%s\n' "$DEPENDS" | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -v '^lib' || true)
expect_eq "$others" "" "the package depends on shared libraries only ($DEPENDS)"
expect_contains "$DEPENDS" "libevent-2.1-7" "... the ones the programs link"
mkdir -p "$T/pkg"
cp "$DEB" "$T/pkg/"
chmod -R a+rX "$T/pkg"

# In a clean container: install with apt, then use it.
cat >"$T/pkg/use.sh" <<'EOT'
set -u
exec 2>&1
cd /tmp
apt-get update -q >/tmp/apt.log 2>&1 || { echo "APT-UPDATE-FAILED"; tail -n 20 /tmp/apt.log; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y -q /pkg/opencode-sandbox_*.deb >>/tmp/apt.log 2>&1 ||
	{ echo "APT-INSTALL-FAILED"; tail -n 30 /tmp/apt.log; exit 1; }
echo "== installed $(dpkg-query -W -f='${Version}' opencode-sandbox)"
echo "== runtimes: $(command -v podman docker container | wc -l)"
mkdir -p /root/proj /root/.config/opencode-sandbox
cd /root/proj
echo "== help"; opencode-sandbox help; echo "rc=$?"
echo "== image build --help"; opencode-sandbox image build --help; echo "rc=$?"
printf 'version: 1\nnetwork:\n  blocklist: ["*.segment.io"]\n' >/root/.config/opencode-sandbox/config.yaml
echo "== policy test"; opencode-sandbox policy test https://api.segment.io/v1/t; echo "rc=$?"
echo "== doctor"; opencode-sandbox doctor --json; echo "rc=$?"
echo "== image build"; opencode-sandbox image build; echo "rc=$?"
echo "== files"
ls /usr/share/man/man1/opencode-sandbox.1* /usr/share/man/man8/egressd.8* \
	/usr/share/bash-completion/completions/opencode-sandbox \
	/usr/share/zsh/vendor-completions/_opencode-sandbox \
	/usr/share/opencode-sandbox/build/image/Containerfile
echo "== bash completion"
bash -c '. /usr/share/bash-completion/completions/opencode-sandbox; complete -p opencode-sandbox'
EOT
timeout 600 podman run --rm -v "$T/pkg:/pkg:ro" --entrypoint bash "$BASE_IMAGE" /pkg/use.sh \
	>"$T/use.out" 2>&1
RC=$?
OUT=$(cat "$T/use.out")
expect_eq "$RC" 0 "the package installs and is used in a clean Debian container ($(tail -n 5 "$T/use.out"))"
expect_contains "$OUT" "== installed 0." "apt install ./opencode-sandbox_*.deb"
expect_contains "$OUT" "== runtimes: 0" "... in a container without a runtime"
section() { printf '%s\n' "$OUT" | sed -n "/^== $1\$/,/^== /p"; }
expect_contains "$(section help)" "usage: opencode-sandbox [PROJECT]" "help works"
expect_contains "$(section help)" "rc=0" "... exit 0"
expect_contains "$(section 'image build --help')" "usage: opencode-sandbox image build" "image build --help works"
expect_contains "$(section 'policy test')" "blocked: api.segment.io" "policy test works"
expect_contains "$(section 'policy test')" "matched rule: *.segment.io (blocklist, /root/.config/opencode-sandbox/config.yaml:3)" "... naming the rule's file and line"
DOCTOR=$(section doctor | sed '1d;$d' | sed '$d')
expect_eq "$(printf '%s' "$DOCTOR" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = {c["id"]: c["status"] for c in d["checks"]}
print(d["ok"], s["runtime.binary"], s["config.global"], s["image.present"])' 2>&1)" \
	"False fail pass skip" "doctor works: no runtime there (fail), the configuration valid"
expect_contains "$(section doctor)" "rc=1" "... and exits 1 for the failure"
expect_contains "$(section 'image build')" "no container runtime found" "image build finds the installed inputs, then no runtime"
expect_absent "$(section 'image build')" "build inputs are not installed" "... the inputs are installed"
expect_contains "$(section files)" "/usr/share/opencode-sandbox/build/image/Containerfile" "the build inputs are installed"
expect_contains "$OUT" "complete -F _opencode_sandbox opencode-sandbox" "the bash completion is where bash-completion looks"

echo "package done after $(elapsed)s"
finish
