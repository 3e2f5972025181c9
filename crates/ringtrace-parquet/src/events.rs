//! The first walk over the trace, in time order: each event into the
//! events table (but `tracing` span records, which are the spans
//! table's), each loss into the losses table, each preemptirq edge into
//! the sections being paired, and each process's counts for the
//! processes table.

use crate::columns::{saturated, TableWriter};
use crate::error::ParquetError;
use crate::losses::Losses;
use crate::sections::{preemptirq_edge, Sections};
use crate::Origins;
use ringtrace_export::text::hex;
use ringtrace_export::{Decoded, Trace};
use ringtrace_tracepoint::tracing_record::{Level, TracingRecord};
use ringtrace_tracepoint::FieldValue;
use std::collections::HashMap;

/// What the walk counted of one process.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcessCounts {
    /// Its events in the trace (every record, span records included).
    pub events: u64,
    /// Events it lost, as the losses table counts them.
    pub lost: u64,
    /// Its first and last events' times, ns on the timeline.
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

/// What the walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub events: u64,
    pub lost: u64,
    pub counts: Vec<ProcessCounts>,
    pub warnings: Vec<String>,
}

/// The tables the walk writes.
pub(crate) struct Tables<'w> {
    pub events: &'w mut TableWriter,
    pub losses: &'w mut TableWriter,
    pub sections: &'w mut TableWriter,
}

/// Walks `trace` once, writing its events, losses and sections.
pub(crate) fn walk(
    trace: &Trace<'_>,
    origins: &Origins,
    tables: Tables<'_>,
    row_group_rows: usize,
) -> Result<Walked, ParquetError> {
    let wall = trace.wall_clock();
    let clock = trace.clock();
    let ns = |ts: u64| clock.ticks_to_ns(ts).unwrap_or(ts);
    let losses = Losses;
    let mut sections = Sections::new(row_group_rows);
    let mut walked = Walked {
        counts: vec![ProcessCounts::default(); trace.processes().len()],
        ..Walked::default()
    };
    let start = ns(trace.base());
    for (process, counted) in losses.at_start(trace, tables.losses, origins, &wall, start)? {
        walked.counts[process].lost += counted;
    }
    let mut last_ns = start;
    let mut cpu_last_ns: HashMap<(usize, usize), u64> = HashMap::new();
    trace.for_each_event_with_causes(&mut |caused| {
        let (process, e, ts) = (caused.process, caused.event, caused.ts);
        let p = &trace.processes()[process];
        let at = ns(ts);
        last_ns = last_ns.max(at);
        let cpu_last = cpu_last_ns.entry((process, e.cpu)).or_insert(at);
        *cpu_last = (*cpu_last).max(at);
        let counts = &mut walked.counts[process];
        counts.events += 1;
        counts.first_ns.get_or_insert(at);
        counts.last_ns = Some(at);
        if e.lost_before > 0 {
            counts.lost += e.lost_before;
            let lost = (e.lost_before, caused.causes);
            losses.before(tables.losses, origins, &wall, (process, e.cpu), lost, at)?;
        }
        let d = p.decoder().decode(&e.payload);
        if let Decoded::Tracepoint { desc, tid, .. } = &d {
            if let Some(edge) = preemptirq_edge(&desc.name) {
                let who = (process, *tid, e.cpu);
                sections.edge(tables.sections, origins, &wall, who, edge, at)?;
            }
        }
        let Some(event) = Event::of(&d, p.pid(), e.payload.as_slice()) else {
            return Ok(());
        };
        walked.events += 1;
        let mut row = tables.events.row();
        origins.push(&mut row, process);
        row.u64(u64::from(event.tid))
            .i32(i32::try_from(e.cpu).unwrap_or(i32::MAX))
            .u64(at)
            .u64(wall.unix_ns(at))
            .text(event.kind)
            .text(&event.name)
            .str(event.level.map(Into::into))
            .str(event.target.map(Into::into))
            .map(event.fields)
            .i64(Some(saturated(e.lost_before)));
        row.end()
    })?;
    sections.finish(tables.sections, origins, &wall, last_ns)?;
    let last = (start, &cpu_last_ns);
    for (process, counted) in losses.trailing(trace, tables.losses, origins, &wall, last)? {
        walked.counts[process].lost += counted;
    }
    tables.events.flush()?;
    tables.losses.flush()?;
    walked.lost = walked.counts.iter().map(|c| c.lost).sum();
    if sections.unmatched > 0 {
        walked.warnings.push(format!(
            "{} preemptirq section ends had no section of their thread open (begun before the trace, or lost): not in the sections table",
            sections.unmatched
        ));
    }
    if clock.mult.is_none() {
        walked.warnings.push(format!(
            "clock `{}` counts ticks that are not time: the *_ns columns hold ticks, and unix_ns places them one ns a tick after the ring's wall-clock anchor",
            clock.name
        ));
    }
    Ok(walked)
}

/// An event's row, but its time and CPU.
struct Event<'d> {
    tid: u32,
    kind: &'static str,
    name: String,
    level: Option<&'static str>,
    target: Option<&'d str>,
    fields: Vec<(&'d str, String)>,
}

impl<'d> Event<'d> {
    /// The row of `d` (of a process `pid`, its payload `payload`); `None`
    /// for a span record, which is the spans table's.
    fn of(d: &'d Decoded<'d>, pid: u32, payload: &[u8]) -> Option<Event<'d>> {
        let shown = |fields: Vec<(&'d str, &'d FieldValue)>| {
            fields
                .into_iter()
                .map(|(n, v)| (n, v.to_string()))
                .collect()
        };
        Some(match d {
            Decoded::Tracepoint { desc, tid, .. } => Event {
                tid: *tid,
                kind: "tracepoint",
                name: desc.name.clone(),
                level: None,
                target: None,
                fields: shown(d.fields()),
            },
            Decoded::Untagged { layout, .. } => Event {
                tid: pid,
                kind: "untagged",
                name: layout.name.clone(),
                level: None,
                target: None,
                fields: shown(d.fields()),
            },
            Decoded::Tracing(r) if r.kind.is_event() => tracing_event(r),
            Decoded::Tracing(_) => return None,
            Decoded::Raw { why } => Event {
                tid: pid,
                kind: "raw",
                name: "raw".to_owned(),
                level: None,
                target: None,
                fields: vec![("raw", hex(payload)), ("why", why.clone())],
            },
        })
    }
}

/// A `tracing` event's row: named by its message when that is a string
/// (then not among its fields), else by its callsite.
fn tracing_event<'d>(r: &'d TracingRecord<'d>) -> Event<'d> {
    let message = r.fields.iter().find_map(|f| match (&f.value, f.name) {
        (FieldValue::Str(s), "message") => Some(s.clone()),
        _ => None,
    });
    let named = message.is_some();
    Event {
        tid: r.tid,
        kind: "event",
        name: message.unwrap_or_else(|| r.callsite.name.clone()),
        level: level(r.callsite.level.0),
        target: Some(&r.callsite.target),
        fields: r
            .fields
            .iter()
            .filter(|f| !(named && f.name == "message"))
            .map(|f| (f.name, f.value.to_string()))
            .collect(),
    }
}

/// A callsite level's name (`TRACE` to `ERROR`); `None` for none (0) or
/// one `tracing` does not have.
pub(crate) fn level(level: u8) -> Option<&'static str> {
    (1..=5).contains(&level).then(|| Level(level).name())
}
