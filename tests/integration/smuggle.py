#!/usr/bin/env python3
"""Request smuggling vectors against egressd, judged by what the origin saw.

usage: smuggle.py PROXY_PORT ORIGIN_PORT ORIGIN_LOG

Each vector is raw bytes sent on a fresh connection to the proxy. The
verdict comes from the proxy's answer and from origin.py's request log:

  reject  a 4xx (or the listed status) and no complete request at the origin
  one     exactly the request the client meant reached the origin (method,
          target, body length and SHA-256; optional header checks), and no
          other request
  either  one of the two

A request the origin saw only in part (egressd cut the upstream connection
while streaming a body it then found malformed) is not a complete request;
anything else the origin could not parse means egressd forwarded bad bytes,
and fails the vector. Prints "ok NAME" or "FAIL NAME: why" per vector.
"""
import hashlib
import json
import socket
import sys
import time

from rawhttp import parse_responses

PROXY, ORIGIN, LOG = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
A = b"allowed.test:" + ORIGIN
URL = b"http://" + A


def sha(b):
    return hashlib.sha256(b).hexdigest()


def post(headers, body, target=b"/echo", version=b"HTTP/1.1", line=None):
    start = line or b"POST " + URL + target + b" " + version
    return start + b"\r\nHost: " + A + b"\r\n" + headers + b"\r\n" + body


def V(name, raw, expect, status=None, one=None, responses=None, no_header=None,
      host_header=None):
    return {"name": name, "raw": raw, "expect": expect, "status": status or range(400, 500),
            "one": one, "responses": responses, "no_header": no_header,
            "host_header": host_header}


CL = b"Content-Length: "
TE = b"Transfer-Encoding: "
CLOSE = b"Connection: close\r\n"
JSON = b"Content-Type: application/json\r\n"
HELLO = b"hello"
SMUG = b"GET " + URL + b"/hello HTTP/1.1\r\nHost: " + A + b"\r\n\r\n"

VECTORS = [
    V("CL.TE", post(CL + b"6\r\n" + TE + b"chunked\r\n", b"0\r\n\r\nX"), "reject"),
    V("TE.CL", post(TE + b"chunked\r\n" + CL + b"3\r\n", b"5\r\nhello\r\n0\r\n\r\n"), "reject"),
    V("TE xchunked", post(TE + b"xchunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"), "reject",
      status=list(range(400, 500)) + [501]),
    V("TE chunked, identity", post(TE + b"chunked, identity\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
      "reject", status=list(range(400, 500)) + [501]),
    V("TE twice", post(TE + b"chunked\r\n" + TE + b"identity\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
      "reject", status=list(range(400, 500)) + [501]),
    V("TE space before colon", post(b"Transfer-Encoding : chunked\r\n" + CL + b"5\r\n", HELLO),
      "reject"),
    V("TE with a vertical tab", post(TE + b"\x0bchunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
      "reject", status=list(range(400, 500)) + [501]),
    V("TE tab OWS (valid)", post(b"Transfer-Encoding:\tchunked\r\n" + CLOSE, b"5\r\nhello\r\n0\r\n\r\n"),
      "one", one=("POST", b"/echo", HELLO)),
    V("TE in HTTP/1.0", post(TE + b"chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n", version=b"HTTP/1.0"),
      "reject"),
    V("duplicate CL equal", post(CL + b"5\r\n" + CL + b"5\r\n" + CLOSE, HELLO), "either",
      one=("POST", b"/echo", HELLO)),
    V("conflicting CL", post(CL + b"5\r\n" + CL + b"6\r\n", HELLO + b"X"), "reject"),
    V("CL list 5, 5", post(CL + b"5, 5\r\n" + CLOSE, HELLO), "either",
      one=("POST", b"/echo", HELLO)),
    V("CL +5", post(CL + b"+5\r\n", HELLO), "reject"),
    V("CL negative", post(CL + b"-1\r\n", HELLO), "reject"),
    V("CL huge", post(CL + b"99999999999999999999999\r\n", HELLO), "reject"),
    V("bare LF hides TE", post(b"X-A: 1\n" + TE + b"chunked\r\n" + CL + b"5\r\n", HELLO), "reject"),
    V("bare LF line ends", (b"GET " + URL + b"/hello HTTP/1.1\nHost: " + A + b"\n\n"), "either",
      one=("GET", b"/hello", b"")),
    V("bare CR hides TE", post(b"X-A: 1\r" + TE + b"chunked\r\n" + CL + b"5\r\n", HELLO), "reject"),
    V("NUL in a header value", post(b"X-A: a\x00b\r\n" + CL + b"5\r\n", HELLO), "reject"),
    V("obs-fold", post(b"X-A: 1\r\n " + TE + b"chunked\r\n" + CL + b"5\r\n", HELLO), "reject"),
    V("space in a header name", post(b"Content Length: 5\r\n", HELLO), "reject"),
    V("huge chunk size (streamed)", post(TE + b"chunked\r\n", b"FFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"),
      "reject"),
    V("huge chunk size (held JSON)", post(JSON + TE + b"chunked\r\n",
      b"FFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"), "reject"),
    V("bad chunk size", post(JSON + TE + b"chunked\r\n", b"zz\r\nhello\r\n0\r\n\r\n"), "reject"),
    V("chunk size 0x5", post(JSON + TE + b"chunked\r\n", b"0x5\r\nhello\r\n0\r\n\r\n"), "reject"),
    V("no CRLF after chunk data", post(JSON + TE + b"chunked\r\n", b"5\r\nhelloXX0\r\n\r\n"), "reject"),
    V("no CRLF after chunk data (streamed)", post(TE + b"chunked\r\n",
      b"5\r\nhelloXX3\r\nGET\r\n0\r\n\r\n"), "reject"),
    V("chunk extension (valid)", post(TE + b"chunked\r\n" + CLOSE, b"5;ext=\"a;b\"\r\nhello\r\n0\r\n\r\n"),
      "one", one=("POST", b"/echo", HELLO)),
    V("trailer with Content-Length", post(TE + b"chunked\r\n" + CLOSE,
      b"5\r\nhello\r\n0\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n"), "either",
      one=("POST", b"/echo", HELLO)),
    V("request inside a CL body", post(CL + b"%d\r\n" % len(SMUG) + CLOSE, SMUG), "one",
      one=("POST", b"/echo", SMUG)),
    V("request after a chunked body", post(TE + b"chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n") +
      b"GET http://blocked.test/x HTTP/1.1\r\nHost: blocked.test\r\nConnection: close\r\n\r\n",
      "one", one=("POST", b"/echo", HELLO), responses=[200, 403]),
    V("userinfo in absolute-form", b"GET http://user:pw@" + A + b"/hello HTTP/1.1\r\nHost: " + A +
      b"\r\n" + CLOSE + b"\r\n", "either", one=("GET", b"/hello", b""), host_header=A),
    V("userinfo hiding a blocked host", b"GET http://" + A + b"@blocked.test/hello HTTP/1.1\r\n"
      b"Host: " + A + b"\r\n\r\n", "reject"),
    V("Host differs from the target", b"GET " + URL + b"/hello HTTP/1.1\r\nHost: blocked.test\r\n" +
      CLOSE + b"\r\n", "either", one=("GET", b"/hello", b""), host_header=A),
    V("two Host fields", b"GET " + URL + b"/hello HTTP/1.1\r\nHost: " + A + b"\r\nHost: blocked.test"
      b"\r\n\r\n", "reject"),
    V("double space in request line", b"GET  " + URL + b"/hello HTTP/1.1\r\nHost: " + A +
      b"\r\n\r\n", "reject"),
    V("extra word in request line", b"GET " + URL + b"/hello HTTP/1.1 x\r\nHost: " + A +
      b"\r\n\r\n", "reject"),
    V("origin-form to the proxy", b"GET /hello HTTP/1.1\r\nHost: " + A + b"\r\n\r\n", "reject"),
    V("h2c upgrade", b"GET " + URL + b"/hello HTTP/1.1\r\nHost: " + A + b"\r\nConnection: Upgrade, "
      b"HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n", "either",
      one=("GET", b"/hello", b""), no_header=["upgrade", "http2-settings"]),
    V("Connection names a field", b"GET " + URL + b"/hello HTTP/1.1\r\nHost: " + A +
      b"\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\n\r\n", "one",
      one=("GET", b"/hello", b""), no_header=["x-secret"]),
    V("long URI", b"GET " + URL + b"/" + b"a" * 20000 + b" HTTP/1.1\r\nHost: " + A + b"\r\n\r\n",
      "reject", status=[414]),
    V("oversize head", b"GET " + URL + b"/hello HTTP/1.1\r\nHost: " + A + b"\r\n" +
      b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 4000) for i in range(40)) + b"\r\n", "reject",
      status=[431]),
]


def origin_lines():
    with open(LOG) as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def run(v):
    before = len(origin_lines())
    try:
        s = socket.create_connection(("127.0.0.1", PROXY), timeout=5)
    except OSError as e:
        return "cannot connect to egressd (%s): it is gone" % e
    data = b""
    try:
        s.sendall(v["raw"])
    except OSError:
        pass
    s.settimeout(1.0)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            d = s.recv(65536)
        except (socket.timeout, OSError):
            break
        if not d:
            break
        data += d
    s.close()
    time.sleep(0.3)
    new = [x for x in origin_lines()[before:] if "dns" not in x]
    reqs = [x for x in new if "method" in x]
    bad = [x for x in new if "error" in x and "connection closed inside" not in x["error"]]
    head = [m for m in (v["one"][0],) if m == "HEAD"] if v["one"] else []
    resp, _ = parse_responses(data, head)
    statuses = [r["status"] for r in resp]
    if bad:
        return "origin got bytes it could not parse: %s" % bad[0]["error"]
    why_reject = None
    if not statuses:
        why_reject = "no response"
    elif statuses[0] not in v["status"]:
        why_reject = "status %s" % statuses
    elif reqs:
        why_reject = "%d request(s) reached the origin: %s" % (
            len(reqs), [r["method"] + " " + r["target"] for r in reqs])
    if v["expect"] == "reject":
        return why_reject
    if v["expect"] == "either" and why_reject is None:
        return None
    method, target, body = v["one"]
    if len(reqs) != 1:
        return "want one request at the origin, got %d (statuses %s)" % (len(reqs), statuses)
    r = reqs[0]
    got = (r["method"], r["target"], r["body_len"], r["body_sha256"])
    want = (method, target.decode(), len(body), sha(body))
    if got != want:
        return "origin got %s, want %s" % (got[:3], want[:3])
    names = [h[0].lower() for h in r["headers"]]
    for n in v["no_header"] or []:
        if n in names:
            return "hop-by-hop field %s reached the origin" % n
    if v["host_header"] is not None:
        hosts = [h[1] for h in r["headers"] if h[0].lower() == "host"]
        if hosts != [v["host_header"].decode()]:
            return "origin Host %s, want %s" % (hosts, v["host_header"].decode())
    want_status = v["responses"] or [200]
    if statuses != want_status:
        return "responses %s, want %s" % (statuses, want_status)
    return None


def main():
    for v in VECTORS:
        why = run(v)
        print(("ok " + v["name"]) if why is None else "FAIL %s: %s" % (v["name"], why),
              flush=True)


if __name__ == "__main__":
    main()
