//! The layer's records as readers show them: events with their level,
//! target and fields, spans, cut strings, each callsite described once,
//! and filtering by `EnvFilter`, stacked or per layer.

mod common;

use common::{dump_json, dump_lines, ring};
use ringtrace_tracing::{RingLayer, CUT_MARK};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer};

#[test]
fn events_show_in_the_dump_with_level_target_and_fields() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(target: "app::db", page = 7u64, delta = -3i64, hit = true, ratio = 0.5, name = "idx", "page read");
        tracing::error!(code = ?Some(4), "failed");
    });
    let lines = dump_lines(&ring);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].ends_with(
            ": tracing:event: INFO app::db: page read page=7 delta=-3 hit=true ratio=0.5 name=idx"
        ),
        "{}",
        lines[0]
    );
    let tid = ringtrace_tracepoint::thread_id().to_string();
    assert!(lines[0].contains(&format!("-{tid}")), "{}", lines[0]);
    assert!(
        lines[1].ends_with(": tracing:event: ERROR layer: failed code=Some(4)"),
        "{}",
        lines[1]
    );
    let json = dump_json(&ring);
    assert_eq!(json[0]["kind"], "tracing");
    assert_eq!(json[0]["level"], "INFO");
    assert_eq!(json[0]["target"], "app::db");
    assert_eq!(json[0]["fields"]["page"], 7);
    assert_eq!(json[0]["fields"]["message"], "page read");
    let stats = layer.stats();
    assert_eq!(
        (stats.recorded, stats.dropped, stats.strings_cut),
        (2, 0, 0)
    );
}

#[test]
fn a_long_string_is_cut_at_the_limit_and_the_dump_shows_the_mark() {
    let ring = ring();
    let layer = RingLayer::builder(ring.clone())
        .string_limit(100)
        .build()
        .unwrap();
    let long = "x".repeat(1000);
    let accented = "é".repeat(60); // 120 bytes, cut at a character boundary
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        tracing::info!(s = long.as_str(), d = ?long, a = accented.as_str(), "m");
    });
    let lines = dump_lines(&ring);
    let line = &lines[0];
    let cut = format!("{}{CUT_MARK}", "x".repeat(100));
    assert!(line.contains(&format!(" s={cut} ")), "{line}");
    // The Debug rendering is quoted: the quote and 99 x's fit.
    assert!(
        line.contains(&format!(" d=\"{}{CUT_MARK} ", "x".repeat(99))),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(" a={}{CUT_MARK}", "é".repeat(50))),
        "{line}"
    );
    assert_eq!(layer.stats().strings_cut, 3);
    // Within the limit: whole, unmarked.
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        tracing::info!(s = "short", "m");
    });
    assert!(!dump_lines(&ring)[1].contains(CUT_MARK));
}

#[test]
fn each_callsite_is_described_once() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        for i in 0..10u64 {
            tracing::info!(i, "loop");
            let _s = tracing::debug_span!("step", i).entered();
        }
    });
    // The event's callsite and the span's.
    assert_eq!(ring.metadata_records().len(), 2);
    let stats = layer.stats();
    assert_eq!(stats.callsites_registered, 2);
    // 10 events, and 10 spans: new, enter, exit, close.
    assert_eq!(stats.recorded, 50);
}

#[test]
fn spans_show_new_enter_exit_and_close_with_fields_and_parent() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let outer = tracing::info_span!("request", id = 9u64);
        let _o = outer.enter();
        let inner = tracing::debug_span!("query", table = tracing::field::Empty);
        inner.record("table", "users");
        inner.in_scope(|| {});
    });
    let lines: Vec<String> = dump_lines(&ring)
        .into_iter()
        .map(|l| l.split_once(": tracing:").unwrap().1.to_owned())
        .collect();
    let outer_id = lines[0]
        .split_once("request#")
        .and_then(|(_, r)| r.split(' ').next())
        .unwrap()
        .to_owned();
    assert_eq!(
        lines[0],
        format!("span_new: INFO layer: new request#{outer_id} id=9")
    );
    assert_eq!(
        lines[1],
        format!("span_enter: INFO layer: enter request#{outer_id}")
    );
    assert!(
        lines[2].starts_with("span_new: DEBUG layer: new query#")
            && lines[2].ends_with(&format!(" parent=#{outer_id}")),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("span_record: DEBUG layer: record query#")
            && lines[3].ends_with(" table=users"),
        "{}",
        lines[3]
    );
    let kinds: Vec<&str> = lines.iter().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "span_new",
            "span_enter",
            "span_new",
            "span_record",
            "span_enter",
            "span_exit",
            "span_close",
            "span_exit",
            "span_close"
        ]
    );
}

#[test]
fn a_per_layer_env_filter_lets_only_its_levels_through() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    let subscriber =
        tracing_subscriber::registry().with(layer.clone().with_filter(EnvFilter::new("warn")));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("not kept");
        tracing::warn!("kept");
        let _s = tracing::info_span!("filtered out").entered();
        tracing::error!("kept too");
    });
    let lines = dump_lines(&ring);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].ends_with("WARN layer: kept"), "{}", lines[0]);
    assert!(lines[1].ends_with("ERROR layer: kept too"), "{}", lines[1]);
    assert_eq!(layer.stats().callsites_registered, 2);
}

#[test]
fn a_stacked_env_filter_filters_by_target_and_level() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    let subscriber = tracing_subscriber::registry()
        .with(EnvFilter::new("info,noisy=error"))
        .with(layer);
    tracing::subscriber::with_default(subscriber, || {
        tracing::debug!("not kept");
        tracing::info!(target: "noisy", "not kept");
        tracing::error!(target: "noisy", "kept");
        tracing::info!(n = 1, "kept");
    });
    let lines = dump_lines(&ring);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].ends_with("ERROR noisy: kept"), "{}", lines[0]);
    assert!(lines[1].ends_with("INFO layer: kept n=1"), "{}", lines[1]);
}

#[test]
fn records_the_ring_refuses_are_counted_dropped() {
    // A full ring in discard mode, with no reader: it refuses the record.
    let clock = "mono"
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let config = ringtrace_ring::RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .mode(ringtrace_ring::Mode::Discard);
    let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(config, clock).unwrap());
    while ring.write(&[0; 4]).is_ok() {}
    let hit = ring.stats().hit;
    let layer = RingLayer::builder(ring.clone()).build().unwrap();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        tracing::info!(n = 1, "refused");
    });
    let stats = layer.stats();
    assert_eq!((stats.recorded, stats.dropped), (0, 1), "{stats:?}");
    assert_eq!(ring.stats().hit, hit);
}

#[test]
fn a_full_annex_refuses_callsites_and_their_records_are_not_written() {
    let ring = ring_with_annex(0);
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        tracing::info!("one");
        tracing::info!("one more");
    });
    let stats = layer.stats();
    assert_eq!(stats.callsites_refused, 2);
    assert_eq!(stats.unregistered, 2);
    assert_eq!(stats.recorded, 0);
    assert_eq!(ring.stats().hit, 0);
}

/// Renders longer each time it is rendered.
struct Growing(std::cell::Cell<usize>);

impl std::fmt::Debug for Growing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.get();
        self.0.set(n + 150);
        f.write_str(&"g".repeat(n))
    }
}

#[test]
fn a_value_rendering_differently_twice_keeps_its_measured_slot() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        // 200 bytes, past the first pass's scratch: rendered again, 350
        // bytes then, and cut to the 200 measured.
        let v = Growing(std::cell::Cell::new(200));
        tracing::info!(v = ?v, after = 1u64);
    });
    let lines = dump_lines(&ring);
    assert!(
        lines[0].ends_with(&format!(" v={} after=1", "g".repeat(200))),
        "{}",
        lines[0]
    );
}

#[test]
fn threads_meeting_callsites_at_once_describe_each_once() {
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (dispatch, start) = (dispatch.clone(), &start);
            s.spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    start.wait();
                    for i in 0..100u64 {
                        tracing::info!(t, i, "a");
                        tracing::debug!(t, i, "b");
                        let _s = tracing::trace_span!("c", t).entered();
                    }
                })
            });
        }
    });
    assert_eq!(ring.metadata_records().len(), 3);
    let stats = layer.stats();
    assert_eq!(stats.callsites_registered, 3);
    assert_eq!(stats.recorded, 2 * 100 * 6);
    let lines = dump_lines(&ring);
    assert_eq!(lines.len(), 2 * 100 * 6);
    assert!(
        lines.iter().all(|l| l.contains(": tracing:")),
        "a record did not decode"
    );
}

#[test]
fn a_full_callsite_table_refuses_further_callsites_and_keeps_the_first() {
    let ring = common::ring();
    let layer = RingLayer::builder(ring.clone())
        .callsite_capacity(1)
        .build()
        .unwrap();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        for round in 0..3u64 {
            tracing::info!(round, "first");
            tracing::info!(round, "second");
            tracing::info!(round, "third");
        }
    });
    let stats = layer.stats();
    // The first callsite fills the table and is recorded every round; the
    // two others are refused every round (without the lock, once full):
    // one refusal counted when the table filled, every record of theirs
    // counted unregistered.
    assert_eq!(stats.callsites_registered, 1, "{stats:?}");
    assert_eq!(stats.recorded, 3, "{stats:?}");
    assert_eq!(stats.callsites_refused, 1, "{stats:?}");
    assert_eq!(stats.unregistered, 6, "{stats:?}");
    assert_eq!(ring.metadata_records().len(), 1);
}

/// Twelve distinct callsites, each fired once.
fn twelve_callsites() {
    tracing::info!("c1");
    tracing::info!("c2");
    tracing::info!("c3");
    tracing::info!("c4");
    tracing::info!("c5");
    tracing::info!("c6");
    tracing::info!("c7");
    tracing::info!("c8");
    tracing::info!("c9");
    tracing::info!("c10");
    tracing::info!("c11");
    tracing::info!("c12");
}

#[test]
fn a_callsite_table_holds_exactly_the_callsites_asked_for() {
    for capacity in [2usize, 3, 5, 7, 11, 12] {
        let ring = common::ring();
        let layer = RingLayer::builder(ring.clone())
            .callsite_capacity(capacity)
            .build()
            .unwrap();
        let subscriber = tracing_subscriber::registry().with(layer.clone());
        tracing::subscriber::with_default(subscriber, twelve_callsites);
        let stats = layer.stats();
        assert_eq!(
            stats.callsites_registered, capacity as u64,
            "{capacity}: {stats:?}"
        );
        assert_eq!(stats.recorded, capacity as u64, "{capacity}: {stats:?}");
        assert_eq!(
            stats.unregistered,
            12 - capacity as u64,
            "{capacity}: {stats:?}"
        );
    }
}

#[test]
fn a_record_larger_than_a_page_is_cut_to_fit_not_dropped() {
    // 4 KiB pages, a string limit of 16 KiB: strings of 10,000 bytes, one
    // or two to a record, are cut until the record fits a page.
    let ring = common::ring();
    let layer = RingLayer::builder(ring.clone())
        .string_limit(16 << 10)
        .build()
        .unwrap();
    let long = "é".repeat(5_000);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        tracing::info!(s = long.as_str(), "one");
        tracing::info!(s = long.as_str(), t = long.as_str(), "two");
        tracing::info!(s = "short", "three");
    });
    let stats = layer.stats();
    assert_eq!((stats.recorded, stats.dropped), (3, 0), "{stats:?}");
    assert!(stats.strings_cut >= 3, "{stats:?}");
    assert_eq!(ring.stats().missed, 0);
    let json = common::dump_json(&ring);
    assert_eq!(json.len(), 3);
    for record in &json[..2] {
        let s = record["fields"]["s"].as_str().unwrap();
        assert!(s.len() > 1_000 && s.len() < 4_096, "{} {record}", s.len());
        assert!(s.starts_with("ééé"), "cut at a character boundary");
    }
    assert_eq!(json[2]["fields"]["s"], "short");
}

#[test]
fn records_either_side_of_the_stack_encoders_size_read_back_whole() {
    // Small records are encoded in one pass on the stack (256 bytes),
    // larger ones sized first: the same bytes either way, across the
    // boundary, for strings, renderings and cut values.
    let ring = ring();
    let layer = RingLayer::builder(ring.clone())
        .string_limit(300)
        .build()
        .unwrap();
    let lens: Vec<usize> = (215..=245).chain([299, 300, 301, 1000]).collect();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        for &len in &lens {
            let s = "s".repeat(len);
            tracing::info!(n = len as u64, s = s.as_str());
            tracing::info!(n = len as u64, d = ?s);
            tracing::info!(n = len as u64, "{s}");
        }
    });
    let lines = dump_lines(&ring);
    assert_eq!(lines.len(), 3 * lens.len());
    for (i, &len) in lens.iter().enumerate() {
        let kept = len.min(300);
        let mark = if len > 300 { CUT_MARK } else { "" };
        let s = format!("{}{mark}", "s".repeat(kept));
        assert!(
            lines[3 * i].ends_with(&format!("n={len} s={s}")),
            "{len}: {}",
            lines[3 * i]
        );
        // The quotes count: 298 s's and the opening quote fit in 300.
        let d = if len + 2 > 300 {
            format!("\"{}{CUT_MARK}", "s".repeat(299))
        } else {
            format!("\"{}\"", "s".repeat(len))
        };
        assert!(
            lines[3 * i + 1].ends_with(&format!("n={len} d={d}")),
            "{len}: {}",
            lines[3 * i + 1]
        );
        assert!(
            lines[3 * i + 2].contains(&format!(" {s} n={len}")),
            "{len}: {}",
            lines[3 * i + 2]
        );
    }
    let stats = layer.stats();
    assert_eq!((stats.recorded, stats.dropped), (3 * lens.len() as u64, 0));
    // Cut: the three 301s and 1000s, and the renderings of 299 and up.
    assert_eq!(stats.strings_cut, 2 * 2 + 4);
}

#[test]
fn a_rendering_past_the_stack_that_changes_is_read_back_at_its_measured_length() {
    // 300 bytes: past the stack, so rendered in one pass (cut short),
    // then measured (450) and written (600, cut to the 450... and to the
    // 400 limit): what is read is what was measured.
    let ring = ring();
    let layer = RingLayer::builder(ring.clone())
        .string_limit(400)
        .build()
        .unwrap();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let v = Growing(std::cell::Cell::new(300));
        tracing::info!(v = ?v, after = 1u64);
    });
    let lines = dump_lines(&ring);
    assert!(
        lines[0].ends_with(&format!(" v={}{CUT_MARK} after=1", "g".repeat(400))),
        "{}",
        lines[0]
    );
}

#[test]
fn every_edge_of_many_spans_shows_its_own_spans_callsite() {
    // Spans of two callsites made and closed by turns on two threads: the
    // layer's own table of span callsites (shared by the threads, entries
    // overwritten as spans come and go) never names another span's.
    let ring = ring();
    let layer = RingLayer::new(ring.clone());
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    for i in 0..200u64 {
                        let span = if (i + t) % 2 == 0 {
                            tracing::info_span!("even", i)
                        } else {
                            tracing::info_span!("odd", i)
                        };
                        span.in_scope(|| {});
                    }
                })
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let json = dump_json(&ring);
    let mut open: std::collections::HashMap<u64, String> = Default::default();
    let mut ids = std::collections::HashSet::new();
    for r in &json {
        let span = r["span"].as_u64().unwrap();
        let callsite = r["callsite"].as_str().unwrap().to_owned();
        match r["event"].as_str().unwrap() {
            "tracing:span_new" => {
                assert!(open.insert(span, callsite).is_none(), "#{span} made twice");
                ids.insert(span);
            }
            "tracing:span_close" => {
                assert_eq!(open.remove(&span), Some(callsite), "#{span}")
            }
            _ => assert_eq!(open.get(&span), Some(&callsite), "#{span}"),
        }
    }
    assert_eq!(json.len(), 4 * 400);
    assert_eq!(ids.len(), 400);
}

/// A one-CPU `mono` ring whose metadata annex holds `capacity` bytes.
fn ring_with_annex(
    capacity: usize,
) -> std::sync::Arc<ringtrace_ring::RingBuffer<ringtrace_clock::AnyClock>> {
    let clock = "mono"
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let config = ringtrace_ring::RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(64 * 1024)
        .metadata_capacity(capacity);
    std::sync::Arc::new(ringtrace_ring::RingBuffer::new(config, clock).unwrap())
}

/// A ring whose annex holds exactly the description of a span `a`.
fn ring_with_room_for_one_span(
) -> std::sync::Arc<ringtrace_ring::RingBuffer<ringtrace_clock::AnyClock>> {
    let probe = ring_with_annex(4096);
    let layer = RingLayer::new(probe.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        drop(tracing::info_span!("a"))
    });
    let record = probe.metadata_records()[0].len();
    ring_with_annex(record + 4)
}

#[test]
fn a_refused_spans_records_never_take_an_earlier_spans_id_and_callsite() {
    // The registry hands a span id out again once its slot has been reused
    // enough; the layer's table of span callsites must not keep the first
    // span's callsite for a later span whose callsite was refused.
    let ring = ring_with_room_for_one_span();
    let layer = RingLayer::new(ring.clone());
    const REFUSED_SPANS: u64 = 20_000;
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), || {
        drop(tracing::info_span!("a"));
        for _ in 0..REFUSED_SPANS {
            drop(tracing::info_span!(
                "a_span_whose_description_the_full_annex_refuses"
            ));
        }
    });
    let stats = layer.stats();
    assert_eq!(stats.callsites_registered, 1, "{stats:?}");
    // `a`'s new and close, nothing else.
    assert_eq!(stats.recorded, 2, "{stats:?}");
    assert_eq!(ring.stats().hit, 2);
    // Each refused span's new and close.
    assert_eq!(stats.unregistered, 2 * REFUSED_SPANS, "{stats:?}");
}

#[test]
fn two_registries_on_one_ring_write_their_spans_under_distinct_ids() {
    // Each registry numbers its spans from 1: the second's are written
    // under other ids, so a reader does not join two spans into one.
    let ring = ring();
    let first = tracing_subscriber::registry().with(RingLayer::new(ring.clone()));
    let second = tracing_subscriber::registry().with(RingLayer::new(ring.clone()));
    let first = tracing::Dispatch::new(first);
    let second = tracing::Dispatch::new(second);
    let (a, b) = (
        tracing::dispatcher::with_default(&first, || tracing::info_span!("in_first")),
        tracing::dispatcher::with_default(&second, || tracing::info_span!("in_second")),
    );
    // Both live at once, both the first span of their registry.
    let child = tracing::dispatcher::with_default(&second, || {
        let _in = b.enter();
        tracing::info_span!("child_of_second")
    });
    // Dropped under their own dispatcher: a child's close releases its
    // parent through the current one.
    tracing::dispatcher::with_default(&first, || {
        drop(a.enter());
        drop(a);
    });
    tracing::dispatcher::with_default(&second, || drop((child, b)));
    let json = common::dump_json(&ring);
    let id_of = |name: &str| -> u64 {
        let new = json
            .iter()
            .find(|v| v["event"] == "tracing:span_new" && v["callsite"] == name)
            .unwrap_or_else(|| panic!("no new span {name}: {json:?}"));
        new["span"].as_u64().unwrap()
    };
    let (a, b, child) = (
        id_of("in_first"),
        id_of("in_second"),
        id_of("child_of_second"),
    );
    assert_ne!(a, b);
    assert_ne!(child, a);
    let parent = json
        .iter()
        .find(|v| v["event"] == "tracing:span_new" && v["span"] == child)
        .unwrap()["parent"]
        .as_u64();
    assert_eq!(parent, Some(b), "the parent is written under its ring id");
    // Each span's records all carry its own id: one new, one close each.
    for id in [a, b, child] {
        let closes = json
            .iter()
            .filter(|v| v["event"] == "tracing:span_close" && v["span"] == id)
            .count();
        assert_eq!(closes, 1, "span {id}: {json:?}");
    }
}
