#!/usr/bin/env python3
"""Idle intercepted keep-alive connections for the integration tests.

  idleconns.py --proxy HOST:PORT --cafile CA [--hold S] N URL

Opens N connections to the proxy, each a CONNECT tunnel to URL's host and
port with TLS verified against CA and the host name, sends one GET for
URL's path on each (all written before any answer is read, so the proxy
holds them all at once), reads each whole response (Content-Length), and
keeps every connection open. Prints "READY N" when all N answered 200,
then holds them until stdin closes or S seconds pass (default 60), and
exits 0; exits 1 with the reason on stderr when a connection fails.
"""
import argparse
import socket
import ssl
import sys
import urllib.parse
import select


def read_head(s, step):
    """Reads until the end of a head, STEP bytes at a time: (head, what followed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(step)
        if not chunk:
            raise OSError("closed before the head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def read_response(s):
    head, body = read_head(s, 4096)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed inside the body")
        body += chunk
    return status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--hold", type=float, default=60.0)
    ap.add_argument("n", type=int)
    ap.add_argument("url")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.url)
    host, port = u.hostname, u.port or 443
    path = (u.path or "/") + ("?" + u.query if u.query else "")
    phost, pport = a.proxy.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=a.cafile)
    conns = []
    try:
        for _ in range(a.n):
            raw = socket.create_connection((phost, int(pport)), timeout=20)
            raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            # A byte at a time: the TLS handshake's bytes must stay in the socket.
            head, _ = read_head(raw, 1)
            if not head.startswith(b"HTTP/1.1 200"):
                raise OSError("CONNECT refused: " + head.split(b"\r\n")[0].decode(errors="replace"))
            conns.append(ctx.wrap_socket(raw, server_hostname=host))
        req = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        for s in conns:
            s.sendall(req)
        for s in conns:
            status = read_response(s)
            if status != 200:
                raise OSError(f"status {status}")
    except (OSError, ssl.SSLError, ValueError) as e:
        print(f"idleconns: connection {len(conns)}: {e}", file=sys.stderr)
        return 1
    print(f"READY {len(conns)}", flush=True)
    select.select([sys.stdin], [], [], a.hold)
    for s in conns:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
