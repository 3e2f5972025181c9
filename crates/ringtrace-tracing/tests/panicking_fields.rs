//! A field whose `Debug` panics while its record is written: the panic
//! reaches the caller, the record is not in the ring, and it is counted
//! dropped (a small record encoded on the stack, and a large one written
//! into its reservation alike).

mod common;

use ringtrace_tracing::{RingLayer, RingSubscriber};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use tracing_subscriber::layer::SubscriberExt;

/// Renders `size` bytes, then panics.
struct PanicsAfter(usize);

impl fmt::Debug for PanicsAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&"x".repeat(self.0))?;
        panic!("a Debug that panics");
    }
}

fn log_panicking_fields() {
    for size in [4, 4000] {
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            tracing::info!(field = ?PanicsAfter(size), "panics");
        }));
        assert!(panicked.is_err(), "size {size}");
    }
    tracing::info!("after them");
}

#[test]
fn a_record_whose_debug_panics_is_counted_dropped_through_the_subscriber() {
    let ring = common::ring();
    let subscriber = RingSubscriber::builder(ring.clone())
        .string_limit(8192)
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, log_panicking_fields);
    let stats = dispatch.downcast_ref::<RingSubscriber>().unwrap().stats();
    assert_eq!((stats.recorded, stats.dropped), (1, 2), "{stats:?}");
    let lines = common::dump_lines(&ring);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("after them"), "{lines:#?}");
}

#[test]
fn a_record_whose_debug_panics_is_counted_dropped_through_the_layer() {
    let ring = common::ring();
    let layer = RingLayer::builder(ring.clone())
        .string_limit(8192)
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, log_panicking_fields);
    let stats = dispatch.downcast_ref::<RingLayer>().unwrap().stats();
    assert_eq!((stats.recorded, stats.dropped), (1, 2), "{stats:?}");
    assert_eq!(common::dump_lines(&ring).len(), 1);
}
