#!/usr/bin/env python3
"""Send one request through the proxy, with any method and any body.

curl will not send a body with HEAD (and waits for one in the answer when
told to), so the scripts that test bodies on read methods use this:

  sendreq.py PORT METHOD URL [--header 'NAME: VALUE']... [--body FILE]
             [--chunked] [--timeout S]

The request goes to 127.0.0.1:PORT in absolute form, with Content-Length
(or, with --chunked, in 64 KiB chunks) when there is a body. The body is
sent from a thread while the answer is read, so a proxy that answers and
closes before reading it all does not stall the client. Prints JSON:
{"status": N|null, "headers": [[name, value]...], "sent": BYTES,
"closed": BOOL}. Every wait is bounded; only 127.0.0.1 is contacted.
"""
import argparse
import json
import socket
import sys
import threading
import urllib.parse

CHUNK = 64 * 1024


def sender(sock, head, body, chunked, state):
    try:
        sock.sendall(head)
        for i in range(0, len(body), CHUNK):
            piece = body[i:i + CHUNK]
            if chunked:
                sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            else:
                sock.sendall(piece)
            state["sent"] += len(piece)
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass	# the proxy answered and closed: what was sent is counted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("method")
    ap.add_argument("url")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--body")
    ap.add_argument("--chunked", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0)
    a = ap.parse_args()

    host = urllib.parse.urlsplit(a.url).netloc
    body = b""
    if a.body is not None:
        with open(a.body, "rb") as f:
            body = f.read()
    lines = ["%s %s HTTP/1.1" % (a.method, a.url), "Host: " + host, "Connection: close"]
    lines += a.header
    if a.chunked:
        lines.append("Transfer-Encoding: chunked")
    elif a.body is not None or a.method in ("POST", "PUT", "PATCH"):
        lines.append("Content-Length: %d" % len(body))
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    sock = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    state = {"sent": 0}
    t = threading.Thread(target=sender, args=(sock, head, body, a.chunked, state),
                         daemon=True)
    t.start()
    data = b""
    closed = False
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                closed = True
                break
            data += b
            # The head is all that is wanted; a HEAD answer has no body.
            if b"\r\n\r\n" in data and a.method == "HEAD":
                break
            if len(data) > (1 << 20):
                break
    except socket.timeout:
        pass
    except OSError:
        closed = True
    t.join(a.timeout)
    sock.close()
    status, headers = None, []
    head_end = data.find(b"\r\n\r\n")
    if head_end >= 0:
        hl = data[:head_end].split(b"\r\n")
        try:
            status = int(hl[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            status = None
        for ln in hl[1:]:
            n, _, v = ln.partition(b":")
            headers.append([n.decode("latin-1"), v.strip().decode("latin-1")])
    json.dump({"status": status, "headers": headers, "sent": state["sent"],
               "closed": closed}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
