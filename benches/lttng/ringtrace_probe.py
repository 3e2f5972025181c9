#!/usr/bin/env python3
"""One measurement of `ringtrace record`, as a probe command for search.py.

    ringtrace_probe.py --rate R --threads N --seconds D

Runs `ringtrace record -o TMP --mode MODE --buffer-size BUF -- paced --rate R
--threads N --seconds D` (the `paced` example fires the 16-byte tracepoint
`bench:event(thread, seq)`), and prints one JSON line:
{"emitted", "read", "lost", "consumer_cpu_ns", "bytes"}: events fired, events
in the session, fired - read, the recorder's CPU time (user + system, from its
own summary), bytes of the session on disk.

Environment: RINGTRACE (the binary; default target/release/ringtrace),
PACED (default target/release/examples/paced), RINGTRACE_PROBE_MODE
(`discard`, the default, or `blocking:MS`), RINGTRACE_PROBE_BUFFER (bytes per
CPU, default 1M: LTTng's 4 x 256 KiB sub-buffers), RINGTRACE_PROBE_ZSTD (a
level, to compress chunks), RINGTRACE_PROBE_CLOCK (a clock name, e.g. `tsc`;
default the program's own, `mono`: CLOCK_MONOTONIC, as LTTng-UST's),
RINGTRACE_PROBE_OUTDIR (default /var/tmp), RINGTRACE_PROBE_REALTIME (a
SCHED_FIFO priority for the recorder: `ringtrace record --realtime`).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))

p = argparse.ArgumentParser()
p.add_argument("--rate", type=float, required=True)
p.add_argument("--threads", type=int, required=True)
p.add_argument("--seconds", type=float, required=True)
a = p.parse_args()

ringtrace = os.environ.get("RINGTRACE", os.path.join(root, "target/release/ringtrace"))
paced = os.environ.get("PACED", os.path.join(root, "target/release/examples/paced"))
mode = os.environ.get("RINGTRACE_PROBE_MODE", "discard")
buffer = os.environ.get("RINGTRACE_PROBE_BUFFER", "1M")
outdir = os.environ.get("RINGTRACE_PROBE_OUTDIR", "/var/tmp")

tmp = tempfile.mkdtemp(prefix="rtbench-ringtrace.", dir=outdir)
try:
    session = os.path.join(tmp, "trace")
    cmd = [ringtrace, "record", "-o", session, "--buffer-size", buffer]
    if mode.startswith("blocking:"):
        cmd += ["--mode", "blocking", "--blocking-timeout", mode.split(":", 1)[1]]
    else:
        cmd += ["--mode", mode]
    if os.environ.get("RINGTRACE_PROBE_CLOCK"):
        cmd += ["--clock", os.environ["RINGTRACE_PROBE_CLOCK"]]
    if os.environ.get("RINGTRACE_PROBE_REALTIME"):
        cmd += ["--realtime", os.environ["RINGTRACE_PROBE_REALTIME"]]
    if os.environ.get("RINGTRACE_PROBE_ZSTD"):
        cmd += ["--zstd", os.environ["RINGTRACE_PROBE_ZSTD"]]
    cmd += ["--", paced, "--rate", str(int(a.rate)), "--threads", str(a.threads),
            "--seconds", str(a.seconds)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        sys.exit(f"ringtrace record failed ({r.returncode})")
    paced_out = json.loads(r.stdout.strip().splitlines()[-1])
    fired = paced_out["emitted"] + paced_out["refused"]
    m = re.search(r"(\d+) events of \d+ process(?:es)? in .* \((\d+) bytes, ([0-9.]+) ms of the recorder's CPU per million events\)",
                  r.stderr)
    if not m:
        sys.exit("no summary line from ringtrace record")
    read, size, ms_per_m = int(m.group(1)), int(m.group(2)), float(m.group(3))
    print(json.dumps({
        "emitted": fired,
        "read": read,
        "lost": fired - read,
        "consumer_cpu_ns": int(ms_per_m * 1e6 * read / 1e6),
        "bytes": size,
        "refused_by_ring": paced_out["refused"],
        # paced fires for exactly --seconds: a producer that could not keep
        # the pace shows as fewer events in that time (search.py then calls
        # the result producer-bound).
        "wall_ns": int(a.seconds * 1e9),
        # CPU time of the producer threads (paced's own count).
        "producer_cpu_ns": paced_out["cpu_ns"],
    }))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
