#!/usr/bin/env bash
# The sandbox image itself, on an internal network with only the test
# origin (nothing to reach but its resolver): it builds from
# this tree on the local base; its entrypoint and command are sandbox-init
# and opencode; `opencode --version` runs through the entrypoint as the
# payload user and prints the pinned version; CMD's exit status (and death
# by a signal) comes back as the container's; OpenCode's baked config turns
# autoupdate off; the payload holds no capability, cannot read a CA key and
# sees the run CA in the system store; the audit log lands in the mounted
# state directory; opencode-sandbox prints and runs its command, which is
# always OpenCode (the host command's own tests: host/ and sandbox.sh).
. "$(dirname "$0")/lib.sh"

image_build || { bad "the image builds"; finish; }
ok
lib_net_up || { bad "test network"; finish; }

# Entrypoint, command, users, files.
expect_eq "$(podman image inspect --format '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$IMAGE")" \
	'["sandbox-init","--"] ["opencode"]' "ENTRYPOINT and CMD"
run() { # run CMD...: the image as shipped (default entrypoint)
	timeout 120 podman run --rm --network "$NET" --dns 198.18.0.1 "$IMAGE" "$@" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
}

run opencode --version
expect_eq "$RC" 0 "opencode --version through the entrypoint exits 0"
expect_eq "$OUT" "$OPENCODE_VERSION" "opencode is the pinned version"

run sh -c 'id -un; id -u; pwd; echo "$HOME"; echo "$OPENCODE_SANDBOX_MODE"'
expect_eq "$OUT" "opencode
1000
/workspace
/home/opencode
practical" "the payload: user opencode, uid 1000, in /workspace, practical mode"

run sh -c 'exit 42'
expect_eq "$RC" 42 "CMD's exit status is the container's"
run sh -c 'kill -TERM $$'
expect_eq "$RC" 143 "CMD killed by SIGTERM: 128+15"
run no-such-command
expect_eq "$RC" 127 "a missing CMD: 127"

run opencode debug config
expect_eq "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("autoupdate"))' 2>&1)" \
	False "OpenCode's effective config has autoupdate off"

# Privileges and the CA, from inside the payload.
run sh -c 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status; grep NoNewPrivs /proc/self/status'
expect_absent "$(printf '%s\n' "$OUT" | grep Cap | grep -v 0000000000000000)" Cap \
	"the payload has every capability set empty"
expect_contains "$OUT" "NoNewPrivs:	1" "the payload runs with no_new_privs"

run sh -c 'grep -rls "PRIVATE KEY" /run /tmp /etc /sandbox /workspace /home 2>/dev/null; echo end
	ls /run/opencode-sandbox/ca
	python3 -c "s = open(\"/etc/ssl/certs/ca-certificates.crt\").read()
c = open(\"/run/opencode-sandbox/ca/ca.pem\").read().strip()
print(\"store-has-run-ca\" if c and c in s else \"store-lacks-run-ca\")"'
expect_eq "$(printf '%s\n' "$OUT" | sed -n 1p)" end "no readable file holds a private key"
expect_contains "$OUT" "ca.pem" "the run CA certificate is in /run/opencode-sandbox/ca"
expect_contains "$OUT" "store-has-run-ca" "the system trust store holds the run CA"

# The audit log of a run lands in the mounted state directory.
mkdir -p "$T/state"
timeout 120 podman run --rm --network "$NET" --dns 198.18.0.1 -v "$T/state:/sandbox/logs" \
	"$IMAGE" curl -s -o /dev/null -w '%{http_code}' http://example.test/ >"$T/out" 2>"$T/err"
expect_eq "$(cat "$T/out")" 403 "the baked policy: a name on a private address is refused"
if [ -s "$T/state/audit-events.jsonl" ]; then
	ok
	expect_contains "$(cat "$T/state/audit-events.jsonl")" '"host":"example.test"' \
		"the request is in the audit log on the host"
else
	bad "audit log written to the mounted state dir"
fi

# opencode-sandbox: the command it prints is the command it runs, and
# `opencode` is always what runs (here OpenCode's --version, after --).
mkdir -p "$T/home/.config/opencode-sandbox" "$T/proj"
printf 'version: 1\nimage:\n  name: %s\n' "$IMAGE" >"$T/home/.config/opencode-sandbox/config.yaml"
lib_containers_conf
(cd "$T/proj" && HOME="$T/home" XDG_CONFIG_HOME='' XDG_STATE_HOME='' CONTAINERS_CONF="$T/containers.conf" \
	timeout 120 "$BUILD_DIR/opencode-sandbox" --print-command --no-providers -- --version \
	</dev/null >"$T/out" 2>"$T/err")
RC=$?
expect_eq "$RC" 0 "opencode-sandbox -- --version exits 0"
expect_eq "$(cat "$T/out")" "$OPENCODE_VERSION" "opencode-sandbox runs the image's OpenCode"
expect_contains "$(cat "$T/err")" "+ /usr/bin/podman run --rm --interactive --name opencode-sandbox-proj-" \
	"opencode-sandbox prints the command it runs"
expect_contains "$(cat "$T/err")" "-- opencode --version" "... ending with opencode and its arguments"

echo "basics done after $(elapsed)s"
finish
