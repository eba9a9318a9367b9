#!/usr/bin/env python3
"""A WebSocket client for the integration tests, through an HTTP proxy.

  wsclient.py --proxy HOST:PORT [--cafile CA] URL MESSAGE

ws:// goes as an absolute-form GET to the proxy; wss:// opens a CONNECT
tunnel, verifies the server's certificate against CA and the URL's host,
then sends an origin-form GET. After 101 (Sec-WebSocket-Accept checked) it
sends MESSAGE as one masked text frame and prints the frame that comes
back. Exit 0 on an echo, 1 otherwise, with the reason on stderr.
"""
import argparse
import base64
import hashlib
import os
import socket
import ssl
import sys
import urllib.parse


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


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise SystemExit("connection closed in a frame")
        out += chunk
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--cafile")
    ap.add_argument("url")
    ap.add_argument("message")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.url)
    port = u.port or (443 if u.scheme == "wss" else 80)
    phost, pport = a.proxy.rsplit(":", 1)
    sock = socket.create_connection((phost, int(pport)), timeout=20)
    target = u.path or "/"
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
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n" % (target, u.hostname, port, key)).encode())
    head = read_head(sock)
    if not head.startswith("HTTP/1.1 101"):
        raise SystemExit("no upgrade: " + head.splitlines()[0])
    want = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    if ("sec-websocket-accept: " + want.lower()) not in head.lower():
        raise SystemExit("bad Sec-WebSocket-Accept in: " + head)
    payload = a.message.encode()
    if len(payload) > 125:
        raise SystemExit("message too long for this client")
    mask = os.urandom(4)
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask +
                 bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    hdr = recv_exact(sock, 2)
    n = hdr[1] & 0x7F
    if hdr[0] != 0x81 or hdr[1] & 0x80 or n > 125:
        raise SystemExit("unexpected frame header %r" % hdr)
    print(recv_exact(sock, n).decode())
    sock.sendall(bytes([0x88, 0x80]) + b"\0\0\0\0")
    sock.close()


if __name__ == "__main__":
    main()
