#!/usr/bin/env python3
"""Rate search over a "probe command" (tracer-agnostic; standard library only).

    search.py lossless --probe CMD --threads N --seconds D [--start R]
                       [--steps 6] [--repeats 2] [--max-rate R] [--json FILE]
    search.py max      --probe CMD --threads N --seconds D [--repeats 2]
                       [--json FILE]

CMD is a shell-quoted command line.  For every measurement the search runs

    CMD --rate R --threads N --seconds D

(R = events/s PER THREAD, 0 = unpaced) and takes the last stdout line that
parses as a JSON object.  Required keys:

    {"emitted": int, "read": int, "lost": int, "consumer_cpu_ns": int, "bytes": int}

Optional keys it uses when present: "wall_ns" (longest producer thread's
emission time, to detect a producer that could not keep the requested pace)
"producer_cpu_ns" (the "prodcpu" column: CPU share each producer thread got),
"other_cpu_ns" and "window_ns" (the "other" column: CPU used by anything else
during the run, in CPUs; a run above --max-other-cpu is "noisy" and is rerun
up to --noise-retries times, --noise-wait seconds apart; only the last attempt
counts)
and "discarded_tracer" / "discarded_bt2" (shown in the table).  The probe's
stderr is captured: appended to --log FILE if given, printed if the probe
fails.  A non-zero exit status aborts the search.

lossless: doubles R from --start until a rate loses events, then bisects
--steps times between the last lossless and the first lossy rate.  A rate is
lossless only if --repeats consecutive runs all have lost == 0 (the remaining
repeats of a rate are skipped as soon as one run loses).  If the start rate is
already lossy the search halves downward instead.  If the producer cannot reach
the requested rate (achieved < 95 % of requested, from wall_ns) while still
lossless, the search stops: the result is then "producer-bound", i.e. the
tracer never lost anything at the highest rate the producer could generate.

max: runs the probe unpaced (R = 0) --repeats times and reports the achieved
rate and the loss.
"""

import argparse
import json
import shlex
import subprocess
import sys
import time

PACE_TOLERANCE = 0.95


LOG = None


def run_probe(cmd, rate, threads, seconds):
    argv = shlex.split(cmd) + ["--rate", str(int(rate)), "--threads", str(threads),
                               "--seconds", str(seconds)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.monotonic() - t0
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"$ {' '.join(argv)}\n{proc.stderr}{proc.stdout}\n")
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"search.py: probe failed (exit {proc.returncode}): {' '.join(argv)}")
    result = None
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                pass
    if result is None:
        sys.exit(f"search.py: probe printed no JSON line: {' '.join(argv)}\n{proc.stdout}")
    for key in ("emitted", "read", "lost", "consumer_cpu_ns", "bytes"):
        if key not in result:
            sys.exit(f"search.py: probe JSON lacks {key!r}: {result}")
    result["_rate"] = rate
    result["_threads"] = threads
    result["_probe_s"] = elapsed
    if result.get("wall_ns"):
        result["_achieved"] = result["emitted"] / threads / (result["wall_ns"] / 1e9)
    else:
        result["_achieved"] = None
    return result


def fmt_rate(r):
    if r is None:
        return "-"
    if r >= 1e6:
        return f"{r / 1e6:.3f}M"
    if r >= 1e3:
        return f"{r / 1e3:.1f}k"
    return f"{r:.0f}"


HEADER = (f"{'rate/thr':>10} {'total/s':>10} {'rep':>3} {'emitted':>11} {'read':>11} "
          f"{'lost':>9} {'disc.trc':>9} {'disc.bt2':>9} {'cons ns/ev':>10} "
          f"{'B/ev':>6} {'achvd/thr':>10} {'prodcpu':>7} {'other':>5} {'verdict':>8}")


def row(r, rep):
    emitted = r["emitted"]
    per_ev = r["consumer_cpu_ns"] / emitted if emitted else 0.0
    bpe = r["bytes"] / r["read"] if r["read"] else 0.0
    verdict = "ok" if r["lost"] == 0 else "LOSS"
    if r["_rate"] > 0 and r["_achieved"] is not None and r["_achieved"] < PACE_TOLERANCE * r["_rate"]:
        verdict += "/slow"
    if r.get("_noisy"):
        verdict += "/noisy"
    disc_t = r.get("discarded_tracer", "-")
    disc_b = r.get("discarded_bt2", "-")
    disc_b = "-" if disc_b is None else disc_b
    # share of a CPU each producer thread actually got (paced producers
    # busy-wait, so < ~0.95 means they were preempted: CPU contention)
    prodcpu = "-"
    if r.get("producer_cpu_ns") and r.get("wall_ns"):
        prodcpu = f"{r['producer_cpu_ns'] / (r['_threads'] * r['wall_ns']):.2f}"
    other = "-"
    if r.get("other_cpu_ns") is not None and r.get("window_ns"):
        other = f"{r['other_cpu_ns'] / r['window_ns']:.2f}"
    rate = "max" if r["_rate"] == 0 else fmt_rate(r["_rate"])
    total = "max" if r["_rate"] == 0 else fmt_rate(r["_rate"] * r["_threads"])
    return (f"{rate:>10} {total:>10} {rep:>3} {emitted:>11} {r['read']:>11} {r['lost']:>9} "
            f"{disc_t!s:>9} {disc_b!s:>9} {per_ev:>10.1f} {bpe:>6.1f} "
            f"{fmt_rate(r['_achieved']):>10} {prodcpu:>7} {other:>5} {verdict:>8}")


def noisy(r, args):
    """True when the probe reports foreign CPU load above --max-other-cpu."""
    if r.get("other_cpu_ns") is None or not r.get("window_ns"):
        return False
    return r["other_cpu_ns"] / r["window_ns"] > args.max_other_cpu


def probe_quiet(args, rate, rep):
    """Runs one probe; reruns it (after a pause) while it reports foreign load."""
    for attempt in range(args.noise_retries + 1):
        r = run_probe(args.probe, rate, args.threads, args.seconds)
        r["_rep"] = rep
        r["_noisy"] = noisy(r, args)
        print(row(r, rep), flush=True)
        if not r["_noisy"]:
            break
        if attempt < args.noise_retries:
            print(f"# ^ discarded: other load used {r['other_cpu_ns'] / r['window_ns']:.2f} CPU "
                  f"(> {args.max_other_cpu}); retrying in {args.noise_wait:g} s", flush=True)
            time.sleep(args.noise_wait)
        else:
            print("# ^ still noisy after retries; kept", flush=True)
    return r


class Search:
    def __init__(self, args):
        self.args = args
        self.probes = []  # every run, in order
        self.verdicts = {}  # rate -> (lossless, producer_slow)
        self.achieved = {}  # rate -> lowest rate per thread a run achieved

    def measure(self, rate):
        """Returns (lossless, producer_slow) for this rate, running up to `repeats` times."""
        if rate in self.verdicts:
            return self.verdicts[rate]
        slow = False
        lossless = True
        for rep in range(1, self.args.repeats + 1):
            r = probe_quiet(self.args, rate, rep)
            self.probes.append(r)
            if r["_achieved"] is not None:
                self.achieved[rate] = min(self.achieved.get(rate, r["_achieved"]), r["_achieved"])
                if r["_achieved"] < PACE_TOLERANCE * rate:
                    slow = True
            if r["lost"] != 0:
                lossless = False
                break
        self.verdicts[rate] = (lossless, slow)
        return lossless, slow


def lossless(args):
    s = Search(args)
    print(f"# lossless search: probe={args.probe!r} threads={args.threads} seconds={args.seconds} "
          f"start={args.start} steps={args.steps} repeats={args.repeats}")
    print(HEADER, flush=True)
    rate = float(args.start)
    good, bad, bound = None, None, None
    ok, slow = s.measure(rate)
    if ok:
        while True:
            good = rate
            if slow:
                bound = rate
                break
            if args.max_rate and rate * 2 > args.max_rate:
                break
            rate *= 2
            ok, slow = s.measure(rate)
            if not ok:
                bad = rate
                break
    else:
        while True:
            bad = rate
            rate /= 2
            if rate < args.min_rate:
                break
            ok, slow = s.measure(rate)
            if ok:
                good = rate
                break
    if good is not None and bad is not None and bound is None:
        for _ in range(args.steps):
            mid = round((good + bad) / 2)
            if mid in (good, bad):
                break
            ok, slow = s.measure(mid)
            if ok:
                good = mid
                if slow:
                    bound = mid
                    break
            else:
                bad = mid

    print()
    if good is None:
        print(f"RESULT lossless: none found (lost events down to {fmt_rate(bad)}/thread)")
    else:
        note = ""
        if bound is not None:
            # The rate reached, not the one asked for: the producer could
            # not keep the pace, so the asked rate was never tried.
            asked = good
            good = s.achieved.get(bound, good)
            note = (f" (producer-bound: asked for {asked:.0f}/thread, the producer reached no more; "
                    "tracer lost nothing)")
        elif bad is None:
            note = " (no lossy rate found up to --max-rate)"
        total = good * args.threads
        print(f"RESULT lossless: {good:.0f} events/s per thread x {args.threads} threads = "
              f"{total:.0f} events/s total{note}; first lossy rate: "
              f"{'-' if bad is None else f'{bad:.0f}/thread'}")
    summary = {"mode": "lossless", "threads": args.threads, "seconds": args.seconds,
               "lossless_rate_per_thread": good, "first_lossy_rate_per_thread": bad,
               "producer_bound": bound is not None,
               "probes": [{k: v for k, v in p.items()} for p in s.probes]}
    finish(args, summary)


def maxrate(args):
    s = Search(args)
    print(f"# max (unpaced): probe={args.probe!r} threads={args.threads} seconds={args.seconds} "
          f"repeats={args.repeats}")
    print(HEADER, flush=True)
    runs = []
    for rep in range(1, args.repeats + 1):
        r = probe_quiet(args, 0, rep)
        runs.append(r)
    print()
    for r in runs:
        total = r["_achieved"] * args.threads if r["_achieved"] else None
        loss = 100.0 * r["lost"] / r["emitted"] if r["emitted"] else 0.0
        print(f"RESULT max run {r['_rep']}: {fmt_rate(r['_achieved'])} events/s per thread, "
              f"{fmt_rate(total)} events/s total; lost {r['lost']} of {r['emitted']} ({loss:.3f} %); "
              f"consumer {r['consumer_cpu_ns'] / max(r['emitted'], 1):.1f} ns/event; "
              f"{r['bytes'] / max(r['read'], 1):.1f} bytes/event on disk"
              + (f"; producer {r['producer_cpu_ns'] / r['emitted']:.1f} CPU ns/event"
                 if r.get("producer_cpu_ns") and r["emitted"] else ""))
    finish(args, {"mode": "max", "threads": args.threads, "seconds": args.seconds, "probes": runs})


def finish(args, summary):
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
        print(f"(all probes written to {args.json})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["lossless", "max"])
    ap.add_argument("--probe", required=True, help="probe command (shell-quoted string)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--start", type=float, default=250000, help="first rate/thread (lossless)")
    ap.add_argument("--steps", type=int, default=6, help="bisection steps (lossless)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="runs per rate (default 2 for lossless, 1 for max)")
    ap.add_argument("--max-rate", type=float, default=0, help="stop doubling above this rate/thread")
    ap.add_argument("--min-rate", type=float, default=1000, help="stop halving below this rate/thread")
    ap.add_argument("--json", help="write every probe's JSON and the result to this file")
    ap.add_argument("--log", help="append every probe's stderr and stdout to this file")
    ap.add_argument("--max-other-cpu", type=float, default=0.25,
                    help="a run whose other_cpu_ns/window_ns exceeds this (CPUs) is noisy and rerun")
    ap.add_argument("--noise-retries", type=int, default=3, help="reruns of a noisy run")
    ap.add_argument("--noise-wait", type=float, default=10, help="seconds to wait before a rerun")
    args = ap.parse_args()
    global LOG
    LOG = args.log
    if args.repeats is None:
        args.repeats = 2 if args.mode == "lossless" else 1
    if args.seconds == int(args.seconds):
        args.seconds = int(args.seconds)
    (lossless if args.mode == "lossless" else maxrate)(args)


if __name__ == "__main__":
    main()
