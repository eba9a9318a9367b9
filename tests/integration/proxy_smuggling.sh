#!/usr/bin/env bash
# Request smuggling and parser-strictness vectors (smuggle.py) sent as raw
# bytes to egressd: CL.TE, TE.CL, Transfer-Encoding obfuscations, duplicate
# and conflicting Content-Length, bare LF/CR, NUL, obs-fold, bad and huge
# chunk sizes, requests hidden in bodies, userinfo and Host games, request
# line games, h2c upgrade, 431 and 414. Each vector must end in a 4xx with no
# complete request at the origin, or in exactly the one request the client
# meant, as recorded by the origin. The audit log must stay whole JSON lines.
. "$(dirname "$0")/lib.sh"

start_origin
cat >"$T/policy.yaml" <<'YAML'
version: 1
network:
  mode: practical
  inheritGlobal: false
  blocklist: ["blocked.test"]
  allowlist: ["allowed.test"]
  onViolation: block
YAML
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" || exit 1

n=0
while IFS= read -r line; do
	n=$((n + 1))
	case "$line" in
	ok\ *) ok ;;
	*) bad "${line#FAIL }" ;;
	esac
done < <(cd "$SRC_DIR/tests/integration" && timeout 150 python3 smuggle.py "$EG_PORT" \
    "$ORIGIN_PORT" "$ORIGIN_LOG" 2>&1)
expect_eq "$([ "$n" -ge 20 ] && echo yes)" yes "at least 20 vectors ran ($n)"

# egressd is still healthy and its audit log is whole lines.
run pcurl -o /dev/null -w '%{http_code}' "http://allowed.test:$ORIGIN_PORT/hello"
expect_eq "$OUT" 200 "egressd still answers after the vectors"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"
expect_eq "$(jq -c . "$EG_AUDIT" >/dev/null 2>&1 && echo ok)" ok "audit file is whole JSON lines"
finish
