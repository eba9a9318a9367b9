#!/usr/bin/env bash
# The sandbox image itself, on an internal network with only the test
# origin (nothing to reach but its resolver): it builds from
# this tree on the local base; its entrypoint and command are sandbox-init
# and opencode; `opencode --version` runs through the entrypoint as the
# payload user and prints the pinned version; CMD's exit status (and death
# by a signal) comes back as the container's; OpenCode's baked config turns
# autoupdate off; the payload holds no capability, cannot read a CA key and
# sees the run CA in the system store; the audit log lands in the mounted
# state directory; scripts/sandbox prints and runs the documented command,
# the host's OpenCode config files read-only in a writable directory.
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

# scripts/sandbox: the command it prints is the command it runs.
mkdir -p "$T/proj" "$T/st2"
chown 1000:1000 "$T/proj" # the project belongs to the payload user, as on a host with uid 1000
DRY=$(HOME="$T/home" "$SRC_DIR/scripts/sandbox" --engine podman --image "$IMAGE" \
	--project "$T/proj" --state "$T/st2" --mode strict --provider anthropic --dry-run -- sh -c 'exit 3')
expect_eq "$DRY" "podman run --rm -i --cap-add NET_ADMIN -v $T/proj:/workspace -v $T/st2:/sandbox/logs --entrypoint sandbox-init $IMAGE --mode strict --config /etc/opencode-sandbox/profiles/anthropic.yaml -- sh -c exit\\ 3" \
	"scripts/sandbox --dry-run prints the podman command"
mkdir -p "$T/home/.config/opencode" "$T/home/.local/share/opencode"
echo '{"theme": "system"}' >"$T/home/.config/opencode/opencode.json"
echo '{}' >"$T/home/.local/share/opencode/auth.json"
HOME="$T/home" timeout 120 "$SRC_DIR/scripts/sandbox" --engine podman --image "$IMAGE" \
	--project "$T/proj" --state "$T/st2" --provider anthropic --engine-arg=--network="$NET" --engine-arg=--dns=198.18.0.1 -- \
	sh -c 'cat ~/.config/opencode/opencode.json; echo x 2>/dev/null >>~/.config/opencode/opencode.json || echo config-ro;
		touch ~/.config/opencode/x && echo config-dir-writable;
		test -r ~/.local/share/opencode/auth.json && echo auth-mounted; echo hi >/workspace/made; exit 3' \
	</dev/null >"$T/out" 2>"$T/err"
RC=$?
OUT=$(cat "$T/out")
expect_eq "$RC" 3 "scripts/sandbox returns CMD's status"
expect_contains "$(cat "$T/err")" "+ podman run --rm -i" "scripts/sandbox prints the command it runs"
expect_contains "$OUT" '"theme": "system"' "the host's OpenCode config is mounted"
expect_contains "$OUT" config-ro "the host's OpenCode config is read-only"
expect_contains "$OUT" config-dir-writable "OpenCode's config directory in the container is writable"
expect_eq "$(cat "$T/home/.config/opencode/opencode.json")" '{"theme": "system"}' "the host's config file is unchanged"
if [ -e "$T/home/.config/opencode/x" ]; then bad "a file made in the container's config directory is not on the host"; else ok; fi
expect_contains "$OUT" auth-mounted "the host's OpenCode auth is mounted"
expect_eq "$(cat "$T/proj/made" 2>/dev/null)" hi "the project is mounted read-write at /workspace"
if [ -f "$T/st2/audit-events.jsonl" ]; then ok; else bad "scripts/sandbox: the audit log is in --state"; fi

echo "basics done after $(elapsed)s"
finish
