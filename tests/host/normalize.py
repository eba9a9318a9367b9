#!/usr/bin/env python3
"""Normalizes a golden transcript of opencode-sandbox (stdin to stdout).

  normalize.py T NAME CPUS [BASE]

T (the case's temp dir) becomes $T, BASE (the test's) $BASE, the container NAME becomes NAME, run
ids and the project hash become fixed words, and the default --cpus value
(CPUS, which depends on the machine) becomes CPUS.
"""
import re
import sys

t, name, cpus = sys.argv[1:4]
base = sys.argv[4] if len(sys.argv) > 4 else None
text = sys.stdin.read()
if name:
    text = text.replace(name, "NAME")
text = text.replace(t, "$T")
if base:
    text = text.replace(base, "$BASE")
text = re.sub(r"runs/\d{8}-\d{6}-[a-z0-9]{6}", "runs/RUN", text)
text = re.sub(r"(projects/[a-z0-9-]+)-[0-9a-f]{12}", r"\1-HASH", text)
text = re.sub(r"--cpus\n%s\n" % re.escape(cpus), "--cpus\nCPUS\n", text)
text = re.sub(r"--cpus %s " % re.escape(cpus), "--cpus CPUS ", text)
text = re.sub(r"\.tmp\.\d+", ".tmp.PID", text)
# A container name printed where no run argv gave it away (--dry-run).
text = re.sub(r"((?:--name[ \n])|(?:container: ))([A-Za-z0-9._-]+)-[a-z0-9]{8}(?=[\s)])",
              r"\1\2-RANDOM", text)
sys.stdout.write(text)
