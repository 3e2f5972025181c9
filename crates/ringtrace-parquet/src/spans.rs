//! The second walk: the trace's `tracing` spans put back together
//! ([`assemble`]) into the spans table, one row a span.
//!
//! A tree is handed over when its last span closes, so trees come out of
//! start order: each row group's spans are sorted by their start before
//! they are written. Memory holds the trees still open (the assembler's)
//! and one row group of spans.

use crate::columns::TableWriter;
use crate::error::ParquetError;
use crate::events::level;
use crate::Origins;
use ringtrace_export::spans::{assemble, AssembleSummary, Assembled, SpanData};
use ringtrace_export::{Trace, WallClock};

/// A span and what its tree says of it.
struct Row {
    span: SpanData,
    trace_id: String,
    /// The remote parent of a root that joins a distributed trace.
    remote_parent: Option<String>,
}

/// What the walk found.
pub(crate) struct Walked {
    pub spans: u64,
    pub warnings: Vec<String>,
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex_id(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Walks `trace`'s spans into `out`.
pub(crate) fn walk(
    trace: &Trace<'_>,
    origins: &Origins,
    out: &mut TableWriter,
    row_group_rows: usize,
) -> Result<Walked, ParquetError> {
    let wall = trace.wall_clock();
    let mut held: Vec<Row> = Vec::new();
    let mut spans = 0u64;
    let summary = assemble::<ParquetError>(trace, &mut |a| {
        let Assembled::Tree(tree) = a else {
            // Events outside any span are the events table's.
            return Ok(());
        };
        let trace_id = hex_id(&tree.trace_id());
        let remote = tree.trace_context().map(|c| hex_id(&c.parent_span_id));
        for span in tree.spans {
            let remote_parent = if span.parent.is_none() {
                remote.clone()
            } else {
                None
            };
            held.push(Row {
                span,
                trace_id: trace_id.clone(),
                remote_parent,
            });
            spans += 1;
            if held.len() >= row_group_rows {
                write(&mut held, out, origins, &wall)?;
            }
        }
        Ok(())
    })?;
    write(&mut held, out, origins, &wall)?;
    out.flush()?;
    Ok(Walked {
        spans,
        warnings: warnings(&summary),
    })
}

/// What the assembler left out, in words.
fn warnings(s: &AssembleSummary) -> Vec<String> {
    let mut out = Vec::new();
    if s.orphan_records > 0 {
        out.push(format!(
            "{} span records (enter, exit, close, record, link) of spans whose creation is not in the trace were left out of the spans table",
            s.orphan_records
        ));
    }
    if s.orphan_spans > 0 {
        out.push(format!(
            "{} spans whose parent's creation is not in the trace are roots in the spans table (parent_span_id NULL)",
            s.orphan_spans
        ));
    }
    out
}

/// Writes the held spans, by their start.
fn write(
    held: &mut Vec<Row>,
    out: &mut TableWriter,
    origins: &Origins,
    wall: &WallClock,
) -> Result<(), ParquetError> {
    held.sort_by_key(|r| (r.span.start_ns, r.span.process, r.span.uid));
    for r in held.drain(..) {
        let s = &r.span;
        let parent = s
            .parent
            .map(|p| hex_id(&p.to_be_bytes()))
            .or(r.remote_parent);
        let mut row = out.row();
        origins.push(&mut row, s.process);
        row.text(&r.trace_id)
            .text(&hex_id(&s.uid.to_be_bytes()))
            .str(parent.map(|p| p.into_bytes().into()))
            .text(&s.name)
            .text(&s.target)
            .str(level(s.level).map(Into::into))
            .u64(u64::from(s.tid))
            .i32(i32::try_from(s.threads.len()).unwrap_or(i32::MAX))
            .bool(s.threads.len() > 1)
            .u64(s.start_ns)
            .u64(s.end_ns)
            .u64(s.duration_ns())
            .u64(s.busy_ns)
            .u64(wall.unix_ns(s.start_ns))
            .u64(wall.unix_ns(s.end_ns))
            .bool(s.closed)
            .bool(s.is_error())
            .bool(s.local)
            .u64(s.events.len() as u64)
            .map(s.fields.iter().map(|(k, v)| (k.as_str(), v.to_string())));
        row.end()?;
    }
    Ok(())
}
