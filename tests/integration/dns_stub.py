#!/usr/bin/env python3
"""A stub DNS authority for the resolver tests, python3 stdlib only.

Serves one zone file on UDP and TCP (same port on 127.0.0.1), writes one
JSON line per query to --log ({"name", "type", "proto"}), and writes its
port to --port-file once both sockets are bound. Zone lines:

    NAME TYPE TTL VALUE     A, AAAA, CNAME, TXT, SOA (VALUE "MINIMUM"),
                            HTTPS (VALUE: the RDATA in hex)
    NAME DELAY MS           answer NAME only after MS milliseconds
    NAME DROP               never answer NAME
    NAME DROPFIRST          leave the first query for NAME unanswered
    NAME ONCE               answer only the first query for NAME
    NAME SERVFAIL           answer NAME with SERVFAIL

Names are absolute without the final dot; "@" means the zone apex
(--zone-name). A name with no records under the apex gets NXDOMAIN with
the apex SOA; a name with records of other types gets NODATA. UDP answers
larger than the client's limit (512, or its EDNS size) are truncated (TC).
With --silent, nothing is ever answered (a dead upstream). The log's "wire"
field is the name as the query spelt it (case kept). --case says how the
question comes back: "echo" (as asked, the normal case), "lower" (in
lowercase: a server that does not keep the case of questions), "forge"
(first a forged answer, question in swapped case and A 198.18.0.66,
then the real one).
"""
import argparse
import json
import os
import socket
import struct
import threading
import time


def wire_name(msg, off):
    """The question name as spelt on the wire, case kept."""
    labels = []
    while msg[off]:
        labels.append(msg[off + 1:off + 1 + msg[off]].decode("latin-1"))
        off += 1 + msg[off]
    return ".".join(labels)


def parse_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        if n & 0xC0:
            raise ValueError("compressed question")
        off += 1
        if n == 0:
            break
        labels.append(msg[off:off + n].decode("latin-1").lower())
        off += n
    return ".".join(labels), off


def enc_name(name):
    out = b""
    for label in name.split(".") if name else []:
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "TXT": 16, "AAAA": 28, "HTTPS": 65}


class Zone:
    def __init__(self, path, apex):
        self.apex = apex
        self.rr = {}  # name -> [(type, ttl, rdata)]
        self.delay = {}
        self.drop = set()
        self.dropfirst = set()
        self.once = set()
        self.seen = {}  # name -> queries so far
        self.servfail = set()
        self.soa_min = 30
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = line.split(None, 3)
                name = apex if parts[0] == "@" else parts[0].lower()
                kind = parts[1].upper()
                if kind == "DELAY":
                    self.delay[name] = int(parts[2]) / 1000.0
                elif kind == "DROP":
                    self.drop.add(name)
                elif kind == "DROPFIRST":
                    self.dropfirst.add(name)
                elif kind == "ONCE":
                    self.once.add(name)
                elif kind == "SERVFAIL":
                    self.servfail.add(name)
                else:
                    self.add(name, kind, int(parts[2]), parts[3])

    def add(self, name, kind, ttl, value):
        t = TYPES[kind]
        if kind == "A":
            rdata = socket.inet_pton(socket.AF_INET, value)
        elif kind == "AAAA":
            rdata = socket.inet_pton(socket.AF_INET6, value)
        elif kind == "CNAME":
            rdata = enc_name(value.lower())
        elif kind == "TXT":
            data = value.encode()
            rdata = b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255]
                             for i in range(0, max(len(data), 1), 255))
        elif kind == "SOA":
            self.soa_min = int(value)
            rdata = (enc_name("ns." + self.apex) + enc_name("admin." + self.apex) +
                     struct.pack(">IIIII", 1, 3600, 600, 86400, int(value)))
        else:
            rdata = bytes.fromhex(value)
        self.rr.setdefault(name, []).append((t, ttl, rdata))

    def soa(self):
        for t, ttl, rdata in self.rr.get(self.apex, []):
            if t == 6:
                return enc_name(self.apex) + struct.pack(">HHIH", 6, 1, ttl, len(rdata)) + rdata
        return b""

    def answer(self, name, qtype):
        """(rcode, answer records, authority records, counts)"""
        records, seen, cur = [], 0, name
        while seen < 8:
            seen += 1
            rrs = self.rr.get(cur)
            if rrs is None:
                break
            cname = [r for r in rrs if r[0] == 5]
            if cname and qtype != 5:
                t, ttl, rdata = cname[0]
                records.append(enc_name(cur) + struct.pack(">HHIH", 5, 1, ttl, len(rdata)) + rdata)
                cur, _ = parse_name(rdata, 0)
                continue
            for t, ttl, rdata in rrs:
                if t == qtype:
                    records.append(enc_name(cur) + struct.pack(">HHIH", t, 1, ttl, len(rdata)) + rdata)
            break
        exists = name in self.rr or any(k.endswith("." + name) for k in self.rr)
        if not records and not exists:
            return 3, [], [self.soa()]
        if not records or (cur not in self.rr and cur != name):
            return 0 if exists else 3, records, [self.soa()]
        return 0, records, []


def forge(msg):
    """A forged answer: the question in swapped case, A 198.18.0.66."""
    qid, flags = struct.unpack(">HH", msg[:4])
    name, off = parse_name(msg, 12)
    question = msg[12:off].swapcase() + msg[off:off + 4]
    head = struct.pack(">HHHHHH", qid, 0x8400 | (flags & 0x0100), 1, 1, 0, 0)
    return head + question + b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 3600, 4) + bytes(
        [198, 18, 0, 66])


def respond(zone, msg, limit, log, proto, lock, case="echo"):
    qid, flags, qd = struct.unpack(">HHH", msg[:6])
    name, off = parse_name(msg, 12)
    qtype, qclass = struct.unpack(">HH", msg[off:off + 4])
    question = msg[12:off + 4]
    if case == "lower":
        question = question[:-4].lower() + question[-4:]
    # An OPT record in the additional section raises a UDP answer's limit to
    # the client's payload size.
    if struct.unpack(">H", msg[10:12])[0] >= 1 and len(msg) >= off + 4 + 11:
        opt = msg[off + 4:]
        if opt[0] == 0 and struct.unpack(">H", opt[1:3])[0] == 41:
            limit = max(512, struct.unpack(">H", opt[3:5])[0]) if proto == "udp" else limit
    with lock:
        log.write(json.dumps({"name": name, "wire": wire_name(msg, 12), "type": qtype,
                              "proto": proto}) + "\n")
        log.flush()
        zone.seen[name] = nth = zone.seen.get(name, 0) + 1
    if name in zone.drop:
        return None
    if (name in zone.dropfirst and nth == 1) or (name in zone.once and nth > 1):
        return None
    if name in zone.delay:
        time.sleep(zone.delay[name])
    rd = flags & 0x0100
    if name in zone.servfail:
        return struct.pack(">HHHHHH", qid, 0x8002 | rd, 1, 0, 0, 0) + question
    rcode, an, ns = zone.answer(name, qtype)
    ns = [r for r in ns if r]
    head = struct.pack(">HHHHHH", qid, 0x8400 | rd | rcode, 1, len(an), len(ns), 0)
    out = head + question + b"".join(an) + b"".join(ns)
    if len(out) > limit:
        out = struct.pack(">HHHHHH", qid, 0x8600 | rd | rcode, 1, 0, 0, 0) + question
    return out


def serve_udp(zone, sock, log, lock, silent, case):
    while True:
        try:
            msg, peer = sock.recvfrom(65535)
        except OSError:
            return
        if silent:
            continue

        def work(msg=msg, peer=peer):
            try:
                out = respond(zone, msg, 512, log, "udp", lock, case)
                if out is not None and case == "forge":
                    sock.sendto(forge(msg), peer)
            except (ValueError, struct.error, IndexError):
                return
            if out is not None:
                sock.sendto(out, peer)
        threading.Thread(target=work, daemon=True).start()


def serve_tcp_conn(zone, conn, log, lock, silent, case):
    conn.settimeout(10)
    try:
        while True:
            head = conn.recv(2, socket.MSG_WAITALL)
            if len(head) < 2:
                return
            n = struct.unpack(">H", head)[0]
            msg = conn.recv(n, socket.MSG_WAITALL)
            if silent:
                continue
            out = respond(zone, msg, 65535, log, "tcp", lock, case)
            if out is not None:
                conn.sendall(struct.pack(">H", len(out)) + out)
    except (OSError, ValueError, struct.error, IndexError):
        pass
    finally:
        conn.close()


def serve_tcp(zone, lsock, log, lock, silent, case):
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve_tcp_conn, args=(zone, conn, log, lock, silent, case),
                         daemon=True).start()


def watchdog(parent):
    while True:
        time.sleep(0.5)
        try:
            os.kill(parent, 0)
        except OSError:
            os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zone", required=True)
    ap.add_argument("--zone-name", default="example.test")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--silent", action="store_true")
    ap.add_argument("--case", choices=("echo", "lower", "forge"), default="echo")
    ap.add_argument("--parent", type=int, default=0)
    a = ap.parse_args()
    zone = Zone(a.zone, a.zone_name)
    for _ in range(50):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        port = udp.getsockname()[1]
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind(("127.0.0.1", port))
            break
        except OSError:
            udp.close()
            tcp.close()
    tcp.listen(64)
    log = open(a.log, "a")
    lock = threading.Lock()
    if a.parent:
        threading.Thread(target=watchdog, args=(a.parent,), daemon=True).start()
    threading.Thread(target=serve_tcp, args=(zone, tcp, log, lock, a.silent, a.case),
                     daemon=True).start()
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(a.port_file + ".tmp", a.port_file)
    serve_udp(zone, udp, log, lock, a.silent, a.case)


if __name__ == "__main__":
    main()
