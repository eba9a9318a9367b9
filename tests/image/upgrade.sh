#!/usr/bin/env bash
# `opencode-sandbox upgrade TARGET` with podman (seed 003 §7.9): the
# configured image (a copy of the test image, under a name of its own) gets
# opencode-ai@TARGET from the npm registry in a derived image; `opencode
# --version` in it is then TARGET, its label says so, its user and the
# rest of its configuration are what they were, its build-inputs label is
# kept, and a run through sandbox-init reaches the new OpenCode. The
# image it came from is left unchanged under its own name.
. "$(dirname "$0")/lib.sh"

TARGET=1.18.32 # a pinned release other than the image's
[ "$TARGET" != "$OPENCODE_VERSION" ] || bad "the pinned target differs from the image's version"
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
UP=localhost/opencode-sandbox-upgrade-test:$ID

# The image of this tree (the layer cache makes it quick after the other
# image tests); an image left from another tree would not take this tree's
# configuration.
image_build || {
	bad "the image builds"
	finish
}
podman tag "$IMAGE" "$UP" || {
	bad "a copy of the image to upgrade"
	finish
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_up() { podman rmi -f "$UP" >/dev/null 2>&1; lib_cleanup; }
trap cleanup_up EXIT

inspect() { podman image inspect --format "$1" "$2" 2>/dev/null; }
USER_BEFORE=$(inspect '{{.Config.User}}' "$UP")
ENTRY_BEFORE=$(inspect '{{json .Config.Entrypoint}}' "$UP")
INPUTS_BEFORE=$(inspect '{{index .Config.Labels "io.opencode-sandbox.inputs"}}' "$UP")
ID_BEFORE=$(inspect '{{.Id}}' "$IMAGE")

H=$T/home
mkdir -p "$H/.config/opencode-sandbox" "$T/proj"
printf 'version: 1\nimage:\n  name: %s\n' "$UP" >"$H/.config/opencode-sandbox/config.yaml"
osb() {
	(cd "$T/proj" && HOME="$H" XDG_CONFIG_HOME='' XDG_DATA_HOME='' XDG_STATE_HOME='' \
		timeout 1200 "$BUILD_DIR/opencode-sandbox" "$@" </dev/null >"$T/out" 2>"$T/err")
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
}
ca=()
[ -s "$CA_BUNDLE" ] && ca=(--build-ca "$CA_BUNDLE")
osb upgrade --method npm "$TARGET"
expect_eq "$RC" 2 "OpenCode's --method is refused"
expect_contains "$ERR" "OpenCode's own upgrade" "... with the reason"
osb upgrade "$TARGET" "${ca[@]+"${ca[@]}"}"
expect_eq "$RC" 0 "upgrade $TARGET ($(tail -n 5 "$T/err"))"
echo "upgraded after $(elapsed)s"
expect_contains "$OUT" "upgraded OpenCode in $UP: $OPENCODE_VERSION -> $TARGET" "it says what changed"
expect_eq "$(timeout 120 podman run --rm --entrypoint opencode "$UP" --version 2>/dev/null | tail -n 1)" \
	"$TARGET" "opencode --version in the upgraded image is the pinned version"
expect_eq "$(inspect '{{index .Config.Labels "ai.opencode.version"}}' "$UP")" "$TARGET" "its label says so"
expect_eq "$(inspect '{{.Config.User}}' "$UP")" "$USER_BEFORE" "the image's user is what it was"
expect_eq "$(inspect '{{json .Config.Entrypoint}}' "$UP")" "$ENTRY_BEFORE" "... and its entrypoint"
expect_eq "$(inspect '{{index .Config.Labels "io.opencode-sandbox.inputs"}}' "$UP")" "$INPUTS_BEFORE" \
	"... and the build inputs it came from"
expect_eq "$(inspect '{{.Id}}' "$IMAGE")" "$ID_BEFORE" "the image it came from is unchanged"
expect_eq "$(podman images --format '{{.Repository}}' | grep -c '^localhost/opencode-sandbox-upgrade$')" 0 \
	"the temporary image is gone"
# A run: sandbox-init, the unprivileged payload and the new OpenCode.
osb --network-mode off --no-providers --version
expect_eq "$RC" 0 "a run on the upgraded image ($(tail -n 3 "$T/err"))"
expect_eq "$(printf '%s\n' "$OUT" | tail -n 1)" "$TARGET" "... runs the new OpenCode"

echo "upgrade done after $(elapsed)s"
finish
