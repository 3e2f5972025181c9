//! `ringtrace export --format perfetto`: Perfetto's own protobuf trace
//! (`perfetto.protos.Trace`), which ui.perfetto.dev and Perfetto's trace
//! processor open.
//!
//! The trace's events are written in time order, each as one
//! `TracePacket` as it is met (the encoder keeps only what is open: spans,
//! sections, interned strings), as track events:
//!
//! - a process track per process (`ProcessDescriptor`: pid, comm) and a
//!   thread track per thread (`ThreadDescriptor`: pid, tid, `comm-tid`),
//!   each described by a `TrackDescriptor` before its first use;
//! - tracepoints and `tracing` events as instants on their thread's
//!   track, with their fields as typed debug annotations (unsigned,
//!   signed, double, bool, string; a location as a dictionary), the CPU
//!   in `cpu`, and the tracepoint's system or the event's target as the
//!   category;
//! - span edges (`X_enter`/`X_exit`, `X_start`/`X_stop`, `tracing` span
//!   enter/exit, local spans) as slices on their thread's track
//!   (`TYPE_SLICE_BEGIN`/`TYPE_SLICE_END`); a `tracing` span entered more
//!   than once is an async task with its own track and a flow through
//!   each of its slices (the tasks and spans modules); a `follows_from`
//!   link as a flow;
//! - preemptirq sections (irqs, preemption, softirqs off) as slices on a
//!   track per CPU (the lanes module);
//! - counter tracepoints as `TYPE_COUNTER` samples, one counter track per
//!   series; each loss as an instant `lost` on its process's track and a
//!   sample of its CPU's `events lost` counter (the losses no event
//!   carries, `CpuRecovery::unplaced`: a CPU with no event's at the start
//!   with `no_event_recovered`, refused writes and losses after a CPU's
//!   last event at that event's time with `why`); each fill sample of a
//!   session (how full a CPU buffer was when drained) on its CPU's
//!   `buffer fill` counter;
//! - names, categories and annotation names interned, a packet sequence
//!   per writing thread (and one per process for its tracks, losses and
//!   counters), incremental state as Perfetto requires (the sink
//!   module);
//! - times in ns of the trace's clock, mapped by a clock snapshot to
//!   `REALTIME` and to the builtin clock the trace's clock is (the time
//!   module).
//!
//! docs/export.md maps every record to the message that carries it.

mod intern;
mod lanes;
mod proto;
mod schema;
mod sink;
mod spans;
mod stacks;
mod tasks;
mod time;
mod tracks;
mod walk;

use super::{output, ExportError, ExportSummary};
use crate::merge::Item;
use crate::trace::Trace;
use sink::Sink;
use tasks::Tasks;
use time::TimeBase;
use walk::Walk;

/// Writes `trace` to `out` as a Perfetto trace.
pub(super) fn export(trace: &Trace<'_>, out: &Path) -> Result<ExportSummary, ExportError> {
    let time = TimeBase::of(trace);
    let mut warnings = Vec::new();
    if !time.is_time() {
        warnings.push(format!(
            "clock `{}` counts ticks, not time: its ticks are written as the trace's ns, and no clock snapshot aligns them with other traces",
            trace.clock().name
        ));
    }
    let tasks = Tasks::find(trace);
    let mut counts = walk::Counts::default();
    let mut per_cpu = Default::default();
    let (mut links_dropped, mut links_unentered) = (0, 0);
    output::write_file(out, |w| {
        let mut sink = Sink::new(w, time);
        let mut walk = Walk::new(trace, &mut sink, tasks);
        let written = walk
            .start()
            .and_then(|()| {
                trace.for_each_item(&mut |item| match item {
                    Item::Event { process, event, ts } => walk.event(process, event, ts),
                    Item::Fill {
                        process,
                        cpu,
                        sample,
                        ts,
                    } => walk.fill(process, cpu, sample, ts),
                })
            })
            .and_then(|()| walk.trailing_losses())
            .and_then(|()| walk.finish());
        counts = walk.counts;
        per_cpu = std::mem::take(&mut walk.per_cpu);
        links_dropped = walk.tasks.links_dropped;
        links_unentered = walk.tasks.links_unentered;
        written
            .and_then(|()| sink.flush())
            .map_err(|e| ExportError::io(out, &e))
    })?;
    if trace.is_streamed() {
        // A streamed session's recoveries hold what its index counts.
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let read = per_cpu.get(&(i, c.cpu)).copied().unwrap_or(0);
                if read < c.counts.recovered {
                    warnings.push(format!(
                        "process {} CPU {}: the session's index counts {} events, {read} were read (the others are in chunks that could not be read)",
                        p.pid(),
                        c.cpu,
                        c.counts.recovered
                    ));
                }
            }
        }
    }
    if links_dropped > 0 {
        warnings.push(format!(
            "{links_dropped} follows_from links are not drawn: a span they join is not in the trace (overwritten), or closed more than {} span closes before the link",
            tasks::RECENT
        ));
    }
    if links_unentered > 0 {
        warnings.push(format!(
            "{links_unentered} follows_from links are not drawn: a span they join was never entered, so it has no slice for a flow to start or end at"
        ));
    }
    if counts.unmatched > 0 {
        warnings.push(format!(
            "{} span ends had no open span to close: drawn as instants with `unmatched_end`",
            counts.unmatched
        ));
    }
    if counts.closed_at_end > 0 {
        warnings.push(format!(
            "{} spans or sections still open at the trace's end: ended there, with `unclosed`",
            counts.closed_at_end
        ));
    }
    Ok(ExportSummary {
        path: out.to_owned(),
        events: counts.events,
        lost: counts.lost,
        warnings,
    })
}

use std::path::Path;
