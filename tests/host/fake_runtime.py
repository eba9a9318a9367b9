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

Behaviour switches: FAKE_NO_DAEMON=1 (docker's server version, podman info
and container system status fail), FAKE_NO_IMAGE=1 (image exists/inspect
fail), FAKE_NO_CAP_ADD=1 (run --help does not list --cap-add), FAKE_RUN_WAIT=1
(run waits for a signal; kill --signal SIG NAME delivers it, and the run
exits 128+SIG). For the image commands: FAKE_LABELS (the JSON `image inspect
--format '{{json .Config.Labels}}'` prints), FAKE_USER (`{{.Config.User}}`),
FAKE_BUILD_EXIT (a build's status; each build's Containerfile is copied to
$FAKE_DIR/build-N.Containerfile), FAKE_PULL_FAIL=1, FAKE_OPENCODE_VERSION
(what `run --entrypoint opencode IMAGE --version` prints).
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
    for target, name in (("/sandbox/config", "config"), ("/etc/opencode-sandbox/run", "opencode"),
                         ("/home/opencode/.config/opencode/skills", "skills")):
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


def build():
    """An image build: its Containerfile kept, its status FAKE_BUILD_EXIT."""
    n = 1
    while os.path.exists(os.path.join(D, "build-%d.Containerfile" % n)):
        n += 1
    if "-f" in ARGS:
        shutil.copyfile(ARGS[ARGS.index("-f") + 1], os.path.join(D, "build-%d.Containerfile" % n))
    print("STEP 1/1: (fake build)")
    sys.exit(int(os.environ.get("FAKE_BUILD_EXIT", "0")))


def inspect_format():
    fmt = ARGS[ARGS.index("--format") + 1]
    if os.environ.get("FAKE_NO_IMAGE") == "1":
        sys.stderr.write("Error: no such image\n")
        sys.exit(1)
    if "Labels" in fmt:
        print(os.environ.get("FAKE_LABELS", '{"ai.opencode.version":"1.18.33"}'))
    elif "User" in fmt:
        print(os.environ.get("FAKE_USER", ""))


def main():
    record()
    cmd = ARGS[:2]
    if cmd == ["version", "--format"] and "Client" in ARGS[2]:
        print("4.3.1" if NAME == "podman" else "20.10.24")
        return
    if ARGS[:1] == ["--version"]:
        print("container CLI version 0.5.0")
        return
    if cmd == ["version", "--format"] or cmd == ["system", "status"] or cmd == ["info", "--format"]:
        if os.environ.get("FAKE_NO_DAEMON") == "1":
            sys.stderr.write("Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n")
            sys.exit(1)
        print("/var/lib/containers/storage" if cmd[0] == "info" else "28.2.2")
        return
    if cmd == ["image", "inspect"] and "--format" in ARGS:
        inspect_format()
        return
    if ARGS[:1] == ["build"]:
        build()
    if ARGS[:1] == ["pull"] or ARGS[:2] == ["image", "pull"]:
        sys.exit(1 if os.environ.get("FAKE_PULL_FAIL") == "1" else 0)
    if ARGS[:1] == ["rmi"]:
        return
    if ARGS[:1] == ["run"] and "--entrypoint" in ARGS and \
            ARGS[ARGS.index("--entrypoint") + 1] == "opencode":
        print(os.environ.get("FAKE_OPENCODE_VERSION", "1.18.40"))
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
