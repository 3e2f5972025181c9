//! Nothing is lost while a writer sleeps: more writer threads than CPUs,
//! some at nice 19 and some under `SCHED_IDLE`, so that the scheduler
//! preempts them at random points of their writes (inside a reservation,
//! inside a page claim).
//!
//! - Discard mode, far from full: every event must be there at the end and
//!   no refusal counted.
//! - Overwrite mode, a small ring that turns laps with no reader: no write
//!   is refused, whatever page a sleeper holds (a claim steps over it), and
//!   every event is read or counted as overrun, none lost.
//!
//! Each on a file ring (whose claims zero pages) and on a memory ring, on
//! whichever write path `RINGTRACE_WRITE_PATH` chooses (CI runs both).
//!
//! `RINGTRACE_SLEEPING_RUNS` sets how many runs each test makes (50 unless
//! set, 10 off x86_64); the figures go to stderr. Sized for a 2-core machine. Not under
//! Miri: it sets scheduling policies and makes files.
#![cfg(not(miri))]

mod common;

use ringtrace_clock::ClockSpec;
use ringtrace_ring::{Mode, ReserveError, RingBuffer, RingConfig, Stats};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

const EVENTS_PER_WRITER: u64 = 6_000;
const PAGE_SIZE: usize = 1024;

fn runs() -> usize {
    std::env::var("RINGTRACE_SLEEPING_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        // Under qemu-user (the aarch64 run) each run is ten times slower.
        .unwrap_or(if cfg!(target_arch = "x86_64") { 50 } else { 10 })
}

/// How a writer thread is scheduled.
#[derive(Debug, Clone, Copy)]
enum Priority {
    Normal,
    Nice19,
    Idle,
}

impl Priority {
    fn of(writer: usize) -> Priority {
        match writer % 3 {
            0 => Priority::Idle,
            1 => Priority::Nice19,
            _ => Priority::Normal,
        }
    }

    /// Applies to the calling thread (Linux: both calls take a thread id).
    fn apply(self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        match self {
            Priority::Normal => {}
            Priority::Nice19 => {
                // SAFETY: plain system call on this thread's id.
                let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) };
                assert_eq!(rc, 0, "setpriority: {}", std::io::Error::last_os_error());
            }
            Priority::Idle => {
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: `param` is a valid sched_param for SCHED_IDLE.
                let rc = unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) };
                assert_eq!(
                    rc,
                    0,
                    "sched_setscheduler: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// What one run saw.
#[derive(Debug, Default)]
struct Tally {
    events: u64,
    missed: u64,
}

/// Writer `w`'s event `seq`, checksummed, 16 to 63 bytes: written whole
/// for even `seq`, through a reservation held across its payload stores
/// for odd.
fn write_one<C: ringtrace_clock::Clock>(
    ring: &RingBuffer<C>,
    w: usize,
    seq: u64,
) -> Result<(), ReserveError> {
    let p = common::payload(w as u32, seq, 16 + (seq % 48) as usize);
    if seq % 2 == 0 {
        ring.write(&p).map(|_| ())
    } else {
        ring.reserve(p.len()).map(|mut r| {
            r.write(&p);
            r.commit();
        })
    }
}

/// One run: writers more than CPUs, each writing `EVENTS_PER_WRITER`
/// checksummed events, half through `write` and half through a reservation
/// held across its payload stores; a consumer reads throughout when
/// `consume` (so that the ring turns laps; then a writer that outruns the
/// reader may be refused as the ring is full, counted and checked), or once
/// at the end (and then nothing may be refused).
fn run_once(config: RingConfig, consume: bool) -> Tally {
    let full_allowed = consume;
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let writers = 2 * cpus + 2;
    let clock = "local".parse::<ClockSpec>().unwrap().build().unwrap();
    let ring = Arc::new(RingBuffer::new(config, clock).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let consumer = consume.then(|| {
        let (ring, done) = (Arc::clone(&ring), Arc::clone(&done));
        std::thread::spawn(move || common::consume_until_done(&ring, &done))
    });
    let handles = spawn_writers(&ring, writers, move |ring, w| {
        // Events refused because the ring was full: the only
        // refusal allowed, and only where a reader keeps up. A
        // ring that comes round to the page a sleeping writer's
        // reservation still holds is full too (the reader stops
        // at that page, so every other page is unread), but says
        // `Busy`: nothing on that page is free to reuse.
        let mut full = Vec::new();
        for seq in 0..EVENTS_PER_WRITER {
            match write_one(ring, w, seq) {
                Ok(()) => {}
                Err(ReserveError::Full | ReserveError::Busy) if full_allowed => full.push(seq),
                Err(e) => panic!("writer {w} event {seq}: {e}"),
            }
        }
        full
    });
    let mut refused = HashSet::new();
    for (w, h) in handles.into_iter().enumerate() {
        for seq in h.join().expect("a writer panicked") {
            refused.insert((w as u32, seq));
        }
    }
    done.store(true, Ordering::Release);
    let seen = match consumer {
        Some(c) => c.join().unwrap(),
        None => common::consume_until_done(&ring, &done),
    };
    let stats = ring.stats();
    let mut ids = HashSet::new();
    for (_, payload) in seen.iter().flatten() {
        let (w, seq) = common::check(payload).unwrap_or_else(|e| panic!("{e}"));
        assert!(ids.insert((w, seq)), "writer {w} event {seq} read twice");
        assert!(
            !refused.contains(&(w, seq)),
            "writer {w} event {seq} refused, yet read"
        );
    }
    let written = writers as u64 * EVENTS_PER_WRITER - refused.len() as u64;
    assert_eq!(
        stats.missed,
        refused.len() as u64,
        "refusals counted, beside the {} full: {stats:?}",
        refused.len()
    );
    assert_eq!(
        ids.len() as u64,
        written,
        "events read, of {written} written: {stats:?}"
    );
    Tally {
        events: ids.len() as u64,
        missed: stats.missed,
    }
}

fn repeat(what: &str, mut config: impl FnMut(usize) -> RingConfig, consume: bool) {
    let runs = runs();
    let mut total = Tally::default();
    for run in 0..runs {
        let config = config(run);
        let file = config.file.clone();
        let t = run_once(config, consume);
        if let Some(file) = file {
            std::fs::remove_file(file).unwrap();
        }
        total.events += t.events;
        total.missed += t.missed;
    }
    eprintln!(
        "{what}: {runs} runs, {} events read, {} missed, write path {}",
        total.events,
        total.missed,
        std::env::var("RINGTRACE_WRITE_PATH").unwrap_or_else(|_| "auto".into())
    );
}

/// Far from full: a quarter of the ring at most, across every CPU.
fn roomy() -> RingConfig {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let bytes = (2 * cpus + 2) as u64 * EVENTS_PER_WRITER * 64;
    RingConfig::default()
        .page_size(PAGE_SIZE)
        .per_cpu_bytes(((4 * bytes) as usize).next_power_of_two())
        .mode(Mode::Discard)
        // Every writer here is alive, only asleep: no fixup for dead
        // writers, whose bounded wait (500 ms) a writer preempted under
        // qemu-user can outlast, and which would then count its page lost.
        .fixup_after(None)
}

#[test]
fn a_file_ring_far_from_full_loses_nothing_while_writers_sleep() {
    let dir = tempdir();
    repeat(
        "file ring, discard, far from full",
        |run| roomy().file(dir.join(format!("sleeping-{run}.ring"))),
        false,
    );
}

#[test]
fn a_file_ring_read_as_it_is_written_loses_nothing_while_writers_sleep() {
    // A small ring that turns many laps, its reader keeping it from full:
    // every claim after the first lap reuses a page that was read.
    let dir = tempdir();
    repeat(
        "file ring, discard, read as written",
        |run| {
            roomy()
                .per_cpu_bytes(64 * PAGE_SIZE)
                .file(dir.join(format!("lapping-{run}.ring")))
        },
        true,
    );
}

#[test]
fn a_memory_ring_far_from_full_loses_nothing_while_writers_sleep() {
    repeat("memory ring, discard, far from full", |_| roomy(), false);
}

/// Starts `writers` threads at their priorities (`Priority::of`), all at
/// once, each running `body` with the ring and its number.
fn spawn_writers<C, T>(
    ring: &Arc<RingBuffer<C>>,
    writers: usize,
    body: impl Fn(&RingBuffer<C>, usize) -> T + Send + Sync + 'static,
) -> Vec<std::thread::JoinHandle<T>>
where
    C: ringtrace_clock::Clock + Send + Sync + 'static,
    T: Send + 'static,
{
    let start = Arc::new(Barrier::new(writers));
    let body = Arc::new(body);
    (0..writers)
        .map(|w| {
            let (ring, start, body) = (Arc::clone(ring), Arc::clone(&start), Arc::clone(&body));
            std::thread::spawn(move || {
                Priority::of(w).apply();
                start.wait();
                body(&ring, w)
            })
        })
        .collect()
}

/// One overwrite run: `writers` threads, each writing `EVENTS_PER_WRITER`
/// checksummed events as `run_once`'s do, into a ring small enough to turn
/// many laps, with nobody reading until the end. Any refusal fails it.
fn run_overwrite(config: RingConfig, writers: usize) -> Stats {
    let clock = "local".parse::<ClockSpec>().unwrap().build().unwrap();
    let ring = Arc::new(RingBuffer::new(config.mode(Mode::Overwrite), clock).unwrap());
    let handles = spawn_writers(&ring, writers, |ring, w| {
        for seq in 0..EVENTS_PER_WRITER {
            if let Err(e) = write_one(ring, w, seq) {
                panic!("writer {w} event {seq} refused: {e}");
            }
        }
    });
    for h in handles {
        h.join().expect("a writer panicked");
    }
    let done = AtomicBool::new(true);
    let seen = common::consume_until_done(&ring, &done);
    let stats = ring.stats();
    assert_eq!(
        (stats.missed, stats.busy, stats.preparing),
        (0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(stats.hit, writers as u64 * EVENTS_PER_WRITER, "{stats:?}");
    common::check_seen(&seen, &stats, Mode::Overwrite, 0);
    stats
}

fn repeat_overwrite(what: &str, config: impl Fn(usize) -> RingConfig) {
    for writers in [4, 8, 16] {
        let (mut read, mut overrun, mut stepped) = (0, 0, 0);
        for run in 0..runs() {
            let config = config(run);
            let file = config.file.clone();
            let stats = run_overwrite(config, writers);
            if let Some(file) = file {
                std::fs::remove_file(file).unwrap();
            }
            read += stats.read;
            overrun += stats.overrun;
            stepped += stats.pages_stepped_over;
        }
        eprintln!(
            "{what}, {writers} writers: {} runs, {read} events read, {overrun} overrun, \
             0 refused, {stepped} pages stepped over, write path {}",
            runs(),
            std::env::var("RINGTRACE_WRITE_PATH").unwrap_or_else(|_| "auto".into())
        );
    }
}

/// Small: 16 pages a CPU, so that every run turns tens of laps.
fn lapping() -> RingConfig {
    RingConfig::default()
        .page_size(PAGE_SIZE)
        .per_cpu_bytes(16 * PAGE_SIZE)
        .fixup_after(None)
}

#[test]
fn an_overwriting_memory_ring_refuses_nothing_while_writers_sleep() {
    repeat_overwrite("memory ring, overwrite", |_| lapping());
}

#[test]
fn an_overwriting_file_ring_refuses_nothing_while_writers_sleep() {
    let dir = tempdir();
    repeat_overwrite("file ring, overwrite", |run| {
        lapping().file(dir.join(format!("overwrite-{run}.ring")))
    });
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-sleeping-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
