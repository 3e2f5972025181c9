//! Helpers shared by the ring's integration tests.
#![allow(dead_code)]

use ringtrace_clock::{AnyClock, Clock, ClockInfo, Counter, Guarantee, TickConversion};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use std::sync::atomic::{AtomicU64, Ordering};
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
    let p = payload(HANDLER_WRITER, seq, len);
    if shared.ring.write(&p).is_ok() {
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
