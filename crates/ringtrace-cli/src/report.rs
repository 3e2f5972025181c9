//! `ringtrace report`: every patch's finding measured in one run, with a
//! patches table first (what each kernel patch claimed, its figure, ours
//! with its spread, and a verdict), then each measurement in the patches'
//! table shapes; `report.json` and `report.svg` beside it.
//!
//! Every conclusion comes from repeated measurements: rounds paired back
//! to back ([`crate::spread`]), or repeated runs. A measurement that fails
//! is an error in its place, never zeros. The run can be stopped between
//! steps (SIGINT, SIGTERM): what was measured so far is still reported.

use crate::clock_local::tear::{self, TearConfig};
use crate::clock_local::{self, ClockLocal};
use crate::clocks::{self, ClockRow, ClocksConfig, Unavailable};
use crate::hammer::{self, HammerConfig, HammerResult};
use crate::instrumentation::{self, BhPair, Counters, DebugPreempt};
use crate::pairs::{self, PairsConfig, PairsResult};
use crate::spread::Spread;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::{ClockSpec, Protection, SourceName};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use crate::finding::Verdict as PatchVerdict;
pub use crate::report_error::{KeepTraceError, UpdateHzError, WriteError};
pub use crate::report_markdown::{patches_table, PatchRow};

/// How long the report runs, and whether it keeps a trace.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// Under two minutes on 2 cores.
    pub quick: bool,
    /// Keep the trace of one more hammer run in this file (a ring file, see
    /// [`trace_path`]).
    pub keep_trace: Option<PathBuf>,
    /// Updates per second of the `sched` data in the faithful tear run and
    /// the clocks' rows ([`crate::clocks::DEFAULT_UPDATE_HZ`] by default).
    pub update_hz: u32,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig {
            quick: false,
            keep_trace: None,
            update_hz: crate::clocks::DEFAULT_UPDATE_HZ,
        }
    }
}

/// The trace a report kept: one hammer run after the measured ones, into a
/// ring file.
#[derive(Debug, Clone, Serialize)]
pub struct KeptTrace {
    /// The file.
    pub path: String,
    /// The run's clock.
    pub clock: String,
    /// How long its producer ran, in seconds.
    pub seconds: f64,
    /// Events left in the ring at the end (the file holds them), or why the
    /// run failed.
    pub events: Result<u64, String>,
}

/// The file a report keeps its trace in, `DIR/hammer.ring`: creates `dir`
/// (mode 0700, and its missing parents) if it does not exist. Refuses a
/// `dir` that is not a directory, and a `hammer.ring` already there, so
/// that a report never runs for minutes to fail at the end.
pub fn trace_path(dir: &Path) -> Result<PathBuf, KeepTraceError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(KeepTraceError::NotADirectory {
                dir: dir.to_owned(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| KeepTraceError::Create {
                dir: dir.to_owned(),
                source,
            })?,
        Err(source) => {
            return Err(KeepTraceError::Inspect {
                dir: dir.to_owned(),
                source,
            })
        }
    }
    let path = dir.join("hammer.ring");
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(KeepTraceError::Exists { path });
    }
    Ok(path)
}

/// Repeated hammer runs with one clock.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct HammerRepeats {
    /// The clock.
    pub clock: String,
    /// Each run, or why it failed.
    pub runs: Vec<Result<HammerResult, String>>,
    /// ns per entry (wall clock, the kernel's figure) over the runs that
    /// worked.
    pub ns_per_entry: Spread,
    /// ns per entry of the producer's own CPU time: what is left once the
    /// CPU sharing with the consumer is taken out.
    pub ns_per_entry_cpu: Spread,
}

/// Everything a report measured; `None` for what a stop cut short.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// What ran it.
    pub machine: String,
    /// Whether it was the quick run.
    pub quick: bool,
    /// Whether a signal stopped it before the end.
    pub interrupted: bool,
    /// Every clock under every protection, under a tick.
    pub clocks: Option<Vec<ClockRow>>,
    /// Clock sources that cannot work here.
    pub unavailable: Vec<Unavailable>,
    /// trace_clock_local, both halves.
    pub clock_local: Option<ClockLocal>,
    /// The preemptirq patch: the preemptirq pairs, batched (the resolution check).
    pub pairs: Option<Result<PairsResult, String>>,
    /// The preemptirq patch by its own method: rounds of one pair per sample, the
    /// timer read included.
    pub pairs_single: Option<Result<Vec<PairsResult>, String>>,
    /// The preemptirq patch: code bytes per call site and instructions per pair, from
    /// this binary.
    pub code_size: Option<Result<pairs::CodeSize, String>>,
    /// The bh_irqsave patch: the bh pair.
    pub bh: Option<BhPair>,
    /// The lock_events patch: per-CPU counters.
    pub counters: Option<Counters>,
    /// The debug_preempt patch: the DEBUG_PREEMPT check.
    pub debug_preempt: Option<DebugPreempt>,
    /// The ring_buffer_benchmark per clock, repeated.
    pub hammer: Option<Vec<HammerRepeats>>,
    /// The trace kept with `--keep-trace` (null when none was asked for,
    /// or the report stopped first).
    pub kept_trace: Option<KeptTrace>,
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cpus} CPUs, {model}, Linux {}; ring {}",
        kernel.trim(),
        crate::clocks::write_path_note()
    )
}

/// How long the writer of each `clocks` row runs under updates: 40 ms
/// with `quick`, 150 ms otherwise.
pub fn clock_row_run(quick: bool) -> Duration {
    Duration::from_millis(if quick { 40 } else { 150 })
}

/// Whether `update_hz` brings at least one update into each `clocks` row
/// of a report: an error naming the least rate that does.
///
/// ```
/// use ringtrace_cli::report::check_update_hz;
/// assert!(check_update_hz(1000, true).is_ok());
/// let err = check_update_hz(10, true).unwrap_err();
/// assert_eq!(err.least, 25);
/// assert!(err.to_string().contains("at least 25"));
/// ```
pub fn check_update_hz(update_hz: u32, quick: bool) -> Result<(), UpdateHzError> {
    let row_ms = clock_row_run(quick).as_millis() as u64;
    if u64::from(update_hz) * row_ms < 1000 {
        return Err(UpdateHzError {
            given: update_hz,
            row_ms,
            least: 1000u64.div_ceil(row_ms),
        });
    }
    Ok(())
}

/// The steps a report takes, for a progress bar.
pub fn steps(config: &ReportConfig) -> u64 {
    ClockSpec::all().len() as u64
        + 8
        + if config.quick { 3 } else { 9 }
        + 1
        + SourceName::ALL.len() as u64
        + u64::from(config.keep_trace.is_some())
}

/// Runs the report; `progress` gets a line per step. Between steps it
/// looks at `stop`: once set, it returns what it has, marked interrupted.
pub fn run(config: &ReportConfig, stop: &AtomicBool, progress: &dyn Fn(&str)) -> Report {
    let q = config.quick;
    let mut report = Report {
        machine: machine(),
        quick: q,
        interrupted: false,
        clocks: None,
        unavailable: Vec::new(),
        clock_local: None,
        pairs: None,
        pairs_single: None,
        code_size: None,
        bh: None,
        counters: None,
        debug_preempt: None,
        hammer: None,
        kept_trace: None,
    };
    // Relaxed: a flag a signal handler sets; nothing else is published.
    let stopped = |r: &mut Report| {
        r.interrupted = stop.load(Ordering::Relaxed);
        r.interrupted
    };

    let cc = ClocksConfig {
        update_run: clock_row_run(q),
        update_hz: config.update_hz,
        ..ClocksConfig::default()
    };
    let clocks::ClocksRun { rows, unavailable } = clocks::run(
        &cc,
        &|name| progress(&format!("clocks: {name}")),
        // Relaxed: see `stopped`.
        &|| stop.load(Ordering::Relaxed),
    );
    report.unavailable = unavailable;
    progress("sched: irq over preempt, paired");
    let cost = if stop.load(Ordering::Relaxed) {
        Err("not run: the report was stopped first".to_owned())
    } else {
        clock_local::cost_half(if q { 15 } else { 60 }).map_err(|e| e.to_string())
    };
    let tc = TearConfig::report(q, config.update_hz);
    progress(&format!(
        "sched@preempt, faithful: {} s under {} updates/s",
        tc.faithful_run.as_secs_f64(),
        tc.faithful_hz
    ));
    let not_run = || Err("not run: the report was stopped first".to_owned());
    let faithful = if stop.load(Ordering::Relaxed) {
        not_run()
    } else {
        // Relaxed: see `stopped`.
        tear::measure_until("sched@preempt", tc.faithful_hz, tc.faithful_run, &|| {
            stop.load(Ordering::Relaxed)
        })
        .map_err(|e| e.to_string())
    };
    progress(&format!(
        "sched-wide@preempt, amplified: {} s under {} updates/s",
        tc.amplified_run.as_secs_f64(),
        tc.amplified_hz
    ));
    let amplified = if stop.load(Ordering::Relaxed) {
        not_run()
    } else {
        tear::measure("sched-wide@preempt", tc.amplified_hz, tc.amplified_run)
            .map_err(|e| e.to_string())
    };
    report.clock_local = Some(ClockLocal::new(cost, faithful, amplified, &rows));
    report.clocks = Some(rows);
    if stopped(&mut report) {
        return report;
    }

    progress("pairs");
    let pc = PairsConfig {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        samples: if q { 20_000 } else { 100_000 },
        highest: 1000,
        percentile: 99,
        irq: IrqBackend::Soft,
    };
    // Relaxed: see `stopped`.
    let stop_now = || stop.load(Ordering::Relaxed);
    report.pairs = Some(
        pairs::run_until(&pc, pairs::Method::Batched, &|| {}, &stop_now).map_err(|e| e.to_string()),
    );
    if stopped(&mut report) {
        return report;
    }
    let single_rounds = if q { 3 } else { 9 };
    let single_pc = PairsConfig {
        samples: if q { 500_000 } else { 2_000_000 },
        ..pc.clone()
    };
    let mut rounds = Vec::new();
    for round in 0..single_rounds {
        progress(&format!(
            "pairs, the patch's method: round {} of {single_rounds}, {} samples",
            round + 1,
            single_pc.samples
        ));
        match pairs::run_until(&single_pc, pairs::Method::Single, &|| {}, &stop_now) {
            Ok(r) => rounds.push(r),
            Err(e) => {
                report.pairs_single = Some(Err(e.to_string()));
                break;
            }
        }
        if stopped(&mut report) {
            break;
        }
    }
    if report.pairs_single.is_none() {
        report.pairs_single = Some(Ok(rounds));
    }
    progress("pairs: code size from the binary");
    report.code_size = Some(pairs::code_size().map_err(|e| e.to_string()));
    if stopped(&mut report) {
        return report;
    }

    let rounds = if q { 15 } else { 41 };
    progress("bh pair");
    report.bh = Some(instrumentation::bh_pair(rounds, 200_000));
    progress("per-CPU counters");
    report.counters = Some(instrumentation::counters(rounds, 2_000_000));
    progress("DEBUG_PREEMPT check");
    report.debug_preempt = Some(instrumentation::debug_preempt(rounds, 200_000));
    if stopped(&mut report) {
        return report;
    }

    let mut hammer_runs = Vec::new();
    for source in SourceName::ALL {
        let spec = ClockSpec {
            source,
            global: false,
            protection: Protection::Raw,
        };
        progress(&format!("hammer with {spec}"));
        if spec.build().is_err() {
            continue;
        }
        hammer_runs.push(hammer_repeats(spec, q));
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    report.hammer = Some(hammer_runs);
    if stopped(&mut report) {
        return report;
    }
    if let Some(path) = &config.keep_trace {
        progress("hammer, its trace kept");
        report.kept_trace = Some(keep_trace(path, q));
    }
    stopped(&mut report);
    report
}

/// One more hammer run, into the ring file at `path`, without a consumer so
/// that the file keeps all the ring holds at the end. Not one of the
/// measured runs: a file ring zeroes each page as it claims it, which
/// would change their figures.
fn keep_trace(path: &Path, quick: bool) -> KeptTrace {
    let hc = HammerConfig {
        duration: if quick {
            Duration::from_millis(300)
        } else {
            Duration::from_secs(1)
        },
        disable_reader: true,
        producer_nice: 0,
        file: Some(path.to_owned()),
        ..HammerConfig::default()
    };
    KeptTrace {
        path: path.to_string_lossy().into_owned(),
        clock: hc.clock.to_string(),
        seconds: hc.duration.as_secs_f64(),
        events: hammer::run(&hc)
            .map(|r| r.entries)
            .map_err(|e| e.to_string()),
    }
}

/// Three (quick) or five hammer runs with one clock.
fn hammer_repeats(spec: ClockSpec, quick: bool) -> HammerRepeats {
    let hc = HammerConfig {
        duration: if quick {
            Duration::from_millis(300)
        } else {
            Duration::from_secs(1)
        },
        clock: spec,
        producer_nice: 0,
        consumer_nice: 0,
        ..HammerConfig::default()
    };
    let runs: Vec<Result<HammerResult, String>> = (0..if quick { 3 } else { 5 })
        .map(|_| hammer::run(&hc).map_err(|e| e.to_string()))
        .collect();
    let ok = || runs.iter().filter_map(|r| r.as_ref().ok());
    let ns = ok().map(|h| h.ns_per_entry).collect();
    let cpu = ok().map(|h| h.ns_per_entry_cpu).collect();
    HammerRepeats {
        clock: spec.to_string(),
        ns_per_entry: Spread::of(ns),
        ns_per_entry_cpu: Spread::of(cpu),
        runs,
    }
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory, renamed over it: a full disk or a crash never leaves a
/// truncated file in place of a good one.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), WriteError> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            WriteError::Io {
                path: path.to_owned(),
                source,
            }
        })
}

impl Report {
    /// The report as JSON, with the patches table first.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({ "patches": self.patches() });
        if let (Some(map), Ok(serde_json::Value::Object(rest))) =
            (value.as_object_mut(), serde_json::to_value(self))
        {
            map.extend(rest);
        }
        value
    }

    /// Writes the report as JSON, atomically.
    pub fn write_json(&self, path: &std::path::Path) -> Result<(), WriteError> {
        let text = serde_json::to_string_pretty(&self.to_json())?;
        write_atomically(path, text.as_bytes())
    }
}
