#!/usr/bin/env python3
"""Raw-socket HTTP client for the integration tests.

curl cannot send malformed or pipelined requests, nor stall half way
through a head, so the proxy scripts use this instead:

  rawhttp.py send PORT [--head-methods M,M..] [--wait S]   bytes on stdin
      sends stdin as is, shuts down nothing, reads responses (framed by
      their own headers; responses to HEAD have no body) until the
      connection closes or S seconds pass without bytes, and prints JSON:
      {"responses": [{"status", "headers", "body_len", "body_sha256",
      "body"}], "closed": BOOL, "trailing": N}.
  rawhttp.py stall PORT [--trickle S] [--max S]            bytes on stdin
      sends stdin (a partial head), then waits (sending one more space
      byte of a header value every S seconds when --trickle is given)
      until the proxy closes the connection; prints JSON {"closed": BOOL,
      "seconds": N, "status": N|null}.

Every wait is bounded; only 127.0.0.1 is ever contacted.
"""
import argparse
import hashlib
import json
import socket
import sys
import time


def parse_responses(data, head_methods):
    """Split a byte stream into responses; returns (list, leftover bytes)."""
    out = []
    i = 0
    while True:
        end = data.find(b"\r\n\r\n", i)
        if end < 0:
            break
        lines = data[i:end].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            status = int(parts[1])
        except (IndexError, ValueError):
            break
        headers = []
        for ln in lines[1:]:
            n, _, v = ln.partition(b":")
            headers.append([n.decode("latin-1"), v.strip().decode("latin-1")])
        hm = {n.lower(): v for n, v in headers}
        pos = end + 4
        body = b""
        if 100 <= status < 200:
            i = pos
            continue
        is_head = len(out) < len(head_methods) and head_methods[len(out)] == "HEAD"
        if is_head or status in (204, 304):
            pass
        elif "chunked" in hm.get("transfer-encoding", "").lower():
            while True:
                le = data.find(b"\r\n", pos)
                if le < 0:
                    return out, data[i:]
                size = int(data[pos:le].split(b";")[0], 16)
                pos = le + 2
                if size == 0:
                    te = data.find(b"\r\n\r\n", pos - 2)
                    if te < 0:
                        return out, data[i:]
                    pos = te + 4
                    break
                body += data[pos:pos + size]
                pos += size + 2
        elif "content-length" in hm:
            n = int(hm["content-length"])
            if len(data) - pos < n:
                return out, data[i:]
            body = data[pos:pos + n]
            pos += n
        else:
            body = data[pos:]
            pos = len(data)
        out.append({"status": status, "headers": headers, "body_len": len(body),
                    "body_sha256": hashlib.sha256(body).hexdigest(),
                    "body": body[:2000].decode("latin-1")})
        i = pos
    return out, data[i:]


def cmd_send(a):
    payload = sys.stdin.buffer.read()
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    closed = False
    data = b""
    try:
        s.sendall(payload)
    except OSError:
        pass
    s.settimeout(a.wait)
    deadline = time.monotonic() + a.max
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not d:
            closed = True
            break
        data += d
    s.close()
    methods = [m for m in a.head_methods.split(",") if m]
    resp, rest = parse_responses(data, methods)
    print(json.dumps({"responses": resp, "closed": closed, "trailing": len(rest)}))


def cmd_stall(a):
    payload = sys.stdin.buffer.read()
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    t0 = time.monotonic()
    s.sendall(payload)
    s.settimeout(0.2)
    data = b""
    closed = False
    next_drip = t0 + (a.trickle or 0)
    while time.monotonic() - t0 < a.max:
        try:
            d = s.recv(65536)
            if not d:
                closed = True
                break
            data += d
        except socket.timeout:
            pass
        except OSError:
            closed = True
            break
        if a.trickle and time.monotonic() >= next_drip:
            try:
                s.sendall(b"a")
            except OSError:
                closed = True
                break
            next_drip += a.trickle
    secs = time.monotonic() - t0
    s.close()
    status = None
    if data.startswith(b"HTTP/1."):
        try:
            status = int(data.split(b" ", 2)[1])
        except (IndexError, ValueError):
            pass
    print(json.dumps({"closed": closed, "seconds": round(secs, 2), "status": status}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("port", type=int)
    p.add_argument("--head-methods", default="")
    p.add_argument("--wait", type=float, default=2.0)
    p.add_argument("--max", type=float, default=20.0)
    p = sub.add_parser("stall")
    p.add_argument("port", type=int)
    p.add_argument("--trickle", type=float, default=0)
    p.add_argument("--max", type=float, default=15.0)
    a = ap.parse_args()
    if a.cmd == "send":
        cmd_send(a)
    else:
        cmd_stall(a)


if __name__ == "__main__":
    main()
