//! What a preempted writer costs the others: the fraction of writes
//! refused when threads outnumber CPUs, with the overwrite claim's
//! step-over off (the kernel's behaviour: a claim that meets a page a
//! writer still holds is refused) and on (the default), in one run, on the
//! host's CPUs.
//!
//! Four settings, each run `RUNS` times per side, the sides alternated:
//!
//! 1. hammer-shaped: 1 to 16 producer threads pinned round-robin to the
//!    CPUs at nice 19 (`ringtrace hammer`'s defaults), each writing
//!    16-byte events as fast as it can for `SECONDS`, into a memory ring
//!    of 1,000,000 bytes per CPU in overwrite mode, no reader;
//! 2. the `tracing` layer: 4 threads each making requests (2 spans and an
//!    event) through the registry and `RingLayer`, 1 MiB per CPU,
//!    overwrite, on the `mono` and `tsc` clocks;
//! 3. a file ring in discard mode, 32 MiB per CPU, 2 writer threads
//!    pinned to one CPU writing 400,000 events in all (never half full),
//!    in the system's temporary directory.
//!
//! Each figure: the refused fraction's mean over the runs with its 95%
//! confidence interval (Student's t over the runs), refusals by cause, the
//! pages stepped over, and for setting 1 the producers' CPU ns per entry.
//!
//! `cargo bench -p ringtrace-benches --bench refusals`; `REFUSALS_RUNS`
//! (5) and `REFUSALS_SECONDS` (1) change the size.

#[path = "common/mod.rs"]
mod common;

use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_ring::{Mode, RingBuffer, RingConfig, Stats};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

/// Student's t at 97.5% for `df` degrees of freedom (1 to 30; 1.96 past).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// Mean and 95% half-width of `v`, as percentages of the fractions.
fn mean_ci(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean * 100.0, f64::NAN);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean * 100.0, t975(v.len() - 1) * (var / n).sqrt() * 100.0)
}

/// What one side of a setting saw over its runs.
#[derive(Default)]
struct Side {
    fractions: Vec<f64>,
    stats: Stats,
    cpu_ns_per_entry: Vec<f64>,
}

impl Side {
    fn add(&mut self, s: &Stats, cpu_ns: Option<f64>) {
        let tried = s.hit + s.missed;
        self.fractions.push(if tried == 0 {
            0.0
        } else {
            s.missed as f64 / tried as f64
        });
        self.stats.hit += s.hit;
        self.stats.missed += s.missed;
        self.stats.busy += s.busy;
        self.stats.preparing += s.preparing;
        self.stats.pages_stepped_over += s.pages_stepped_over;
        self.cpu_ns_per_entry.extend(cpu_ns);
    }

    fn row(&self, what: &str, step_over: Option<bool>) -> String {
        let (mean, ci) = mean_ci(&self.fractions);
        let s = &self.stats;
        let cpu = if self.cpu_ns_per_entry.is_empty() {
            "".to_owned()
        } else {
            format!(" {:.1} |", common::spread(&self.cpu_ns_per_entry).0)
        };
        format!(
            "| {what} | {} | {mean:.2}% ± {ci:.2} | {} of {} | {} | {} | {} |{cpu}",
            match step_over {
                Some(true) => "on",
                Some(false) => "off",
                None => "n/a (discard)",
            },
            s.missed,
            s.hit + s.missed,
            s.busy,
            s.preparing,
            s.pages_stepped_over,
        )
    }
}

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn nice19() {
    // SAFETY: plain system calls on this thread's id.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

fn clock(name: &str) -> Option<AnyClock> {
    name.parse::<ClockSpec>().ok()?.build().ok()
}

/// Setting 1: `producers` threads for `run`; returns the ring's stats and
/// the producers' CPU ns per entry.
fn hammer_shaped(producers: usize, step_over: bool, run: Duration) -> (Stats, f64) {
    let cpus = ringtrace_ring::cpu::possible_cpus();
    let config = RingConfig::default()
        .per_cpu_bytes(1_000_000)
        .mode(Mode::Overwrite)
        .step_over(step_over);
    let ring = Arc::new(RingBuffer::new(config, clock("local").expect("local")).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(producers + 1));
    let online = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads: Vec<_> = (0..producers)
        .map(|p| {
            let (ring, stop, start) = (Arc::clone(&ring), Arc::clone(&stop), Arc::clone(&start));
            std::thread::spawn(move || {
                pin(p % online.min(cpus));
                nice19();
                start.wait();
                let (cpu0, mut hits) = (common::thread_cpu_ns(), 0u64);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..50 {
                        let mut e = [0u8; 16];
                        e[..8].copy_from_slice(&i.to_le_bytes());
                        hits += u64::from(ring.write(&e).is_ok());
                        i += 1;
                    }
                }
                (common::thread_cpu_ns() - cpu0, hits)
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let (mut cpu, mut hits) = (0, 0);
    for t in threads {
        let (c, h) = t.join().unwrap();
        cpu += c;
        hits += h;
    }
    (ring.stats(), cpu as f64 / hits.max(1) as f64)
}

/// Setting 2: 4 threads of requests through the registry and the layer.
fn layer(clock_name: &str, step_over: bool, run: Duration) -> Option<Stats> {
    let config = RingConfig::default()
        .per_cpu_bytes(1 << 20)
        .mode(Mode::Overwrite)
        .step_over(step_over);
    let ring = Arc::new(RingBuffer::new(config, clock(clock_name)?).unwrap());
    let layer = ringtrace_tracing::RingLayer::new(Arc::clone(&ring));
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (dispatch, stop) = (dispatch.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        common::request(i);
                        i += 1;
                    }
                })
            })
        })
        .collect();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    Some(ring.stats())
}

/// Setting 3: a file ring, discard mode, 2 writers pinned to CPU 0.
fn file_discard(run_index: usize) -> Stats {
    let dir = std::env::temp_dir().join(format!("ringtrace-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{run_index}.ring"));
    let config = RingConfig::default()
        .per_cpu_bytes(32 << 20)
        .mode(Mode::Discard)
        .fixup_after(None)
        .file(&path);
    let ring = Arc::new(RingBuffer::new(config, clock("local").expect("local")).unwrap());
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2u64)
        .map(|w| {
            let (ring, start) = (Arc::clone(&ring), Arc::clone(&start));
            std::thread::spawn(move || {
                pin(0);
                start.wait();
                for i in 0..200_000u64 {
                    let mut e = [0u8; 24];
                    e[..8].copy_from_slice(&(w << 32 | i).to_le_bytes());
                    let _ = ring.write(&e);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = ring.stats();
    drop(ring);
    std::fs::remove_dir_all(&dir).unwrap();
    stats
}

fn main() {
    let runs = common::env("REFUSALS_RUNS", 5).max(2);
    let run = Duration::from_secs_f64(common::env("REFUSALS_SECONDS", 1) as f64);
    let started = Instant::now();
    println!(
        "# Refused writes with threads outnumbering CPUs: step-over off and on\n\n{}, {} CPUs, {}, {runs} runs a side, alternated, {} s each (`cargo bench -p ringtrace-benches --bench refusals`)\n",
        common::cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        common::date_utc(),
        run.as_secs_f64()
    );
    println!("## hammer-shaped: producers pinned round-robin, nice 19, 1,000,000 B per CPU, overwrite, no reader\n");
    println!("| producers | step-over | refused (95% CI) | refused of tried | page still being written | page being prepared | pages stepped over | producer CPU ns per entry (median) |");
    println!("|---|---|---|---|---|---|---|---|");
    for producers in [1, 2, 4, 8, 16] {
        let mut sides = [Side::default(), Side::default()];
        for _ in 0..runs {
            for (k, on) in [false, true].into_iter().enumerate() {
                let (s, cpu) = hammer_shaped(producers, on, run);
                sides[k].add(&s, Some(cpu));
            }
        }
        for (k, on) in [false, true].into_iter().enumerate() {
            println!("{}", sides[k].row(&producers.to_string(), Some(on)));
        }
    }
    println!(
        "\n## `tracing` layer on the registry: 4 threads of requests, 1 MiB per CPU, overwrite\n"
    );
    println!("| clock | step-over | refused (95% CI) | refused of tried | page still being written | page being prepared | pages stepped over |");
    println!("|---|---|---|---|---|---|---|");
    for name in ["mono", "tsc"] {
        let mut sides = [Side::default(), Side::default()];
        for _ in 0..runs {
            for (k, on) in [false, true].into_iter().enumerate() {
                match layer(name, on, run) {
                    Some(s) => sides[k].add(&s, None),
                    None => break,
                }
            }
        }
        if sides[0].fractions.is_empty() {
            println!("| {name} | (no such clock on this host) | | | | | |");
            continue;
        }
        for (k, on) in [false, true].into_iter().enumerate() {
            println!("{}", sides[k].row(name, Some(on)));
        }
    }
    println!(
        "\n## file ring, discard, 32 MiB per CPU, 2 writers pinned to one CPU, 400,000 events (never half full), in {}\n",
        std::env::temp_dir().display()
    );
    println!("| ring | step-over | refused (95% CI) | refused of tried | page still being written | page being prepared | pages stepped over |");
    println!("|---|---|---|---|---|---|---|");
    let mut side = Side::default();
    for r in 0..runs {
        side.add(&file_discard(r), None);
    }
    println!("{}", side.row("file, discard", None));
    println!("\n{:.0} s in all", started.elapsed().as_secs_f64());
}
