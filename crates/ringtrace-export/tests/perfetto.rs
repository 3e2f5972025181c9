//! `ringtrace export --format perfetto` of tracepoint traces: the output
//! is a valid Perfetto trace (read back by the testkit's decoder, which
//! asserts every rule the trace processor relies on), preemptirq sections
//! are slices on per-CPU tracks (a lane more where two threads' sections
//! overlap on one CPU), span pairs nest on their thread's track, counters
//! are counter tracks, every other event is an instant with its fields at
//! its exact time, and every loss is marked with its count.

mod common;

use common::trace::*;
use common::TempDir;
use proptest::prelude::*;
use ringtrace_export::export::{export, ExportSummary, Format};
use ringtrace_ring::file::{self, Recovery};
use ringtrace_testkit::perfetto::{resolve, Resolved, Track};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// The Perfetto export of `recovery`, read back.
fn exported(
    recovery: &Recovery,
    dir: &TempDir,
) -> (ExportSummary, Vec<Resolved>, HashMap<u64, Track>) {
    let out = dir.0.join("trace.pftrace");
    let summary = export(recovery, Format::Perfetto, &out).unwrap();
    let (events, tracks) = resolve(&std::fs::read(&out).unwrap());
    (summary, events, tracks)
}

/// The uuid of the track named `name`.
fn named(tracks: &HashMap<u64, Track>, name: &str) -> u64 {
    let found: Vec<u64> = tracks
        .iter()
        .filter(|(_, t)| t.name.as_deref() == Some(name))
        .map(|(uuid, _)| *uuid)
        .collect();
    assert_eq!(found.len(), 1, "one track {name}: {tracks:?}");
    found[0]
}

/// `(kind, name)` of the events on `track`, in time order.
fn on(events: &[Resolved], track: u64) -> Vec<(u64, Option<&str>)> {
    events
        .iter()
        .filter(|e| e.track == track)
        .map(|e| (e.kind, e.name.as_deref()))
        .collect()
}

#[test]
fn a_known_trace_exports_sections_per_cpu_spans_counters_instants_and_losses() {
    let dir = TempDir::new("perfetto-known");
    let path = dir.0.join("t.ring");
    let script = Scripted::new(&path);
    let at = |cpu: usize, p: &[u8], gap: u64| script.at(cpu, p, gap);
    script.fillers();
    // Threads 100 and 101 both disable irqs on CPU 0: two lanes.
    at(0, &preemptirq(IRQ_DISABLE, 100, 10), 2400);
    at(0, &preemptirq(IRQ_DISABLE, 101, 20), 2400);
    at(0, &preemptirq(IRQ_ENABLE, 100, 30), 2400);
    // Thread 101 ends its section on CPU 1: it stays on CPU 0's track.
    at(1, &preemptirq(IRQ_ENABLE, 101, 40), 2400);
    at(1, &preemptirq(IRQ_ENABLE, 102, 50), 2400); // nothing open
                                                   // Interleaved pairs on one thread: work is split where gc ends.
    at(1, &payload(WORK_ENTER, 200, &[]), 2400);
    at(1, &payload(GC_START, 200, &[]), 2400);
    at(1, &payload(WORK_EXIT, 200, &[]), 2400);
    at(1, &payload(GC_STOP, 200, &[]), 2400);
    at(1, &payload(QUEUE_COUNTER, 200, &[&put(5u32)]), 2400);
    at(1, &payload(LOAD, 200, &[&put(2.5f64)]), 2400);
    at(1, &[0x2A, 0], 2400); // the untagged layout
    at(1, &[0xEE; 5], 2400); // no tracepoint's id
    at(1, &page_read(200, 1001, "last"), 2400);
    drop(script);

    let recovery = file::recover(&path).unwrap();
    let (summary, events, tracks) = exported(&recovery, &dir);
    assert_eq!(summary.events, recovery.merged().len() as u64);
    let c = &recovery.header.clock;

    // Sections on CPU 0's lanes.
    let lane0 = on(&events, named(&tracks, "cpu 0: irqs off"));
    let lane1 = on(&events, named(&tracks, "cpu 0: irqs off (2)"));
    assert_eq!(lane0, [(1, Some("irqs off")), (2, None)]);
    assert_eq!(lane1, [(1, Some("irqs off")), (2, None)]);
    let unmatched: Vec<&Resolved> = events
        .iter()
        .filter(|e| e.args.contains_key("unmatched_end"))
        .collect();
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0].name.as_deref(), Some("preemptirq:irq_enable"));
    assert_eq!(
        summary
            .warnings
            .iter()
            .filter(|w| w.contains("no open span"))
            .count(),
        1
    );

    // Thread 200's pairs: work, gc inside it split at work's end.
    let thread = tracks
        .iter()
        .find(|(_, t)| t.tid == Some(200))
        .map(|(u, _)| *u)
        .unwrap();
    let slices: Vec<(u64, Option<&str>)> = on(&events, thread)
        .into_iter()
        .filter(|(k, _)| *k != 3)
        .collect();
    assert_eq!(
        slices,
        [
            (1, Some("app:work")),
            (1, Some("app:gc")),
            (2, None),
            (2, None),
            (1, Some("app:gc")),
            (2, None)
        ]
    );
    let again = events
        .iter()
        .find(|e| e.args.contains_key("continued"))
        .unwrap();
    assert_eq!(again.name.as_deref(), Some("app:gc"));

    // Counters: the queue depth and the load.
    let depth = on(&events, named(&tracks, "app:queue_counter"));
    assert_eq!(depth, [(4, None)]);
    let load = events
        .iter()
        .find(|e| e.track == named(&tracks, "app:load"))
        .unwrap();
    assert_eq!(load.counter.as_deref(), Some("2.5"));

    // Instants: fields typed, at their exact time; the untagged and the
    // undecodable on the process's main thread.
    let last = events
        .iter()
        .find(|e| e.args.get("note").map(String::as_str) == Some("last"))
        .unwrap();
    assert_eq!(last.args["n"], "1001");
    assert_eq!(last.args["cpu"], "1");
    let written = recovery.merged().last().unwrap().ts;
    assert_eq!(last.ts, c.ticks_to_ns(written).unwrap());
    assert!(events
        .iter()
        .any(|e| e.name.as_deref() == Some("sample") && e.args["v"] == "42"));
    let raw = events
        .iter()
        .find(|e| e.name.as_deref() == Some("raw"))
        .unwrap();
    assert_eq!(raw.args["raw"], "eeeeeeeeee");

    // Losses: an instant with the count, and CPU 0's events-lost counter.
    let overrun = recovery.cpus[0].file_stats.overrun;
    assert!(overrun > 0, "the fillers did not wrap the ring");
    let lost: Vec<&Resolved> = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("lost"))
        .collect();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].args["count"], overrun.to_string());
    assert_eq!(lost[0].args["cpu"], "0");
    let counter = events
        .iter()
        .find(|e| e.track == named(&tracks, "cpu 0: events lost"))
        .unwrap();
    assert_eq!(counter.counter, Some(overrun.to_string()));
    assert_eq!(summary.lost, overrun);
}

#[test]
fn a_clock_whose_ticks_are_not_time_exports_its_ticks_without_a_snapshot_and_says_so() {
    let dir = TempDir::new("perfetto-counter");
    let path = dir.0.join("c.ring");
    let recovery = counter_ring(&path);
    let (summary, events, _) = exported(&recovery, &dir);
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.contains("`counter` counts ticks")),
        "{:?}",
        summary.warnings
    );
    let ticks: Vec<u64> = recovery.merged().iter().map(|e| e.ts).collect();
    let exported: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == 3)
        .map(|e| e.ts)
        .collect();
    assert_eq!(exported, ticks);
    let bytes = std::fs::read(dir.0.join("trace.pftrace")).unwrap();
    let trace = ringtrace_testkit::perfetto::Message::parse(&bytes);
    assert!(
        trace.msgs(1).iter().all(|p| p.msg(6).is_none()),
        "no clock snapshot for ticks that are not time"
    );
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn random_tracepoint_events_export_to_a_valid_perfetto_trace_with_every_loss(
        randoms in randoms(200)
    ) {
        let dir = TempDir::new("perfetto-prop");
        let recovery = recovered(&dir.0.join("p.ring"), &randoms);
        let (summary, events, tracks) = exported(&recovery, &dir);
        let merged = recovery.merged();
        let lost_before: u64 = merged.iter().map(|e| e.lost_before).sum();
        let none_left: u64 = recovery
            .cpus
            .iter()
            .filter(|c| c.events.is_empty())
            .map(|c| c.file_stats.overrun + c.file_stats.lost)
            .sum();
        let marked: u64 = events
            .iter()
            .filter(|e| e.name.as_deref() == Some("lost"))
            .map(|e| e.args["count"].parse::<u64>().unwrap())
            .sum();
        prop_assert_eq!(marked, lost_before + none_left);
        prop_assert_eq!(summary.lost, marked);
        prop_assert_eq!(summary.events, merged.len() as u64);
        // Each page read is an instant at its time on its thread.
        let c = &recovery.header.clock;
        let reads = merged.iter().filter(|e| e.payload.starts_with(&PAGE_READ.to_le_bytes()));
        for e in reads {
            let tid = u64::from(u32::from_le_bytes(e.payload[4..8].try_into().unwrap()));
            let ts = c.ticks_to_ns(e.ts).unwrap();
            let found = events.iter().any(|r| {
                r.kind == 3
                    && r.ts == ts
                    && tracks[&r.track].tid == Some(tid)
                    && r.name.as_deref() == Some("app:page_read")
                    && r.args["cpu"] == e.cpu.to_string()
            });
            prop_assert!(found, "page read at {} on thread {}", ts, tid);
        }
    }
}

#[test]
fn two_processes_that_share_a_pid_keep_their_own_tracks() {
    let dir = TempDir::new("perfetto-pid-reuse");
    let clock = ManualClock(Arc::new(AtomicU64::new(1_000)));
    let mut recoveries = Vec::new();
    for (name, comm) in [("a.ring", "first"), ("b.ring", "second")] {
        let path = dir.0.join(name);
        let ring = ring(&path, clock.clone());
        clock.advance(2400);
        ring.cpu_writer(0).write(&page_read(7, 1, comm)).unwrap();
        drop(ring);
        let mut r = file::recover(&path).unwrap();
        // The same pid, reused by a later process of a long session.
        r.header.pid = 4242;
        r.header.comm = comm.into();
        recoveries.push(r);
    }
    let trace = ringtrace_export::Trace::new(&recoveries, ringtrace_export::Alignment::SharedClock)
        .unwrap();
    let out = dir.0.join("t.pftrace");
    let summary = ringtrace_export::export::export_trace(&trace, Format::Perfetto, &out).unwrap();
    assert_eq!(summary.events, 2);
    let bytes = std::fs::read(&out).unwrap();
    let (events, tracks) = resolve(&bytes);
    let threads: Vec<u64> = tracks
        .iter()
        .filter(|(_, t)| t.tid == Some(7))
        .map(|(uuid, _)| *uuid)
        .collect();
    assert_eq!(threads.len(), 2, "a thread track per process: {tracks:?}");
    for note in ["first", "second"] {
        let e = events
            .iter()
            .find(|e| e.args.get("note").map(String::as_str) == Some(note))
            .unwrap();
        assert!(threads.contains(&e.track));
    }
    let trace = ringtrace_testkit::perfetto::Message::parse(&bytes);
    let names: Vec<String> = trace
        .msgs(1)
        .iter()
        .filter_map(|p| p.msg(60))
        .filter_map(|d| d.msg(3))
        .map(|p| format!("{}:{}", p.uint(1).unwrap(), p.string(6).unwrap()))
        .collect();
    assert_eq!(names, ["4242:first", "4242:second"]);
}
