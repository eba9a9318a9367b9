#!/usr/bin/env python3
"""A TLS client through egressd's CONNECT whose ClientHello arrives in pieces.

  tlssplit.py --proxy PORT --connect HOST:PORT [--sni NAME] [--cafile FILE]
              [--split N] [--pause S] PATH

Sends CONNECT, then the TLS handshake over a memory BIO so the test decides
how the first flight reaches the socket: its first N bytes, a pause of S
seconds, then the rest (egressd must wait for the whole ClientHello before
it decides). Then GET PATH with Connection: close, and prints the response's
status line, or "closed" when the connection ends before one. Every wait is
bounded; only 127.0.0.1 is contacted.
"""
import argparse
import socket
import ssl
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", type=int, required=True)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--sni")
    ap.add_argument("--cafile")
    ap.add_argument("--split", type=int, default=40)
    ap.add_argument("--pause", type=float, default=0.3)
    ap.add_argument("path")
    a = ap.parse_args()
    host = a.connect.rsplit(":", 1)[0]
    s = socket.create_connection(("127.0.0.1", a.proxy), timeout=10)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.connect, a.connect)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            print("closed")
            return
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        print(head.split(b"\r\n")[0].decode())
        return
    ctx = ssl.create_default_context(cafile=a.cafile)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname=a.sni or host)
    first = True
    try:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                data = out.read()
                if first and data:
                    s.sendall(data[:a.split])
                    time.sleep(a.pause)
                    data = data[a.split:]
                    first = False
                s.sendall(data)
                r = s.recv(65536)
                if not r:
                    print("closed")
                    return
                inc.write(r)
        s.sendall(out.read())
        tls.write(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                   % (a.path, a.sni or host)).encode())
        s.sendall(out.read())
        got = b""
        while b"\r\n" not in got:
            try:
                got += tls.read(65536)
                continue
            except ssl.SSLWantReadError:
                pass
            r = s.recv(65536)
            if not r:
                break
            inc.write(r)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as e:
        print("closed (%s)" % e.__class__.__name__)
        return
    print(got.split(b"\r\n")[0].decode() if b"\r\n" in got else "closed")


if __name__ == "__main__":
    sys.exit(main())
