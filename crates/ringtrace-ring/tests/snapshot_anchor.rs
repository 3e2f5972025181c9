//! A snapshot's wall-clock anchor is the one taken when the ring was
//! opened: every snapshot carries the same, and none reads the clock.

use ringtrace_clock::{Clock, ClockInfo, Counter};
use ringtrace_ring::{file, RingBuffer, RingConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A clock that moves 1000 ticks at every read, and counts its reads.
#[derive(Debug, Clone, Default)]
struct CountingClock(Arc<AtomicU64>);

impl CountingClock {
    fn reads(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Clock for CountingClock {
    fn read(&self) -> u64 {
        (self.0.fetch_add(1, Ordering::SeqCst) + 1) * 1000
    }
    fn info(&self) -> ClockInfo {
        Counter::new().info()
    }
}

fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn config() -> RingConfig {
    RingConfig::default().cpus(1).per_cpu_bytes(8192)
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the real-time clock, which Miri's isolation hides"
)]
fn a_memory_rings_snapshots_carry_the_anchor_taken_when_it_was_opened() {
    let clock = CountingClock::default();
    let before = wall_ns();
    let ring = RingBuffer::new(config(), clock.clone()).unwrap();
    let after = wall_ns();
    let at_open = clock.reads();
    ring.write(b"one").unwrap();
    let first = ring.snapshot(Vec::new()).header;
    std::thread::sleep(std::time::Duration::from_millis(2));
    ring.write(b"two").unwrap();
    let reads = clock.reads();
    let second = ring.snapshot(Vec::new()).header;
    assert_eq!(clock.reads(), reads, "a snapshot read the clock");
    assert_eq!(
        (first.wall_ns, first.anchor_ticks),
        (second.wall_ns, second.anchor_ticks),
        "two snapshots, two anchors"
    );
    // The reading made while the ring was opened, and the wall clock then.
    assert_eq!(at_open, 1, "the ring reads its clock once as it opens");
    assert_eq!(first.anchor_ticks, 1000);
    assert!(
        (before..=after).contains(&first.wall_ns),
        "{before} <= {} <= {after}",
        first.wall_ns
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates files")]
fn a_file_rings_snapshots_carry_its_headers_anchor_also_when_appended_to() {
    let dir = std::env::temp_dir().join(format!("ringtrace-anchor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("anchor.ring");
    let clock = CountingClock::default();
    let ring = RingBuffer::new(config().file(&path), clock.clone()).unwrap();
    ring.write(b"one").unwrap();
    let live = ring.snapshot(Vec::new()).header;
    drop(ring);
    let header = file::recover(&path).unwrap().header;
    assert_eq!(
        (live.wall_ns, live.anchor_ticks),
        (header.wall_ns, header.anchor_ticks)
    );
    // Appended to later, the file keeps its anchor, and so do snapshots.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let ring = RingBuffer::new(config().file(&path).append(true), clock.clone()).unwrap();
    ring.write(b"two").unwrap();
    let appended = ring.snapshot(Vec::new()).header;
    assert_eq!(
        (appended.wall_ns, appended.anchor_ticks),
        (header.wall_ns, header.anchor_ticks)
    );
    drop(ring);
    std::fs::remove_dir_all(&dir).unwrap();
}
