#!/usr/bin/env python3
"""A slow, bursty reader for the integration tests, through a proxy.

  slowreader.py --proxy HOST:PORT [--cafile CA] [--rcvbuf B] [--burst B]
                [--pause S] [--close] URL SIZE...

For an https URL, opens one CONNECT tunnel to its host and port, verifies
the certificate against CA and the host, and sends origin-form requests;
for an http URL, sends absolute-form requests to the proxy itself. Either
way it asks for URL/big?n=SIZE for each SIZE in turn on that one
keep-alive connection (with --close, the last request says Connection:
close). A small receive buffer (set before connecting, so the kernel does
not grow it) and a pause after every BURST bytes read keep the
proxy's side towards us full: the proxy stops reading its upstream and
resumes many times per response, and the end of a body arrives while it
waits. Each body is compared with what the test origin generates for that
size. Prints one line per response ("SIZE ok"), and "closed" when, after
--close, the proxy ended the connection with nothing more; exits 0 when
all arrived intact, 1 with the reason on stderr otherwise.
"""
import argparse
import socket
import ssl
import struct
import time
import urllib.parse

BLOCK = 64 * 1024  # as origin.py's /big


def expected(n):
    out, k = [], 0
    while n > 0:
        blk = (struct.pack(">Q", k) * (BLOCK // 8))[:n]
        out.append(blk)
        n -= len(blk)
        k += 1
    return b"".join(out)


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self, want):
        chunk = self.sock.recv(want)
        if not chunk:
            raise SystemExit("connection closed after %d buffered bytes" % len(self.buf))
        self.buf += chunk

    def head(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill(4096)
            if len(self.buf) > 65536:
                raise SystemExit("response head too large")
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head.decode("latin-1")

    def body(self, n, burst, pause):
        got = 0
        while len(self.buf) < n:
            before = len(self.buf)
            self.fill(min(65536, n - before))
            got += len(self.buf) - before
            if got >= burst and pause > 0:
                time.sleep(pause)
                got = 0
        body, self.buf = self.buf[:n], self.buf[n:]
        return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--cafile")
    ap.add_argument("--rcvbuf", type=int, default=16384)
    ap.add_argument("--burst", type=int, default=262144)
    ap.add_argument("--pause", type=float, default=0.005)
    ap.add_argument("--close", action="store_true")
    ap.add_argument("url")
    ap.add_argument("sizes", type=int, nargs="+")
    a = ap.parse_args()
    u = urllib.parse.urlsplit(a.url)
    tls = u.scheme == "https"
    port = u.port or (443 if tls else 80)
    hostport = ("%s:%d" % (u.hostname, port)).encode()
    phost, pport = a.proxy.rsplit(":", 1)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    raw.settimeout(30)
    raw.connect((phost, int(pport)))
    r = Reader(raw)
    prefix = b"http://" + hostport
    if tls:
        raw.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hostport, hostport))
        head = r.head()
        if not head.startswith("HTTP/1.1 200"):
            raise SystemExit("CONNECT refused: " + head.splitlines()[0])
        if r.buf:
            raise SystemExit("bytes after the CONNECT answer")
        ctx = ssl.create_default_context(cafile=a.cafile)
        r = Reader(ctx.wrap_socket(raw, server_hostname=u.hostname))
        prefix = b""
    for i, n in enumerate(a.sizes):
        close = a.close and i == len(a.sizes) - 1
        r.sock.sendall(b"GET %s/big?n=%d HTTP/1.1\r\nHost: %s\r\n%s\r\n" %
                       (prefix, n, hostport, b"Connection: close\r\n" if close else b""))
        head = r.head()
        if not head.startswith("HTTP/1.1 200"):
            raise SystemExit("response %d: %s" % (i + 1, head.splitlines()[0]))
        length = None
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length != n:
            raise SystemExit("response %d: Content-Length %r, want %d" % (i + 1, length, n))
        if r.body(n, a.burst, a.pause) != expected(n):
            raise SystemExit("response %d: body of %d bytes differs" % (i + 1, n))
        print("%d ok" % n, flush=True)
    if a.close:
        try:
            extra = r.buf or r.sock.recv(1)
        except ssl.SSLError as e:
            raise SystemExit("no clean end after Connection: close: %s" % e)
        if extra:
            raise SystemExit("bytes after the last response: %r" % extra[:64])
        print("closed", flush=True)


if __name__ == "__main__":
    main()
