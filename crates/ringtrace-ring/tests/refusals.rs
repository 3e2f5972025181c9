//! Every refusal is counted, by cause, on every write path, every way
//! into the ring and both modes: a busy page, a full buffer (discard mode) and an event
//! too large for a page each return their error, and the ring's `missed`
//! and its cause's counter grow by exactly the refusals returned, in
//! memory and in a recovered file.

mod common;

use ringtrace_clock::{Clock, Counter};
use ringtrace_ring::format::max_payload;
use ringtrace_ring::{file, Mode, ReserveError, RingBuffer, RingConfig, Stats, WritePath};

/// A clock read by a bare rdtsc: on the rseq path, one-call writes take
/// the whole-event path and reservations its fast reserve.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[derive(Debug, Clone, Copy)]
struct BareRdtsc;

#[cfg(all(target_arch = "x86_64", not(miri)))]
impl Clock for BareRdtsc {
    fn read(&self) -> u64 {
        // `InlineRead::Rdtsc` reads the TSC itself on x86_64, never `self`.
        ringtrace_clock::InlineRead::Rdtsc.read(self)
    }
    fn info(&self) -> ringtrace_clock::ClockInfo {
        Counter::new().info()
    }
    fn inline_read(&self) -> ringtrace_clock::InlineRead {
        ringtrace_clock::InlineRead::Rdtsc
    }
}

/// The ways into a ring, each ending in a commit when it is not refused.
#[derive(Debug, Clone, Copy)]
enum Way {
    Write,
    WriteOn,
    CpuWriter,
    Reserve,
    ReserveOn,
    CpuWriterReserve,
}

const WAYS: [Way; 6] = [
    Way::Write,
    Way::WriteOn,
    Way::CpuWriter,
    Way::Reserve,
    Way::ReserveOn,
    Way::CpuWriterReserve,
];

fn attempt<C: Clock>(ring: &RingBuffer<C>, way: Way, len: usize) -> Result<(), ReserveError> {
    let payload = vec![7u8; len];
    let commit = |r: ringtrace_ring::Reservation<'_>| {
        let mut r = r;
        r.write(&payload);
        r.commit();
    };
    match way {
        Way::Write => ring.write(&payload).map(drop),
        Way::WriteOn => ring.cpu_writer(0).write(&payload).map(drop),
        Way::CpuWriter => ring.cpu_writer(0).write(&payload).map(drop),
        Way::Reserve => ring.reserve(len).map(commit),
        Way::ReserveOn => ring.cpu_writer(0).reserve(len).map(commit),
        Way::CpuWriterReserve => ring.cpu_writer(0).reserve(len).map(commit),
    }
}

/// The refusals returned, by cause.
#[derive(Debug, Default, PartialEq, Eq)]
struct Refused {
    full: u64,
    busy: u64,
    preparing: u64,
    too_large: u64,
    timed_out: u64,
}

impl Refused {
    fn of(stats: &Stats) -> Refused {
        Refused {
            full: stats.full(),
            busy: stats.busy,
            preparing: stats.preparing,
            too_large: stats.too_large,
            timed_out: stats.timed_out,
        }
    }
}

/// Makes `n` attempts of `len` bytes; returns how many were accepted.
fn attempts<C: Clock>(
    ring: &RingBuffer<C>,
    way: Way,
    len: usize,
    n: usize,
    refused: &mut Refused,
) -> u64 {
    let mut accepted = 0;
    for _ in 0..n {
        match attempt(ring, way, len) {
            Ok(()) => accepted += 1,
            Err(ReserveError::Full) => refused.full += 1,
            Err(ReserveError::Busy) => refused.busy += 1,
            Err(ReserveError::Preparing) => refused.preparing += 1,
            Err(ReserveError::TooLarge { .. }) => refused.too_large += 1,
            Err(ReserveError::TimedOut) => refused.timed_out += 1,
        }
    }
    accepted
}

const PAGE: usize = 256;

fn config(path: WritePath, mode: Mode) -> RingConfig {
    // One buffer, so that every way (the caller's CPU or buffer 0) writes
    // the same one; no fixup, so that the page left busy stays so; no
    // step-over, so that overwrite mode refuses at it too
    // (tests/step_over.rs has the step-overs).
    RingConfig::default()
        .step_over(false)
        .cpus(1)
        .page_size(PAGE)
        .per_cpu_bytes(4 * PAGE)
        .mode(mode)
        .fixup_after(None)
        .write_path(path)
}

/// Each cause the ring's mode has provoked through `way`, and the counts
/// checked against what was returned. A reservation is left open that
/// fills the first page; when the writer comes round to that page it is
/// busy in either mode (nothing on it for a reader, nothing to reuse).
/// Committed, it is reused in overwrite mode and is the ring's end in
/// discard mode (full: unread).
fn each_cause_is_counted<C: Clock>(ring: &RingBuffer<C>, mode: Mode, way: Way) -> Stats {
    let what = format!("{way:?} on the {} path, {mode:?}", ring.write_path().name());
    let mut refused = Refused::default();
    let held = ring.cpu_writer(0).reserve(max_payload(PAGE)).unwrap();
    let mut accepted = attempts(ring, way, 32, 60, &mut refused);
    assert!(refused.busy > 0 && refused.full == 0, "{what}: {refused:?}");
    let busy = refused.busy;
    held.commit();
    accepted += attempts(ring, way, 32, 20, &mut refused);
    match mode {
        Mode::Overwrite => assert_eq!((refused.busy, refused.full), (busy, 0), "{what}"),
        Mode::Discard => {
            assert_eq!(
                (refused.busy, refused.full),
                (busy, 20),
                "{what}: {refused:?}"
            )
        }
    }
    // Larger than a page holds, however full the ring.
    accepted += attempts(ring, way, PAGE + 1, 3, &mut refused);
    accepted += attempts(ring, way, 5000, 2, &mut refused);
    assert_eq!(refused.too_large, 5, "{what}: {refused:?}");

    let stats = ring.stats();
    assert_eq!(Refused::of(&stats), refused, "{what}: {stats:?}");
    assert_eq!(
        stats.missed,
        refused.full + refused.busy + refused.preparing + refused.too_large,
        "{what}: {stats:?}"
    );
    // Every attempt is a hit or a miss (the held reservation a hit).
    assert_eq!(stats.hit, accepted + 1, "{what}: {stats:?}");
    assert_eq!(
        stats.hit + stats.missed,
        60 + 20 + 5 + 1,
        "{what}: {stats:?}"
    );
    stats
}

const MODES: [Mode; 2] = [Mode::Overwrite, Mode::Discard];

/// The write paths this machine runs: CAS always, rseq where it can (not
/// under Miri, which runs no rseq).
fn paths() -> Vec<WritePath> {
    let mut paths = vec![WritePath::Cas];
    if !cfg!(miri)
        && RingBuffer::new(config(WritePath::Rseq, Mode::Discard), Counter::new()).is_ok()
    {
        paths.push(WritePath::Rseq);
    }
    paths
}

/// Runs `f` on a thread pinned to CPU 0 where it can be (not under Miri):
/// there the rseq path writes its own CPU's buffer, by its fast ways.
fn on_cpu_0(f: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        s.spawn(|| {
            if !cfg!(miri) {
                common::move_to_cpu(0);
            }
            f();
        });
    });
}

#[test]
fn every_refusal_is_counted_by_cause_on_every_path_and_way() {
    on_cpu_0(|| {
        for path in paths() {
            for (way, mode) in WAYS.into_iter().flat_map(|w| MODES.map(|m| (w, m))) {
                let ring = RingBuffer::new(config(path, mode), Counter::new()).unwrap();
                each_cause_is_counted(&ring, mode, way);
                #[cfg(all(target_arch = "x86_64", not(miri)))]
                {
                    let ring = RingBuffer::new(config(path, mode), BareRdtsc).unwrap();
                    each_cause_is_counted(&ring, mode, way);
                }
            }
        }
    });
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_file_ring_keeps_its_refusals_by_cause_for_recover() {
    let dir = std::env::temp_dir().join(format!("ringtrace-refusals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (path, mode) in paths().into_iter().flat_map(|p| MODES.map(|m| (p, m))) {
        let file = dir.join(format!("{}-{mode:?}.ring", path.name()));
        let ring = RingBuffer::new(config(path, mode).file(&file), Counter::new()).unwrap();
        let live = each_cause_is_counted(&ring, mode, Way::Write);
        drop(ring);
        let recovered = file::recover(&file).unwrap().file_stats();
        assert_eq!(
            (recovered.missed, recovered.busy, recovered.too_large),
            (live.missed, live.busy, live.too_large),
            "{} {mode:?}: {recovered:?}",
            path.name()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
