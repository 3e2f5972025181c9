//! Lost events: where a trace says events were lost, and the losses
//! summed per CPU and second.
//!
//! A trace says so in two ways, as the other exporters count them:
//! each event's `lost_before` (events of its CPU lost just before it, at
//! its time), and for a CPU of which no event was recovered, the ring
//! file's overrun and lost counters (at the trace's start: nothing
//! places them later). A session's counters are zero: its losses are
//! in its pages' `lost`, so on its events.

use crate::trace::Trace;
use ringtrace_ring::Event;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
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
}

impl fmt::Display for LossCause {
    /// `before_event` or `no_event_recovered`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossCause::BeforeEvent => "before_event",
            LossCause::NoEventRecovered => "no_event_recovered",
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
    seen: HashSet<(usize, usize)>,
    losses: Vec<Loss>,
}

impl LossScan {
    /// Notes event `e` of process `process`, at `ns` on the timeline.
    pub fn event(&mut self, process: usize, e: &Event, ns: u64) {
        self.seen.insert((process, e.cpu));
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
    /// `start_ns` (the trace's start).
    pub fn finish(self, trace: &Trace<'_>, start_ns: u64) -> Vec<Loss> {
        let mut all = Vec::new();
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let count = c.file_stats.overrun.saturating_add(c.file_stats.lost);
                if count > 0 && !self.seen.contains(&(i, c.cpu)) {
                    all.push(Loss {
                        process: i,
                        cpu: c.cpu,
                        time_ns: start_ns,
                        count,
                        cause: LossCause::NoEventRecovered,
                    });
                }
            }
        }
        all.extend(self.losses);
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
