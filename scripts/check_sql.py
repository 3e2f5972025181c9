#!/usr/bin/env python3
"""Checks the SQL of docs/analysis.md against `ringtrace stats --json`:
every query of the page, in DuckDB (PyPI `duckdb`) and ClickHouse (PyPI
`chdb`), over the Parquet tables of several hosts at once, must give for
each host the rows `ringtrace stats --json` computed from that host's
trace: the same columns, the same values, in the same order.

    check_sql.py DIR_A DIR_B ... STATS_A.json STATS_B.json ... [--doc PATH]

DIR_X is a directory `ringtrace export --format parquet --host X -o DIR_X`
wrote; STATS_X.json is `ringtrace stats --json` of the same trace, given in
the same order as the directories. Each directory's host is read from its
processes table; the hosts must differ. The queries run as the page
writes them, from a scratch directory that links every DIR_X under it, so
that their `*/TABLE.parquet` reads every host's table. A query's `10000`
threshold of sections is replaced by the one `stats` used.

Exits 0 when every query agrees with every host's figures; 1 with each
difference shown (the first rows that differ, per query, engine and host);
2 on bad input (a missing file, a page without the queries, a directory
of no or several hosts) or a missing engine.
"""

import argparse
import json
import os
import re
import sys
import tempfile

# Each question's name, its key in `stats --json` (the same).
QUESTIONS = ["slowest_spans", "span_time_per_thread", "losses_per_cpu_second", "long_sections"]
ENGINES = ["duckdb", "clickhouse"]
BLOCK = re.compile(r"^```sql (\w+) (\w+)\n(.*?)^```", re.S | re.M)
THRESHOLD = re.compile(r"duration_ns > 10000\b")
SHOWN = 5


def fail(message, code=2):
    print(f"check_sql.py: {message}", file=sys.stderr)
    sys.exit(code)


def queries(doc):
    """{(engine, name): sql} of every tagged block of the page."""
    try:
        text = open(doc, encoding="utf-8").read()
    except OSError as e:
        fail(f"cannot read {doc}: {e.strerror}")
    found = {}
    for engine, name, sql in BLOCK.findall(text):
        if engine not in ENGINES:
            fail(f"{doc}: block `sql {engine} {name}`: unknown engine (valid: {', '.join(ENGINES)})")
        if (engine, name) in found:
            fail(f"{doc}: two blocks `sql {engine} {name}`")
        found[(engine, name)] = sql.strip().rstrip(";")
    missing = [f"sql {e} {q}" for q in QUESTIONS for e in ENGINES if (e, q) not in found]
    if missing:
        fail(f"{doc} has no block {', '.join(missing)}")
    extra = sorted(n for _, n in found if n not in QUESTIONS)
    if extra:
        fail(f"{doc}: blocks of unknown questions {', '.join(extra)} (valid: {', '.join(QUESTIONS)})")
    return found


def plain(value):
    """A value as JSON has it: numpy and Decimal numbers as int, bools as bool."""
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def run_duckdb(con, sql):
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, map(plain, row))) for row in cursor.fetchall()]


def run_clickhouse(chdb, sql):
    frame = chdb.query(sql, "DataFrame")
    return [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def host_of(con, directory):
    path = os.path.join(directory, "processes.parquet")
    if not os.path.isfile(path):
        fail(f"{directory} has no processes.parquet: not a `ringtrace export --format parquet` directory")
    hosts = [r[0] for r in con.execute("SELECT DISTINCT host FROM read_parquet(?)", [path]).fetchall()]
    if len(hosts) != 1:
        fail(f"{path} holds {len(hosts)} hosts ({', '.join(map(str, hosts))}); one is needed")
    return hosts[0]


def load_stats(path):
    try:
        with open(path, encoding="utf-8") as f:
            stats = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not JSON ({e}): give `ringtrace stats --json` output")
    missing = [k for k in QUESTIONS + ["section_threshold_ns"] if k not in stats]
    if missing:
        fail(f"{path} has no {', '.join(missing)}: give `ringtrace stats --json` output")
    return stats


def differences(got, want):
    """The differences of two lists of rows, in words (empty when equal)."""
    out = []
    if got and want and set(got[0]) != set(want[0]):
        return [f"columns differ: SQL {sorted(got[0])}, stats {sorted(want[0])}"]
    for i in range(max(len(got), len(want))):
        g = got[i] if i < len(got) else None
        w = want[i] if i < len(want) else None
        if g != w:
            if g is None:
                out.append(f"row {i}: only stats has {json.dumps(w)}")
            elif w is None:
                out.append(f"row {i}: only SQL has {json.dumps(g)}")
            else:
                cells = [f"{k}: SQL {g.get(k)!r}, stats {w.get(k)!r}" for k in w if g.get(k) != w.get(k)]
                out.append(f"row {i}: {'; '.join(cells)} (stats row {json.dumps(w)})")
    if len(got) != len(want):
        out.insert(0, f"{len(got)} rows from SQL, {len(want)} from stats")
    return out


def main():
    parser = argparse.ArgumentParser(
        description="Checks docs/analysis.md's SQL, in DuckDB and ClickHouse, against `ringtrace stats --json`."
    )
    parser.add_argument("paths", nargs="+", metavar="DIR_OR_STATS",
                        help="the hosts' Parquet directories, then their stats JSON files in the same order")
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--doc", default=os.path.join(here, "..", "docs", "analysis.md"),
                        help="the page of queries (default: docs/analysis.md)")
    args = parser.parse_args()
    if len(args.paths) % 2:
        fail(f"give as many stats files as directories: DIR_A DIR_B ... STATS_A.json STATS_B.json ..., not {len(args.paths)} paths")
    half = len(args.paths) // 2
    dirs, stats_files = args.paths[:half], args.paths[half:]
    for d in dirs:
        if not os.path.isdir(d):
            fail(f"{d} is not a directory: the first half of the arguments are `ringtrace export --format parquet` directories")
    try:
        import chdb
        import duckdb
    except ImportError as e:
        fail(f"{e.name} is missing: python3 -m pip install duckdb chdb")

    found = queries(args.doc)
    con = duckdb.connect()
    hosts = [host_of(con, d) for d in dirs]
    if len(set(hosts)) != len(hosts):
        fail(f"the directories' hosts repeat ({', '.join(hosts)}): export each with its own --host")
    stats = {h: load_stats(p) for h, p in zip(hosts, stats_files)}
    thresholds = {s["section_threshold_ns"] for s in stats.values()}
    if len(thresholds) != 1:
        fail(f"the stats files were computed with different section thresholds ({sorted(thresholds)} ns)")
    threshold = thresholds.pop()

    problems = []
    checked = 0
    with tempfile.TemporaryDirectory(prefix="check_sql-") as scratch:
        for i, (h, d) in enumerate(zip(hosts, dirs)):
            os.symlink(os.path.abspath(d), os.path.join(scratch, f"{i}-host"))
        before = os.getcwd()
        os.chdir(scratch)
        try:
            for (engine, name), sql in sorted(found.items()):
                if name == "long_sections":
                    sql, n = THRESHOLD.subn(f"duration_ns > {threshold}", sql)
                    if n != 1:
                        fail(f"{args.doc}: `sql {engine} long_sections` has no `duration_ns > 10000` to set the threshold in")
                try:
                    rows = run_duckdb(con, sql) if engine == "duckdb" else run_clickhouse(chdb, sql)
                except Exception as e:  # the engine's own error, shown as it is
                    problems.append(f"{engine} {name}: the query failed: {e}")
                    continue
                for h in hosts:
                    got = [{k: v for k, v in r.items() if k != "host"} for r in rows if r.get("host") == h]
                    diff = differences(got, stats[h][name])
                    checked += len(got)
                    if diff:
                        shown = diff[:SHOWN] + ([f"... {len(diff) - SHOWN} more"] if len(diff) > SHOWN else [])
                        problems.append(f"{engine} {name}, host {h}:\n    " + "\n    ".join(shown))
                strays = sorted({str(r.get("host")) for r in rows} - set(hosts))
                if strays:
                    problems.append(f"{engine} {name}: rows of hosts not given: {', '.join(strays)}")
        finally:
            os.chdir(before)
    if problems:
        print(f"check_sql.py: {len(problems)} queries disagree with `ringtrace stats`:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        sys.exit(1)
    per_host = ", ".join(
        f"{h}: " + " ".join(f"{q}={len(stats[h][q])}" for q in QUESTIONS) for h in hosts
    )
    print(f"check_sql.py: {len(found)} queries agree with ringtrace stats on {len(hosts)} hosts "
          f"({checked} rows; {per_host})")


if __name__ == "__main__":
    main()
