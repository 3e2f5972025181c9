//! `ringtrace export --format chrome`: the Chrome trace-event JSON that
//! Perfetto UI and chrome://tracing open, `{"traceEvents": [...],
//! "displayTimeUnit": "ns", "otherData": {...}}`.
//!
//! - `ts` is in µs, an exact decimal keeping the ns as the fraction
//!   (`1234.567`), counted by the file's clock from the earlier of the
//!   first event and the anchor (as `ringtrace dump` counts). For a clock
//!   whose ticks are not time, `ts` is the tick count as whole µs, and
//!   `otherData.timestamps` says so.
//! - `pid` is the writer's; `tid` the thread a tracepoint event carries,
//!   else the pid. `M` events name the process (its comm) and every thread
//!   (`comm-tid`): one track per thread, the CPU in each event's
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
//!   before the first event kept after them.
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
use crate::summary::metadata_decoder;
use crate::text::{clock_words, comm, hex, utc_time, writer_words};
use event::{ChromeEvent, Phase, Scope, Ts};
use ringtrace_ring::file::{Recovery, WriterState};
use ringtrace_ring::Event;
use ringtrace_tracepoint::FieldValue;
use serde_json::{Map, Value};
use spans::Spans;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;

/// Writes `recovery` to `out` as a Chrome trace.
pub(super) fn export(recovery: &Recovery, out: &Path) -> Result<ExportSummary, ExportError> {
    let trace = Trace::build(recovery);
    output::write_file(out, |w| {
        trace.write(w).map_err(|e| ExportError::io(out, &e))
    })?;
    Ok(ExportSummary {
        path: out.to_owned(),
        events: trace.recovered,
        lost: trace.lost,
        // Nothing is left out: raw payloads become `raw` instants.
        warnings: Vec::new(),
    })
}

/// A recovery turned into Chrome events, in time order.
struct Trace {
    pid: u32,
    comm: String,
    events: Vec<ChromeEvent>,
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

impl Trace {
    fn build(r: &Recovery) -> Trace {
        let crate::MetadataDecoder {
            decoder,
            summary: metadata,
        } = metadata_decoder(r);
        let h = &r.header;
        let pid = h.pid;
        let merged = r.merged();
        // A local span's slice begins before its record (written at its
        // end): the base is the earliest of both, so no start is cut to 0.
        let earliest_start = merged
            .iter()
            .filter_map(|e| {
                // A start after its own end is damage, not a time.
                ringtrace_tracepoint::tracing_record::local_span_start(&e.payload)
                    .filter(|&s| s <= e.ts)
            })
            .min();
        let base = merged
            .first()
            .map_or(h.anchor_ticks, |e| e.ts.min(h.anchor_ticks))
            .min(earliest_start.unwrap_or(u64::MAX));
        let is_time = h.clock.ticks_to_ns(0).is_some();
        let ts_of = |ticks: u64| {
            let since = ticks.saturating_sub(base);
            match h.clock.ticks_to_ns(since) {
                Some(ns) if is_time => Ts::Ns(ns),
                _ => Ts::Ticks(since),
            }
        };
        let start = ts_of(base);
        let mut out = Vec::with_capacity(merged.len() + 16);
        let mut lost = 0u64;
        // A CPU whose events were all lost has no event to carry the loss.
        for c in r.cpus.iter().filter(|c| c.events.is_empty()) {
            let count = c.file_stats.overrun.saturating_add(c.file_stats.lost);
            if count > 0 {
                let mut args = lost_args(c.cpu, count);
                args.insert("no_event_recovered".into(), Value::Bool(true));
                out.push(marker("lost", start, pid, args));
                lost += count;
            }
        }
        let mut spans = Spans::default();
        let mut span_args = tracing::SpanArgs::default();
        let mut unmatched = 0u64;
        let mut last = start;
        for e in &merged {
            let ts = ts_of(e.ts);
            last = last.max(ts);
            if e.lost_before > 0 {
                out.push(marker("lost", ts, pid, lost_args(e.cpu, e.lost_before)));
                lost += e.lost_before;
            }
            let d = decoder.decode(&e.payload);
            let placed = match &d {
                Decoded::Tracing(t) => {
                    let start = t.start.map(ts_of);
                    let at = tracing::At {
                        cpu: e.cpu,
                        ts,
                        start,
                    };
                    tracing::place(t, at, &mut spans, &mut span_args, &mut out)
                }
                _ => place(&d, e, ts, pid, &mut spans, &mut out),
            };
            if !placed {
                unmatched += 1;
            }
        }
        let closed = spans.close_all(last, &mut out);
        // Already in time order; a stable sort keeps each instant's order.
        out.sort_by_key(|e| e.ts);

        let mut other = Map::new();
        let mut put = |k: &str, v: Value| {
            other.insert(k.to_owned(), v);
        };
        put("exporter", "ringtrace export --format chrome".into());
        put("source", r.path.display().to_string().into());
        put("writer", writer_words(r).into());
        put("pid", pid.into());
        put("comm", comm(r).into());
        put("clock", clock_words(&h.clock).into());
        put(
            "timestamps",
            if !is_time {
                format!(
                    "raw ticks of clock `{}` since tick {base}, written as µs: they are not time",
                    h.clock.name
                )
            } else if base == h.anchor_ticks {
                "µs since the anchor (when the ring was opened), the ns as the fraction".into()
            } else {
                format!(
                    "µs since the first event, {} ticks before the anchor, the ns as the fraction",
                    h.anchor_ticks - base
                )
            }
            .into(),
        );
        put("ticks_are_time", is_time.into());
        put("base_ticks", base.into());
        put("wall_clock_anchor", utc_time(h.wall_ns).into());
        put("anchor_ticks", h.anchor_ticks.into());
        put(
            "metadata",
            match &metadata {
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
        put("lost_marked", lost.into());
        put("unmatched_span_ends", unmatched.into());
        put("spans_split", spans.split.into());
        put("spans_closed_at_end", closed.into());
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
        Trace {
            pid,
            comm: comm(r).to_owned(),
            events: out,
            other,
            recovered: merged.len() as u64,
            lost,
        }
    }

    /// The `M` events: the process's name, then each thread's.
    fn names(&self) -> Vec<ChromeEvent> {
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
        let tids: BTreeSet<u32> = self.events.iter().map(|e| e.tid).collect();
        std::iter::once(named("process_name", self.pid, self.comm.clone()))
            .chain(
                tids.into_iter()
                    .map(|tid| named("thread_name", tid, format!("{}-{tid}", self.comm))),
            )
            .collect()
    }

    fn write(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(br#"{"displayTimeUnit":"ns","otherData":"#)?;
        serde_json::to_writer(&mut *w, &self.other)?;
        w.write_all(b",\"traceEvents\":[")?;
        let names = self.names();
        for (i, e) in names.iter().chain(&self.events).enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            e.write(self.pid, w)?;
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
