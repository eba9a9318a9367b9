#!/usr/bin/env python3
"""The misbehaving peers of the fault tests (tests/soak/faults.sh).

  faulty.py http --port-file F --log F      an HTTP origin that misbehaves
                                            by path (below)
  faulty.py stall --port-file F --log F     a TCP server that reads a TLS
                                            ClientHello and never answers
  faulty.py dns --port-file F --log F       a DNS stub that misbehaves by
                                            name (below); --port reuses a port
  faulty.py client --proxy PORT ...         a well-behaved client that runs
                                            until a stop file appears
  faulty.py vanish --proxy PORT --url U ... a client that goes away in the
                                            middle of an exchange

HTTP paths: /ok and /id/ANYTHING (200), /slow?ms=N (200 after N ms), /reset (a head promising 1 MB, 32 KiB of it, then
a TCP reset), /halfclose (reads the request, then shuts its side down
without answering), /halfclose-body (the head, 32 KiB, then shuts its side
down), /garbage (bytes that are not HTTP), /sink (reads a request body,
logging how much came and whether it all did), /big?n=BYTES (a long body,
logging how much went out before the peer went away).

DNS names: slow-* answered after --slow seconds, silent-* never answered,
garbage-* answered with bytes that are not DNS, badid-* answered with
another query id, short-* with a message cut inside its question; every
other name is an A record for 127.0.0.1 (TTL 3600). Every query is logged.

Each line of --log is one JSON object. Every wait is bounded, every thread
is a daemon, and the server exits when its parent process is gone.
"""
import argparse
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

IO_TIMEOUT = 30.0


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def __call__(self, **obj):
        obj["t"] = round(time.time(), 3)
        with self.lock:
            self.f.write(json.dumps(obj, separators=(",", ":")) + "\n")


def watchdog(parent, limit):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            os.kill(parent, 0)
        except OSError:
            break
        time.sleep(0.5)
    os._exit(0)


def listen_tcp(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    return ls


def write_port(path, port):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(path + ".tmp", path)


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            raise EOFError
        data += got
        if len(data) > 65536:
            raise EOFError
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return method, target, hdrs, rest


def wait_peer_close(s):
    """Read and drop until the peer closes, bounded."""
    s.settimeout(IO_TIMEOUT)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass


def http_one(s, log):
    s.settimeout(IO_TIMEOUT)
    method, target, hdrs, rest = read_head(s)
    path, _, query = target.partition("?")
    log(kind="http", method=method, path=path)
    if path == "/ok" or path.startswith("/id/"):
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True
    if path == "/slow":
        time.sleep(min(int(query.partition("ms=")[2] or "1000"), 60000) / 1000.0)
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        log(kind="slow", done=True)
        return True
    if path == "/reset":
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"r" * 32768)
        time.sleep(0.2)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False
    if path == "/halfclose":
        s.shutdown(socket.SHUT_WR)
        wait_peer_close(s)
        return False
    if path == "/halfclose-body":
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"h" * 32768)
        s.shutdown(socket.SHUT_WR)
        wait_peer_close(s)
        return False
    if path == "/garbage":
        s.sendall(b"\x00\x01\x02SSH-2.0-not-http \xff\xfe\r\n\r\n" + os.urandom(512))
        wait_peer_close(s)
        return False
    if path == "/sink":
        want = int(hdrs.get("content-length", "0"))
        got = len(rest)
        try:
            while got < want:
                b = s.recv(65536)
                if not b:
                    break
                got += len(b)
        except OSError:
            pass
        log(kind="sink", want=want, got=got, whole=got >= want)
        if got >= want:
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            return True
        return False
    if path == "/big":
        n = int(query.partition("n=")[2] or "1000000")
        s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
        sent, block = 0, b"b" * 65536
        try:
            while sent < n:
                sent += s.send(block[: min(len(block), n - sent)])
        except OSError as e:
            log(kind="big", n=n, sent=sent, whole=False, error=type(e).__name__)
            return False
        log(kind="big", n=n, sent=sent, whole=True)
        return True
    s.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return True


def http_conn(s, log):
    try:
        while http_one(s, log):
            pass
    except (OSError, EOFError, ValueError):
        pass
    finally:
        s.close()


def stall_conn(s, log):
    s.settimeout(IO_TIMEOUT)
    try:
        first = s.recv(65536)
        log(kind="stall", hello=len(first))
        wait_peer_close(s)
    except OSError:
        pass
    finally:
        s.close()


def serve_tcp(args, handler):
    log = Log(args.log)
    ls = listen_tcp(args.port)
    write_port(args.port_file, ls.getsockname()[1])
    while True:
        s, _ = ls.accept()
        threading.Thread(target=handler, args=(s, log), daemon=True).start()


def dns_qname(msg):
    off, labels = 12, []
    while off < len(msg) and msg[off] != 0:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n].decode("ascii", "replace"))
        off += 1 + n
    return ".".join(labels).lower(), off + 1


def dns_answer(msg):
    """An A 127.0.0.1 (AAAA: no data) answer to the query in msg."""
    name, off = dns_qname(msg)
    qtype = struct.unpack(">H", msg[off:off + 2])[0]
    question = msg[12:off + 4]
    flags = 0x8180 | (msg[2] & 0x01) << 8
    if qtype == 1:
        ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 3600, 4) + socket.inet_aton("127.0.0.1")
        return msg[:2] + struct.pack(">HHHHH", flags, 1, 1, 0, 0) + question + ans
    return msg[:2] + struct.pack(">HHHHH", flags, 1, 0, 0, 0) + question


def serve_dns(args):
    log = Log(args.log)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", args.port))
    write_port(args.port_file, s.getsockname()[1])
    while True:
        msg, peer = s.recvfrom(4096)
        if len(msg) < 17:
            continue
        try:
            name, _ = dns_qname(msg)
        except (IndexError, UnicodeError):
            continue
        log(kind="dns", name=name)
        first = name.split("-", 1)[0]
        if first == "silent":
            continue
        if first == "garbage":
            s.sendto(os.urandom(3) + b"not dns at all", peer)
            continue
        if first == "badid":
            reply = bytearray(dns_answer(msg))
            reply[0] ^= 0x5a
            s.sendto(bytes(reply), peer)
            continue
        if first == "short":
            s.sendto(dns_answer(msg)[:15], peer)
            continue
        reply = dns_answer(msg)
        if first == "slow":
            threading.Timer(args.slow, s.sendto, (reply, peer)).start()
            continue
        s.sendto(reply, peer)


class Client:
    """Requests through the proxy until the stop file appears: a keep-alive
    connection, a new connection each time, and (with --tls-url) requests
    inside an intercepted tunnel; each result is logged with its id (with
    --tag the id ends the URL, so the origin and the audit log name it)."""

    def __init__(self, args):
        self.args = args
        self.log = Log(args.log)

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.args.proxy), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def response(self, f):
        line = f.readline()
        if not line:
            raise EOFError("closed before a response")
        status = int(line.split()[1])
        length = 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        body = f.read(length)
        if len(body) != length:
            raise EOFError("body cut")
        self.body = body.decode("latin-1")[:300] if status != 200 else None
        return status

    def exchange(self, conn, target, host):
        s, f = conn
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), host.encode()))
        return self.response(f)

    def tunnel(self):
        a = self.args
        host, _, port = a.tls_host.partition(":")
        s = self.connect()
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.tls_host.encode(),
                                                                   a.tls_host.encode()))
        f = s.makefile("rb")
        if self.response_head(f) != 200:
            raise EOFError("CONNECT refused")
        ctx = ssl.create_default_context(cafile=a.cafile)
        t = ctx.wrap_socket(s, server_hostname=host)
        return (t, t.makefile("rb"))

    @staticmethod
    def response_head(f):
        line = f.readline()
        status = int(line.split()[1]) if line else 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                return status

    def run(self):
        a = self.args
        url_host = a.url.split("/")[2]
        path = "/" + a.url.split("/", 3)[3]
        kinds = ["keepalive", "new"] + (["tls"] if a.tls_host else [])
        conns = {}
        n = 0
        deadline = time.monotonic() + a.max_seconds
        while not os.path.exists(a.stop_file) and time.monotonic() < deadline:
            for kind in kinds:
                t0 = time.monotonic()
                n += 1
                rid = "%s-%d" % (kind, n)
                self.body = None
                try:
                    if kind not in conns:
                        if kind == "tls":
                            conns[kind] = self.tunnel()
                        else:
                            s = self.connect()
                            conns[kind] = (s, s.makefile("rb"))
                    if kind == "tls":
                        status = self.exchange(conns[kind], path, a.tls_host)
                    elif a.tag:
                        status = self.exchange(conns[kind], a.url + rid, url_host)
                    else:
                        status = self.exchange(conns[kind], a.url, url_host)
                    err = None
                except (OSError, EOFError, ValueError, ssl.SSLError) as e:
                    status, err = 0, "%s: %s" % (type(e).__name__, e)
                if kind == "new" or err is not None:
                    c = conns.pop(kind, None)
                    if c is not None:
                        c[0].close()
                self.log(kind=kind, id=rid, status=status,
                         ms=round((time.monotonic() - t0) * 1000, 1), error=err, body=self.body)
            time.sleep(a.interval)
        for c in conns.values():
            c[0].close()


def vanish(args):
    """A client that goes away in the middle: of its request body (--post
    N: it promises N bytes and sends --send of them) or of the response
    (it reads --read bytes of it); with --reset it leaves with a reset."""
    host = args.url.split("/")[2]
    s = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
    if args.post:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n"
                  % (args.url.encode(), host.encode(), args.post))
        block, sent = b"p" * 65536, 0
        while sent < args.send:
            s.sendall(block[: min(len(block), args.send - sent)])
            sent += min(len(block), args.send - sent)
        time.sleep(0.3)
        got = 0
    else:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args.url.encode(), host.encode()))
        got = 0
        while got < args.read:
            b = s.recv(65536)
            if not b:
                break
            got += len(b)
    if args.reset:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print(json.dumps({"read": got}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["http", "stall", "dns", "client", "vanish"])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log", required=True)
    ap.add_argument("--parent", type=int, default=os.getppid())
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--slow", type=float, default=5.0, help="DNS: seconds slow-* names wait")
    ap.add_argument("--proxy", type=int, help="client: the proxy's port")
    ap.add_argument("--url", help="client: the absolute URL it asks for")
    ap.add_argument("--tls-host", help="client: HOST:PORT it asks for inside a tunnel")
    ap.add_argument("--cafile", help="client: the CA that signs the tunnel's leaf")
    ap.add_argument("--stop-file", help="client: stop when this file exists")
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--tag", action="store_true",
                    help="client: each request's URL gets KIND-N appended, N counting up")
    ap.add_argument("--post", type=int, default=0, help="vanish: the body length promised")
    ap.add_argument("--send", type=int, default=0, help="vanish: the body bytes sent")
    ap.add_argument("--read", type=int, default=0, help="vanish: the response bytes read")
    ap.add_argument("--reset", action="store_true", help="vanish: leave with a reset")
    args = ap.parse_args()
    threading.Thread(target=watchdog, args=(args.parent, args.max_seconds), daemon=True).start()
    if args.role == "http":
        serve_tcp(args, http_conn)
    elif args.role == "stall":
        serve_tcp(args, stall_conn)
    elif args.role == "dns":
        serve_dns(args)
    elif args.role == "vanish":
        vanish(args)
    else:
        Client(args).run()


if __name__ == "__main__":
    sys.exit(main())
