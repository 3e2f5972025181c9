#!/usr/bin/env python3
"""Turns criterion's text output (stdin) into `name  estimate` lines: the
middle of each `time: [low mid high]` with its unit, in ns."""
import re
import sys

UNIT = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
name = None
for line in sys.stdin:
    m = re.match(r"^(\S+)\s+time:\s+\[(\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\]", line)
    if m:
        name = m.group(1)
    elif re.match(r"^\S+\s*$", line.strip()) and not line.startswith(" ") and "time:" not in line:
        name = line.strip()
        continue
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
    if m and name:
        print(f"{name:45} {float(m.group(1)) * UNIT[m.group(2)]:10.3f} ns")
        name = None
