//! The run itself: the timer measured and K calibrated on CPU 0, then
//! pair by pair one thread per CPU, started together, timing every
//! strategy; the single method's percentile run; the figures combined.

use super::stats::{self, CpuStats, Scale};
use super::timing::{self, Per};
use super::{
    verdict, KeyKind, Method, Metrics, Pair, PairsConfig, PairsError, PairsResult, PairsSettings,
    MAX_BATCH, OUTLIER_FACTOR, RESOLUTION_STEPS, TRIM_PERCENT,
};
use crate::sched;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::{Clock, TickConversion};
use ringtrace_tracepoint::preemptirq::StrategyKind;
use std::collections::BTreeMap;

/// One thread's statistics of one pair, per strategy.
type CpuResults = BTreeMap<StrategyKind, CpuStats>;

/// What is measured about the timer before the run, on CPU 0.
struct TimerFacts {
    step: u64,
    overhead: u64,
    /// K per pair, from the calibration.
    batch: BTreeMap<Pair, usize>,
}

/// Times a batched pair is measured again, with a larger K, when its
/// cheapest median sample spans under 50 timer steps (the machine ran
/// faster than during the calibration).
const RETRIES: usize = 2;

/// What a thread needs to time a pair.
struct Run<'a, C> {
    clock: &'a C,
    conversion: TickConversion,
    irq: IrqBackend,
    samples: usize,
    highest: usize,
    pct: u32,
}

impl<C: Clock> Run<'_, C> {
    /// Times `pair` under every strategy on this thread into per-CPU
    /// statistics, telling `progress` after each strategy.
    fn strategies(
        &self,
        pair: Pair,
        per: Per,
        raw: &mut Vec<u64>,
        progress: &(dyn Fn() + Sync),
    ) -> CpuResults {
        let k = match per {
            Per::Single => 1.0,
            Per::Batch(k) => k as f64,
        };
        let ns_per_pair = |ticks: f64| self.conversion.ticks_to_ns_f64(ticks) / k;
        let mut out = CpuResults::new();
        for strategy in StrategyKind::ALL {
            timing::sample(self.clock, strategy, self.irq, pair, per, self.samples, raw);
            let st = stats::cpu_stats(raw, self.highest, self.pct, ns_per_pair);
            out.insert(strategy, st);
            progress();
        }
        out
    }

    /// Times `pair` on `cpus` threads, one per CPU, started together as
    /// tracer-benchmark's.
    fn on_every_cpu(
        &self,
        cpus: usize,
        pair: Pair,
        per: Per,
        progress: &(dyn Fn() + Sync),
    ) -> Result<Vec<CpuResults>, PairsError> {
        let samples = self.samples;
        let start = std::sync::Barrier::new(cpus);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..cpus)
                .map(|cpu| {
                    let start = &start;
                    s.spawn(move || {
                        let _ = sched::pin_to_cpu(cpu);
                        // Allocated before the barrier, so that a failure
                        // cannot leave the other threads waiting; then wait
                        // regardless.
                        let mut raw = Vec::new();
                        let reserved = raw.try_reserve_exact(samples);
                        start.wait();
                        reserved.map_err(|_| out_of_memory(samples))?;
                        Ok(self.strategies(pair, per, &mut raw, progress))
                    })
                })
                .collect();
            handles.into_iter().map(join).collect()
        })
    }
}

/// The cheapest strategy's median sample, in ticks (median of the per-CPU
/// medians).
fn cheapest_median(per_cpu: &[CpuResults]) -> f64 {
    StrategyKind::ALL
        .into_iter()
        .map(|strategy| {
            stats::median_of(
                per_cpu
                    .iter()
                    .filter_map(|c| c.get(&strategy).map(|st| st.median))
                    .collect(),
            )
        })
        .fold(f64::INFINITY, f64::min)
}

pub(super) fn measure<C: Clock>(
    clock: &C,
    timer: String,
    method: Method,
    keys: KeyKind,
    config: &PairsConfig,
    progress: &(dyn Fn() + Sync),
    stop: &dyn Fn() -> bool,
) -> Result<PairsResult, PairsError> {
    let conversion = clock
        .info()
        .conversion
        .unwrap_or(TickConversion::NANOSECONDS);
    let cpus = config.cpus.max(1);
    let samples = config.samples;
    let highest = config.highest.clamp(1, samples);
    let pct = config.percentile;
    let irq = config.irq;
    let run = Run {
        clock,
        conversion,
        irq,
        samples,
        highest,
        pct,
    };

    let facts = on_cpu0(|| {
        let step = timing::timer_step(clock);
        let overhead = timing::timer_overhead(clock);
        let batch = Pair::ALL
            .into_iter()
            .map(|pair| {
                let k = match method {
                    Method::Batched => timing::batch_size(clock, irq, pair, step),
                    Method::Single => 1,
                };
                (pair, k)
            })
            .collect();
        TimerFacts {
            step,
            overhead,
            batch,
        }
    })?;
    let per = |k: usize| match method {
        Method::Batched => Per::Batch(k),
        Method::Single => Per::Single,
    };

    // Pair by pair, every CPU at once; a batched pair whose samples came
    // out shorter than the target is measured again with a larger K, its
    // progress not counted again. A stop leaves out the pairs not yet
    // started, and keeps a pair's first measurement rather than retry.
    let mut measured: BTreeMap<Pair, (usize, Vec<CpuResults>)> = BTreeMap::new();
    let mut interrupted = false;
    for pair in Pair::ALL {
        if stop() {
            interrupted = true;
            break;
        }
        let mut k = facts.batch.get(&pair).copied().unwrap_or(1);
        let mut per_cpu = run.on_every_cpu(cpus, pair, per(k), progress)?;
        for _ in 0..RETRIES {
            let span = cheapest_median(&per_cpu) / facts.step as f64;
            if method == Method::Single
                || k >= MAX_BATCH
                || span >= timing::TARGET_STEPS as f64
                || stop()
            {
                break;
            }
            let factor = (timing::TARGET_STEPS as f64 * 1.25 / span.max(1.0)).ceil() as usize;
            k = k.saturating_mul(factor.next_power_of_two()).min(MAX_BATCH);
            per_cpu = run.on_every_cpu(cpus, pair, per(k), &|| {})?;
        }
        measured.insert(pair, (k, per_cpu));
    }

    // The patch's percentile: a separate run on CPU 0 alone.
    let interrupted = interrupted || stop();
    let single_cpu: Option<BTreeMap<Pair, CpuResults>> = match method {
        Method::Batched => None,
        Method::Single if interrupted => None,
        Method::Single => Some(on_cpu0(|| {
            let mut raw = Vec::new();
            raw.try_reserve_exact(samples)
                .map_err(|_| out_of_memory(samples))?;
            Ok::<_, PairsError>(
                Pair::ALL
                    .into_iter()
                    .map(|pair| (pair, run.strategies(pair, Per::Single, &mut raw, progress)))
                    .collect(),
            )
        })??),
    };

    let step_ns = conversion.ticks_to_ns_f64(facts.step as f64);
    let mut pairs: BTreeMap<&'static str, BTreeMap<&'static str, Metrics>> = BTreeMap::new();
    let mut distribution: BTreeMap<&'static str, BTreeMap<&'static str, Vec<[f64; 2]>>> =
        BTreeMap::new();
    let mut batch = BTreeMap::new();
    let mut batch_span_steps = BTreeMap::new();
    for (&pair, (k, per_cpu)) in &measured {
        let k = *k;
        let to_ns = |ticks: f64| conversion.ticks_to_ns_f64(ticks) / k as f64;
        let scale = Scale {
            ns_per_pair: &to_ns,
            resolution_ns: RESOLUTION_STEPS as f64 * step_ns / k as f64,
        };
        for strategy in StrategyKind::ALL {
            let cpu_stats: Vec<&CpuStats> =
                per_cpu.iter().filter_map(|m| m.get(&strategy)).collect();
            let single = single_cpu
                .as_ref()
                .and_then(|m| m.get(&pair))
                .and_then(|m| m.get(&strategy))
                .map(|st| st.percentile);
            let (metrics, shares) = stats::combine(&cpu_stats, single, highest, &scale);
            distribution
                .entry(pair.key())
                .or_default()
                .insert(strategy.name(), shares);
            pairs
                .entry(pair.key())
                .or_default()
                .insert(strategy.name(), metrics);
        }
        batch.insert(pair.key(), k as u64);
        batch_span_steps.insert(
            pair.key(),
            conversion.ticks_to_ns_f64(cheapest_median(per_cpu)) / step_ns.max(f64::MIN_POSITIVE),
        );
    }
    Ok(PairsResult {
        deltas: verdict::deltas(&pairs),
        verdict: verdict::verdict(&pairs, method),
        pairs,
        method,
        settings: PairsSettings {
            cpus,
            samples,
            highest,
            percentile: pct,
            irq_mask: config.irq.to_string(),
        },
        timer,
        timer_step_ns: step_ns,
        timer_overhead_ns: conversion.ticks_to_ns_f64(facts.overhead as f64),
        batch,
        batch_span_steps,
        keys,
        percentile_from: match (method, &single_cpu) {
            (Method::Single, Some(_)) => "a separate run on CPU 0 alone",
            (Method::Single, None) => {
                "the largest per-CPU percentile (the run on CPU 0 alone was stopped)"
            }
            (Method::Batched, _) => "the largest per-CPU percentile",
        },
        interrupted,
        trim_percent: TRIM_PERCENT,
        outlier_factor: OUTLIER_FACTOR,
        distribution,
    })
}

fn out_of_memory(samples: usize) -> PairsError {
    PairsError::OutOfMemory {
        samples,
        bytes: samples.saturating_mul(8),
    }
}

/// Runs `f` on a thread pinned to CPU 0 and returns what it returns.
fn on_cpu0<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, PairsError> {
    std::thread::scope(|s| {
        join(s.spawn(|| {
            let _ = sched::pin_to_cpu(0);
            Ok(f())
        }))
    })
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T, PairsError>>) -> Result<T, PairsError> {
    match h.join() {
        Ok(result) => result,
        Err(panic) => Err(PairsError::Worker(
            panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panicked".into()),
        )),
    }
}
