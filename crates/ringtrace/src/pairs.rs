//! `ringtrace pairs`: walac/tracer-benchmark (seed 000's measurement) in
//! userspace. One thread per CPU, started together, times each irq
//! disable/enable, irq save/restore and preempt disable/enable pair under
//! each instrumentation strategy, and the statistics are computed and
//! combined as tracer-benchmark does:
//!
//! - per CPU, from samples with the timer's own overhead (the median of
//!   back-to-back timer reads) subtracted: average, median, the nth
//!   percentile (index `n * pct / 100`) and the largest samples;
//! - combined: the average of the per-CPU averages, the median of the
//!   per-CPU medians, the largest per-CPU percentile, and max_avg, the mean
//!   of the `highest` largest samples over all CPUs.

use crate::sched;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::{Clock, ClockError, Local, TickConversion};
use ringtrace_tracepoint::preemptirq::{
    self, Baseline, CallAlways, EarlyKey, Hard, IrqMask, Soft, Strategy, StrategyKind,
};
use ringtrace_tracepoint::SourceLocation;
use serde::Serialize;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::panic::Location;

/// The pair being timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pair {
    /// `local_irq_disable()` + `local_irq_enable()`.
    Irq,
    /// `local_irq_save()` + `local_irq_restore()`.
    IrqSave,
    /// `preempt_disable()` + `preempt_enable()`.
    Preempt,
}

impl Pair {
    /// Every pair, in the order of the output.
    pub const ALL: [Pair; 3] = [Pair::Irq, Pair::IrqSave, Pair::Preempt];

    /// The JSON key: `irq`, `irq_save`, `preempt`.
    pub fn key(self) -> &'static str {
        match self {
            Pair::Irq => "irq",
            Pair::IrqSave => "irq_save",
            Pair::Preempt => "preempt",
        }
    }

    /// The table title.
    pub fn title(self) -> &'static str {
        match self {
            Pair::Irq => "IRQ Metrics",
            Pair::IrqSave => "IRQ save/restore Metrics",
            Pair::Preempt => "Preempt Metrics",
        }
    }
}

/// The most samples per pair, thread and strategy: each thread holds one
/// run's samples (8 bytes each) at a time.
pub const MAX_SAMPLES: usize = 100_000_000;

/// Why a pairs run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PairsError {
    /// The timer (`local`) cannot be built here.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A setting is out of range.
    #[error("{0}")]
    Invalid(String),
    /// The samples did not fit in memory.
    #[error("cannot hold {samples} samples per thread ({bytes} bytes each run): out of memory; use a smaller --samples")]
    OutOfMemory {
        /// Samples asked for.
        samples: usize,
        /// What one run needs.
        bytes: usize,
    },
    /// A measuring thread panicked.
    #[error("a measuring thread failed: {0}")]
    Worker(String),
}

/// A pairs run's settings.
#[derive(Debug, Clone)]
pub struct PairsConfig {
    /// Threads, one per CPU starting at CPU 0.
    pub cpus: usize,
    /// Samples of each pair, per thread and strategy.
    pub samples: usize,
    /// How many of the largest samples make max_avg.
    pub highest: usize,
    /// The percentile reported (0 to 100).
    pub percentile: u32,
    /// The irq mask.
    pub irq: IrqBackend,
}

/// The four numbers of a row, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    /// Average of the per-CPU averages.
    pub average: f64,
    /// Mean of the `highest` largest samples over all CPUs.
    pub max_avg: f64,
    /// Median of the per-CPU medians.
    pub median: f64,
    /// The largest per-CPU percentile.
    pub percentile: f64,
}

/// A pairs run's results: pair -> strategy -> metrics, and the timer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairsResult {
    /// `irq`, `irq_save`, `preempt` -> `baseline`, `call-always`,
    /// `early-key` -> metrics in ns.
    #[serde(flatten)]
    pub pairs: BTreeMap<&'static str, BTreeMap<&'static str, Metrics>>,
    /// The timer overhead subtracted from every sample, in ns.
    pub timer_overhead_ns: f64,
    /// The distribution of every (pair, strategy) over all CPUs:
    /// `[upper bound in ns, share of samples]` per power-of-two bucket.
    pub distribution: BTreeMap<&'static str, BTreeMap<&'static str, Vec<[f64; 2]>>>,
}

/// Power-of-two buckets of samples (bucket 0 holds 0, bucket k holds
/// `[2^(k-1), 2^k)` ticks).
const BUCKETS: usize = 48;

fn bucket(ticks: u64) -> usize {
    ((64 - ticks.leading_zeros()) as usize).min(BUCKETS - 1)
}

/// One thread's results: its timer overhead and its statistics per
/// (pair, strategy), in ticks.
type CpuResults = (u64, BTreeMap<(Pair, StrategyKind), CpuStats>);

/// Per-CPU statistics, in timer ticks.
struct CpuStats {
    average: f64,
    median: f64,
    percentile: u64,
    top: Vec<u64>,
    histogram: [u64; BUCKETS],
}

fn stats(samples: &mut [u64], overhead: u64, highest: usize, pct: u32) -> CpuStats {
    for s in samples.iter_mut() {
        *s = s.saturating_sub(overhead);
    }
    samples.sort_unstable();
    let n = samples.len().max(1);
    let total: u128 = samples.iter().map(|&s| u128::from(s)).sum();
    let median = if n % 2 == 1 {
        samples[n / 2] as f64
    } else {
        (samples[n / 2 - 1] as f64 + samples[n / 2] as f64) / 2.0
    };
    let index = (n * pct as usize / 100).min(n - 1);
    let mut histogram = [0u64; BUCKETS];
    for &s in samples.iter() {
        histogram[bucket(s)] += 1;
    }
    CpuStats {
        histogram,
        average: total as f64 / n as f64,
        median,
        percentile: samples[index],
        top: samples[n - highest.min(n)..].to_vec(),
    }
}

static IP: SourceLocation = SourceLocation {
    file: "ringtrace pairs",
    line: 0,
    column: 0,
};

/// Times `n` pairs of `pair` under strategy `S` and mask `M`, in ticks,
/// into `out` (cleared first; its capacity was reserved for `n`).
fn sample<S: Strategy, M: IrqMask>(clock: &Local, pair: Pair, n: usize, out: &mut Vec<u64>) {
    let parent = Location::caller();
    out.clear();
    for _ in 0..n {
        let t0 = clock.read();
        match pair {
            Pair::Irq => {
                preemptirq::local_irq_disable_at::<S, M>(&IP, parent);
                preemptirq::local_irq_enable_at::<S, M>(&IP, parent);
            }
            Pair::IrqSave => {
                let f = preemptirq::local_irq_save_at::<S, M>(&IP, parent);
                preemptirq::local_irq_restore_at::<S, M>(f, &IP, parent);
            }
            Pair::Preempt => {
                preemptirq::preempt_disable_at::<S>(&IP, parent);
                preemptirq::preempt_enable_at::<S>(&IP, parent);
            }
        }
        out.push(clock.read().wrapping_sub(t0));
    }
}

fn sample_dyn(
    clock: &Local,
    strategy: StrategyKind,
    irq: IrqBackend,
    pair: Pair,
    n: usize,
    out: &mut Vec<u64>,
) {
    match (strategy, irq) {
        (StrategyKind::Baseline, IrqBackend::Soft) => sample::<Baseline, Soft>(clock, pair, n, out),
        (StrategyKind::Baseline, IrqBackend::Hard) => sample::<Baseline, Hard>(clock, pair, n, out),
        (StrategyKind::CallAlways, IrqBackend::Soft) => {
            sample::<CallAlways, Soft>(clock, pair, n, out)
        }
        (StrategyKind::CallAlways, IrqBackend::Hard) => {
            sample::<CallAlways, Hard>(clock, pair, n, out)
        }
        (StrategyKind::EarlyKey, IrqBackend::Soft) => sample::<EarlyKey, Soft>(clock, pair, n, out),
        (StrategyKind::EarlyKey, IrqBackend::Hard) => sample::<EarlyKey, Hard>(clock, pair, n, out),
    }
}

/// The timer's own cost: the median of back-to-back reads.
fn timer_overhead(clock: &Local) -> u64 {
    let mut s: Vec<u64> = (0..100_001)
        .map(|_| {
            let t0 = clock.read();
            black_box(clock.read()).wrapping_sub(t0)
        })
        .collect();
    s.sort_unstable();
    s[s.len() / 2]
}

/// Runs the measurement; `progress` is told each (pair, strategy) as a
/// thread finishes it.
pub fn run(config: &PairsConfig, progress: &(dyn Fn() + Sync)) -> Result<PairsResult, PairsError> {
    if !(1..=MAX_SAMPLES).contains(&config.samples) {
        return Err(PairsError::Invalid(format!(
            "--samples {} is invalid: it must be from 1 to {MAX_SAMPLES}",
            config.samples
        )));
    }
    let clock = Local::new()?;
    let conversion = clock
        .info()
        .conversion
        .unwrap_or(TickConversion::NANOSECONDS);
    let cpus = config.cpus.max(1);
    let samples = config.samples.max(1);
    let highest = config.highest.clamp(1, samples);
    let percentile = config.percentile.min(100);
    let start = std::sync::Barrier::new(cpus);
    let per_cpu: Vec<CpuResults> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cpus)
            .map(|cpu| {
                let (clock, start) = (&clock, &start);
                s.spawn(move || {
                    let _ = sched::pin_to_cpu(cpu);
                    // Allocated before the barrier, so that a failure cannot
                    // leave the other threads waiting; then wait regardless.
                    let mut raw = Vec::new();
                    let reserved = raw.try_reserve_exact(samples);
                    start.wait();
                    reserved.map_err(|_| PairsError::OutOfMemory {
                        samples,
                        bytes: samples.saturating_mul(8),
                    })?;
                    let overhead = timer_overhead(clock);
                    let mut out = BTreeMap::new();
                    for pair in Pair::ALL {
                        for strategy in StrategyKind::ALL {
                            sample_dyn(clock, strategy, config.irq, pair, samples, &mut raw);
                            let cpu_stats = stats(&mut raw, overhead, highest, percentile);
                            out.insert((pair, strategy), cpu_stats);
                            progress();
                        }
                    }
                    Ok((overhead, out))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(result) => result,
                Err(panic) => Err(PairsError::Worker(
                    panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panicked".into()),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
    })?;

    let ns = |ticks: f64| conversion.ticks_to_ns_f64(ticks);
    let mut pairs: BTreeMap<&'static str, BTreeMap<&'static str, Metrics>> = BTreeMap::new();
    let mut distribution: BTreeMap<&'static str, BTreeMap<&'static str, Vec<[f64; 2]>>> =
        BTreeMap::new();
    for pair in Pair::ALL {
        for strategy in StrategyKind::ALL {
            let cpu_stats: Vec<&CpuStats> = per_cpu
                .iter()
                .filter_map(|(_, m)| m.get(&(pair, strategy)))
                .collect();
            let n = cpu_stats.len().max(1) as f64;
            let average = cpu_stats.iter().map(|c| c.average).sum::<f64>() / n;
            let mut medians: Vec<f64> = cpu_stats.iter().map(|c| c.median).collect();
            medians.sort_by(f64::total_cmp);
            let median = match medians.len() {
                0 => 0.0,
                m if m % 2 == 1 => medians[m / 2],
                m => (medians[m / 2 - 1] + medians[m / 2]) / 2.0,
            };
            let pct = cpu_stats.iter().map(|c| c.percentile).max().unwrap_or(0);
            let mut top: Vec<u64> = cpu_stats
                .iter()
                .flat_map(|c| c.top.iter().copied())
                .collect();
            top.sort_unstable();
            let top = &top[top.len() - highest.min(top.len())..];
            let max_avg = top.iter().map(|&t| t as f64).sum::<f64>() / top.len().max(1) as f64;
            let mut counts = [0u64; BUCKETS];
            for c in &cpu_stats {
                for (k, n) in c.histogram.iter().enumerate() {
                    counts[k] += n;
                }
            }
            let all = counts.iter().sum::<u64>().max(1) as f64;
            let shares: Vec<[f64; 2]> = counts
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| [ns((1u64 << k) as f64), n as f64 / all])
                .collect();
            distribution
                .entry(pair.key())
                .or_default()
                .insert(strategy.name(), shares);
            pairs.entry(pair.key()).or_default().insert(
                strategy.name(),
                Metrics {
                    average: ns(average),
                    max_avg: ns(max_avg),
                    median: ns(median),
                    percentile: ns(pct as f64),
                },
            );
        }
    }
    let overhead =
        per_cpu.iter().map(|(o, _)| *o as f64).sum::<f64>() / per_cpu.len().max(1) as f64;
    Ok(PairsResult {
        pairs,
        timer_overhead_ns: ns(overhead),
        distribution,
    })
}

impl PairsResult {
    /// The seed's tables: one per pair, a row per strategy.
    pub fn text(&self, config: &PairsConfig) -> String {
        let mut out = format!(
            "{} threads, {} samples each, {} irq mask; max_avg over the {} highest; percentile {}\n\
             timer overhead {:.2} ns subtracted from every sample\n",
            config.cpus,
            config.samples,
            config.irq,
            config.highest.clamp(1, config.samples.max(1)),
            config.percentile,
            self.timer_overhead_ns
        );
        for pair in Pair::ALL {
            out.push_str(&format!("\n{}\n\n", pair.title()));
            out.push_str(&format!(
                "{:<16} {:>10} {:>10} {:>10} {:>10}\n",
                "Combined Metric", "average", "max_avg", "median", "percentile"
            ));
            out.push_str("Strategy\n");
            for strategy in StrategyKind::ALL {
                if let Some(m) = self
                    .pairs
                    .get(pair.key())
                    .and_then(|p| p.get(strategy.name()))
                {
                    out.push_str(&format!(
                        "{:<16} {:>10.2} {:>10.2} {:>10.2} {:>10.2}\n",
                        strategy.name(),
                        m.average,
                        m.max_avg,
                        m.median,
                        m.percentile
                    ));
                }
            }
        }
        out
    }
}
