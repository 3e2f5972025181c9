//! What `dropped()` counts against the sink ring's `missed`: events fired
//! with no sink and events too large for a page are dropped and in no ring
//! count; events a full discard-mode ring refuses are dropped as `refused`
//! and each is one of the ring's `missed`.
//!
//! No test harness (see Cargo.toml): the steps run in order on the main
//! thread, since the sink is set once per process and patched keys (the
//! `static-keys` feature) may be flipped only while it has one thread.

use ringtrace_clock::ClockSpec;
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
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
    Dropped {
        no_sink: now.no_sink - before.no_sink,
        refused: now.refused - before.refused,
        too_large: now.too_large - before.too_large,
    }
}

fn main() {
    registry::enable("dropped:*").unwrap();

    // No sink yet: dropped, and there is no ring to count it.
    let before = dropped_by_cause();
    trace!(small(0));
    assert_eq!(
        since(before),
        Dropped {
            no_sink: 1,
            ..Dropped::default()
        }
    );
    println!("test an_event_with_no_sink_is_dropped_as_no_sink ... ok");

    let clock = "counter".parse::<ClockSpec>().unwrap().build().unwrap();
    let config = RingConfig::default()
        .cpus(1)
        .page_size(PAGE)
        .per_cpu_bytes(4 * PAGE)
        .mode(Mode::Discard);
    let ring: &'static RingBuffer<_> = Box::leak(Box::new(RingBuffer::new(config, clock).unwrap()));
    ringtrace_tracepoint::set_sink(ring).unwrap();

    // Fill the ring with no reader: discard mode refuses the rest.
    let fired = 200u32;
    let before = dropped_by_cause();
    for seq in 0..fired {
        trace!(small(seq));
    }
    let got = since(before);
    let stats = ring.stats();
    assert!(stats.missed > 0, "4 pages cannot hold {fired} events");
    assert_eq!(
        got,
        Dropped {
            refused: stats.missed,
            ..Dropped::default()
        },
        "every refusal is one of the ring's missed, and nothing else was dropped"
    );
    assert_eq!(stats.hit + stats.missed, u64::from(fired));
    println!("test a_full_discard_ring_refuses_as_many_as_it_misses ... ok");

    // Too large for a page: dropped, and the ring counts nothing.
    let before = dropped_by_cause();
    let missed = ring.stats().missed;
    trace!(big(&"x".repeat(2 * PAGE)));
    assert_eq!(
        since(before),
        Dropped {
            too_large: 1,
            ..Dropped::default()
        }
    );
    assert_eq!(ring.stats().missed, missed);
    println!("test an_event_too_large_for_a_page_is_dropped_and_not_missed ... ok");
}
