#!/usr/bin/env bash
# The first byte of a new connection is under --header-timeout, not the
# idle timeout: with --max-conns 5, five connections that never send a byte
# take every slot, and egressd cuts them after the header timeout (1 s
# here, against an idle timeout of 60 s), so a new client is served within
# seconds. A connection that was served keeps the idle timeout between
# requests. Every wait is bounded.
. "$(dirname "$0")/lib.sh"

start_origin
O=$ORIGIN_PORT
cat >"$T/policy.yaml" <<EOT
version: 1
network:
  mode: practical
  allowlist: ["127.0.0.1"]
EOT
start_egressd --config "$T/policy.yaml" --upstream-dns "$ORIGIN_DNS" --max-conns 5 \
    --header-timeout 1 --idle-timeout 60 || exit 1

# silent.py N PORT: N connections that send nothing; prints READY, then for
# each the seconds until egressd closed it (or "open" after 15 s).
cat >"$T/silent.py" <<'EOT'
import select, socket, sys, time
n, port = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
t0 = time.monotonic()
print("READY", flush=True)
closed = {}
while len(closed) < n and time.monotonic() - t0 < 15:
    live = [s for s in socks if s not in closed]
    r, _, _ = select.select(live, [], [], 0.5)
    for s in r:
        try:
            data = s.recv(1)
        except OSError:
            data = b""
        if not data:
            closed[s] = round(time.monotonic() - t0, 1)
print(" ".join(str(closed.get(s, "open")) for s in socks), flush=True)
EOT
python3 "$T/silent.py" 5 "$EG_PORT" >"$T/silent.out" 2>&1 &
SILENT=$!
track_pid "$SILENT"
for ((i = 0; i < 100; i++)); do grep -q READY "$T/silent.out" && break; sleep 0.05; done
sleep 0.2
# Every slot is taken: this client waits in the backlog until one is freed.
t0=$(now_ms)
run pcurl --max-time 12 -o /dev/null -w '%{http_code}' "http://plain.test:$O/hello"
took=$(($(now_ms) - t0))
expect_eq "$OUT" 200 "a new client is served while byte-less connections held every slot"
if [ "$took" -lt 6000 ]; then ok; else bad "served after ${took} ms: the byte-less connections were not cut at the header timeout"; fi
wait_exit "$SILENT" 20
CLOSED=$(tail -n 1 "$T/silent.out")
expect_absent "$CLOSED" open "every byte-less connection was closed by egressd ($CLOSED)"
for t in $CLOSED; do
	case "$t" in
	open) ;;
	*)
		if awk -v t="$t" 'BEGIN { exit !(t >= 0.8 && t < 5) }'; then ok; else
			bad "a byte-less connection closed after $t s, want about the 1 s header timeout"
		fi
		;;
	esac
done

# A served keep-alive connection waits the idle timeout, not the header timeout.
python3 - "$EG_PORT" "$O" >"$T/keep.out" 2>&1 <<'EOT'
import socket, sys, time
port, o = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
req = ("GET http://plain.test:%s/hello HTTP/1.1\r\nHost: plain.test:%s\r\n\r\n" % (o, o)).encode()
def one():
    s.sendall(req)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return "closed"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0]
    while len(body) < length:
        body += s.recv(4096)
    return head.split(b" ")[1].decode()
print(one())
time.sleep(2.5)
print(one())
EOT
expect_eq "$(tr '\n' ' ' <"$T/keep.out")" "200 200 " "a served connection is kept past the header timeout"
stop_egressd
expect_eq "$EXIT_RC" 0 "egressd exits 0"
finish
