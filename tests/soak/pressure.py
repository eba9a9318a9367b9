#!/usr/bin/env python3
"""Slow readers of large bodies through a proxy, many at once, to push its memory.

  pressure.py --proxy PORT --url http://127.0.0.1:PORT/PATH --conns N
              --seconds S [--rate BYTES_PER_S] [--ramp S]

Opens N connections to the proxy (spread over --ramp seconds), each with a
small receive buffer, sends one absolute-form GET for URL and then reads
at most RATE bytes a second, so the proxy's buffers towards it stay full.
After S seconds every connection is closed. Prints one JSON object:
{"ok": n (a 200 head arrived), "refused": n (another status), "failed":
n (connect, no head, closed before a head), "bytes": n, "statuses": {...}}.
One thread, non-blocking sockets; every wait is bounded; loopback only.
"""
import argparse
import json
import selectors
import socket
import time


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.head = b""
        self.status = None
        self.bytes = 0
        self.closed = False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--proxy", type=int, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--conns", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--rate", type=int, default=32768)
    p.add_argument("--ramp", type=float, default=2.0)
    a = p.parse_args()
    host = a.url.split("/")[2]
    if not (host.startswith("127.") or host.split(":")[0].endswith(".test")):
        raise SystemExit("loopback and .test names only")
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.url, host)).encode()
    sel = selectors.DefaultSelector()
    readers = []
    failed = 0
    start = time.monotonic()
    end = start + min(a.seconds, 3600)
    opened = 0
    tick = 0.05
    per_tick = max(1, int(a.rate * tick))
    while time.monotonic() < end:
        # open the next connections on schedule
        due = a.conns if a.ramp <= 0 else min(
            a.conns, int(a.conns * (time.monotonic() - start) / a.ramp) + 1)
        # a connect can wait up to a second (a full listen queue): never past the end
        while opened < due and time.monotonic() < end:
            opened += 1
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(1)
            try:
                s.connect(("127.0.0.1", a.proxy))
                s.sendall(req)
            except OSError:
                failed += 1
                s.close()
                continue
            s.setblocking(False)
            r = Reader(s)
            readers.append(r)
            sel.register(s, selectors.EVENT_READ, r)
        # each reader takes at most per_tick bytes this tick
        for key, _ in sel.select(timeout=tick):
            r = key.data
            try:
                d = r.sock.recv(per_tick)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                d = b""
            if not d:
                r.closed = True
                sel.unregister(r.sock)
                continue
            r.bytes += len(d)
            if r.status is None:
                r.head += d
                if b"\r\n" in r.head:
                    line = r.head.split(b"\r\n", 1)[0].split()
                    r.status = int(line[1]) if len(line) > 1 and line[1].isdigit() else -1
        time.sleep(tick)
    out = {"ok": 0, "refused": 0, "failed": failed, "bytes": 0, "statuses": {}}
    for r in readers:
        out["bytes"] += r.bytes
        if r.status == 200:
            out["ok"] += 1
        elif r.status is not None:
            out["refused"] += 1
            out["statuses"][str(r.status)] = out["statuses"].get(str(r.status), 0) + 1
        else:
            out["failed"] += 1
        r.sock.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
