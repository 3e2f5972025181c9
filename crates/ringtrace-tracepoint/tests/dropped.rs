//! What `dropped_by_cause()` counts against the sink ring's counters:
//! events fired with no sink are dropped and in no ring count; an event
//! the ring refuses (its page to reuse busy, the ring full in discard
//! mode, the event too large for a page) is dropped by that cause, and
//! the ring counts it by the same cause and in its `missed`.
//!
//! No test harness (see Cargo.toml): the steps run in order on the main
//! thread, since the sink is set once per process and patched keys (the
//! `static-keys` feature) may be flipped only while it has one thread.

use ringtrace_clock::ClockSpec;
use ringtrace_ring::{Mode, RingBuffer, RingConfig, Stats};
use ringtrace_tracepoint::{dropped, dropped_by_cause, registry, trace, tracepoint, Dropped};

tracepoint! {
    /// Fired into a ring too small for it.
    pub fn small(seq: u32) = "seq={}";
    /// Carries a string that may not fit in a page.
    pub fn big(text: &str) = "text={}";
}

const PAGE: usize = 256;

fn since(before: Dropped) -> Dropped {
    let now = dropped_by_cause();
    assert_eq!(now.total(), dropped(), "dropped() is the sum of the causes");
    counts(
        now.no_sink - before.no_sink,
        now.full - before.full,
        now.busy - before.busy,
        now.too_large - before.too_large,
    )
}

/// The ring's refusals by the tracepoints' causes (`no_sink` 0).
fn ring_causes(stats: Stats) -> Dropped {
    assert_eq!(
        stats.missed,
        stats.full() + stats.busy + stats.too_large,
        "missed is the sum of its causes: {stats:?}"
    );
    counts(0, stats.full(), stats.busy, stats.too_large)
}

/// A `Dropped` with these counts (it is non-exhaustive: made by the
/// crate, so it is filled in from its default here).
fn counts(no_sink: u64, full: u64, busy: u64, too_large: u64) -> Dropped {
    let mut d = Dropped::default();
    d.no_sink = no_sink;
    d.full = full;
    d.busy = busy;
    d.too_large = too_large;
    d
}

fn main() {
    registry::enable("dropped:*").unwrap();

    // No sink yet: dropped, and there is no ring to count it.
    let before = dropped_by_cause();
    trace!(small(0));
    assert_eq!(since(before), counts(1, 0, 0, 0));
    println!("test an_event_with_no_sink_is_dropped_as_no_sink ... ok");

    let clock = "counter".parse::<ClockSpec>().unwrap().build().unwrap();
    let config = RingConfig::default()
        .cpus(1)
        .page_size(PAGE)
        .per_cpu_bytes(4 * PAGE)
        .mode(Mode::Discard);
    let ring: &'static RingBuffer<_> = Box::leak(Box::new(RingBuffer::new(config, clock).unwrap()));
    ringtrace_tracepoint::set_sink(ring).unwrap();

    let start = dropped_by_cause();

    // A reservation left open that fills the first page: when the writers
    // come round to that page again they find it busy (nothing on it a
    // reader could have, nothing to reuse yet).
    let held = ring
        .cpu_writer(0)
        .reserve(ringtrace_ring::format::max_payload(PAGE))
        .unwrap();
    let fired = 200u32;
    let before = dropped_by_cause();
    for seq in 0..fired {
        trace!(small(seq));
    }
    let got = since(before);
    let stats = ring.stats();
    assert!(
        stats.busy > 0,
        "4 pages cannot hold {fired} events: {stats:?}"
    );
    assert_eq!(
        got,
        ring_causes(stats),
        "every busy refusal is the ring's busy and one of its missed, and nothing else was dropped"
    );
    assert_eq!(stats.hit + stats.missed, u64::from(fired));
    println!("test a_busy_page_drops_as_busy_as_the_ring_counts_it ... ok");

    // The page complete, but unread: discard mode refuses as full.
    held.commit();
    let before = dropped_by_cause();
    let missed = ring.stats().missed;
    for seq in 0..fired {
        trace!(small(seq));
    }
    let got = since(before);
    let stats = ring.stats();
    assert_eq!(got.full, stats.full(), "{stats:?}");
    assert_eq!(got.full, stats.missed - missed, "{stats:?}");
    assert_eq!((got.no_sink, got.busy, got.too_large), (0, 0, 0));
    assert_eq!(got.full, u64::from(fired), "the ring was full already");
    println!("test a_full_discard_ring_drops_as_full_as_the_ring_counts_it ... ok");

    // Too large for a page: dropped as too large, and one of the ring's
    // missed and too_large.
    let before = dropped_by_cause();
    trace!(big(&"x".repeat(2 * PAGE)));
    assert_eq!(since(before), counts(0, 0, 0, 1));
    let stats = ring.stats();
    assert_eq!(stats.too_large, 1, "{stats:?}");
    println!("test an_event_too_large_for_a_page_drops_as_too_large_as_the_ring_counts_it ... ok");

    // Everything the tracepoints met since the sink was set, cause by
    // cause, is what the ring counted.
    assert_eq!(since(start), ring_causes(ring.stats()));
    assert_eq!(since(start).refused(), ring.stats().missed);
    println!("test every_cause_agrees_with_the_ring ... ok");
}
