//! The properties ringtrace is fuzzed and property-tested against, in one
//! place, so that the cargo-fuzz targets (`fuzz/`, nightly, under
//! AddressSanitizer) and the proptest suites (`cargo test`, stable) check
//! exactly the same things.
//!
//! Each check takes raw bytes, decodes them into a script with
//! [`arbitrary`], runs the script, and returns what it did or the first
//! [`Violation`] found:
//!
//! - [`ring_ops::check`]: a sequence of reserve, write, write_at, stream,
//!   commit, abandon, forget (a writer that dies), fixup, read, read_page,
//!   iterate, peek, merged reads and flushes on a small ring, in either
//!   mode, against a plain model ([`model`]) of what must come out.
//! - [`clock_monotonic::check`]: the same ring driven by a scripted clock
//!   that steps back, repeats, jumps past the 26- and 58-bit deltas, wraps,
//!   and tears like `sched_clock()` under a tick; writes nest and switch
//!   CPU between reserve and commit. Every reader must see per-CPU time
//!   that never goes back, every timestamp exact where the clock was
//!   monotonic, and every correction counted in `ts_fixups`. It also
//!   parses arbitrary clock names and converts arbitrary tick counts.
//! - [`decode::check`]: arbitrary bytes as a page for `PageHeader`,
//!   `RecordCursor` and `PageBuf`: no panic, only typed errors, time that
//!   never goes back, payloads inside the page.
//! - [`recover::check`]: arbitrary bytes as a ring file for
//!   `ringtrace_ring::file::recover_bytes`: a typed error naming the file or
//!   a self-consistent (partial) recovery, never a panic.
//!
//! ```
//! // Any bytes are a script; a correct ring never violates the model.
//! let outcome = ringtrace_check::ring_ops::check(b"any bytes at all").unwrap();
//! assert!(outcome.ops <= ringtrace_check::MAX_OPS);
//! ```
//!
//! A failing input is a [`Violation`], never a panic in this crate: the
//! fuzz targets panic on it so that libFuzzer keeps the input, and the
//! proptest suites fail with its message.

pub mod clock_monotonic;
pub mod decode;
pub mod harness;
pub mod model;
pub mod recover;
pub mod ring_ops;
pub mod script_clock;

use std::fmt;

/// The most operations one script runs, so that every input is quick.
pub const MAX_OPS: usize = 400;

/// A property that did not hold: which one, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The property, in a few words ("time went back").
    pub property: &'static str,
    /// What was seen, with the values that break it.
    pub detail: String,
}

impl Violation {
    /// A violation of `property`, with `detail`.
    pub fn new(property: &'static str, detail: impl Into<String>) -> Violation {
        Violation {
            property,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

impl std::error::Error for Violation {}

/// `len` pseudo-random bytes from `seed` (xorshift): inputs for tests
/// and seed corpora that are the same on every run.
pub fn pseudo_random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Decodes items until the bytes run out (or `most` of them): unlike
/// `arbitrary`'s own `Vec`, which stops at the first "no more" byte, every
/// byte of a long input becomes part of a long script.
pub(crate) fn take_ops<T: for<'a> arbitrary::Arbitrary<'a>>(
    u: &mut arbitrary::Unstructured<'_>,
    most: usize,
) -> Vec<T> {
    let mut items = Vec::new();
    while !u.is_empty() && items.len() < most {
        match T::arbitrary(u) {
            Ok(item) => items.push(item),
            Err(_) => break,
        }
    }
    items
}

/// Fails with `property` and `detail` unless `cond` holds.
pub(crate) fn ensure(
    cond: bool,
    property: &'static str,
    detail: impl FnOnce() -> String,
) -> Result<(), Violation> {
    if cond {
        Ok(())
    } else {
        Err(Violation::new(property, detail()))
    }
}
