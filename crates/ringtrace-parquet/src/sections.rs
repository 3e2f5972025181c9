//! The sections table: preemptirq sections (irqs, preemption or softirqs
//! off), paired as the Perfetto and Chrome exports pair them. A
//! tracepoint whose [`span_edge`] is of the `disable/enable` pair begins
//! or ends a section of its thread, by the section's name; an end closes
//! the thread's innermost open section of that name (an end with none
//! open is counted, not written). A section still open when the trace
//! ends is ended at the trace's last time, `closed` false.
//!
//! Rows are handed over when a section ends, so a row group's rows are
//! sorted by their start before they are written.

use crate::columns::TableWriter;
use crate::error::ParquetError;
use crate::Origins;
use ringtrace_export::export::chrome::{span_edge, SpanEdge};
use ringtrace_export::WallClock;
use std::collections::HashMap;

/// The section an edge belongs to, if it is a preemptirq one.
pub(crate) fn preemptirq_edge(tracepoint: &str) -> Option<SpanEdge> {
    span_edge(tracepoint).filter(|e| e.pair == "disable/enable")
}

/// A section begun and not yet ended.
#[derive(Debug, Clone, Copy)]
struct Open {
    cpu: usize,
    start_ns: u64,
}

/// A section's row.
#[derive(Debug, Clone)]
struct Section {
    process: usize,
    tid: u32,
    cpu: usize,
    name: String,
    start_ns: u64,
    end_ns: u64,
    closed: bool,
}

/// The sections of a walk: those open, and the ended ones not yet
/// written.
pub(crate) struct Sections {
    /// By (process, tid, section): the open ones, innermost last.
    open: HashMap<(usize, u32, String), Vec<Open>>,
    done: Vec<Section>,
    /// Ends with no section open.
    pub unmatched: u64,
    row_group_rows: usize,
}

impl Sections {
    pub fn new(row_group_rows: usize) -> Sections {
        Sections {
            open: HashMap::new(),
            done: Vec::new(),
            unmatched: 0,
            row_group_rows,
        }
    }

    /// An edge of thread `tid` of `process`, recorded on `cpu` at `ns`.
    pub fn edge(
        &mut self,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
        (process, tid, cpu): (usize, u32, usize),
        edge: SpanEdge,
        ns: u64,
    ) -> Result<(), ParquetError> {
        let key = (process, tid, edge.span);
        if edge.begins {
            self.open
                .entry(key)
                .or_default()
                .push(Open { cpu, start_ns: ns });
            return Ok(());
        }
        let Some(open) = self.open.get_mut(&key).and_then(Vec::pop) else {
            self.unmatched += 1;
            return Ok(());
        };
        if self.open.get(&key).is_some_and(Vec::is_empty) {
            self.open.remove(&key);
        }
        self.done.push(Section {
            process,
            tid,
            cpu: open.cpu,
            name: key.2,
            start_ns: open.start_ns,
            end_ns: ns.max(open.start_ns),
            closed: true,
        });
        if self.done.len() >= self.row_group_rows {
            self.write(out, origins, wall)?;
        }
        Ok(())
    }

    /// Ends every open section at `last_ns` and writes every row left.
    pub fn finish(
        &mut self,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
        last_ns: u64,
    ) -> Result<(), ParquetError> {
        let mut open: Vec<_> = self.open.drain().collect();
        open.sort_by(|a, b| a.0.cmp(&b.0));
        for ((process, tid, name), stack) in open {
            for o in stack {
                self.done.push(Section {
                    process,
                    tid,
                    cpu: o.cpu,
                    name: name.clone(),
                    start_ns: o.start_ns,
                    end_ns: last_ns.max(o.start_ns),
                    closed: false,
                });
                if self.done.len() >= self.row_group_rows {
                    self.write(out, origins, wall)?;
                }
            }
        }
        self.write(out, origins, wall)?;
        out.flush()
    }

    /// Writes the ended sections held, by their start.
    fn write(
        &mut self,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
    ) -> Result<(), ParquetError> {
        self.done
            .sort_by_key(|s| (s.start_ns, s.process, s.tid, s.end_ns));
        for s in self.done.drain(..) {
            let mut row = out.row();
            origins.push(&mut row, s.process);
            row.u64(u64::from(s.tid))
                .i32(i32::try_from(s.cpu).unwrap_or(i32::MAX))
                .text(&s.name)
                .u64(s.start_ns)
                .u64(s.end_ns)
                .u64(s.end_ns - s.start_ns)
                .u64(wall.unix_ns(s.start_ns))
                .bool(s.closed);
            row.end()?;
        }
        Ok(())
    }
}
