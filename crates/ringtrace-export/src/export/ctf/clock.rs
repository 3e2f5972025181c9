//! The CTF clock of a trace, from the file's clock and its wall-clock
//! anchor: event timestamps are the file's raw ticks, and the clock's
//! offset places them in real time.

use super::uuid::Uuid;
use crate::text::clock_words;
use ringtrace_ring::file::FileHeader;

const NS_PER_S: u128 = 1_000_000_000;

/// The `clock` block's values.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CtfClock {
    /// Its TSDL name: the file clock's, each character that cannot be in
    /// an identifier made `_` (`tsc@irq` is `tsc_irq`).
    pub ident: String,
    /// What it is, in words (the file clock's own name included).
    pub description: String,
    /// Ticks per second.
    pub freq: u64,
    /// Whole seconds from the Unix epoch to tick 0.
    pub offset_s: i64,
    /// And ticks (below `freq`) after them.
    pub offset: u64,
    /// Resolution in ticks, when known.
    pub precision: Option<u64>,
    /// Its UUID.
    pub uuid: Uuid,
}

/// TSDL keywords, which a clock may not be named.
const KEYWORDS: &[&str] = &[
    "align",
    "callsite",
    "const",
    "char",
    "clock",
    "double",
    "enum",
    "env",
    "event",
    "floating_point",
    "float",
    "integer",
    "int",
    "long",
    "short",
    "signed",
    "stream",
    "string",
    "struct",
    "trace",
    "typealias",
    "typedef",
    "unsigned",
    "variant",
    "void",
    "_Bool",
    "_Complex",
    "_Imaginary",
    "TRUE",
    "FALSE",
];

impl CtfClock {
    /// The clock of the file with `header`.
    ///
    /// For a clock whose ticks are time, `freq` is its frequency (from the
    /// multiplier when the file has none) and the offset is the anchor's
    /// wall-clock time less the anchor's ticks in time, so that a reader
    /// shows `header.wall_ns_at(ticks)` for an event at `ticks` (to within
    /// a nanosecond or two of rounding). For a counter, whose ticks are
    /// not time, `freq` is 10^9 and the offset zero: a reader shows each
    /// tick as a nanosecond after the epoch, and the description says so.
    pub fn of(header: &FileHeader) -> CtfClock {
        let c = &header.clock;
        let mut ident: String = c
            .name
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
            .collect();
        if ident.is_empty()
            || ident.starts_with(|ch: char| ch.is_ascii_digit())
            || KEYWORDS.contains(&ident.as_str())
        {
            ident.insert_str(0, "clock_");
        }
        let freq = match (c.mult, c.frequency_hz) {
            (None, _) => None,
            (Some(_), _) if c.ticks_are_ns => Some(1_000_000_000),
            (Some(_), Some(hz)) => Some(hz),
            (Some(m), None) => {
                let hz = ((NS_PER_S << c.shift.min(63)) + u128::from(m) / 2) / u128::from(m);
                u64::try_from(hz).ok().filter(|&hz| hz > 0)
            }
        };
        let uuid = Uuid::of(header, "clock");
        let words = clock_words(c);
        let Some(freq) = freq else {
            return CtfClock {
                ident,
                description: format!(
                    "ringtrace clock {words}; each tick is shown as a nanosecond after the Unix epoch, so times and dates are tick counts, not time"
                ),
                freq: 1_000_000_000,
                offset_s: 0,
                offset: 0,
                precision: Some(1),
                uuid,
            };
        };
        let f = u128::from(freq);
        let anchor_ns = (u128::from(header.anchor_ticks) * NS_PER_S + f / 2) / f;
        let origin = i128::from(header.wall_ns) - anchor_ns as i128;
        let offset_s = origin.div_euclid(NS_PER_S as i128);
        let rem = origin.rem_euclid(NS_PER_S as i128) as u128;
        let offset = ((rem * f + NS_PER_S / 2) / NS_PER_S).min(f - 1);
        CtfClock {
            ident,
            description: format!("ringtrace clock {words}"),
            freq,
            offset_s: i64::try_from(offset_s).unwrap_or(i64::MIN),
            offset: offset as u64,
            precision: c
                .precision_ns
                .filter(|p| p.is_finite() && *p >= 0.0)
                .map(|p| (p * freq as f64 / 1e9).ceil() as u64),
            uuid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_clock::{Guarantee, TickConversion};
    use ringtrace_ring::file::{FileClock, FileLayout};
    use ringtrace_ring::Mode;

    fn header(name: &str, hz: Option<u64>, wall_ns: u64, anchor_ticks: u64) -> FileHeader {
        let conversion = hz.and_then(TickConversion::from_frequency);
        FileHeader {
            version: 1,
            page_size: 4096,
            pages_per_cpu: 2,
            cpus: 1,
            quarantine_pages: 1,
            mode: Mode::Overwrite,
            layout: FileLayout::NONE,
            clock: FileClock {
                name: name.into(),
                frequency_hz: hz,
                mult: conversion.map(|c| c.mult()),
                shift: TickConversion::SHIFT,
                ticks_are_ns: hz == Some(1_000_000_000),
                guarantee: Guarantee::Global,
                precision_ns: hz.map(|_| 1.0),
            },
            wall_ns,
            anchor_ticks,
            pid: 1,
            comm: "c".into(),
            metadata_checksum: 0,
        }
    }

    fn offset(c: &CtfClock) -> (i64, u64) {
        (c.offset_s, c.offset)
    }

    #[test]
    fn the_offset_puts_the_anchor_at_its_wall_clock_time() {
        let ns = CtfClock::of(&header(
            "mono",
            Some(1_000_000_000),
            1_796_101_745_500_000_000,
            2_000_000_123,
        ));
        assert_eq!(offset(&ns), (1_796_101_743, 499_999_877));
        assert_eq!((ns.freq, ns.precision), (1_000_000_000, Some(1)));
        // 2.4 GHz: the anchor, one second of ticks, is at 10.25 s.
        let tsc = CtfClock::of(&header(
            "tsc",
            Some(2_400_000_000),
            10_250_000_000,
            2_400_000_000,
        ));
        assert_eq!(offset(&tsc), (9, 600_000_000));
        assert_eq!((tsc.freq, tsc.precision), (2_400_000_000, Some(3)));
    }

    #[test]
    fn an_anchor_later_than_its_wall_clock_time_gives_a_negative_offset() {
        let c = CtfClock::of(&header(
            "mono",
            Some(1_000_000_000),
            1_500_000_000,
            5_000_000_000,
        ));
        assert_eq!(offset(&c), (-4, 500_000_000));
    }

    #[test]
    fn a_counter_counts_nanoseconds_from_the_epoch_and_says_its_ticks_are_not_time() {
        let c = CtfClock::of(&header("counter", None, 1_796_101_745_500_000_000, 77));
        assert_eq!((c.freq, offset(&c)), (1_000_000_000, (0, 0)));
        assert!(c.description.contains("not time"), "{}", c.description);
    }

    #[test]
    fn clock_names_become_identifiers_that_are_not_keywords() {
        let ident = |name: &str| CtfClock::of(&header(name, Some(1_000_000_000), 0, 0)).ident;
        assert_eq!(ident("tsc@irq"), "tsc_irq");
        assert_eq!(ident("global:mono"), "global_mono");
        assert_eq!(ident("9lives"), "clock_9lives");
        assert_eq!(ident("clock"), "clock_clock");
        assert_eq!(ident(""), "clock_");
    }
}
