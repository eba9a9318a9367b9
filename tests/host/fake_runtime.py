#!/usr/bin/env python3
"""A fake container runtime for the golden tests of opencode-sandbox.

Installed as podman, docker and container (links to this file) in a
directory first in PATH. Each invocation appends its argv, one argument a
line, to $FAKE_DIR/calls (a "=== NAME" line first), and the environment
variables named in $FAKE_ENV to $FAKE_DIR/env. `run` also writes its argv
to $FAKE_DIR/run.argv, copies the policy files and the OpenCode overlay it
was handed (the sources of the /sandbox/config and /etc/opencode-sandbox/run
mounts) to $FAKE_DIR/staged/, writes $FAKE_AUDIT's lines to the audit log
in the /sandbox/logs mount, and exits $FAKE_EXIT (default 0).

Behaviour switches: FAKE_NO_DAEMON=1 (docker version and container system
status fail), FAKE_NO_IMAGE=1 (image exists/inspect fail), FAKE_NO_CAP_ADD=1
(run --help does not list --cap-add), FAKE_RUN_WAIT=1 (run waits for a
signal; kill --signal SIG NAME delivers it, and the run exits 128+SIG).
"""
import os
import shutil
import signal
import sys
import time

D = os.environ["FAKE_DIR"]
NAME = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]


def record():
    with open(os.path.join(D, "calls"), "a") as f:
        f.write("=== %s\n" % NAME)
        for a in ARGS:
            f.write(a.replace("\\", "\\\\").replace("\n", "\\n") + "\n")
    names = os.environ.get("FAKE_ENV", "").split()
    if names:
        with open(os.path.join(D, "env"), "a") as f:
            for n in names:
                f.write("%s %s=%s\n" % (ARGS[0] if ARGS else "-", n, os.environ.get(n, "(unset)")))


def mounts():
    """target -> source of every --mount type=bind,... argument."""
    out = {}
    for i, a in enumerate(ARGS[:-1]):
        if a == "--mount":
            kv = dict(p.split("=", 1) for p in ARGS[i + 1].split(",") if "=" in p)
            out[kv.get("target")] = kv.get("source")
    return out


def run():
    with open(os.path.join(D, "run.argv"), "w") as f:
        for a in ARGS:
            f.write(a.replace("\n", "\\n") + "\n")
    m = mounts()
    staged = os.path.join(D, "staged")
    shutil.rmtree(staged, ignore_errors=True)
    for target, name in (("/sandbox/config", "config"), ("/etc/opencode-sandbox/run", "opencode")):
        if m.get(target):
            shutil.copytree(m[target], os.path.join(staged, name), symlinks=True)
    if m.get("/home/opencode"):
        with open(os.path.join(D, "home.list"), "w") as f:
            for top, dirs, files in sorted(os.walk(m["/home/opencode"])):
                rel = os.path.relpath(top, m["/home/opencode"])
                for n in sorted(dirs + files):
                    f.write(os.path.normpath(os.path.join(rel, n)) + "\n")
    audit = os.environ.get("FAKE_AUDIT")
    if audit and m.get("/sandbox/logs"):
        shutil.copyfile(audit, os.path.join(m["/sandbox/logs"], "audit-events.jsonl"))
    if os.environ.get("FAKE_RUN_WAIT") == "1":
        with open(os.path.join(D, "run.pid"), "w") as f:
            f.write(str(os.getpid()))
        got = []
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, lambda n, _f: got.append(n))
        deadline = time.time() + 30
        while not got and time.time() < deadline:
            time.sleep(0.05)
        with open(os.path.join(D, "run.signal"), "w") as f:
            f.write("%d\n" % (got[0] if got else 0))
        sys.exit(128 + got[0] if got else 124)
    sys.exit(int(os.environ.get("FAKE_EXIT", "0")))


def main():
    record()
    cmd = ARGS[:2]
    if cmd == ["version", "--format"] or cmd == ["system", "status"]:
        if os.environ.get("FAKE_NO_DAEMON") == "1":
            sys.stderr.write("Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n")
            sys.exit(1)
        print("28.2.2")
        return
    if cmd in (["image", "exists"], ["image", "inspect"]):
        sys.exit(1 if os.environ.get("FAKE_NO_IMAGE") == "1" else 0)
    if cmd == ["run", "--help"]:
        print("Usage: %s run [options] IMAGE [COMMAND [ARG...]]" % NAME)
        print("      --cpus decimal")
        if os.environ.get("FAKE_NO_CAP_ADD") != "1":
            print("      --cap-add strings   Add capabilities to the container")
        return
    if ARGS[:1] == ["run"]:
        run()
    if ARGS[:1] == ["kill"]:
        sig = {"TERM": signal.SIGTERM, "HUP": signal.SIGHUP, "INT": signal.SIGINT}[ARGS[2]]
        try:
            with open(os.path.join(D, "run.pid")) as f:
                os.kill(int(f.read()), sig)
        except (OSError, ValueError):
            sys.exit(1)
        return
    if ARGS[:1] in (["rm"], ["delete"]):
        return


if __name__ == "__main__":
    main()
