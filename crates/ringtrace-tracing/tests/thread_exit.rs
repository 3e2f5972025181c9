//! `tracing` events and spans made while a thread is torn down (in the
//! `Drop` of a thread-local, a common place to log) are recorded by the
//! installed subscriber and counted, rather than aborting the process.
//! A file of its own: it installs a global default.

mod common;

use ringtrace_tracing::RingSubscriber;
use std::cell::Cell;

/// Logs when the thread-local holding it is destroyed, after the
/// subscriber's own thread state (made by the event before it).
struct LogOnDrop;

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        tracing::info!(n = 1u64, "from a thread-local's destructor");
        let span = tracing::info_span!("in_teardown", k = 2u64);
        let entered = span.enter();
        tracing::info!("inside a span, in teardown");
        drop(entered);
        drop(span);
    }
}

thread_local! {
    static GUARD: Cell<Option<LogOnDrop>> = const { Cell::new(None) };
}

#[test]
fn records_made_in_a_thread_locals_destructor_are_written_and_counted() {
    let ring = common::ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    tracing::dispatcher::set_global_default(dispatch.clone()).unwrap();
    // A thread that records, leaves a span entered, and exits: the next
    // thread is given its `ThreadLocal` id, and with it its entries.
    std::thread::spawn(|| {
        tracing::info!("an earlier thread");
        std::mem::forget(tracing::info_span!("left_entered").entered());
    })
    .join()
    .unwrap();
    std::thread::spawn(|| {
        // The thread-local first, the subscriber's entry after: its
        // destructor runs after the entry can no longer be reached.
        GUARD.with(|g| g.set(Some(LogOnDrop)));
        tracing::info!("before the thread ends");
        drop(tracing::info_span!("fresh_root"));
    })
    .join()
    .unwrap();
    let json = common::dump_json(&ring);
    let events: Vec<&str> = json
        .iter()
        .filter(|r| r["event"] == "tracing:event")
        .filter_map(|r| r["fields"]["message"].as_str())
        .collect();
    assert_eq!(
        events,
        [
            "an earlier thread",
            "before the thread ends",
            "from a thread-local's destructor",
            "inside a span, in teardown"
        ],
        "{json:#?}"
    );
    // The span the earlier thread left entered is not the new thread's.
    let fresh = json
        .iter()
        .find(|r| r["event"] == "tracing:span_new" && r["callsite"] == "fresh_root")
        .unwrap();
    assert_eq!(fresh["parent"].as_u64().unwrap_or(0), 0, "{json:#?}");
    // An event and a span made and entered; an event and a span made and
    // closed; then in teardown an event, a span made, entered, exited and
    // closed, and the event inside it: every record counted.
    let subscriber = dispatch
        .downcast_ref::<RingSubscriber<ringtrace_clock::AnyClock>>()
        .unwrap();
    assert_eq!(subscriber.stats().recorded, json.len() as u64, "{json:#?}");
    assert_eq!(json.len(), 3 + 3 + 6, "{json:#?}");
}
