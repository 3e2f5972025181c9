//! The preemptirq patch's verdict, on the patch's own method: one pair per sample with
//! the timer read included, as the patch's tables were measured, judged on
//! trimmed means (with a 95% interval) and on medians where the timer
//! resolves them. The batched figures are shown beside it as the
//! resolution check, and the code size as Peter Zijlstra's question; neither
//! decides.
//!
//! Why the trimmed mean leads: a one-pair sample is a whole number of
//! timer steps (20 ns on a clock that counts in 20 ns), so its median moves
//! in steps and is below resolution for a pair cheaper than two steps. The
//! mean of such samples is not quantized: the reads fall at random phases
//! of the step, so a sample rounds up or down in proportion to the true
//! time, and the mean converges on it. Trimming 1% at each end removes the
//! preempted samples (and as many of the shortest) alike for every
//! strategy.
//!
//! Why 5% both ways: the same share of baseline separates "costs
//! something" from "costs nothing", so no difference can be both; it is
//! the bound of the existing batched verdict ([`super::WITHIN`]), about
//! 1.1 ns on a 22 ns sample here, which is above the 0.09 ns layout-level
//! differences the batched run resolves and below what one out-of-line
//! call adds (some 4 ns here, 18 ns in the kernel's `-master-trace`).
//! The interval is sampling error only; the 5% band is what the rule
//! allows for drift between one strategy's run and the next.

use super::{CodeSize, Method, Metrics, Pair, PairsResult, TRIM_PERCENT};
use crate::finding::{Finding, Verdict};
use ringtrace_tracepoint::preemptirq::StrategyKind;
use serde::Serialize;

/// `call-always` costs something when the 95% interval of its difference
/// from `baseline` lies above this share of `baseline`.
pub const ABOVE_SHARE: f64 = 0.05;

/// `early-key` costs nothing when the 95% interval of its difference from
/// `baseline` lies within ± this share of `baseline`.
pub const WITHIN_SHARE: f64 = 0.05;

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.96;

/// The rule, as printed beside the verdict.
///
/// ```
/// let rule = ringtrace_cli::pairs::finding_rule();
/// assert!(rule.contains("trimmed means") && rule.contains("95%"), "{rule}");
/// ```
pub fn finding_rule() -> String {
    format!(
        "on the single method (one pair per sample, timer read included), for every pair (irq, \
         irq_save, preempt): reproduced when call-always minus baseline, trimmed means, has its \
         95% interval above +{above:.0}% of baseline, and early-key minus baseline has its 95% \
         interval within ±{within:.0}% of baseline; where all three medians are resolved (2 \
         timer steps), the median differences must agree (above +{above:.0}%; within \
         ±{within:.0}%); not reproduced when a pair fails either; not measurable when the run \
         is not the single method, a figure is missing, or there are too few samples for an \
         interval. Intervals: over several rounds, Student's t on the rounds' differences; \
         never narrower than ±{Z95} standard errors of the difference (Tukey-McLaughlin \
         standard error of each {TRIM_PERCENT}%-trimmed mean, per CPU, combined); batched \
         medians and code size shown, not judged",
        above = ABOVE_SHARE * 100.0,
        within = WITHIN_SHARE * 100.0,
    )
}

/// One pair's figures under the rule, in ns per pair (timer read
/// included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct JudgedPair {
    /// `baseline`'s trimmed mean.
    pub baseline_ns: f64,
    /// `call-always` minus `baseline`, trimmed means.
    pub call_always_minus_baseline_ns: f64,
    /// Half the 95% interval of that difference.
    pub call_always_half_width_ns: f64,
    /// `early-key` minus `baseline`, trimmed means.
    pub early_key_minus_baseline_ns: f64,
    /// Half the 95% interval of that difference.
    pub early_key_half_width_ns: f64,
    /// The three medians (baseline, call-always, early-key), the mean over
    /// the rounds, when all are resolved in every round.
    pub medians: Option<[f64; 3]>,
    /// The rounds (single-method runs) behind the figures.
    pub rounds: usize,
    /// call-always's interval lies above +[`ABOVE_SHARE`] of baseline (and
    /// its median difference too, when resolved).
    pub call_always_above: bool,
    /// early-key's interval lies within ±[`WITHIN_SHARE`] of baseline (and
    /// its median difference too, when resolved).
    pub early_key_within: bool,
}

fn metrics(r: &PairsResult, pair: Pair, s: StrategyKind) -> Option<&Metrics> {
    r.pairs.get(pair.key()).and_then(|p| p.get(s.name()))
}

/// Half a 95% interval of the difference of two independent means.
fn half_width(a: &Metrics, b: &Metrics) -> f64 {
    Z95 * (a.trimmed_mean_se.powi(2) + b.trimmed_mean_se.powi(2)).sqrt()
}

/// One round's figures of one pair, ns per pair.
struct Round {
    base: f64,
    call: f64,
    early: f64,
    call_half: f64,
    early_half: f64,
    medians: Option<[f64; 3]>,
}

/// One round's figures of `pair`, or why there are none.
fn round(r: &PairsResult, pair: Pair) -> Result<Round, String> {
    let get = |s: StrategyKind| {
        metrics(r, pair, s)
            .ok_or_else(|| format!("{} under {} was not measured", pair.key(), s.name()))
    };
    let (b, c, e) = (
        get(StrategyKind::Baseline)?,
        get(StrategyKind::CallAlways)?,
        get(StrategyKind::EarlyKey)?,
    );
    if b.trimmed_mean.is_nan() || b.trimmed_mean <= 0.0 {
        return Err(format!(
            "{}'s baseline trimmed mean is {} ns, not a positive time",
            pair.key(),
            b.trimmed_mean
        ));
    }
    let (call_half, early_half) = (half_width(c, b), half_width(e, b));
    if !call_half.is_finite() || !early_half.is_finite() {
        return Err(format!(
            "{} has too few samples for an interval (2 per CPU at least)",
            pair.key()
        ));
    }
    let medians = match (
        b.median_resolved(),
        c.median_resolved(),
        e.median_resolved(),
    ) {
        (Some(mb), Some(mc), Some(me)) => Some([mb, mc, me]),
        _ => None,
    };
    Ok(Round {
        base: b.trimmed_mean,
        call: c.trimmed_mean - b.trimmed_mean,
        early: e.trimmed_mean - b.trimmed_mean,
        call_half,
        early_half,
        medians,
    })
}

/// Student's t for a two-sided 95% interval with `df` degrees of freedom
/// (1.96 past 30).
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(Z95)
}

/// The rule applied to one pair over the rounds, or why it cannot be.
///
/// Each difference is the mean of the rounds'. Its interval, with two
/// rounds or more, is Student's t on the rounds' differences (which holds
/// the drift of the machine from run to run), never narrower than the
/// sampling interval of the mean; with one round, the sampling interval.
fn judge(rounds: &[PairsResult], pair: Pair) -> Result<JudgedPair, String> {
    let rs = rounds
        .iter()
        .map(|r| round(r, pair))
        .collect::<Result<Vec<Round>, String>>()?;
    let n = rs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Round) -> f64| rs.iter().map(f).sum::<f64>() / n;
    let sampling =
        |f: &dyn Fn(&Round) -> f64| rs.iter().map(|r| f(r).powi(2)).sum::<f64>().sqrt() / n;
    let spread = |f: &dyn Fn(&Round) -> f64, m: f64| {
        if rs.len() < 2 {
            return 0.0;
        }
        let var = rs.iter().map(|r| (f(r) - m).powi(2)).sum::<f64>() / (n - 1.0);
        t95(rs.len() - 1) * var.sqrt() / n.sqrt()
    };
    let base = mean(&|r| r.base);
    let dc = mean(&|r| r.call);
    let de = mean(&|r| r.early);
    let hc = spread(&|r| r.call, dc).max(sampling(&|r| r.call_half));
    let he = spread(&|r| r.early, de).max(sampling(&|r| r.early_half));
    let medians = rs
        .iter()
        .map(|r| r.medians)
        .collect::<Option<Vec<[f64; 3]>>>()
        .map(|ms| {
            let m = |i: usize| ms.iter().map(|x| x[i]).sum::<f64>() / n;
            [m(0), m(1), m(2)]
        });
    let median_above = medians.is_none_or(|[mb, mc, _]| mc - mb > ABOVE_SHARE * mb);
    let median_within = medians.is_none_or(|[mb, _, me]| (me - mb).abs() <= WITHIN_SHARE * mb);
    Ok(JudgedPair {
        baseline_ns: base,
        call_always_minus_baseline_ns: dc,
        call_always_half_width_ns: hc,
        early_key_minus_baseline_ns: de,
        early_key_half_width_ns: he,
        medians,
        rounds: rs.len(),
        call_always_above: dc - hc > ABOVE_SHARE * base && median_above,
        early_key_within: de.abs() + he <= WITHIN_SHARE * base && median_within,
    })
}

fn interval(d: f64, h: f64, base: f64) -> String {
    format!(
        "{d:+.2} [{:+.2}, {:+.2}] ({:+.1}%)",
        d - h,
        d + h,
        100.0 * d / base
    )
}

fn single_text(r: &PairsResult, judged: &[(Pair, JudgedPair)]) -> String {
    let pairs: Vec<String> = judged
        .iter()
        .map(|(pair, p)| {
            let medians = match p.medians {
                Some([b, c, e]) => format!(", medians {b:.0}/{c:.0}/{e:.0}"),
                None => String::new(),
            };
            format!(
                "{} baseline {:.2}, call-always {}, early-key {}{medians}",
                pair.key(),
                p.baseline_ns,
                interval(
                    p.call_always_minus_baseline_ns,
                    p.call_always_half_width_ns,
                    p.baseline_ns
                ),
                interval(
                    p.early_key_minus_baseline_ns,
                    p.early_key_half_width_ns,
                    p.baseline_ns
                ),
            )
        })
        .collect();
    let unresolved = judged.iter().any(|(_, p)| p.medians.is_none());
    let rounds = judged.first().map_or(1, |(_, p)| p.rounds);
    format!(
        "single method, {} keys, ns per pair with the {} read, {}: trimmed means, each strategy \
         minus baseline [95% interval]: {}{}",
        r.keys.name(),
        r.timer,
        if rounds > 1 {
            format!("mean of {rounds} rounds (interval: Student's t over the rounds)")
        } else {
            "one round (interval: sampling error only)".to_owned()
        },
        pairs.join("; "),
        if unresolved {
            format!(
                "; medians below resolution (timer step {:.0} ns), judged on trimmed means",
                r.timer_step_ns
            )
        } else {
            String::new()
        }
    )
}

fn batched_text(r: &PairsResult) -> String {
    if r.method != Method::Batched {
        return format!("resolution check: not a batched run ({})", r.method);
    }
    let pairs: Vec<String> = r
        .verdict
        .pairs
        .iter()
        .map(|(pair, v)| {
            format!(
                "{pair} {:.2}/{:+.2}/{:+.2}{}",
                v.baseline_ns,
                v.call_always_ns - v.baseline_ns,
                v.early_key_ns - v.baseline_ns,
                if v.resolved {
                    ""
                } else {
                    " (below resolution)"
                }
            )
        })
        .collect();
    format!(
        "resolution check, batched medians (baseline, call-always and early-key minus it, ns \
         per pair; K {:?}): {}",
        r.batch.values().collect::<Vec<_>>(),
        pairs.join(", ")
    )
}

fn code_text(code: &CodeSize) -> String {
    let pairs: Vec<String> = Pair::ALL
        .into_iter()
        .map(|pair| {
            let cell = |s: StrategyKind| {
                code.row(pair, s).map_or_else(
                    || "-".to_owned(),
                    |r| format!("{}B/{}i", r.call_site_bytes, r.instructions),
                )
            };
            format!(
                "{} {} {} {}",
                pair.key(),
                cell(StrategyKind::Baseline),
                cell(StrategyKind::CallAlways),
                cell(StrategyKind::EarlyKey)
            )
        })
        .collect();
    format!(
        "code per call site, bytes/instructions executed with tracing off (baseline, \
         call-always, early-key; {} keys; out-of-line callees apart): {}",
        code.keys.name(),
        pairs.join(", ")
    )
}

/// The preemptirq patch's finding from one `--method single` run, with the batched run's
/// medians and the code-size table shown beside it (not judged): the
/// intervals are sampling error only. [`finding_rounds`] takes several
/// runs, whose spread is the honest interval. The rule is [`finding_rule`]; a
/// run that is not the single method, or lacks a figure, is not measurable.
///
/// ```no_run
/// use ringtrace_cli::pairs::{self, Method, PairsConfig};
/// use ringtrace::clock::emulation::IrqBackend;
/// let config = PairsConfig { cpus: 2, samples: 2_000_000, highest: 1000, percentile: 99, irq: IrqBackend::Soft };
/// let single = pairs::run_method(&config, Method::Single, &|| {})?;
/// let batched = pairs::run_method(&PairsConfig { samples: 100_000, ..config }, Method::Batched, &|| {})?;
/// let code = pairs::code_size().ok();
/// let f = pairs::finding(&single, Some(&batched), code.as_ref());
/// println!("{}: {}", f.verdict.text(), f.ours);
/// # Ok::<(), pairs::PairsError>(())
/// ```
pub fn finding(
    single: &PairsResult,
    batched: Option<&PairsResult>,
    code: Option<&CodeSize>,
) -> Finding {
    finding_rounds(std::slice::from_ref(single), batched, code)
}

/// The preemptirq patch's finding from several `--method single` runs (rounds): each
/// difference is the rounds' mean and its 95% interval Student's t on the
/// rounds' differences, so that it holds the machine's drift from one run
/// to the next (on this machine some ten times the sampling error), never
/// narrower than the sampling interval. Otherwise as [`finding`].
///
/// ```no_run
/// use ringtrace_cli::pairs::{self, Method, PairsConfig};
/// use ringtrace::clock::emulation::IrqBackend;
/// let config = PairsConfig { cpus: 2, samples: 2_000_000, highest: 1000, percentile: 99, irq: IrqBackend::Soft };
/// let rounds = (0..5)
///     .map(|_| pairs::run_method(&config, Method::Single, &|| {}))
///     .collect::<Result<Vec<_>, _>>()?;
/// let f = pairs::finding_rounds(&rounds, None, pairs::code_size().ok().as_ref());
/// println!("{}: {}", f.verdict.text(), f.ours);
/// # Ok::<(), pairs::PairsError>(())
/// ```
pub fn finding_rounds(
    rounds: &[PairsResult],
    batched: Option<&PairsResult>,
    code: Option<&CodeSize>,
) -> Finding {
    let rule = finding_rule();
    let Some(first) = rounds.first() else {
        return Finding::not_measured(
            "one pair per sample, timer read included",
            &rule,
            "no single-method round was run",
        );
    };
    let method = format!(
        "one pair per sample between two reads of {} (timer included, as the patch's tables), \
         {} round(s) of {} thread(s) x {} samples per pair and strategy, every tracepoint off; \
         batched medians as the resolution check; code bytes and instructions from this binary",
        first.timer,
        rounds.len(),
        first.settings.cpus,
        first.settings.samples
    );
    if let Some(other) = rounds.iter().find(|r| r.method != Method::Single) {
        return Finding::not_measured(
            &method,
            &rule,
            format!(
                "the verdict needs single-method runs (one pair per sample); one is {}",
                other.method
            ),
        );
    }
    let judged: Result<Vec<(Pair, JudgedPair)>, String> = Pair::ALL
        .into_iter()
        .map(|pair| judge(rounds, pair).map(|p| (pair, p)))
        .collect();
    let judged = match judged {
        Ok(j) => j,
        Err(why) => return Finding::not_measured(&method, &rule, why),
    };
    let mut ours = single_text(first, &judged);
    if let Some(b) = batched {
        ours.push_str(" | ");
        ours.push_str(&batched_text(b));
    }
    if let Some(c) = code {
        ours.push_str(" | ");
        ours.push_str(&code_text(c));
    }
    let ok = judged
        .iter()
        .all(|(_, p)| p.call_always_above && p.early_key_within);
    Finding {
        ours,
        method,
        rule,
        verdict: Verdict::from_bool(ok),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{verdict, KeyKind, PairsSettings};
    use super::*;
    use std::collections::BTreeMap;

    fn m(trimmed: f64, se: f64, median: f64) -> Metrics {
        Metrics {
            average: trimmed,
            max_avg: trimmed * 20.0,
            median,
            percentile: median,
            trimmed_mean: trimmed,
            trimmed_mean_se: se,
            outliers: 0,
            samples: 2_000_000,
            resolution_ns: 40.0,
        }
    }

    /// A single-method result with the same three strategies for every pair.
    fn result(method: Method, strategies: [Metrics; 3]) -> PairsResult {
        let mut pairs = BTreeMap::new();
        for pair in Pair::ALL {
            let row: &mut BTreeMap<&'static str, Metrics> = pairs.entry(pair.key()).or_default();
            for (s, m) in StrategyKind::ALL.into_iter().zip(strategies) {
                row.insert(s.name(), m);
            }
        }
        PairsResult {
            deltas: verdict::deltas(&pairs),
            verdict: verdict::verdict(&pairs, method),
            pairs,
            method,
            settings: PairsSettings {
                cpus: 2,
                samples: 1_000_000,
                highest: 1000,
                percentile: 99,
                irq_mask: "soft".into(),
            },
            timer: "mono".into(),
            timer_step_ns: 20.0,
            timer_overhead_ns: 20.0,
            batch: Pair::ALL.into_iter().map(|p| (p.key(), 1)).collect(),
            batch_span_steps: BTreeMap::new(),
            keys: KeyKind::Patched,
            percentile_from: "a separate run on CPU 0 alone",
            trim_percent: TRIM_PERCENT,
            outlier_factor: 10,
            interrupted: false,
            distribution: BTreeMap::new(),
        }
    }

    #[test]
    fn a_costly_call_and_a_free_early_key_reproduce() {
        // What this machine gives: +4.2 ns (19%) and -0.05 ns.
        let r = result(
            Method::Single,
            [
                m(22.46, 0.01, 20.0),
                m(26.64, 0.01, 20.0),
                m(22.41, 0.01, 20.0),
            ],
        );
        let f = finding(&r, None, None);
        assert_eq!(f.verdict, Verdict::Reproduced, "{}", f.ours);
        assert!(f.ours.contains("below resolution"), "{}", f.ours);
        assert!(f.ours.contains("irq_save baseline 22.46"), "{}", f.ours);
        assert_eq!(f.rule, finding_rule());
    }

    #[test]
    fn a_call_within_the_band_is_not_reproduced() {
        // call-always +0.9 ns on 22.46: under 5% (1.12 ns).
        let r = result(
            Method::Single,
            [
                m(22.46, 0.01, 20.0),
                m(23.36, 0.01, 20.0),
                m(22.46, 0.01, 20.0),
            ],
        );
        assert_eq!(finding(&r, None, None).verdict, Verdict::NotReproduced);
    }

    #[test]
    fn an_early_key_outside_the_band_is_not_reproduced() {
        // early-key +1.5 ns (6.7%).
        let r = result(
            Method::Single,
            [
                m(22.46, 0.01, 20.0),
                m(26.64, 0.01, 20.0),
                m(23.96, 0.01, 20.0),
            ],
        );
        assert_eq!(finding(&r, None, None).verdict, Verdict::NotReproduced);
    }

    #[test]
    fn an_interval_wider_than_the_band_is_not_reproduced() {
        // early-key equal to baseline, but an error of 0.5 ns each: the
        // interval (±1.39 ns) spills out of ±1.12 ns.
        let r = result(
            Method::Single,
            [m(22.46, 0.5, 20.0), m(30.0, 0.5, 20.0), m(22.46, 0.5, 20.0)],
        );
        let f = finding(&r, None, None);
        assert_eq!(f.verdict, Verdict::NotReproduced);
        assert!(f.ours.contains("[-1.39, +1.39]"), "{}", f.ours);
    }

    #[test]
    fn resolved_medians_must_agree_with_the_trimmed_means() {
        // Trimmed means reproduce; the resolved medians put early-key 10%
        // above baseline.
        let r = result(
            Method::Single,
            [
                m(50.0, 0.01, 50.0),
                m(60.0, 0.01, 60.0),
                m(50.0, 0.01, 55.0),
            ],
        );
        let f = finding(&r, None, None);
        assert_eq!(f.verdict, Verdict::NotReproduced);
        assert!(f.ours.contains("medians 50/60/55"), "{}", f.ours);
        let r = result(
            Method::Single,
            [
                m(50.0, 0.01, 50.0),
                m(60.0, 0.01, 60.0),
                m(50.0, 0.01, 50.0),
            ],
        );
        assert_eq!(finding(&r, None, None).verdict, Verdict::Reproduced);
    }

    #[test]
    fn a_batched_run_or_a_missing_figure_is_not_measurable() {
        let strategies = [
            m(22.46, 0.01, 20.0),
            m(26.64, 0.01, 20.0),
            m(22.41, 0.01, 20.0),
        ];
        let batched = result(Method::Batched, strategies);
        let f = finding(&batched, None, None);
        assert!(
            matches!(&f.verdict, Verdict::NotMeasurable(why) if why.contains("batched")),
            "{:?}",
            f.verdict
        );
        let mut r = result(Method::Single, strategies);
        r.pairs.get_mut("preempt").unwrap().remove("early-key");
        let f = finding(&r, None, None);
        assert!(
            matches!(&f.verdict, Verdict::NotMeasurable(why) if why.contains("preempt under early-key")),
            "{:?}",
            f.verdict
        );
        let r = result(
            Method::Single,
            [
                m(22.46, f64::INFINITY, 20.0),
                m(26.64, 0.01, 20.0),
                m(22.41, 0.01, 20.0),
            ],
        );
        assert!(matches!(
            finding(&r, None, None).verdict,
            Verdict::NotMeasurable(_)
        ));
    }

    #[test]
    fn the_batched_medians_and_the_code_are_shown_not_judged() {
        let single = result(
            Method::Single,
            [
                m(22.46, 0.01, 20.0),
                m(26.64, 0.01, 20.0),
                m(22.41, 0.01, 20.0),
            ],
        );
        // Batched medians in which call-always is no dearer: shown only.
        let batched = result(
            Method::Batched,
            [m(1.0, 0.01, 1.0), m(1.0, 0.01, 1.0), m(1.0, 0.01, 1.0)],
        );
        let row = |bytes, instructions| super::super::CodeRow {
            symbol: "f".into(),
            function_bytes: bytes + 1,
            call_site_bytes: bytes,
            instructions,
        };
        let code = CodeSize {
            pairs: Pair::ALL
                .into_iter()
                .map(|p| {
                    (
                        p.key(),
                        [
                            ("baseline", row(10, 4)),
                            ("call-always", row(40, 30)),
                            ("early-key", row(20, 6)),
                        ]
                        .into_iter()
                        .collect(),
                    )
                })
                .collect(),
            keys: KeyKind::Patched,
            irq_mask: "soft",
            empty_function_bytes: 1,
            empty_function_instructions: 1,
            callees: Vec::new(),
        };
        let f = finding(&single, Some(&batched), Some(&code));
        assert_eq!(f.verdict, Verdict::Reproduced);
        assert!(
            f.ours.contains("resolution check, batched medians"),
            "{}",
            f.ours
        );
        assert!(f.ours.contains("irq 10B/4i 40B/30i 20B/6i"), "{}", f.ours);
    }

    #[test]
    fn rounds_that_agree_reproduce_with_their_spread_as_the_interval() {
        // This machine's three runs: irq_save's early-key at +0.40, +0.27,
        // +0.37 ns, each with a sampling error near 0.002 ns.
        let rounds: Vec<PairsResult> = [0.40, 0.27, 0.37]
            .into_iter()
            .map(|d| {
                result(
                    Method::Single,
                    [
                        m(22.42, 0.002, 20.0),
                        m(26.84, 0.002, 20.0),
                        m(22.42 + d, 0.002, 20.0),
                    ],
                )
            })
            .collect();
        let f = finding_rounds(&rounds, None, None);
        assert_eq!(f.verdict, Verdict::Reproduced, "{}", f.ours);
        // mean 0.347, sd 0.068, t(2) 4.303: +-0.17.
        assert!(
            f.ours.contains("early-key +0.35 [+0.18, +0.52]"),
            "{}",
            f.ours
        );
        assert!(f.ours.contains("mean of 3 rounds"), "{}", f.ours);
        assert!(f.method.contains("3 round(s)"), "{}", f.method);
    }

    #[test]
    fn rounds_that_disagree_are_not_reproduced_though_each_is_precise() {
        // early-key at -1.0 and +1.0 ns in two rounds: the mean is 0, each
        // round's sampling interval is tiny, but t(1) on the spread is
        // +-12.7 ns.
        let rounds: Vec<PairsResult> = [-1.0, 1.0]
            .into_iter()
            .map(|d| {
                result(
                    Method::Single,
                    [
                        m(22.42, 0.002, 20.0),
                        m(26.84, 0.002, 20.0),
                        m(22.42 + d, 0.002, 20.0),
                    ],
                )
            })
            .collect();
        assert_eq!(
            finding_rounds(&rounds, None, None).verdict,
            Verdict::NotReproduced
        );
        // Each round alone is within 5% (1.12 ns) on its sampling interval.
        assert_eq!(finding(&rounds[1], None, None).verdict, Verdict::Reproduced);
        assert!(matches!(
            finding_rounds(&[], None, None).verdict,
            Verdict::NotMeasurable(why) if why.contains("no single-method round")
        ));
    }

    #[test]
    fn t_quantiles_shrink_to_the_normal_s() {
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(4), 2.776);
        assert_eq!(t95(30), 2.042);
        assert_eq!(t95(31), Z95);
        assert_eq!(t95(0), Z95);
    }
}
