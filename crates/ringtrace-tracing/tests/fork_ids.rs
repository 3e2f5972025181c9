//! A child forked with a file ring writes on into it, and readers take its
//! records with its parent's: the spans and callsites each makes after
//! the fork must not share ids, through the layer or the subscriber.

use ringtrace_clock::{AnyClock, ClockSpec};
use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracing::{RingLayer, RingSubscriber};
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;

/// Under `dispatch`, makes a span before the fork and one after it in the
/// parent and in the child (the child's written while the parent waits
/// for it), and returns the ids of the spans named `after_fork`, each
/// with the thread that made it.
fn ids_after_a_fork(
    ring: &Arc<RingBuffer<AnyClock>>,
    dispatch: tracing::Dispatch,
) -> Vec<(u64, u64)> {
    tracing::dispatcher::with_default(&dispatch, || {
        drop(tracing::info_span!("before_fork"));
        // SAFETY: the child records with this thread only (the test's),
        // then leaves with _exit, running no destructor of the parent's.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            tracing::info_span!("after_fork").in_scope(|| tracing::info!("in the child"));
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child, its status into a local.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        tracing::info_span!("after_fork").in_scope(|| tracing::info!("in the parent"));
    });
    ring.flush();
    let snapshot = ring.snapshot(metadata_for_tracepoints().unwrap().to_bytes());
    let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
    let json: Vec<serde_json::Value> = dump.events().into_iter().map(|e| dump.json(e)).collect();
    // Each event is read under its own callsite: the child's callsites,
    // described in the ring they share, take ids the parent's do not.
    let mut messages: Vec<&str> = json
        .iter()
        .filter(|r| r["event"] == "tracing:event")
        .filter_map(|r| r["fields"]["message"].as_str())
        .collect();
    messages.sort_unstable();
    assert_eq!(messages, ["in the child", "in the parent"], "{json:#?}");
    json.iter()
        .filter(|r| r["event"] == "tracing:span_new" && r["callsite"] == "after_fork")
        .map(|r| (r["span"].as_u64().unwrap(), r["tid"].as_u64().unwrap_or(0)))
        .collect()
}

fn file_ring(dir: &std::path::Path) -> Arc<RingBuffer<AnyClock>> {
    let clock = "mono".parse::<ClockSpec>().unwrap().build().unwrap();
    let config = RingConfig::default()
        .cpus(2)
        .per_cpu_bytes(64 * 1024)
        .file(dir.join("f.ring"));
    Arc::new(RingBuffer::new(config, clock).unwrap())
}

fn assert_apart(ids: &[(u64, u64)]) {
    assert_eq!(
        ids.len(),
        2,
        "a span in the parent and one in the child: {ids:?}"
    );
    assert_ne!(ids[0].1, ids[1].1, "made by two threads: {ids:?}");
    assert_ne!(
        ids[0].0, ids[1].0,
        "the parent's and the child's span share an id"
    );
}

#[test]
#[cfg_attr(miri, ignore = "creates files and forks")]
fn a_fork_childs_spans_and_its_parents_have_ids_apart_through_the_subscriber() {
    let dir = ringtrace_testkit::TempDir::new("fork-ids-subscriber");
    let ring = file_ring(dir.path());
    let ids = ids_after_a_fork(
        &ring,
        tracing::Dispatch::new(RingSubscriber::new(ring.clone())),
    );
    assert_apart(&ids);
}

#[test]
#[cfg_attr(miri, ignore = "creates files and forks")]
fn a_fork_childs_spans_and_its_parents_have_ids_apart_through_the_layer() {
    let dir = ringtrace_testkit::TempDir::new("fork-ids-layer");
    let ring = file_ring(dir.path());
    let layer = RingLayer::new(ring.clone());
    let ids = ids_after_a_fork(
        &ring,
        tracing::Dispatch::new(tracing_subscriber::registry().with(layer)),
    );
    assert_apart(&ids);
}
