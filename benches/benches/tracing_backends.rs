//! `tracing` backends side by side, in one run, interleaved: every
//! operation through every backend, round after round, so that a slow
//! moment of the machine falls on all of them alike.
//!
//! `cargo bench -p ringtrace-benches --bench tracing_backends [-- --rounds N --ops N]`
//!
//! Operations: `info!` with two integers and a literal message, with a
//! 100-byte string, and with six fields; a span entered and exited; an
//! `#[instrument]`ed call (a span made, entered, exited, closed); a
//! `debug!` the level filter turns away. Backends, each behind
//! `LevelFilter::INFO` in one registry:
//!
//! - `none`: no subscriber (the floor: a callsite's interest check);
//! - `ringtrace`: `RingLayer` on a `mono` ring (the tracer's default
//!   clock), 4 MiB per CPU, overwrite mode; `ringtrace_tsc` on a `tsc`
//!   ring (labelled: not the default);
//! - `fmt_sink`: tracing-subscriber's fmt layer (its default format) to
//!   `io::sink`, span events (`FmtSpan::FULL`) on;
//! - `fmt_file`: the same through tracing-appender's non-blocking writer to
//!   a file, what services run (lossy: it drops lines when its worker is
//!   behind, as by default);
//! - `chrome`: tracing-chrome to `io::sink` through its writer thread;
//! - `perfetto`: tracing-perfetto to `io::sink`, with debug annotations;
//! - `fastrace`: fastrace's own API, not `tracing`: an event is
//!   `LocalSpan::add_event` (its properties made into strings, as
//!   fastrace keeps them), a span `LocalSpan::enter_with_local_parent`,
//!   an instrumented call `#[fastrace::trace]`, under a root span made
//!   and ended every [`PER_ROOT`] operations inside the timing (a request;
//!   fastrace hands a thread's spans to its collector when the root
//!   ends), with a reporter that drops them.
//! - `ring_write`: `RingBuffer::write` of records as long as those
//!   ringtrace writes for the operation (read back from a ring), on the
//!   same `mono` ring: the bound's denominator.
//!
//! Each cell is the median over the rounds of ns per operation, with the
//! lowest and highest; the table's last columns are each backend's median
//! over ringtrace's. The two bounds ringtrace is held to are checked and
//! printed with their rule: an event at most a tenth of `fmt_sink`'s cost,
//! and at most 4 times a ring write of the same bytes.

use ringtrace_clock::AnyClock;
use ringtrace_ring::RingBuffer;
use ringtrace_tracing::RingLayer;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;
use tracing::Dispatch;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;

/// The operations, in the table's order.
const OPS: [&str; 6] = [
    "info, 2 ints",
    "info, 100 B str",
    "info, 6 fields",
    "span enter/exit",
    "#[instrument] call",
    "debug, filtered",
];

const STR100: &str = "a string of one hundred bytes, as a path or a query might be: \
                      0123456789abcdefghijklmnopqrstuvwxy";

#[inline(never)]
fn op(which: usize, i: u64, span: &tracing::Span) {
    match which {
        0 => tracing::info!(a = i, b = 2u64, "event"),
        1 => tracing::info!(s = STR100, "event"),
        2 => tracing::info!(
            a = i,
            b = 2u64,
            c = 1.5f64,
            d = true,
            e = "name",
            f = ?Some(3),
            "event"
        ),
        3 => {
            let _entered = span.enter();
        }
        4 => {
            black_box(instrumented(black_box(i)));
        }
        _ => tracing::debug!(a = i, "filtered"),
    }
}

#[tracing::instrument(level = "info")]
fn instrumented(a: u64) -> u64 {
    a + 1
}

#[fastrace::trace]
fn fastraced(a: u64) -> u64 {
    a + 1
}

/// fastrace's way to do operation `which`.
#[inline(never)]
fn fastrace_op(which: usize, i: u64) {
    use fastrace::local::LocalSpan;
    use fastrace::Event;
    match which {
        0 => LocalSpan::add_event(
            Event::new("event").with_properties(|| [("a", i.to_string()), ("b", 2.to_string())]),
        ),
        1 => LocalSpan::add_event(Event::new("event").with_property(|| ("s", STR100))),
        2 => LocalSpan::add_event(Event::new("event").with_properties(|| {
            [
                ("a", i.to_string()),
                ("b", 2.to_string()),
                ("c", 1.5f64.to_string()),
                ("d", true.to_string()),
                ("e", "name".to_string()),
                ("f", format!("{:?}", Some(3))),
            ]
        })),
        3 => {
            let _span = fastrace::local::LocalSpan::enter_with_local_parent("work");
        }
        4 => {
            black_box(fastraced(black_box(i)));
        }
        // fastrace has no levels: nothing to filter.
        _ => {}
    }
}

/// fastrace operations under one root span (a request).
const PER_ROOT: u64 = 100;

/// A fastrace reporter that drops what it is given.
struct Discard;

impl fastrace::collector::Reporter for Discard {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        black_box(spans);
    }
}

/// How a backend is driven.
enum Driver {
    Tracing(Dispatch),
    Fastrace,
    /// The ring alone, writing records as long as ringtrace's for each
    /// operation.
    RingWrite(Arc<RingBuffer<AnyClock>>, Vec<Vec<usize>>),
}

/// The lengths of the records ringtrace writes for one operation
/// `which` (read back from a ring of its own), for the ring-write column.
fn record_lengths(which: usize) -> Vec<usize> {
    let ring = ring("mono");
    let layer = RingLayer::new(ring.clone());
    let dispatch = Dispatch::new(
        tracing_subscriber::registry()
            .with(LevelFilter::INFO)
            .with(layer),
    );
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("work", id = 7u64);
        let drain = |ring: &RingBuffer<AnyClock>| {
            ring.flush();
            let mut lens = Vec::new();
            for b in ring.cpu_buffers() {
                while let Some(e) = b.read_event() {
                    lens.push(e.payload.len());
                }
            }
            lens
        };
        drain(&ring);
        op(which, 1, &span);
        drain(&ring)
    })
}

use ringtrace_benches::named_clock_ring as ring;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo test --benches` runs this with `--test`: one short round.
    let testing = std::env::args().any(|a| a == "--test");
    let rounds = if testing { 1 } else { arg("--rounds", 7) };
    let ops = if testing { 200 } else { arg("--ops", 200_000) } as u64;
    let tmp = std::env::temp_dir().join(format!("ringtrace-backends-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("a temporary directory");

    let mono = ring("mono");
    let tsc = ring("tsc");
    let (appender, _appender_guard) =
        tracing_appender::non_blocking(std::fs::File::create(tmp.join("fmt.log")).unwrap());
    let (chrome, _chrome_guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(std::io::sink())
        .include_args(true)
        .build();
    let perfetto = tracing_perfetto::PerfettoLayer::new(std::io::sink as fn() -> std::io::Sink)
        .with_debug_annotations(true);
    let registry = || tracing_subscriber::registry().with(LevelFilter::INFO);
    let backends: Vec<(&str, Driver)> = vec![
        ("none", Driver::Tracing(Dispatch::none())),
        (
            "ringtrace",
            Driver::Tracing(Dispatch::new(registry().with(RingLayer::new(mono.clone())))),
        ),
        (
            "ringtrace_tsc",
            Driver::Tracing(Dispatch::new(registry().with(RingLayer::new(tsc)))),
        ),
        (
            "ring_write",
            Driver::RingWrite(mono, (0..OPS.len()).map(record_lengths).collect()),
        ),
        (
            "fmt_sink",
            Driver::Tracing(Dispatch::new(
                registry().with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::io::sink)
                        .with_span_events(FmtSpan::FULL),
                ),
            )),
        ),
        (
            "fmt_file",
            Driver::Tracing(Dispatch::new(
                registry().with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(appender)
                        .with_span_events(FmtSpan::FULL),
                ),
            )),
        ),
        (
            "chrome",
            Driver::Tracing(Dispatch::new(registry().with(chrome))),
        ),
        (
            "perfetto",
            Driver::Tracing(Dispatch::new(registry().with(perfetto))),
        ),
        ("fastrace", Driver::Fastrace),
    ];
    fastrace::set_reporter(Discard, fastrace::collector::Config::default());

    // times[backend][op]: ns per operation, one a round.
    let mut times = vec![vec![Vec::new(); OPS.len()]; backends.len()];
    for _ in 0..rounds {
        for (which, _) in OPS.iter().enumerate() {
            for (b, (_, driver)) in backends.iter().enumerate() {
                if let Some(ns) = time(driver, which, ops) {
                    times[b][which].push(ns);
                }
            }
        }
    }
    fastrace::flush();
    let _ = std::fs::remove_dir_all(&tmp);
    print_table(&backends, &times, rounds, ops);
}

/// ns per operation of `ops` operations `which` through `driver`, or
/// `None` where the backend has no such operation.
fn time(driver: &Driver, which: usize, ops: u64) -> Option<f64> {
    let start;
    let elapsed;
    match driver {
        Driver::Tracing(dispatch) => {
            let (s, e) = tracing::dispatcher::with_default(dispatch, || {
                let span = tracing::info_span!("work", id = 7u64);
                // Warm: the callsites described, the span's first enter.
                for i in 0..100 {
                    op(which, i, &span);
                }
                let s = Instant::now();
                for i in 0..ops {
                    op(which, i, &span);
                }
                (s, s.elapsed())
            });
            start = s;
            elapsed = e;
        }
        Driver::Fastrace => {
            if which == 5 {
                return None;
            }
            start = Instant::now();
            let mut i = 0;
            while i < ops {
                // A request: a root, and `PER_ROOT` operations under it.
                // Its end is timed: that is when fastrace hands the
                // thread's spans and events to its collector.
                let root = fastrace::Span::root("root", fastrace::collector::SpanContext::random());
                let guard = root.set_local_parent();
                // Events attach to the current local span.
                let outer = fastrace::local::LocalSpan::enter_with_local_parent("request");
                for _ in 0..PER_ROOT.min(ops - i) {
                    fastrace_op(which, i);
                    i += 1;
                }
                drop(outer);
                drop(guard);
                drop(root);
            }
            elapsed = start.elapsed();
        }
        Driver::RingWrite(ring, lengths) => {
            let lens = &lengths[which];
            if lens.is_empty() {
                return None;
            }
            let payload = [0x5Au8; 256];
            start = Instant::now();
            for _ in 0..ops {
                for &len in lens {
                    let _ = black_box(ring.write(black_box(&payload[..len])));
                }
            }
            elapsed = start.elapsed();
        }
    }
    let _ = start;
    Some(elapsed.as_nanos() as f64 / ops as f64)
}

/// The median, lowest and highest of `v` (not empty).
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[0], s[s.len() - 1])
}

fn print_table(backends: &[(&str, Driver)], times: &[Vec<Vec<f64>>], rounds: usize, ops: u64) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!(
        "# tracing backends: {rounds} rounds x {ops} operations a cell, interleaved; {cpu}, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "# ns per operation: median [lowest-highest] over the rounds; (x) = median / ringtrace's"
    );
    let ringtrace = backends
        .iter()
        .position(|(n, _)| *n == "ringtrace")
        .unwrap();
    print!("| operation |");
    for (name, _) in backends {
        print!(" {name} |");
    }
    println!();
    println!("|---|{}", "---|".repeat(backends.len()));
    for (which, op) in OPS.iter().enumerate() {
        print!("| {op} |");
        let base = times[ringtrace][which].as_slice();
        let base = (!base.is_empty()).then(|| spread(base).0);
        for t in times.iter() {
            let cell = &t[which];
            if cell.is_empty() {
                print!(" - |");
                continue;
            }
            let (med, lo, hi) = spread(cell);
            match base {
                Some(b) if b > 0.0 => print!(" {med:.1} [{lo:.1}-{hi:.1}] ({:.2}x) |", med / b),
                _ => print!(" {med:.1} [{lo:.1}-{hi:.1}] |"),
            }
        }
        println!();
    }
    let median = |name: &str, which: usize| {
        let b = backends.iter().position(|(n, _)| *n == name)?;
        let cell = &times[b][which];
        (!cell.is_empty()).then(|| spread(cell).0)
    };
    println!();
    for (which, name) in OPS.iter().enumerate().take(3) {
        let (Some(ours), Some(fmt), Some(write)) = (
            median("ringtrace", which),
            median("fmt_sink", which),
            median("ring_write", which),
        ) else {
            continue;
        };
        let tenth = ours * 10.0 <= fmt;
        let four = ours <= 4.0 * write;
        println!(
            "VERDICT {}: ringtrace {ours:.1} ns, fmt_sink {fmt:.1} ns ({:.1}x): rule ringtrace <= fmt_sink / 10: {}; ring write of the same bytes {write:.1} ns ({:.2}x): rule ringtrace <= 4 x ring write: {}",
            name,
            fmt / ours,
            if tenth { "met" } else { "NOT met" },
            ours / write,
            if four { "met" } else { "NOT met" },
        );
    }
    if let (Some(off), Some(none)) = (median("ringtrace", 5), median("none", 5)) {
        println!(
            "VERDICT debug, filtered: ringtrace {off:.2} ns, no subscriber {none:.2} ns: rule within 1 ns: {}",
            if (off - none).abs() <= 1.0 { "met" } else { "NOT met" }
        );
    }
}
