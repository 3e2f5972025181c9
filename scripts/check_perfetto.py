#!/usr/bin/env python3
"""Checks a Perfetto trace written by `ringtrace export --format perfetto`
with Perfetto's own message definitions (the `perfetto` package's
generated perfetto_trace_pb2), against `ringtrace dump --json` of the same
input.

    check_perfetto.py TRACE.pftrace DUMP.jsonl [--min-tasks N] [--min-links N] [--wall-clock]

The trace must be valid as Perfetto reads it:
- every packet is on a sequence; a sequence's first packet says so and
  clears the incremental state; every packet that reads that state
  (interned ids, defaults, the delta clock) says it needs it;
- every interned id is defined on its sequence before or where it is used,
  and never redefined to another string;
- every track is described once, its parent before it, and before any
  event uses it; each track's slices nest (an end never ends a slice that
  is not open) once sorted by time, as the trace processor sorts them;
- timestamps resolve through the sequence's clock snapshot and defaults;
- every flow joins at least two events, and a flow that ends began before.

And it must say what the source says: every event that the dump shows as
an instant (a tracepoint event, a `tracing` event) is an instant on its
thread's track with the same time (ns of the trace's clock, whose ticks
are ns: `mono`, `boot`...; with --wall-clock, for a trace exported with
--align-wall-clock, the dump's `wall_ns`), thread, name and fields; every span enter is
a slice on its thread, and every local span a slice from its start; every loss appears with its count; at least
--min-tasks task tracks and --min-links follows_from flows are there.
Exits 1 with every problem listed (the first 20) when any check fails.
"""

import argparse
import collections
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

STATE_CLEARED = 1
NEEDS_STATE = 2
TRACE_CLOCK = 64
DELTA_CLOCK = 65
PREEMPTIRQ = {
    "preemptirq:irq_disable", "preemptirq:irq_enable",
    "preemptirq:preempt_disable", "preemptirq:preempt_enable",
    "preemptirq:softirqs_disable", "preemptirq:softirqs_enable",
}
SPAN_SUFFIXES = ("_enter", "_exit", "_start", "_stop")


class Problems:
    def __init__(self):
        self.all = []

    def add(self, what):
        self.all.append(what)

    def check(self, ok, what):
        if not ok:
            self.add(what)
        return ok


class Sequence:
    def __init__(self):
        self.names = {}
        self.categories = {}
        self.annotation_names = {}
        self.strings = {}
        self.clock_id = None
        self.default_track = None
        self.delta = None
        self.snapshot = {}


def annotation_value(a, seq, problems, where):
    if a.HasField("string_value_iid"):
        value = seq.strings.get(a.string_value_iid)
        problems.check(value is not None, f"{where}: string value iid {a.string_value_iid} undefined")
        return value
    for kind in ("uint_value", "int_value", "double_value", "bool_value", "string_value"):
        if a.HasField(kind):
            return getattr(a, kind)
    if a.dict_entries:
        return {seq.annotation_names.get(e.name_iid, e.name): annotation_value(e, seq, problems, where)
                for e in a.dict_entries}
    return None


def decode(path, problems):
    """The trace's events, resolved: a list of dicts in file order, and the
    tracks by uuid."""
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    sequences = {}
    tracks = {}
    events = []
    for index, p in enumerate(trace.packet):
        where = f"packet {index}"
        if not problems.check(p.HasField("trusted_packet_sequence_id"), f"{where}: no sequence id"):
            continue
        sid = p.trusted_packet_sequence_id
        flags = p.sequence_flags
        if sid not in sequences:
            problems.check(p.first_packet_on_sequence, f"{where}: first packet of sequence {sid} does not say so")
            problems.check(flags & STATE_CLEARED, f"{where}: first packet of sequence {sid} does not clear its state")
            sequences[sid] = Sequence()
        elif p.first_packet_on_sequence:
            problems.add(f"{where}: sequence {sid} has a second first packet")
        seq = sequences[sid]
        if flags & STATE_CLEARED:
            sequences[sid] = seq = Sequence()
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                seq.snapshot[c.clock_id] = c.timestamp
                if c.is_incremental:
                    seq.delta = c.timestamp
        if p.HasField("trace_packet_defaults"):
            problems.check(flags & STATE_CLEARED, f"{where}: defaults outside a packet that clears the state")
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.clock_id = d.timestamp_clock_id
            if d.HasField("track_event_defaults"):
                seq.default_track = d.track_event_defaults.track_uuid
        i = p.interned_data
        for table, entries in ((seq.names, i.event_names), (seq.categories, i.event_categories),
                               (seq.annotation_names, i.debug_annotation_names)):
            for e in entries:
                old = table.get(e.iid)
                problems.check(old in (None, e.name), f"{where}: iid {e.iid} redefined from {old!r} to {e.name!r}")
                table[e.iid] = e.name
        for e in i.debug_annotation_string_values:
            value = e.str.decode("utf-8")
            old = seq.strings.get(e.iid)
            problems.check(old in (None, value), f"{where}: string iid {e.iid} redefined from {old!r} to {value!r}")
            seq.strings[e.iid] = value
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            problems.check(d.uuid not in tracks, f"{where}: track {d.uuid} described twice")
            if d.HasField("parent_uuid"):
                problems.check(d.parent_uuid in tracks, f"{where}: track {d.uuid}'s parent {d.parent_uuid} not described before")
            tracks[d.uuid] = d
        if not p.HasField("track_event"):
            continue
        problems.check(flags & NEEDS_STATE, f"{where}: a track event without SEQ_NEEDS_INCREMENTAL_STATE")
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else seq.clock_id
        if clock == DELTA_CLOCK:
            if not problems.check(seq.delta is not None, f"{where}: delta clock with no snapshot"):
                continue
            seq.delta += p.timestamp
            ts = seq.delta
        elif clock in (TRACE_CLOCK, None):
            problems.check(clock is None or TRACE_CLOCK in seq.snapshot, f"{where}: trace clock with no snapshot")
            ts = p.timestamp
        else:
            problems.add(f"{where}: unexpected clock {clock}")
            continue
        te = p.track_event
        track = te.track_uuid if te.HasField("track_uuid") else seq.default_track
        if not problems.check(track in tracks, f"{where}: track {track} used before it is described"):
            continue
        name = None
        if te.HasField("name_iid"):
            name = seq.names.get(te.name_iid)
            problems.check(name is not None, f"{where}: event name iid {te.name_iid} undefined")
        cats = []
        for c in te.category_iids:
            cats.append(seq.categories.get(c))
            problems.check(cats[-1] is not None, f"{where}: category iid {c} undefined")
        args = {}
        for a in te.debug_annotations:
            key = seq.annotation_names.get(a.name_iid)
            problems.check(key is not None, f"{where}: annotation name iid {a.name_iid} undefined")
            for e in a.dict_entries:
                problems.check(e.name_iid in seq.annotation_names, f"{where}: annotation name iid {e.name_iid} undefined")
            args[key] = annotation_value(a, seq, problems, where)
        counter = None
        if te.HasField("counter_value"):
            counter = te.counter_value
        elif te.HasField("double_counter_value"):
            counter = te.double_counter_value
        events.append({
            "index": index, "seq": sid, "ts": ts, "track": track,
            "type": pb.TrackEvent.Type.Name(te.type), "name": name, "category": cats[0] if cats else None,
            "args": args, "flows": list(te.flow_ids), "ends": list(te.terminating_flow_ids),
            "counter": counter,
        })
    return events, tracks


def check_nesting(events, tracks, problems):
    """Each track's slices nest once sorted by time (file order at one
    time, as the trace processor keeps it)."""
    depth = collections.Counter()
    opened = {}
    for e in sorted(events, key=lambda e: (e["ts"], e["index"])):
        if e["type"] == "TYPE_SLICE_BEGIN":
            depth[e["track"]] += 1
            opened[e["index"]] = e
        elif e["type"] == "TYPE_SLICE_END":
            problems.check(depth[e["track"]] > 0, f"packet {e['index']}: an end on track {e['track']} with no open slice")
            depth[e["track"]] = max(0, depth[e["track"]] - 1)
    for track, d in depth.items():
        problems.check(d == 0, f"track {track}: {d} slices never ended")


def check_flows(events, problems):
    seen = collections.Counter()
    for e in sorted(events, key=lambda e: (e["ts"], e["index"])):
        for f in e["flows"]:
            seen[f] += 1
        for f in e["ends"]:
            problems.check(seen[f] > 0, f"packet {e['index']}: flow {f} ends before it begins")
            seen[f] += 1
    for f, n in seen.items():
        problems.check(n >= 2, f"flow {f} joins {n} event")
    return seen


def thread_of(tracks, uuid):
    d = tracks.get(uuid)
    if d is not None and d.HasField("thread"):
        return d.thread.tid
    return None


def fields_match(fields, args, problems, where):
    for k, v in fields.items():
        got = args.get(k, args.get(f"field:{k}"))
        if isinstance(v, float) and isinstance(got, float):
            ok = v == got or (v != v and got != got)
        else:
            ok = got == v
        problems.check(ok, f"{where}: field {k} is {got!r} in the trace, {v!r} in the dump")


def check_against_dump(events, tracks, dump_path, problems, time_key="ts"):
    dump = [json.loads(line) for line in open(dump_path) if line.strip()]
    instants = collections.defaultdict(list)
    begins = collections.defaultdict(list)
    lost_marked = 0
    for e in events:
        if e["type"] == "TYPE_INSTANT" and e["name"] == "lost" and e["category"] == "ringtrace":
            lost_marked += e["args"].get("count", 0)
            continue
        tid = thread_of(tracks, e["track"])
        if e["type"] == "TYPE_INSTANT":
            instants[(e["ts"], tid)].append(e)
        elif e["type"] == "TYPE_SLICE_BEGIN":
            begins[(e["ts"], tid)].append(e)
    lost = 0
    checked = collections.Counter()
    for line, d in enumerate(dump, 1):
        where = f"dump line {line} ({d['event']} at {d['ts']})"
        lost += d.get("lost_before", 0)
        kind = d.get("kind")
        name = d["event"]
        key = (d[time_key], d.get("tid"))
        if kind == "tracing" and name == "tracing:event":
            fields = dict(d.get("fields", {}))
            title = fields.pop("message", None)
            if not isinstance(title, str):
                title = d["callsite"]
                if "message" in d.get("fields", {}):
                    fields["message"] = d["fields"]["message"]
            match = [e for e in instants[key] if e["name"] == title and e["category"] == d["target"]]
            if problems.check(match, f"{where}: no instant {title!r} on thread {d.get('tid')}"):
                fields_match(fields, match[0]["args"], problems, where)
                problems.check(match[0]["args"].get("level") == d["level"], f"{where}: level differs")
                problems.check(match[0]["args"].get("cpu") == d["cpu"], f"{where}: cpu differs")
                instants[key].remove(match[0])
                checked["tracing events"] += 1
        elif kind == "tracing" and name == "tracing:local_span":
            start = min(d.get("start", d["ts"]), d["ts"]) - d["ts"] + d[time_key]
            match = [e for e in begins[(start, d.get("tid"))] if e["name"] == d["callsite"]]
            if problems.check(match, f"{where}: no slice {d['callsite']!r} from {start} on thread {d.get('tid')}"):
                begins[(start, d.get("tid"))].remove(match[0])
                checked["local spans"] += 1
        elif kind == "tracing" and name == "tracing:span_enter":
            match = [e for e in begins[key] if e["name"] == d["callsite"] and e["args"].get("span") == d.get("span")]
            if problems.check(match, f"{where}: no slice {d['callsite']!r} of span {d.get('span')} on thread {d.get('tid')}"):
                begins[key].remove(match[0])
                checked["span enters"] += 1
        elif kind == "tracepoint" and name not in PREEMPTIRQ and not name.endswith(SPAN_SUFFIXES) \
                and not name.endswith("_counter"):
            match = [e for e in instants[key] if e["name"] == name]
            if problems.check(match, f"{where}: no instant {name!r} on thread {d.get('tid')}"):
                fields_match(d.get("fields", {}), match[0]["args"], problems, where)
                problems.check(match[0]["args"].get("cpu") == d["cpu"], f"{where}: cpu differs")
                instants[key].remove(match[0])
                checked["tracepoint events"] += 1
    problems.check(lost_marked >= lost, f"{lost} events lost before dumped events, {lost_marked} marked lost")
    return checked, lost_marked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("dump")
    ap.add_argument("--min-tasks", type=int, default=0)
    ap.add_argument("--min-links", type=int, default=0)
    ap.add_argument("--wall-clock", action="store_true",
                    help="the trace was exported with --align-wall-clock: compare with the dump's wall_ns")
    args = ap.parse_args()
    problems = Problems()
    events, tracks = decode(args.trace, problems)
    check_nesting(events, tracks, problems)
    flows = check_flows(events, problems)
    checked, lost = check_against_dump(events, tracks, args.dump, problems,
                                       "wall_ns" if args.wall_clock else "ts")
    tasks = [t for t in tracks.values() if t.HasField("name") and " #" in t.name and not t.HasField("counter")]
    problems.check(len(tasks) >= args.min_tasks, f"{len(tasks)} task tracks, fewer than {args.min_tasks}")
    # A follows_from link is a flow that ends somewhere.
    links = len({f for e in events for f in e["ends"]})
    problems.check(links >= args.min_links, f"{links} follows_from flows, fewer than {args.min_links}")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(checked.items()))
    print(f"check_perfetto: {args.trace}: {len(events)} track events on {len(tracks)} tracks, "
          f"{len(tasks)} task tracks, {len(flows)} flows ({links} follows_from), {lost} events marked lost; "
          f"matched the dump: {summary or 'nothing'}")
    if problems.all:
        for p in problems.all[:20]:
            print(f"  {p}", file=sys.stderr)
        print(f"check_perfetto: {len(problems.all)} problems", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
