//! `ringtrace export --format chrome`: the Chrome trace-event JSON that
//! Perfetto UI and chrome://tracing open, `{"traceEvents": [...],
//! "displayTimeUnit": "ns", "otherData": {...}}`.
//!
//! - `ts` is in µs, an exact decimal keeping the ns as the fraction
//!   (`1234.567`), counted by the file's clock from the earlier of the
//!   first event and the anchor (as `ringtrace dump` counts). For a clock
//!   whose ticks are not time, `ts` is the tick count as whole µs, and
//!   `otherData.timestamps` says so.
//! - `pid` is the writing process's (each event's own, in a trace of
//!   several processes); `tid` the thread a tracepoint event carries,
//!   else the pid. `M` events name each process (its comm) and every
//!   thread (`comm-tid`): one track per thread, the CPU in each event's
//!   `args.cpu` (not in a counter's, whose every arg is a series).
//! - Spans ([`span_edge`]) are `B`/`E` pairs that nest on each thread (see
//!   the span module's rule for interleaved pairs); an end with nothing to
//!   close is an instant with `unmatched_end`, counted in
//!   `otherData.unmatched_span_ends`. Counters ([`is_counter`]) are `C`
//!   events. Everything else is an instant on its thread (`ph: "i"`,
//!   `s: "t"`) with its fields in args; an undecodable payload is an
//!   instant `raw` with `raw` (hex) and `why`.
//! - `tracing` records (ringtrace-tracing): span enter/exit and local
//!   spans as `B`/`E` pairs on their thread with the span's fields, level
//!   and target in args; events as instants named by their message (the
//!   tracing module).
//! - Where a CPU's events were overwritten or lost (`Event::lost_before`),
//!   a process-scoped instant `lost` with `{cpu, count}` stands just
//!   before the first event kept after them. Losses no event carries
//!   (`CpuRecovery::unplaced`) are instants `lost` too: a CPU with no
//!   event's at the start (`no_event_recovered: true`); refused writes
//!   (`why: "refused_time_unknown"`, a ring file does not record when)
//!   and losses after a CPU's last event (`why: "after_last_event"`) at
//!   the time of that CPU's last event.
//!
//! docs/export.md has the full mapping.

mod event;
mod rules;
mod spans;
mod tracing;

pub use rules::{is_counter, span_edge, SpanEdge};

use super::{output, ExportError, ExportSummary};
use crate::decode::Decoded;
use crate::dump::field_json;
use crate::text::{clock_words, hex, utc_time, writer_words};
use crate::trace::{Process, Trace};
use event::{ChromeEvent, Phase, Scope, Ts};
use ringtrace_ring::file::WriterState;
use ringtrace_ring::Event;
use ringtrace_tracepoint::FieldValue;
use serde_json::{Map, Value};
use spans::Spans;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;

/// Writes `trace` to `out` as a Chrome trace.
pub(super) fn export(trace: &Trace<'_>, out: &Path) -> Result<ExportSummary, ExportError> {
    let chrome = Chrome::build(trace);
    output::write_file(out, |w| {
        chrome.write(w).map_err(|e| ExportError::io(out, &e))
    })?;
    Ok(ExportSummary {
        path: out.to_owned(),
        events: chrome.recovered,
        lost: chrome.lost,
        // Nothing is left out: raw payloads become `raw` instants.
        warnings: Vec::new(),
    })
}

/// One process's name and threads.
struct Named {
    pid: u32,
    comm: String,
}

/// A trace turned into Chrome events, in time order.
struct Chrome {
    processes: Vec<Named>,
    /// Each event with its process's pid.
    events: Vec<(u32, ChromeEvent)>,
    other: Map<String, Value>,
    recovered: u64,
    lost: u64,
}

/// `cpu`, then the fields under their names (a field named like an arg
/// already there is written as `field:NAME`), each name after `prefix`.
fn args(cpu: usize, fields: &[(&str, &FieldValue)], prefix: &str) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("cpu".into(), Value::from(cpu));
    for (name, v) in fields {
        let key = format!("{prefix}{name}");
        let key = if args.contains_key(&key) {
            format!("field:{key}")
        } else {
            key
        };
        args.insert(key, field_json(v));
    }
    args
}

/// A counter sample's series, or `None` when a value has no JSON number
/// (a NaN or an infinity).
fn series(fields: &[(&str, &FieldValue)]) -> Option<Map<String, Value>> {
    fields
        .iter()
        .map(|(name, v)| {
            let n = match v {
                FieldValue::Unsigned(n) => Value::from(*n),
                FieldValue::Signed(n) => Value::from(*n),
                FieldValue::Float(f) => Value::Number(serde_json::Number::from_f64(*f)?),
                _ => return None,
            };
            Some(((*name).to_owned(), n))
        })
        .collect()
}

/// What the exporter adds, as an instant.
fn marker(name: &str, ts: Ts, tid: u32, args: Map<String, Value>) -> ChromeEvent {
    ChromeEvent {
        name: name.to_owned(),
        cat: "ringtrace",
        ph: Phase::Instant(Scope::Process),
        ts,
        tid,
        args,
    }
}

fn lost_args(cpu: usize, count: u64) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("cpu".into(), Value::from(cpu));
    args.insert("count".into(), Value::from(count));
    args
}

/// What `otherData` says of one process's file.
fn process_info(p: &Process<'_>, other: &mut Map<String, Value>) {
    let r = p.recovery;
    let h = &r.header;
    let mut put = |k: &str, v: Value| {
        other.insert(k.to_owned(), v);
    };
    put("source", r.path.display().to_string().into());
    put("writer", writer_words(r).into());
    put("pid", p.pid().into());
    put("comm", p.comm().into());
    put("clock", clock_words(&h.clock).into());
    put("wall_clock_anchor", utc_time(h.wall_ns).into());
    put("anchor_ticks", h.anchor_ticks.into());
    put(
        "metadata",
        match p.summary() {
            Ok(words) => words.clone(),
            Err(why) => format!("none usable ({why}); events are shown raw"),
        }
        .into(),
    );
    let c = r.totals();
    let s = r.file_stats();
    put("events_recovered", c.recovered.into());
    put("skipped_pending", c.skipped_pending.into());
    put("skipped_unreadable", c.skipped_unreadable.into());
    put("changed_while_read", c.changed_while_read.into());
    put("overrun", s.overrun.into());
    put("lost", s.lost.into());
    put("discarded", s.discarded.into());
    put("refused", s.missed.into());
    let unplaced: u64 = r.cpus.iter().map(|c| c.unplaced().total()).sum();
    put("lost_on_no_event", unplaced.into());
    if r.writer == WriterState::Live {
        put(
            "live",
            "a snapshot of a ring still being written: events on pages that changed while read, and those written since, are missing".into(),
        );
    }
    let problems: Vec<String> = r
        .cpus
        .iter()
        .flat_map(|c| {
            c.problems
                .iter()
                .map(move |p| format!("CPU {}: {p}", c.cpu))
        })
        .collect();
    if !problems.is_empty() {
        put("problems", problems.join("; ").into());
    }
}

/// What one process's events are being placed with.
#[derive(Default)]
struct Placing {
    out: Vec<ChromeEvent>,
    spans: Spans,
    span_args: tracing::SpanArgs,
}

impl Chrome {
    fn build(trace: &Trace<'_>) -> Chrome {
        let processes = trace.processes();
        let clock = trace.clock();
        let merged = trace.events();
        // A local span's slice begins before its record (written at its
        // end): the base is the earliest of both, so no start is cut to 0.
        let earliest_start = merged
            .iter()
            .filter_map(|t| {
                // A start after its own end is damage, not a time.
                ringtrace_tracepoint::tracing_record::local_span_start(&t.event.payload)
                    .filter(|&s| s <= t.event.ts)
                    .map(|s| processes[t.process].timeline(s))
            })
            .min();
        let base = trace.base().min(earliest_start.unwrap_or(u64::MAX));
        let is_time = clock.ticks_to_ns(0).is_some();
        let ts_of = |ticks: u64| {
            let since = ticks.saturating_sub(base);
            match clock.ticks_to_ns(since) {
                Some(ns) if is_time => Ts::Ns(ns),
                _ => Ts::Ticks(since),
            }
        };
        let start = ts_of(base);
        let mut placing: Vec<Placing> = processes.iter().map(|_| Placing::default()).collect();
        let mut lost = 0u64;
        // Losses no event carries: a CPU whose events were all lost, at
        // the start; refused writes and losses after a CPU's last event,
        // at that event's time (the start with no event).
        let mut trailing = Vec::new();
        for (i, (p, at)) in processes.iter().zip(placing.iter_mut()).enumerate() {
            for c in &p.recovery.cpus {
                let u = c.unplaced();
                if u.no_event > 0 {
                    let mut args = lost_args(c.cpu, u.no_event);
                    args.insert("no_event_recovered".into(), Value::Bool(true));
                    at.out.push(marker("lost", start, p.pid(), args));
                }
                let ts = c.events.last().map_or(start, |e| ts_of(p.timeline(e.ts)));
                for (count, why) in [
                    (u.refused, "refused_time_unknown"),
                    (u.after_last, "after_last_event"),
                ] {
                    if count > 0 {
                        let mut args = lost_args(c.cpu, count);
                        args.insert("why".into(), Value::from(why));
                        trailing.push((i, ts, args));
                    }
                }
                lost += u.total();
            }
        }
        let mut unmatched = 0u64;
        let mut last = start;
        for t in &merged {
            let (e, p) = (t.event, &processes[t.process]);
            let at = &mut placing[t.process];
            let pid = p.pid();
            let ts = ts_of(t.ts);
            last = last.max(ts);
            if e.lost_before > 0 {
                at.out
                    .push(marker("lost", ts, pid, lost_args(e.cpu, e.lost_before)));
                lost += e.lost_before;
            }
            let d = p.decoder().decode(&e.payload);
            let placed = match &d {
                Decoded::Tracing(tr) => {
                    let start = tr.start.map(|s| ts_of(p.timeline(s)));
                    let here = tracing::At {
                        cpu: e.cpu,
                        ts,
                        start,
                    };
                    tracing::place(tr, here, &mut at.spans, &mut at.span_args, &mut at.out)
                }
                _ => place(&d, e, ts, pid, &mut at.spans, &mut at.out),
            };
            if !placed {
                unmatched += 1;
            }
        }
        // After the events, so that each stands after its CPU's last one.
        for (i, ts, args) in trailing {
            placing[i]
                .out
                .push(marker("lost", ts, processes[i].pid(), args));
        }
        let (mut closed, mut split) = (0u64, 0u64);
        let mut out = Vec::with_capacity(merged.len() + 16);
        for (p, mut at) in processes.iter().zip(placing) {
            closed += at.spans.close_all(last, &mut at.out);
            split += at.spans.split;
            out.extend(at.out.into_iter().map(|e| (p.pid(), e)));
        }
        // Each process's already in time order; a stable sort keeps each
        // instant's order, and puts a smaller pid first at one time.
        out.sort_by_key(|(pid, e)| (e.ts, *pid));

        let mut other = Map::new();
        if let [p] = processes {
            process_info(p, &mut other);
        } else {
            let each: Vec<Value> = processes
                .iter()
                .map(|p| {
                    let mut info = Map::new();
                    process_info(p, &mut info);
                    Value::Object(info)
                })
                .collect();
            other.insert("processes".into(), Value::Array(each));
            other.insert("clock".into(), clock_words(clock).into());
            other.insert("events_recovered".into(), merged.len().into());
            let notes = trace.alignment_notes();
            let alignment = if notes.is_empty() {
                "one clock shared by every process: their times compare as they are".to_owned()
            } else {
                notes.join("; ")
            };
            other.insert("alignment".into(), alignment.into());
        }
        let anchor = processes
            .iter()
            .map(|p| p.timeline(p.recovery.header.anchor_ticks))
            .min()
            .unwrap_or(base);
        let mut put = |k: &str, v: Value| {
            other.insert(k.to_owned(), v);
        };
        put("exporter", "ringtrace export --format chrome".into());
        put(
            "timestamps",
            if !is_time {
                format!(
                    "raw ticks of clock `{}` since tick {base}, written as µs: they are not time",
                    clock.name
                )
            } else if base == anchor && trace.is_single() {
                "µs since the anchor (when the ring was opened), the ns as the fraction".into()
            } else if base == anchor {
                "µs since the earliest anchor (when the first of the rings was opened), the ns as the fraction".into()
            } else {
                format!(
                    "µs since the first event, {} ticks before the anchor, the ns as the fraction",
                    anchor - base
                )
            }
            .into(),
        );
        put("ticks_are_time", is_time.into());
        put("base_ticks", base.into());
        put("lost_marked", lost.into());
        put("unmatched_span_ends", unmatched.into());
        put("spans_split", split.into());
        put("spans_closed_at_end", closed.into());
        Chrome {
            processes: processes
                .iter()
                .map(|p| Named {
                    pid: p.pid(),
                    comm: p.comm().to_owned(),
                })
                .collect(),
            events: out,
            other,
            recovered: merged.len() as u64,
            lost,
        }
    }

    /// The `M` events: each process's name, then each of its threads'.
    fn names(&self) -> Vec<(u32, ChromeEvent)> {
        let named = |name: &str, tid: u32, value: String| {
            let mut args = Map::new();
            args.insert("name".into(), Value::from(value));
            ChromeEvent {
                name: name.to_owned(),
                cat: "ringtrace",
                ph: Phase::Metadata,
                ts: Ts::Ns(0),
                tid,
                args,
            }
        };
        let mut out = Vec::new();
        for p in &self.processes {
            let tids: BTreeSet<u32> = self
                .events
                .iter()
                .filter(|(pid, _)| *pid == p.pid)
                .map(|(_, e)| e.tid)
                .collect();
            out.push((p.pid, named("process_name", p.pid, p.comm.clone())));
            out.extend(tids.into_iter().map(|tid| {
                (
                    p.pid,
                    named("thread_name", tid, format!("{}-{tid}", p.comm)),
                )
            }));
        }
        out
    }

    fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(br#"{"displayTimeUnit":"ns","otherData":"#)?;
        serde_json::to_writer(&mut *w, &self.other)?;
        w.write_all(b",\"traceEvents\":[")?;
        let names = self.names();
        for (i, (pid, e)) in names.iter().chain(&self.events).enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            e.write(*pid, w)?;
        }
        w.write_all(b"\n]}\n")
    }
}

/// Adds `d`'s events to `out`: a span's edge, a counter sample or an
/// instant. Returns `false` for a span's end with no span to close (shown
/// as an instant).
fn place(
    d: &Decoded<'_>,
    e: &Event,
    ts: Ts,
    pid: u32,
    spans: &mut Spans,
    out: &mut Vec<ChromeEvent>,
) -> bool {
    let fields = d.fields();
    let instant = |name: &str, cat: &'static str, tid: u32, args: Map<String, Value>| ChromeEvent {
        name: name.to_owned(),
        cat,
        ph: Phase::Instant(Scope::Thread),
        ts,
        tid,
        args,
    };
    match d {
        Decoded::Tracepoint { desc, tid, .. } => {
            let tid = *tid;
            if let Some(edge) = span_edge(&desc.name) {
                if edge.begins {
                    spans.begin(&edge, tid, ts, args(e.cpu, &fields, ""), out);
                    return true;
                }
                if spans.end(&edge, tid, ts, e.cpu, args(e.cpu, &fields, "end_"), out) {
                    return true;
                }
                let mut a = args(e.cpu, &fields, "");
                a.insert("unmatched_end".into(), Value::from(edge.span.as_str()));
                out.push(instant(&desc.name, "tracepoint", tid, a));
                return false;
            }
            let sample = is_counter(&desc.name, &desc.fields)
                .then(|| series(&fields))
                .flatten();
            out.push(match sample {
                Some(series) => ChromeEvent {
                    name: desc.name.clone(),
                    cat: "tracepoint",
                    ph: Phase::Counter,
                    ts,
                    tid,
                    args: series,
                },
                None => instant(&desc.name, "tracepoint", tid, args(e.cpu, &fields, "")),
            });
        }
        Decoded::Untagged { layout, .. } => {
            out.push(instant(
                &layout.name,
                "untagged",
                pid,
                args(e.cpu, &fields, ""),
            ));
        }
        // Placed by the tracing module.
        Decoded::Tracing(_) => {}
        Decoded::Raw { why } => {
            let mut a = args(e.cpu, &[], "");
            a.insert("raw".into(), Value::from(hex(&e.payload)));
            a.insert("why".into(), Value::from(why.as_str()));
            out.push(instant("raw", "raw", pid, a));
        }
    }
    true
}
