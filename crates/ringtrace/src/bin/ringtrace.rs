//! The `ringtrace` command.

use clap::{Parser, Subcommand, ValueEnum};
use ringtrace::clock::ClockSpec;
use ringtrace::hammer::{self, HammerConfig, ReadBy};
use ringtrace::ring::Mode;
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
    Hammer(HammerArgs),
    /// Seed 004's trade-off: every clock source under every protection, with
    /// the cost of a read and of a recorded event, timestamp inversions
    /// under a timer interrupt whose handler writes too, and cross-CPU skew.
    Clocks(ClocksArgs),
    /// walac/tracer-benchmark: irq and preempt disable/enable pairs timed
    /// on every CPU under the three instrumentation strategies (seed 000).
    Pairs(PairsArgs),
    /// Everything: a short hammer per clock, then pairs, then clocks;
    /// markdown tables on stdout, report.json and report.svg written.
    Report(ReportArgs),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// Keep the whole run under two minutes on 2 cores.
    #[arg(long)]
    quick: bool,
    /// Where report.json and report.svg go.
    #[arg(long, default_value = ".")]
    out: std::path::PathBuf,
    /// Print the JSON on stdout instead of the markdown.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum IrqArg {
    Soft,
    Hard,
}

#[derive(clap::Args)]
struct PairsArgs {
    /// Threads, one per CPU (default: every CPU).
    #[arg(long)]
    cpus: Option<usize>,
    /// Samples of each pair per thread and strategy (1 to 10^8).
    #[arg(long, default_value_t = 10_000_000)]
    samples: usize,
    /// How many of the largest samples make max_avg.
    #[arg(long, default_value_t = 1000)]
    highest: usize,
    /// The percentile reported, 0 to 100.
    #[arg(long, default_value_t = 99)]
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
    #[arg(long, default_value_t = 50)]
    write_iteration: u32,
    /// Run without a consumer.
    #[arg(long)]
    disable_reader: bool,
    /// Read by events or by pages (default: switch between the two).
    #[arg(long, value_enum)]
    read: Option<ReadArg>,
    /// The producers' nice level.
    #[arg(long, default_value_t = 19, allow_negative_numbers = true)]
    producer_nice: i32,
    /// The consumer's nice level.
    #[arg(long, default_value_t = 19, allow_negative_numbers = true)]
    consumer_nice: i32,
    /// The producers' SCHED_FIFO priority: 0 (off), 1 or 2.
    #[arg(long, default_value_t = 0)]
    producer_fifo: u8,
    /// The consumer's SCHED_FIFO priority: 0 (off), 1 or 2.
    #[arg(long, default_value_t = 0)]
    consumer_fifo: u8,
    /// The clock, SOURCE[@PROTECTION] (`ringtrace clocks` lists them).
    #[arg(long, default_value = "local")]
    clock: String,
    /// What a full buffer does.
    #[arg(long, value_enum, default_value = "overwrite")]
    mode: ModeArg,
    /// Bytes per CPU buffer.
    #[arg(long, default_value_t = 1_000_000)]
    buffer_size: usize,
    /// Producer threads, pinned one per CPU (1 to 1024).
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ClocksArgs {
    /// How long the interrupted writer runs per clock and protection, in ms.
    #[arg(long, default_value_t = 150)]
    anomaly_ms: u64,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Hammer(args) => hammer_cmd(args),
        Command::Clocks(args) => clocks_cmd(args),
        Command::Pairs(args) => pairs_cmd(args),
        Command::Report(args) => report_cmd(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ringtrace: {e}");
            ExitCode::from(2)
        }
    }
}

fn hammer_cmd(args: HammerArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        return Err(format!(
            "--seconds {} is invalid: it must be a positive number",
            args.seconds
        )
        .into());
    }
    let duration = Duration::try_from_secs_f64(args.seconds)
        .map_err(|_| format!("--seconds {} is too large", args.seconds))?;
    let config = HammerConfig {
        duration,
        write_iteration: args.write_iteration,
        disable_reader: args.disable_reader,
        read_by: match args.read {
            Some(ReadArg::Pages) => ReadBy::Pages,
            Some(ReadArg::Events) => ReadBy::Events,
            None => ReadBy::Alternate,
        },
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
        producers: args.producers,
    };
    let result = timed("hammer", config.duration, || hammer::run(&config))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        for w in &result.warnings {
            eprintln!("ringtrace: warning: {w}");
        }
    } else {
        print!("{}", result.text(&config));
    }
    Ok(if result.bad_payloads > 0 {
        if args.json {
            eprintln!(
                "[ERROR!] {} payloads did not match what was written",
                result.bad_payloads
            );
        }
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn clocks_cmd(args: ClocksArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if args.anomaly_ms == 0 {
        return Err("--anomaly-ms 0 is invalid: it must be at least 1".into());
    }
    let config = ringtrace::clocks::ClocksConfig {
        anomaly_run: Duration::from_millis(args.anomaly_ms),
        ..Default::default()
    };
    let progress = bar(ClockSpec::all().len() as u64, "clocks");
    let (rows, unavailable) = ringtrace::clocks::run(&config, &|name| {
        progress.inc(1);
        progress.set_message(name.to_owned());
    });
    progress.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        for u in &unavailable {
            eprintln!("ringtrace: {}: unavailable: {}", u.clock, u.reason);
        }
    } else {
        print!("{}", ringtrace::clocks::text(&rows, &unavailable));
    }
    Ok(ExitCode::SUCCESS)
}

fn pairs_cmd(args: PairsArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = args.cpus.unwrap_or(available);
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
    let config = ringtrace::pairs::PairsConfig {
        cpus,
        samples: args.samples,
        highest: args.highest.max(1),
        percentile: args.percentile,
        irq: match args.irq {
            IrqArg::Soft => ringtrace::clock::emulation::IrqBackend::Soft,
            IrqArg::Hard => ringtrace::clock::emulation::IrqBackend::Hard,
        },
    };
    let progress = bar((cpus * 9) as u64, "pairs");
    let result = ringtrace::pairs::run(&config, &|| progress.inc(1))?;
    progress.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", result.text(&config));
    }
    Ok(ExitCode::SUCCESS)
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

fn report_cmd(args: ReportArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if !args.out.is_dir() {
        return Err(format!("--out {} is not a directory", args.out.display()).into());
    }
    // Find out now, not after the run, whether the files can be written.
    let probe = args
        .out
        .join(format!(".ringtrace-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {} is not writable: {e}", args.out.display()))?;
    // The steps: one hammer per clock source, pairs, and each clock.
    let progress = bar((2 * ClockSpec::all().len()) as u64, "report");
    let step = |s: &str| {
        progress.inc(1);
        progress.set_message(s.to_owned());
    };
    let report =
        ringtrace::report::run(ringtrace::report::ReportConfig { quick: args.quick }, &step)?;
    progress.finish_and_clear();
    let json = args.out.join("report.json");
    let svg = args.out.join("report.svg");
    // The results are printed even when a file cannot be written.
    let written = report
        .write_json(&json)
        .and_then(|()| report.write_svg(&svg));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.markdown());
        if written.is_ok() {
            println!("\nWrote {} and {}.", json.display(), svg.display());
        }
    }
    written?;
    let bad: u64 = report.hammer.iter().map(|h| h.bad_payloads).sum();
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
