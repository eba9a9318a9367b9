#!/usr/bin/env python3
"""A small HTTP/1.1 origin server for the integration tests.

It is deliberately our own (sockets and threads, not http.server) so the
tests see exactly what egressd sends upstream: every request that arrives is
parsed strictly (CRLF line ends, one framing header, chunked decoded by hand)
and logged as one JSON line with its connection id, method, target, header
list, body length and body SHA-256. Bytes that do not parse are logged too,
as an "error" line, and answered 400 before the connection is closed.

Endpoints: /hello, /chunked, /close, /echo, /big?n=BYTES, /slow?s=SECS,
/silent, /status?code=N, /conns, /interim?n=N (N 102 responses first),
/bighead?n=BYTES (a response head of
about n bytes), /ws and /ws/ANY (a WebSocket echo: every data frame comes back as it
was sent, and is logged with its payload; see websocket()). With --tls-cert/--tls-key it also serves HTTPS on a second
port (--tls-port-file), logging the SNI each connection sent. With --dns-port-file it also answers DNS
on UDP: NAME.test is 127.0.0.1, so egressd (--upstream-dns) resolves test
names to this server without touching the system resolver. Every wait is bounded, every thread is a
daemon, and the server exits when its parent process is gone.
"""
import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

HEAD_MAX = 128 * 1024
LINE_MAX = 64 * 1024
IO_TIMEOUT = 60.0	# a connection idle this long is dropped
SLOW_MAX = 60.0
SILENT_MAX = 120.0
BLOCK = 64 * 1024
TOKEN = set(b"!#$%&'*+-.^_`|~0123456789"
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


TLS_LOCAL = threading.local()	# the SNI seen by the handshake in this thread


def remember_sni(sslobj, name, ctx):
    TLS_LOCAL.sni = name


class BadRequest(Exception):
    pass


class Closed(Exception):
    pass


class Server:
    def __init__(self, log_path):
        self.log = open(log_path, "a", buffering=1)
        self.lock = threading.Lock()
        self.accepted = 0

    def record(self, obj):
        with self.lock:
            self.log.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self.log.flush()


def big_block(k):
    """Block k of a /big body: its index repeated, so order matters."""
    return struct.pack(">Q", k) * (BLOCK // 8)


class Conn:
    def __init__(self, srv, sock, cid, tls_ctx=None):
        self.srv = srv
        self.sock = sock
        self.cid = cid
        self.buf = b""
        self.seq = 0
        self.tls_ctx = tls_ctx
        self.sni = None
        sock.settimeout(IO_TIMEOUT)

    def handshake(self):
        """TLS connections shake hands in their own thread, not the accept loop."""
        TLS_LOCAL.sni = None
        try:
            self.sock = self.tls_ctx.wrap_socket(self.sock, server_side=True)
            self.sni = TLS_LOCAL.sni
        except (ssl.SSLError, OSError) as e:
            self.srv.record({"conn": self.cid, "tls_error": str(e)})
            raise Closed()

    def fill(self):
        data = self.sock.recv(256 * 1024)
        if not data:
            raise Closed()
        self.buf += data

    def read_head(self):
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                head = self.buf[:end]
                self.buf = self.buf[end + 4:]
                return head
            if len(self.buf) > HEAD_MAX:
                raise BadRequest("head too large")
            if not self.buf:
                self.fill()
            else:
                try:
                    self.fill()
                except Closed:
                    raise BadRequest("connection closed inside a head")

    def read_exact(self, n, sink):
        while n > 0:
            if not self.buf:
                try:
                    self.fill()
                except Closed:
                    raise BadRequest("connection closed inside a body")
            take = self.buf[:n]
            self.buf = self.buf[len(take):]
            sink(take)
            n -= len(take)

    def read_line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = self.buf[:i]
                self.buf = self.buf[i + 2:]
                if b"\n" in line or b"\r" in line:
                    raise BadRequest("bare CR or LF in a chunk line")
                return line
            if len(self.buf) > LINE_MAX:
                raise BadRequest("chunk line too long")
            try:
                self.fill()
            except Closed:
                raise BadRequest("connection closed inside a chunk line")

    def read_chunked(self, sink):
        while True:
            line = self.read_line()
            size = line.split(b";", 1)[0].strip(b" \t")
            if not size or any(c not in b"0123456789abcdefABCDEF" for c in size) \
                    or len(size) > 16:
                raise BadRequest("bad chunk size %r" % line[:40])
            n = int(size, 16)
            if n == 0:
                while self.read_line() != b"":
                    pass
                return
            self.read_exact(n, sink)
            if self.read_line() != b"":
                raise BadRequest("missing CRLF after chunk data")

    @staticmethod
    def parse_head(head):
        if b"\n" in head.replace(b"\r\n", b"") or b"\r" in head.replace(b"\r\n", b""):
            raise BadRequest("bare CR or LF in head")
        if b"\0" in head:
            raise BadRequest("NUL in head")
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            raise BadRequest("malformed request line %r" % lines[0][:80])
        headers = []
        for ln in lines[1:]:
            if ln[:1] in (b" ", b"\t"):
                raise BadRequest("obs-fold")
            name, sep, value = ln.partition(b":")
            if not sep or not name or any(c not in TOKEN for c in name):
                raise BadRequest("bad header line %r" % ln[:80])
            headers.append([name.decode("latin-1"),
                            value.strip(b" \t").decode("latin-1")])
        return parts[0].decode("latin-1"), parts[1].decode("latin-1"), \
            parts[2].decode("latin-1"), headers

    def serve(self):
        try:
            if self.tls_ctx is not None:
                self.handshake()
            while self.one():
                pass
        except Closed:
            pass
        except BadRequest as e:
            self.srv.record({"conn": self.cid, "error": str(e),
                             "raw": self.buf[:200].decode("latin-1")})
            self.send_simple(400, b"bad request\n", close=True)
        except (socket.timeout, OSError):
            pass
        finally:
            try:
                self.sock.close()
            except OSError:
                pass

    def one(self):
        head = self.read_head()
        method, target, version, headers = self.parse_head(head)
        hmap = {}
        for n, v in headers:
            hmap.setdefault(n.lower(), []).append(v)
        te = hmap.get("transfer-encoding")
        cl = hmap.get("content-length")
        if te and cl:
            raise BadRequest("Transfer-Encoding and Content-Length")
        if cl and (len(cl) != 1 or not cl[0].isdigit()):
            raise BadRequest("bad Content-Length %r" % cl)
        if te and (len(te) != 1 or te[0].lower() != "chunked"):
            raise BadRequest("bad Transfer-Encoding %r" % te)
        if len(hmap.get("host", [])) != 1:
            raise BadRequest("not exactly one Host")
        conn_tokens = ",".join(hmap.get("connection", [])).lower()
        if version == "HTTP/1.1":
            keep = "close" not in conn_tokens
        else:
            keep = "keep-alive" in conn_tokens
        if "100-continue" in ",".join(hmap.get("expect", [])).lower():
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        h = hashlib.sha256()
        blen = [0]

        def sink(data):
            h.update(data)
            blen[0] += len(data)

        if te:
            self.read_chunked(sink)
        elif cl:
            self.read_exact(int(cl[0]), sink)
        self.seq += 1
        rec = {"conn": self.cid, "seq": self.seq, "method": method,
               "target": target, "version": version, "headers": headers,
               "body_len": blen[0], "body_sha256": h.hexdigest()}
        if self.tls_ctx is not None:
            rec["tls"] = True
            rec["sni"] = self.sni
            rec["cipher"] = self.sock.cipher()[0]
        self.srv.record(rec)
        if target.split("?")[0] == "/ws" or target.startswith("/ws/"):
            return self.websocket(hmap, target)
        return self.respond(method, target, keep, blen[0], h.hexdigest())

    def websocket(self, hmap, target):
        """RFC 6455 echo: answer the upgrade, then send every data frame back
        as it came (its FIN bit kept), a pong for a ping, a close for a close.
        The 101 chooses the first subprotocol the client offered, unless the
        target says ?proto=none (none) or ?proto=NAME; ?ext=1 makes it claim
        permessage-deflate. Every frame is logged with its payload (text up
        to 64 KiB), so a test can tell exactly what reached the origin."""
        key = hmap.get("sec-websocket-key", [""])[0]
        if "websocket" not in ",".join(hmap.get("upgrade", [])).lower() or not key:
            self.send_simple(400, b"not a websocket upgrade\n", True)
            return False
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
        offered = [p.strip() for p in ",".join(hmap.get("sec-websocket-protocol", [])).split(",")
                   if p.strip()]
        proto = q.get("proto", [offered[0] if offered else "none"])[0]
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        extra = b""
        if proto != "none":
            extra += b"Sec-WebSocket-Protocol: " + proto.encode() + b"\r\n"
        if q.get("ext", ["0"])[0] == "1":
            extra += b"Sec-WebSocket-Extensions: permessage-deflate\r\n"
        self.sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                          b"\r\n" + extra + b"\r\n")
        for _ in range(1000):
            hdr = b""
            while len(hdr) < 2:
                if not self.buf:
                    self.fill()
                take = self.buf[:2 - len(hdr)]
                self.buf = self.buf[len(take):]
                hdr += take
            op, n = hdr[0] & 0x0F, hdr[1] & 0x7F
            ext = {126: 2, 127: 8}.get(n, 0)
            raw = []
            self.read_exact(ext + (4 if hdr[1] & 0x80 else 0), raw.append)
            raw = b"".join(raw)
            if ext:
                n = int.from_bytes(raw[:ext], "big")
            mask = raw[ext:]
            data = []
            self.read_exact(n, data.append)
            data = b"".join(data)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            rec = {"conn": self.cid, "ws_frame": op, "fin": bool(hdr[0] & 0x80),
                   "rsv": (hdr[0] >> 4) & 7, "masked": bool(mask), "len": len(data)}
            if op in (0, 1) and len(data) <= 65536:
                rec["data"] = data.decode("utf-8", "replace")
            self.srv.record(rec)
            if op == 8:
                self.sock.sendall(b"\x88" + bytes([len(data)]) + data)
                return False
            out = bytes([(hdr[0] & 0x80) | (10 if op == 9 else op)])
            if len(data) < 126:
                out += bytes([len(data)])
            elif len(data) < 65536:
                out += bytes([126]) + len(data).to_bytes(2, "big")
            else:
                out += bytes([127]) + len(data).to_bytes(8, "big")
            self.sock.sendall(out + data)
        return False

    def send_simple(self, status, body, close=False, extra=b"", head_only=False):
        hdr = b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n%s" % (status, len(body), extra)
        if close:
            hdr += b"Connection: close\r\n"
        try:
            self.sock.sendall(hdr + b"\r\n" + (b"" if head_only else body))
        except OSError:
            pass

    def respond(self, method, target, keep, blen, bsha):
        u = urllib.parse.urlsplit(target)
        path = u.path
        q = urllib.parse.parse_qs(u.query)
        head_only = method == "HEAD"
        close = not keep

        def arg(name, default):
            try:
                return int(float(q.get(name, [default])[0]))
            except ValueError:
                return int(default)

        if path == "/hello":
            body = (b"hello from origin " + b"." * 100)[:99] + b"\n"
            self.send_simple(200, body, close, b"Content-Type: text/plain\r\n", head_only)
        elif path == "/chunked":
            hdr = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
            if close:
                hdr += b"Connection: close\r\n"
            out = hdr + b"\r\n"
            if not head_only:
                for i in range(arg("parts", 5)):
                    part = (b"part %d;" % i) * (i + 1)
                    out += b"%x\r\n%s\r\n" % (len(part), part)
                out += b"0\r\n\r\n"
            self.sock.sendall(out)
        elif path == "/close":
            out = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
            if not head_only:
                out += b"close-delimited body\n" * 10
            self.sock.sendall(out)
            return False
        elif path == "/echo":
            body = json.dumps({"len": blen, "sha256": bsha}).encode() + b"\n"
            self.send_simple(200, body, close, b"Content-Type: application/json\r\n",
                             head_only)
        elif path == "/big":
            n = max(0, arg("n", "0"))
            self.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" %
                              (n, b"Connection: close\r\n" if close else b""))
            k = 0
            while n > 0 and not head_only:
                blk = big_block(k)[:n]
                self.sock.sendall(blk)
                n -= len(blk)
                k += 1
        elif path == "/slow":
            time.sleep(min(max(arg("s", "1"), 0), SLOW_MAX))
            self.send_simple(200, b"slow answer\n", close, b"", head_only)
        elif path == "/silent":
            deadline = time.monotonic() + SILENT_MAX
            self.sock.settimeout(1.0)
            while time.monotonic() < deadline:
                try:
                    if not self.sock.recv(65536):
                        break
                except socket.timeout:
                    continue
            return False
        elif path == "/status":
            code = arg("code", "200")
            if code < 200 or code in (204, 304):
                self.sock.sendall(b"HTTP/1.1 %d X\r\n%s\r\n" %
                                  (code, b"Connection: close\r\n" if close else b""))
            else:
                self.send_simple(code, b"status %d\n" % code, close, b"", head_only)
        elif path == "/bighead":
            n = min(max(arg("n", "100000"), 0), 1 << 24)
            pad = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000) for i in range(n // 1000 + 1))
            self.sock.sendall(b"HTTP/1.1 200 OK\r\n" + pad + b"Content-Length: 3\r\n\r\nbig")
        elif path == "/interim":
            n = min(max(arg("n", "3"), 0), 1000)
            self.sock.sendall(b"HTTP/1.1 102 Processing\r\n\r\n" * n)
            self.send_simple(200, b"final\n", close, b"", head_only)
        elif path == "/conns":
            with self.srv.lock:
                n = self.srv.accepted
            self.send_simple(200, b"%d\n" % n, close, b"", head_only)
        else:
            self.send_simple(404, b"not found\n", close, b"", head_only)
        return keep


def dns_name(msg, off):
    labels = []
    while off < len(msg) and msg[off] != 0 and len(labels) < 64:
        n = msg[off]
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(msg[off + 1:off + 1 + n].decode("latin-1").lower())
        off += 1 + n
    return ".".join(labels), off + 1


def dns_serve(srv, sock, default_addr, names):
    """Answers A queries for NAME.test with default_addr (or the address
    --dns-map gives NAME); NXDOMAIN for the rest."""
    while True:
        try:
            msg, peer = sock.recvfrom(1500)
            qid, flags, qd = struct.unpack(">HHH", msg[:6])
            name, off = dns_name(msg, 12)
            qtype = struct.unpack(">H", msg[off:off + 2])[0]
        except (ValueError, struct.error, OSError, IndexError):
            continue
        srv.record({"dns": name, "qtype": qtype})
        question = msg[12:off + 4]
        ours = name.endswith(".test")
        answer = b""
        if ours and qtype == 1:
            addr = socket.inet_aton(names.get(name, default_addr))
            answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + addr
        rflags = 0x8180 | (0 if ours else 3)
        resp = struct.pack(">HHHHHH", qid, rflags, 1, 1 if answer else 0, 0, 0)
        try:
            sock.sendto(resp + question + answer, peer)
        except OSError:
            pass


def watchdog(parent, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if parent > 1:
            try:
                os.kill(parent, 0)
            except OSError:
                break
        time.sleep(0.5)
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--dns-port-file", help="also answer DNS on a UDP port written here")
    ap.add_argument("--log", required=True)
    ap.add_argument("--parent", type=int, default=os.getppid())
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--gen", type=int, help="write the /big body of N bytes to stdout")
    ap.add_argument("--tls-cert", help="certificate chain (PEM) for the HTTPS port")
    ap.add_argument("--tls-key", help="its private key (PEM)")
    ap.add_argument("--tls-port-file", help="serve HTTPS too, on a port written here")
    ap.add_argument("--tls-port", type=int, default=0, help="the HTTPS port (0: any)")
    ap.add_argument("--bind", default="127.0.0.1", help="the address both ports listen on")
    ap.add_argument("--dns-map", action="append", default=[],
                    help="NAME=ADDR: the DNS answer for NAME (default: the --bind address)")
    a = ap.parse_args()
    if a.gen is not None:
        n, k, out = a.gen, 0, sys.stdout.buffer
        try:
            while n > 0:
                blk = big_block(k)[:n]
                out.write(blk)
                n -= len(blk)
                k += 1
            out.flush()
        except BrokenPipeError:
            os._exit(1)	# the reader gave up; it reports that itself
        return
    srv = Server(a.log)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.bind, a.port))
    ls.listen(128)
    port = ls.getsockname()[1]
    if a.dns_port_file:
        ds = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        ds.bind(("127.0.0.1", 0))
        with open(a.dns_port_file + ".tmp", "w") as f:
            f.write("%d\n" % ds.getsockname()[1])
        os.rename(a.dns_port_file + ".tmp", a.dns_port_file)
        names = dict(m.lower().split("=", 1) for m in a.dns_map)
        threading.Thread(target=dns_serve, args=(srv, ds, a.bind, names), daemon=True).start()
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    if a.tls_port_file:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        # The client's order of cipher suites decides, so the log shows it.
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
        ctx.set_alpn_protocols(["http/1.1"])
        ctx.sni_callback = remember_sni
        ts = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ts.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ts.bind((a.bind, a.tls_port))
        ts.listen(128)
        threading.Thread(target=accept_loop, args=(srv, ts, ctx), daemon=True).start()
        with open(a.tls_port_file + ".tmp", "w") as f:
            f.write("%d\n" % ts.getsockname()[1])
        os.rename(a.tls_port_file + ".tmp", a.tls_port_file)
    print(port, flush=True)
    threading.Thread(target=watchdog, args=(a.parent, a.max_seconds), daemon=True).start()
    accept_loop(srv, ls, None)


def accept_loop(srv, ls, ctx):
    while True:
        s, _ = ls.accept()
        with srv.lock:
            srv.accepted += 1
            cid = srv.accepted
        threading.Thread(target=Conn(srv, s, cid, ctx).serve, daemon=True).start()


if __name__ == "__main__":
    main()
