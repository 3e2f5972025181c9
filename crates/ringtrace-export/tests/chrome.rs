//! `ringtrace export --format chrome`: the JSON parses, every event has
//! the shape the Chrome trace-event format gives it, each thread's `B` and
//! `E` events nest, timestamps are ringtrace's own ns as exact µs, and
//! overwritten events show as `lost` instants with their count.

mod common;

use common::trace::*;
use common::TempDir;
use proptest::prelude::*;
use ringtrace_export::export::{export, ExportSummary, Format};
use ringtrace_export::text::hex;
use ringtrace_export::{Dump, DumpOptions};
use ringtrace_ring::file::{self, Recovery};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The export of `recovery`, parsed, with its text.
fn exported(recovery: &Recovery, dir: &TempDir) -> (ExportSummary, Value, String) {
    let out = dir.0.join("trace.json");
    let summary = export(recovery, Format::Chrome, &out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the export is not JSON ({e}):\n{text}"));
    (summary, json, text)
}

/// Checks what the Chrome format asks of every event, and returns them.
fn schema_checked(json: &Value, pid: u32, cpus: usize) -> &Vec<Value> {
    assert_eq!(json["displayTimeUnit"], "ns");
    assert!(json["otherData"].is_object(), "{}", json["otherData"]);
    let events = json["traceEvents"].as_array().expect("traceEvents");
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(["M", "B", "E", "i", "C"].contains(&ph), "{e}");
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("ts: {e}"));
        assert!(ts >= 0.0, "{e}");
        assert_eq!(e["pid"].as_u64(), Some(u64::from(pid)), "{e}");
        assert!(e["tid"].is_u64(), "{e}");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["args"].is_object(), "{e}");
        match ph {
            "i" => assert!(["t", "p"].contains(&e["s"].as_str().unwrap()), "{e}"),
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            "C" => assert!(
                e["args"]
                    .as_object()
                    .unwrap()
                    .values()
                    .all(Value::is_number),
                "{e}"
            ),
            _ => {}
        }
        if matches!(ph, "B" | "E" | "i") {
            let cpu = e["args"]["cpu"].as_u64().unwrap_or_else(|| panic!("{e}"));
            assert!((cpu as usize) < cpus, "{e}");
        }
    }
    events
}

/// Checks that each thread's spans nest (its stack never goes below
/// zero and ends empty, and an `E` names the span it ends) and that the
/// events are in time order.
fn balance_checked(events: &[Value]) {
    let mut stacks: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    let mut last = 0.0;
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let ts = e["ts"].as_f64().unwrap();
        assert!(ts >= last, "out of time order at {e}");
        last = ts;
        let stack = stacks.entry(e["tid"].as_u64().unwrap()).or_default();
        let name = e["name"].as_str().unwrap();
        match e["ph"].as_str().unwrap() {
            "B" => stack.push(name),
            "E" => assert_eq!(stack.pop(), Some(name), "unbalanced at {e}"),
            _ => {}
        }
    }
    for (tid, stack) in stacks {
        assert!(stack.is_empty(), "tid {tid} ends with {stack:?} open");
    }
}

/// Each event's `ts` as written, in order (one event a line).
fn ts_texts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(r#"{"name""#))
        .map(|l| {
            let at = l.find(r#","ts":"#).unwrap() + 6;
            l[at..].split(',').next().unwrap().to_owned()
        })
        .collect()
}

/// A decimal `ts` as ns, exactly: `1234.567` is 1234567.
fn decimal_ns(ts: &str) -> u64 {
    let (int, frac) = ts.split_once('.').unwrap_or((ts, ""));
    assert!(frac.len() <= 3, "more than ns in {ts}");
    let scale = 10u64.pow(3 - frac.len() as u32);
    int.parse::<u64>().unwrap() * 1000 + frac.parse::<u64>().unwrap_or(0) * scale
}

fn by_name<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

#[test]
fn a_known_sequence_exports_with_spans_counters_losses_and_exact_timestamps() {
    let dir = TempDir::new("known");
    let path = dir.0.join("t.ring");
    let script = Scripted::new(&path);
    let at = |cpu: usize, p: &[u8], gap: u64| script.at(cpu, p, gap);
    script.fillers();
    at(0, &preemptirq(PREEMPT_DISABLE, 100, 10), 2401);
    at(0, &preemptirq(IRQ_DISABLE, 100, 20), 2402);
    at(1, &page_read(200, 1000, "two"), 2403);
    at(0, &preemptirq(PREEMPT_ENABLE, 100, 30), 2404);
    at(1, &preemptirq(IRQ_ENABLE, 200, 40), 2405); // nothing open on 200
    at(0, &preemptirq(IRQ_ENABLE, 100, 50), 2406);
    at(1, &payload(QUEUE_COUNTER, 200, &[&put(5u32)]), 2407);
    at(1, &preemptirq(IRQ_DISABLE, 200, 60), 2408); // never enabled
    at(0, &[0xAB; 8], 2409);
    at(1, &[0x2A, 0], 2410); // the untagged layout
    at(1, &page_read(200, 1001, "last"), 2411);
    drop(script);

    let recovery = file::recover(&path).unwrap();
    let pid = recovery.header.pid;
    let (summary, json, text) = exported(&recovery, &dir);
    let events = schema_checked(&json, pid, 2);
    balance_checked(events);

    // Every ringtrace event is exported, and the overwritten fillers are
    // one `lost` instant on CPU 0 just before the first filler kept.
    let kept: Vec<u64> = by_name(events, "app:page_read")
        .iter()
        .filter(|e| e["args"]["note"] == "filler")
        .map(|e| e["args"]["n"].as_u64().unwrap())
        .collect();
    let first_kept = kept[0];
    assert!(first_kept > 0, "the fillers did not wrap the ring");
    assert_eq!(kept, (first_kept..300).collect::<Vec<_>>());
    let lost = by_name(events, "lost");
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0]["ph"], "i");
    assert_eq!(lost[0]["s"], "p");
    assert_eq!(lost[0]["args"]["cpu"], 0);
    assert_eq!(lost[0]["args"]["count"], first_kept);
    assert_eq!(recovery.cpus[0].file_stats.overrun, first_kept);
    let at_lost = events.iter().position(|e| e["name"] == "lost").unwrap();
    assert_eq!(events[at_lost + 1]["args"]["n"], first_kept);
    assert_eq!(events[at_lost + 1]["ts"], lost[0]["ts"]);
    assert_eq!(summary.lost, first_kept);
    assert_eq!(summary.events, recovery.merged().len() as u64);
    let other = &json["otherData"];
    assert_eq!(other["lost_marked"], first_kept);
    assert_eq!(other["overrun"], first_kept);
    assert_eq!(other["ticks_are_time"], true);
    assert_eq!(other["comm"], recovery.header.comm.as_str());

    // The spans of tid 100: preempt off and irqs off interleave, so irqs
    // off is split where preempt off ends, and taken up again.
    let thread = |tid: u64| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["tid"] == tid && (e["ph"] == "B" || e["ph"] == "E"))
            .map(|e| {
                format!(
                    "{} {}",
                    e["ph"].as_str().unwrap(),
                    e["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        thread(100),
        [
            "B preempt off",
            "B irqs off",
            "E irqs off",
            "E preempt off",
            "B irqs off",
            "E irqs off"
        ]
    );
    let begins: Vec<&Value> = events
        .iter()
        .filter(|e| e["tid"] == 100 && e["ph"] == "B")
        .collect();
    assert_eq!(begins[0]["args"]["ip"]["line"], 10);
    assert_eq!(begins[2]["args"]["continued"], true);
    assert_eq!(
        begins[2]["args"]["ip"]["line"], 20,
        "the begin's args again"
    );
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["tid"] == 100 && e["ph"] == "E")
        .collect();
    assert_eq!(ends[1]["args"]["end_ip"]["line"], 30);
    assert_eq!(ends[2]["args"]["end_ip"]["line"], 50);
    // tid 200: its irq_enable had nothing to end (an instant, counted),
    // and its last irqs off is closed at the end.
    assert_eq!(thread(200), ["B irqs off", "E irqs off"]);
    let unmatched = by_name(events, "preemptirq:irq_enable");
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0]["ph"], "i");
    assert_eq!(unmatched[0]["tid"], 200);
    assert_eq!(unmatched[0]["args"]["unmatched_end"], "irqs off");
    assert_eq!(unmatched[0]["args"]["cpu"], 1);
    assert_eq!(other["unmatched_span_ends"], 1);
    assert_eq!(other["spans_split"], 1);
    assert_eq!(other["spans_closed_at_end"], 1);
    let closing = events.last().unwrap();
    assert_eq!(
        (&closing["ph"], &closing["tid"]),
        (&"E".into(), &200.into())
    );
    assert_eq!(closing["args"]["unclosed"], true);
    let last_page = by_name(events, "app:page_read").pop().unwrap();
    assert_eq!(last_page["args"]["n"], 1001);
    assert_eq!(
        closing["ts"], last_page["ts"],
        "closed at the last timestamp"
    );

    // Fields, the counter, the untagged and the raw event.
    let two = by_name(events, "app:page_read")
        .into_iter()
        .find(|e| e["args"]["n"] == 1000)
        .unwrap();
    assert_eq!(
        (&two["ph"], &two["s"], &two["tid"], &two["args"]["cpu"]),
        (&"i".into(), &"t".into(), &200.into(), &1.into())
    );
    assert_eq!(two["args"]["note"], "two");
    let counter = by_name(events, "app:queue_counter");
    assert_eq!(counter.len(), 1);
    assert_eq!(counter[0]["ph"], "C");
    assert_eq!(counter[0]["args"], serde_json::json!({ "depth": 5 }));
    let sample = by_name(events, "sample");
    assert_eq!(
        (&sample[0]["args"]["v"], &sample[0]["tid"]),
        (&42.into(), &pid.into())
    );
    let raw = by_name(events, "raw");
    assert_eq!(raw[0]["args"]["raw"], hex(&[0xAB; 8]));
    assert!(raw[0]["args"]["why"]
        .as_str()
        .unwrap()
        .contains("no tracepoint"));
    assert_eq!(raw[0]["tid"], pid);

    // The names: the process by its comm, and every thread.
    let names: BTreeMap<(String, u64), String> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            (
                (
                    e["name"].as_str().unwrap().to_owned(),
                    e["tid"].as_u64().unwrap(),
                ),
                e["args"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let comm = recovery.header.comm.clone();
    assert_eq!(names[&("process_name".into(), u64::from(pid))], comm);
    for tid in [100, 200, u64::from(pid)] {
        assert_eq!(names[&("thread_name".into(), tid)], format!("{comm}-{tid}"));
    }

    // Timestamps: ringtrace's own ns (the dump's) over 1000, exactly, as
    // written and as parsed.
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    let own_ns: Vec<u64> = dump
        .events()
        .into_iter()
        .map(|e| dump.json(e)["ns"].as_u64().unwrap())
        .collect();
    let own: BTreeSet<u64> = own_ns.iter().copied().collect();
    let texts = ts_texts(&text);
    assert_eq!(texts.len(), events.len());
    for (t, e) in texts.iter().zip(events) {
        let ns = decimal_ns(t);
        assert_eq!(e["ts"].as_f64().unwrap(), ns as f64 / 1000.0, "{t}");
        assert!(
            e["ph"] == "M" || own.contains(&ns),
            "{t} is no event's time: {e}"
        );
    }
    // Event by event: the n-th page_read is the n-th dumped page_read.
    let dumped_pages: Vec<u64> = dump
        .events()
        .into_iter()
        .map(|e| dump.json(e))
        .filter(|j| j["event"] == "app:page_read")
        .map(|j| j["ns"].as_u64().unwrap())
        .collect();
    let exported_pages: Vec<u64> = texts
        .iter()
        .zip(events)
        .filter(|(_, e)| e["name"] == "app:page_read")
        .map(|(t, _)| decimal_ns(t))
        .collect();
    assert_eq!(exported_pages, dumped_pages);
    assert!(
        exported_pages.iter().any(|ns| ns % 1000 != 0),
        "some timestamp has a fraction of a µs"
    );
}

#[test]
fn a_clock_whose_ticks_are_not_time_exports_ticks_as_microseconds_and_says_so() {
    let dir = TempDir::new("counter");
    let path = dir.0.join("c.ring");
    let recovery = counter_ring(&path);
    let (_, json, _) = exported(&recovery, &dir);
    let events = schema_checked(&json, recovery.header.pid, 1);
    let other = &json["otherData"];
    assert_eq!(other["ticks_are_time"], false);
    let words = other["timestamps"].as_str().unwrap();
    assert!(words.contains("raw ticks of clock `counter`"), "{words}");
    assert!(words.contains("not time"), "{words}");
    let base = other["base_ticks"].as_u64().unwrap();
    let ticks: Vec<u64> = recovery.merged().iter().map(|e| e.ts - base).collect();
    let exported: Vec<u64> = by_name(events, "app:page_read")
        .iter()
        .map(|e| e["ts"].as_u64().expect("whole ticks"))
        .collect();
    assert_eq!(exported, ticks);
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn random_events_export_to_a_balanced_trace_of_the_right_shape(
        randoms in randoms(120)
    ) {
        let dir = TempDir::new("prop");
        let recovery = recovered(&dir.0.join("p.ring"), &randoms);
        let (summary, json, text) = exported(&recovery, &dir);
        let events = schema_checked(&json, recovery.header.pid, 2);
        balance_checked(events);
        let lost_before: u64 = recovery.merged().iter().map(|e| e.lost_before).sum();
        let lost: u64 = by_name(events, "lost")
            .iter()
            .map(|e| e["args"]["count"].as_u64().unwrap())
            .sum();
        prop_assert_eq!(lost, lost_before);
        prop_assert_eq!(summary.lost, lost_before);
        prop_assert_eq!(summary.events, recovery.merged().len() as u64);
        for t in ts_texts(&text) {
            decimal_ns(&t);
        }
    }
}
