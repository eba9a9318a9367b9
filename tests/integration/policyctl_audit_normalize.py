#!/usr/bin/env python3
"""usage: policyctl_audit_normalize.py IN OUT

Turns an audit file recorded by egressd into a fixture with stable values:
times from 2026-11-29T10:00:00Z in steps of 1.5 s, client ports, origin
ports, policy file paths and durations replaced by fixed ones; then the
"prev" hash chain is computed again over the rewritten lines (SHA-256 of
each line's bytes without its newline; 64 zeros for the first), so the
fixture verifies like the original. Key order is kept.
"""
import hashlib
import json
import re
import sys

BASE = 1795946400000  # 2026-11-29T10:00:00.000Z in milliseconds


def ts(ms):
    s, ms = divmod(ms, 1000)
    days, s = divmod(s, 86400)
    # days since 1970-01-01 to a civil date (proleptic Gregorian)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        y, m, d, s // 3600, s // 60 % 60, s % 60, ms)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    prev = "0" * 64
    out = []
    with open(src, encoding="utf-8") as f:
        for i, line in enumerate(f):
            ev = json.loads(line)
            ev["ts"] = ts(BASE + i * 1500)
            if "client" in ev:
                ev["client"] = "127.0.0.1:%d" % (40000 + i)
            if ev.get("port") not in (None, 80, 443):
                ev["port"] = 8080
            if "source" in ev:
                ev["source"] = re.sub(r"^.*/([^/:]+\.yaml)(:\d+)$",
                                      r"/etc/opencode-sandbox/\1\2", ev["source"])
            if "duration_ms" in ev:
                ev["duration_ms"] = i % 7
            ev["prev"] = prev
            text = json.dumps(ev, separators=(",", ":"), ensure_ascii=False)
            prev = hashlib.sha256(text.encode()).hexdigest()
            out.append(text + "\n")
    with open(dst, "w", encoding="utf-8") as f:
        f.writelines(out)


main()
