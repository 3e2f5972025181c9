//! The `clock_monotonic` property: whatever the clock does, the ring's
//! time never goes back, is exact where the clock was monotonic, and every
//! correction is counted.
//!
//! The script puts a clock step before every operation: readings step
//! back, repeat, jump past TIME_EXTEND's 58 bits, wrap past `u64::MAX`, or
//! come out one tick period ahead as `sched_clock()` did when a tick landed
//! between its loads of the conversion data. The operations nest writes,
//! leave a reservation open on one CPU buffer while writing on another (a
//! CPU switch between reserve and commit), discard, flush and fixup. The
//! [`harness`] checks each reservation's timestamp against
//! the reading, `ts_fixups` against the readings that went back, and every
//! reader (event, page, iterator, merged, peek) against those timestamps.
//!
//! It also parses the script's clock name and converts its tick counts:
//! [`check_clock_name`] and [`check_conversion`].
//!
//! ```
//! use ringtrace_check::clock_monotonic;
//! clock_monotonic::check_clock_name("global:mono@irq-soft").unwrap();
//! clock_monotonic::check_clock_name("tsc@@").unwrap(); // refused, with a reason
//! clock_monotonic::check_conversion(2_400_000_000, 10, 5).unwrap();
//! ```

use crate::harness::{self, Op, Outcome, Setup};
use crate::script_clock::ClockStep;
use crate::{ensure, Violation};
use arbitrary::{Arbitrary, Unstructured};
use ringtrace_clock::{ClockSpec, TickConversion};

/// A `clock_monotonic` script.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct ClockScript {
    /// The ring.
    pub setup: Setup,
    /// The clock's first reading.
    pub start: u64,
    /// Clock steps, each followed by an operation.
    pub ops: Vec<(ClockStep, Op)>,
    /// A clock name to parse.
    pub name: String,
    /// A frequency and two tick counts to convert.
    pub conversion: (u64, u64, u64),
}

/// Decodes `bytes` as a [`ClockScript`] and checks it. Any bytes are a
/// script (missing bytes read as zeros).
pub fn check(bytes: &[u8]) -> Result<Outcome, Violation> {
    let mut u = Unstructured::new(bytes);
    let setup = Setup::arbitrary(&mut u).unwrap_or(Setup::SMALLEST);
    let start = u64::arbitrary(&mut u).unwrap_or(1);
    let conversion = <(u64, u64, u64)>::arbitrary(&mut u).unwrap_or((1, 0, 0));
    // A short name: its length, then its bytes.
    let len = usize::from(u8::arbitrary(&mut u).unwrap_or(0) % 48);
    let name = String::from_utf8_lossy(u.bytes(len).unwrap_or_default()).into_owned();
    let ops = crate::take_ops(&mut u, crate::MAX_OPS / 2);
    run_script(&ClockScript {
        setup,
        start,
        ops,
        name,
        conversion,
    })
}

/// Runs a decoded script.
pub fn run_script(script: &ClockScript) -> Result<Outcome, Violation> {
    check_clock_name(&script.name)?;
    let (hz, a, b) = script.conversion;
    check_conversion(hz, a, b)?;
    let ops = &script.ops[..script.ops.len().min(crate::MAX_OPS / 2)];
    let steps = ops.iter().flat_map(|&(step, op)| [Op::Clock(step), op]);
    let mut outcome = harness::run(script.setup, script.start, steps)?;
    outcome.ops = ops.len();
    Ok(outcome)
}

/// Parses `name` as a clock name: an accepted name prints back as a name
/// that parses to the same clock; a refused one gets an error that quotes
/// it and says what is wrong. Never panics.
pub fn check_clock_name(name: &str) -> Result<(), Violation> {
    match name.parse::<ClockSpec>() {
        Ok(spec) => {
            let printed = spec.to_string();
            let again = printed.parse::<ClockSpec>();
            ensure(
                again.as_ref() == Ok(&spec),
                "a clock name does not round-trip",
                || {
                    format!("{name:?} parsed as {spec:?}, printed as {printed:?}, which parses as {again:?}")
                },
            )
        }
        Err(e) => {
            let message = e.to_string();
            ensure(
                !message.trim().is_empty(),
                "a clock name was refused without a reason",
                || format!("{name:?}"),
            )
        }
    }
}

/// Converts ticks of a `hz` counter: no conversion for 0 Hz or beyond the
/// fixed point's range, and otherwise one that is monotonic in ticks, maps
/// 0 to 0, and makes `hz` ticks one second to within rounding.
pub fn check_conversion(hz: u64, a: u64, b: u64) -> Result<(), Violation> {
    let Some(c) = TickConversion::from_frequency(hz) else {
        // Refused: 0 Hz, or a tick so short that mult rounds to 0.
        return ensure(
            hz == 0 || hz.div_ceil(2) > 1_000_000_000u64 << 32,
            "a usable frequency had no conversion",
            || format!("{hz} Hz"),
        );
    };
    ensure(
        c.frequency_hz() == hz,
        "a conversion forgot its frequency",
        || format!("{hz} Hz became {}", c.frequency_hz()),
    )?;
    ensure(c.ticks_to_ns(0) == 0, "zero ticks is not zero ns", || {
        format!("{hz} Hz")
    })?;
    let (lo, hi) = (a.min(b), a.max(b));
    ensure(
        c.ticks_to_ns(lo) <= c.ticks_to_ns(hi),
        "a conversion went back",
        || {
            format!(
                "{hz} Hz: {lo} ticks -> {} ns, {hi} ticks -> {} ns",
                c.ticks_to_ns(lo),
                c.ticks_to_ns(hi)
            )
        },
    )?;
    let second = c.ticks_to_ns(hz);
    // mult is rounded to within 1/2 of 2^-32 ns per tick, so hz ticks are
    // off by at most hz / 2^33 ns, plus the final rounding.
    let bound = (hz >> 33) + 1;
    ensure(
        second.abs_diff(1_000_000_000) <= bound,
        "a second came out wrong",
        || format!("{hz} ticks of a {hz} Hz counter -> {second} ns (bound {bound} ns off)"),
    )
}
