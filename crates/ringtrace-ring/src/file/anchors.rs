//! The clock anchors record: readings of the ring's clock and of the
//! system's clocks taken together, appended to the metadata annex when a
//! tracer is built, so that a reader can place the trace on `BOOTTIME`,
//! `MONOTONIC` and `REALTIME` (a kernel or `perf` trace of the same
//! machine) whatever the ring's clock is.
//!
//! `RTca` (4 bytes), version 1 (u8), then five u64, little-endian: the
//! ring clock's ticks, `CLOCK_BOOTTIME`, `CLOCK_MONOTONIC` and
//! `CLOCK_REALTIME` in ns, and the spread: the ns between the first and
//! the last reading (how far apart the readings may be).

use ringtrace_clock::Clock;

/// The first bytes of a clock anchors record.
pub const ANCHORS_MAGIC: [u8; 4] = *b"RTca";
/// The record version this build writes and reads.
pub const ANCHORS_VERSION: u8 = 1;
const LEN: usize = 5 + 5 * 8;

/// Readings of the ring's clock and the system's, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClockAnchors {
    /// The ring clock's reading.
    pub ticks: u64,
    /// `CLOCK_BOOTTIME`, ns.
    pub boot_ns: u64,
    /// `CLOCK_MONOTONIC`, ns (the middle of the two readings around the
    /// others).
    pub mono_ns: u64,
    /// `CLOCK_REALTIME`, ns since the Unix epoch.
    pub realtime_ns: u64,
    /// How long the readings took, ns.
    pub spread_ns: u64,
}

fn now(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes
    // only it and reports failure (an unknown clock) by its return value.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

impl ClockAnchors {
    /// Reads `clock` and the system's clocks, between two readings of
    /// `CLOCK_MONOTONIC`.
    ///
    /// ```
    /// use ringtrace_ring::file::ClockAnchors;
    /// let clock = ringtrace_clock::Counter::new();
    /// let a = ClockAnchors::read(&clock);
    /// // BOOTTIME is MONOTONIC plus time suspended, read within the
    /// // window whose middle `mono_ns` is.
    /// assert!(a.boot_ns + a.spread_ns >= a.mono_ns && a.realtime_ns > a.boot_ns);
    /// assert_eq!(ClockAnchors::parse(&a.to_record()), Ok(Some(a)));
    /// assert_eq!(ClockAnchors::parse(b"RTcs other"), Ok(None));
    /// ```
    pub fn read(clock: &impl Clock) -> ClockAnchors {
        let before = now(libc::CLOCK_MONOTONIC);
        let ticks = clock.read();
        let boot_ns = now(libc::CLOCK_BOOTTIME);
        let realtime_ns = now(libc::CLOCK_REALTIME);
        let after = now(libc::CLOCK_MONOTONIC);
        ClockAnchors {
            ticks,
            boot_ns,
            mono_ns: before + (after.saturating_sub(before)) / 2,
            realtime_ns,
            spread_ns: after.saturating_sub(before),
        }
    }

    /// The record, for the metadata annex.
    pub fn to_record(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(LEN);
        r.extend_from_slice(&ANCHORS_MAGIC);
        r.push(ANCHORS_VERSION);
        for v in [
            self.ticks,
            self.boot_ns,
            self.mono_ns,
            self.realtime_ns,
            self.spread_ns,
        ] {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r
    }

    /// The anchors `record` holds: `Ok(None)` for another kind of record,
    /// an error saying what is wrong with one that is this kind.
    pub fn parse(record: &[u8]) -> Result<Option<ClockAnchors>, String> {
        let Some(rest) = record.strip_prefix(&ANCHORS_MAGIC) else {
            return Ok(None);
        };
        match rest.first() {
            Some(&ANCHORS_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "clock anchors record of version {v}, not {ANCHORS_VERSION}"
                ))
            }
            None => return Err("clock anchors record cut before its version".into()),
        }
        if record.len() != LEN {
            return Err(format!(
                "clock anchors record of {} bytes, not {LEN}",
                record.len()
            ));
        }
        let word = |i: usize| {
            let at = 5 + 8 * i;
            let mut b = [0u8; 8];
            b.copy_from_slice(&record[at..at + 8]);
            u64::from_le_bytes(b)
        };
        Ok(Some(ClockAnchors {
            ticks: word(0),
            boot_ns: word(1),
            mono_ns: word(2),
            realtime_ns: word(3),
            spread_ns: word(4),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_anchors_record_is_named_and_others_are_not_anchors() {
        let a = ClockAnchors {
            ticks: 1,
            boot_ns: 2,
            mono_ns: 3,
            realtime_ns: 4,
            spread_ns: 5,
        };
        let r = a.to_record();
        assert_eq!(ClockAnchors::parse(&r), Ok(Some(a)));
        assert!(ClockAnchors::parse(&r[..20]).unwrap_err().contains("bytes"));
        let mut v2 = r.clone();
        v2[4] = 2;
        assert!(ClockAnchors::parse(&v2).unwrap_err().contains("version 2"));
        assert!(ClockAnchors::parse(b"RTca").is_err());
        assert_eq!(ClockAnchors::parse(b"RTcs..."), Ok(None));
    }
}
