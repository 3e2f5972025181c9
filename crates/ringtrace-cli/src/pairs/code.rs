//! What each strategy puts at a call site, counted from the binary rather
//! than timed (Peter Zijlstra's question on the preemptirq patch was code size): per
//! pair and strategy, the bytes of an `#[inline(never)]` function holding
//! exactly that one pair, minus an empty function's, and the instructions
//! it executes with every tracepoint off, minus the empty function's (its
//! `ret`). See [`crate::code_size`] for how both are read.
//!
//! The pairs use the soft irq mask, whose disable and enable are a few
//! inline instructions (the hard mask is a `pthread_sigmask` system call
//! that would swamp the difference). The out-of-line functions
//! `call-always` calls (and `early-key` calls only with a key on) are
//! symbols of their own: their bytes are not in a call site's, and are
//! listed apart ([`CodeSize::callees`]); their instructions, when called,
//! are in the count.

use super::{key_kind, KeyKind, Pair};
use crate::code_size::{self, CodeSizeError, Executable};
use ringtrace_tracepoint::preemptirq::{
    self, Baseline, CallAlways, EarlyKey, Soft, Strategy, StrategyKind,
};
use ringtrace_tracepoint::SourceLocation;
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::Location;

static IP: SourceLocation = SourceLocation {
    file: "ringtrace pairs code size",
    line: 0,
    column: 0,
};

/// The reference: a function with no body (its `ret`).
#[inline(never)]
fn no_pair() {}

#[inline(never)]
fn irq_pair<S: Strategy>() {
    preemptirq::local_irq_disable_at::<S, Soft>(&IP, Location::caller());
    preemptirq::local_irq_enable_at::<S, Soft>(&IP, Location::caller());
}

#[inline(never)]
fn irq_save_pair<S: Strategy>() {
    let flags = preemptirq::local_irq_save_at::<S, Soft>(&IP, Location::caller());
    preemptirq::local_irq_restore_at::<S, Soft>(flags, &IP, Location::caller());
}

#[inline(never)]
fn preempt_pair<S: Strategy>() {
    preemptirq::preempt_disable_at::<S>(&IP, Location::caller());
    preemptirq::preempt_enable_at::<S>(&IP, Location::caller());
}

fn by_strategy<S: Strategy>(pair: Pair) -> fn() {
    match pair {
        Pair::Irq => irq_pair::<S>,
        Pair::IrqSave => irq_save_pair::<S>,
        Pair::Preempt => preempt_pair::<S>,
    }
}

/// The one-pair function of `pair` under `strategy` (soft irq mask): what
/// [`code_size()`] measures, public so that a test or another table can
/// count it again.
///
/// ```no_run
/// use ringtrace_cli::code_size::count_instructions;
/// use ringtrace_cli::pairs::{one_pair_fn, Pair};
/// use ringtrace_tracepoint::preemptirq::StrategyKind;
/// let n = count_instructions(one_pair_fn(Pair::Irq, StrategyKind::EarlyKey))?;
/// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
/// ```
pub fn one_pair_fn(pair: Pair, strategy: StrategyKind) -> fn() {
    match strategy {
        StrategyKind::Baseline => by_strategy::<Baseline>(pair),
        StrategyKind::CallAlways => by_strategy::<CallAlways>(pair),
        StrategyKind::EarlyKey => by_strategy::<EarlyKey>(pair),
    }
}

/// One (pair, strategy)'s code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeRow {
    /// The one-pair function's symbol (mangled).
    pub symbol: String,
    /// Its size in bytes.
    pub function_bytes: u64,
    /// Bytes of one call site: `function_bytes` minus the empty function's.
    pub call_site_bytes: u64,
    /// Instructions executed by one pair with every tracepoint off, calls
    /// followed: the function's count minus the empty function's.
    pub instructions: u64,
}

/// An out-of-line function a strategy calls, with its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Callee {
    /// Its name in `ringtrace_tracepoint::preemptirq`.
    pub name: &'static str,
    /// Who calls it with every tracepoint off.
    pub called_by: &'static str,
    /// Its size in bytes (not in any call site's).
    pub bytes: u64,
}

/// The code-size table: per pair and strategy, bytes per call site and
/// instructions per pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CodeSize {
    /// `irq`, `irq_save`, `preempt` -> strategy -> code.
    pub pairs: BTreeMap<&'static str, BTreeMap<&'static str, CodeRow>>,
    /// Which key checks were compiled: `patched` or `atomic`.
    pub keys: KeyKind,
    /// The irq mask of the irq pairs (`soft`).
    pub irq_mask: &'static str,
    /// The empty function's bytes (its `ret` and no more), subtracted.
    pub empty_function_bytes: u64,
    /// The empty function's instructions, subtracted.
    pub empty_function_instructions: u64,
    /// The out-of-line functions, counted apart from the call sites.
    pub callees: Vec<Callee>,
}

impl CodeSize {
    /// The row of `pair` under `strategy`.
    pub fn row(&self, pair: Pair, strategy: StrategyKind) -> Option<&CodeRow> {
        self.pairs
            .get(pair.key())
            .and_then(|p| p.get(strategy.name()))
    }
}

/// Measures the code-size table from this binary: symbol sizes and
/// single-stepped instruction counts (well under a second). x86_64 Linux
/// only; elsewhere an error that says so.
///
/// ```no_run
/// use ringtrace_cli::pairs::{self, Pair};
/// use ringtrace_tracepoint::preemptirq::StrategyKind;
/// let code = pairs::code_size()?;
/// let early = code.row(Pair::Irq, StrategyKind::EarlyKey).unwrap();
/// let call = code.row(Pair::Irq, StrategyKind::CallAlways).unwrap();
/// assert!(early.instructions < call.instructions);
/// # Ok::<(), ringtrace_cli::code_size::CodeSizeError>(())
/// ```
pub fn code_size() -> Result<CodeSize, CodeSizeError> {
    let exe = Executable::open()?;
    let empty_function_bytes = exe.symbol_of(no_pair)?.size;
    let empty_function_instructions = code_size::count_instructions(no_pair)?;
    let mut pairs: BTreeMap<&'static str, BTreeMap<&'static str, CodeRow>> = BTreeMap::new();
    for pair in Pair::ALL {
        for strategy in StrategyKind::ALL {
            let f = one_pair_fn(pair, strategy);
            let symbol = exe.symbol_of(f)?;
            let instructions = code_size::count_instructions(f)?;
            pairs.entry(pair.key()).or_default().insert(
                strategy.name(),
                CodeRow {
                    call_site_bytes: symbol.size.saturating_sub(empty_function_bytes),
                    function_bytes: symbol.size,
                    symbol: symbol.name,
                    instructions: instructions.saturating_sub(empty_function_instructions),
                },
            );
        }
    }
    type Traced = fn(&'static SourceLocation, &'static Location<'static>);
    let callees: [(&'static str, &'static str, Traced); 6] = [
        (
            "trace_hardirqs_off",
            "call-always (irq, irq_save)",
            preemptirq::trace_hardirqs_off,
        ),
        (
            "trace_hardirqs_on",
            "call-always (irq, irq_save)",
            preemptirq::trace_hardirqs_on,
        ),
        (
            "preempt_count_add",
            "call-always (preempt)",
            preemptirq::preempt_count_add,
        ),
        (
            "preempt_count_sub",
            "call-always (preempt)",
            preemptirq::preempt_count_sub,
        ),
        (
            "preempt_latency_start",
            "preempt_count_add",
            preemptirq::preempt_latency_start,
        ),
        (
            "preempt_latency_stop",
            "preempt_count_sub",
            preemptirq::preempt_latency_stop,
        ),
    ];
    let callees = callees
        .into_iter()
        .map(|(name, called_by, f)| {
            Ok(Callee {
                name,
                called_by,
                bytes: exe.symbol_at(f as usize)?.size,
            })
        })
        .collect::<Result<Vec<_>, CodeSizeError>>()?;
    Ok(CodeSize {
        pairs,
        keys: key_kind(),
        irq_mask: "soft",
        empty_function_bytes,
        empty_function_instructions,
        callees,
    })
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn early_key_executes_fewer_instructions_than_call_always_for_every_pair() {
        let code = code_size().unwrap();
        for pair in Pair::ALL {
            let call = code.row(pair, StrategyKind::CallAlways).unwrap();
            let early = code.row(pair, StrategyKind::EarlyKey).unwrap();
            let base = code.row(pair, StrategyKind::Baseline).unwrap();
            assert!(
                early.instructions < call.instructions,
                "{pair:?}: early-key {} vs call-always {}",
                early.instructions,
                call.instructions
            );
            assert!(base.instructions <= early.instructions, "{pair:?}");
            assert!(base.call_site_bytes > 0, "{pair:?}: {base:?}");
        }
        assert!(
            code.callees.iter().all(|c| c.bytes > 0),
            "{:?}",
            code.callees
        );
    }

    #[test]
    fn counts_do_not_change_between_two_tables() {
        let a = code_size().unwrap();
        let b = code_size().unwrap();
        assert_eq!(a, b);
    }
}
