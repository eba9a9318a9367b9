#!/usr/bin/env python3
"""The "internet" of the netns tests, run inside the internet namespace.

Serves, on every address of the namespace: DNS on UDP and TCP 53 (any A
question gets 198.18.0.1, AAAA gets 2001:2::1), a UDP echo on ports 7
and 443 (the QUIC probe), a TCP banner on 853 (DNS over TLS stand-in) and
HTTP on 80 whose body says "internet-origin" (and HTTPS on 443 with
--tls-cert/--tls-key). Every datagram and
connection is one line on stdout, so a test can tell what reached the
outside. Stops when killed, or after --lifetime seconds.

With --model-reply TEXT (and --tls-cert), HTTPS on 443 is instead a scripted
OpenAI-compatible model API, for running a real agent against it: POST
.../chat/completions answers TEXT as a completion, streamed as server-sent
events when the request asks for `"stream": true`; GET .../models lists one
model. Each request is one line on stdout ("model METHOD PATH stream=..
model=.. host=.. auth=.."), and its JSON body is appended to --model-log
when given.

With --model-script FILE as well, the model can also ask for tool calls.
FILE is a JSON list of rules {"when": TEXT, "tool": NAME, "args": {...},
"reply": TEXT}: for a chat request that offers tools, the first rule whose
"when" is in the last user message is used; while the conversation has no
tool result yet for that message, the answer is a call of the tool with
the arguments, then the rule's reply. A request offering no tools (a
title) or matching no rule gets --model-reply. Beside the model API the
same server answers GET /hello ("hello") and POST /echo (the body's
length), for the tools to reach; any other path is a 404.
"""
import argparse
import json
import socket
import ssl
import struct
import threading
import time

LOCK = threading.Lock()


def note(what):
    with LOCK:
        print(what, flush=True)


def dns_answer(q):
    if len(q) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i = 12
    labels = []
    while i < len(q) and q[i] != 0:
        n = q[i]
        labels.append(q[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    i += 1
    if i + 4 > len(q):
        return None
    qtype = struct.unpack("!H", q[i:i + 2])[0]
    question = q[12:i + 4]
    name = ".".join(labels)
    note("dns %s %d" % (name, qtype))
    rr = b""
    if qtype == 1:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("198.18.0.1")
    elif qtype == 28:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 60, 16) + \
            socket.inet_pton(socket.AF_INET6, "2001:2::1")
    head = struct.pack("!HHHHHH", qid, 0x8180, 1, 1 if rr else 0, 0, 0)
    return head + question + rr


def udp_loop(family, addr, port, kind):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    while True:
        data, peer = s.recvfrom(4096)
        if kind == "dns":
            a = dns_answer(data)
            if a:
                s.sendto(a, peer)
        else:
            note("udp %d from %s" % (port, peer[0]))
            s.sendto(data, peer)


TLS = None
MODEL = None	# (reply text, log path) with --model-reply
SCRIPT = []	# --model-script rules
HEAD_MAX = 64 * 1024
BODY_MAX = 8 * 1024 * 1024


def read_until(c, buf, sep, limit):
    """Bytes of c up to sep (returned without it) and what follows."""
    while sep not in buf:
        if len(buf) > limit:
            raise OSError("request too large")
        data = c.recv(65536)
        if not data:
            raise OSError("closed")
        buf += data
    head, _, rest = buf.partition(sep)
    return head, rest


def read_exact(c, buf, n):
    while len(buf) < n:
        data = c.recv(65536)
        if not data:
            raise OSError("closed")
        buf += data
    return buf[:n], buf[n:]


def read_request(c, buf):
    """One HTTP/1.1 request: (method, path, headers, body, rest), or None at EOF."""
    if not buf:
        data = c.recv(65536)
        if not data:
            return None
        buf = data
    head, buf = read_until(c, buf, b"\r\n\r\n", HEAD_MAX)
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size, buf = read_until(c, buf, b"\r\n", HEAD_MAX)
            n = int(size.split(b";")[0], 16)
            if len(body) + n > BODY_MAX:
                raise OSError("body too large")
            chunk, buf = read_exact(c, buf, n + 2)
            if n == 0:
                break
            body += chunk[:-2]
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if n > BODY_MAX:
            raise OSError("body too large")
        body, buf = read_exact(c, buf, n)
    return method, path, headers, body, buf


def message_text(m):
    """The text of a chat message, whether its content is a string or parts."""
    content = m.get("content") if isinstance(m, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def script_step(ask):
    """(rule, done) for a chat request under --model-script, or (None, False)."""
    msgs = ask.get("messages") if isinstance(ask.get("messages"), list) else []
    if not SCRIPT or not ask.get("tools"):
        return None, False
    last_user = max((i for i, m in enumerate(msgs)
                     if isinstance(m, dict) and m.get("role") == "user"), default=-1)
    if last_user < 0:
        return None, False
    text = message_text(msgs[last_user])
    for rule in SCRIPT:
        if rule.get("when", "") in text:
            done = any(isinstance(m, dict) and m.get("role") == "tool" for m in msgs[last_user:])
            return rule, done
    return None, False


def sse_send(c, events):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
              b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
    for e in events:
        chunk = b"data: " + json.dumps(e).encode() + b"\n\n"
        c.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        time.sleep(0.02)
    done = b"data: [DONE]\n\n"
    c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))


def tool_call_answer(c, rule, name, now):
    """A streamed assistant turn that calls rule's tool with its arguments."""
    base = {"id": "chatcmpl-tool", "object": "chat.completion.chunk", "created": now,
            "model": name}
    call = {"index": 0, "id": "call_%d" % now, "type": "function",
            "function": {"name": rule["tool"], "arguments": ""}}
    args = json.dumps(rule.get("args", {}))
    events = [
        dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": None,
                                                   "tool_calls": [call]},
                             "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": args}}]}, "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
        dict(base, choices=[], usage={"prompt_tokens": 10, "completion_tokens": 5,
                                      "total_tokens": 15}),
    ]
    sse_send(c, events)


def origin_answer(c, method, path, body):
    """The plain endpoints tools reach: GET /hello, POST /echo."""
    if method == "GET" and path.split("?")[0] == "/hello":
        out = b"hello\n"
    elif method == "POST" and path.split("?")[0] == "/echo":
        out = b"%d\n" % len(body)
    else:
        return False
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
              % len(out) + out)
    return True


def model_answer(c, req):
    """The scripted model's answer to one request; returns False to close."""
    method, path, headers, body, _ = req
    reply, log = MODEL
    try:
        ask = json.loads(body) if body else {}
    except ValueError:
        ask = {}
    if not isinstance(ask, dict):
        ask = {}
    stream = ask.get("stream") is True
    name = ask.get("model", "scripted")
    note("model %s %s stream=%d model=%s host=%s auth=%s" % (
        method, path, stream, name, headers.get("host", ""),
        headers.get("authorization", "-").replace(" ", "_")))
    if log and body:
        with LOCK, open(log, "a") as f:
            f.write(body.decode("utf-8", "replace").replace("\n", " ") + "\n")
    now = int(time.time())
    rule, done = script_step(ask) if method == "POST" else (None, False)
    if rule is not None and stream and not done:
        note("model tool-call %s" % rule.get("tool"))
        tool_call_answer(c, rule, name, now)
        return True
    if rule is not None:
        reply = rule.get("reply", reply)
    if origin_answer(c, method, path, body):
        note("origin %s %s host=%s" % (method, path, headers.get("host", "")))
        return True
    if method == "GET" and path.endswith("/models"):
        out = json.dumps({"object": "list", "data": [
            {"id": name, "object": "model", "created": now, "owned_by": "test"}]})
        ctype = "application/json"
    elif method == "POST" and path.endswith("/chat/completions") and stream:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
        base = {"id": "chatcmpl-test", "object": "chat.completion.chunk",
                "created": now, "model": name}
        words = reply.split(" ")
        deltas = [{"role": "assistant", "content": ""}] + \
            [{"content": w if i == 0 else " " + w} for i, w in enumerate(words)]
        events = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}])
                  for d in deltas]
        events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
        events.append(dict(base, choices=[], usage={
            "prompt_tokens": 10, "completion_tokens": len(words), "total_tokens": 10 + len(words)}))
        for e in events:
            chunk = b"data: " + json.dumps(e).encode() + b"\n\n"
            c.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            time.sleep(0.02)
        done = b"data: [DONE]\n\n"
        c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        return True
    elif method == "POST" and path.endswith("/chat/completions"):
        out = json.dumps({"id": "chatcmpl-test", "object": "chat.completion", "created": now,
                          "model": name, "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": reply}}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                    "total_tokens": 11}})
        ctype = "application/json"
    else:
        c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        return True
    data = out.encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
              % (ctype.encode(), len(data)) + data)
    return True


def model_serve(c):
    """Requests of one keep-alive connection, until EOF or a quiet spell."""
    c.settimeout(30)
    buf = b""
    try:
        while True:
            req = read_request(c, buf)
            if req is None:
                return
            buf = req[4]
            model_answer(c, req)
    except (ValueError, IndexError):
        note("model bad-request")


def tcp_client(c, port):
    try:
        c.settimeout(5)
        if port == 443:
            c = TLS.wrap_socket(c, server_side=True)
            if MODEL:
                model_serve(c)
                return
        if port == 53:
            head = c.recv(2)
            if len(head) == 2:
                q = c.recv(struct.unpack("!H", head)[0])
                a = dns_answer(q)
                if a:
                    c.sendall(struct.pack("!H", len(a)) + a)
        elif port == 853:
            note("tcp 853")
            c.sendall(b"DOT\n")
        else:
            data = c.recv(4096)
            via = b"egressd" in data
            note("http %s %s" % ("via-egressd" if via else "direct",
                                 data.split(b"\r\n")[0].decode("ascii", "replace")))
            body = b"internet-origin\n"
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()


def tcp_loop(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=tcp_client, args=(c, port), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lifetime", type=int, default=600)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--model-reply")
    ap.add_argument("--model-log")
    ap.add_argument("--model-script")
    a = ap.parse_args()
    global TLS, MODEL, SCRIPT
    if a.model_reply is not None:
        if not a.tls_cert:
            ap.error("--model-reply needs --tls-cert")
        MODEL = (a.model_reply, a.model_log)
        if a.model_script:
            with open(a.model_script) as f:
                SCRIPT = json.load(f)
    tcp_ports = [53, 80, 853]
    if a.tls_cert:
        TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        TLS.load_cert_chain(a.tls_cert, a.tls_key)
        tcp_ports.append(443)
    for fam, addr in ((socket.AF_INET, "198.18.0.1"), (socket.AF_INET6, "2001:2::1")):
        for port, kind in ((53, "dns"), (7, "echo"), (443, "echo")):
            threading.Thread(target=udp_loop, args=(fam, addr, port, kind), daemon=True).start()
        for port in tcp_ports:
            threading.Thread(target=tcp_loop, args=(fam, addr, port), daemon=True).start()
    note("ready")
    deadline = time.time() + a.lifetime
    while time.time() < deadline:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
