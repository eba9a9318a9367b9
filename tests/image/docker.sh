#!/usr/bin/env bash
# opencode-sandbox with Docker, for real: a private dockerd (Debian's
# docker.io) started in a network namespace of its own, which has no route
# anywhere, with the image loaded from podman and the scripted model on its
# bridge (198.18.0.1, also the containers' DNS server). opencode-sandbox runs
# as an unprivileged user (uid 1234, allowed on the daemon's socket), so
# rootful Docker gets the user's own ids for the payload: the agent's tool
# call writes a file in the project, which must belong to that user; it
# reaches an unlisted origin with a GET (allowed) and a POST (refused); the
# audit log is handed to the user (sandbox-init --audit-owner), who can read
# it, and the summary line counts it; the container is gone afterwards.
. "$(dirname "$0")/lib.sh"

BIN=$BUILD_DIR/opencode-sandbox
[ -x "$BIN" ] || { bad "opencode-sandbox is built ($BIN)"; finish; }
command -v dockerd >/dev/null || skip "needs dockerd (Debian's docker.io)"
command -v docker >/dev/null || skip "needs a docker client"
command -v nsenter >/dev/null || skip "needs nsenter"

DNS="osbdk-$ID"
DROOT=/tmp/osbdk-$ID
DATA=/var/lib/osb-docker-test # kept: the loaded image is reused by the next run
export DOCKER_HOST=unix://$DROOT/docker.sock
USER_ID=1234

# shellcheck disable=SC2317 # called by the EXIT trap
docker_cleanup() {
	local pid=""
	docker ps -aq 2>/dev/null | xargs -r docker rm -f >/dev/null 2>&1
	[ -f "$DROOT/pid" ] && pid=$(cat "$DROOT/pid")
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
	fi
	ip netns del "$DNS" 2>/dev/null
	rm -rf "$DROOT"
	lib_cleanup
}
trap docker_cleanup EXIT

image_build || { bad "the image builds"; finish; }

# The daemon, in a namespace with only loopback and its bridge: nothing a
# container sends can leave the machine. nsenter enters the network
# namespace alone (ip netns exec would hide the host's cgroup mounts).
ip netns add "$DNS" || { bad "network namespace"; finish; }
ip netns exec "$DNS" ip link set lo up
mkdir -p "$DROOT"
chmod 755 "$DROOT"
nsenter --net="/run/netns/$DNS" dockerd --iptables=false --ip6tables=false \
	--bip 198.18.0.254/24 --dns 198.18.0.1 --data-root "$DATA" --exec-root "$DROOT/exec" \
	--pidfile "$DROOT/pid" -H "$DOCKER_HOST" >"$DROOT/log" 2>&1 &
for _ in $(seq 120); do
	docker version >/dev/null 2>&1 && break
	sleep 0.5
done
docker version >/dev/null 2>&1 || {
	tail -n 20 "$DROOT/log" >&2
	bad "dockerd starts"
	finish
}
chmod 666 "$DROOT/docker.sock"
if [ "$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null)" != \
	"$(podman image inspect --format '{{.Id}}' "$IMAGE" | sed 's/^/sha256:/')" ]; then
	podman save "$IMAGE" | docker load >"$T/load.log" 2>&1 || {
		cat "$T/load.log" >&2
		bad "the image loads into docker"
		finish
	}
fi
echo "dockerd ready, image loaded after $(elapsed)s"

# The model: one tool call that writes into the project and reaches an origin.
cat >"$T/script.json" <<'EOT'
[
  {"when": "STEP-DOCKER", "tool": "bash",
   "args": {"description": "write and reach",
            "command": "echo from-docker >/workspace/made-in-docker.txt; curl -sS -o /dev/null -w 'get=%{http_code}\\n' https://readonly.test/hello; curl -sS -o /dev/null -w 'post=%{http_code}\\n' -X POST -d x https://readonly.test/echo; id -u"},
   "reply": "Docker step done."}
]
EOT
lib_test_ca || { bad "test CA"; finish; }
cp "$T/script.json" "$T/origin/script.json"
chmod 644 "$T/origin/script.json"
# shellcheck disable=SC2016 # the container's shell expands it
docker run -d --name "osb-dk-origin-$ID" -v "$T/origin:/origin:ro" --entrypoint sh "$IMAGE" -c '
	exec python3 /origin/inet.py --lifetime 900 --tls-cert /origin/origin.pem \
		--tls-key /origin/origin.key --model-reply "Nothing else." \
		--model-log /tmp/model.jsonl --model-script /origin/script.json' >/dev/null
expect_eq "$(docker inspect --format '{{.NetworkSettings.IPAddress}}' "osb-dk-origin-$ID")" 198.18.0.1 \
	"the model server is 198.18.0.1 on the daemon's bridge"
for _ in $(seq 100); do
	docker logs "osb-dk-origin-$ID" 2>&1 | grep -q ready && break
	sleep 0.1
done

# The user: OpenCode config and key, opencode-sandbox's global file, a project.
H=$T/dkhome
P=$T/dkproj
mkdir -p "$H/.config/opencode" "$H/.local/share/opencode" "$H/.config/opencode-sandbox" "$P"
cat >"$H/.config/opencode/opencode.json" <<'EOT'
{
  "provider": {"test": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
                        "options": {"baseURL": "https://model.test/v1"},
                        "models": {"scripted": {"name": "Scripted", "tool_call": true}}}},
  "model": "test/scripted"
}
EOT
echo '{"test": {"type": "api", "key": "sk-docker-test"}}' >"$H/.local/share/opencode/auth.json"
cp "$T/testca.pem" "$H/testca.pem"
cat >"$H/.config/opencode-sandbox/config.yaml" <<EOT
version: 1
image:
  name: $IMAGE
network:
  allowlist: ["198.18.0.0/24"]
opencode:
  permission: {edit: allow, bash: allow}
container:
  upstreamCa: $H/testca.pem
resources:
  cpus: 1
EOT
chown -R "$USER_ID:$USER_ID" "$H" "$P"

(cd "$P" && setpriv --reuid="$USER_ID" --regid="$USER_ID" --clear-groups \
	env -i PATH="$PATH" HOME="$H" LANG=C DOCKER_HOST="$DOCKER_HOST" \
	timeout 300 "$BIN" --runtime docker run "STEP-DOCKER: go" </dev/null >"$T/out" 2>"$T/err")
RC=$?
OUT=$(cat "$T/out")
ERR=$(cat "$T/err")
expect_eq "$RC" 0 "docker: the run exits 0 ($(tail -n 5 "$T/err"))"
expect_contains "$OUT" "Docker step done." "docker: OpenCode printed the reply after the tool call"
BODIES=$(docker exec "osb-dk-origin-$ID" cat /tmp/model.jsonl 2>/dev/null)
expect_contains "$BODIES" "get=200" "docker: the GET succeeded"
expect_contains "$BODIES" "post=403" "docker: the POST was refused"
expect_contains "$BODIES" "$USER_ID" "docker: the payload ran as the user's uid"
expect_eq "$(stat -c %u:%g "$P/made-in-docker.txt" 2>/dev/null)" "$USER_ID:$USER_ID" \
	"docker: the agent's file belongs to the invoking user"
AUDIT=$(printf '%s\n' "$ERR" | sed -n 's/.*review: policyctl audit //p' | tail -n 1)
expect_eq "$(stat -c %u "$AUDIT" 2>/dev/null)" "$USER_ID" "docker: the audit log was handed to the user"
USER_AUDIT=$(setpriv --reuid="$USER_ID" --regid="$USER_ID" --clear-groups cat "$AUDIT" 2>&1)
expect_contains "$USER_AUDIT" '"action":"block","rule":"method-not-allowed"' \
	"docker: the user reads the refused POST in the audit log"
expect_contains "$ERR" "opencode-sandbox: $(printf '%s\n' "$USER_AUDIT" | python3 -c '
import json, sys
req = blk = flg = 0
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    ev, act = e.get("event"), e.get("action")
    if act is None:
        continue
    r = ev in ("http", "websocket", "tcp") or (ev == "connect" and not (act == "allow" and e.get("tls") == "intercept"))
    req += r
    if r or ev in ("tls", "packet"):
        blk += act == "block"
        flg += act == "flag"
print("%d requests, %d blocked, %d flagged" % (req, blk, flg))')" "docker: the summary line counts what the audit log holds"
expect_eq "$(docker ps -aq --filter name=opencode-sandbox- | wc -l)" 0 "docker: the container is removed"

echo "docker done after $(elapsed)s"
finish
