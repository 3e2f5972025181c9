//! The debug_preempt patch: what DEBUG_PREEMPT's check costs per call, on its two early
//! exits.
//!
//! The model follows `check_preemption_disabled()` of lib/smp_processor_id.c
//! as of v6.2 (January 2023, the patch's date), called by
//! `debug_smp_processor_id()` and `__this_cpu_preempt_check()`:
//!
//! ```text
//! this_cpu = raw_smp_processor_id();
//! if (likely(preempt_count())) goto out;   // the fast path
//! if (irqs_disabled()) goto out;           // the irqs-disabled path
//! if (current->nr_cpus_allowed == 1) goto out;
//! if (current->migration_disabled) goto out;
//! if (system_state < SYSTEM_SCHEDULING) goto out;
//! preempt_disable_notrace(); ... printk, dump_stack ...
//! preempt_enable_no_resched_notrace();
//! out: return this_cpu;
//! ```
//!
//! Here `raw_smp_processor_id()` is the rseq `cpu_id` read
//! (`ringtrace_ring::cpu::current_cpu`), `preempt_count()` the emulation's
//! per-thread count, `irqs_disabled()` the emulation's (the soft irq mask,
//! or the hard one). The affinity, migration-disable and boot-state exits
//! have no userspace state to read and are left out: they come after the
//! two exits measured. The report is a counted violation instead of a
//! printk.
//!
//! [`debug_smp_processor_id`], [`this_cpu_preempt_check`] and the
//! unchecked [`raw_smp_processor_id`] are `#[inline(never)]` functions
//! without arguments, so that their instructions can be counted from the
//! binary. A check's cost is, per round, ns per call of
//! `debug_smp_processor_id()` minus ns per call of `raw_smp_processor_id()`
//! in the same state: with the preempt count at 1 (the fast path), and with
//! it at 0 and the soft irq mask set (the irqs-disabled path).
//!
//! A loop share is kept only with its loop named ([`LOOP_WORK`]): the
//! share depends on the work per increment, which the patch's hackbench
//! figure does not give.

use crate::code_size::CodeSizeError;
use crate::finding::{Finding, Verdict};
use crate::spread::{ns_per, paired, Paired};
use ringtrace_clock::emulation::{self, preempt, soft_irq};
use ringtrace_tracepoint::EventCounters;
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which exit of `check_preemption_disabled()` a call took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exit {
    /// `preempt_count()` non-zero.
    PreemptCount,
    /// Preempt count 0, irqs disabled.
    IrqsDisabled,
    /// Neither: a preemptible use, counted as a violation.
    Violation,
}

/// Preemptible uses found, over all threads.
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

/// Preemptible uses found so far (the kernel's "BUG: using
/// smp_processor_id() in preemptible code"), over all threads.
pub fn violations() -> u64 {
    // Relaxed: a statistic.
    VIOLATIONS.load(Ordering::Relaxed)
}

/// `check_preemption_disabled()`: the CPU, and the exit taken.
#[inline(always)]
fn check_preemption_disabled() -> (usize, Exit) {
    let this_cpu = ringtrace_ring::cpu::current_cpu();
    if preempt::preempt_count() != 0 {
        return (this_cpu, Exit::PreemptCount);
    }
    if emulation::irqs_disabled() {
        return (this_cpu, Exit::IrqsDisabled);
    }
    preemptible_use();
    (this_cpu, Exit::Violation)
}

/// The report: counted, under preempt_disable_notrace as the kernel's is
/// (to avoid recursion).
#[cold]
#[inline(never)]
fn preemptible_use() {
    preempt::preempt_disable_notrace();
    // Relaxed: a statistic.
    VIOLATIONS.fetch_add(1, Ordering::Relaxed);
    preempt::preempt_enable_notrace();
}

/// `debug_smp_processor_id()`: the CPU, checked.
#[inline(never)]
pub fn debug_smp_processor_id() -> usize {
    check_preemption_disabled().0
}

/// `__this_cpu_preempt_check()`: the check every `__this_cpu_*` operation
/// makes under DEBUG_PREEMPT.
#[inline(never)]
pub fn this_cpu_preempt_check() {
    black_box(check_preemption_disabled().0);
}

/// `raw_smp_processor_id()`: the CPU, unchecked (the reference).
#[inline(never)]
pub fn raw_smp_processor_id() -> usize {
    ringtrace_ring::cpu::current_cpu()
}

/// Instructions one check executes on each exit: a probe making one
/// checked call in that state, minus the same probe making the unchecked
/// call (counted by single-stepping, `crate::code_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CheckInstructions {
    /// On the preempt-count exit.
    pub fast_path: i64,
    /// On the irqs-disabled exit.
    pub irqs_disabled_path: i64,
    /// The unchecked `raw_smp_processor_id()` call, for scale.
    pub unchecked: u64,
}

#[inline(never)]
fn probe_fast_checked() {
    preempt::preempt_disable_notrace();
    black_box(debug_smp_processor_id());
    preempt::preempt_enable_notrace();
}

#[inline(never)]
fn probe_fast_unchecked() {
    preempt::preempt_disable_notrace();
    black_box(raw_smp_processor_id());
    preempt::preempt_enable_notrace();
}

#[inline(never)]
fn probe_irqs_checked() {
    let flags = soft_irq::save();
    black_box(debug_smp_processor_id());
    soft_irq::restore(flags);
}

#[inline(never)]
fn probe_irqs_unchecked() {
    let flags = soft_irq::save();
    black_box(raw_smp_processor_id());
    soft_irq::restore(flags);
}

#[inline(never)]
fn probe_raw() {
    black_box(raw_smp_processor_id());
}

/// Counts [`CheckInstructions`]; an error says why it cannot here (not
/// x86_64 Linux, ptrace refused).
pub fn check_instructions() -> Result<CheckInstructions, CodeSizeError> {
    use crate::code_size::count_instructions;
    let count = count_instructions;
    let diff = |a: u64, b: u64| a as i64 - b as i64;
    Ok(CheckInstructions {
        fast_path: diff(count(probe_fast_checked)?, count(probe_fast_unchecked)?),
        irqs_disabled_path: diff(count(probe_irqs_checked)?, count(probe_irqs_unchecked)?),
        // Less the probe's own `ret`.
        unchecked: count(probe_raw)?.saturating_sub(1),
    })
}

/// The work per increment of the loop whose share is reported.
pub const LOOP_WORK: &str = "eight dependent 64-bit multiply-adds and one this_cpu_inc per \
     iteration, preemption disabled";

/// The debug_preempt patch: the check's cost per call on both exits, and one loop's share.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DebugPreempt {
    /// ns per call, preempt count 1: a = `raw_smp_processor_id()`, b =
    /// `debug_smp_processor_id()`; `fast_path.diff` is the check's cost.
    pub fast_path: Paired,
    /// ns per call, preempt count 0 and irqs soft-disabled: a and b as in
    /// `fast_path`.
    pub irqs_disabled_path: Paired,
    /// The TSC frequency used for cycles, GHz (`None`: no TSC).
    pub tsc_ghz: Option<f64>,
    /// Violations counted during the timed runs (0: both exits taken).
    pub violations: u64,
    /// Instructions per check on each exit, or why not counted.
    pub instructions: Result<CheckInstructions, String>,
    /// The loop the share is for ([`LOOP_WORK`]).
    pub loop_work: String,
    /// ns per iteration of that loop: a = unchecked, b = checked.
    pub ns: Paired,
    /// The check's share of that loop at the median ratio, `1 - 1/ratio`:
    /// for this loop only.
    pub share: f64,
    /// The patch's figure: about 10% of hackbench (another workload).
    pub patch_share: f64,
    /// The verdict's rule held.
    pub reproduced: bool,
}

/// The rule [`finding`] applies.
pub const RULE: &str = "reproduced when the check adds instructions on both the \
     preempt-count and the irqs-disabled exit (counted exactly by single-stepping) and its \
     cost per call (checked minus unchecked CPU-id read, per round) has p10 above 0 on at \
     least one exit; where instructions cannot be counted, when that cost has p10 above 0 on \
     both exits; not measurable without rounds. A few instructions on a predicted branch can \
     overlap the call around them and time at 0 ns on a wide core, which is why time on \
     both exits is not required";

/// The method, in one phrase.
pub const METHOD: &str = "paired rounds of debug_smp_processor_id() against \
     raw_smp_processor_id() (lib/smp_processor_id.c, v6.2), preempt count 1, then 0 with \
     the soft irq mask set";

/// The verdict of [`RULE`].
pub fn verdict(fast: &Paired, irqs: &Paired, instructions: Option<&CheckInstructions>) -> Verdict {
    let measured = |p: &Paired| p.rounds > 0 && p.diff.p10.is_finite() && p.a.p50 > 0.0;
    if !measured(fast) || !measured(irqs) {
        return Verdict::NotMeasurable("no timed rounds".into());
    }
    let costs = |p: &Paired| p.diff.p10 > 0.0;
    Verdict::from_bool(match instructions {
        Some(i) => i.fast_path > 0 && i.irqs_disabled_path > 0 && (costs(fast) || costs(irqs)),
        None => costs(fast) && costs(irqs),
    })
}

/// The loop of [`LOOP_WORK`], `iters` iterations; ns per iteration.
#[inline(never)]
fn counter_loop<const CHECKED: bool>(counters: &EventCounters<4>, iters: u64) -> f64 {
    let t = std::time::Instant::now();
    let mut x = 1u64;
    for n in 0..iters {
        for _ in 0..8 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        if CHECKED {
            this_cpu_preempt_check();
        }
        counters.this_cpu_inc(black_box((n & 3) as usize));
    }
    black_box(x);
    t.elapsed().as_nanos() as f64 / iters.max(1) as f64
}

/// ns per call of the checked CPU-id read against the unchecked one, in
/// paired rounds, in whatever state the caller set.
fn checked_against_raw(rounds: usize, iters: u64) -> Paired {
    paired(
        rounds,
        || {
            ns_per(iters, || {
                black_box(raw_smp_processor_id());
            })
        },
        || {
            ns_per(iters, || {
                black_box(debug_smp_processor_id());
            })
        },
    )
}

/// Measures the debug_preempt patch over `rounds` rounds of `iters` calls (or loop
/// iterations) a side.
pub fn debug_preempt(rounds: usize, iters: u64) -> DebugPreempt {
    let before = violations();
    preempt::preempt_disable_notrace();
    let fast_path = checked_against_raw(rounds, iters);
    let counters = EventCounters::new(["a", "b", "c", "d"]);
    let ns = paired(
        rounds,
        || counter_loop::<false>(&counters, iters),
        || counter_loop::<true>(&counters, iters),
    );
    preempt::preempt_enable_notrace();
    let flags = soft_irq::save();
    let irqs_disabled_path = checked_against_raw(rounds, iters);
    soft_irq::restore(flags);
    let share = if ns.ratio.p50 > 0.0 {
        1.0 - 1.0 / ns.ratio.p50
    } else {
        0.0
    };
    let instructions = check_instructions().map_err(|e| e.to_string());
    let mut d = DebugPreempt {
        reproduced: false,
        fast_path,
        irqs_disabled_path,
        tsc_ghz: super::tsc_ghz(),
        violations: violations() - before,
        instructions,
        loop_work: LOOP_WORK.to_owned(),
        ns,
        share,
        patch_share: 0.10,
    };
    d.reproduced = finding(&d).verdict == Verdict::Reproduced;
    d
}

/// The debug_preempt finding.
pub fn finding(d: &DebugPreempt) -> Finding {
    let cost = |p: &Paired| {
        let cycles = d.tsc_ghz.map_or(String::new(), |ghz| {
            format!(
                " = {} TSC cycles",
                super::spread_text(&super::scaled(&p.diff, ghz), 1)
            )
        });
        format!("{} ns{cycles}", super::spread_text(&p.diff, 2))
    };
    let instructions = match &d.instructions {
        Ok(i) => format!(
            "; {} and {} instructions per check (unchecked read {})",
            i.fast_path, i.irqs_disabled_path, i.unchecked
        ),
        Err(e) => format!("; instructions not counted: {e}"),
    };
    let ghz = d
        .tsc_ghz
        .map_or("no TSC".to_owned(), |g| format!("TSC {g:.2} GHz"));
    Finding {
        ours: format!(
            "cost per check: preempt-count exit {}, irqs-disabled exit {} ({ghz}; unchecked \
             read {} ns{instructions}); share {:.0}% of a loop of {} (ratio {}), not comparable with the \
             patch's 10% of hackbench",
            cost(&d.fast_path),
            cost(&d.irqs_disabled_path),
            super::spread_text(&d.fast_path.a, 2),
            d.share * 100.0,
            d.loop_work,
            super::spread_text(&d.ns.ratio, 2),
        ),
        method: METHOD.to_owned(),
        rule: RULE.to_owned(),
        verdict: verdict(&d.fast_path, &d.irqs_disabled_path, d.instructions.as_ref().ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(a: &[f64], b: &[f64]) -> Paired {
        Paired::from_rounds(a.to_vec(), b.to_vec())
    }

    const COUNTED: CheckInstructions = CheckInstructions {
        fast_path: 8,
        irqs_disabled_path: 13,
        unchecked: 16,
    };

    #[test]
    fn rule_reproduces_when_both_exits_cost() {
        let p = rounds(&[1.0, 1.1, 1.0], &[2.0, 2.1, 2.2]);
        assert_eq!(verdict(&p, &p, None), Verdict::Reproduced);
        assert_eq!(verdict(&p, &p, Some(&COUNTED)), Verdict::Reproduced);
    }

    #[test]
    fn rule_with_instructions_counted_needs_time_on_one_exit_only() {
        let costs = rounds(&[1.0, 1.1, 1.0], &[2.0, 2.1, 2.2]);
        let free = rounds(&[1.0, 1.1, 1.0], &[0.9, 1.2, 1.0]);
        assert_eq!(verdict(&costs, &free, None), Verdict::NotReproduced);
        assert_eq!(verdict(&free, &costs, Some(&COUNTED)), Verdict::Reproduced);
        assert_eq!(
            verdict(&free, &free, Some(&COUNTED)),
            Verdict::NotReproduced
        );
        let no_instructions = CheckInstructions {
            fast_path: 0,
            ..COUNTED
        };
        assert_eq!(
            verdict(&costs, &costs, Some(&no_instructions)),
            Verdict::NotReproduced
        );
    }

    #[test]
    fn rule_is_not_measurable_without_rounds() {
        let p = rounds(&[1.0], &[2.0]);
        assert!(matches!(
            verdict(&p, &rounds(&[], &[]), Some(&COUNTED)),
            Verdict::NotMeasurable(_)
        ));
    }

    #[test]
    fn check_leaves_at_the_preempt_count_when_preemption_is_off() {
        preempt::preempt_disable_notrace();
        let exit = check_preemption_disabled().1;
        preempt::preempt_enable_notrace();
        assert_eq!(exit, Exit::PreemptCount);
    }

    #[test]
    fn check_leaves_at_irqs_disabled_when_preemptible_with_irqs_off() {
        let flags = soft_irq::save();
        let exit = check_preemption_disabled().1;
        soft_irq::restore(flags);
        assert_eq!(exit, Exit::IrqsDisabled);
    }

    #[test]
    fn check_counts_a_violation_only_when_preemptible_with_irqs_on() {
        let before = violations();
        assert_eq!(check_preemption_disabled().1, Exit::Violation);
        assert!(violations() > before);
        // VIOLATIONS is process-wide: the fast exits are pinned by their
        // Exit above and by a run that must count none on this thread.
        preempt::preempt_disable_notrace();
        let on_fast = (0..100).map(|_| check_preemption_disabled().1);
        assert!(on_fast.into_iter().all(|e| e == Exit::PreemptCount));
        preempt::preempt_enable_notrace();
    }

    #[test]
    fn finding_names_the_loop_beside_the_share() {
        let d = debug_preempt(2, 1_000);
        let f = finding(&d);
        assert!(f.ours.contains(LOOP_WORK), "{}", f.ours);
        assert_eq!(f.rule, RULE);
    }
}
