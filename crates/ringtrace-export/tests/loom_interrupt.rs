//! loom model of the interrupt registry (src/export/interrupt/registry.rs):
//! a signal handler's `remove_all` never reads an entry that `release`
//! freed, and a handler that waited for another ends the process only
//! after its removals.
//!
//! The registry's file is compiled into this test under `cfg(loom)`: its
//! atomics are loom's, an entry's path sits in a loom cell that the
//! handler reads where it would remove the path and `release` writes where
//! it would free the entry (the entry is kept, so that a bad read is a
//! loom report and not a use after free in the model), and a SeqCst fence
//! stands in for the SeqCst total order that loom does not model for
//! accesses (see `seq_cst_between`). A handler's read that is not ordered
//! before the free is a causality violation.
//!
//! scripts/test.sh's loom part builds it with `--cfg loom` for this test
//! alone (`cargo rustc ... --test loom_interrupt -- --cfg loom`) and runs
//! it: `--cfg loom` for every crate switches the ring to its loom mode,
//! which builds no file rings, and ringtrace-tracepoint and this crate's
//! export guard do not build without them.
//!
//! Each model also checks that every outcome the protocol allows is met:
//! the handler removes the path (and release leaks the entry), release
//! frees it (the handler having found the slot empty), or neither (the
//! handler ran before the insert, or read the slot after the swap but
//! began before release looked).
#![cfg(loom)]

#[path = "../src/export/interrupt/registry.rs"]
mod registry;

use loom::sync::Arc;
use loom::thread;
use registry::{Entry, Kind, Registry};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

const PATH: &str = "/nonexistent/.export.tmp";

/// What one execution ended with: (the handlers removed the path, release
/// freed the entry).
type Outcome = (bool, bool);

/// Every outcome the protocol allows; never (true, true), a read of a
/// freed entry, which loom would also report as a causality violation.
const ALLOWED: [Outcome; 3] = [(true, false), (false, true), (false, false)];

fn entry() -> Entry {
    Entry::new(Path::new(PATH), Kind::File).expect("a path without NUL")
}

/// Checks one execution's end: the path removed at most once, and never
/// both removed and freed. Returns the outcome.
fn outcome(registry: &Registry) -> Outcome {
    let removed = registry.removed();
    let freed = registry.freed();
    assert!(removed.len() <= 1, "removed twice: {removed:?}");
    for (kind, path) in &removed {
        assert_eq!(*kind, Kind::File);
        assert_eq!(path.to_str(), Ok(PATH), "a handler read a freed path");
    }
    assert!(freed <= 1);
    let outcome = (!removed.is_empty(), freed == 1);
    assert!(ALLOWED.contains(&outcome), "removed and freed: {outcome:?}");
    outcome
}

/// Runs `body` under loom and checks that every allowed outcome was met.
/// The outcomes are gathered outside the model, in a std `Arc` and
/// `Mutex` (loom's exist only inside a run).
fn model(body: impl Fn() -> Outcome + Sync + Send + 'static) {
    let seen = std::sync::Arc::new(Mutex::new(BTreeSet::new()));
    let recorded = std::sync::Arc::clone(&seen);
    loom::model(move || {
        let outcome = body();
        recorded.lock().unwrap().insert(outcome);
    });
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, BTreeSet::from(ALLOWED), "the outcomes met");
}

#[test]
fn a_handler_racing_an_insert_and_its_release_never_reads_a_freed_entry() {
    model(|| {
        let registry = Arc::new(Registry::new());
        let handler = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.remove_all())
        };
        let slot = registry.insert(entry()).expect("a free slot");
        registry.release(slot);
        handler.join().unwrap();
        outcome(&registry)
    });
}

#[test]
fn a_handler_racing_the_release_of_a_registered_entry_never_reads_it_freed() {
    model(|| {
        let registry = Arc::new(Registry::new());
        let slot = registry.insert(entry()).expect("a free slot");
        let releaser = {
            let registry = Arc::clone(&registry);
            thread::spawn(move || registry.release(slot))
        };
        registry.remove_all();
        releaser.join().unwrap();
        outcome(&registry)
    });
}

#[test]
fn two_handlers_racing_a_release_remove_once_and_the_second_ends_after_the_first() {
    model(|| {
        let registry = Arc::new(Registry::new());
        let handlers: Vec<_> = (0..2)
            .map(|_| {
                let registry = Arc::clone(&registry);
                thread::spawn(move || registry.remove_all())
            })
            .collect();
        let slot = registry.insert(entry()).expect("a free slot");
        registry.release(slot);
        for handler in handlers {
            handler.join().unwrap();
        }
        outcome(&registry)
    });
}
