//! `ringtrace clocks`: trace_clock_local's trade-off ("tracing: do not disable
//! interrupts for trace_clock_local"), measured for every clock source
//! under every protection.
//!
//! For each combination:
//! - `read_ns`: the median cost of one clock read;
//! - `record_ns`: the median cost of one recorded event (reserve, stamp,
//!   16-byte write, commit) on one CPU buffer;
//! - under updates ([`crate::update_run`]): a POSIX timer interrupts the
//!   writer at `--update-hz` with the `sched` data's update (a frequency
//!   change, as `set_cyc2ns_scale()`); for the `sched` sources, the torn
//!   readings, the wrong recorded timestamps and the events flattened
//!   behind a tear, against the exact reference, with the handler updating
//!   the clock data only and (a second run) also writing into the same
//!   buffer; for every source the ring's `ts_fixups`, and the updates
//!   delivered, deferred and per second. `sched-wide` rows are amplified
//!   (a wider window than the kernel's) and say so;
//! - `skew_ns`: the largest amount by which a read on one CPU was behind a
//!   read on another CPU that happened before it (two pinned threads taking
//!   turns); 0 for clocks that are monotonic across CPUs.
//!
//! A measurement that fails shows as an error in its row, never as zeros.

use crate::sched;
use crate::update_run::{self, UpdateHandler, UpdateRun};
use ringtrace_clock::{measure_read_cost, AnyClock, Clock, ClockSpec, SourceName, TickConversion};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// One clock under one protection.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClockRow {
    /// The source (`tsc`, `global:mono`, `sched`, ...).
    pub clock: String,
    /// The protection (`raw`, `preempt`, `irq-soft`, `irq`, `irq-hard`).
    pub protection: String,
    /// Median ns per read.
    pub read_ns: f64,
    /// Median ns per recorded event; `None` if the ring could not be made.
    pub record_ns: Option<f64>,
    /// Whether the source is an amplified setting (`sched-wide`).
    pub amplified: bool,
    /// The writer under updates, the handler updating the clock data.
    pub update: Result<UpdateRun, String>,
    /// The same with the handler also writing an event into the buffer
    /// (`sched` sources only).
    pub update_write: Option<Result<UpdateRun, String>>,
    /// Largest cross-CPU step back seen, in ns.
    pub skew_ns: f64,
}

/// A source that cannot work here, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Unavailable {
    /// The clock name.
    pub clock: String,
    /// Why it cannot work here.
    pub reason: String,
}

/// How long each measurement runs.
#[derive(Debug, Clone, Copy)]
pub struct ClocksConfig {
    /// The writer's run under updates, per combination and handler mode.
    pub update_run: Duration,
    /// Updates per second: how often the emulated interrupt rewrites the
    /// `sched` data.
    pub update_hz: u32,
    /// Turns of the cross-CPU ping-pong.
    pub skew_rounds: u32,
}

impl Default for ClocksConfig {
    fn default() -> Self {
        ClocksConfig {
            update_run: Duration::from_millis(150),
            update_hz: DEFAULT_UPDATE_HZ,
            skew_rounds: 2000,
        }
    }
}

/// A small ring for `clock`, as the cost and tick runs use: one buffer per
/// possible CPU, so that it takes the write path a program's ring gets
/// (rseq where the machine has it; see [`write_path_note`]).
pub(crate) fn small_ring(
    clock: AnyClock,
) -> Result<RingBuffer<AnyClock>, ringtrace_ring::ConfigError> {
    RingBuffer::new(
        RingConfig::default()
            .cpus(ringtrace_ring::cpu::possible_cpus())
            .per_cpu_bytes(256 * 1024)
            .mode(Mode::Overwrite),
        clock,
    )
}

/// Which write path the clocks' rings record through, as a line for the
/// reports: `rseq` (no locked instruction) or `cas`, and why not rseq.
pub fn write_path_note() -> String {
    let path = probe_ring().map(|r| r.write_path());
    let path = match path {
        Ok(path) => path,
        Err(e) => return format!("write path: none, the rings cannot be built: {e}"),
    };
    match (path, ringtrace_ring::rseq::unavailable()) {
        (ringtrace_ring::WritePath::Rseq, _) => {
            "write path: rseq (restartable sequences, no locked instruction on the writer's CPU)"
                .into()
        }
        (_, Some(why)) => format!("write path: cas (compare-and-swap; rseq unavailable: {why})"),
        (_, None) => format!(
            "write path: cas (compare-and-swap, chosen by {})",
            ringtrace_ring::rseq::WRITE_PATH_ENV
        ),
    }
}

/// A ring shaped as small_ring's: what the runs build, asked here first
/// (the environment may choose its path: ringtrace_ring::rseq::WRITE_PATH_ENV).
fn probe_ring() -> Result<RingBuffer<ringtrace_clock::Counter>, ringtrace_ring::ConfigError> {
    RingBuffer::new(
        RingConfig::default()
            .cpus(ringtrace_ring::cpu::possible_cpus())
            .per_cpu_bytes(8 * 1024),
        ringtrace_clock::Counter::new(),
    )
}

/// Whether the runs' rings can be built here: an error naming why not
/// (a `RINGTRACE_WRITE_PATH` that is not a path, or asks for rseq where
/// there is none), so that a command stops before a run whose every row
/// would be that error.
pub fn check_rings() -> Result<(), RingsError> {
    probe_ring().map(drop).map_err(RingsError)
}

/// The runs' rings cannot be built here; the ring's error names the
/// setting at fault and the valid ones.
#[derive(Debug, Error)]
#[error("the rings cannot be built: {0}")]
pub struct RingsError(#[source] pub ringtrace_ring::ConfigError);

/// One recorded event through a call, as an instrumented program makes
/// it: inlined into the timing loop, the event and the loop interleave and
/// measure worse than either (docs/design.md, ring performance). On the
/// caller's CPU, as a program records.
#[inline(never)]
fn record_once(ring: &RingBuffer<AnyClock>, payload: &[u8; 16]) {
    let _ = black_box(ring.write(payload));
}

/// ns per recorded event over `batches` batches of 256: their median.
pub(crate) fn record_cost_batches(ring: &RingBuffer<AnyClock>, batches: usize) -> f64 {
    let payload = [1u8; 16];
    let mut per: Vec<f64> = (0..batches.max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..256 {
                record_once(ring, black_box(&payload));
            }
            t.elapsed().as_nanos() as f64 / 256.0
        })
        .collect();
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// The largest step back between two pinned threads taking turns, in ticks.
fn skew(clock: &AnyClock, rounds: u32) -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return 0;
    }
    let baton = AtomicU64::new(0);
    let stamp = AtomicU64::new(0);
    let worst = AtomicU64::new(0);
    std::thread::scope(|s| {
        for side in 0..2u64 {
            let (baton, stamp, worst) = (&baton, &stamp, &worst);
            s.spawn(move || {
                let _ = sched::pin_to_cpu(side as usize);
                for turn in 0..u64::from(rounds) {
                    let mine = turn * 2 + side;
                    let deadline = Instant::now() + Duration::from_millis(50);
                    // Acquire: pairs with the other side's Release below, so
                    // its read happened before ours.
                    while baton.load(Ordering::Acquire) != mine {
                        if Instant::now() > deadline {
                            return;
                        }
                        std::hint::spin_loop();
                    }
                    let now = clock.read();
                    let theirs = stamp.load(Ordering::Relaxed);
                    if mine > 0 && theirs > now {
                        worst.fetch_max(theirs - now, Ordering::Relaxed);
                    }
                    stamp.store(now, Ordering::Relaxed);
                    baton.store(mine + 1, Ordering::Release);
                }
            });
        }
    });
    worst.load(Ordering::Relaxed)
}

/// What [`run`] measured, and what it could not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClocksRun {
    /// A row per clock and protection that works here.
    pub rows: Vec<ClockRow>,
    /// The clock sources that cannot work here, each with why.
    pub unavailable: Vec<Unavailable>,
}

/// Measures every available combination; lists the unavailable ones with
/// their reasons. `progress` is called after each combination; once `stop`
/// says so, the combinations not yet measured are left out.
pub fn run(config: &ClocksConfig, progress: &dyn Fn(&str), stop: &dyn Fn() -> bool) -> ClocksRun {
    let mut rows = Vec::new();
    let mut unavailable = Vec::new();
    for spec in ClockSpec::all() {
        if stop() {
            break;
        }
        let name = spec.to_string();
        let clock = match spec.build() {
            Ok(c) => c,
            Err(e) => {
                unavailable.push(Unavailable {
                    clock: name,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let conversion = clock
            .info()
            .conversion
            .unwrap_or(TickConversion::NANOSECONDS);
        let read_ns = match measure_read_cost(&clock, 101, 256) {
            Ok(cost) => cost.median_ns,
            Err(e) => {
                unavailable.push(Unavailable {
                    clock: name,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let skew_ns = conversion.ticks_to_ns(skew(&clock, config.skew_rounds)) as f64;
        let record_ns = small_ring(clock)
            .ok()
            .map(|ring| record_cost_batches(&ring, 101));
        let period = Duration::from_nanos(1_000_000_000 / u64::from(config.update_hz.max(1)));
        let under = |handler| {
            update_run::run(&spec, handler, config.update_run, period).map_err(|e| e.to_string())
        };
        let is_sched = matches!(
            spec.source,
            SourceName::Sched | SourceName::SchedLatch | SourceName::SchedWide
        );
        rows.push(ClockRow {
            clock: spec.source_label(),
            protection: spec.protection.to_string(),
            read_ns,
            record_ns,
            amplified: spec.source.is_amplified(),
            update: under(UpdateHandler::Update),
            update_write: (is_sched && !spec.global).then(|| under(UpdateHandler::UpdateAndWrite)),
            skew_ns,
        });
        progress(&name);
    }
    ClocksRun { rows, unavailable }
}

/// `a/b` as text, or `-` when not measured.
fn wrong_cell(w: Option<crate::update_run::Wrong>) -> String {
    w.map_or("-".to_owned(), |w| format!("{}/{}", w.ahead, w.behind))
}

/// The table: one line per combination and handler mode, then the
/// unavailable sources, then a legend.
pub fn text(rows: &[ClockRow], unavailable: &[Unavailable]) -> String {
    let mut out = format!(
        "{:<22} {:<9} {:>8} {:>10} {:<12} {:>9} {:>11} {:>11} {:>9} {:>9} {:>7} {:>9} {:>9}\n",
        "clock",
        "protect",
        "read_ns",
        "record_ns",
        "handler",
        "events",
        "torn",
        "wrong_rec",
        "flattened",
        "fixups",
        "updates",
        "update_hz",
        "skew_ns"
    );
    for r in rows {
        let record = r
            .record_ns
            .map_or("error".to_owned(), |v| format!("{v:.2}"));
        let clock = if r.amplified {
            format!("{} (amplified)", r.clock)
        } else {
            r.clock.clone()
        };
        let runs = std::iter::once(&r.update).chain(r.update_write.iter());
        for (i, run) in runs.enumerate() {
            let (a, b) = if i == 0 {
                (format!("{:.2}", r.read_ns), record.clone())
            } else {
                (String::new(), String::new())
            };
            match run {
                Ok(t) => out.push_str(&format!(
                    "{:<22} {:<9} {:>8} {:>10} {:<12} {:>9} {:>11} {:>11} {:>9} {:>9} {:>7} {:>9.0} {:>9.0}\n",
                    clock,
                    r.protection,
                    a,
                    b,
                    t.handler.name(),
                    t.events,
                    wrong_cell(t.wrong_readings),
                    wrong_cell(t.wrong_recorded),
                    t.flattened.map_or("-".to_owned(), |f| f.to_string()),
                    t.ts_fixups,
                    t.updates,
                    t.update_hz,
                    r.skew_ns
                )),
                Err(e) => out.push_str(&format!(
                    "{:<22} {:<9} {:>8} {:>10} error: {e}\n",
                    clock, r.protection, a, b
                )),
            }
        }
    }
    for u in unavailable {
        out.push_str(&format!("{}: unavailable: {}\n", u.clock, u.reason));
    }
    out.push_str(LEGEND);
    out
}

/// What the columns mean.
pub const LEGEND: &str = "\ntorn: readings the ring took that were ahead/behind the exact time (what every consistent generation of the sched clock data gives for the same cycle count): an update landed between the loads of the data. wrong_rec: timestamps recorded wrong, ahead/behind (the torn readings recorded, and the events flattened behind them). flattened: events whose reading was right but whose timestamp the ring's monotonic fixup raised to a torn reading ahead of it. `-` for sources that are single reads and cannot tear. fixups: timestamps the ring raised to keep time from going back. handler: the update only rewrites the clock data (update, as set_cyc2ns_scale() did on a frequency change), or also writes an event into the same buffer (update+write), which makes the interrupted writer's reservation fail and read the clock again, hiding tears. updates, update_hz: updates that ran on the writer's thread, and per second. skew_ns: the largest cross-CPU step back. (amplified): sched-wide, whose window (the multiply between the loads) is wider than the kernel's: it shows the mechanism, not the kernel's rate.\n";

/// The update rate `clocks` uses unless told otherwise: HZ=1000, the
/// fastest periodic interrupt a 2009 kernel ran. The frequency changes that
/// rewrote the data in 2009 came far less often.
pub const DEFAULT_UPDATE_HZ: u32 = 1000;
