#!/usr/bin/env python3
"""A client of egressd's control socket that misbehaves on purpose, for
control_socket.sh. Each mode prints one JSON object on stdout saying what
came back; every wait is bounded.

  ctlclient.py SOCK send BYTES-AS-PYTHON-LITERAL [--shut]
      send the bytes (b'...' syntax), optionally shut down the write side,
      read until EOF: {"answer": ..., "closed": bool, "seconds": s}
  ctlclient.py SOCK oversize N
      send N bytes of a JSON string without a newline, as fast as the
      socket takes them: {"answer": ..., "sent": n}
  ctlclient.py SOCK idle
      connect and send nothing: {"answer": ..., "seconds": s}
  ctlclient.py SOCK crowd N [--partial BYTES]
      N clients connect at once; each sends a status request (or, with
      --partial, BYTES of an unfinished request line first, then the
      rest); {"ok": n, "busy": n, "other": [...], "seconds": s}
"""
import json
import select
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(30)
    return s


def read_all(s, limit=30):
    end = time.monotonic() + limit
    data = b""
    closed = False
    while time.monotonic() < end:
        s.settimeout(max(0.1, end - time.monotonic()))
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not d:
            closed = True
            break
        data += d
    return data, closed


def answer_of(data):
    line = data.split(b"\n", 1)[0]
    try:
        return json.loads(line)
    except ValueError:
        return data.decode("latin-1")


def mode_send(path, literal, shut):
    import ast
    payload = ast.literal_eval(literal)
    t0 = time.monotonic()
    s = connect(path)
    s.sendall(payload)
    if shut:
        s.shutdown(socket.SHUT_WR)
    data, closed = read_all(s)
    return {"answer": answer_of(data), "closed": closed, "lines": data.count(b"\n"),
            "seconds": round(time.monotonic() - t0, 2)}


def mode_oversize(path, n):
    s = connect(path)
    s.setblocking(False)
    head = b'{"cmd":"explain","target":"x","body":"'
    sent = 0
    chunk = b"a" * 65536
    end = time.monotonic() + 30
    data = b""
    buf = head
    while sent < n and time.monotonic() < end:
        r, w, _ = select.select([s], [s], [], 1)
        if r:
            try:
                d = s.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                d = b""
            if not d:
                break
            data += d
            if b"\n" in data:
                break
        if w:
            if not buf:
                buf = chunk
            try:
                k = s.send(buf[: n - sent])
            except (BrokenPipeError, ConnectionResetError):
                break
            except BlockingIOError:
                continue
            sent += k
            buf = buf[k:]
    s.setblocking(True)
    more, _ = read_all(s, 10)
    data += more
    return {"answer": answer_of(data), "sent": sent}


def mode_idle(path):
    t0 = time.monotonic()
    s = connect(path)
    data, closed = read_all(s, 20)
    return {"answer": answer_of(data), "closed": closed,
            "seconds": round(time.monotonic() - t0, 2)}


def mode_crowd(path, n, partial):
    t0 = time.monotonic()
    socks = []
    for _ in range(n):
        # A blocking connect waits while the listen queue is full.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.settimeout(30)
        socks.append(s)
    req = b'{"cmd":"status"}\n'
    if partial:
        first = b'{"cmd":"explain","target":"x","body":"' + b"a" * partial
        rest = b'"}\n'
    else:
        first, rest = req, b""
    for s in socks:
        try:
            s.sendall(first)
        except OSError:
            pass
    for s in socks:
        try:
            if rest:
                s.sendall(rest)
        except OSError:
            pass
    result = {"ok": 0, "busy": 0, "other": []}
    end = time.monotonic() + 40
    pending = {s: b"" for s in socks}
    while pending and time.monotonic() < end:
        r, _, _ = select.select(list(pending), [], [], 1)
        for s in r:
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if d:
                pending[s] += d
                if b"\n" not in pending[s]:
                    continue
            a = answer_of(pending.pop(s))
            if isinstance(a, dict) and a.get("ok"):
                result["ok"] += 1
            elif isinstance(a, dict) and a.get("code") == "busy":
                result["busy"] += 1
            else:
                result["other"].append(a)
            s.close()
    result["unanswered"] = len(pending)
    result["seconds"] = round(time.monotonic() - t0, 2)
    return result


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "send":
        out = mode_send(path, sys.argv[3], "--shut" in sys.argv)
    elif mode == "oversize":
        out = mode_oversize(path, int(sys.argv[3]))
    elif mode == "idle":
        out = mode_idle(path)
    elif mode == "crowd":
        partial = int(sys.argv[5]) if "--partial" in sys.argv else 0
        out = mode_crowd(path, int(sys.argv[3]), partial)
    else:
        sys.exit("unknown mode " + mode)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
