# shellcheck shell=bash
# Helpers for the resolver scripts (tests/integration/dns_*.sh), on top of lib.sh: the stub
# authority (dns_stub.py with tests/data/resolver/stub.zone), egressd with
# its DNS listener on a free port, and dig against it.

# shellcheck source=../lib.sh
. "$SRC_DIR/tests/integration/lib.sh"

DNS_STUB_PY="$SRC_DIR/tests/integration/dns_stub.py"
DNS_ZONE="$SRC_DIR/tests/data/resolver/stub.zone"
STUB_N=0

# start_stub [--silent]: a stub authority; sets STUB_PORT, STUB_LOG, STUB_PID.
# shellcheck disable=SC2034 # STUB_PORT is for the caller
start_stub() {
	STUB_N=$((STUB_N + 1))
	STUB_LOG="$T/stub.$STUB_N.jsonl"
	: >"$STUB_LOG"
	python3 "$DNS_STUB_PY" --zone "$DNS_ZONE" --port-file "$T/stub.$STUB_N.port" \
	    --log "$STUB_LOG" --parent $$ "$@" >"$T/stub.$STUB_N.out" 2>&1 &
	STUB_PID=$!
	track_pid "$STUB_PID"
	if ! wait_file "$T/stub.$STUB_N.port" 10; then
		echo "stub did not start: $(cat "$T/stub.$STUB_N.out")" >&2
		exit 1
	fi
	STUB_PORT=$(cat "$T/stub.$STUB_N.port")
}

# stub_count NAME [TYPE]: queries the stub saw for NAME (of TYPE, a number).
stub_count() {
	if [ $# -ge 2 ]; then
		jq -c "select(.name == \"$1\" and .type == $2)" "$STUB_LOG" | wc -l
	else
		jq -c "select(.name == \"$1\")" "$STUB_LOG" | wc -l
	fi
}

# start_resolver ARGS...: egressd with --dns on a free port; sets DNS_PORT.
start_resolver() {
	DNS_PORT=$(free_port)
	start_egressd --dns "127.0.0.1:$DNS_PORT" "$@"
}

# dq ARGS...: dig against egressd's resolver, one try; output in OUT.
dq() {
	run dig @127.0.0.1 -p "$DNS_PORT" +tries=1 +time=8 "$@"
}

# dq_status: the status of the last dq ("NOERROR", "NXDOMAIN", ...).
dq_status() { printf '%s\n' "$OUT" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p' | head -n 1; }

# dq_answers TYPE: the answer values of that type in the last dq, sorted.
dq_answers() {
	printf '%s\n' "$OUT" | awk -v t="$1" '/^;/ {next} $4 == t {print $5}' | sort | tr '\n' ' ' |
	    sed 's/ $//'
}

# dq_ede: the EDE line of the last dq.
dq_ede() { printf '%s\n' "$OUT" | grep 'EDE:' | head -n 1; }

write_dns_policy() { # write_dns_policy FILE MODE
	cat >"$1" <<EOF
version: 1
network:
  mode: $2
  inheritGlobal: false
  blocklist: ["blocked.example.test", "*.ads.example.test"]
  allowlist: ["198.18.0.0/15", "2001:2::/48", "trusted.example.test", "origin.example.test"]
EOF
}
