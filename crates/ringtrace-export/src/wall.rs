//! A trace's timeline placed on Unix time, for the formats that carry
//! wall-clock times (OTLP, Parquet's `unix_ns` column): the timeline
//! itself when the trace is aligned by wall clock; else through the first
//! process's clock anchors record (readings of the ring's clock and
//! `CLOCK_REALTIME` taken together); else through its ring header's
//! wall-clock anchor.

use crate::trace::{Alignment, Trace};
use ringtrace_ring::file::{ClockAnchors, FileHeader};

/// Where a [`WallClock`]'s mapping comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WallSource {
    /// The timeline is wall-clock time already ([`Alignment::WallClock`]).
    Timeline,
    /// The clock anchors record a tracer appends to its ring's metadata.
    Anchors,
    /// The ring header's anchor (a `CLOCK_REALTIME` reading taken when
    /// the ring was opened).
    Header,
    /// The clock's ticks are not time: Unix time is the header's anchor
    /// plus one ns a tick, so times keep their order, not their spacing.
    Ticks,
}

impl WallSource {
    /// The source in words.
    pub fn words(self) -> &'static str {
        match self {
            WallSource::Timeline => "the timeline (aligned by wall clock)",
            WallSource::Anchors => "the clock anchors record",
            WallSource::Header => "the ring header's wall-clock anchor",
            WallSource::Ticks => {
                "the ring header's wall-clock anchor, one ns a tick (the clock's ticks are not time)"
            }
        }
    }
}

/// How ns on a trace's timeline become ns since the Unix epoch.
///
/// ```
/// use ringtrace_export::{Trace, WallSource};
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-wall-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("a.ring");
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path);
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
/// let ring = RingBuffer::new(config, clock)?;
/// ring.write(b"now")?;
/// drop(ring);
/// let recovery = file::recover(&path)?;
/// let trace = Trace::single(&recovery);
/// let wall = trace.wall_clock();
/// assert_eq!(wall.source(), WallSource::Header);
/// let e = &recovery.cpus[0].events[0];
/// let ns = trace.clock().ticks_to_ns(e.ts).unwrap();
/// let unix = wall.unix_ns(ns);
/// let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos() as u64;
/// assert!(unix <= now && now - unix < 60_000_000_000);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Unix ns minus timeline ns.
    offset: i128,
    source: WallSource,
}

impl WallClock {
    /// Timeline `ns` (the trace clock's ticks converted, or the ticks of
    /// a clock whose ticks are not time) as ns since the Unix epoch.
    pub fn unix_ns(&self, ns: u64) -> u64 {
        (i128::from(ns) + self.offset).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Where the mapping comes from.
    pub fn source(&self) -> WallSource {
        self.source
    }
}

impl WallClock {
    /// How ns of one process's own clock (its ring's header's) map to
    /// Unix time, by its clock anchors record among `records` (its
    /// metadata records), else its header's wall-clock anchor: for a
    /// reader of one ring at a time, as a recorder draining it live.
    pub fn of_process(header: &FileHeader, records: &[Vec<u8>]) -> WallClock {
        let clock = &header.clock;
        let ns = |ticks: u64| clock.ticks_to_ns(ticks);
        let anchors = records
            .iter()
            .find_map(|r| ClockAnchors::parse(r).ok().flatten());
        match (ns(header.anchor_ticks), anchors) {
            (Some(_), Some(a)) => WallClock {
                offset: i128::from(a.realtime_ns) - i128::from(ns(a.ticks).unwrap_or(0)),
                source: WallSource::Anchors,
            },
            (Some(at), None) => WallClock {
                offset: i128::from(header.wall_ns) - i128::from(at),
                source: WallSource::Header,
            },
            (None, _) => WallClock {
                offset: i128::from(header.wall_ns) - i128::from(header.anchor_ticks),
                source: WallSource::Ticks,
            },
        }
    }
}

impl Trace<'_> {
    /// How its timeline's ns map to Unix time (see [`WallClock`]): the
    /// first process's mapping, unless the timeline is wall-clock time
    /// already.
    pub fn wall_clock(&self) -> WallClock {
        match self.processes().first() {
            Some(p) if self.alignment() != Alignment::WallClock => {
                WallClock::of_process(&p.recovery.header, p.decoder().metadata_records())
            }
            _ => WallClock {
                offset: 0,
                source: WallSource::Timeline,
            },
        }
    }
}
