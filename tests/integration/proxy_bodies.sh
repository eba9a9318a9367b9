#!/usr/bin/env bash
# Large bodies through egressd with flat memory: a 1 GiB upload (streamed
# from a generator, with Content-Length) to the origin's /echo and a 1 GiB
# download from /big, each checked by length and SHA-256 at the far end,
# with egressd's peak RSS (VmHWM) held under a bound; then a slow reader
# (curl --limit-rate) on a 64 MiB download while the origin sends as fast
# as it can, with egressd's RSS sampled throughout (backpressure).
# BODY_BYTES, SLOW_BYTES and SLOW_RATE shrink the runs; the memory bounds
# are skipped under AddressSanitizer, whose allocator keeps freed memory.
. "$(dirname "$0")/lib.sh"

BODY_BYTES=${BODY_BYTES:-1073741824}
SLOW_BYTES=${SLOW_BYTES:-67108864}
SLOW_RATE=${SLOW_RATE:-2M}
HWM_MAX_KB=$((64 * 1024))

start_origin
O=$ORIGIN_PORT
cat >"$T/policy.yaml" <<'YAML'
version: 1
network:
  mode: practical
  inheritGlobal: false
  allowlist: ["127.0.0.1", "allowed.test"]
  onViolation: block
YAML
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" || exit 1

# sha_stdin: SHA-256 of stdin (OpenSSL through Python: coreutils is slower).
sha_stdin() {
	python3 -c '
import hashlib, sys
h, n = hashlib.sha256(), 0
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())'
}
gen() { python3 "$ORIGIN_PY" --log /dev/null --gen "$1"; }
memory_checked() { ! asan_build; }

# The generator's pattern numbers its 64 KiB blocks, so a reordered or
# repeated block changes the hash.
WANT=$(gen "$BODY_BYTES" | sha_stdin)
start_rss=$(eg_kb VmRSS)

# --- 1 GiB upload with Content-Length ---
t0=$(now_ms)
run pcurl --max-time 120 -X POST -H "Content-Length: $BODY_BYTES" -H 'Expect:' \
    -H 'Transfer-Encoding:' -H 'Content-Type: application/octet-stream' -T - "http://allowed.test:$O/echo" \
    < <(gen "$BODY_BYTES")
up_ms=$(($(now_ms) - t0))
expect_rc 0 "upload through the proxy"
expect_eq "$(jqf .len) $(jqf .sha256)" "$WANT" "upload arrived whole (length and sha256)"
expect_eq "$(jq -r 'select(.target == "/echo") | .headers[] | select(.[0] | ascii_downcase ==
    "content-length") | .[1]' "$ORIGIN_LOG" | tail -n 1)" "$BODY_BYTES" "upload went with Content-Length"
OUT=$(audit_last '.event == "http" and .method == "POST"')
expect_eq "$(jqf .bytes_up)" "$BODY_BYTES" "upload audited bytes_up"

# --- 1 GiB download ---
t0=$(now_ms)
GOT=$(pcurl --max-time 120 "http://allowed.test:$O/big?n=$BODY_BYTES" | sha_stdin)
down_ms=$(($(now_ms) - t0))
expect_eq "$GOT" "$WANT" "download arrived whole (length and sha256)"
OUT=$(audit_last '.event == "http" and .path == "/big"')
expect_eq "$(jqf .bytes_down):$(jqf .status)" "$BODY_BYTES:200" "download audited bytes_down"
hwm=$(eg_kb VmHWM)
echo "# $BODY_BYTES bytes: upload ${up_ms} ms, download ${down_ms} ms; egressd RSS ${start_rss} kB at start, VmHWM ${hwm} kB"
if memory_checked; then
	expect_eq "$([ "$hwm" -lt "$HWM_MAX_KB" ] && echo yes)" yes \
	    "VmHWM after 2 x $BODY_BYTES bytes is ${hwm} kB (< $HWM_MAX_KB kB)"
else
	echo "# AddressSanitizer build: memory bound not checked"
fi

# --- slow reader: the origin sends at full speed, the client reads at SLOW_RATE ---
pcurl --max-time 90 --limit-rate "$SLOW_RATE" -o "$T/slow.out" \
    "http://allowed.test:$O/big?n=$SLOW_BYTES" 2>"$T/slow.err" &
CURL_PID=$!
track_pid "$CURL_PID"
max_rss=$(eg_rss_peak "$CURL_PID")
wait_exit "$CURL_PID" 5
expect_eq "$EXIT_RC" 0 "slow download finished ($(cat "$T/slow.err"))"
expect_eq "$(sha_stdin <"$T/slow.out")" "$(gen "$SLOW_BYTES" | sha_stdin)" "slow download intact"
echo "# slow reader: $SLOW_BYTES bytes at $SLOW_RATE/s, egressd VmRSS peak ${max_rss} kB"
if memory_checked; then
	expect_eq "$([ "$max_rss" -lt "$HWM_MAX_KB" ] && echo yes)" yes \
	    "RSS stays bounded under a slow reader (${max_rss} kB)"
	expect_eq "$([ "$((max_rss - start_rss))" -lt 16384 ] && echo yes)" yes \
	    "egressd did not buffer the slow response (grew $((max_rss - start_rss)) kB)"
fi

stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"
finish
