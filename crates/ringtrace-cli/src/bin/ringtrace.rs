//! The `ringtrace` command.

use clap::{Parser, Subcommand, ValueEnum};
use ringtrace::clock::ClockSpec;
use ringtrace::ring::Mode;
use ringtrace_cli::hammer::{self, ConsumerKind, HammerConfig, ReadBy};
use ringtrace_ring::WritePath;
use std::process::ExitCode;
use std::time::Duration;

/// ringtrace: the kernel's ftrace ring buffer, trace clocks and preemptirq
/// tracepoints in userspace, and the measurements they were argued over.
#[derive(Parser)]
#[command(name = "ringtrace", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The kernel's ring_buffer_benchmark: producers write 10-byte events,
    /// a consumer reads and checks them.
    ///
    /// The consumer sleeps and each producer wakes it every
    /// --wakeup-interval batches, as the kernel module's; `--consumer spin`
    /// polls instead. Besides the module's wall-clock "ns per entry", each
    /// producer's own CPU time (CLOCK_THREAD_CPUTIME_ID) and the CPU ns per
    /// entry are reported, which do not count the time a producer waited
    /// for a CPU; a run with more producers and consumer than CPUs says so.
    /// With --file PATH the ring is laid out in that file (a flight
    /// recorder), which `ringtrace dump PATH` reads back.
    ///
    /// SIGINT or SIGTERM stops it early: the partial result is printed,
    /// marked interrupted, and the exit code is 128 + the signal.
    Hammer(HammerArgs),
    /// The kernel patch "tracing: do not disable interrupts for
    /// trace_clock_local", both halves: every clock source under every
    /// protection, with
    /// the cost of a read and of a recorded event, wrong timestamps under a
    /// timer tick (the `sched` sources tear unless irqs are masked or the
    /// data is latched), cross-CPU skew, and the irq-over-preempt cost
    /// ratio of `sched` paired per round.
    ///
    /// SIGINT or SIGTERM stops it early: the partial result is printed,
    /// marked interrupted, and the exit code is 128 + the signal.
    Clocks(ClocksArgs),
    /// walac/tracer-benchmark: irq and preempt disable/enable pairs timed
    /// on every CPU under the three instrumentation strategies of the kernel
    /// patch that makes the preemptirq tracepoints check their static key
    /// early.
    ///
    /// `--method batched` (the default) times K pairs back to back per
    /// sample and reports sample / K per pair, nothing subtracted; K is
    /// chosen per pair so that a sample spans at least 50 steps of the timer
    /// (the smallest nonzero difference of two consecutive reads), and is
    /// printed with the step. `--method single` times one pair per sample on
    /// the ns clock, nothing subtracted, the percentile from a separate run
    /// on CPU 0: the patch's own method, so absolute figures compare with
    /// its tables. A median or percentile under two timer steps per pair
    /// prints as `<bound`. Besides tracer-benchmark's average, max_avg,
    /// median and percentile: a trimmed mean (1% dropped at each end), the
    /// outliers (samples above 10x their CPU's median), each strategy minus
    /// baseline beside the patch's differences, and a verdict. Built with
    /// `--features static-keys`, early-key runs with patched keys, as in the
    /// kernel; the output says which ran.
    ///
    /// SIGINT or SIGTERM stops it early: the partial result is printed,
    /// marked interrupted, and the exit code is 128 + the signal.
    Pairs(PairsArgs),
    /// Every patch's finding in one run: a patches table (each kernel patch,
    /// its claim and figure, ours with its spread, a verdict), then
    /// trace_clock_local without irq disabling (cost and wrong timestamps),
    /// the preemptirq pairs, the bh pair's irq save/restore, per-CPU lock
    /// event counters, DEBUG_PREEMPT's check, every clock under a tick, and
    /// ring_buffer_benchmark per clock, repeated. Markdown on stdout,
    /// report.json and report.svg written (atomically). With --keep-trace
    /// DIR, one more hammer run's ring is kept in DIR/hammer.ring for
    /// `ringtrace dump`. SIGINT or SIGTERM stops it gracefully: what was
    /// measured so far is printed and written, marked interrupted, and the
    /// exit code is 128 + the signal (130 for SIGINT). As with `hammer`,
    /// `pairs` and `clocks`, signals within 3 s of the first are absorbed
    /// (a double Ctrl-C, `timeout -s INT`); one after that ends the run at
    /// once.
    Report(ReportArgs),
    /// Reads a ring file (a flight recorder: `hammer --file`, or a program's
    /// `RingConfig::file`) without its program and says what it holds.
    ///
    /// Prints the writer's state (died, live snapshot, closed, setting up),
    /// its pid and command, the clock, the geometry, the metadata, then for
    /// each CPU the events recovered and those skipped (pending:
    /// reservations open when the writer stopped; unreadable; changed
    /// while read, for a live ring), the accounting words (hit, read,
    /// overrun, lost, discarded, missed, ts_fixups), any problem (counts
    /// that do not add up, damaged pages) in words, and a total. Exits 0
    /// when the file was read, even in part; 2 with the file named when it
    /// cannot be (not a ringtrace file, another version, cut off in its
    /// header).
    Recover(RecoverArgs),
    /// Prints every event of ring files or `record` sessions, every CPU
    /// and process merged in time order, in ftrace's text format:
    /// `<comm>-<tid> [cpu] <seconds>: <event>: <fields>`.
    ///
    /// `#` lines first: the file, the writer, the clock, the wall-clock
    /// anchor (UTC), what the timestamps count from, the metadata, and the
    /// events recovered and skipped (for a live ring, how many the
    /// snapshot may miss). Fields are decoded by the metadata in the file,
    /// not by this program's tracepoints. The tid is the one a tracepoint
    /// event carries, and the writer's pid for an event without one (the
    /// hammer's). Timestamps are seconds with nine decimals since the ring
    /// was opened (or the first event, if earlier); a clock whose ticks are
    /// not time (`counter`) prints raw ticks, and the `#` lines say so. A
    /// payload that cannot be decoded (unknown id, fields cut off) prints
    /// as hex with the reason.
    ///
    /// Several ring files (one per process: a program and its children)
    /// are merged in time order, each line with its own process's comm,
    /// the `#` lines describing every process. Their clocks must compare
    /// (the same clock, ordered globally: `mono`, `boot`, `tsc-ordered`...), or
    /// `--align-wall-clock` places each by its wall-clock anchor.
    Dump(DumpArgs),
    /// Writes the events of ring files or `record` sessions in another
    /// tool's format: `text` (`ringtrace dump`'s lines), `trace-cmd` (a
    /// trace.dat that `trace-cmd report -i FILE` reads), `chrome` (the
    /// trace-event JSON that Perfetto UI and chrome://tracing open), `ctf`
    /// (a CTF 1.8 trace directory for babeltrace2 and Trace Compass),
    /// `perfetto` (Perfetto's own protobuf trace: thread, async task,
    /// per-CPU and counter tracks, flows, a clock snapshot), `parquet`
    /// (tables for SQL engines) or `otlp` (span trees to an OpenTelemetry
    /// collector). The output is
    /// written under a temporary name and renamed when complete, so a
    /// failure leaves no half-written file. docs/export.md maps the fields.
    ///
    /// Beyond one machine: `parquet` writes tables (events, spans, losses,
    /// processes, preemptirq sections) with a host column for SQL engines
    /// (docs/analysis.md); `otlp` sends the trace's span trees to an
    /// OpenTelemetry collector over OTLP/HTTP (`--endpoint`), keeping only
    /// the trees the `--keep` rules keep (tail sampling, decided over each
    /// whole tree after recording), and the events outside spans as log
    /// records.
    ///
    /// Several ring files (one per process) make one trace, merged in time
    /// order, each event shown with its process's pid and name; their
    /// clocks must compare, or `--align-wall-clock` places each by its
    /// wall-clock anchor.
    Export(ExportArgs),
    /// Streams the rings of a command and every process it starts into a
    /// session directory, until they have all exited:
    /// `ringtrace record -o trace -- ./my-program args`.
    ///
    /// The command is started with RINGTRACE_SESSION=DIR in its
    /// environment (inherited by its children); a program whose tracer is
    /// built with `Tracer::builder().from_env()` records into a ring file
    /// in DIR/rings/, which the recorder finds, drains in place every few
    /// milliseconds into per-CPU chunks, and, when the process exits and
    /// no other process (a child forked with the ring) maps it, drains to
    /// its end (recovering it when the process died with it open). Each process's pid, command, clock and exit are noted; losses
    /// are counted per CPU and cause. `--attach RING...` drains ring files
    /// that exist instead of starting a command. `ringtrace dump DIR` and
    /// `ringtrace export DIR` read the session. SIGINT or SIGTERM is passed
    /// on to the command and to every process still writing a ring of the
    /// session (not to rings named with `--attach`); the recorder drains what it has and finishes the
    /// session (within 5 s), exit code 128 + the signal. Otherwise the
    /// exit code is the command's (128 + its signal if one killed it).
    Record(RecordArgs),
    /// The figures people ask of a trace, computed by ringtrace's own
    /// reader exactly as docs/analysis.md's SQL computes them from the
    /// Parquet export: the slowest spans by name (count, p50 and p99 by
    /// nearest rank, max, total), the time in each span name per thread
    /// (busy time, counted on the thread that created each span), the
    /// events lost per CPU and second, and the preemptirq sections longer
    /// than --section-threshold, longest first. Tables, or one JSON object
    /// with --json.
    ///
    /// Several ring files (one per process) or sessions make one trace, as
    /// for `dump`; their clocks must compare, or `--align-wall-clock`
    /// places each by its wall-clock anchor.
    Stats(StatsArgs),
}

#[derive(clap::Args)]
struct StatsArgs {
    /// The ring files or `ringtrace record` session directories: one, or
    /// several (one per process), read as one trace.
    #[arg(required = true, value_name = "FILE|SESSION_DIR")]
    files: Vec<std::path::PathBuf>,
    /// Place each process's events by its wall-clock anchor, for inputs
    /// whose clocks do not compare; without it such inputs are refused.
    #[arg(long)]
    align_wall_clock: bool,
    /// Report the preemptirq sections longer than this: a number and a
    /// unit, ns, us, ms or s (e.g. 10us, 1.5ms).
    #[arg(long, value_name = "DURATION", default_value = "10us")]
    section_threshold: String,
    /// Print the figures as one JSON object (the SQL queries' column
    /// names) instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct RecordArgs {
    /// The session directory: it must not exist (its parent must) or be
    /// empty.
    #[arg(short = 'o', long)]
    output: std::path::PathBuf,
    /// Drain these existing ring files instead of starting a command.
    /// Draining consumes: the events drained are in the session and no
    /// longer readable from the file, as from any reader's (copy a
    /// flight recorder's file first to keep it whole).
    #[arg(long, num_args = 1.., value_name = "RING_FILE", conflicts_with = "command")]
    attach: Option<Vec<std::path::PathBuf>>,
    /// What a program's writers do when the recorder falls behind:
    /// `discard` (refuse new events, counted per CPU and cause),
    /// `blocking` (wait up to --blocking-timeout, then count a loss) or
    /// `overwrite` (a flight recorder: the oldest undrained events go).
    #[arg(long, default_value = "discard", value_parser = ["discard", "blocking", "overwrite"],
          conflicts_with = "attach")]
    mode: String,
    /// With `--mode blocking`: the longest a writer waits for room, in
    /// milliseconds (1 to 60000; 1000 when not given).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=60_000),
          conflicts_with = "attach")]
    blocking_timeout: Option<u64>,
    /// Bytes per CPU buffer of each program's ring (K, M, G suffixes);
    /// the program's own when not given.
    #[arg(long, value_parser = parse_size_arg, conflicts_with = "attach")]
    buffer_size: Option<u64>,
    /// The clock every program stamps with (`mono`, `tsc`, `boot`, ...);
    /// the programs' own when not given. Processes must share a clock that
    /// compares across processes for their events to be merged.
    #[arg(long, conflicts_with = "attach")]
    clock: Option<String>,
    /// Finish a chunk when it holds this many bytes (K, M, G suffixes).
    #[arg(long, value_parser = parse_size_arg)]
    rotate_size: Option<u64>,
    /// Finish a chunk when it has been open this many seconds.
    #[arg(long)]
    rotate_time: Option<f64>,
    /// Keep the session under this many bytes by deleting its oldest
    /// finished chunks (a flight recorder for days); what they held is
    /// counted as rotated out.
    #[arg(long, value_parser = parse_size_arg)]
    max_size: Option<u64>,
    /// Compress each finished chunk with zstd at this level (1 to 22, the
    /// levels above 19 using much more memory; 3 is zstd's default).
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "3", value_parser = parse_zstd_level)]
    zstd: Option<i32>,
    /// Print each event as it is drained, as `ringtrace dump` prints it.
    #[arg(long)]
    live: bool,
    /// Keep each ring file in DIR/rings/ once drained (removed by default:
    /// the session holds everything it had). Files given to --attach are
    /// never removed, though what was drained from them is consumed.
    #[arg(long)]
    keep_rings: bool,
    /// Run the recorder under SCHED_FIFO at this priority (1 to 99), as
    /// `perf record -r` does, so that it drains as soon as it wakes rather
    /// than after another task's time slice (in discard mode, events lost
    /// while it waits). Needs root or CAP_SYS_NICE; the command runs under
    /// the normal policy.
    #[arg(long, value_name = "PRIORITY", value_parser = clap::value_parser!(u8).range(1..=99))]
    realtime: Option<u8>,
    /// With --endpoint URL, the span trees of every traced process are
    /// sent to an OpenTelemetry collector as they are drained (OTLP/HTTP;
    /// the options are `export --format otlp`'s). A collector that is down
    /// or slow never holds the drain back: what cannot be sent is
    /// counted.
    #[command(flatten)]
    fleet: ringtrace_cli::fleet::FleetArgs,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<std::ffi::OsString>,
}

/// `--zstd`'s level: an integer, its range checked with the session's
/// other options.
fn parse_zstd_level(text: &str) -> Result<i32, String> {
    text.trim().parse::<i32>().map_err(|_| {
        format!(
            "{text:?} is not a zstd level: give a whole number from 1 to 22 (3 is zstd's default)"
        )
    })
}

fn parse_size_arg(text: &str) -> Result<u64, String> {
    ringtrace_cli::record::parse_size(text)
}

/// A size in memory: [`parse_size_arg`], within this machine's `usize`.
fn parse_buffer_size(text: &str) -> Result<usize, String> {
    let n = parse_size_arg(text)?;
    usize::try_from(n).map_err(|_| format!("`{text}` does not fit in this machine's memory"))
}

#[derive(clap::Args)]
struct ExportArgs {
    /// The ring files or sessions: one, or several (one per process),
    /// merged in time order with each event's process shown. A session
    /// and the ring file its program streamed from (a program killed
    /// while streaming) read as that one process.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    /// Place each process's events by its wall-clock anchor, for ring
    /// files whose clocks do not compare (a `counter`, per-CPU clocks,
    /// different clocks); without it such files are refused.
    #[arg(long)]
    align_wall_clock: bool,
    /// The format to write: `text` (ftrace's lines), `trace-cmd` (a
    /// trace.dat), `chrome` (Chrome trace-event JSON: spans, instants,
    /// counters and `lost` markers), `ctf` (a CTF 1.8 directory, which
    /// must not exist or be empty), `perfetto` (Perfetto's protobuf
    /// trace, for ui.perfetto.dev), `parquet` (a directory of tables for
    /// SQL engines: docs/analysis.md) or `otlp` (span trees sent to an
    /// OpenTelemetry collector at --endpoint; no -o).
    #[arg(long, default_value = "text")]
    format: String,
    /// Where to write it: a file (`-` for standard output), or for `ctf`
    /// and `parquet` a directory. Never the ring file itself, nor another
    /// ring file (remove one first to replace it). Not with `otlp`.
    #[arg(short = 'o', long)]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    fleet: ringtrace_cli::fleet::FleetArgs,
}

#[derive(clap::Args)]
struct RecoverArgs {
    /// The ring file.
    file: std::path::PathBuf,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct DumpArgs {
    /// The ring files or sessions: one, or several (one per process),
    /// merged in time order with each event's process shown. A session
    /// and the ring file its program streamed from (a program killed
    /// while streaming) read as that one process.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    /// Place each process's events by its wall-clock anchor, for ring
    /// files whose clocks do not compare (a `counter`, per-CPU clocks,
    /// different clocks); without it such files are refused.
    #[arg(long)]
    align_wall_clock: bool,
    /// Only this CPU buffer's events (0 to the file's CPU count - 1).
    #[arg(long, allow_negative_numbers = true)]
    cpu: Option<usize>,
    /// Each payload as hex instead of decoded fields.
    #[arg(long)]
    raw: bool,
    /// One JSON object per event and line (cpu, ts in ticks, ns, wall_ns,
    /// event, kind, tid, lost_before: events of its CPU lost just before
    /// it, and fields or raw hex), without the `#` lines
    /// (`recover --json` has those).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ReportArgs {
    /// Keep the whole run under a minute on 2 cores (fewer rounds and
    /// shorter runs: wider intervals).
    #[arg(long)]
    quick: bool,
    /// Where report.json and report.svg go.
    #[arg(long, default_value = ".")]
    out: std::path::PathBuf,
    /// Print the JSON on stdout instead of the markdown.
    #[arg(long)]
    json: bool,
    /// After the measured runs, run the hammer once more without a
    /// consumer into DIR/hammer.ring (a ring file; read it with `ringtrace
    /// dump`). DIR is created (mode 0700) if missing; a DIR that is a file,
    /// or a hammer.ring already in it, is refused before the run.
    #[arg(long, value_name = "DIR")]
    keep_trace: Option<std::path::PathBuf>,
    /// Updates per second of the `sched` data in the faithful tear run and
    /// the clocks' rows (1 to 20000; default 1000, HZ=1000). The faithful
    /// run lasts 30 s (5 s with --quick); a faster update tightens the
    /// bound on torn readings per update in the same time.
    #[arg(long, default_value_t = ringtrace_cli::clocks::DEFAULT_UPDATE_HZ,
          value_parser = clap::value_parser!(u32).range(1..=20_000))]
    update_hz: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum IrqArg {
    Soft,
    Hard,
}

#[derive(clap::Args)]
struct PairsArgs {
    /// Threads, one per CPU (default: every CPU).
    #[arg(long, allow_negative_numbers = true)]
    cpus: Option<usize>,
    /// How a sample is timed: batched (K pairs per sample on the local
    /// timer) or single (one pair per sample on the ns clock, as the patch).
    #[arg(long, default_value = "batched", value_parser = method_parser())]
    method: ringtrace_cli::pairs::Method,
    /// Samples of each pair per thread and strategy, 1 to 10^8 (default:
    /// 100000 batches with --method batched, 10^7 with --method single).
    #[arg(long, allow_negative_numbers = true)]
    samples: Option<usize>,
    /// How many of the largest samples make max_avg (1 or more).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    highest: usize,
    /// The percentile reported, 0 to 100.
    #[arg(long, default_value_t = 99, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    percentile: u32,
    /// The irq mask: soft (lazy, a flag) or hard (pthread_sigmask).
    #[arg(long, value_enum, default_value = "soft")]
    irq: IrqArg,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReadArg {
    Events,
    Pages,
}

#[derive(Clone, Copy, ValueEnum)]
enum ConsumerArg {
    /// Sleeps until a producer wakes it (the kernel module's consumer).
    Sleep,
    /// Polls the buffers, yielding when they are empty.
    Spin,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnOffArg {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Overwrite,
    Discard,
}

#[derive(clap::Args)]
struct HammerArgs {
    /// How long the producers run, in seconds (fractions allowed).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Events written between looks at the clock (1 to 10^6).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    write_iteration: u32,
    /// Run without a consumer.
    #[arg(long)]
    disable_reader: bool,
    /// Read by events or by pages (default: switch between the two).
    #[arg(long, value_enum, conflicts_with = "disable_reader")]
    read: Option<ReadArg>,
    /// How the consumer waits for events.
    #[arg(
        long,
        value_enum,
        default_value = "sleep",
        conflicts_with = "disable_reader"
    )]
    consumer: ConsumerArg,
    /// Batches of --write-iteration events between a producer's wake-ups of
    /// the sleeping consumer (1 to 10^6; the kernel's wakeup_interval).
    #[arg(long, default_value_t = 100, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    wakeup_interval: u32,
    /// The producers' nice level (-20 to 19).
    #[arg(long, default_value_t = 19, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    producer_nice: i32,
    /// The consumer's nice level (-20 to 19). Accepted, and without
    /// effect, with --disable-reader, so that scripts may pass both.
    #[arg(
        long,
        default_value_t = 19,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(-20..=19)
    )]
    consumer_nice: i32,
    /// The producers' SCHED_FIFO priority: 0 (off), 1 or 2.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=2))]
    producer_fifo: u8,
    /// The consumer's SCHED_FIFO priority: 0 (off), 1 or 2.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=2),
          conflicts_with = "disable_reader")]
    consumer_fifo: u8,
    /// The clock, SOURCE[@PROTECTION]: a source such as tsc, mono-raw,
    /// local, sched or global:SOURCE, a protection raw, preempt, irq-soft,
    /// irq or irq-hard (a bad name's error lists them all; `ringtrace
    /// clocks` measures them).
    #[arg(long, default_value = "local")]
    clock: String,
    /// What a full buffer does.
    #[arg(long, value_enum, default_value = "overwrite")]
    mode: ModeArg,
    /// Bytes per CPU buffer (K, M, G suffixes, as `record` takes them).
    #[arg(long, default_value = "1000000", value_parser = parse_buffer_size)]
    buffer_size: usize,
    /// Producer threads, pinned one per CPU (1 to 1024).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    producers: u64,
    /// Lay the ring out in this file (a flight recorder) with the metadata
    /// that decodes its events; read it with `ringtrace dump PATH` or
    /// `ringtrace recover PATH`. An existing file or a symbolic link is
    /// refused. The consumer still reads (and so removes) events; with
    /// --disable-reader the file keeps all the ring holds at the end.
    #[arg(long, value_name = "PATH")]
    file: Option<std::path::PathBuf>,
    /// With --file: write into the file if it exists (a ring of the same
    /// shape and clock whose writer is gone), going on from where it ended.
    #[arg(long, requires = "file")]
    append: bool,
    /// How producers update the ring: `rseq` (restartable sequences, no
    /// locked instruction while a producer stays on its CPU), `cas`
    /// (compare-and-swap with locked instructions, correct anywhere),
    /// `auto` (rseq where this machine has it), or `both`: one run on
    /// each, rseq first, printed one after the other (a JSON array).
    #[arg(long, value_enum, default_value = "auto")]
    write_path: WritePathArg,
    /// Overwrite mode: `on` (the default) steps over a page a preempted
    /// producer still holds, with a spare page, and counts its event as
    /// overrun when it lands; `off` refuses every write that needs that
    /// page until the producer runs again, as the kernel's ring does.
    #[arg(long, value_enum, default_value = "on")]
    step_over: OnOffArg,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum WritePathArg {
    Auto,
    Rseq,
    Cas,
    Both,
}

#[derive(clap::Args)]
struct ClocksArgs {
    /// How long the writer runs under clock updates per clock, protection
    /// and handler mode, in ms (1 to 60000).
    #[arg(long, alias = "tick-ms", default_value_t = 150,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    run_ms: u64,
    /// Updates per second of the `sched` data (1 to 20000): a POSIX timer
    /// aimed at the writer thread whose handler does what
    /// set_cyc2ns_scale() did on a frequency change. The default, 1000, is
    /// HZ=1000, the fastest periodic interrupt of 2009; the frequency
    /// changes that really rewrote the data came far less often. (Above
    /// 20000, a handler that writes can take all of the writer's time.)
    #[arg(long, default_value_t = ringtrace_cli::clocks::DEFAULT_UPDATE_HZ,
          value_parser = clap::value_parser!(u32).range(1..=20_000))]
    update_hz: u32,
    /// How long the faithful tear run (sched@preempt under --update-hz)
    /// lasts, in seconds (1 to 3600); the amplified one (sched-wide at 20
    /// kHz) lasts a tenth of it.
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    tear_seconds: u64,
    /// Rounds of the paired irq-over-preempt cost ratio (1 to 1000).
    #[arg(long, default_value_t = 21,
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    rounds: u64,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let result = match cli.command {
        Command::Hammer(args) => hammer_cmd(args),
        Command::Clocks(args) => clocks_cmd(args),
        Command::Pairs(args) => pairs_cmd(args),
        Command::Report(args) => report_cmd(args),
        Command::Recover(args) => recover_cmd(args),
        Command::Dump(args) => dump_cmd(args),
        Command::Export(args) => export_cmd(args),
        Command::Record(args) => record_cmd(args),
        Command::Stats(args) => stats_cmd(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say(format_args!("ringtrace: {e}"));
            ExitCode::from(2)
        }
    }
}

/// Prints `message` on standard error as one line, its controls escaped
/// as a dump's strings are (its backslashes kept: a value in it quoted
/// with `{:?}` is escaped already): a file name or a trace's string in an
/// error reaches the terminal as text, never as a control sequence it
/// obeys or a line break that forges another message.
fn say(message: std::fmt::Arguments<'_>) {
    eprintln!(
        "{}",
        ringtrace::export::text::escape_message(&message.to_string())
    );
}

/// What `Cli::parse` does with a usage error, `--help` or `--version`
/// (print it, exit 2 or 0), except that a failed write is not a success:
/// `--help > /dev/full` is an error, and a closed pipe (`--help | true`)
/// exits 141, as every command's output does.
fn clap_exit(e: &clap::Error) -> ExitCode {
    use std::io::Write;
    let code = u8::try_from(e.exit_code()).unwrap_or(2);
    if e.use_stderr() {
        // Usage errors: clap's own printing, to stderr.
        let _ = e.print();
        return ExitCode::from(code);
    }
    // Help and version, rendered here rather than by `print`, which does
    // not report a closed pipe (clap is built without colour).
    let text = e.render().to_string();
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::from(code),
        Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(w) => {
            eprintln!("ringtrace: cannot write to stdout: {w}");
            ExitCode::from(2)
        }
    }
}

fn hammer_cmd(args: HammerArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!(
            "--seconds {} is invalid: give seconds, from 0.001 to {} (a year)",
            args.seconds,
            ringtrace_cli::hammer::MAX_DURATION.as_secs()
        )
        .into());
    }
    if args.seconds < 0.001 {
        return Err(format!(
            "--seconds {} is too short: the least is 0.001 (one millisecond)",
            args.seconds
        )
        .into());
    }
    let most = ringtrace_cli::hammer::MAX_DURATION;
    let duration = Duration::try_from_secs_f64(args.seconds)
        .ok()
        .filter(|d| *d <= most)
        .ok_or_else(|| {
            format!(
                "--seconds {} is too large: the most is {} (a year)",
                args.seconds,
                most.as_secs()
            )
        })?;
    let config = HammerConfig {
        duration,
        write_iteration: args.write_iteration,
        disable_reader: args.disable_reader,
        read_by: match args.read {
            Some(ReadArg::Pages) => ReadBy::Pages,
            Some(ReadArg::Events) => ReadBy::Events,
            None => ReadBy::Alternate,
        },
        consumer: match args.consumer {
            ConsumerArg::Sleep => ConsumerKind::Sleep,
            ConsumerArg::Spin => ConsumerKind::Spin,
        },
        wakeup_interval: args.wakeup_interval,
        producer_nice: args.producer_nice,
        consumer_nice: args.consumer_nice,
        producer_fifo: args.producer_fifo,
        consumer_fifo: args.consumer_fifo,
        clock: args.clock.parse::<ClockSpec>()?,
        mode: match args.mode {
            ModeArg::Overwrite => Mode::Overwrite,
            ModeArg::Discard => Mode::Discard,
        },
        buffer_size: args.buffer_size,
        producers: args.producers as usize,
        file: args.file,
        append: args.append,
        write_path: WritePath::Auto,
        step_over: args.step_over == OnOffArg::On,
    };
    let paths: &[WritePath] = match args.write_path {
        WritePathArg::Auto => &[WritePath::Auto],
        WritePathArg::Rseq => &[WritePath::Rseq],
        WritePathArg::Cas => &[WritePath::Cas],
        WritePathArg::Both => &[WritePath::Rseq, WritePath::Cas],
    };
    if paths.len() > 1 && config.file.is_some() {
        return Err("--write-path both makes two runs, and --file names one ring file; give one path, or no --file".into());
    }
    ringtrace_cli::stop::install()?;
    let mut results = Vec::new();
    for &write_path in paths {
        if ringtrace_cli::stop::requested() {
            break;
        }
        let config = HammerConfig {
            write_path,
            ..config.clone()
        };
        let result = timed("hammer", config.duration, || {
            hammer::run_until(&config, &ringtrace_cli::stop::requested)
        })?;
        if !args.json {
            if paths.len() > 1 {
                emit(&format!("== write path {write_path}\n"))?;
            }
            emit(&result.text(&config))?;
        }
        results.push(result);
    }
    if args.json {
        // One object for one write path, an array for both, however
        // many runs a stop signal left.
        let out = match results.as_slice() {
            [one] if paths.len() == 1 => serde_json::to_string_pretty(one)?,
            _ => serde_json::to_string_pretty(&results)?,
        };
        emit(&format!("{out}\n"))?;
        // The oversubscription is in the JSON (`oversubscribed`,
        // `warnings`); refused scheduling requests are also said here.
        for w in results.iter().flat_map(|r| r.sched_warnings()) {
            eprintln!("ringtrace: warning: {w}");
        }
    }
    let bad: u64 = results.iter().map(|r| r.bad_payloads).sum();
    if bad > 0 && args.json {
        eprintln!("[ERROR!] {bad} payloads did not match what was written");
    }
    if let Some(code) = stopped_exit("the result") {
        return Ok(if bad > 0 { ExitCode::from(1) } else { code });
    }
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn clocks_cmd(args: ClocksArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    // The rings must be buildable (RINGTRACE_WRITE_PATH may forbid them)
    // before a run whose every row would be the same error.
    ringtrace_cli::clocks::check_rings()?;
    if u64::from(args.update_hz) * args.run_ms < 1000 {
        return Err(format!(
            "--update-hz {} is too slow for the run (--run-ms {}): no update would come; \
             give at least {} updates/s or a longer run",
            args.update_hz,
            args.run_ms,
            1000u64.div_ceil(args.run_ms)
        )
        .into());
    }
    let config = ringtrace_cli::clocks::ClocksConfig {
        update_run: Duration::from_millis(args.run_ms),
        update_hz: args.update_hz,
        ..Default::default()
    };
    use ringtrace_cli::stop;
    stop::install()?;
    let progress = bar(ClockSpec::all().len() as u64 + 1, "clocks");
    let ringtrace_cli::clocks::ClocksRun {
        rows, unavailable, ..
    } = ringtrace_cli::clocks::run(
        &config,
        &|name| {
            progress.inc(1);
            progress.set_message(name.to_owned());
        },
        &stop::requested,
    );
    use ringtrace_cli::clock_local::cost;
    const NOT_RUN: &str = "not run: stopped by a signal first";
    progress.set_message("trace_clock_local cost: hammer, sched@irq against sched@preempt, paired");
    let cost = if stop::requested() {
        Err(NOT_RUN.to_owned())
    } else {
        cost::measure(args.rounds as usize, cost::RUN).map_err(|e| e.to_string())
    };
    let cost_finding = cost::finding(&cost);
    progress.set_message("sched: torn readings, faithful and amplified");
    let tear_run = Duration::from_secs(args.tear_seconds);
    let faithful = if stop::requested() {
        Err(NOT_RUN.to_owned())
    } else {
        ringtrace_cli::clock_local::tear::measure_until(
            "sched@preempt",
            args.update_hz,
            tear_run,
            &stop::requested,
        )
        .map_err(|e| e.to_string())
    };
    let amplified = if stop::requested() {
        Err(NOT_RUN.to_owned())
    } else {
        ringtrace_cli::clock_local::tear::measure("sched-wide@preempt", 20_000, tear_run / 10)
            .map_err(|e| e.to_string())
    };
    progress.finish_and_clear();
    let interrupted = stop::requested();
    let clock_local = ringtrace_cli::clock_local::ClockLocal::new(cost, faithful, amplified, &rows);
    if args.json {
        let out = serde_json::json!({
            "write_path": ringtrace_cli::clocks::write_path_note(),
            "update_hz": args.update_hz,
            "rows": rows,
            "unavailable": unavailable,
            "clock_local": clock_local,
            "clock_local_cost_finding": cost_finding,
            "interrupted": interrupted,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        if interrupted {
            emit("Interrupted: stopped by a signal; the clocks not measured and the runs not made are left out or marked not run\n")?;
        }
        emit(&format!("{}\n", ringtrace_cli::clocks::write_path_note()))?;
        emit(&ringtrace_cli::clocks::text(&rows, &unavailable))?;
        emit(&format!(
            "\n{}",
            ringtrace_cli::clock_local::text(&clock_local)
        ))?;
    }
    Ok(stopped_exit("the result").unwrap_or(ExitCode::SUCCESS))
}

fn pairs_cmd(args: PairsArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = args.cpus.unwrap_or(available);
    if args.highest == 0 {
        return Err(
            "--highest 0 is invalid: the highest figure is the mean of the largest samples, of 1 or more".into(),
        );
    }
    if cpus == 0 || cpus > available {
        return Err(format!("--cpus {cpus} is invalid: this machine has 1 to {available}").into());
    }
    if args.percentile > 100 {
        return Err(format!(
            "--percentile {} is invalid: it must be from 0 to 100",
            args.percentile
        )
        .into());
    }
    let config = ringtrace_cli::pairs::PairsConfig {
        cpus,
        samples: args
            .samples
            .unwrap_or_else(|| args.method.default_samples()),
        highest: args.highest,
        percentile: args.percentile,
        irq: match args.irq {
            IrqArg::Soft => ringtrace::clock::emulation::IrqBackend::Soft,
            IrqArg::Hard => ringtrace::clock::emulation::IrqBackend::Hard,
        },
    };
    let progress = bar(
        ringtrace_cli::pairs::progress_steps(cpus, args.method),
        "pairs",
    );
    ringtrace_cli::stop::install()?;
    let result = ringtrace_cli::pairs::run_until(
        &config,
        args.method,
        &|| progress.inc(1),
        &ringtrace_cli::stop::requested,
    )?;
    progress.finish_and_clear();
    // Counted, not timed: after the run, so it takes nothing from it. A
    // platform without it prints why instead of the table.
    let code = ringtrace_cli::pairs::code_size();
    let finding = (args.method == ringtrace_cli::pairs::Method::Single)
        .then(|| ringtrace_cli::pairs::finding(&result, None, code.as_ref().ok()));
    if args.json {
        let mut json = serde_json::to_value(&result)?;
        if let serde_json::Value::Object(map) = &mut json {
            map.insert(
                "code_size".into(),
                match &code {
                    Ok(c) => serde_json::to_value(c)?,
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                },
            );
            if let Some(f) = &finding {
                map.insert("finding".into(), serde_json::to_value(f)?);
            }
        }
        emit(&format!("{}\n", serde_json::to_string_pretty(&json)?))?;
    } else {
        // The text has the preemptirq verdict (single method); the code table after.
        emit(&result.text())?;
        match &code {
            Ok(c) => emit(&c.text())?,
            Err(e) => emit(&format!("\nCode per call site: not measured: {e}\n"))?,
        }
    }
    Ok(stopped_exit("the result").unwrap_or(ExitCode::SUCCESS))
}

/// `--method`: the names of [`ringtrace_cli::pairs::Method`], listed in the
/// help and in the error for any other.
fn method_parser() -> impl clap::builder::TypedValueParser<Value = ringtrace_cli::pairs::Method> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(ringtrace_cli::pairs::Method::ALL.map(|m| m.name()))
        .try_map(|name| name.parse::<ringtrace_cli::pairs::Method>())
}

/// A progress bar on stderr; indicatif draws nothing when stderr is not a
/// terminal, so piped and JSON runs stay clean.
fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_owned());
    bar
}

/// A bar that fills with wall time while `f` runs (for runs of known length).
fn timed<T>(what: &str, duration: Duration, f: impl FnOnce() -> T) -> T {
    let bar = bar(duration.as_millis().max(1) as u64, what);
    let done = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            let start = std::time::Instant::now();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(
                    (start.elapsed().as_millis() as u64).min(duration.as_millis() as u64),
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = f();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    });
    bar.finish_and_clear();
    out
}

/// After a run that SIGINT or SIGTERM stopped (see [`ringtrace_cli::stop`]):
/// says so on stderr and gives the exit code, 128 + the signal. `None` for
/// a run no signal stopped.
fn stopped_exit(what: &str) -> Option<ExitCode> {
    let code = ringtrace_cli::stop::exit_code()?;
    let absorbed = match ringtrace_cli::stop::absorbed() {
        0 => String::new(),
        n => format!(" ({n} later signal(s) absorbed)"),
    };
    eprintln!("ringtrace: interrupted: stopped by a signal{absorbed}; {what} above is partial");
    Some(ExitCode::from(code))
}

/// Writes `text` to stdout. A closed pipe (`| head`, `| true`) ends the
/// run quietly with exit code 141 (128 + SIGPIPE, what a shell reports for
/// a program killed by it); any other failure (a full disk) is an error.
fn emit(text: &str) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => Err(format!("cannot write to stdout: {e}").into()),
    }
}

fn report_cmd(args: ReportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if !args.out.is_dir() {
        let why = if args.out.exists() {
            "is not a directory"
        } else {
            "does not exist (make the directory first)"
        };
        return Err(format!("--out {} {why}", args.out.display()).into());
    }
    ringtrace_cli::clocks::check_rings()?;
    ringtrace_cli::report::check_update_hz(args.update_hz, args.quick)?;
    // Find out now, not after the run, whether the files can be written.
    let probe = args
        .out
        .join(format!(".ringtrace-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {} is not writable: {e}", args.out.display()))?;
    // And the files themselves: one that is a directory, or a file that
    // cannot be replaced, would fail only after the run.
    for name in ["report.json", "report.svg"] {
        let path = args.out.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if !m.is_file() => {
                return Err(format!(
                    "--out {}: {name} is there and is not a regular file (remove it, or give another --out)",
                    args.out.display()
                )
                .into())
            }
            Ok(_) => {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| format!("--out {}: {name} cannot be replaced: {e}", args.out.display()))?;
            }
            Err(_) => {}
        }
    }
    let config = ringtrace_cli::report::ReportConfig {
        quick: args.quick,
        keep_trace: args
            .keep_trace
            .as_deref()
            .map(ringtrace_cli::report::trace_path)
            .transpose()?,
        update_hz: args.update_hz,
    };
    ringtrace_cli::stop::install()?;
    let progress = bar(ringtrace_cli::report::steps(&config), "report");
    let step = |s: &str| {
        progress.inc(1);
        progress.set_message(s.to_owned());
    };
    let report = ringtrace_cli::report::run(&config, ringtrace_cli::stop::flag(), &step);
    progress.finish_and_clear();
    let json = args.out.join("report.json");
    let svg = args.out.join("report.svg");
    // The results are printed even when a file cannot be written.
    let written = report
        .write_json(&json)
        .and_then(|()| report.write_svg(&svg));
    if args.json {
        let json = serde_json::to_string_pretty(&report.to_json())?;
        emit(&format!(
            "{}\n",
            ringtrace::export::text::escape_json(&json)
        ))?;
    } else {
        emit(&report.markdown())?;
        if written.is_ok() {
            emit(&format!(
                "\nWrote {} and {}.\n",
                json.display(),
                svg.display()
            ))?;
        }
        if let Some(ringtrace_cli::report::KeptTrace {
            path,
            events: Ok(_),
            ..
        }) = &report.kept_trace
        {
            emit(&format!(
                "The hammer's trace is in {}.\n",
                ringtrace::export::text::escape(path)
            ))?;
        }
    }
    written?;
    if report.interrupted {
        if let Some(code) = stopped_exit("the report") {
            return Ok(code);
        }
    }
    let bad: u64 = report
        .hammer
        .iter()
        .flatten()
        .flat_map(|h| h.runs.iter().filter_map(|r| r.as_ref().ok()))
        .map(|h| h.bad_payloads)
        .sum();
    let trace_failed = match &report.kept_trace {
        Some(ringtrace_cli::report::KeptTrace {
            path,
            events: Err(e),
            ..
        }) => {
            say(format_args!(
                "ringtrace: the trace to keep in {path} was not written: {e}"
            ));
            true
        }
        _ => false,
    };
    Ok(if bad > 0 || trace_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn recover_cmd(args: RecoverArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if args.file.join("session").is_file() {
        return Err(format!(
            "{} is a session directory, not a ring file: `ringtrace dump` and `ringtrace export` read it as it is, even one whose recorder was killed",
            args.file.display()
        )
        .into());
    }
    let recovery = ringtrace::ring::file::recover(&args.file)?;
    if args.json {
        let json = ringtrace_cli::recover::recovery_json(&recovery);
        let json = serde_json::to_string_pretty(&json)?;
        emit(&format!(
            "{}\n",
            ringtrace::export::text::escape_json(&json)
        ))?;
    } else {
        emit(&ringtrace_cli::recover::recovery_text(&recovery))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn record_cmd(args: RecordArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use ringtrace_cli::record::{self, RecordOptions, RecordedMode};
    use ringtrace_session::{Compression, OptionsError, SessionOptions};
    if args.attach.is_none() && args.command.is_empty() {
        return Err("no command to record: give one after `--` (`ringtrace record -o trace -- ./my-program`), or ring files with --attach".into());
    }
    let mode = match (args.mode.as_str(), args.blocking_timeout) {
        ("blocking", ms) => RecordedMode::Blocking(Duration::from_millis(ms.unwrap_or(1000))),
        (mode, Some(ms)) => {
            return Err(format!(
                "--blocking-timeout {ms}: writers wait only with --mode blocking (--mode is {mode})"
            )
            .into())
        }
        ("overwrite", None) => RecordedMode::Overwrite,
        _ => RecordedMode::Discard,
    };
    let mut session = SessionOptions::default();
    if let Some(bytes) = args.rotate_size {
        session = session.rotate_size(bytes);
    }
    if let Some(secs) = args.rotate_time {
        // At least a microsecond: a shorter time is no time to rotate by
        // (1e-12 would round to 0 ns).
        if !(secs.is_finite() && (1e-6..=86_400.0 * 365.0).contains(&secs)) {
            return Err(format!(
                "--rotate-time {secs:?}: give seconds, from 0.000001 to a year (31536000)"
            )
            .into());
        }
        session = session.rotate_time(Some(Duration::from_secs_f64(secs)));
    }
    session = session.max_size(args.max_size);
    if let Some(level) = args.zstd {
        session = session.compression(Compression::Zstd { level });
    }
    // Said with the flags' names (the library's name its fields).
    session.check().map_err(|e| match e {
        OptionsError::RotateSize { value, max } => {
            format!("--rotate-size {value}: a chunk rotates at 1 to {max} bytes ({}G)", max >> 30)
        }
        OptionsError::MaxSize { value, min } => format!(
            "--max-size {value}: keep at least {min} bytes ({}K), or leave --max-size out to keep everything",
            min >> 10
        ),
        OptionsError::ZstdLevel { value, min, max } => {
            format!("--zstd {value}: a level from {min} to {max} (3 is zstd's default)")
        }
        other => other.to_string(),
    })?;
    let buffer_size = match args.buffer_size {
        // As a program's ring takes it: two pages at least, a part page
        // rounded up to a whole one.
        Some(b) if b <= 4096 => {
            return Err(format!("--buffer-size {b}: a CPU buffer needs at least two pages, more than 4096 bytes at the default page size of 4096 bytes (rounded up to whole pages)").into())
        }
        Some(b) => {
            // What a ring of the default page size can make; a program
            // whose pages are larger can take more, but is told this.
            let most = ringtrace::ring::RingConfig::default();
            let most = (most.page_size * 32_768) as u64;
            if b > most {
                return Err(format!(
                    "--buffer-size {b}: a CPU buffer is at most 32768 pages, {}M at the default page size of 4096 bytes",
                    most >> 20
                )
                .into());
            }
            Some(usize::try_from(b).map_err(|_| format!("--buffer-size {b} does not fit in memory"))?)
        }
        None => None,
    };
    if let Some(clock) = &args.clock {
        let spec = clock
            .parse::<ClockSpec>()
            .map_err(|e| format!("--clock {clock}: {e}"))?;
        // A clock whose readings do not compare across CPUs does not
        // compare across processes either: said now, not when reading.
        if let Ok(built) = spec.build() {
            let info = ringtrace_clock::Clock::info(&built);
            if info.guarantee != ringtrace_clock::Guarantee::Global {
                say(format_args!(
                    "ringtrace record: warning: --clock {clock} is ordered {}, not globally: a session of several processes reads only with --align-wall-clock (tsc-ordered, mono and boot compare as they are)",
                    info.guarantee
                ));
            }
        }
    }
    let options = RecordOptions {
        output: args.output,
        command: args.command,
        attach: args.attach,
        mode,
        buffer_size,
        clock: args.clock,
        session,
        live: args.live,
        keep_rings: args.keep_rings,
        realtime: args.realtime,
        #[cfg(feature = "otlp")]
        otlp: ringtrace_cli::fleet::record_otlp(&args.fleet)?,
    };
    #[cfg(not(feature = "otlp"))]
    if args.fleet.endpoint.is_some() {
        return Err("--endpoint: this ringtrace was built without the `otlp` feature".into());
    }
    let recorded = record::record(&options)?;
    for line in recorded.lines() {
        say(format_args!("ringtrace record: {line}"));
    }
    #[cfg(feature = "otlp")]
    let mut otlp_failed = false;
    #[cfg(feature = "otlp")]
    if let Some(sent) = &recorded.otlp {
        let (lines, failed) = ringtrace_cli::fleet::otlp_outcome(sent, &args.fleet);
        for line in lines {
            say(format_args!("ringtrace record: {line}"));
        }
        otlp_failed = failed;
    }
    if let Some(signal) = recorded.stopped_by {
        return Ok(ExitCode::from((128 + signal).clamp(0, 255) as u8));
    }
    let code = match recorded.command {
        Some(record::spawn::Ended::Code(code)) => ExitCode::from(code.clamp(0, 255) as u8),
        Some(record::spawn::Ended::Signal(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        None => ExitCode::SUCCESS,
    };
    // The command succeeded but the collector did not take everything:
    // the recording's own exit code says so.
    #[cfg(feature = "otlp")]
    if otlp_failed && code == ExitCode::SUCCESS {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// The inputs of `dump` and `export`, one recovery per process, in the
/// order given: a ring file is one process; a session directory
/// (`ringtrace record`'s) is each of its processes. The first that cannot
/// be read is the error, naming it. A session's problems (damaged chunks)
/// are said on standard error, and what they did not damage is read.
fn inputs(
    files: &[std::path::PathBuf],
) -> Result<Vec<ringtrace::ring::file::Recovery>, Box<dyn std::error::Error>> {
    Ok(read_inputs(files, false)?.recoveries)
}

/// What `read_inputs` read: the recoveries, and the sessions opened
/// streamed with the index of their first process among them.
struct Inputs {
    recoveries: Vec<ringtrace::ring::file::Recovery>,
    sessions: Vec<(usize, ringtrace_session::Session)>,
    /// A streamed session's process joined with its ring file: the
    /// file's events of each CPU, given after the session's.
    tails: Vec<(usize, Vec<Option<ringtrace::ring::file::EventBatch>>)>,
    /// The session processes a ring file was joined into.
    joined: Vec<usize>,
}

impl ringtrace::ring::file::EventSource for Inputs {
    /// A streamed session's process: its chunks one at a time; a ring
    /// file's: its events, in one batch.
    fn batches(
        &self,
        process: usize,
        cpu: usize,
    ) -> Box<dyn Iterator<Item = ringtrace::ring::file::EventBatch> + '_> {
        for (first, session) in &self.sessions {
            if (*first..first + session.processes().len()).contains(&process) {
                let tail = self
                    .tails
                    .iter()
                    .find(|(p, _)| *p == process)
                    .and_then(|(_, t)| t.get(cpu).cloned().flatten());
                return Box::new(session.batches(process - first, cpu).chain(tail));
            }
        }
        let events = self
            .recoveries
            .get(process)
            .and_then(|r| r.cpus.get(cpu))
            .map(|c| {
                ringtrace::ring::file::EventBatch::new(c.events.clone()).with_fill(c.fill.clone())
            });
        Box::new(events.into_iter())
    }
}

/// Reads the inputs as `inputs` says; with `streamed`, a session's events
/// are left in its files, for `Inputs`' `EventSource` to give a chunk at a
/// time.
fn read_inputs(
    files: &[std::path::PathBuf],
    streamed: bool,
) -> Result<Inputs, Box<dyn std::error::Error>> {
    let mut all = Inputs {
        recoveries: Vec::new(),
        sessions: Vec::new(),
        tails: Vec::new(),
        joined: Vec::new(),
    };
    // Per recovery: the session and its process it was read from (none
    // for a ring file), for a join to count what the session holds.
    let mut origin: Vec<Option<(std::path::PathBuf, usize)>> = Vec::new();
    // The same file or session twice (by another name, a symlink or a
    // hard link) would show every event twice: files are told apart by
    // device and inode.
    let mut seen: Vec<((u64, u64), &std::path::PathBuf)> = Vec::new();
    // Which input each recovery came from, to name a ring given twice.
    let mut from: Vec<&std::path::PathBuf> = Vec::new();
    for f in files {
        if let Ok(meta) = std::fs::metadata(f) {
            use std::os::unix::fs::MetadataExt;
            let id = (meta.dev(), meta.ino());
            if let Some((_, first)) = seen.iter().find(|(c, _)| *c == id) {
                return Err(format!(
                    "{} is given twice (also as {}): give each ring file or session once",
                    f.display(),
                    first.display()
                )
                .into());
            }
            seen.push((id, f));
        }
        if f.is_dir() {
            let opened = if streamed {
                ringtrace_session::Session::open_streamed(f)
            } else {
                ringtrace_session::Session::open(f)
            };
            let session = match opened {
                Ok(s) => s,
                Err(ringtrace_session::OpenError::NotASession { .. }) => {
                    return Err(format!(
                        "{} is a directory, not a regular file (a ring file) nor a ringtrace session (it has no `session` index)",
                        f.display()
                    )
                    .into())
                }
                Err(e) => return Err(e.into()),
            };
            for problem in session.problems() {
                say(format_args!("ringtrace: {}: {problem}", f.display()));
            }
            let rotated = session.rotated_out();
            if rotated.chunks > 0 {
                say(format_args!(
                    "ringtrace: {}: {} events in {} chunks were rotated out (deleted by the recorder's --max-size, oldest first) and are not in this read{}",
                    f.display(),
                    rotated.events,
                    rotated.chunks,
                    ringtrace_cli::record::rotated_losses(&rotated)
                ));
            }
            let processes = session.recoveries();
            if processes.is_empty() {
                return Err(format!("{}: the session holds no process", f.display()).into());
            }
            // What a process lost (a CPU's chunks unreadable, its
            // metadata corrupt), as for a ring file: not only in `dump`'s
            // `#` lines, which `export` and `stats` do not print.
            for r in &processes {
                for problem in recovery_problems(r) {
                    say(format_args!("ringtrace: {}: {problem}", r.path.display()));
                }
            }
            origin.extend((0..session.processes().len()).map(|p| Some((f.clone(), p))));
            if streamed {
                all.sessions.push((all.recoveries.len(), session));
            }
            all.recoveries.extend(processes);
        } else {
            let recovery = ringtrace::ring::file::recover(f)?;
            for problem in recovery_problems(&recovery) {
                say(format_args!("ringtrace: {}: {problem}", f.display()));
            }
            all.recoveries.push(recovery);
            origin.push(None);
        }
        let new = from.len();
        from.resize(all.recoveries.len(), f);
        match same_ring_twice(&all.recoveries, &from, new, &all.joined) {
            None => {}
            Some(Twice::Copy(why)) => return Err(why.into()),
            Some(Twice::Halves { session, file }) => {
                join_halves(&mut all, &mut from, &mut origin, session, file, streamed)?;
            }
        }
    }
    Ok(all)
}

/// Joins recovery `file` (a ring file) into recovery `session` (the same
/// process from the session that drained it), as
/// [`ringtrace_session::halves::join`] says, and says so.
fn join_halves(
    all: &mut Inputs,
    from: &mut Vec<&std::path::PathBuf>,
    origin: &mut Vec<Option<(std::path::PathBuf, usize)>>,
    session: usize,
    file: usize,
    streamed: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let taken = all.recoveries.remove(file);
    let file_path = from.remove(file);
    origin.remove(file);
    // The file given first: every later index moves down one.
    let session = if file < session { session - 1 } else { session };
    for (first, _) in &mut all.sessions {
        if *first > file {
            *first -= 1;
        }
    }
    for p in all.tails.iter_mut().map(|(p, _)| p).chain(&mut all.joined) {
        if *p > file {
            *p -= 1;
        }
    }
    all.joined.push(session);
    let (Some(into), Some(Some((dir, process)))) =
        (all.recoveries.get_mut(session), origin.get(session))
    else {
        return Ok(());
    };
    // What the session holds, counted from its chunks (its index may lag
    // them: the program was killed).
    let held = ringtrace_session::Session::open_streamed(dir)?.held(*process);
    let pid = into.header.pid;
    let (joined, tails) = ringtrace_session::halves::join(into, &held, taken, streamed);
    if streamed {
        all.tails.push((session, tails));
    }
    let unwritten = match joined.unwritten {
        0 => String::new(),
        n => format!(
            "; {n} its consumer read and never wrote (it was killed) are counted lost there"
        ),
    };
    let refused = match joined.refused {
        0 => String::new(),
        n => format!("; {n} writes the ring refused after its consumer's last round are counted lost, at a time unknown"),
    };
    say(format_args!(
        "ringtrace: {} is the rest of process {pid} of session {}: its {} undrained events follow the session's{unwritten}{refused}",
        file_path.display(),
        from.get(session).map_or(String::new(), |p| p.display().to_string()),
        joined.left
    ));
    Ok(())
}

/// Why a recovery from `new` on is one before it again (a copy of a ring
/// file, or a session's ring kept and given too), if one is: a ring is
/// one process's, opened at one moment (its pid and its wall-clock
/// anchor, both clock readings).
fn same_ring_twice(
    recoveries: &[ringtrace::ring::file::Recovery],
    from: &[&std::path::PathBuf],
    new: usize,
    joined: &[usize],
) -> Option<Twice> {
    let key = |r: &ringtrace::ring::file::Recovery| {
        (r.header.pid, r.header.wall_ns, r.header.anchor_ticks)
    };
    (new..recoveries.len()).find_map(|j| {
        let again = &recoveries[j];
        let i = recoveries[..j].iter().position(|r| key(r) == key(again))?;
        let (a, b) = (from.get(i)?, from.get(j)?);
        if a.is_dir() != b.is_dir() {
            // A session and the ring file it drained (a streaming
            // program's, kept in a file): not copies but two halves,
            // joined once.
            let (session, file) = if a.is_dir() { (i, j) } else { (j, i) };
            if !joined.contains(&session) {
                return Some(Twice::Halves { session, file });
            }
        }
        Some(Twice::Copy(format!(
            "{} holds the same ring as {} (process {}, opened at {} ns since the epoch): a copy of it; give each ring once",
            from.get(j)?.display(),
            from.get(i)?.display(),
            again.header.pid,
            again.header.wall_ns
        )))
    })
}

/// A recovery read again ([`same_ring_twice`]).
enum Twice {
    /// A copy: the error, in words.
    Copy(String),
    /// A ring file (`file`) and the session process it was drained into
    /// (`session`): indices of the recoveries, to be joined.
    Halves { session: usize, file: usize },
}

/// What is wrong with a recovered ring file, a line each: what a reader
/// of the export would not otherwise know it is missing.
fn recovery_problems(r: &ringtrace::ring::file::Recovery) -> Vec<String> {
    let mut out = Vec::new();
    if let Err(e) = &r.metadata {
        out.push(format!("metadata: {e}"));
    }
    out.extend(
        r.annex_problems()
            .iter()
            .map(|p| format!("metadata records: {p}")),
    );
    for c in &r.cpus {
        out.extend(c.problems.iter().map(|p| format!("CPU {}: {p}", c.cpu)));
    }
    out
}

/// How `--align-wall-clock` (or its absence) aligns the processes.
fn alignment(wall_clock: bool) -> ringtrace::export::Alignment {
    if wall_clock {
        ringtrace::export::Alignment::WallClock
    } else {
        ringtrace::export::Alignment::SharedClock
    }
}

fn export_cmd(args: ExportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use ringtrace::export::export;
    use ringtrace_cli::fleet::Target;
    let target = Target::parse(&args.format, args.output.as_deref(), &args.fleet)?;
    if target != Target::File {
        // Parquet and OTLP read a session's chunks one at a time.
        let inputs = read_inputs(&args.files, true)?;
        let trace =
            ringtrace::export::Trace::new(&inputs.recoveries, alignment(args.align_wall_clock))?
                .with_source(&inputs);
        let done =
            ringtrace_cli::fleet::export(target, &trace, args.output.as_deref(), &args.fleet);
        for (_, session) in &inputs.sessions {
            for problem in session.stream_problems() {
                say(format_args!(
                    "ringtrace: {}: {problem}",
                    session.dir().display()
                ));
            }
        }
        for line in done.lines {
            say(format_args!("{line}"));
        }
        return done.result.map(|()| ExitCode::SUCCESS);
    }
    let format = export::Format::parse(&args.format)?;
    let Some(output) = args.output.clone() else {
        let said = if format == export::Format::Ctf {
            "--format ctf writes a directory: give it with -o DIR".to_string()
        } else {
            format!(
                "--format {} writes a file: give it with -o PATH (`-o -` for standard output)",
                format.name()
            )
        };
        return Err(said.into());
    };
    // `-o -`: standard output, for the formats that are one file.
    let output = if output.as_os_str() == "-" {
        if format == export::Format::Ctf {
            return Err(
                "-o - (standard output) cannot hold ctf, which is a directory: name one".into(),
            );
        }
        std::path::PathBuf::from("/dev/stdout")
    } else {
        output
    };
    // The library refuses an output that leads to a ring file, one of
    // these (through any name or link) or another.
    // The Perfetto export streams a session's chunks: its memory does not
    // grow with the session.
    let streamed = format == export::Format::Perfetto;
    let inputs = read_inputs(&args.files, streamed)?;
    let mut trace =
        ringtrace::export::Trace::new(&inputs.recoveries, alignment(args.align_wall_clock))?;
    if streamed {
        trace = trace.with_source(&inputs);
    }
    let done = export::export_trace(&trace, format, &output);
    for (_, session) in &inputs.sessions {
        for problem in session.stream_problems() {
            say(format_args!(
                "ringtrace: {}: {problem}",
                session.dir().display()
            ));
        }
    }
    let done = match done {
        Ok(done) => done,
        // `-o -` into a pipe whose reader has gone (`| head`): quietly, with
        // a shell's code for SIGPIPE, as `dump` and the other commands.
        Err(e) if e.is_closed_pipe() => std::process::exit(141),
        Err(e) => return Err(e.into()),
    };
    say(format_args!(
        "ringtrace export: {} events ({} marked lost) from {} to {} ({})",
        done.events,
        done.lost,
        args.files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        done.path.display(),
        format.name()
    ));
    for warning in &done.warnings {
        say(format_args!("ringtrace export: warning: {warning}"));
    }
    Ok(ExitCode::SUCCESS)
}

fn dump_cmd(args: DumpArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use std::io::Write;
    let recoveries = inputs(&args.files)?;
    let options = ringtrace::export::DumpOptions::default()
        .cpu(args.cpu)
        .raw(args.raw);
    let trace = ringtrace::export::Trace::new(&recoveries, alignment(args.align_wall_clock))?;
    let dump = ringtrace::export::Dump::for_trace(trace, options).map_err(|e| match e {
        // Said with the option's name.
        ringtrace::export::DumpError::CpuOutOfRange { .. } => format!("--cpu: {e}"),
        other => other.to_string(),
    })?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut put = |line: &str| -> Result<(), Box<dyn std::error::Error>> {
        match writeln!(out, "{line}") {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
            Err(e) => Err(format!("cannot write to stdout: {e}").into()),
        }
    };
    if !args.json {
        for line in dump.comments() {
            put(&line)?;
        }
    }
    for event in dump.events() {
        if args.json {
            put(&ringtrace::export::text::escape_json(
                &serde_json::to_string(&dump.json(event))?,
            ))?;
        } else {
            put(&dump.line(event))?;
        }
    }
    if args.json {
        // The losses no event carries, which the text says in its header.
        for loss in dump.unplaced_losses_json() {
            put(&ringtrace::export::text::escape_json(
                &serde_json::to_string(&loss)?,
            ))?;
        }
    }
    match out.flush() {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => Err(format!("cannot write to stdout: {e}").into()),
    }
}

fn stats_cmd(args: StatsArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use ringtrace::export::analysis::{analyze, Threshold};
    let threshold: Threshold = args
        .section_threshold
        .parse()
        .map_err(|e| format!("--section-threshold: {e}"))?;
    // `exists` is false for a symbolic-link loop too: that one is left to
    // the reader, which names the error (too many levels of links).
    let absent = |f: &&std::path::PathBuf| {
        std::fs::symlink_metadata(f).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    };
    if let Some(missing) = args.files.iter().find(absent) {
        return Err(format!(
            "{} does not exist: give ring files or `ringtrace record` session directories",
            missing.display()
        )
        .into());
    }
    // A session's chunks are read one at a time.
    let inputs = read_inputs(&args.files, true)?;
    let trace =
        ringtrace::export::Trace::new(&inputs.recoveries, alignment(args.align_wall_clock))?
            .with_source(&inputs);
    let analysis = analyze(&trace, threshold);
    for (_, session) in &inputs.sessions {
        for problem in session.stream_problems() {
            say(format_args!(
                "ringtrace: {}: {problem}",
                session.dir().display()
            ));
        }
    }
    let out = if args.json {
        ringtrace_cli::stats::json(&analysis)?
    } else {
        ringtrace_cli::stats::text(&analysis)
    };
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
