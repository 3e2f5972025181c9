//! The trace's time in the Perfetto trace: every timestamp in ns of the
//! trace's clock, and the clock snapshot that maps that clock to
//! Perfetto's builtin clocks, so that the trace lines up with others of
//! the same machine (a kernel trace on `BOOTTIME`, `perf` on
//! `MONOTONIC`):
//!
//! - the builtin clock the trace's clock is (`mono`, `mono-raw`, `boot`;
//!   the wall-clock timeline of an aligned trace is `REALTIME`), exactly;
//! - `BOOTTIME`, `MONOTONIC` and `REALTIME` through the clock anchors
//!   record a tracer appends to its ring's metadata (readings of the
//!   ring's clock and the system's taken together, to within their
//!   spread), when the first process's ring has one;
//! - else `REALTIME` through the ring header's wall-clock anchor.

use super::schema::clock;
use crate::trace::{Alignment, Trace};
use ringtrace_ring::file::{ClockAnchors, FileClock};

/// How the trace's ticks are written.
#[derive(Debug, Clone)]
pub(super) struct TimeBase {
    clock: FileClock,
    /// Each clock of the snapshot as its offset from the trace's clock:
    /// it reads `ns + offset` when the trace's reads `ns`. Empty when the
    /// clock's ticks are not time.
    offsets: Vec<(u32, i128)>,
    /// The snapshot at the first process's anchor.
    pub snapshot: Vec<(u32, u64)>,
    /// The builtin clock the trace's clock is, else `BOOTTIME` when the
    /// anchors give it, else `REALTIME`.
    pub primary: u32,
}

impl TimeBase {
    /// The time base of `trace`.
    pub fn of(trace: &Trace<'_>) -> TimeBase {
        let c = trace.clock();
        let mut time = TimeBase {
            clock: c.clone(),
            offsets: Vec::new(),
            snapshot: Vec::new(),
            primary: clock::REALTIME,
        };
        let Some(p) = trace.processes().first() else {
            return time;
        };
        if !time.is_time() {
            return time;
        }
        let h = &p.recovery.header;
        let anchor = time.ns(p.timeline(h.anchor_ticks));
        let own = if trace.alignment() == Alignment::WallClock {
            Some(clock::REALTIME)
        } else {
            builtin(&c.name)
        };
        let mut offsets: Vec<(u32, i128)> = Vec::new();
        let mut put = |id: u32, offset: i128| {
            if !offsets.iter().any(|(i, _)| *i == id) {
                offsets.push((id, offset));
            }
        };
        put(clock::TRACE, 0);
        put(clock::TRACE_DELTA, 0);
        if let Some(id) = own {
            put(id, 0);
        }
        let anchors = p
            .decoder()
            .metadata_records()
            .iter()
            .find_map(|r| ClockAnchors::parse(r).ok().flatten());
        if let Some(a) = anchors {
            // Where the trace's clock stood at the readings: exactly its own
            // builtin clock's reading when it is one.
            let at = match own {
                Some(clock::MONOTONIC) => i128::from(a.mono_ns),
                Some(clock::BOOTTIME) => i128::from(a.boot_ns),
                Some(clock::REALTIME) => i128::from(a.realtime_ns),
                _ => i128::from(time.ns(p.timeline(a.ticks))),
            };
            put(clock::BOOTTIME, i128::from(a.boot_ns) - at);
            put(clock::MONOTONIC, i128::from(a.mono_ns) - at);
            put(clock::REALTIME, i128::from(a.realtime_ns) - at);
        } else {
            put(clock::REALTIME, i128::from(h.wall_ns) - i128::from(anchor));
        }
        time.offsets = offsets;
        time.primary = match (own, anchors) {
            (Some(id), _) => id,
            (None, Some(_)) => clock::BOOTTIME,
            (None, None) => clock::REALTIME,
        };
        time.snapshot = time.snapshot_at(anchor);
        time
    }

    /// The snapshot when the trace's clock reads `ns`: for a sequence
    /// whose state is cleared with its delta clock at `ns`.
    pub fn snapshot_at(&self, ns: u64) -> Vec<(u32, u64)> {
        self.offsets
            .iter()
            .map(|&(id, offset)| {
                let at = (i128::from(ns) + offset).clamp(0, i128::from(u64::MAX)) as u64;
                (id, at)
            })
            .collect()
    }

    /// Whether the ticks are time (else they are written as they are, with
    /// no snapshot).
    pub fn is_time(&self) -> bool {
        self.clock.ticks_to_ns(0).is_some()
    }

    /// Timeline `ticks` in ns (the ticks themselves for a clock whose
    /// ticks are not time), as the ring file's header converts them.
    pub fn ns(&self, ticks: u64) -> u64 {
        self.clock.ticks_to_ns(ticks).unwrap_or(ticks)
    }
}

/// The builtin clock a ringtrace clock is, by its name (`global:mono` and
/// `mono@irq` are `mono`; the wall-clock timeline of an aligned trace is
/// `REALTIME`).
fn builtin(name: &str) -> Option<u32> {
    let base = name.split('@').next().unwrap_or(name);
    let base = base.rsplit(':').next().unwrap_or(base);
    match base {
        "mono" => Some(clock::MONOTONIC),
        "mono-raw" => Some(clock::MONOTONIC_RAW),
        "boot" => Some(clock::BOOTTIME),
        "wall-clock" | "realtime" => Some(clock::REALTIME),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_are_builtin_by_their_base_name() {
        assert_eq!(builtin("mono"), Some(clock::MONOTONIC));
        assert_eq!(builtin("global:mono"), Some(clock::MONOTONIC));
        assert_eq!(builtin("mono@irq"), Some(clock::MONOTONIC));
        assert_eq!(builtin("mono-raw"), Some(clock::MONOTONIC_RAW));
        assert_eq!(builtin("boot"), Some(clock::BOOTTIME));
        assert_eq!(builtin("wall-clock"), Some(clock::REALTIME));
        assert_eq!(builtin("tsc"), None);
        assert_eq!(builtin("counter"), None);
    }
}
