//! An event made with its parent given (`parent: &span`, `parent: None`)
//! is read in that span, or in none, whatever span its thread is in;
//! through the subscriber and the layer, and by the assembler every span
//! export reads with.

mod common;

use ringtrace_export::spans::{assemble, Assembled};
use ringtrace_export::{metadata_for_tracepoints, Trace};
use ringtrace_tracing::{RingLayer, RingSubscriber};
use std::collections::BTreeMap;
use tracing_subscriber::layer::SubscriberExt;

/// Span A, then span B entered, and in B: an event given A, one given no
/// parent, one in the thread's current span; and, on another thread, in
/// no span, an event given B.
fn events_given_their_parents(dispatch: &tracing::Dispatch) {
    let a = tracing::info_span!("A");
    let b = tracing::info_span!("B");
    let _in_b = b.enter();
    tracing::info!(parent: &a, "given A");
    tracing::info!(parent: None, "given none");
    tracing::info!("in B, the current span");
    let b2 = b.clone();
    std::thread::scope(|s| {
        s.spawn(move || {
            tracing::dispatcher::with_default(dispatch, || {
                tracing::info!(parent: &b2, "given B, on another thread");
            });
        });
    });
}

/// Each event's message and the span it was read in (`-` for none),
/// recorded through what `make` builds on a ring.
fn where_events_went(
    make: impl Fn(
        std::sync::Arc<ringtrace_ring::RingBuffer<ringtrace_clock::AnyClock>>,
    ) -> tracing::Dispatch,
) -> BTreeMap<String, String> {
    let ring = common::ring();
    let dispatch = make(ring.clone());
    tracing::dispatcher::with_default(&dispatch, || events_given_their_parents(&dispatch));
    ring.flush();
    let snapshot = ring.snapshot(metadata_for_tracepoints().unwrap().to_bytes());
    let trace = Trace::single(&snapshot);
    let mut found = BTreeMap::new();
    assemble::<()>(&trace, &mut |a| {
        match a {
            Assembled::Tree(tree) => {
                for span in &tree.spans {
                    for e in &span.events {
                        found.insert(e.name.clone(), span.name.clone());
                    }
                }
            }
            Assembled::Event(e) => {
                found.insert(e.name, "-".into());
            }
            _ => {}
        }
        Ok(())
    })
    .unwrap();
    found
}

fn expected() -> BTreeMap<String, String> {
    [
        ("given A", "A"),
        ("given none", "-"),
        ("in B, the current span", "B"),
        ("given B, on another thread", "B"),
    ]
    .into_iter()
    .map(|(e, s)| (e.to_owned(), s.to_owned()))
    .collect()
}

#[test]
fn events_given_a_parent_are_read_in_it_through_the_subscriber() {
    let found = where_events_went(|ring| tracing::Dispatch::new(RingSubscriber::new(ring)));
    assert_eq!(found, expected());
}

#[test]
fn events_given_a_parent_are_read_in_it_through_the_layer() {
    let found = where_events_went(|ring| {
        tracing::Dispatch::new(tracing_subscriber::registry().with(RingLayer::new(ring)))
    });
    assert_eq!(found, expected());
}
