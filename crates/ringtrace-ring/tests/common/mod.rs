//! Helpers shared by the ring's integration tests.
#![allow(dead_code)]

use ringtrace_clock::{AnyClock, Clock, ClockInfo, Counter, Guarantee, TickConversion};
use ringtrace_ring::{Mode, RingBuffer, RingConfig, Stats};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A clock the test sets by hand, to step it back or jump it forward.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(pub Arc<AtomicU64>);

impl ManualClock {
    pub fn at(t: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(t)))
    }
    pub fn set(&self, t: u64) {
        self.0.store(t, Ordering::SeqCst);
    }
    pub fn advance(&self, by: u64) {
        self.0.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn read(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "manual".into(),
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee: Guarantee::None,
            precision_ns: Some(1.0),
            conversion: Some(TickConversion::NANOSECONDS),
        }
    }
}

/// A payload that checks itself: (writer id, sequence) and a checksum.
pub fn payload(writer: u32, seq: u64, len: usize) -> Vec<u8> {
    if len <= MAX_STACK_PAYLOAD {
        let (bytes, n) = stack_payload(writer, seq, len);
        return bytes[..n].to_vec();
    }
    let mut p = Vec::with_capacity(len.max(16));
    p.extend_from_slice(&writer.to_le_bytes());
    p.extend_from_slice(&seq.to_le_bytes());
    while p.len() < len.max(16) - 4 {
        p.push((p.len() as u64 ^ seq) as u8);
    }
    let sum = checksum(&p);
    p.extend_from_slice(&sum.to_le_bytes());
    p
}

/// The longest payload [`stack_payload`] makes.
pub const MAX_STACK_PAYLOAD: usize = 64;

/// [`payload`] without allocating (for signal handlers, where malloc may
/// be the very thing interrupted): the bytes and their length, for `len`
/// up to [`MAX_STACK_PAYLOAD`] (longer is cut to it).
pub fn stack_payload(writer: u32, seq: u64, len: usize) -> ([u8; MAX_STACK_PAYLOAD], usize) {
    let n = len.clamp(16, MAX_STACK_PAYLOAD);
    let mut p = [0u8; MAX_STACK_PAYLOAD];
    p[..4].copy_from_slice(&writer.to_le_bytes());
    p[4..12].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in p.iter_mut().enumerate().take(n - 4).skip(12) {
        *b = (i as u64 ^ seq) as u8;
    }
    let sum = checksum(&p[..n - 4]);
    p[n - 4..n].copy_from_slice(&sum.to_le_bytes());
    (p, n)
}

fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Checks a payload made by [`payload`]; returns (writer, seq).
pub fn check(p: &[u8]) -> Result<(u32, u64), String> {
    if p.len() < 16 {
        return Err(format!("payload of {} bytes is too short", p.len()));
    }
    let (body, sum) = p.split_at(p.len() - 4);
    let want = u32::from_le_bytes(sum.try_into().unwrap());
    if checksum(body) != want {
        return Err(format!("checksum mismatch in {p:?}"));
    }
    Ok((
        u32::from_le_bytes(body[0..4].try_into().unwrap()),
        u64::from_le_bytes(body[4..12].try_into().unwrap()),
    ))
}

/// The raw TSC where there is one, else the `local` clock: a clock read by
/// a bare rdtsc is what sends one-call writes down the whole-event path on
/// the rseq path.
pub fn tsc_or_local() -> AnyClock {
    use ringtrace_clock::ClockSpec;
    "tsc"
        .parse::<ClockSpec>()
        .unwrap()
        .build()
        .or_else(|_| "local".parse::<ClockSpec>().unwrap().build())
        .unwrap()
}

/// A 1-CPU ring of `pages` pages of `page` bytes stamped by a counter, with
/// no fixup on its own: the tests call `fixup()` when they want one.
pub fn counter_ring(mode: Mode, page: usize, pages: usize) -> RingBuffer<Counter> {
    let config = RingConfig::default()
        .cpus(1)
        .page_size(page)
        .per_cpu_bytes(page * pages)
        .mode(mode)
        .fixup_after(None);
    RingBuffer::new(config, Counter::new()).unwrap()
}

/// The writer id a timer signal's handler writes under.
pub const HANDLER_WRITER: u32 = 99;

/// A ring the stress tests' writers and their signal handler share, with
/// the handler's own counts.
pub struct Shared {
    pub ring: RingBuffer<AnyClock>,
    pub handler_seq: AtomicU64,
    pub handler_ok: AtomicU64,
}

impl Shared {
    pub fn new(ring: RingBuffer<AnyClock>) -> Shared {
        Shared {
            ring,
            handler_seq: AtomicU64::new(0),
            handler_ok: AtomicU64::new(0),
        }
    }
}

/// A timer signal's handler: one checksummed event of `len` bytes on the
/// interrupted thread's CPU, nested inside whatever it interrupted.
pub fn on_tick(shared: &Shared, len: usize) {
    let seq = shared.handler_seq.fetch_add(1, Ordering::Relaxed);
    // No allocation in a signal handler.
    let (p, n) = stack_payload(HANDLER_WRITER, seq, len);
    if shared.ring.write(&p[..n]).is_ok() {
        shared.handler_ok.fetch_add(1, Ordering::Relaxed);
    }
}

/// Moves the calling thread to `cpu` (a hint: a CPU the machine lacks
/// only makes the call fail).
pub fn move_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask; a CPU the
    // machine lacks only makes the call fail, which is fine for a hint.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// What a consumer thread read from each CPU buffer, in order: (time,
/// payload). It reads until `done` is set and a final flush leaves nothing,
/// taking out pages dead writers left.
pub fn consume_until_done<C: Clock>(
    ring: &RingBuffer<C>,
    done: &AtomicBool,
) -> Vec<Vec<(u64, Vec<u8>)>> {
    let mut seen: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); ring.cpus()];
    loop {
        let finished = done.load(Ordering::Acquire);
        if finished {
            ring.flush();
        }
        let mut got = 0;
        for (cpu, b) in ring.cpu_buffers().iter().enumerate() {
            while let Some(e) = b.read_event() {
                seen[cpu].push((e.ts, e.payload));
                got += 1;
            }
        }
        // Past pages that dead writers left, at the end.
        if finished && got == 0 && !ring.cpu_buffers().iter().any(|b| b.fixup()) {
            return seen;
        }
        if got == 0 {
            std::thread::yield_now();
        }
    }
}

/// Checks what [`consume_until_done`] read against the ring's counts:
/// every payload intact, nothing read twice, each CPU buffer's times never
/// going back and each writer's events in order on it, and every event
/// read, overrun or lost (`dead` writers died mid-event).
pub fn check_seen(seen: &[Vec<(u64, Vec<u8>)>], stats: &Stats, mode: Mode, dead: u64) {
    let mut ids = HashSet::new();
    let mut total = 0u64;
    for (cpu, events) in seen.iter().enumerate() {
        let mut last_ts = 0;
        let mut last_seq: HashMap<u32, u64> = HashMap::new();
        for (ts, p) in events {
            let (w, seq) = check(p).unwrap_or_else(|e| panic!("cpu {cpu}: {e}"));
            assert!(
                *ts >= last_ts,
                "cpu {cpu}: time went back from {last_ts} to {ts}"
            );
            last_ts = *ts;
            assert!(ids.insert((w, seq)), "event ({w}, {seq}) read twice");
            // The handlers' events take their numbers from one counter
            // shared by every thread a signal interrupts, before they
            // reserve: two threads' handlers may write theirs in either
            // order. Each writer thread's own are in order.
            if w != HANDLER_WRITER {
                if let Some(prev) = last_seq.insert(w, seq) {
                    assert!(seq > prev, "cpu {cpu}: writer {w} event {seq} after {prev}");
                }
            }
            total += 1;
        }
    }
    assert_eq!(total, stats.read);
    match mode {
        Mode::Discard => assert_eq!(total + stats.lost, stats.hit - stats.discarded, "{stats:?}"),
        Mode::Overwrite => assert_eq!(total + stats.overrun + stats.lost, stats.hit, "{stats:?}"),
    }
    if dead == 0 {
        assert_eq!(stats.lost, 0, "{stats:?}");
    } else {
        assert!(
            stats.pages_reclaimed > 0,
            "no dead writer's page was taken out"
        );
    }
}
