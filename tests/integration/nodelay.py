#!/usr/bin/env python3
"""Report TCP_NODELAY on the sockets a process accepted on a local port.

usage: nodelay.py PID PORT

Opens a client connection to 127.0.0.1:PORT and holds it, then finds the
process's established sockets whose local port is PORT (through
/proc/PID/fd and /proc/net/tcp), takes a copy of each descriptor with
pidfd_getfd(2) (needs ptrace rights over PID: root in the tests) and
prints one JSON object: {"sockets": N, "nodelay": M}, M of the N sockets
having TCP_NODELAY set.
"""
import ctypes
import json
import os
import socket
import sys
import time

SYS_pidfd_open = 434
SYS_pidfd_getfd = 438


def established_inodes(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, state, inode = parts[1], parts[3], parts[9]
                    if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(inode)
        except FileNotFoundError:
            pass
    return inodes


def main():
    pid, port = int(sys.argv[1]), int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    client = socket.create_connection(("127.0.0.1", port), timeout=5)
    found = []
    for _ in range(50):  # the accept happens in the process's own time
        inodes = established_inodes(port)
        found = []
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                found.append(int(fd))
        if found:
            break
        time.sleep(0.05)
    pidfd = libc.syscall(SYS_pidfd_open, pid, 0)
    if pidfd < 0:
        sys.exit("pidfd_open: %s" % os.strerror(ctypes.get_errno()))
    nodelay = 0
    for fd in found:
        copy = libc.syscall(SYS_pidfd_getfd, pidfd, fd, 0)
        if copy < 0:
            sys.exit("pidfd_getfd: %s" % os.strerror(ctypes.get_errno()))
        s = socket.socket(fileno=copy)
        nodelay += 1 if s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) else 0
        s.detach()
        os.close(copy)
    os.close(pidfd)
    client.close()
    print(json.dumps({"sockets": len(found), "nodelay": nodelay}))


if __name__ == "__main__":
    main()
