//! The figures over a scripted ring file (preemptirq sections, an
//! overwritten CPU) and over spans made by hand.

use super::span_names::SpanNames;
use super::thread_time::ThreadTime;
use super::*;
use crate::metadata::{FieldDesc, TraceMetadata, TracepointDesc};
use crate::spans::SpanData;
use ringtrace_clock::{Clock, ManualClock};
use ringtrace_ring::{file, Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::{FieldKind, SourceLocation, TraceField};

const IRQ_DISABLE: u32 = 1;
const IRQ_ENABLE: u32 = 2;
const PREEMPT_DISABLE: u32 = 3;
const PREEMPT_ENABLE: u32 = 4;
const FILLER: u32 = 5;

fn metadata() -> TraceMetadata {
    let tp = |id, name: &str, fields| TracepointDesc {
        name: name.into(),
        id,
        fields,
        format: String::new(),
    };
    let loc = || vec![FieldDesc::new("ip", FieldKind::Location)];
    TraceMetadata::new(vec![
        tp(IRQ_DISABLE, "preemptirq:irq_disable", loc()),
        tp(IRQ_ENABLE, "preemptirq:irq_enable", loc()),
        tp(PREEMPT_DISABLE, "preemptirq:preempt_disable", loc()),
        tp(PREEMPT_ENABLE, "preemptirq:preempt_enable", loc()),
        tp(FILLER, "app:filler", vec![]),
    ])
}

/// A ring file of 2 CPUs of 16 256-byte pages, overwritten when full.
struct Script {
    clock: ManualClock,
    ring: RingBuffer<ManualClock>,
}

impl Script {
    fn new(path: &std::path::Path) -> Script {
        let clock = ManualClock::ns(1_000);
        let config = RingConfig::default()
            .cpus(2)
            .page_size(256)
            .per_cpu_bytes(256 * 16)
            .mode(Mode::Overwrite)
            .quarantine_pages(2)
            .fixup_after(None)
            .file(path)
            .metadata(metadata().to_bytes());
        let ring = RingBuffer::new(config, clock.clone()).unwrap();
        Script { clock, ring }
    }

    /// Tracepoint `id` of thread `tid` on `cpu`, `gap` ns after the last.
    fn at(&self, gap: u64, cpu: usize, id: u32, tid: u32) {
        self.clock.advance(gap);
        let mut p = id.to_le_bytes().to_vec();
        p.extend_from_slice(&tid.to_le_bytes());
        if id != FILLER {
            let at = SourceLocation {
                file: "irq.rs",
                line: id,
                column: 1,
            };
            at.encode(&mut |b: &[u8]| p.extend_from_slice(b));
        }
        self.ring.cpu_writer(cpu).write(&p).unwrap();
    }

    fn now(&self) -> u64 {
        self.clock.read()
    }
}

#[test]
fn sections_pair_per_thread_and_kind_and_the_long_ones_come_longest_first() {
    let dir = ringtrace_testkit::TempDir::new("analysis-sections");
    let path = dir.0.join("s.ring");
    let s = Script::new(&path);
    s.at(0, 1, IRQ_DISABLE, 10); // 1000
    s.at(500, 1, IRQ_DISABLE, 11); // 1500: another thread's, same CPU
    s.at(2_000, 1, IRQ_ENABLE, 10); // 3500: thread 10's, 2500 ns
    s.at(100, 1, IRQ_ENABLE, 10); // none open: ignored
    s.at(100, 0, PREEMPT_DISABLE, 11); // 3700, on CPU 0
    s.at(20_000, 1, IRQ_ENABLE, 11); // 23700: thread 11's irqs off, 22200 ns
    s.at(10, 0, PREEMPT_DISABLE, 11); // 23710: nested
    s.at(50, 0, PREEMPT_ENABLE, 11); // the inner one, 50 ns
    s.at(1_000, 1, IRQ_DISABLE, 12); // 24760: exactly 1000 ns long
    s.at(1_000, 1, IRQ_ENABLE, 12);
    let last = s.now() + 5_000;
    s.at(5_000, 0, FILLER, 1);
    drop(s);
    let recovery = file::recover(&path).unwrap();
    let trace = Trace::single(&recovery);
    let a = analyze(&trace, Threshold::from_ns(1_000));
    let got: Vec<(u32, usize, &str, u64, u64, bool)> = a
        .long_sections
        .iter()
        .map(|x| {
            (
                x.tid,
                x.cpu,
                x.section.as_str(),
                x.start_ns,
                x.duration_ns,
                x.closed,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (11, 0, "preempt off", 3_700, last - 3_700, false),
            (11, 1, "irqs off", 1_500, 22_200, true),
            (10, 1, "irqs off", 1_000, 2_500, true),
        ],
        "the 50 ns section is short, the 1000 ns one not longer than 1000"
    );
    assert!(a
        .long_sections
        .iter()
        .all(|x| x.end_ns == x.start_ns + x.duration_ns));
    let mut every = Vec::new();
    for_each_section(&trace, &mut |x| every.push(x.duration_ns));
    assert_eq!(every, [2_500, 22_200, 50, 1_000, last - 3_700]);
}

#[test]
fn an_overwritten_cpu_s_losses_are_summed_per_second_of_their_events() {
    let dir = ringtrace_testkit::TempDir::new("analysis-losses");
    let path = dir.0.join("l.ring");
    let s = Script::new(&path);
    for _ in 0..1_000 {
        s.at(9_000_000, 0, FILLER, 1); // 9 ms apart: 9 s in all
    }
    s.at(1, 1, FILLER, 2);
    drop(s);
    let recovery = file::recover(&path).unwrap();
    let trace = Trace::single(&recovery);
    let lost_before: Vec<(u64, u64)> = trace
        .events()
        .iter()
        .filter(|e| e.event.lost_before > 0)
        .map(|e| (e.ts / 1_000_000_000, e.event.lost_before))
        .collect();
    assert!(!lost_before.is_empty(), "the ring wrapped");
    let a = analyze(&trace, Threshold::default());
    let got: Vec<(usize, u64, u64)> = a
        .losses_per_cpu_second
        .iter()
        .map(|l| (l.cpu, l.second, l.lost))
        .collect();
    let mut want: Vec<(usize, u64, u64)> = Vec::new();
    for (second, lost) in lost_before {
        match want.last_mut() {
            Some(w) if w.1 == second => w.2 += lost,
            _ => want.push((0, second, lost)),
        }
    }
    assert_eq!(got, want);
    let mut causes = Vec::new();
    for_each_loss(&trace, &mut |l| causes.push(l.cause));
    assert!(causes.iter().all(|c| *c == LossCause::BeforeEvent));
    assert_eq!(
        LossCause::NoEventRecovered.to_string(),
        "no_event_recovered"
    );
}

fn span(name: &str, tid: u32, start_ns: u64, end_ns: u64, busy_ns: u64) -> SpanData {
    SpanData {
        process: 0,
        uid: start_ns + 1,
        parent: None,
        id: 1,
        name: name.into(),
        target: "t".into(),
        level: 3,
        start_ns,
        end_ns,
        closed: true,
        busy_ns,
        tid,
        cpu: 0,
        threads: vec![tid],
        fields: Vec::new(),
        follows: Vec::new(),
        events: Vec::new(),
        local: false,
    }
}

#[test]
fn span_names_give_nearest_rank_percentiles_and_the_slowest_first() {
    let mut names = SpanNames::default();
    for d in 1..=100 {
        names.add(&span("request", 1, 0, d * 10, 0));
    }
    let mut open = span("db", 1, 0, 5_000, 0);
    open.closed = false;
    names.add(&open);
    names.add(&span("db", 2, 0, 990, 0));
    names.add(&span("cache", 2, 0, 990, 0)); // same p99 and max: by name
    let rows = names.finish();
    let got: Vec<(&str, u64, u64, u64, u64, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.spans,
                r.unclosed,
                r.p50_ns,
                r.p99_ns,
                r.max_ns,
                r.total_ns,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("db", 2, 1, 990, 5_000, 5_000, 5_990),
            ("request", 100, 0, 500, 990, 1_000, 50_500),
            ("cache", 1, 0, 990, 990, 990, 990),
        ]
    );
}

#[test]
fn busy_time_counts_on_the_creating_thread_busiest_first() {
    let mut t = ThreadTime::default();
    let mut task = span("task", 7, 0, 100, 60);
    task.threads = vec![8, 9]; // polled elsewhere: still thread 7's
    t.add(40, "app", &task);
    t.add(40, "app", &span("task", 7, 200, 300, 30));
    t.add(40, "app", &span("io", 8, 0, 100, 90));
    t.add(41, "other", &span("io", 8, 0, 100, 90));
    let got: Vec<(u32, u32, String, u64, u64)> = t
        .finish()
        .into_iter()
        .map(|r| (r.pid, r.tid, r.name, r.spans, r.busy_ns))
        .collect();
    assert_eq!(
        got,
        [
            (40, 7, "task".into(), 2, 90),
            (40, 8, "io".into(), 1, 90),
            (41, 8, "io".into(), 1, 90),
        ]
    );
}
