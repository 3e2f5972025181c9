//! `RingSubscriber`: the layer's records without the registry, its
//! filter read as `EnvFilter` reads the same directives, span ids and
//! closes across threads and clones.

mod common;

use common::{dump_json, ring};
use ringtrace_tracing::{RingLayer, RingSubscriber, SubscriberConfigError};
use serde_json::Value;
use std::collections::HashMap;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Spans with fields, nested, recorded into, cloned, entered twice,
/// followed from; events inside and outside them.
fn workload() {
    tracing::info!(a = 1u64, b = -2i64, "outside");
    let request = tracing::info_span!("request", id = 9u64, path = "/a");
    {
        let _r = request.enter();
        let db = tracing::debug_span!("db", table = tracing::field::Empty);
        db.record("table", "users");
        db.in_scope(|| tracing::warn!(rows = 3u64, ok = true, "read"));
        let copy = db.clone();
        drop(db);
        copy.in_scope(|| tracing::error!(f = 1.5f64, d = ?Some(4), "again"));
        let root = tracing::info_span!(parent: None, "detached");
        root.follows_from(&request);
        let child = tracing::trace_span!(parent: &root, "child");
        drop(child);
        drop(root);
        drop(copy);
    }
    drop(request);
}

/// `json` with span ids replaced by their order of first sight and
/// times left out: what two runs of one workload share.
fn normalized(json: Vec<Value>) -> Vec<Value> {
    let mut ids: HashMap<u64, usize> = HashMap::new();
    json.into_iter()
        .map(|mut r| {
            let obj = r.as_object_mut().unwrap();
            obj.retain(|k, _| !["ts", "ns", "wall_ns", "cpu"].contains(&k.as_str()));
            for key in ["span", "parent", "follows"] {
                if let Some(id) = obj.get(key).and_then(Value::as_u64) {
                    let n = ids.len();
                    let n = *ids.entry(id).or_insert(n);
                    obj.insert(key.to_owned(), Value::from(n));
                }
            }
            r
        })
        .collect()
}

#[test]
fn records_are_the_layers_record_for_record() {
    let via_layer = ring();
    let layer = RingLayer::new(via_layer.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), workload);
    let via_subscriber = ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(via_subscriber.clone()));
    tracing::dispatcher::with_default(&dispatch, workload);
    let stats = dispatch.downcast_ref::<RingSubscriber>().unwrap().stats();
    assert_eq!(stats.recorded, 19, "every record counted, once: {stats:?}");
    let (a, b) = (dump_json(&via_layer), dump_json(&via_subscriber));
    // 2 events outside or inside, 5 spans: their news, enters, exits,
    // closes, a record and a follows_from.
    assert_eq!(a.len(), 19, "{a:#?}");
    assert_eq!(normalized(a), normalized(b));
}

/// The span records of `json` by span id: each record's kind.
fn lives(json: &[Value]) -> HashMap<u64, Vec<String>> {
    let mut spans: HashMap<u64, Vec<String>> = HashMap::new();
    for r in json {
        if let (Some(span), Some(name)) = (r["span"].as_u64(), r["event"].as_str()) {
            let kind = name.trim_start_matches("tracing:").to_owned();
            spans.entry(span).or_default().push(kind);
        }
    }
    spans
}

#[test]
fn parents_are_the_current_span_an_explicit_one_or_none() {
    let ring = ring();
    tracing::subscriber::with_default(RingSubscriber::new(ring.clone()), || {
        let outer = tracing::info_span!("outer");
        let _o = outer.enter();
        assert_eq!(tracing::Span::current().metadata().unwrap().name(), "outer");
        let inner = tracing::info_span!("inner");
        inner.in_scope(|| {
            assert_eq!(tracing::Span::current().metadata().unwrap().name(), "inner");
        });
        assert_eq!(tracing::Span::current().id(), outer.id());
        let _root = tracing::info_span!(parent: None, "root");
        let _explicit = tracing::info_span!(parent: &inner, "explicit");
    });
    let json = dump_json(&ring);
    let news: HashMap<String, (u64, u64)> = json
        .iter()
        .filter(|r| r["event"] == "tracing:span_new")
        .map(|r| {
            let parent = r["parent"].as_u64().unwrap_or(0);
            (
                r["callsite"].as_str().unwrap().to_owned(),
                (r["span"].as_u64().unwrap(), parent),
            )
        })
        .collect();
    assert_eq!(news["outer"].1, 0);
    assert_eq!(news["inner"].1, news["outer"].0);
    assert_eq!(news["root"].1, 0);
    assert_eq!(news["explicit"].1, news["inner"].0);
}

#[test]
fn a_span_closes_once_at_the_drop_of_its_last_handle_on_any_thread() {
    let ring = ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        for _ in 0..50 {
            let span = tracing::info_span!("shared");
            let clones: Vec<tracing::Span> = (0..3).map(|_| span.clone()).collect();
            drop(span);
            std::thread::scope(|s| {
                for clone in clones {
                    let dispatch = dispatch.clone();
                    s.spawn(move || {
                        tracing::dispatcher::with_default(&dispatch, || {
                            clone.in_scope(|| tracing::info!("inside"));
                            // Span::current() clones the handle too.
                            let current = clone.in_scope(tracing::Span::current);
                            drop(clone);
                            drop(current);
                        })
                    });
                }
            });
        }
    });
    let spans = lives(&dump_json(&ring));
    assert_eq!(spans.len(), 50);
    for (id, kinds) in spans {
        assert_eq!(
            kinds.iter().filter(|k| *k == "span_close").count(),
            1,
            "#{id}: {kinds:?}"
        );
        assert_eq!(kinds.last().unwrap(), "span_close", "#{id}: {kinds:?}");
        assert_eq!(
            kinds.iter().filter(|k| *k == "span_enter").count(),
            6,
            "#{id}"
        );
    }
}

#[test]
fn span_ids_from_many_threads_never_repeat() {
    // Room for every record, whichever CPU the threads run on.
    let ring = common::ring_of(2, 1 << 20);
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let dispatch = dispatch.clone();
            s.spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    for _ in 0..300 {
                        drop(tracing::trace_span!("many"));
                    }
                })
            });
        }
    });
    let spans = lives(&dump_json(&ring));
    assert_eq!(spans.len(), 1200);
    assert!(spans.values().all(|k| k == &["span_new", "span_close"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_tasks_keep_one_span_across_worker_threads() {
    let ring = ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    let _guard = tracing::dispatcher::set_default(&dispatch);
    let tasks: Vec<_> = (0..8u64)
        .map(|i| {
            let span = tracing::info_span!("task", i);
            tokio::spawn(
                async move {
                    for _ in 0..5 {
                        tokio::task::yield_now().await;
                        tracing::info!("step");
                    }
                }
                .instrument(span)
                .with_current_subscriber_of(&dispatch),
            )
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    drop(_guard);
    let spans = lives(&dump_json(&ring));
    assert_eq!(spans.len(), 8);
    for (id, kinds) in spans {
        assert_eq!(kinds.first().unwrap(), "span_new", "#{id}");
        assert_eq!(kinds.last().unwrap(), "span_close", "#{id}");
        let enters = kinds.iter().filter(|k| *k == "span_enter").count();
        let exits = kinds.iter().filter(|k| *k == "span_exit").count();
        assert!(enters >= 6 && enters == exits, "#{id}: {kinds:?}");
    }
}

/// Runs a future under `dispatch` on whichever worker polls it.
trait WithDispatch: Sized {
    fn with_current_subscriber_of(
        self,
        dispatch: &tracing::Dispatch,
    ) -> tracing::instrument::WithDispatch<Self>;
}

impl<F: std::future::Future> WithDispatch for F {
    fn with_current_subscriber_of(
        self,
        dispatch: &tracing::Dispatch,
    ) -> tracing::instrument::WithDispatch<Self> {
        tracing::instrument::WithSubscriber::with_subscriber(self, dispatch.clone())
    }
}

#[test]
fn a_callsite_past_the_capacity_is_counted_and_its_spans_still_nest() {
    let ring = ring();
    let subscriber = RingSubscriber::builder(ring.clone())
        .callsite_capacity(1)
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        let first = tracing::info_span!("first");
        first.in_scope(|| {
            let second = tracing::info_span!("second");
            second.in_scope(|| tracing::info!("unrecorded: its callsite was never described"));
        });
    });
    let stats = dispatch.downcast_ref::<RingSubscriber>().unwrap().stats();
    assert_eq!(stats.callsites_registered, 1);
    // The second span's new, enter, exit, close and the event.
    assert_eq!(stats.unregistered, 5);
    assert_eq!(stats.recorded, 4);
    assert_eq!(ring.stats().hit, 4);
}

#[test]
fn a_bad_filter_in_the_environment_names_the_variable_and_the_directive() {
    // SAFETY of the environment: this test binary's only reader of it.
    std::env::set_var("RINGTRACE_TEST_FILTER", "info,db=chatty");
    let err = RingSubscriber::builder(ring())
        .filter_from_env("RINGTRACE_TEST_FILTER")
        .build()
        .unwrap_err();
    assert!(matches!(err, SubscriberConfigError::FilterEnv { .. }));
    let text = err.to_string();
    assert!(
        text.contains("RINGTRACE_TEST_FILTER") && text.contains("`db=chatty`"),
        "{text}"
    );
    // No directive (empty, or commas alone, which EnvFilter takes): as if
    // unset.
    for blank in ["", ",,,", " , "] {
        std::env::set_var("RINGTRACE_TEST_FILTER", blank);
        assert!(
            RingSubscriber::builder(ring())
                .filter("warn")
                .filter_from_env("RINGTRACE_TEST_FILTER")
                .build()
                .is_ok(),
            "{blank:?}"
        );
    }
}

mod same_as_env_filter {
    use super::*;
    use proptest::prelude::*;
    use tracing_core::callsite::{Callsite, Identifier};
    use tracing_core::field::FieldSet;
    use tracing_core::metadata::Kind;
    use tracing_core::{Interest, Level, Metadata, Subscriber};

    struct Site;
    impl Callsite for Site {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unimplemented!("never asked")
        }
    }
    static SITE: Site = Site;

    const TARGETS: [&str; 7] = ["a", "a::b", "a::b::c", "ab", "b", "x_y", "a::bc"];
    const LEVELS: [&str; 9] = [
        "off", "error", "WARN", "info", "debug", "trace", "0", "3", "5",
    ];

    fn directive() -> impl Strategy<Value = String> {
        prop_oneof![
            (0..LEVELS.len()).prop_map(|l| LEVELS[l].to_owned()),
            (0..5usize).prop_map(|t| TARGETS[t].to_owned()),
            (0..5usize).prop_map(|t| format!("{}=", TARGETS[t])),
            (0..5usize, 0..LEVELS.len()).prop_map(|(t, l)| format!("{}={}", TARGETS[t], LEVELS[l])),
        ]
    }

    proptest! {
        #[test]
        fn every_target_and_level_is_decided_as_env_filter_decides(
            directives in proptest::collection::vec(directive(), 1..5)
        ) {
            let spec = directives.join(",");
            let env = tracing_subscriber::registry()
                .with(tracing_subscriber::EnvFilter::try_new(&spec).unwrap());
            let ours = RingSubscriber::builder(ring()).filter(&spec).build().unwrap();
            for target in TARGETS {
                for level in [Level::ERROR, Level::WARN, Level::INFO, Level::DEBUG, Level::TRACE] {
                    let meta = Metadata::new(
                        "e", target, level, None, None, None,
                        FieldSet::new(&[], Identifier(&SITE)), Kind::EVENT,
                    );
                    prop_assert_eq!(
                        Subscriber::enabled(&ours, &meta),
                        Subscriber::enabled(&env, &meta),
                        "spec {:?}, target {}, level {}", spec, target, level
                    );
                }
            }
        }
    }
}

#[test]
fn a_filter_variable_that_is_not_utf8_is_an_error_not_ignored() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"info,\xff=debug");
    std::env::set_var("RINGTRACE_TEST_FILTER_BYTES", bad);
    let err = RingSubscriber::builder(ring())
        .filter_from_env("RINGTRACE_TEST_FILTER_BYTES")
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("RINGTRACE_TEST_FILTER_BYTES") && text.contains("not UTF-8"),
        "{text}"
    );
}

/// A value whose `Debug` records an event of its own, as a value that
/// logs while it is formatted does.
struct Chatty;
impl std::fmt::Debug for Chatty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        tracing::warn!(inner = 1u64, "formatting");
        f.write_str("chatty")
    }
}

#[test]
fn records_made_while_a_record_is_written_are_written_too() {
    let ring = ring();
    let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        // The warning's callsite registered first outside any dispatcher
        // call (and the warning recorded). Registered first inside one
        // (the span's creation below), `tracing-core`, with this the only
        // dispatcher, asks the default dispatcher, which it cannot enter
        // there, and caches `never` for the callsite: the outcome would
        // hang on which tests ran before.
        let _ = format!("{Chatty:?}");
        let span = tracing::info_span!("outer", v = ?Chatty);
        span.in_scope(|| tracing::info!(v = ?Chatty, "event"));
        span.record("v", tracing::field::debug(Chatty));
    });
    let json = dump_json(&ring);
    let names: Vec<&str> = json.iter().map(|r| r["event"].as_str().unwrap()).collect();
    // `tracing` turns away an event made while its dispatcher is in a
    // call on the same thread (the span's creation, the event); a span's
    // `record` calls the subscriber straight from the handle, so the
    // warning its value makes is written, first: it commits while the
    // record around it is still being encoded.
    assert_eq!(
        names,
        [
            "tracing:event",
            "tracing:span_new",
            "tracing:span_enter",
            "tracing:event",
            "tracing:span_exit",
            "tracing:event",
            "tracing:span_record",
            "tracing:span_close",
        ],
        "{json:#?}"
    );
    assert_eq!(json[5]["fields"]["inner"], 1, "{json:#?}");
    let stats = dispatch.downcast_ref::<RingSubscriber>().unwrap().stats();
    assert_eq!(stats.recorded, 8);
}
