//! `spans::assemble` over traces recorded through the `tracing` layer:
//! every span created comes back once, in the tree of its root, under
//! its parent, with its events, its threads and its links; events outside
//! spans come back alone; every span has its own uid; the
//! same trace read twice gives the same uids and trace ids; and the tail
//! sampling rules keep the trees they say.

#![cfg(feature = "tracing")]

use proptest::prelude::*;
use ringtrace::export::spans::{assemble, Assembled, KeepRules, SpanTree};
use ringtrace::export::{Dump, Trace};
use ringtrace::{DumpOptions, Mode, Tracer};
use std::collections::{HashMap, HashSet};
use tracing_subscriber::layer::SubscriberExt;

fn tracer(dir: &ringtrace_testkit::TempDir, bytes: usize, mode: Mode) -> Tracer {
    Tracer::builder()
        .file(dir.0.join("t.ring"))
        .cpus(2)
        .page_size(4096)
        .buffer_size(bytes)
        .mode(mode)
        .build()
        .unwrap()
}

fn with_layer(tracer: &Tracer, f: impl FnOnce(&tracing::Dispatch)) {
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || f(&dispatch));
}

/// Every tree and loose event of `tracer`'s trace.
fn assembled(
    tracer: &Tracer,
) -> (
    Vec<SpanTree>,
    usize,
    ringtrace::export::spans::AssembleSummary,
) {
    tracer.flush();
    let snapshot = tracer.snapshot().unwrap();
    let trace = Trace::single(&snapshot);
    let mut trees = Vec::new();
    let mut loose = 0;
    let summary = assemble::<()>(&trace, &mut |a| {
        match a {
            Assembled::Tree(t) => trees.push(t),
            Assembled::Event(_) => loose += 1,
            _ => {}
        }
        Ok(())
    })
    .unwrap();
    (trees, loose, summary)
}

#[test]
fn a_request_comes_back_as_one_tree_with_its_parents_events_and_recorded_fields() {
    let dir = ringtrace_testkit::TempDir::new("spans-request");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    with_layer(&tracer, |_| {
        tracing::info!(n = 1, "before");
        let request = tracing::info_span!("request", user = 7u64, status = tracing::field::Empty);
        let _r = request.enter();
        {
            let db = tracing::debug_span!("db", table = "orders");
            let _d = db.enter();
            tracing::info!(rows = 3u64, "queried");
        }
        request.record("status", 200u64);
        tracing::warn!("slow");
    });
    let (trees, loose, summary) = assembled(&tracer);
    assert_eq!(loose, 1, "the event before the request is outside any span");
    assert_eq!(trees.len(), 1, "{trees:#?}");
    let tree = &trees[0];
    assert_eq!(tree.spans.len(), 2);
    let (request, db) = (&tree.spans[0], &tree.spans[1]);
    assert_eq!(request.name, "request");
    assert_eq!(request.parent, None);
    assert_eq!(db.parent, Some(request.uid));
    assert!(request.closed && db.closed);
    assert!(request.start_ns <= db.start_ns && db.end_ns <= request.end_ns);
    assert!(request.busy_ns <= request.duration_ns());
    let names = |s: &ringtrace::export::spans::SpanData| {
        s.events.iter().map(|e| e.name.clone()).collect::<Vec<_>>()
    };
    assert_eq!(names(db), ["queried"]);
    assert_eq!(names(request), ["slow"]);
    assert_eq!(db.events[0].span, Some(db.uid));
    assert_eq!(
        request.field("status"),
        Some(&ringtrace::tracepoint::FieldValue::Unsigned(200))
    );
    assert_eq!(
        request.field("user"),
        Some(&ringtrace::tracepoint::FieldValue::Unsigned(7))
    );
    assert_eq!(summary.trees, 1);
    assert_eq!(summary.spans, 2);
    assert_eq!(summary.unclosed, 0);
    assert_eq!(summary.events, 3);
    assert_eq!(summary.loose_events, 1);
}

#[test]
fn a_task_polled_on_several_threads_keeps_one_uid_and_its_follows_from_link() {
    let dir = ringtrace_testkit::TempDir::new("spans-task");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    with_layer(&tracer, |dispatch| {
        let first = tracing::info_span!("first");
        drop(first.enter());
        let task = tracing::info_span!("task");
        task.follows_from(&first);
        for poll in 0..3u64 {
            let (task, dispatch) = (task.clone(), dispatch.clone());
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    task.in_scope(|| tracing::info!(poll, "poll"));
                })
            })
            .join()
            .unwrap();
        }
        drop(first);
    });
    let (trees, _, _) = assembled(&tracer);
    let first = trees.iter().find(|t| t.root().name == "first").unwrap();
    let task = trees.iter().find(|t| t.root().name == "task").unwrap();
    let span = task.root();
    assert_eq!(span.threads.len(), 3, "{span:#?}");
    assert_eq!(span.events.len(), 3);
    assert_eq!(span.follows.len(), 1);
    assert_eq!(span.follows[0].uid, first.root().uid);
    assert_eq!(span.follows[0].trace_id, first.trace_id());
    assert_ne!(task.trace_id(), first.trace_id());
}

#[test]
fn every_span_gets_its_own_uid_the_same_each_time_the_trace_is_read() {
    let dir = ringtrace_testkit::TempDir::new("spans-reuse");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    with_layer(&tracer, |_| {
        for i in 0..50u64 {
            let s = tracing::info_span!("again", i);
            drop(s.enter());
        }
    });
    let (trees, _, _) = assembled(&tracer);
    assert_eq!(trees.len(), 50);
    let uids: HashSet<u64> = trees.iter().map(|t| t.root().uid).collect();
    assert_eq!(uids.len(), 50);
    let (again, _, _) = assembled(&tracer);
    assert_eq!(
        trees
            .iter()
            .map(|t| (t.root().uid, t.trace_id()))
            .collect::<Vec<_>>(),
        again
            .iter()
            .map(|t| (t.root().uid, t.trace_id()))
            .collect::<Vec<_>>(),
        "the same trace read twice names its spans alike"
    );
}

#[test]
fn spans_open_at_the_end_are_handed_over_unclosed_at_the_last_time() {
    let dir = ringtrace_testkit::TempDir::new("spans-open");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    let mut kept = None;
    with_layer(&tracer, |_| {
        let open = tracing::info_span!("open");
        let inner = tracing::info_span!(parent: &open, "inner");
        drop(inner);
        tracing::info!("after");
        kept = Some(open);
    });
    let (trees, _, summary) = assembled(&tracer);
    assert_eq!(trees.len(), 1);
    let root = trees[0].root();
    assert!(!root.closed);
    assert!(trees[0].spans[1].closed);
    assert_eq!(summary.unclosed, 1);
    assert!(root.end_ns >= trees[0].spans[1].end_ns);
    drop(kept);
}

#[test]
fn keep_rules_keep_failing_slow_and_named_trees_and_count_the_rest() {
    let dir = ringtrace_testkit::TempDir::new("spans-keep");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    with_layer(&tracer, |_| {
        for i in 0..20u64 {
            let s = tracing::info_span!("ok", i);
            drop(s.enter());
        }
        let failing = tracing::info_span!("failing", error = "boom");
        drop(failing.enter());
        let slow = tracing::info_span!("slow");
        {
            let _e = slow.enter();
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        drop(slow);
        let named = tracing::info_span!("checkout");
        drop(named.enter());
        let erroring = tracing::info_span!("logs_error");
        erroring.in_scope(|| tracing::error!("failed"));
    });
    let (trees, _, _) = assembled(&tracer);
    let mut rules = KeepRules::parse(["error", "slower:80ms", "name:checkout"]).unwrap();
    let mut kept: Vec<String> = trees
        .iter()
        .filter(|t| rules.decide(t, &t.trace_id()).is_kept())
        .map(|t| t.root().name.clone())
        .collect();
    kept.sort();
    assert_eq!(kept, ["checkout", "failing", "logs_error", "slow"]);
    let stats = rules.stats();
    assert_eq!(stats.kept_trees, 4);
    assert_eq!(stats.dropped_trees, 20);
    assert_eq!(stats.by_rule, [2, 1, 1]);
    let mut all = KeepRules::parse(["fraction:1"]).unwrap();
    let mut none = KeepRules::parse(["fraction:0"]).unwrap();
    for t in &trees {
        assert!(all.decide(t, &t.trace_id()).is_kept());
        assert!(!none.decide(t, &t.trace_id()).is_kept());
    }
    let mut half = KeepRules::parse(["fraction:0.5"]).unwrap();
    let mut again = KeepRules::parse(["fraction:0.5"]).unwrap();
    for t in &trees {
        assert_eq!(
            half.decide(t, &t.trace_id()),
            again.decide(t, &t.trace_id()),
            "a fraction decides by trace id, the same each time"
        );
    }
}

#[test]
fn a_root_with_a_traceparent_joins_that_trace() {
    let dir = ringtrace_testkit::TempDir::new("spans-traceparent");
    let tracer = tracer(&dir, 1 << 20, Mode::Overwrite);
    with_layer(&tracer, |_| {
        let s = tracing::info_span!(
            "incoming",
            traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        drop(s.enter());
    });
    let (trees, _, _) = assembled(&tracer);
    let context = trees[0].trace_context().unwrap();
    assert_eq!(trees[0].trace_id(), context.trace_id);
    assert_eq!(trees[0].trace_id()[..2], [0x4b, 0xf9]);
}

/// What one test thread does.
#[derive(Debug, Clone)]
enum Step {
    Event(u64),
    Nested(u8),
    Task(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u64>().prop_map(Step::Event),
        (1..4u8).prop_map(Step::Nested),
        (1..3u8).prop_map(Step::Task),
    ]
}

fn run(steps: &[Step], dispatch: &tracing::Dispatch) {
    for s in steps {
        match s {
            Step::Event(v) => tracing::info!(v, "ev"),
            Step::Nested(depth) => {
                let spans: Vec<tracing::Span> = (0..*depth)
                    .map(|d| tracing::info_span!("nested", d))
                    .collect();
                let guards: Vec<_> = spans.iter().map(|s| s.enter()).collect();
                tracing::warn!(depth, "inside");
                drop(guards);
            }
            Step::Task(polls) => {
                let task = tracing::info_span!("task", polls);
                for _ in 0..*polls {
                    let (task, dispatch) = (task.clone(), dispatch.clone());
                    std::thread::spawn(move || {
                        tracing::dispatcher::with_default(&dispatch, || {
                            task.in_scope(|| tracing::debug!("poll"))
                        })
                    })
                    .join()
                    .unwrap();
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_span_the_ring_holds_comes_back_once_under_its_parent(
        steps in prop::collection::vec(prop::collection::vec(step(), 0..30), 1..3),
        small in any::<bool>(),
    ) {
        let dir = ringtrace_testkit::TempDir::new("spans-random");
        // A small ring overwrites: spans whose creation was lost are left
        // out and counted.
        let tracer = tracer(&dir, if small { 8192 } else { 1 << 20 }, Mode::Overwrite);
        with_layer(&tracer, |dispatch| {
            std::thread::scope(|s| {
                for part in &steps {
                    s.spawn(move || {
                        tracing::dispatcher::with_default(dispatch, || run(part, dispatch))
                    });
                }
            });
        });
        let (trees, loose, summary) = assembled(&tracer);
        let snapshot = tracer.snapshot().unwrap();
        let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
        let mut kinds: HashMap<String, u64> = HashMap::new();
        for e in dump.events() {
            let j = dump.json(e);
            *kinds.entry(j["event"].as_str().unwrap_or("").to_owned()).or_default() += 1;
        }
        let count = |k: &str| kinds.get(k).copied().unwrap_or(0);
        prop_assert_eq!(summary.spans, count("tracing:span_new"));
        prop_assert_eq!(summary.events, count("tracing:event"));
        prop_assert_eq!(summary.loose_events, loose as u64);
        let mut uids = HashSet::new();
        let mut inside = 0u64;
        for t in &trees {
            let here: HashSet<u64> = t.spans.iter().map(|s| s.uid).collect();
            prop_assert!(t.root().parent.is_none());
            for s in &t.spans {
                prop_assert!(uids.insert(s.uid), "a span in two trees");
                if let Some(p) = s.parent {
                    prop_assert!(here.contains(&p), "a parent outside the tree");
                }
                prop_assert!(s.start_ns <= s.end_ns);
                inside += s.events.len() as u64;
                for e in &s.events {
                    prop_assert_eq!(e.span, Some(s.uid));
                }
            }
        }
        prop_assert_eq!(inside + summary.loose_events, summary.events);
        if !small {
            prop_assert_eq!(summary.unclosed, 0);
            prop_assert_eq!(summary.orphan_records, 0);
        }
    }
}

/// A span entered on one thread and exited on another (through the
/// dispatcher, as an executor may) is drawn in Chrome's JSON as one slice
/// on the entering thread, ended at the exit, not left open to the end.
#[test]
fn a_span_exited_on_another_thread_ends_there_in_the_chrome_export() {
    let dir = ringtrace_testkit::TempDir::new("spans-cross-exit");
    let tracer = tracer(&dir, 64 << 10, Mode::Overwrite);
    with_layer(&tracer, |dispatch| {
        let span = tracing::info_span!("handoff");
        let id = span.id().unwrap();
        dispatch.enter(&id);
        let other = dispatch.clone();
        let exited = id.clone();
        std::thread::spawn(move || other.exit(&exited))
            .join()
            .unwrap();
        drop(span);
        std::thread::sleep(std::time::Duration::from_millis(20));
        tracing::info!("later");
    });
    let out = dir.0.join("t.json");
    let summary = tracer
        .export(ringtrace::ExportFormat::Chrome, &out)
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let of = |ph: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| e["name"] == "handoff" && e["ph"] == ph)
            .collect()
    };
    let (begins, ends) = (of("B"), of("E"));
    assert_eq!((begins.len(), ends.len()), (1, 1), "{events:?}");
    assert_eq!(begins[0]["tid"], ends[0]["tid"]);
    assert!(ends[0]["args"].get("unclosed").is_none(), "{:?}", ends[0]);
    assert!(
        ends[0]["args"].get("exited_on_tid").is_some(),
        "{:?}",
        ends[0]
    );
    let later = events.iter().find(|e| e["name"] == "later").unwrap();
    assert!(
        ends[0]["ts"].as_f64() < later["ts"].as_f64(),
        "{:?}",
        ends[0]
    );
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
}

/// A span entered again on a thread already inside it counts that
/// thread's time once: its busy time is never more than its life.
#[test]
fn a_span_entered_twice_on_one_thread_counts_its_time_once() {
    let dir = ringtrace_testkit::TempDir::new("spans-reentered");
    let tracer = tracer(&dir, 64 << 10, Mode::Overwrite);
    with_layer(&tracer, |_| {
        let span = tracing::info_span!("twice");
        let outer = span.enter();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let inner = span.enter();
        std::thread::sleep(std::time::Duration::from_millis(2));
        drop(inner);
        std::thread::sleep(std::time::Duration::from_millis(2));
        drop(outer);
    });
    let (trees, _, _) = assembled(&tracer);
    let span = &trees[0].spans[0];
    assert_eq!(span.name, "twice");
    let life = span.end_ns - span.start_ns;
    assert!(
        span.busy_ns <= life,
        "busy {} of a {life} ns life",
        span.busy_ns
    );
    assert!(span.busy_ns >= 6_000_000, "busy {}", span.busy_ns);
}
