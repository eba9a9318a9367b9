#!/usr/bin/env python3
"""The soak's clients that loadgen is not: WebSocket, GraphQL and DNS.

  mixed.py --proxy PORT --dns PORT --origin PORT --nginx PORT --seconds S --out DIR

Until S seconds have passed, three threads each keep one kind of traffic
going through egressd, with a numbered id in every request:

  ws   a WebSocket to ws://ws.test:ORIGIN/ws/ws-ID through the proxy,
       three masked text frames echoed back, then a close; a new
       connection each time
  gql  GraphQL query POSTs ({"query":"{ x }"}) to
       http://origin.test:NGINX/gql-ID on one keep-alive connection
       (a new one when egressd closes it)
  dns  an A query for dN.soak.test (N: ID modulo 256, so the cache does
       not grow with the run) to egressd's resolver over UDP

Each answered id is written to DIR/KIND (one a line); failures are
counted. Prints one JSON object: {"ws": {"ok": n, "failed": n}, ...}.
Every wait is bounded; only loopback is used.
"""
import argparse
import base64
import json
import os
import random
import socket
import struct
import threading
import time

TIMEOUT = 15.0


def recv_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(4096)
        if not d:
            raise OSError("closed before the head ended")
        data += d
        if len(data) > 65536:
            raise OSError("head too large")
    head, rest = data.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def recv_exact(s, n, buf):
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise OSError("closed mid-body")
        buf += d
    return buf[:n], buf[n:]


def ws_frame(payload, opcode=1):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    else:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_read(s, buf):
    hdr, buf = recv_exact(s, 2, buf)
    n = hdr[1] & 0x7F
    if n == 126:
        ext, buf = recv_exact(s, 2, buf)
        n = struct.unpack("!H", ext)[0]
    elif n == 127:
        ext, buf = recv_exact(s, 8, buf)
        n = struct.unpack("!Q", ext)[0]
    payload, buf = recv_exact(s, n, buf)
    return hdr[0] & 0x0F, payload, buf


def ws_once(a, i):
    s = socket.create_connection(("127.0.0.1", a.proxy), timeout=TIMEOUT)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        host = "ws.test:%d" % a.origin
        s.sendall(("GET http://%s/ws/ws-%d HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n" % (host, i, host, key)).encode())
        head, buf = recv_head(s)
        if not head.startswith("HTTP/1.1 101"):
            raise OSError("handshake: " + head.split("\r\n")[0])
        for k in range(3):
            msg = ("soak %d frame %d " % (i, k)).encode() + b"x" * random.randint(0, 300)
            s.sendall(ws_frame(msg))
            op, got, buf = ws_read(s, buf)
            if op != 1 or got != msg:
                raise OSError("echo differs")
        s.sendall(ws_frame(struct.pack("!H", 1000), opcode=8))
        ws_read(s, buf)
    finally:
        s.close()


class Gql:
    def __init__(self, a):
        self.a = a
        self.s = None
        self.buf = b""

    def once(self, i):
        body = b'{"query":"{ x }"}'
        host = "origin.test:%d" % self.a.nginx
        req = ("POST http://%s/gql-%d HTTP/1.1\r\nHost: %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % (host, i, host, len(body))).encode() + body
        # No retry on a reused connection: the id may have been audited already.
        if self.s is None:
            self.s = socket.create_connection(("127.0.0.1", self.a.proxy), timeout=TIMEOUT)
            self.buf = b""
        self.s.sendall(req)
        head, self.buf = recv_head_buf(self.s, self.buf)
        status = head.split("\r\n")[0]
        length = 0
        close = False
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
            if k.strip().lower() == "connection" and "close" in v.lower():
                close = True
        _, self.buf = recv_exact(self.s, length, self.buf)
        if close:
            self.close()
        if not status.startswith("HTTP/1.1 200"):
            raise OSError("status: " + status)

    def close(self):
        if self.s is not None:
            self.s.close()
        self.s = None


def recv_head_buf(s, buf):
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            raise OSError("closed before the head")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def dns_once(a, i, sock):
    qid = i & 0xFFFF
    name = "d%d.soak.test" % (i % 256)
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack("!HH", 1, 1)
    sock.sendto(q, ("127.0.0.1", a.dns))
    end = time.monotonic() + 5
    while time.monotonic() < end:
        sock.settimeout(max(0.05, end - time.monotonic()))
        data = sock.recv(4096)
        if len(data) >= 12 and struct.unpack("!H", data[:2])[0] == qid:
            if data[3] & 0x0F != 0:
                raise OSError("rcode %d" % (data[3] & 0x0F))
            return
    raise OSError("no answer")


def worker(kind, a, stats, deadline):
    out = open(os.path.join(a.out, kind), "w")
    gql = Gql(a) if kind == "gql" else None
    sock = None
    if kind == "dns":
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
    i = 0
    pause = {"ws": 0.02, "gql": 0.005, "dns": 0.005}[kind]
    while time.monotonic() < deadline:
        i += 1
        try:
            if kind == "ws":
                ws_once(a, i)
            elif kind == "gql":
                gql.once(i)
            else:
                dns_once(a, i, sock)
            out.write("%d\n" % i)
            stats[kind]["ok"] += 1
        except (OSError, ValueError) as e:
            stats[kind]["failed"] += 1
            if len(stats[kind]["errors"]) < 5:
                stats[kind]["errors"].append("%d: %s" % (i, e))
            if gql is not None:
                gql.close()
        time.sleep(pause)
    if gql is not None:
        gql.close()
    out.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--proxy", type=int, required=True)
    p.add_argument("--dns", type=int, required=True)
    p.add_argument("--origin", type=int, required=True)
    p.add_argument("--nginx", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    deadline = time.monotonic() + min(a.seconds, 7200)
    stats = {k: {"ok": 0, "failed": 0, "errors": []} for k in ("ws", "gql", "dns")}
    threads = [threading.Thread(target=worker, args=(k, a, stats, deadline), daemon=True)
               for k in stats]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=a.seconds + 60)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
