//! `tracing` records in the Chrome trace: a thread's span enter/exit as a
//! `B`/`E` pair on its thread, and a local span as one `X` slice (it is
//! written once, at its end, with its start), named by the span,
//! with the span's fields (from its creation and later records), level,
//! target and id in the begin's args; an event as an instant on its
//! thread named by its message (or its callsite), with its level, target
//! and fields in args. Creation, records and close draw nothing.

use super::event::{ChromeEvent, Phase, Scope, Ts};
use super::rules::{SpanEdge, SPAN_PAIR};
use super::spans::Spans;
use crate::dump::field_json;
use ringtrace_tracepoint::tracing_record::{CallsiteKind, RecordKind, TracingRecord};
use ringtrace_tracepoint::FieldValue;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The args of every span alive in the trace, by span id.
#[derive(Debug, Default)]
pub(super) struct SpanArgs(HashMap<u64, Map<String, Value>>);

fn put_fields(args: &mut Map<String, Value>, r: &TracingRecord<'_>) {
    for f in &r.fields {
        let key = match f.name {
            "cpu" | "level" | "target" | "span" => format!("field:{}", f.name),
            name => name.to_owned(),
        };
        args.insert(key, field_json(&f.value));
    }
}

fn base_args(cpu: usize, r: &TracingRecord<'_>) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("cpu".into(), Value::from(cpu));
    if r.callsite.kind != CallsiteKind::LocalSpan {
        args.insert("level".into(), Value::from(r.callsite.level.name()));
        args.insert("target".into(), Value::from(r.callsite.target.as_str()));
    }
    args
}

/// Where and when a record was written.
pub(super) struct At {
    /// The CPU buffer it was read from.
    pub cpu: usize,
    /// Its time.
    pub ts: Ts,
    /// A local span's start.
    pub start: Option<Ts>,
}

/// Adds `r`'s events to `out`. Returns `false` for an exit with no span
/// to close (shown as an instant).
pub(super) fn place(
    r: &TracingRecord<'_>,
    at: At,
    spans: &mut Spans,
    span_args: &mut SpanArgs,
    out: &mut Vec<ChromeEvent>,
) -> bool {
    let At { cpu, ts, start } = at;
    let name = r.callsite.name.as_str();
    let edge = |begins| SpanEdge {
        span: name.to_owned(),
        pair: SPAN_PAIR,
        begins,
    };
    match (r.kind, r.span) {
        (RecordKind::Event | RecordKind::EventIn, _) => {
            let mut args = base_args(cpu, r);
            put_fields(&mut args, r);
            let title = r
                .fields
                .iter()
                .find(|f| f.name == "message")
                .and_then(|f| match &f.value {
                    FieldValue::Str(s) => Some(s.clone()),
                    FieldValue::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    _ => None,
                })
                .unwrap_or_else(|| name.to_owned());
            out.push(ChromeEvent {
                name: title,
                cat: "tracing",
                ph: Phase::Instant(Scope::Thread),
                ts,
                tid: r.tid,
                args,
            });
        }
        (RecordKind::SpanNew, Some(span)) => {
            let mut args = base_args(cpu, r);
            args.insert("span".into(), Value::from(span));
            if let Some(parent) = r.parent {
                args.insert("parent".into(), Value::from(parent));
            }
            put_fields(&mut args, r);
            args.remove("cpu");
            span_args.0.insert(span, args);
        }
        (RecordKind::SpanRecord, Some(span)) => {
            put_fields(span_args.0.entry(span).or_default(), r);
        }
        (RecordKind::SpanFollows, Some(span)) => {
            // Shown with the span's slices, as its `follows_from` ids.
            if let Some(from) = r.follows {
                let links = span_args
                    .0
                    .entry(span)
                    .or_default()
                    .entry("follows_from")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(ids) = links {
                    ids.push(Value::from(from));
                }
            }
        }
        (RecordKind::SpanClose, Some(span)) => {
            // A slice of it still open (its exit on another thread was
            // lost): ended at the close.
            let mut args = base_args(cpu, r);
            args.insert("ended_by_close".into(), Value::Bool(true));
            spans.end_span(span, ts, cpu, args, out);
            span_args.0.remove(&span);
        }
        (RecordKind::LocalSpan, _) => {
            let start = start.unwrap_or(ts).min(ts);
            out.push(ChromeEvent {
                name: name.to_owned(),
                cat: "tracing",
                ph: Phase::Complete(ts.since(start)),
                ts: start,
                tid: r.tid,
                args: base_args(cpu, r),
            });
        }
        (RecordKind::SpanEnter, span) => {
            let mut args = base_args(cpu, r);
            if let Some(known) = span.and_then(|s| span_args.0.get(&s)) {
                args.extend(known.clone());
            } else if let Some(span) = span {
                args.insert("span".into(), Value::from(span));
            }
            spans.begin(&edge(true), r.tid, ts, args, out);
        }
        (RecordKind::SpanExit, span) => {
            let args = base_args(cpu, r);
            if spans.end(&edge(false), r.tid, ts, cpu, args.clone(), out) {
                return true;
            }
            // Exited on another thread than the one that entered it: its
            // slice ends there, on the entering thread.
            let mut elsewhere = args.clone();
            elsewhere.insert("exited_on_tid".into(), Value::from(r.tid));
            if !span.is_some_and(|id| spans.end_span(id, ts, cpu, elsewhere, out)) {
                let mut args = args;
                args.insert("unmatched_end".into(), Value::from(name));
                out.push(ChromeEvent {
                    name: r.kind.name().to_owned(),
                    cat: "tracing",
                    ph: Phase::Instant(Scope::Thread),
                    ts,
                    tid: r.tid,
                    args,
                });
                return false;
            }
        }
        // A span kind always carries its span id (the decoder reads it).
        (_, None) => {}
    }
    true
}
