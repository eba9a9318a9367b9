#!/usr/bin/env python3
"""The "internet" of the netns tests, run inside the internet namespace.

Serves, on every address of the namespace: DNS on UDP and TCP 53 (any A
question gets 198.18.0.1, AAAA gets 2001:2::1), a UDP echo on ports 7
and 443 (the QUIC probe), a TCP banner on 853 (DNS over TLS stand-in) and
HTTP on 80 whose body says "internet-origin" (and HTTPS on 443 with
--tls-cert/--tls-key). Every datagram and
connection is one line on stdout, so a test can tell what reached the
outside. Stops when killed, or after --lifetime seconds.
"""
import argparse
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


def tcp_client(c, port):
    try:
        c.settimeout(5)
        if port == 443:
            c = TLS.wrap_socket(c, server_side=True)
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
    a = ap.parse_args()
    global TLS
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
