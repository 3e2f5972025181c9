//! The losses table, counted as the Perfetto and Chrome exports count
//! losses: each event's `lost_before` (events of its CPU buffer lost just
//! before it), and the losses no event carries
//! (`CpuRecovery::unplaced`): at the trace's start, each CPU buffer with
//! no event left to carry its losses (`overrun + lost` of its accounting
//! words); at the time of a CPU buffer's last event, the writes a ring
//! file's buffer refused (`missed`, whose times the file does not record:
//! cause [`REFUSED_CAUSE`]) and a session's losses after the last event
//! (their recorded cause).
//!
//! The cause: where the trace records why (a session keeps each loss's
//! cause, which `Trace::for_each_event_with_causes` hands over whether
//! the session is read whole or a chunk at a time), one row per cause;
//! else `lost`, as a ring file does not say.

use crate::columns::TableWriter;
use crate::error::ParquetError;
use crate::Origins;
use ringtrace_export::{Trace, WallClock};
use ringtrace_ring::file::LossNote;
use std::collections::HashMap;

/// The cause of a loss whose cause is not recorded.
pub(crate) const UNKNOWN_CAUSE: &str = "lost";

/// The cause of the losses of a CPU buffer with no event recovered.
pub(crate) const NO_EVENT_CAUSE: &str = "overwritten or lost (no event recovered)";

/// The cause of a ring file's refused writes (`missed`): placed at the
/// time of their CPU buffer's last event, their own times not recorded.
pub(crate) const REFUSED_CAUSE: &str = "refused (time unknown)";

/// The losses table's rows, by where they are placed.
pub(crate) struct Losses;

impl Losses {
    /// Writes the losses of CPU buffers with no event, at `start_ns`:
    /// each process's count.
    pub fn at_start(
        &self,
        trace: &Trace<'_>,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
        start_ns: u64,
    ) -> Result<Vec<(usize, u64)>, ParquetError> {
        let mut counted = Vec::new();
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let count = c.unplaced().no_event;
                if count > 0 {
                    write(
                        out,
                        origins,
                        wall,
                        (i, c.cpu),
                        start_ns,
                        count,
                        NO_EVENT_CAUSE,
                    )?;
                    counted.push((i, count));
                }
            }
        }
        Ok(counted)
    }

    /// Writes the `lost` events of CPU `cpu` of process `process` lost
    /// just before one of its events, at `ns`: a row per cause `notes`
    /// record, the rest as [`UNKNOWN_CAUSE`].
    pub fn before(
        &self,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
        (process, cpu): (usize, usize),
        (lost, notes): (u64, &[LossNote]),
        ns: u64,
    ) -> Result<(), ParquetError> {
        let mut left = lost;
        for note in notes {
            let count = note.count.min(left);
            if count > 0 {
                write(out, origins, wall, (process, cpu), ns, count, &note.why)?;
                left -= count;
            }
        }
        if left > 0 {
            write(out, origins, wall, (process, cpu), ns, left, UNKNOWN_CAUSE)?;
        }
        Ok(())
    }

    /// Writes the losses no event carries but those of a CPU buffer with
    /// no event ([`Losses::at_start`]): each CPU's refused writes
    /// ([`REFUSED_CAUSE`]) and losses noted after its last event (a row
    /// per note, by its cause), at the time of its last event, `last_ns`
    /// (`start_ns` when it has none); each process's count.
    pub fn trailing(
        &self,
        trace: &Trace<'_>,
        out: &mut TableWriter,
        origins: &Origins,
        wall: &WallClock,
        (start_ns, last_ns): (u64, &HashMap<(usize, usize), u64>),
    ) -> Result<Vec<(usize, u64)>, ParquetError> {
        let mut counted = Vec::new();
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let u = c.unplaced();
                let at = last_ns.get(&(i, c.cpu)).copied().unwrap_or(start_ns);
                let mut rows: Vec<(u64, &str)> = vec![(u.refused, REFUSED_CAUSE)];
                rows.extend(
                    c.loss_notes
                        .iter()
                        .filter(|n| n.before >= c.events.len())
                        .map(|n| (n.count, n.why.as_str())),
                );
                for (count, why) in rows {
                    if count > 0 {
                        write(out, origins, wall, (i, c.cpu), at, count, why)?;
                        counted.push((i, count));
                    }
                }
            }
        }
        Ok(counted)
    }
}

/// One row.
fn write(
    out: &mut TableWriter,
    origins: &Origins,
    wall: &WallClock,
    (process, cpu): (usize, usize),
    ns: u64,
    count: u64,
    cause: &str,
) -> Result<(), ParquetError> {
    let mut row = out.row();
    origins.push(&mut row, process);
    row.i32(i32::try_from(cpu).unwrap_or(i32::MAX))
        .u64(ns)
        .u64(wall.unix_ns(ns))
        .u64(count)
        .text(cause);
    row.end()
}
