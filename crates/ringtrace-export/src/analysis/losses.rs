//! Lost events: where a trace says events were lost, and the losses
//! summed per CPU and second.
//!
//! A trace says so in two ways, as the other exporters count them:
//! each event's `lost_before` (events of its CPU lost just before it, at
//! its time), and the losses no event carries
//! ([`CpuRecovery::unplaced`](ringtrace_ring::file::CpuRecovery::unplaced)):
//! for a CPU of which no event was recovered, the ring file's overrun
//! and lost counters (at the trace's start: nothing places them later);
//! a ring file's refused writes (`missed`), whose times it does not
//! record, at the time of their CPU's last event; and a session's losses
//! after a CPU's last event, at that event's time.

use crate::trace::Trace;
use ringtrace_ring::Event;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Why a [`Loss`] is where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LossCause {
    /// Counted on the next event of its CPU (`lost_before`), at that
    /// event's time.
    BeforeEvent,
    /// The counters of a CPU of which no event was recovered, at the
    /// trace's start.
    NoEventRecovered,
    /// Writes a ring file's CPU buffer refused (its `missed`: discard mode
    /// full, busy, preparing, too large, timed out), as ftrace counts
    /// dropped events. The file does not record when: placed at the time
    /// of the CPU's last event (the trace's start if it has none).
    Refused,
    /// Losses a session noted after its CPU's last event, which no event
    /// carries: at the time of that last event.
    AfterLastEvent,
}

impl fmt::Display for LossCause {
    /// `before_event`, `no_event_recovered`, `refused_time_unknown` or
    /// `after_last_event`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossCause::BeforeEvent => "before_event",
            LossCause::NoEventRecovered => "no_event_recovered",
            LossCause::Refused => "refused_time_unknown",
            LossCause::AfterLastEvent => "after_last_event",
        })
    }
}

/// Events of one CPU lost at one time.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Loss {
    /// The process's place in [`Trace::processes`].
    pub process: usize,
    /// The CPU buffer.
    pub cpu: usize,
    /// When, ns on the trace's timeline.
    pub time_ns: u64,
    /// How many events.
    pub count: u64,
    /// Why it is placed there.
    pub cause: LossCause,
}

/// The events one CPU of one process lost within one second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CpuSecondLoss {
    /// The process's pid.
    pub pid: u32,
    /// The process's command name.
    pub comm: String,
    /// The CPU buffer.
    pub cpu: usize,
    /// The second: `floor(time_ns / 10^9)` of the losses' times (ns on
    /// the trace's timeline, as the `losses` table's `time_ns`).
    pub second: u64,
    /// How many events were lost.
    pub lost: u64,
}

/// The losses of a trace as it is walked.
#[derive(Debug, Default)]
pub(super) struct LossScan {
    /// The last event's time of each (process, CPU) seen.
    last: HashMap<(usize, usize), u64>,
    losses: Vec<Loss>,
}

impl LossScan {
    /// Notes event `e` of process `process`, at `ns` on the timeline.
    pub fn event(&mut self, process: usize, e: &Event, ns: u64) {
        let last = self.last.entry((process, e.cpu)).or_insert(ns);
        *last = (*last).max(ns);
        if e.lost_before > 0 {
            self.losses.push(Loss {
                process,
                cpu: e.cpu,
                time_ns: ns,
                count: e.lost_before,
                cause: LossCause::BeforeEvent,
            });
        }
    }

    /// Every loss, in time order, the CPUs with no event first, at
    /// `start_ns` (the trace's start); the losses no event carries
    /// ([`CpuRecovery::unplaced`](ringtrace_ring::file::CpuRecovery::unplaced))
    /// at the time of their CPU's last event.
    pub fn finish(self, trace: &Trace<'_>, start_ns: u64) -> Vec<Loss> {
        let mut all = Vec::new();
        let mut trailing = Vec::new();
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let u = c.unplaced();
                let last = self.last.get(&(i, c.cpu)).copied();
                let loss = |count, time_ns, cause| Loss {
                    process: i,
                    cpu: c.cpu,
                    time_ns,
                    count,
                    cause,
                };
                if u.no_event > 0 && last.is_none() {
                    all.push(loss(u.no_event, start_ns, LossCause::NoEventRecovered));
                }
                let at = last.unwrap_or(start_ns);
                if u.refused > 0 {
                    trailing.push(loss(u.refused, at, LossCause::Refused));
                }
                if u.after_last > 0 {
                    trailing.push(loss(u.after_last, at, LossCause::AfterLastEvent));
                }
            }
        }
        all.extend(self.losses);
        all.extend(trailing);
        // Stable: the CPUs with no event stay first.
        all.sort_by_key(|l| l.time_ns);
        all
    }
}

/// Calls `f` with each loss of `trace` (see the module's docs): the CPUs
/// with no event first, at the trace's start, then the others in time
/// order.
pub fn for_each_loss(trace: &Trace<'_>, f: &mut dyn FnMut(&Loss)) {
    let ns = |ticks: u64| trace.clock().ticks_to_ns(ticks).unwrap_or(ticks);
    let mut scan = LossScan::default();
    let _ = trace.for_each_event::<std::convert::Infallible>(&mut |process, e, ts| {
        scan.event(process, e, ns(ts));
        Ok(())
    });
    for loss in scan.finish(trace, ns(trace.base())) {
        f(&loss);
    }
}

/// The losses summed per (pid, comm, CPU, second), ordered by those.
pub(super) fn per_cpu_second(trace: &Trace<'_>, losses: &[Loss]) -> Vec<CpuSecondLoss> {
    let mut sums: BTreeMap<(u32, &str, usize, u64), u64> = BTreeMap::new();
    for l in losses {
        let p = &trace.processes()[l.process];
        let key = (p.pid(), p.comm(), l.cpu, l.time_ns / 1_000_000_000);
        let sum = sums.entry(key).or_default();
        *sum = sum.saturating_add(l.count);
    }
    sums.into_iter()
        .map(|((pid, comm, cpu, second), lost)| CpuSecondLoss {
            pid,
            comm: comm.to_owned(),
            cpu,
            second,
            lost,
        })
        .collect()
}
