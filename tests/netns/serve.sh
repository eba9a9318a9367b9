#!/usr/bin/env bash
# A server in the sandbox (opencode serve, published to the host): with
# sandbox-init --serve-port N, in strict and off mode, the replies of a
# connection the outside opened to port N leave, while the payload still
# cannot open a connection of its own from that port; without the flag the
# replies are dropped, as everything else. The "host" is the internet
# namespace connecting to the sandbox's address.
. "$(dirname "$0")/lib.sh"

lib_net_up || { bad "namespaces"; finish; }
PORT=8099

# The payload: a one-request HTTP server on PORT, and a connection from
# PORT to the outside (which must fail), each reported on stdout.
cat >"$T/payload.sh" <<EOT
#!/bin/sh
python3 - <<'PY'
import socket, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
srv.bind(("0.0.0.0", $PORT)); srv.listen(1); srv.settimeout(12)
def out():
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    c.settimeout(3)
    try:
        c.bind(("0.0.0.0", $PORT)); c.connect(("198.18.0.1", 80)); c.sendall(b"GET / HTTP/1.0\r\n\r\n")
        print("outbound", "connected" if c.recv(64) else "nothing", flush=True)
    except OSError as e:
        print("outbound", "refused", e.__class__.__name__, flush=True)
threading.Thread(target=out).start()
try:
    conn, _ = srv.accept(); conn.recv(1024)
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nserved"); conn.close()
    print("served", flush=True)
except OSError as e:
    print("accept", e.__class__.__name__, flush=True)
PY
EOT
chmod 755 "$T/payload.sh"

# client: from the internet namespace, as the published port would.
client() {
	sleep 2
	in_inet curl -s --noproxy '*' --max-time 5 "http://198.18.0.2:$PORT/" >"$T/client" 2>&1
}

for mode in strict off; do
	lib_policy "$mode"
	client &
	cpid=$!
	box_init --serve-port "$PORT" --mode "$mode" -- /bin/sh "$T/payload.sh"
	wait "$cpid"
	expect_eq "$RC" 0 "$mode: the payload ran ($(tail -n 3 "$T/err"))"
	expect_eq "$(cat "$T/client")" served "$mode: the outside reached the server on the serve port"
	expect_absent "$(cat "$T/inet.log")" "http direct" \
		"$mode: the payload's connection from the serve port did not reach the outside"
	[ "$mode" = off ] && expect_contains "$OUT" "outbound refused" \
		"off: the payload cannot connect out from the serve port"
	expect_contains "$(in_box nft list table inet opencode_sandbox)" \
		"tcp sport $PORT ct state established accept" "$mode: the rule is in force"
	in_box nft delete table inet opencode_sandbox

	client &
	cpid=$!
	box_init --mode "$mode" -- /bin/sh "$T/payload.sh"
	wait "$cpid"
	expect_ne "$(cat "$T/client")" served "$mode: without --serve-port the replies are dropped"
	in_box nft delete table inet opencode_sandbox
done

finish
