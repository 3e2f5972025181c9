//! The `ring_ops` property: any sequence of operations on a small ring, in
//! either mode, with pages of 64 to 256 bytes and one or two CPU buffers,
//! matches the [`model`](crate::model). The clock moves forward a little
//! before each reservation; [`clock_monotonic`](crate::clock_monotonic)
//! is where it misbehaves.
//!
//! ```
//! use ringtrace_check::harness::{Fill, Op, Setup};
//! let setup = Setup { overwrite: true, page_shift: 0, pages: 0, cpus: 0 };
//! let ops = [
//!     Op::Reserve { cpu: 0, len: 3, fill: Fill::Write },
//!     Op::Commit(0),
//!     Op::Read(0),
//! ];
//! let outcome = ringtrace_check::ring_ops::run(setup, &ops).unwrap();
//! assert_eq!((outcome.committed, outcome.read), (1, 1));
//! ```

use crate::harness::{self, Op, Outcome, Setup};
use crate::script_clock::ClockStep;
use crate::Violation;
use arbitrary::{Arbitrary, Unstructured};

/// A `ring_ops` script: the ring, then the operations.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct RingScript {
    /// The ring.
    pub setup: Setup,
    /// The operations, each preceded by a clock advance of 0 to 255 ticks
    /// (the first [`MAX_OPS`](crate::MAX_OPS)` / 2` run).
    pub ops: Vec<(u8, Op)>,
}

/// Decodes `bytes` as a [`RingScript`] and runs it. Any bytes are a
/// script (missing bytes read as zeros).
pub fn check(bytes: &[u8]) -> Result<Outcome, Violation> {
    let mut u = Unstructured::new(bytes);
    let setup = Setup::arbitrary(&mut u).unwrap_or(Setup::SMALLEST);
    let ops = crate::take_ops(&mut u, crate::MAX_OPS / 2);
    run_script(&RingScript { setup, ops })
}

/// Runs a decoded script.
pub fn run_script(script: &RingScript) -> Result<Outcome, Violation> {
    let ops = &script.ops[..script.ops.len().min(crate::MAX_OPS / 2)];
    let steps = ops.iter().flat_map(|&(tick, op)| {
        // Time moves forward between operations, so that timestamps are
        // distinct and their deltas are checked.
        [Op::Clock(ClockStep::Advance(u16::from(tick))), op]
    });
    let mut outcome = harness::run(script.setup, 1, steps)?;
    outcome.ops = ops.len();
    Ok(outcome)
}

/// Runs `ops` on a ring set up as `setup` says, the clock advancing by one
/// before each.
pub fn run(setup: Setup, ops: &[Op]) -> Result<Outcome, Violation> {
    run_script(&RingScript {
        setup,
        ops: ops.iter().map(|&op| (1, op)).collect(),
    })
}
