//! `ringtrace pairs`: walac/tracer-benchmark (the preemptirq patch's measurement) in
//! userspace. One thread per CPU, started together, times the irq
//! disable/enable, irq save/restore and preempt disable/enable pairs under
//! each instrumentation strategy (`baseline`, `call-always`, `early-key`:
//! the three kernel builds of the patch that makes the preemptirq
//! tracepoints check their static key early), every tracepoint off.
//!
//! Two methods ([`Method`]):
//!
//! - **batched** (the default): a sample times K pairs back to back
//!   between two reads of the `local` timer and counts as sample / K per
//!   pair. K is chosen per pair so that a sample spans at least 50 timer
//!   steps (the step is the smallest nonzero difference of two consecutive
//!   reads), so a pair far cheaper than one read is still resolved: it is
//!   calibrated on CPU 0, then checked on the run's medians, and a pair
//!   whose cheapest strategy came out shorter is measured again with a
//!   larger K (twice at most; K stops at [`MAX_BATCH`]). Nothing
//!   is subtracted: the one timer read in each sample adds at most a
//!   fiftieth of it, the same for every strategy, so it cancels in the
//!   differences.
//! - **single**: one pair per sample between two reads of `mono`
//!   (`clock_gettime`, ns, as the patch's `ktime_get_ns()`), nothing
//!   subtracted, the percentile from a separate run on CPU 0 alone, as the
//!   tracer-benchmark of the patch's time measured: absolute figures that
//!   compare with the patch's tables (timer included).
//!
//! The statistics are tracer-benchmark's, per CPU then combined (see
//! [`Metrics`]), plus a trimmed mean and an outlier count; a median or
//! percentile under two timer steps per pair is reported as below
//! resolution. [`PairsResult`] carries the deltas against `baseline` beside
//! the kernel patch's and a [`Verdict`] on its two claims.
//!
//! The preemptirq patch's verdict for the report is [`finding`]: on a single-method run's
//! trimmed means with 95% intervals (the rule is [`finding_rule`]), the
//! batched medians shown as the resolution check. [`code_size`] counts,
//! rather than times, what each strategy puts at a call site: bytes from
//! the binary's symbol table and instructions executed by single-stepping
//! (see [`crate::code_size`]).
//!
//! ```no_run
//! use ringtrace_cli::pairs::{self, Method, PairsConfig};
//! use ringtrace::clock::emulation::IrqBackend;
//! let config = PairsConfig { cpus: 1, samples: 10_000, highest: 100, percentile: 99, irq: IrqBackend::Soft };
//! let result = pairs::run_method(&config, Method::Batched, &|| {})?;
//! println!("{}", result.markdown());
//! # Ok::<(), pairs::PairsError>(())
//! ```

mod code;
mod finding;
mod measure;
mod render;
mod stats;
mod timing;
mod verdict;

use measure::measure;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::{ClockError, Local, Mono};
use ringtrace_tracepoint::preemptirq::StrategyKind;
use ringtrace_tracepoint::TracepointError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;

pub use code::{code_size, one_pair_fn, Callee, CodeRow, CodeSize};
pub use finding::{
    finding, finding_rounds, finding_rule, JudgedPair, ABOVE_SHARE, WITHIN_SHARE, Z95,
};
pub use render::fmt_ns;
pub use stats::{OUTLIER_FACTOR, RESOLUTION_STEPS, TRIM_PERCENT};
pub use timing::MAX_BATCH;
pub use verdict::{
    kernel_x86_64, Delta, Deltas, KernelRow, PairVerdict, Verdict, CLEARLY_ABOVE, MIN_SAMPLES,
    WITHIN,
};

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

/// How a sample is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// K pairs per sample on the `local` timer, K chosen so that a sample
    /// spans at least 50 timer steps; figures are per pair.
    #[default]
    Batched,
    /// One pair per sample on `mono` (ns), nothing subtracted, the
    /// percentile from a separate single-CPU run: the patch's method.
    Single,
}

impl Method {
    /// Both, the default first.
    pub const ALL: [Method; 2] = [Method::Batched, Method::Single];

    /// `batched` or `single`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Batched => "batched",
            Method::Single => "single",
        }
    }

    /// The samples per thread, pair and strategy when none are given:
    /// 100 000 batches (some seconds per thread), or the patch's 10^7.
    pub fn default_samples(self) -> usize {
        match self {
            Method::Batched => 100_000,
            Method::Single => 10_000_000,
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = PairsError;

    /// ```
    /// use ringtrace_cli::pairs::Method;
    /// assert_eq!("single".parse::<Method>().unwrap(), Method::Single);
    /// let err = "fast".parse::<Method>().unwrap_err().to_string();
    /// assert!(err.contains("`fast`") && err.contains("batched, single"), "{err}");
    /// ```
    fn from_str(s: &str) -> Result<Method, PairsError> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| PairsError::UnknownMethod {
                given: s.to_owned(),
                valid: Method::ALL.map(Method::name).join(", "),
            })
    }
}

/// How the tracepoint key checks were compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// Patched code (the static-keys crate): a no-op while off, as the
    /// kernel's static keys.
    Patched,
    /// A relaxed atomic load and a branch.
    Atomic,
}

impl KeyKind {
    /// `patched` or `atomic`.
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Patched => "patched",
            KeyKind::Atomic => "atomic",
        }
    }
}

/// Which key checks this program runs. Patched when this crate's
/// `static-keys` feature is on; otherwise the tracepoint crate is asked,
/// since cargo unifies features within one build and another crate may
/// have turned its `static-keys` on: with patched keys its registry refuses
/// any flip while a second thread runs, before touching the key, and with
/// atomic keys setting `irq_disable` to the state it has changes nothing.
pub fn key_kind() -> KeyKind {
    if cfg!(feature = "static-keys") {
        return KeyKind::Patched;
    }
    let tp = &ringtrace_tracepoint::preemptirq::irq_disable::TRACEPOINT;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let witness = std::thread::spawn(move || {
        let _ = rx.recv();
    });
    let answer = tp.set_enabled(tp.is_enabled());
    drop(tx);
    let _ = witness.join();
    match answer {
        Err(TracepointError::ThreadsRunning(_)) => KeyKind::Patched,
        _ => KeyKind::Atomic,
    }
}

/// The most samples per pair, thread and strategy: each thread holds one
/// run's samples (8 bytes each) at a time.
pub const MAX_SAMPLES: usize = 100_000_000;

/// Why a pairs run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairsError {
    /// The timer cannot be built here.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// A setting is out of range.
    #[error("{0}")]
    Invalid(String),
    /// No method has this name.
    #[error("unknown pairs method `{given}`; valid methods: {valid}")]
    UnknownMethod {
        /// The name given.
        given: String,
        /// The methods, comma-separated.
        valid: String,
    },
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
    /// Samples of each pair, per thread and strategy (batches of K pairs
    /// for [`Method::Batched`]).
    pub samples: usize,
    /// How many of the largest samples make max_avg.
    pub highest: usize,
    /// The percentile reported (0 to 100).
    pub percentile: u32,
    /// The irq mask.
    pub irq: IrqBackend,
}

/// One (pair, strategy)'s figures, in nanoseconds per pair.
///
/// `average`, `median` and `percentile` are tracer-benchmark's: the
/// average of the per-CPU averages, the median of the per-CPU medians and
/// the largest per-CPU percentile (the single method: the percentile of a
/// separate run on CPU 0). `median` and `percentile` are the measured
/// values; under `resolution_ns` they are below what the timer resolves,
/// and [`Metrics::median_resolved`] says `None` and the JSON `null`, with
/// `median_below_resolution: true`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(into = "MetricsJson")]
pub struct Metrics {
    /// Average of the per-CPU averages.
    pub average: f64,
    /// Mean of the `highest` largest samples over all CPUs (a batched
    /// sample's preemption is spread over its K pairs).
    pub max_avg: f64,
    /// Median of the per-CPU medians.
    pub median: f64,
    /// The percentile (see above).
    pub percentile: f64,
    /// Per CPU, the mean without the lowest and highest [`TRIM_PERCENT`] %
    /// of samples; averaged over the CPUs.
    pub trimmed_mean: f64,
    /// The standard error of `trimmed_mean` from the samples' spread
    /// (per CPU the winsorized standard deviation over (1 - 2 x trim) x
    /// sqrt(n), Tukey and McLaughlin's; combined over the CPUs as their
    /// mean's). Sampling error only: not the drift of the machine between
    /// one strategy's run and the next. Infinite for under two samples.
    pub trimmed_mean_se: f64,
    /// Samples above [`OUTLIER_FACTOR`] times their CPU's median, over all
    /// CPUs: preempted or interrupted ones.
    pub outliers: u64,
    /// Samples over all CPUs.
    pub samples: u64,
    /// Two timer steps per pair: the smallest median or percentile
    /// reported as a number.
    pub resolution_ns: f64,
}

impl Metrics {
    /// The median, or `None` below resolution.
    pub fn median_resolved(&self) -> Option<f64> {
        (self.median >= self.resolution_ns).then_some(self.median)
    }

    /// The percentile, or `None` below resolution.
    pub fn percentile_resolved(&self) -> Option<f64> {
        (self.percentile >= self.resolution_ns).then_some(self.percentile)
    }
}

/// [`Metrics`] as JSON: a value below resolution is `null` and flagged.
#[derive(Serialize)]
struct MetricsJson {
    average: f64,
    max_avg: f64,
    median: Option<f64>,
    median_below_resolution: bool,
    percentile: Option<f64>,
    percentile_below_resolution: bool,
    trimmed_mean: f64,
    trimmed_mean_se: Option<f64>,
    outliers: u64,
    samples: u64,
    resolution_ns: f64,
}

impl From<Metrics> for MetricsJson {
    fn from(m: Metrics) -> MetricsJson {
        MetricsJson {
            average: m.average,
            max_avg: m.max_avg,
            median: m.median_resolved(),
            median_below_resolution: m.median_resolved().is_none(),
            percentile: m.percentile_resolved(),
            percentile_below_resolution: m.percentile_resolved().is_none(),
            trimmed_mean: m.trimmed_mean,
            trimmed_mean_se: m.trimmed_mean_se.is_finite().then_some(m.trimmed_mean_se),
            outliers: m.outliers,
            samples: m.samples,
            resolution_ns: m.resolution_ns,
        }
    }
}

/// The settings a result was measured with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PairsSettings {
    /// Threads, one per CPU.
    pub cpus: usize,
    /// Samples per thread, pair and strategy.
    pub samples: usize,
    /// Samples averaged into max_avg.
    pub highest: usize,
    /// The percentile reported.
    pub percentile: u32,
    /// The irq mask (`soft`, `hard`).
    pub irq_mask: String,
}

/// A pairs run's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PairsResult {
    /// `irq`, `irq_save`, `preempt` -> `baseline`, `call-always`,
    /// `early-key` -> metrics in ns per pair.
    #[serde(flatten)]
    pub pairs: BTreeMap<&'static str, BTreeMap<&'static str, Metrics>>,
    /// How the samples were timed.
    pub method: Method,
    /// The settings.
    pub settings: PairsSettings,
    /// The timer: `local (tsc)` and the like, or `mono`.
    pub timer: String,
    /// The timer's step: the smallest nonzero difference of two consecutive
    /// reads, in ns.
    pub timer_step_ns: f64,
    /// The median of two back-to-back reads, in ns: the timer's share of a
    /// sample. Not subtracted (each batched sample holds it once, so it is
    /// `timer_overhead_ns / K` per pair).
    pub timer_overhead_ns: f64,
    /// K, pairs per sample, per pair (1 for the single method).
    pub batch: BTreeMap<&'static str, u64>,
    /// Per pair, the cheapest strategy's median sample in timer steps (at
    /// least 50 for batched samples, unless K hit [`MAX_BATCH`]).
    pub batch_span_steps: BTreeMap<&'static str, f64>,
    /// Which key checks ran: `patched` or `atomic`. Every tracepoint was
    /// off.
    pub keys: KeyKind,
    /// Where the percentile comes from.
    pub percentile_from: &'static str,
    /// Share of samples dropped at each end for the trimmed mean, percent.
    pub trim_percent: usize,
    /// Outliers are samples above this many times their CPU's median.
    pub outlier_factor: u64,
    /// `call-always` and `early-key` minus `baseline`, beside the kernel
    /// patch's x86-64 differences.
    pub deltas: Deltas,
    /// The kernel patch's two claims, checked on the medians.
    pub verdict: Verdict,
    /// Whether a stop (SIGINT, SIGTERM) cut the run short: the pairs not
    /// measured are absent.
    pub interrupted: bool,
    /// The distribution of every (pair, strategy) over all CPUs:
    /// `[upper bound in ns per pair, share of samples]` per power-of-two
    /// bucket (sixteenths of a ns upwards).
    pub distribution: BTreeMap<&'static str, BTreeMap<&'static str, Vec<[f64; 2]>>>,
}

/// How many times [`run_method`] calls its progress callback.
pub fn progress_steps(cpus: usize, method: Method) -> u64 {
    let per_run = (Pair::ALL.len() * StrategyKind::ALL.len()) as u64;
    match method {
        Method::Batched => cpus.max(1) as u64 * per_run,
        Method::Single => (cpus.max(1) as u64 + 1) * per_run,
    }
}

/// Runs the batched measurement (the default method); `progress` is told
/// each (pair, strategy) as a thread finishes it.
pub fn run(config: &PairsConfig, progress: &(dyn Fn() + Sync)) -> Result<PairsResult, PairsError> {
    run_method(config, Method::Batched, progress)
}

/// Runs the measurement with `method`; `progress` is called
/// [`progress_steps`] times.
pub fn run_method(
    config: &PairsConfig,
    method: Method,
    progress: &(dyn Fn() + Sync),
) -> Result<PairsResult, PairsError> {
    run_until(config, method, progress, &|| false)
}

/// [`run_method`], looking at `stop` between pairs: once it says so, the
/// pairs not yet measured are left out of the result (and the single
/// method's run on CPU 0 alone), which is marked
/// [`PairsResult::interrupted`].
pub fn run_until(
    config: &PairsConfig,
    method: Method,
    progress: &(dyn Fn() + Sync),
    stop: &dyn Fn() -> bool,
) -> Result<PairsResult, PairsError> {
    if !(1..=MAX_SAMPLES).contains(&config.samples) {
        return Err(PairsError::Invalid(format!(
            "--samples {} is invalid: it must be from 1 to {MAX_SAMPLES}",
            config.samples
        )));
    }
    if config.percentile > 100 {
        return Err(PairsError::Invalid(format!(
            "--percentile {} is invalid: it must be from 0 to 100",
            config.percentile
        )));
    }
    // Asked before any measuring thread exists.
    let keys = key_kind();
    match method {
        Method::Batched => {
            let clock = Local::new()?;
            let name = format!("local ({})", clock.backing());
            measure(&clock, name, method, keys, config, progress, stop)
        }
        Method::Single => measure(
            &Mono::new(),
            "mono".into(),
            method,
            keys,
            config,
            progress,
            stop,
        ),
    }
}
