//! `Tracer::export(ExportFormat::Perfetto, ..)` over random `tracing`
//! workloads (threads, nested spans, async tasks polled by several
//! threads, `follows_from` links, events, losses in a small overwrite
//! ring): the output, read back with a protobuf wire decoder, is a valid
//! Perfetto trace (sequences, interning, tracks described before use,
//! slices nested on every track, flows joining two events or more) and
//! holds what the ring's own reader shows (every event and span enter at
//! its time on its thread, each loss with its count, a task track for
//! each task).
//!
//! With RINGTRACE_PERFETTO_OUT=DIR each case's trace and dump are kept
//! there for scripts/check_perfetto.py, which checks them with
//! Perfetto's own definitions.

#![cfg(feature = "tracing")]

use proptest::prelude::*;
use ringtrace::export::Dump;
use ringtrace::{DumpOptions, ExportFormat, Mode, Tracer};
use ringtrace_testkit::perfetto::resolve;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use tracing_subscriber::layer::SubscriberExt;

/// What one test thread does.
#[derive(Debug, Clone)]
enum Step {
    /// An event with two fields.
    Event(u64),
    /// Spans nested this deep, an event in the innermost.
    Nested(u8),
    /// A task created here and polled by this many threads in turn, each
    /// poll recording an event; it follows from the previous task.
    Task(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u64>().prop_map(Step::Event),
        (1..4u8).prop_map(Step::Nested),
        (1..4u8).prop_map(Step::Task),
    ]
}

/// Thread `t`'s steps.
fn run(t: usize, steps: &[Step]) {
    let mut previous: Option<tracing::Span> = None;
    {
        for s in steps {
            match s {
                Step::Event(v) => tracing::info!(v, thread = t, "ev"),
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
                    if let Some(p) = &previous {
                        task.follows_from(p);
                    }
                    let dispatch = tracing::dispatcher::get_default(|d| d.clone());
                    for poll in 0..*polls {
                        let task = task.clone();
                        let dispatch = dispatch.clone();
                        std::thread::spawn(move || {
                            tracing::dispatcher::with_default(&dispatch, || {
                                task.in_scope(|| tracing::debug!(poll, "poll"));
                            })
                        })
                        .join()
                        .unwrap();
                    }
                    previous = Some(task);
                }
            }
        }
    }
}

/// Runs each thread's steps on a thread of its own, through the
/// tracer's layer.
fn record(tracer: &Tracer, steps: &[Vec<Step>]) {
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || {
        std::thread::scope(|s| {
            for (t, part) in steps.iter().enumerate() {
                let dispatch = &dispatch;
                s.spawn(move || tracing::dispatcher::with_default(dispatch, || run(t, part)));
            }
        });
    });
}

fn out_dir() -> Option<PathBuf> {
    std::env::var_os("RINGTRACE_PERFETTO_OUT").map(PathBuf::from)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_tracing_workloads_export_to_a_valid_perfetto_trace_of_the_same_events(
        steps in prop::collection::vec(prop::collection::vec(step(), 0..40), 1..4),
        small in any::<bool>(),
    ) {
        let dir = ringtrace_testkit::TempDir::new("perfetto");
        let ring = dir.0.join("t.ring");
        // A small ring overwrites, so that losses are exported too.
        let tracer = Tracer::builder()
            .file(&ring)
            .cpus(2)
            .page_size(4096)
            .buffer_size(if small { 8192 } else { 1 << 20 })
            .mode(Mode::Overwrite)
            .build()
            .unwrap();
        record(&tracer, &steps);
        tracer.flush();
        let out = dir.0.join("t.pftrace");
        let summary = tracer.export(ExportFormat::Perfetto, &out).unwrap();
        let (events, tracks) = resolve(&std::fs::read(&out).unwrap());

        let snapshot = tracer.snapshot().unwrap();
        let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
        let lines: Vec<serde_json::Value> = dump.events().iter().map(|e| dump.json(e)).collect();
        prop_assert_eq!(summary.events, lines.len() as u64);
        let tid_of = |track: u64| tracks[&track].tid;
        // Every event and every span enter, at its time on its thread.
        let mut instants: HashMap<(u64, u64, String), usize> = HashMap::new();
        let mut slices: HashMap<(u64, u64, String), usize> = HashMap::new();
        for e in &events {
            let Some(tid) = tid_of(e.track) else { continue };
            let key = (e.ts, tid, e.name.clone().unwrap_or_default());
            match e.kind {
                3 => *instants.entry(key).or_default() += 1,
                1 => *slices.entry(key).or_default() += 1,
                _ => {}
            }
        }
        // Span ids are reused once a span closes: a span is its id and
        // how many spans of that id were created before it.
        let (mut lost, mut enters) = (0, 0);
        let mut spans_entered: HashMap<(u64, u64), (u64, HashSet<u64>)> = HashMap::new();
        let mut created = HashSet::new();
        let mut instance: HashMap<u64, u64> = HashMap::new();
        for l in &lines {
            lost += l["lost_before"].as_u64().unwrap();
            let ts = l["ts"].as_u64().unwrap();
            let tid = l["tid"].as_u64().unwrap();
            match l["event"].as_str().unwrap() {
                "tracing:event" => {
                    let name = l["fields"]["message"].as_str().unwrap().to_owned();
                    let n = instants.get_mut(&(ts, tid, name.clone()));
                    prop_assert!(n.as_ref().is_some_and(|n| **n > 0), "event {} at {} on {}", name, ts, tid);
                    *n.unwrap() -= 1;
                }
                "tracing:span_enter" => {
                    let name = l["callsite"].as_str().unwrap().to_owned();
                    let n = slices.get_mut(&(ts, tid, name.clone()));
                    prop_assert!(n.as_ref().is_some_and(|n| **n > 0), "span {} entered at {} on {}", name, ts, tid);
                    *n.unwrap() -= 1;
                    enters += 1;
                    let span = l["span"].as_u64().unwrap();
                    let which = instance.get(&span).copied().unwrap_or(0);
                    let seen = spans_entered.entry((span, which)).or_default();
                    seen.0 += 1;
                    seen.1.insert(tid);
                }
                "tracing:span_new" => {
                    let span = l["span"].as_u64().unwrap();
                    let which = instance.entry(span).or_default();
                    *which += 1;
                    created.insert((span, *which));
                }
                _ => {}
            }
        }
        let marked: u64 = events
            .iter()
            .filter(|e| e.kind == 3 && e.name.as_deref() == Some("lost"))
            .map(|e| e.args["count"].parse::<u64>().unwrap())
            .sum();
        prop_assert!(marked >= lost, "{} lost before events, {} marked", lost, marked);
        prop_assert_eq!(summary.lost, marked);
        // Nothing lost, every follows_from link is drawn; any not drawn
        // is said.
        let undrawn = summary.warnings.iter().any(|w| w.contains("follows_from links are not drawn"));
        prop_assert!(marked > 0 || !undrawn, "{:?}", summary.warnings);
        // A task (a span created in the trace and entered more than once
        // or on two threads) has its own track; no other span has one.
        let tasks = spans_entered
            .iter()
            .filter(|(span, (n, tids))| (*n > 1 || tids.len() > 1) && created.contains(*span))
            .count();
        let task_tracks = tracks
            .values()
            .filter(|t| t.name.as_deref().is_some_and(|n| n.starts_with("task #")))
            .count();
        prop_assert_eq!(task_tracks, tasks, "task tracks for tasks");
        prop_assert!(enters <= events.iter().filter(|e| e.kind == 1).count());
        if let Some(keep) = out_dir() {
            std::fs::create_dir_all(&keep).unwrap();
            let n = std::fs::read_dir(&keep).unwrap().count();
            std::fs::copy(&out, keep.join(format!("case-{n}.pftrace"))).unwrap();
            let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            std::fs::write(keep.join(format!("case-{n}.jsonl")), text.join("\n") + "\n").unwrap();
        }
    }
}

/// A trace's track events, comparable across exports: each as its time,
/// kind, name, annotations, track (by its thread or name) and number of
/// flows, sorted.
fn same_events(bytes: &[u8]) -> Vec<String> {
    let (events, tracks) = resolve(bytes);
    let mut all: Vec<String> = events
        .iter()
        .map(|e| {
            let t = &tracks[&e.track];
            format!(
                "{} {} {:?} {:?} {:?} {:?} {:?} {} {}",
                e.ts,
                e.kind,
                e.name,
                e.args,
                e.counter,
                t.tid,
                t.name,
                e.flows.len(),
                e.ends.len()
            )
        })
        .collect();
    all.sort();
    all
}

/// A session streamed by the program itself, with tasks, nested spans and
/// events on several threads: the Perfetto export of the session opened
/// streamed (a chunk at a time) holds the track events of the export of
/// the session read whole; the other formats read a streamed trace whole; the dump
/// refuses one.
#[test]
fn a_session_exports_the_same_perfetto_trace_streamed_as_read_whole() {
    use ringtrace::export::export::export_trace;
    use ringtrace::export::Trace;
    use ringtrace::session::Session;
    let dir = ringtrace_testkit::TempDir::new("perfetto-session");
    let session_dir = dir.0.join("trace");
    let tracer = Tracer::builder()
        .blocking(std::time::Duration::from_secs(5))
        .buffer_size(16 << 10)
        .page_size(4096)
        .stream_to(&session_dir)
        .stream_options(ringtrace::session::SessionOptions::default().rotate_size(16 << 10))
        .build()
        .unwrap();
    let steps: Vec<Vec<Step>> = (0..3)
        .map(|t| {
            (0..200u64)
                .map(|i| match (i + t) % 3 {
                    0 => Step::Event(i),
                    1 => Step::Nested((i % 3) as u8 + 1),
                    _ => Step::Task((i % 3) as u8 + 1),
                })
                .collect()
        })
        .collect();
    record(&tracer, &steps);
    tracer.finish().unwrap();

    let whole = Session::open(&session_dir).unwrap();
    let chunks: usize = std::fs::read_dir(&session_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir() && e.file_name() != "rings")
        .flat_map(|p| std::fs::read_dir(p.path()).unwrap().filter_map(Result::ok))
        .filter(|e| e.path().is_dir())
        .map(|cpu| std::fs::read_dir(cpu.path()).unwrap().count())
        .sum();
    assert!(chunks > 2, "the session is in several chunks: {chunks}");
    let whole_recoveries = whole.recoveries();
    let whole_trace =
        Trace::new(&whole_recoveries, ringtrace::export::Alignment::SharedClock).unwrap();
    let streamed = Session::open_streamed(&session_dir).unwrap();
    let streamed_recoveries = streamed.recoveries();
    assert!(streamed_recoveries
        .iter()
        .all(|r| r.cpus.iter().all(|c| c.events.is_empty())));
    let streamed_trace = Trace::new(
        &streamed_recoveries,
        ringtrace::export::Alignment::SharedClock,
    )
    .unwrap()
    .with_source(&streamed);

    let (a, b) = (dir.0.join("whole.pftrace"), dir.0.join("streamed.pftrace"));
    let done_whole = export_trace(&whole_trace, ExportFormat::Perfetto, &a).unwrap();
    let done_streamed = export_trace(&streamed_trace, ExportFormat::Perfetto, &b).unwrap();
    assert_eq!(done_whole.events, done_streamed.events);
    assert!(done_whole.events > 1000, "{}", done_whole.events);
    // The same track events: a buffer's events in the order recorded can
    // differ from the global time order where a writer was preempted
    // between its clock read and its reservation, so the packets' order
    // may too; what each track holds may not.
    let bytes = std::fs::read(&a).unwrap();
    assert_eq!(
        same_events(&bytes),
        same_events(&std::fs::read(&b).unwrap())
    );
    let (events, tracks) = resolve(&bytes);
    assert!(
        events.iter().filter(|e| e.kind == 3).count() >= 600,
        "the events are instants"
    );
    assert!(tracks
        .values()
        .any(|t| t.name.as_deref().is_some_and(|n| n.starts_with("task #"))));
    assert!(
        streamed.stream_problems().is_empty(),
        "{:?}",
        streamed.stream_problems()
    );

    let (c, d) = (dir.0.join("whole.json"), dir.0.join("streamed.json"));
    export_trace(&whole_trace, ExportFormat::Chrome, &c).unwrap();
    export_trace(&streamed_trace, ExportFormat::Chrome, &d).unwrap();
    assert!(
        std::fs::read(&c).unwrap() == std::fs::read(&d).unwrap(),
        "chrome differs"
    );
    let refused = Dump::for_trace(streamed_trace, DumpOptions::default()).unwrap_err();
    assert!(refused.to_string().contains("streamed"), "{refused}");

    // A chunk damaged: the streamed export says what it could not read.
    let chunk = std::fs::read_dir(&session_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir() && e.file_name() != "rings")
        .flat_map(|p| {
            std::fs::read_dir(p.path().join("cpu0"))
                .into_iter()
                .flatten()
        })
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "chunk"))
        .expect("a finished chunk on CPU 0");
    let mut bytes = std::fs::read(&chunk).unwrap();
    bytes[200] ^= 0xFF;
    std::fs::write(&chunk, bytes).unwrap();
    let damaged = Session::open_streamed(&session_dir).unwrap();
    let recoveries = damaged.recoveries();
    let trace = Trace::new(&recoveries, ringtrace::export::Alignment::SharedClock)
        .unwrap()
        .with_source(&damaged);
    let done = export_trace(&trace, ExportFormat::Perfetto, &b).unwrap();
    assert!(done.events < done_whole.events);
    assert!(
        done.warnings
            .iter()
            .any(|w| w.contains("could not be read")),
        "{:?}",
        done.warnings
    );
    let problems = damaged.stream_problems();
    assert_eq!(problems.len(), 1, "said once for two passes: {problems:?}");
    assert!(problems[0].contains("checksum"), "{problems:?}");
}

/// A message formatted per event is a new name each time: past the
/// interning bound a sequence's state is cleared and set up again, and
/// every event still reads back with its own name and time.
#[test]
fn more_distinct_names_than_the_intern_bound_clear_the_state_and_read_back() {
    const EVENTS: u64 = 70_000;
    let dir = ringtrace_testkit::TempDir::new("perfetto-names");
    let tracer = Tracer::builder()
        .file(dir.0.join("n.ring"))
        .cpus(1)
        .buffer_size(16 << 20)
        .build()
        .unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..EVENTS {
            tracing::info!("request {i} done");
        }
    });
    tracer.flush();
    let out = dir.0.join("n.pftrace");
    let summary = tracer.export(ExportFormat::Perfetto, &out).unwrap();
    assert_eq!(summary.events, EVENTS, "{:?}", summary.warnings);
    let bytes = std::fs::read(&out).unwrap();
    let trace = ringtrace_testkit::perfetto::Message::parse(&bytes);
    let clears = trace
        .msgs(1)
        .iter()
        .filter(|p| p.uint(13).unwrap_or(0) & 1 == 1 && p.msg(11).is_none())
        .count();
    assert!(
        clears >= 3,
        "the state was cleared past the bound: {clears}"
    );
    let (events, _) = resolve(&bytes);
    let mut names: Vec<u64> = events
        .iter()
        .filter_map(|e| {
            e.name
                .as_deref()?
                .strip_prefix("request ")?
                .strip_suffix(" done")
        })
        .map(|n| n.parse().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, (0..EVENTS).collect::<Vec<_>>());
    let snapshot = tracer.snapshot().unwrap();
    let dump = Dump::new(&snapshot, DumpOptions::default()).unwrap();
    let times: Vec<u64> = dump.events().iter().map(|e| e.ts).collect();
    let exported: Vec<u64> = events
        .iter()
        .filter(|e| e.kind == 3)
        .map(|e| e.ts)
        .collect();
    let clock = &snapshot.header.clock;
    let times: Vec<u64> = times
        .iter()
        .map(|t| clock.ticks_to_ns(*t).unwrap())
        .collect();
    assert_eq!(exported, times, "every time exact across the clears");
    if let Some(keep) = out_dir() {
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&out, keep.join("names.pftrace")).unwrap();
        let lines: Vec<String> = dump
            .events()
            .iter()
            .map(|e| dump.json(e).to_string())
            .collect();
        std::fs::write(keep.join("names.jsonl"), lines.join("\n") + "\n").unwrap();
    }
}

fn clock_now(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for clock_gettime.
    assert_eq!(unsafe { libc::clock_gettime(id, &mut ts) }, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A tracer's trace carries a clock snapshot that places it on BOOTTIME,
/// MONOTONIC and REALTIME, whatever its clock: `mono` exactly on
/// MONOTONIC, `tsc` through the anchors the tracer recorded.
#[test]
fn the_clock_snapshot_places_the_trace_on_the_machines_clocks() {
    for clock in ["mono", "tsc"] {
        let Ok(tracer) = Tracer::builder()
            .clock(clock)
            .cpus(1)
            .buffer_size(64 << 10)
            .build()
        else {
            continue; // no tsc on this machine
        };
        tracer.write(b"x").unwrap();
        let dir = ringtrace_testkit::TempDir::new("perfetto-clocks");
        let out = dir.0.join("c.pftrace");
        tracer.export(ExportFormat::Perfetto, &out).unwrap();
        let bytes = std::fs::read(&out).unwrap();
        let trace = ringtrace_testkit::perfetto::Message::parse(&bytes);
        let first = &trace.msgs(1)[0];
        let snapshot = first.msg(6).expect("a clock snapshot");
        let at = |id: u64| {
            snapshot
                .msgs(1)
                .iter()
                .find(|c| c.uint(1) == Some(id))
                .and_then(|c| c.uint(2))
                .unwrap_or_else(|| panic!("{clock}: no clock {id} in the snapshot"))
        };
        let (trace_ns, boot, mono, real) = (at(64), at(6), at(3), at(1));
        if clock == "mono" {
            assert_eq!(mono, trace_ns, "mono is MONOTONIC itself");
            assert_eq!(snapshot.uint(2), Some(3), "primary: MONOTONIC");
        }
        // The offsets between the machine's clocks, as they are now
        // (no suspend in between).
        let boot_off =
            clock_now(libc::CLOCK_BOOTTIME) as i128 - clock_now(libc::CLOCK_MONOTONIC) as i128;
        let real_off =
            clock_now(libc::CLOCK_REALTIME) as i128 - clock_now(libc::CLOCK_MONOTONIC) as i128;
        assert!(
            (boot as i128 - mono as i128 - boot_off).abs() < 1_000_000,
            "{clock}: BOOTTIME - MONOTONIC"
        );
        assert!(
            (real as i128 - mono as i128 - real_off).abs() < 50_000_000,
            "{clock}: REALTIME - MONOTONIC"
        );
    }
}

#[test]
fn a_follows_from_link_to_a_span_never_entered_is_said_so_not_called_missing() {
    let dir = ringtrace_testkit::TempDir::new("perfetto-unentered");
    let tracer = Tracer::builder().cpus(1).build().unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(tracer.layer()));
    tracing::dispatcher::with_default(&dispatch, || {
        let cause = tracing::info_span!("never_entered");
        let task = tracing::info_span!("task");
        task.follows_from(&cause);
        task.in_scope(|| tracing::info!("working"));
    });
    let out = dir.0.join("u.pftrace");
    let summary = tracer.export(ExportFormat::Perfetto, &out).unwrap();
    let said: Vec<&String> = summary
        .warnings
        .iter()
        .filter(|w| w.contains("follows_from"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", summary.warnings);
    assert!(said[0].contains("never entered"), "{said:?}");
    assert!(!said[0].contains("not in the trace"), "{said:?}");
}
