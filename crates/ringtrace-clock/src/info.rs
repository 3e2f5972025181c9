//! What a clock promises: [`ClockInfo`], [`Guarantee`] and [`TickConversion`].

use std::fmt;

/// How far a clock's readings can be trusted to never go back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guarantee {
    /// Readings never decrease across all CPUs and threads: a read that
    /// happens after another (in the happens-before sense) is not smaller.
    Global,
    /// Readings never decrease on one CPU; CPUs may disagree (skew), so a
    /// thread that migrates may see time step back.
    PerCpu,
    /// No ordering at all beyond what the source happens to give.
    None,
}

impl Guarantee {
    /// The short name used in listings: `global`, `per-cpu` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            Guarantee::Global => "global",
            Guarantee::PerCpu => "per-cpu",
            Guarantee::None => "none",
        }
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Converts raw ticks to nanoseconds with one 64x64->128 multiply and a
/// shift, as the kernel's clocksource `mult`/`shift` pair does, but with a
/// 128-bit product so that no range of ticks overflows.
///
/// `ns = (ticks * mult + 2^31) >> 32`, with `mult = (10^9 << 32) /
/// frequency_hz` rounded to nearest. The relative error of `mult` is at most
/// 2^-33 · frequency / 10^9: under a part per billion for a 3 GHz counter.
///
/// ```
/// use ringtrace_clock::TickConversion;
/// let c = TickConversion::from_frequency(2_500_000_000).unwrap();
/// assert_eq!(c.ticks_to_ns(2_500_000_000), 1_000_000_000);
/// // No conversion for a frequency of zero, or one too high to represent.
/// assert!(TickConversion::from_frequency(0).is_none());
/// assert!(TickConversion::from_frequency(u64::MAX).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TickConversion {
    mult: u64,
    frequency_hz: u64,
}

impl TickConversion {
    /// The fixed-point shift: `ns = (ticks * mult + 2^(SHIFT-1)) >> SHIFT`.
    pub const SHIFT: u32 = 32;

    /// The identity: the ticks are nanoseconds already.
    pub const NANOSECONDS: TickConversion = TickConversion {
        mult: 1 << Self::SHIFT,
        frequency_hz: 1_000_000_000,
    };

    /// The conversion for a counter of `frequency_hz`; `None` for zero, and
    /// for frequencies so high (above about 8.6 * 10^18 Hz) that a tick is
    /// too small a fraction of a nanosecond for the 32-bit fixed point.
    pub fn from_frequency(frequency_hz: u64) -> Option<TickConversion> {
        if frequency_hz == 0 {
            return None;
        }
        let hz = u128::from(frequency_hz);
        let mult = ((1_000_000_000u128 << Self::SHIFT) + hz / 2) / hz;
        if mult == 0 {
            return None;
        }
        // A frequency of 1 Hz gives the largest mult, 10^9 << 32 < 2^62, so
        // the cast is lossless and ticks * mult < 2^126 cannot overflow.
        Some(TickConversion {
            mult: mult as u64,
            frequency_hz,
        })
    }

    /// The fixed-point multiplier (see [`TickConversion::SHIFT`]), as a
    /// file header records it.
    pub fn mult(&self) -> u64 {
        self.mult
    }

    /// The counter frequency this conversion was made for.
    pub fn frequency_hz(&self) -> u64 {
        self.frequency_hz
    }

    /// Nanoseconds in `ticks`, rounded to nearest and saturated at `u64::MAX`.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        let half = 1u128 << (Self::SHIFT - 1);
        let ns = (u128::from(ticks) * u128::from(self.mult) + half) >> Self::SHIFT;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Nanoseconds in `ticks` as a float, for statistics.
    #[inline]
    pub fn ticks_to_ns_f64(&self, ticks: f64) -> f64 {
        ticks * 1e9 / self.frequency_hz as f64
    }
}

/// Everything a reader needs to know about a clock, gathered off the hot path.
///
/// ```
/// use ringtrace_clock::{Clock, Guarantee, Mono};
/// let info = Mono::new().info();
/// assert_eq!(info.name, "mono");
/// assert!(info.ticks_are_ns);
/// assert_eq!(info.guarantee, Guarantee::Global);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClockInfo {
    /// The name the clock is selected by, protection included
    /// (`tsc@preempt`, `global:mono`).
    pub name: String,
    /// Ticks per second; `None` when ticks are not time (`counter`).
    pub frequency_hz: Option<u64>,
    /// Whether one tick is one nanosecond.
    pub ticks_are_ns: bool,
    /// How far readings are ordered.
    pub guarantee: Guarantee,
    /// The nominal resolution of one reading, in nanoseconds
    /// (`clock_getres` for the POSIX clocks, one tick for counters); `None`
    /// when ticks are not time.
    pub precision_ns: Option<f64>,
    /// How ticks convert to nanoseconds; `None` when they do not (`counter`).
    pub conversion: Option<TickConversion>,
}

impl ClockInfo {
    /// Nanoseconds in `ticks`, or `None` for a clock whose ticks are not time.
    pub fn ticks_to_ns(&self, ticks: u64) -> Option<u64> {
        self.conversion.map(|c| c.ticks_to_ns(ticks))
    }

    /// Info for a source whose ticks are nanoseconds: what a custom clock
    /// that counts nanoseconds returns from [`Clock::info`](crate::Clock::info).
    ///
    /// ```
    /// use ringtrace_clock::{ClockInfo, Guarantee};
    /// let info = ClockInfo::nanosecond("sim-time", Guarantee::Global, 1.0);
    /// assert_eq!(info.ticks_to_ns(1500), Some(1500));
    /// ```
    pub fn nanosecond(name: &str, guarantee: Guarantee, precision_ns: f64) -> ClockInfo {
        ClockInfo {
            name: name.to_owned(),
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee,
            precision_ns: Some(precision_ns),
            conversion: Some(TickConversion::NANOSECONDS),
        }
    }

    /// Info for a counter ticking at `frequency_hz` (at least 1): what a
    /// custom clock that counts cycles or ticks returns.
    ///
    /// ```
    /// use ringtrace_clock::{ClockInfo, Guarantee};
    /// let info = ClockInfo::counter("board-timer", Guarantee::PerCpu, 32_768);
    /// assert_eq!(info.ticks_to_ns(32_768), Some(1_000_000_000));
    /// ```
    pub fn counter(name: &str, guarantee: Guarantee, frequency_hz: u64) -> ClockInfo {
        let conversion = TickConversion::from_frequency(frequency_hz);
        ClockInfo {
            name: name.to_owned(),
            frequency_hz: Some(frequency_hz),
            ticks_are_ns: frequency_hz == 1_000_000_000,
            guarantee,
            precision_ns: Some(1e9 / frequency_hz.max(1) as f64),
            conversion,
        }
    }
}
