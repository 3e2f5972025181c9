//! The trace's time in the Perfetto trace: every timestamp in ns of the
//! trace's clock, and the clock snapshot that maps that clock to
//! Perfetto's builtin clocks (`REALTIME` by the ring's wall-clock anchor;
//! `MONOTONIC`, `MONOTONIC_RAW` or `BOOTTIME` when the trace's clock is
//! that clock), so that the trace lines up with others of the same
//! machine.

use super::schema::clock;
use crate::trace::Trace;
use ringtrace_ring::file::FileClock;

/// How the trace's ticks are written.
#[derive(Debug, Clone)]
pub(super) struct TimeBase {
    clock: FileClock,
    /// `(clock id, ns)` read at one instant (the first process's anchor);
    /// empty when the clock's ticks are not time.
    pub snapshot: Vec<(u32, u64)>,
    /// The builtin clock the trace's clock is, or `REALTIME`.
    pub primary: u32,
    /// The anchor in ns of the trace's clock, and `REALTIME` then.
    anchor: Option<(u64, u64)>,
}

impl TimeBase {
    /// The time base of `trace`.
    pub fn of(trace: &Trace<'_>) -> TimeBase {
        let c = trace.clock();
        let mut time = TimeBase {
            clock: c.clone(),
            snapshot: Vec::new(),
            primary: clock::REALTIME,
            anchor: None,
        };
        let Some(p) = trace.processes().first() else {
            return time;
        };
        if !time.is_time() {
            return time;
        }
        let h = &p.recovery.header;
        let anchor = time.ns(p.timeline(h.anchor_ticks));
        let wall = if builtin(&c.name) == Some(clock::REALTIME) {
            anchor
        } else {
            h.wall_ns
        };
        time.anchor = Some((anchor, wall));
        time.snapshot.push((clock::TRACE, anchor));
        time.snapshot.push((clock::TRACE_DELTA, anchor));
        match builtin(&c.name) {
            Some(clock::REALTIME) => time.snapshot.push((clock::REALTIME, anchor)),
            Some(id) => {
                time.snapshot.push((id, anchor));
                time.snapshot.push((clock::REALTIME, h.wall_ns));
                time.primary = id;
            }
            None => time.snapshot.push((clock::REALTIME, h.wall_ns)),
        }
        time
    }

    /// The snapshot moved to `ns` of the trace's clock (every clock read
    /// that much later: the trace's and its builtin clock at `ns`,
    /// `REALTIME` as far from the anchor's reading), for a sequence
    /// whose state is cleared with its delta clock at `ns`.
    pub fn snapshot_at(&self, ns: u64) -> Vec<(u32, u64)> {
        let Some((anchor, wall)) = self.anchor else {
            return Vec::new();
        };
        self.snapshot
            .iter()
            .map(|&(id, _)| {
                let at = if id == clock::REALTIME {
                    (i128::from(wall) + i128::from(ns) - i128::from(anchor))
                        .clamp(0, i128::from(u64::MAX)) as u64
                } else {
                    ns
                };
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
