//! What a pairs run is compared with: the kernel patch's own tables
//! ("tracing/preemptirq: Optimize disabled tracepoint overhead", which
//! makes the preemptirq tracepoints check their static key early), each
//! strategy's cost over `baseline`, and the verdict.

use super::{Method, Metrics, Pair};
use ringtrace_tracepoint::preemptirq::StrategyKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// One row of the kernel patch's x86-64 tables (Xeon Silver 4310, 6.16-rc2,
/// ns, `ktime_get_ns()` around one pair, nothing subtracted).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KernelRow {
    /// The kernel build the strategy stands for.
    pub build: &'static str,
    /// Average of the per-CPU averages.
    pub average: f64,
    /// Mean of the 1000 highest samples.
    pub max_avg: f64,
    /// Median of the per-CPU medians.
    pub median: f64,
    /// The 99th percentile, from a separate single-CPU run.
    pub percentile: f64,
}

/// The kernel patch's x86-64 figures for `pair` under `strategy`; `None`
/// for irq save/restore, which the patch's tables do not have.
pub fn kernel_x86_64(pair: Pair, strategy: StrategyKind) -> Option<KernelRow> {
    let row = |build, average, max_avg, median, percentile| KernelRow {
        build,
        average,
        max_avg,
        median,
        percentile,
    };
    Some(match (pair, strategy) {
        (Pair::Irq, StrategyKind::Baseline) => row("6.16.0-rc2-master", 28.0, 5587.0, 29.0, 23.0),
        (Pair::Irq, StrategyKind::CallAlways) => {
            row("6.16.0-rc2-master-trace", 46.0, 7895.0, 48.0, 32.0)
        }
        (Pair::Irq, StrategyKind::EarlyKey) => {
            row("6.16.0-rc2-patched-trace", 30.0, 6030.0, 31.0, 27.0)
        }
        (Pair::Preempt, StrategyKind::Baseline) => {
            row("6.16.0-rc2-master", 26.0, 5748.0, 27.0, 20.0)
        }
        (Pair::Preempt, StrategyKind::CallAlways) => {
            row("6.16.0-rc2-master-trace", 45.0, 7526.0, 48.0, 26.0)
        }
        (Pair::Preempt, StrategyKind::EarlyKey) => {
            row("6.16.0-rc2-patched-trace", 27.0, 5479.0, 27.0, 21.0)
        }
        (Pair::IrqSave, _) => return None,
    })
}

/// A strategy's cost over `baseline` for one pair, in ns per pair, beside
/// the kernel patch's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Delta {
    /// Difference of the averages.
    pub average_ns: f64,
    /// Difference of the trimmed means.
    pub trimmed_mean_ns: f64,
    /// Difference of the medians; `None` when either is below resolution.
    pub median_ns: Option<f64>,
    /// The kernel patch's difference of averages (x86-64).
    pub kernel_average_ns: Option<f64>,
    /// The kernel patch's difference of medians (x86-64).
    pub kernel_median_ns: Option<f64>,
}

/// `call-always` and `early-key` minus `baseline`, per pair:
/// pair -> strategy -> delta.
pub type Deltas = BTreeMap<&'static str, BTreeMap<&'static str, Delta>>;

/// The table of a run: pair -> strategy -> metrics.
pub(super) type Table = BTreeMap<&'static str, BTreeMap<&'static str, Metrics>>;

fn get(table: &Table, pair: Pair, strategy: StrategyKind) -> Option<&Metrics> {
    table.get(pair.key()).and_then(|p| p.get(strategy.name()))
}

pub(super) fn deltas(table: &Table) -> Deltas {
    let mut out = Deltas::new();
    for pair in Pair::ALL {
        let Some(base) = get(table, pair, StrategyKind::Baseline) else {
            continue;
        };
        let kernel_base = kernel_x86_64(pair, StrategyKind::Baseline);
        for strategy in [StrategyKind::CallAlways, StrategyKind::EarlyKey] {
            let Some(m) = get(table, pair, strategy) else {
                continue;
            };
            let kernel = kernel_x86_64(pair, strategy).zip(kernel_base);
            let delta = Delta {
                average_ns: m.average - base.average,
                trimmed_mean_ns: m.trimmed_mean - base.trimmed_mean,
                median_ns: m
                    .median_resolved()
                    .zip(base.median_resolved())
                    .map(|(a, b)| a - b),
                kernel_average_ns: kernel.map(|(k, b)| k.average - b.average),
                kernel_median_ns: kernel.map(|(k, b)| k.median - b.median),
            };
            out.entry(pair.key())
                .or_default()
                .insert(strategy.name(), delta);
        }
    }
    out
}

/// `call-always` is clearly above `early-key` when its median exceeds
/// early-key's by at least this share of early-key's median (and by at
/// least the resolution).
pub const CLEARLY_ABOVE: f64 = 0.10;

/// `early-key` is within this share of `baseline` (both ways).
pub const WITHIN: f64 = 0.05;

/// The fewest samples of each strategy a pair's answers rest on: a median
/// of fewer says nothing of the spread, and answers neither claim.
pub const MIN_SAMPLES: u64 = 100;

/// One pair's verdict, with the medians behind it (ns per pair).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairVerdict {
    /// `baseline`'s median.
    pub baseline_ns: f64,
    /// `call-always`'s median.
    pub call_always_ns: f64,
    /// `early-key`'s median.
    pub early_key_ns: f64,
    /// The smallest resolved median.
    pub resolution_ns: f64,
    /// Whether all three medians are resolved; if not, both answers are
    /// `false`.
    pub resolved: bool,
    /// Whether each of the three has at least [`MIN_SAMPLES`] samples; if
    /// not, both answers are `false`.
    pub enough_samples: bool,
    /// `call-always` minus `early-key`.
    pub call_minus_early_ns: f64,
    /// `early-key` over `baseline`.
    pub early_over_baseline: f64,
    /// The difference is at least [`CLEARLY_ABOVE`] of early-key's median
    /// and at least the resolution.
    pub call_always_clearly_above_early_key: bool,
    /// The ratio is within 1 ± [`WITHIN`].
    pub early_key_within_5pct_of_baseline: bool,
}

/// The two claims of the kernel patch, checked on this run's medians (the
/// batched method's are the ones that resolve a soft pair).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The method whose medians were compared.
    pub method: Method,
    /// `call-always` is clearly above `early-key` for every pair.
    pub call_always_clearly_above_early_key: bool,
    /// `early-key` is within 5% of `baseline` for every pair.
    pub early_key_within_5pct_of_baseline: bool,
    /// Per pair, the numbers behind the two answers.
    pub pairs: BTreeMap<&'static str, PairVerdict>,
}

pub(super) fn verdict(table: &Table, method: Method) -> Verdict {
    let mut pairs = BTreeMap::new();
    for pair in Pair::ALL {
        let (Some(b), Some(c), Some(e)) = (
            get(table, pair, StrategyKind::Baseline),
            get(table, pair, StrategyKind::CallAlways),
            get(table, pair, StrategyKind::EarlyKey),
        ) else {
            continue;
        };
        let resolved = [b, c, e].iter().all(|m| m.median_resolved().is_some());
        let enough_samples = [b, c, e].iter().all(|m| m.samples >= MIN_SAMPLES);
        let answers = resolved && enough_samples;
        let resolution = b.resolution_ns.max(c.resolution_ns).max(e.resolution_ns);
        let diff = c.median - e.median;
        let ratio = if b.median > 0.0 {
            e.median / b.median
        } else {
            f64::INFINITY
        };
        pairs.insert(
            pair.key(),
            PairVerdict {
                baseline_ns: b.median,
                call_always_ns: c.median,
                early_key_ns: e.median,
                resolution_ns: resolution,
                resolved,
                enough_samples,
                call_minus_early_ns: diff,
                early_over_baseline: ratio,
                call_always_clearly_above_early_key: answers
                    && diff >= resolution
                    && diff >= CLEARLY_ABOVE * e.median,
                early_key_within_5pct_of_baseline: answers && (ratio - 1.0).abs() <= WITHIN,
            },
        );
    }
    Verdict {
        method,
        call_always_clearly_above_early_key: !pairs.is_empty()
            && pairs
                .values()
                .all(|p| p.call_always_clearly_above_early_key),
        early_key_within_5pct_of_baseline: !pairs.is_empty()
            && pairs.values().all(|p| p.early_key_within_5pct_of_baseline),
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(median: f64, average: f64) -> Metrics {
        Metrics {
            average,
            max_avg: average * 10.0,
            median,
            percentile: median * 2.0,
            trimmed_mean: average,
            trimmed_mean_se: 0.01,
            outliers: 0,
            samples: 100,
            resolution_ns: 0.1,
        }
    }

    fn table(base: f64, call: f64, early: f64) -> Table {
        let mut t = Table::new();
        for pair in Pair::ALL {
            let row = t.entry(pair.key()).or_default();
            row.insert("baseline", metrics(base, base));
            row.insert("call-always", metrics(call, call + 1.0));
            row.insert("early-key", metrics(early, early));
        }
        t
    }

    #[test]
    fn the_kernel_deltas_are_the_patch_s_x86_64_differences() {
        let d = deltas(&table(1.0, 3.0, 1.02));
        assert_eq!(d["irq"]["call-always"].kernel_average_ns, Some(18.0));
        assert_eq!(d["irq"]["early-key"].kernel_average_ns, Some(2.0));
        assert_eq!(d["preempt"]["call-always"].kernel_average_ns, Some(19.0));
        assert_eq!(d["preempt"]["early-key"].kernel_average_ns, Some(1.0));
        assert_eq!(d["preempt"]["early-key"].kernel_median_ns, Some(0.0));
        assert_eq!(d["irq_save"]["early-key"].kernel_average_ns, None);
        assert_eq!(d["irq"]["call-always"].average_ns, 3.0);
        assert_eq!(d["irq"]["call-always"].median_ns, Some(2.0));
    }

    #[test]
    fn a_strategy_of_too_few_samples_answers_neither_claim() {
        let mut t = table(1.0, 3.0, 1.02);
        for row in t.values_mut() {
            row.get_mut("early-key").unwrap().samples = MIN_SAMPLES - 1;
        }
        let v = verdict(&t, Method::Batched);
        assert!(v.pairs.values().all(|p| !p.enough_samples && p.resolved));
        assert!(!v.call_always_clearly_above_early_key);
        assert!(!v.early_key_within_5pct_of_baseline);
    }

    #[test]
    fn the_verdict_needs_every_pair_and_resolved_medians() {
        let v = verdict(&table(1.0, 3.0, 1.02), Method::Batched);
        assert!(v.call_always_clearly_above_early_key);
        assert!(v.early_key_within_5pct_of_baseline);
        let v = verdict(&table(1.0, 1.05, 1.2), Method::Batched);
        assert!(!v.call_always_clearly_above_early_key);
        assert!(!v.early_key_within_5pct_of_baseline);
        assert!((v.pairs["irq"].early_over_baseline - 1.2).abs() < 1e-12);
        // Medians under the resolution answer neither claim.
        let v = verdict(&table(0.05, 0.09, 0.05), Method::Single);
        assert!(!v.pairs["irq"].resolved);
        assert!(!v.early_key_within_5pct_of_baseline);
        assert_eq!(
            deltas(&table(0.05, 0.09, 0.05))["irq"]["call-always"].median_ns,
            None
        );
    }
}
