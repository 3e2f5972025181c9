//! Recording allocates nothing once each callsite is described: events
//! with integer, string and `Debug` fields (cut ones included), spans
//! created, entered, recorded into, exited and closed, and local spans.
//! Describing a callsite, on its first record, allocates (its description
//! is built as a `Vec`), so each callsite is warmed up first.

mod common;

use ringtrace_tracing::{local_span, set_local_span_ring, RingLayer, RingSubscriber};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tracing_subscriber::layer::SubscriberExt;

/// Counts the allocations of threads that asked to be counted.
struct Counting;

thread_local! {
    /// Whether this thread's allocations are counted, and how many were
    /// (const-initialised, no destructor: safe to touch from inside the
    /// allocator). Per thread, so tests running at once count apart.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    if COUNTED.with(Cell::get) {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
    }
}

/// The allocations `f` makes on this thread.
fn allocations_of(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    COUNTED.with(|c| c.set(true));
    f();
    COUNTED.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get) - before
}

// SAFETY: every call is forwarded to the system allocator unchanged;
// counting touches only an atomic and a const thread-local.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[derive(Debug)]
#[allow(dead_code)] // read through Debug
struct Page {
    id: u64,
    name: &'static str,
}

fn work(round: u64, long: &str) {
    let span = tracing::info_span!("request", round, user = tracing::field::Empty);
    let _entered = span.enter();
    span.record("user", "alice");
    tracing::info!(round, delta = -1i64, ok = true, ratio = 0.25, "working");
    tracing::warn!(name = "short", text = long, page = ?Page { id: round, name: "p" });
    {
        let _local = local_span!("inner loop");
        tracing::debug!(error = %std::fmt::Error, "formatted with Display");
    }
}

#[test]
fn recording_allocates_nothing_after_each_callsite_is_described() {
    let ring = common::ring();
    set_local_span_ring(ring.clone()).unwrap();
    let layer = RingLayer::new(ring.clone());
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    let long = "z".repeat(1000); // cut at the 256-byte limit
    tracing::subscriber::with_default(subscriber, || {
        // Warm-up: describes every callsite, fills the registry's pools.
        for round in 0..4 {
            work(round, &long);
        }
        let before = layer.stats();
        let allocations = allocations_of(|| {
            for round in 0..200 {
                work(round, &long);
            }
        });
        let after = layer.stats();
        assert_eq!(allocations, 0);
        // It did record: 3 events and 5 span records (new, record, enter,
        // exit, close) a round, and one cut
        // string.
        assert_eq!(after.recorded - before.recorded, 200 * 8);
        assert_eq!(after.strings_cut - before.strings_cut, 200);
        assert_eq!(after.dropped, 0);
    });
    // Local spans: 1 record a round (at the span's end), on top.
    assert_eq!(ring.stats().hit, 204 * 9);
}

/// A request: spans nested, one cloned and closed at its last handle's
/// drop, an event inside.
fn request(round: u64) {
    let request = tracing::info_span!("request", round, user = tracing::field::Empty);
    let _r = request.enter();
    request.record("user", "bob");
    let db = tracing::info_span!("db", table = "users");
    let copy = db.clone();
    db.in_scope(|| tracing::info!(rows = round, ok = true, "read"));
    drop(db);
    drop(copy);
}

#[test]
fn the_subscriber_allocates_nothing_per_span_after_warm_up() {
    let ring = common::ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        // Warm-up: describes the callsites, sizes the thread's stack and
        // the clone table's map.
        for round in 0..4 {
            request(round);
        }
        let subscriber = dispatch.downcast_ref::<RingSubscriber>().unwrap();
        let before = subscriber.stats();
        let allocations = allocations_of(|| {
            for round in 0..500 {
                request(round);
            }
        });
        let after = subscriber.stats();
        assert_eq!(allocations, 0);
        // 2 spans: new, enter, exit, close each; a record; an event.
        assert_eq!(after.recorded - before.recorded, 500 * 10);
    });
}
