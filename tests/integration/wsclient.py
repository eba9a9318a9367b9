#!/usr/bin/env python3
"""A WebSocket client for the integration tests, through an HTTP proxy.

  wsclient.py --proxy HOST:PORT [--cafile CA] URL MESSAGE
  wsclient.py --proxy HOST:PORT [--cafile CA] [--protocol NAME]...
              [--extensions VALUE] [--send SPEC]... URL

ws:// goes as an absolute-form GET to the proxy; wss:// opens a CONNECT
tunnel, verifies the server's certificate against CA and the URL's host,
then sends an origin-form GET. After 101 (Sec-WebSocket-Accept checked):

With MESSAGE, it sends it as one masked text frame and prints the frame
that comes back. Exit 0 on an echo, 1 otherwise, with the reason on stderr.

With --send, it prints "status CODE [RULE]" for the handshake (RULE: the
X-Egress-Rule of a refusal) and "protocol NAME" for the subprotocol the
101 chose, then sends each SPEC in turn, and after each one prints what
came back up to a whole data message, a close frame or the end of the
connection, one line a frame or message:
  text DATA | binary HEX | ping DATA | pong DATA | close CODE REASON | eof
SPECs (DATA is sent as UTF-8; every frame masked unless said otherwise):
  text:DATA        one text frame           binary:DATA   one binary frame
  frag:A|B|C       a text message in fragments, split at '|'
  fragping:A|B     the same with a ping between the fragments
  ping:DATA        a ping frame             close:CODE    a close frame
  big:N            a text message of N bytes in one frame
  unmasked:DATA    a text frame without a mask (refused by servers)
  rsv:DATA         a text frame with RSV1 set (no extension was agreed)
Exit 0 when the handshake got an answer, 1 when it did not.
"""
import argparse
import base64
import hashlib
import os
import socket
import ssl
import sys
import urllib.parse

IO_TIMEOUT = 20


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1)
        if not chunk:
            raise SystemExit("connection closed in a response head: %r" % data)
        data += chunk
        if len(data) > 65536:
            raise SystemExit("response head too large")
    return data.decode("latin-1")


class Eof(Exception):
    pass


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise Eof()
        out += chunk
    return out


def frame(op, payload, fin=True, mask=True, rsv=0):
    """One client frame."""
    b0 = (0x80 if fin else 0) | rsv | op
    n = len(payload)
    if n < 126:
        head = bytes([b0, (0x80 if mask else 0) | n])
    elif n < 65536:
        head = bytes([b0, (0x80 if mask else 0) | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([b0, (0x80 if mask else 0) | 127]) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_frame(sock):
    """One server frame: (fin, opcode, payload)."""
    hdr = recv_exact(sock, 2)
    n = hdr[1] & 0x7F
    if n == 126:
        n = int.from_bytes(recv_exact(sock, 2), "big")
    elif n == 127:
        n = int.from_bytes(recv_exact(sock, 8), "big")
    key = recv_exact(sock, 4) if hdr[1] & 0x80 else None
    data = recv_exact(sock, n)
    if key:
        data = bytes(b ^ key[i % 4] for i, b in enumerate(data))
    return bool(hdr[0] & 0x80), hdr[0] & 0x0F, data


def show(op, data):
    if op == 1:
        return "text " + data.decode("utf-8", "replace")
    if op == 2:
        return "binary " + data.hex()
    if op == 8:
        code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 1005
        return "close %d %s" % (code, data[2:].decode("utf-8", "replace"))
    if op == 9:
        return "ping " + data.decode("utf-8", "replace")
    if op == 10:
        return "pong " + data.decode("utf-8", "replace")
    return "op%d %s" % (op, data.hex())


def receive(sock):
    """Print frames up to a whole data message, a close, or the end."""
    msg, msg_op = b"", None
    try:
        while True:
            fin, op, data = read_frame(sock)
            if op >= 8:
                print(show(op, data), flush=True)
                if op == 8:
                    return False
                if op == 10 or op == 9:
                    continue
            if op != 0:
                msg_op = op
            msg += data
            if fin:
                print(show(msg_op or 1, msg), flush=True)
                return True
    except Eof:
        print("eof", flush=True)
        return False
    except socket.timeout:
        print("timeout", flush=True)
        return False
    except OSError as e:
        print("eof %s" % e, flush=True)
        return False


def send_spec(sock, spec):
    kind, _, arg = spec.partition(":")
    data = arg.encode()
    if kind == "text":
        sock.sendall(frame(1, data))
    elif kind == "binary":
        sock.sendall(frame(2, data))
    elif kind in ("frag", "fragping"):
        parts = arg.split("|")
        out = b""
        for i, p in enumerate(parts):
            out += frame(1 if i == 0 else 0, p.encode(), fin=i == len(parts) - 1)
            if kind == "fragping" and i == 0:
                out += frame(9, b"between")
        sock.sendall(out)
    elif kind == "ping":
        sock.sendall(frame(9, data))
    elif kind == "close":
        sock.sendall(frame(8, int(arg).to_bytes(2, "big")))
    elif kind == "big":
        sock.sendall(frame(1, b"a" * int(arg)))
    elif kind == "unmasked":
        sock.sendall(frame(1, data, mask=False))
    elif kind == "rsv":
        sock.sendall(frame(1, data, rsv=0x40))
    else:
        raise SystemExit("unknown --send kind %r" % kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--cafile")
    ap.add_argument("--protocol", action="append", default=[])
    ap.add_argument("--extensions")
    ap.add_argument("--send", action="append", default=[])
    ap.add_argument("url")
    ap.add_argument("message", nargs="?")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.url)
    port = u.port or (443 if u.scheme == "wss" else 80)
    phost, pport = a.proxy.rsplit(":", 1)
    sock = socket.create_connection((phost, int(pport)), timeout=IO_TIMEOUT)
    target = u.path or "/"
    if u.query:
        target += "?" + u.query
    if u.scheme == "wss":
        sock.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                     (u.hostname.encode(), port, u.hostname.encode(), port))
        head = read_head(sock)
        if not head.startswith("HTTP/1.1 200"):
            raise SystemExit("CONNECT refused: " + head.splitlines()[0])
        ctx = ssl.create_default_context(cafile=a.cafile)
        sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
    else:
        target = "http://%s:%d%s" % (u.hostname, port, target)
    key = base64.b64encode(os.urandom(16)).decode()
    extra = ""
    if a.protocol:
        extra += "Sec-WebSocket-Protocol: %s\r\n" % ", ".join(a.protocol)
    if a.extensions:
        extra += "Sec-WebSocket-Extensions: %s\r\n" % a.extensions
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                  "Sec-WebSocket-Version: 13\r\n%s\r\n" %
                  (target, u.hostname, port, key, extra)).encode())
    head = read_head(sock)
    lines = head.split("\r\n")
    fields = {}
    for ln in lines[1:]:
        name, _, value = ln.partition(":")
        fields[name.strip().lower()] = value.strip()
    if a.message is None:
        status = lines[0].split(" ")[1]
        print(("status %s %s" % (status, fields.get("x-egress-rule", ""))).strip())
        if status != "101":
            return 0
        print("protocol %s" % fields.get("sec-websocket-protocol", "-"), flush=True)
    elif not head.startswith("HTTP/1.1 101"):
        raise SystemExit("no upgrade: " + lines[0])
    want = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if fields.get("sec-websocket-accept") != want:
        raise SystemExit("bad Sec-WebSocket-Accept in: " + head)
    if a.message is None:
        for spec in a.send:
            send_spec(sock, spec)
            if not receive(sock):
                break
        sock.close()
        return 0
    payload = a.message.encode()
    sock.sendall(frame(1, payload))
    try:
        fin, op, data = read_frame(sock)
    except Eof:
        raise SystemExit("connection closed before the echo")
    if op != 1 or not fin:
        raise SystemExit("unexpected frame %d" % op)
    print(data.decode())
    sock.sendall(frame(8, b""))
    sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
