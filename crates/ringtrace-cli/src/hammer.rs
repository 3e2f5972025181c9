//! `ringtrace hammer`: the kernel's kernel/trace/ring_buffer_benchmark.c in
//! userspace. Producers write 10-byte events in batches of
//! `write_iteration` between looks at the clock; a consumer reads them by
//! event or by page and checks every payload. As the module's, the
//! consumer sleeps and each producer wakes it every `wakeup_interval`
//! batches; it can spin instead.
//!
//! Besides the module's wall-clock figures, each producer reads its own
//! CPU time (CLOCK_THREAD_CPUTIME_ID), so a run whose threads share CPUs
//! still says what an entry costs the producer; a run with more busy
//! threads than CPUs says so in its warnings. The threads themselves are in
//! `hammer_threads.rs`.
//!
//! With [`HammerConfig::file`] the ring is a ring file carrying
//! [`trace_metadata`], so that `ringtrace dump` shows each event's
//! producer and sequence number ([`event_layout`]).

use crate::hammer_threads::{self, Consumed};
use ringtrace::export::{metadata_for_tracepoints, EventLayout, FieldDesc, TraceMetadata};
use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::{FieldKind, TracepointError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// How the consumer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadBy {
    /// `ring_buffer_consume`, one event at a time.
    Events,
    /// `ring_buffer_read_page`, a whole page swapped out at a time.
    Pages,
    /// Both, switching on every pass over the buffers, as the kernel's
    /// benchmark switches between runs when neither is asked for.
    Alternate,
}

impl ReadBy {
    /// `events` or `pages`.
    pub fn name(self) -> &'static str {
        match self {
            ReadBy::Events => "events",
            ReadBy::Pages => "pages",
            ReadBy::Alternate => "events and pages",
        }
    }
}

/// How the consumer waits when it finds the buffers empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsumerKind {
    /// Parks until a producer wakes it, every `wakeup_interval` batches
    /// (the kernel module's consumer, which schedules away until
    /// `wake_up_process`).
    #[default]
    Sleep,
    /// Yields and looks again at once: it takes a CPU whenever one is free.
    Spin,
}

impl ConsumerKind {
    /// `sleep` or `spin`.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerKind::Sleep => "sleep",
            ConsumerKind::Spin => "spin",
        }
    }
}

/// The longest a hammer run may last: a year.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A hammer run's settings (the kernel module's parameters, and more).
#[derive(Debug, Clone)]
pub struct HammerConfig {
    /// How long the producers run.
    pub duration: Duration,
    /// Events written between looks at the clock (`write_iteration`, 50).
    pub write_iteration: u32,
    /// No consumer (`disable_reader`).
    pub disable_reader: bool,
    /// How the consumer reads.
    pub read_by: ReadBy,
    /// How the consumer waits for events (sleep, as the kernel's).
    pub consumer: ConsumerKind,
    /// Batches of `write_iteration` events between a producer's wake-ups
    /// of a sleeping consumer (`wakeup_interval`, 100). The kernel's
    /// comment says events, its code counts batches (`cnt++` per batch);
    /// this follows the code.
    pub wakeup_interval: u32,
    /// The producers' nice level (19).
    pub producer_nice: i32,
    /// The consumer's nice level (19).
    pub consumer_nice: i32,
    /// The producers' SCHED_FIFO priority (0: off).
    pub producer_fifo: u8,
    /// The consumer's SCHED_FIFO priority (0: off).
    pub consumer_fifo: u8,
    /// The clock events are stamped with.
    pub clock: ClockSpec,
    /// Overwrite or discard.
    pub mode: Mode,
    /// Bytes per CPU buffer (1,000,000).
    pub buffer_size: usize,
    /// Producer threads, pinned one per CPU.
    pub producers: usize,
    /// Lay the ring out in this file (a flight recorder, read back with
    /// `ringtrace dump`), carrying the metadata that decodes its events
    /// ([`trace_metadata`]). `None`: anonymous memory, as the kernel's.
    pub file: Option<PathBuf>,
    /// Write into `file` if it exists (a ring of the same shape and clock
    /// whose writer is gone) rather than refuse it.
    pub append: bool,
    /// How the producers update the ring's per-CPU words: restartable
    /// sequences (no locked instruction) or compare-and-swap; `Auto`
    /// takes rseq where the machine has it (see `ringtrace_ring::rseq`).
    pub write_path: ringtrace_ring::WritePath,
    /// Overwrite mode: step over a page a preempted producer holds (true,
    /// the default) or refuse writes until it commits (see
    /// [`RingConfig::step_over`]).
    pub step_over: bool,
}

impl Default for HammerConfig {
    fn default() -> Self {
        HammerConfig {
            duration: Duration::from_secs(10),
            write_iteration: 50,
            disable_reader: false,
            read_by: ReadBy::Alternate,
            consumer: ConsumerKind::Sleep,
            wakeup_interval: 100,
            producer_nice: 19,
            consumer_nice: 19,
            producer_fifo: 0,
            consumer_fifo: 0,
            clock: ClockSpec {
                source: ringtrace_clock::SourceName::Local,
                global: false,
                protection: ringtrace_clock::Protection::Raw,
            },
            mode: Mode::Overwrite,
            buffer_size: 1_000_000,
            producers: 1,
            file: None,
            append: false,
            write_path: ringtrace_ring::WritePath::Auto,
            step_over: true,
        }
    }
}

/// What a run measured: the kernel's output, as numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HammerResult {
    /// Whether a stop (SIGINT, SIGTERM) ended the run before its duration:
    /// the figures are those of the shorter run.
    pub interrupted: bool,
    /// Wall time of the producers' run, in microseconds.
    pub time_us: u64,
    /// Events overwritten before they were read.
    pub overruns: u64,
    /// Events the consumer read (and checked).
    pub read: u64,
    /// Events still in the buffer at the end.
    pub entries: u64,
    /// entries + overruns + read.
    pub total: u64,
    /// Reservations that failed.
    pub missed: u64,
    /// Of `missed`, by cause, as the ring counted them: the buffer full
    /// (discard mode, the consumer behind).
    pub missed_full: u64,
    /// Of `missed`: the page to reuse still being written (a producer
    /// preempted inside a reservation, and no spare page left to step
    /// over it).
    pub missed_busy: u64,
    /// Of `missed`: the page to reuse being prepared (a file ring's zeroed
    /// pages all taken).
    pub missed_preparing: u64,
    /// Pages overwrite claims stepped over because a preempted producer
    /// held them: what would have been refusals with `step_over` off.
    pub pages_stepped_over: u64,
    /// Whether overwrite claims stepped over such pages (`--step-over`).
    pub step_over: bool,
    /// Reservations that succeeded, counted by the producers.
    pub hit: u64,
    /// hit per millisecond.
    pub entries_per_ms: u64,
    /// Nanoseconds per hit.
    pub ns_per_entry: f64,
    /// The clock's name.
    pub clock: String,
    /// `overwrite` or `discard`.
    pub mode: String,
    /// Producer threads.
    pub producers: usize,
    /// The producers' own CPU time, summed, in ns: each producer reads
    /// CLOCK_THREAD_CPUTIME_ID itself at its first batch and after its last.
    pub producer_cpu_ns: u64,
    /// Producer CPU time over producer wall time (summed over producers):
    /// 1.0 when each had a CPU to itself for the whole run.
    pub producer_cpu_share: f64,
    /// Producer CPU ns per hit (`producer_cpu_ns / hit`): the cost of an
    /// entry on the producer's CPU, without the time it waited for one
    /// (`ns_per_entry` counts wall time).
    pub ns_per_entry_cpu: f64,
    /// Each producer's own figures, in producer order.
    pub per_producer: Vec<ProducerStats>,
    /// How the consumer waited: `sleep`, `spin`, or `disabled`.
    pub consumer: String,
    /// Batches between wake-ups of the sleeping consumer (null unless the
    /// consumer sleeps).
    pub wakeup_interval: Option<u32>,
    /// Wake-ups the producers sent the sleeping consumer.
    pub wakeups: u64,
    /// Times the consumer found every buffer empty and parked (sleep) or
    /// yielded (spin).
    pub consumer_waits: u64,
    /// The consumer's own CPU time, in ns (0 without a consumer).
    pub consumer_cpu_ns: u64,
    /// CPUs this process may run on: available_parallelism, capped by the
    /// process's affinity mask.
    pub cpus_available: usize,
    /// Producers plus consumer outnumber `cpus_available`: the threads
    /// take turns on CPUs, and the wall-clock figures count the turns.
    pub oversubscribed: bool,
    /// How the consumer read (`events`, `pages`, or `disabled`).
    #[serde(skip)]
    pub read_by: String,
    /// Payloads that did not check out.
    #[serde(skip)]
    pub bad_payloads: u64,
    /// What the run warns of, as messages: first the oversubscription,
    /// when `oversubscribed`, then the scheduling requests that were
    /// refused.
    pub warnings: Vec<String>,
    /// The ring's file, when it had one (null otherwise).
    #[serde(serialize_with = "path_lossy")]
    pub trace_file: Option<PathBuf>,
    /// The write path the producers took: `rseq` or `cas`.
    pub write_path: String,
    /// Why the rseq path was not taken, when `write_path` is `cas` and
    /// `auto` was asked for (null otherwise).
    pub rseq_unavailable: Option<String>,
    /// Updates of a CPU buffer's words made from off its CPU on the rseq
    /// path (a producer moved between reserve and commit, the consumer's
    /// flush): each cost a membarrier system call. 0 on the CAS path.
    pub remote_updates: u64,
    /// Times a CPU buffer went into shared mode (remote updates had come
    /// often; its writers then took locked instructions instead of system
    /// calls). 0 on the CAS path.
    pub shared_mode_entries: u64,
}

/// One producer's own figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ProducerStats {
    /// The CPU it was pinned to (and wrote into the buffer of).
    pub cpu: usize,
    /// Reservations that succeeded.
    pub hit: u64,
    /// Reservations that failed.
    pub missed: u64,
    /// Wake-ups it sent the sleeping consumer.
    pub wakeups: u64,
    /// Its wall time from its first batch to after its last, in ns.
    pub wall_ns: u64,
    /// Its own CPU time (CLOCK_THREAD_CPUTIME_ID) over the same span, in ns.
    pub cpu_time_ns: u64,
    /// `cpu_time_ns / wall_ns`.
    pub cpu_share: f64,
    /// `cpu_time_ns / hit`: CPU ns per entry.
    pub ns_per_entry_cpu: f64,
}

/// Why a hammer run could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum HammerError {
    /// The clock cannot be built here.
    #[error(transparent)]
    Clock(#[from] ringtrace_clock::ClockError),
    /// The ring configuration is invalid.
    #[error(transparent)]
    Config(#[from] ringtrace_ring::ConfigError),
    /// A setting is out of range.
    #[error("{0}")]
    Invalid(String),
    /// The program's tracepoints cannot be described in the file: two
    /// share a name or an id.
    #[error(transparent)]
    Tracepoints(#[from] TracepointError),
    /// A producer or consumer thread could not be started.
    #[error("cannot start the {role} thread: {source}")]
    Spawn {
        /// "producer" or "consumer".
        role: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The most producer threads a run takes.
pub const MAX_PRODUCERS: usize = 1024;
/// The largest `--write-iteration`: a producer looks at the stop flag only
/// between batches, so a batch must stay short (a million events is some
/// tens of milliseconds).
pub const MAX_WRITE_ITERATION: u32 = 1_000_000;
/// The largest `--wakeup-interval`, in batches.
pub const MAX_WAKEUP_INTERVAL: u32 = 1_000_000;

/// Runs the hammer.
pub fn run(config: &HammerConfig) -> Result<HammerResult, HammerError> {
    run_until(config, &|| false)
}

/// Runs the hammer until `config.duration` is over or `stop` says so
/// (looked at every few milliseconds); a stopped run's result is a whole
/// result of a shorter run, marked [`HammerResult::interrupted`].
pub fn run_until(
    config: &HammerConfig,
    stop: &dyn Fn() -> bool,
) -> Result<HammerResult, HammerError> {
    if config.duration.is_zero() || config.duration > MAX_DURATION {
        return Err(HammerError::Invalid(format!(
            "--seconds {} is invalid: it must be more than 0 and at most {} (a year)",
            config.duration.as_secs_f64(),
            MAX_DURATION.as_secs()
        )));
    }
    if !(1..=MAX_PRODUCERS).contains(&config.producers) {
        return Err(HammerError::Invalid(format!(
            "--producers {} is invalid: it must be from 1 to {MAX_PRODUCERS}",
            config.producers
        )));
    }
    if !(1..=MAX_WRITE_ITERATION).contains(&config.write_iteration) {
        return Err(HammerError::Invalid(format!(
            "--write-iteration {} is invalid: it must be from 1 to {MAX_WRITE_ITERATION}",
            config.write_iteration
        )));
    }
    if !(1..=MAX_WAKEUP_INTERVAL).contains(&config.wakeup_interval) {
        return Err(HammerError::Invalid(format!(
            "--wakeup-interval {} is invalid: it must be from 1 to {MAX_WAKEUP_INTERVAL} \
             (batches of --write-iteration events between wake-ups of the consumer)",
            config.wakeup_interval
        )));
    }
    for (flag, fifo) in [
        ("--producer-fifo", config.producer_fifo),
        ("--consumer-fifo", config.consumer_fifo),
    ] {
        if fifo > 2 {
            return Err(HammerError::Invalid(format!(
                "{flag} {fifo} is invalid: use 0, 1 or 2"
            )));
        }
    }
    for (flag, nice) in [
        ("--producer-nice", config.producer_nice),
        ("--consumer-nice", config.consumer_nice),
    ] {
        if !(-20..=19).contains(&nice) {
            return Err(HammerError::Invalid(format!(
                "{flag} {nice} is invalid: it must be from -20 to 19"
            )));
        }
    }
    let clock: AnyClock = config.clock.build()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus_available = hammer_threads::cpus_available();
    let consumers = usize::from(!config.disable_reader);
    let oversubscribed = config.producers + consumers > cpus_available;
    let mut warnings = Vec::new();
    if oversubscribed {
        warnings.push(oversubscription(
            config.producers,
            consumers,
            cpus_available,
        ));
    }
    let mut ring_config = RingConfig::default()
        .per_cpu_bytes(config.buffer_size)
        .mode(config.mode)
        .cpus(ringtrace_ring::cpu::possible_cpus().max(cpus))
        .write_path(config.write_path)
        .step_over(config.step_over);
    if let Some(path) = &config.file {
        ring_config = ring_config
            .file(path)
            .append(config.append)
            .metadata(trace_metadata()?.to_bytes());
    } else if config.append {
        return Err(HammerError::Invalid(
            "--append applies to a ring file only; give one with --file".into(),
        ));
    }
    let ring = RingBuffer::new(ring_config, clock).map_err(|e| match e {
        e @ ringtrace_ring::ConfigError::BufferSize { .. } => {
            HammerError::Invalid(format!("--buffer-size {}: {e}", config.buffer_size))
        }
        e => e.into(),
    })?;
    let warnings = std::sync::Mutex::new(warnings);
    let hammer_threads::ThreadsRun {
        per_producer,
        consumed,
        elapsed,
        stopped,
    } = hammer_threads::run_threads(config, &ring, cpus, &warnings, stop)?;

    let hit: u64 = per_producer.iter().map(|p| p.hit).sum();
    let missed: u64 = per_producer.iter().map(|p| p.missed).sum();
    let producer_cpu_ns: u64 = per_producer.iter().map(|p| p.cpu_time_ns).sum();
    let producer_wall_ns: u64 = per_producer.iter().map(|p| p.wall_ns).sum();
    let wakeups: u64 = per_producer.iter().map(|p| p.wakeups).sum();
    let consumed: Consumed = consumed.unwrap_or_default();
    let stats = ring.stats();
    let read = consumed.read;
    let entries = stats.entries;
    let overruns = stats.overrun;
    let time_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let time_ms = time_us / 1000;
    let entries_per_ms = hit.checked_div(time_ms).unwrap_or(0);
    let ratio = |a: f64, b: u64| if b > 0 { a / b as f64 } else { 0.0 };
    Ok(HammerResult {
        interrupted: stopped,
        time_us,
        overruns,
        read,
        entries,
        total: entries + overruns + read,
        missed,
        missed_full: stats.full(),
        missed_busy: stats.busy,
        missed_preparing: stats.preparing,
        pages_stepped_over: stats.pages_stepped_over,
        step_over: config.step_over,
        hit,
        entries_per_ms,
        ns_per_entry: ratio(elapsed.as_nanos() as f64 * config.producers as f64, hit),
        clock: config.clock.to_string(),
        mode: config.mode.to_string(),
        producers: config.producers,
        producer_cpu_ns,
        producer_cpu_share: ratio(producer_cpu_ns as f64, producer_wall_ns),
        ns_per_entry_cpu: ratio(producer_cpu_ns as f64, hit),
        per_producer,
        consumer: if config.disable_reader {
            "disabled".into()
        } else {
            config.consumer.name().into()
        },
        wakeup_interval: (!config.disable_reader && config.consumer == ConsumerKind::Sleep)
            .then_some(config.wakeup_interval),
        wakeups,
        consumer_waits: consumed.waits,
        consumer_cpu_ns: consumed.cpu_time_ns,
        cpus_available,
        oversubscribed,
        read_by: if config.disable_reader {
            "disabled".into()
        } else {
            config.read_by.name().into()
        },
        bad_payloads: consumed.bad,
        warnings: warnings.into_inner().unwrap_or_else(|e| e.into_inner()),
        trace_file: ring.file_path().map(Path::to_owned),
        write_path: ring.write_path().to_string(),
        // Only when rseq could not run: a CAS path chosen by the
        // environment is said as chosen (see `text`), not as unavailable.
        rseq_unavailable: (ring.write_path() == ringtrace_ring::WritePath::Cas
            && config.write_path == ringtrace_ring::WritePath::Auto)
            .then(ringtrace_ring::rseq::unavailable)
            .flatten()
            .map(|why| why.to_string()),
        remote_updates: ring.remote_updates(),
        shared_mode_entries: ring.shared_mode_entries(),
    })
}

/// A path as a JSON string, bytes that are not UTF-8 replaced (serde's
/// own refuses such a path, which would lose the whole result).
fn path_lossy<S: serde::Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => s.serialize_str(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// The layout of the hammer's 10-byte events, which carry no tracepoint
/// id: the producer's number, its sequence number, and a check of the two
/// (`(producer ^ seq) * 0x9E3779B1`).
///
/// ```
/// let layout = ringtrace_cli::hammer::event_layout();
/// let names: Vec<&str> = layout.fields.iter().map(|f| f.name.as_str()).collect();
/// assert_eq!(names, ["producer", "seq", "check"]);
/// ```
pub fn event_layout() -> EventLayout {
    EventLayout {
        name: "hammer".into(),
        fields: vec![
            FieldDesc::new("producer", FieldKind::U16),
            FieldDesc::new("seq", FieldKind::U32),
            FieldDesc::new("check", FieldKind::U32),
        ],
        format: "producer={} seq={} check={:#x}".into(),
    }
}

/// What a hammer ring file carries: this program's tracepoints and the
/// hammer's [`event_layout`]. Fails if two tracepoints share a name.
pub fn trace_metadata() -> Result<TraceMetadata, TracepointError> {
    Ok(metadata_for_tracepoints()?.with_untagged(event_layout()))
}

/// The warning for more busy threads than CPUs, naming the numbers.
fn oversubscription(producers: usize, consumers: usize, cpus: usize) -> String {
    let threads = producers + consumers;
    let who = match consumers {
        0 => format!("{producers} producer{}", plural(producers)),
        _ => format!(
            "{producers} producer{} + {consumers} consumer = {threads} threads",
            plural(producers)
        ),
    };
    format!(
        "oversubscribed: {who} on {cpus} CPU{} available; they take turns on the CPUs, \
         so the wall-clock ns per entry counts the waiting (the producer CPU-time \
         figures do not)",
        plural(cpus)
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl HammerResult {
    /// The warnings other than the oversubscription: the scheduling
    /// requests that were refused.
    pub fn sched_warnings(&self) -> &[String] {
        let skip = usize::from(self.oversubscribed).min(self.warnings.len());
        &self.warnings[skip..]
    }

    /// The kernel's lines, in its order, then the producers' CPU time, the
    /// consumer's, and a line naming clock and mode.
    pub fn text(&self, config: &HammerConfig) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line("Starting ring buffer hammer".into());
        // As the kernel's: the FIFO priority where one was asked for, the
        // nice level otherwise (a refusal is among the warnings below).
        let at = |fifo: u8, nice: i32| match fifo {
            0 => format!("nice: {nice}"),
            p => format!("SCHED_FIFO {p}"),
        };
        if !config.disable_reader {
            line(format!(
                "Running Consumer at {}",
                at(config.consumer_fifo, config.consumer_nice)
            ));
        }
        line(format!(
            "Running Producer at {}",
            at(config.producer_fifo, config.producer_nice)
        ));
        for w in &self.warnings {
            line(format!("Warning: {w}"));
        }
        line("End ring buffer hammer".into());
        if self.interrupted {
            line(format!(
                "Interrupted: stopped by a signal before its {} s; the figures are of the shorter run",
                config.duration.as_secs_f64()
            ));
        }
        line(match (&self.rseq_unavailable, self.write_path.as_str()) {
            (_, "rseq") => format!(
                "Write path: rseq, no locked instruction on the producer's CPU ({} remote updates{})",
                self.remote_updates,
                match self.shared_mode_entries {
                    0 => String::new(),
                    n => format!(
                        "; a buffer went into shared mode {n} times, writing with locked instructions while remote updates came often"
                    ),
                }
            ),
            (Some(why), _) => {
                format!("Write path: cas (compare-and-swap; rseq unavailable: {why})")
            }
            (None, path) if config.write_path == ringtrace_ring::WritePath::Auto => format!(
                "Write path: {path} (compare-and-swap, chosen by {}={path})",
                ringtrace_ring::rseq::WRITE_PATH_ENV
            ),
            (None, path) => format!("Write path: {path} (compare-and-swap, as asked)"),
        });
        line(format!("Time:     {} (usecs)", self.time_us));
        line(format!("Overruns: {}", self.overruns));
        if self.read_by == "disabled" {
            line("Read:     (reader disabled)".into());
        } else {
            line(format!("Read:     {}  (by {})", self.read, self.read_by));
        }
        line(format!("Entries:  {}", self.entries));
        line(format!("Total:    {}", self.total));
        line(format!(
            "Missed:   {}  (full {}, page still being written {}, page being prepared {})",
            self.missed, self.missed_full, self.missed_busy, self.missed_preparing
        ));
        if !self.step_over && self.mode == "overwrite" {
            line("Step-over: off (writes that need a page a preempted producer holds are refused, as in the kernel's ring)".into());
        }
        if self.pages_stepped_over > 0 {
            line(format!(
                "Stepped over: {} pages a preempted producer held (its event counted as overrun when committed)",
                self.pages_stepped_over
            ));
        }
        line(format!("Hit:      {}", self.hit));
        line(format!("Entries per millisec: {}", self.entries_per_ms));
        if self.hit > 0 {
            line(format!("{} ns per entry", self.ns_per_entry.round() as u64));
        }
        line(format!(
            "Producer CPU: {} (usecs), {:.0}% of its wall time",
            self.producer_cpu_ns / 1000,
            self.producer_cpu_share * 100.0
        ));
        if self.hit > 0 {
            line(format!(
                "{} ns per entry of producer CPU time",
                self.ns_per_entry_cpu.round() as u64
            ));
        }
        if self.per_producer.len() > 1 {
            for (i, p) in self.per_producer.iter().enumerate() {
                line(format!(
                    "  producer {i} on CPU {}: {} (usecs) CPU, {:.0}% of its wall time, \
                     {} ns per entry of CPU time",
                    p.cpu,
                    p.cpu_time_ns / 1000,
                    p.cpu_share * 100.0,
                    p.ns_per_entry_cpu.round() as u64
                ));
            }
        }
        match self.wakeup_interval {
            _ if self.consumer == "disabled" => {}
            Some(every) => line(format!(
                "Consumer: sleep, woken every {every} batches: {} wake-ups, {} sleeps, \
                 {} (usecs) CPU",
                self.wakeups,
                self.consumer_waits,
                self.consumer_cpu_ns / 1000
            )),
            None => line(format!(
                "Consumer: {}: {} yields, {} (usecs) CPU",
                self.consumer,
                self.consumer_waits,
                self.consumer_cpu_ns / 1000
            )),
        }
        line(format!(
            "Clock: {}  Mode: {}  Producers: {}",
            self.clock, self.mode, self.producers
        ));
        if let Some(path) = &self.trace_file {
            line(format!(
                "Trace:    {} ({} events left in it{}; read it with `ringtrace dump {}`)",
                path.display(),
                self.entries,
                if self.consumer == "disabled" {
                    ""
                } else {
                    ", the consumer took the rest; --disable-reader keeps all the ring holds"
                },
                path.display()
            ));
        }
        if self.bad_payloads > 0 {
            line(format!(
                "[ERROR!] {} payloads did not match what was written",
                self.bad_payloads
            ));
        }
        out
    }
}
