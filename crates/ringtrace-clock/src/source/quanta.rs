//! `quanta`: the quanta crate's clock, raw ticks scaled to ns on each read.

use crate::{ClockInfo, Guarantee};

/// [`quanta::Clock`]: its raw counter (the TSC where quanta trusts it,
/// `CLOCK_MONOTONIC` otherwise), scaled to nanoseconds on every read with
/// quanta's own calibration. It shows what that scaling costs on the write
/// path next to `tsc`, which defers it to the reader.
#[derive(Debug, Clone)]
pub struct QuantaClock {
    clock: quanta::Clock,
}

impl QuantaClock {
    /// A new quanta clock; quanta calibrates it here, not on the hot path.
    pub fn new() -> QuantaClock {
        QuantaClock {
            clock: quanta::Clock::new(),
        }
    }
}

impl Default for QuantaClock {
    fn default() -> Self {
        QuantaClock::new()
    }
}

impl crate::Clock for QuantaClock {
    #[inline]
    fn read(&self) -> u64 {
        self.clock.delta_as_nanos(0, self.clock.raw())
    }

    fn info(&self) -> ClockInfo {
        // quanta documents its raw value as not guaranteed monotonic across
        // CPUs; per CPU it is the TSC or CLOCK_MONOTONIC.
        ClockInfo::nanosecond("quanta", Guarantee::PerCpu, 1.0)
    }
}
