//! A service's spans through each `tracing` subscriber, installed as
//! programs install them: globally, one per process.
//!
//! `cargo bench -p ringtrace-benches --bench tracing_spans`
//! (env `ROUNDS`, default 9; `ITERS`, default 200000 per thread a round;
//! `ONLY`, configurations to run, comma-separated: the verdicts need
//! them all)
//!
//! One iteration is a request: span `request` (two integer fields)
//! entered, inside it span `db` (one field) entered, an `info!` with two
//! integers, then both exited and closed (2 spans, 1 event). Each
//! configuration runs in a child process of its own that installs it
//! with `set_global_default` (as `.init()` does), warms up, and times
//! its recording threads by CLOCK_THREAD_CPUTIME_ID: ns per iteration,
//! the mean over the threads. It runs with 1 thread, then with one
//! thread per CPU. Rounds interleave every configuration, the order
//! rotated each round; each cell is the median over the rounds, with
//! the lowest and highest.
//!
//! Configurations:
//! - `none`: no subscriber;
//! - `null`: a subscriber that enables everything, numbers spans from a
//!   counter and records nothing (the floor of any subscriber: what
//!   `tracing` itself costs);
//! - `noop`: `registry()` with a layer that does nothing (the floor of
//!   every layer);
//! - `layer`: `registry()` with `RingLayer` on a `mono` ring (the
//!   tracer's default clock); `layer_tsc` on a `tsc` ring;
//! - `subscriber`: `RingSubscriber` on a `mono` ring; `subscriber_tsc`
//!   on a `tsc` ring;
//! - `fmt_sink`: `registry()` with the fmt layer (its default format)
//!   writing to `io::sink`;
//! - `otel`: `registry()` with tracing-opentelemetry's layer (its
//!   defaults) on an `SdkTracerProvider` with the SDK's
//!   `BatchSpanProcessor` (its defaults) and an exporter that drops
//!   what it is given.
//!
//! Rings are in memory, 4 MiB per CPU, overwrite mode. The bounds the
//! subscriber and the layer are held to are printed with their rules.

mod common;

use common::{cpu_model, date_utc, env, request, spread, thread_cpu_ns, Noop};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracing::{RingLayer, RingSubscriber};
use std::process::Command;
use std::sync::{Arc, Barrier};
use tracing_subscriber::layer::SubscriberExt;

/// The configurations, in the table's order.
const CONFIGS: [&str; 9] = [
    "none",
    "null",
    "noop",
    "layer",
    "layer_tsc",
    "subscriber",
    "subscriber_tsc",
    "fmt_sink",
    "otel",
];
/// Iterations each thread runs untimed first.
const WARM: u64 = 2_000;
/// The child's environment variable: `CONFIG THREADS ITERS`.
const CHILD: &str = "RINGTRACE_TRACING_SPANS_CHILD";

/// A subscriber that enables everything and records nothing.
struct Null(std::sync::atomic::AtomicU64);
impl tracing::Subscriber for Null {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// An exporter that drops every batch.
#[derive(Debug)]
struct Drop;
impl SpanExporter for Drop {
    fn export(&self, batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> {
        std::hint::black_box(batch);
        std::future::ready(Ok(()))
    }
}

fn ring(clock: &str) -> Arc<RingBuffer<AnyClock>> {
    let clock = clock.parse::<ClockSpec>().unwrap().build().unwrap();
    let config = RingConfig::default()
        .per_cpu_bytes(4 << 20)
        .mode(Mode::Overwrite);
    Arc::new(RingBuffer::new(config, clock).unwrap())
}

/// Installs `config` globally; what must live while it records.
fn install(config: &str) -> Option<SdkTracerProvider> {
    let set = |d: tracing::Dispatch| tracing::dispatcher::set_global_default(d).unwrap();
    let registry = tracing_subscriber::registry();
    match config {
        "none" => {}
        "null" => set(tracing::Dispatch::new(Null(1.into()))),
        "noop" => set(registry.with(Noop).into()),
        "layer" => set(registry.with(RingLayer::new(ring("mono"))).into()),
        "layer_tsc" => set(registry.with(RingLayer::new(ring("tsc"))).into()),
        "subscriber" => set(RingSubscriber::new(ring("mono")).into()),
        "subscriber_tsc" => set(RingSubscriber::new(ring("tsc")).into()),
        "fmt_sink" => set(registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink))
            .into()),
        "otel" => {
            let provider = SdkTracerProvider::builder()
                .with_span_processor(BatchSpanProcessor::builder(Drop).build())
                .build();
            let tracer = provider.tracer("tracing_spans");
            set(registry
                .with(tracing_opentelemetry::layer().with_tracer(tracer))
                .into());
            return Some(provider);
        }
        other => panic!("unknown configuration {other}"),
    }
    None
}

/// The child: `config` installed, `threads` threads of `iters` requests;
/// prints the mean CPU ns per request.
fn child(config: &str, threads: usize, iters: u64) {
    let provider = install(config);
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                for i in 0..WARM {
                    request(i);
                }
                start.wait();
                let t0 = thread_cpu_ns();
                for i in 0..iters {
                    request(i);
                }
                (thread_cpu_ns() - t0) as f64 / iters as f64
            })
        })
        .collect();
    let per: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    println!("{}", per.iter().sum::<f64>() / per.len() as f64);
    if let Some(provider) = provider {
        let _ = provider.shutdown();
    }
}

/// Runs one child; its ns per request.
fn run(config: &str, threads: usize, iters: u64) -> f64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("{config} {threads} {iters}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{config}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{config} printed {text:?}"))
}

/// What one read of the clock named `clock` costs, ns (a loop of reads).
/// ns a bare `RingBuffer::write` of a 24-byte record (a span edge's
/// size) takes on a ring with `clock`, its clock read included: the
/// least any record costs.
fn ring_write_ns(clock: &str) -> f64 {
    let ring = ring(clock);
    const WRITES: u32 = 2_000_000;
    let record = [7u8; 24];
    let start = std::time::Instant::now();
    for _ in 0..WRITES {
        std::hint::black_box(ring.write(std::hint::black_box(&record)).is_ok());
    }
    start.elapsed().as_nanos() as f64 / f64::from(WRITES)
}

fn clock_read_ns(clock: &str) -> f64 {
    use ringtrace_clock::Clock as _;
    let clock = clock.parse::<ClockSpec>().unwrap().build().unwrap();
    const READS: u32 = 2_000_000;
    let start = std::time::Instant::now();
    for _ in 0..READS {
        std::hint::black_box(clock.read());
    }
    start.elapsed().as_nanos() as f64 / f64::from(READS)
}

/// Whether each rule can be met at all when a request's 9 bare ring
/// writes take `mono` (or `tsc`) ns, on one thread: what the rule leaves
/// for ringtrace's own work against what those writes alone cost (for
/// the subscriber, with `tracing`'s own cost, `null`, added). A rule
/// whose budget is below its floor is out of reach on this host with
/// that clock, however the records are encoded and dispatched.
fn floors(median: &dyn Fn(&str, usize) -> f64, mono: f64, tsc: f64) {
    let (noop, null) = (median("noop", 0), median("null", 0));
    let (otel, fmt) = (median("otel", 0), median("fmt_sink", 0));
    let reach = |budget: f64, floor: f64| {
        if budget >= floor {
            "reachable"
        } else {
            "OUT OF REACH"
        }
    };
    for (clock, reads) in [("mono", mono), ("tsc", tsc)] {
        println!(
            "FLOOR layer ({clock}): rule layer <= 2 x noop leaves {noop:.0} ns a request for 9 records; 9 bare ring writes alone take {reads:.0}: {}",
            reach(noop, reads)
        );
        for (rule, budget) in [("otel / 10", otel / 10.0), ("fmt_sink / 5", fmt / 5.0)] {
            println!(
                "FLOOR subscriber ({clock}): rule subscriber <= {rule} leaves {budget:.0} ns a request; tracing itself (null) {null:.0} + 9 bare ring writes {reads:.0} = {:.0}: {}",
                null + reads,
                reach(budget, null + reads)
            );
        }
    }
}

fn main() {
    if let Ok(args) = std::env::var(CHILD) {
        let a: Vec<&str> = args.split(' ').collect();
        child(a[0], a[1].parse().unwrap(), a[2].parse().unwrap());
        return;
    }
    // `cargo test --benches` runs this with `--test`: one short round.
    let testing = std::env::args().any(|a| a == "--test");
    let rounds = if testing { 1 } else { env("ROUNDS", 9).max(1) };
    let iters = if testing {
        500
    } else {
        env("ITERS", 200_000) as u64
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpu, date) = (cpu_model(), date_utc());
    println!("# tracing_spans: {cpu}, {cpus} CPUs; {date}");
    let mut floors_ns = Vec::new();
    for clock in ["mono", "tsc"] {
        let ns = clock_read_ns(clock);
        let write = ring_write_ns(clock);
        println!(
            "# a {clock} clock read: {ns:.1} ns; the 9 records of a request read it 9 times: {:.0} ns; a bare ring write of a 24-byte record (its clock read included): {write:.1} ns, 9 of them {:.0} ns",
            9.0 * ns,
            9.0 * write
        );
        floors_ns.push(9.0 * write);
    }
    println!(
        "# {rounds} rounds of {iters} requests per thread; CPU ns per request (2 spans, 1 event)"
    );
    let widths = [1, cpus];
    // times[config][width] = one figure per round.
    let mut times = vec![vec![Vec::new(); widths.len()]; CONFIGS.len()];
    let only = std::env::var("ONLY").unwrap_or_default();
    let chosen = |c: &str| only.is_empty() || only.split(',').any(|o| o == c);
    for round in 0..rounds {
        for k in 0..CONFIGS.len() {
            let c = (k + round) % CONFIGS.len();
            if !chosen(CONFIGS[c]) {
                continue;
            }
            for (w, &threads) in widths.iter().enumerate() {
                times[c][w].push(run(CONFIGS[c], threads, iters));
            }
        }
    }
    let median = |c: &str, w: usize| {
        let at = CONFIGS.iter().position(|x| *x == c).unwrap();
        spread(&times[at][w]).0
    };
    println!(
        "| configuration | 1 thread | {cpus} threads ({cpus} CPUs) | {cpus} threads / 1 | against subscriber, 1 thread |"
    );
    println!("|---|---|---|---|---|");
    for (c, name) in CONFIGS.iter().enumerate() {
        if times[c][0].is_empty() {
            continue;
        }
        let cells: Vec<String> = times[c]
            .iter()
            .map(|v| {
                let (m, lo, hi) = spread(v);
                format!("{m:.0} [{lo:.0}-{hi:.0}]")
            })
            .collect();
        println!(
            "| {name} | {} | {} | {:.2} | {:.2} |",
            cells[0],
            cells[1],
            median(name, 1) / median(name, 0),
            median(name, 0) / median("subscriber", 0)
        );
    }
    println!();
    if !only.is_empty() {
        return;
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    for (w, &t) in widths.iter().enumerate() {
        let (otel, fmt, floor) = (median("otel", w), median("fmt_sink", w), median("noop", w));
        for (sub, clock) in [
            ("subscriber", "mono, the default"),
            ("subscriber_tsc", "tsc"),
        ] {
            let ns = median(sub, w);
            println!(
                "VERDICT {t} thread(s), {sub} ({clock}): {:.1}x cheaper than otel (rule: otel / subscriber >= 10, medians): {}",
                otel / ns,
                verdict(otel / ns >= 10.0)
            );
            println!(
                "VERDICT {t} thread(s), {sub} ({clock}): {:.1}x cheaper than fmt_sink (rule: fmt_sink / subscriber >= 5, medians): {}",
                fmt / ns,
                verdict(fmt / ns >= 5.0)
            );
        }
        for (layer, clock) in [("layer", "mono, the default"), ("layer_tsc", "tsc")] {
            let ns = median(layer, w);
            println!(
                "VERDICT {t} thread(s), {layer} ({clock}): {:.2}x the noop floor (rule: layer / noop <= 2, medians): {}",
                ns / floor,
                verdict(ns / floor <= 2.0)
            );
        }
    }
    if let [mono, tsc] = floors_ns[..] {
        floors(&median, mono, tsc);
    }
    for name in ["subscriber", "layer"] {
        let r = median(name, 1) / median(name, 0);
        println!(
            "VERDICT {name}: {cpus} threads cost {r:.2}x 1 thread per request (rule: within 10%, medians): {}",
            verdict((r - 1.0).abs() <= 0.10)
        );
    }
}
