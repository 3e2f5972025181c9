//! A test trace of tracepoints: a hand-set clock, the tracepoints'
//! metadata (preemptirq, a page read, a counter, span pairs, an `f64`
//! value, an untagged layout), their payloads, a small overwrite ring
//! file, and random events.

use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use ringtrace_export::{EventLayout, FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::{FieldKind, SourceLocation, TraceField};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A clock the test sets by hand: a 2.4 GHz counter, so that ticks turn
/// into ns with fractions of a µs.
#[derive(Clone)]
pub struct ManualClock(pub Arc<AtomicU64>);

impl ManualClock {
    /// Moves the clock on.
    pub fn advance(&self, by: u64) {
        self.0.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn read(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "manual".into(),
            frequency_hz: Some(2_400_000_000),
            ticks_are_ns: false,
            guarantee: Guarantee::Global,
            precision_ns: Some(0.5),
            conversion: TickConversion::from_frequency(2_400_000_000),
        }
    }
}

/// The tracepoints of the test traces, by id.
pub const IRQ_DISABLE: u32 = 1;
pub const IRQ_ENABLE: u32 = 2;
pub const PREEMPT_DISABLE: u32 = 3;
pub const PREEMPT_ENABLE: u32 = 4;
pub const SOFTIRQS_DISABLE: u32 = 5;
pub const SOFTIRQS_ENABLE: u32 = 6;
pub const PAGE_READ: u32 = 7;
pub const QUEUE_COUNTER: u32 = 8;
pub const WORK_ENTER: u32 = 9;
pub const WORK_EXIT: u32 = 10;
pub const GC_START: u32 = 11;
pub const GC_STOP: u32 = 12;
pub const LOAD: u32 = 13;

pub fn metadata() -> TraceMetadata {
    let loc = || {
        vec![
            FieldDesc::new("ip", FieldKind::Location),
            FieldDesc::new("parent", FieldKind::Location),
        ]
    };
    let tp = |id, name: &str, fields, format: &str| TracepointDesc {
        name: name.into(),
        id,
        fields,
        format: format.into(),
    };
    let preemptirq = "caller={} parent={}";
    TraceMetadata::new(vec![
        tp(IRQ_DISABLE, "preemptirq:irq_disable", loc(), preemptirq),
        tp(IRQ_ENABLE, "preemptirq:irq_enable", loc(), preemptirq),
        tp(
            PREEMPT_DISABLE,
            "preemptirq:preempt_disable",
            loc(),
            preemptirq,
        ),
        tp(
            PREEMPT_ENABLE,
            "preemptirq:preempt_enable",
            loc(),
            preemptirq,
        ),
        tp(
            SOFTIRQS_DISABLE,
            "preemptirq:softirqs_disable",
            loc(),
            preemptirq,
        ),
        tp(
            SOFTIRQS_ENABLE,
            "preemptirq:softirqs_enable",
            loc(),
            preemptirq,
        ),
        tp(
            PAGE_READ,
            "app:page_read",
            vec![
                FieldDesc::new("n", FieldKind::U32),
                FieldDesc::new("note", FieldKind::Str),
            ],
            "n={} note={}",
        ),
        tp(
            QUEUE_COUNTER,
            "app:queue_counter",
            vec![FieldDesc::new("depth", FieldKind::U32)],
            "depth={}",
        ),
        tp(WORK_ENTER, "app:work_enter", vec![], ""),
        tp(WORK_EXIT, "app:work_exit", vec![], ""),
        tp(GC_START, "app:gc_start", vec![], ""),
        tp(GC_STOP, "app:gc_stop", vec![], ""),
        tp(
            LOAD,
            "app:load",
            vec![FieldDesc::new("value", FieldKind::F64)],
            "{}",
        ),
    ])
    .with_untagged(EventLayout {
        name: "sample".into(),
        fields: vec![FieldDesc::new("v", FieldKind::U16)],
        format: "v={}".into(),
    })
}

/// Appends one field's encoding to a payload.
pub type Encode = dyn Fn(&mut Vec<u8>);

/// A tracepoint event's payload: id, tid, then the fields.
pub fn payload(id: u32, tid: u32, fields: &[&Encode]) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    for f in fields {
        f(&mut p);
    }
    p
}

pub fn put<T: TraceField>(v: T) -> impl Fn(&mut Vec<u8>) {
    move |p: &mut Vec<u8>| v.encode(&mut |b: &[u8]| p.extend_from_slice(b))
}

/// A preemptirq event at line `line` of `irq.rs`.
pub fn preemptirq(id: u32, tid: u32, line: u32) -> Vec<u8> {
    let at = |line| SourceLocation {
        file: "irq.rs",
        line,
        column: 5,
    };
    payload(id, tid, &[&put(at(line)), &put(at(line + 1))])
}

pub fn page_read(tid: u32, n: u32, note: &'static str) -> Vec<u8> {
    payload(PAGE_READ, tid, &[&put(n), &put(note)])
}

/// A 2-CPU overwrite-mode ring file of four 256-byte pages a CPU, stamped
/// by the clock.
pub fn ring(path: &Path, clock: ManualClock) -> RingBuffer<ManualClock> {
    let config = RingConfig::default()
        .cpus(2)
        .page_size(256)
        .per_cpu_bytes(256 * 4)
        .mode(Mode::Overwrite)
        .quarantine_pages(2)
        .fixup_after(None)
        .file(path)
        .metadata(metadata().to_bytes());
    RingBuffer::new(config, clock).unwrap()
}

/// One random event: its CPU, its thread, what it is, and the clock
/// ticks before it.
#[derive(Debug, Clone)]
pub struct Random {
    pub cpu: usize,
    pub tid: u32,
    pub what: u32,
    pub gap: u64,
}

pub fn random_payload(r: &Random) -> Vec<u8> {
    match r.what {
        IRQ_DISABLE..=SOFTIRQS_ENABLE => preemptirq(r.what, r.tid, r.what),
        PAGE_READ => page_read(r.tid, r.what, "r"),
        QUEUE_COUNTER => payload(QUEUE_COUNTER, r.tid, &[&put(r.gap as u32)]),
        WORK_ENTER..=GC_STOP => payload(r.what, r.tid, &[]),
        LOAD => payload(LOAD, r.tid, &[&put(r.gap as f64 / 7.0)]),
        14 => vec![0x2A, 0],
        _ => vec![0xEE; 5],
    }
}

/// A strategy of up to `max` random events on 2 CPUs and 3 threads.
pub fn randoms(max: usize) -> impl proptest::strategy::Strategy<Value = Vec<Random>> {
    use proptest::prelude::*;
    prop::collection::vec(
        (0..2usize, 1..4u32, 1..16u32, 0..5000u64).prop_map(|(cpu, tid, what, gap)| Random {
            cpu,
            tid,
            what,
            gap,
        }),
        0..max,
    )
}

/// Writes `randoms` into a new ring file at `path` (the clock starting at
/// 77 and advanced by each event's gap) and recovers it.
pub fn recovered(path: &Path, randoms: &[Random]) -> ringtrace_ring::file::Recovery {
    let clock = ManualClock(Arc::new(AtomicU64::new(77)));
    let ring = ring(path, clock.clone());
    for r in randoms {
        clock.advance(r.gap);
        ring.cpu_writer(r.cpu).write(&random_payload(r)).unwrap();
    }
    drop(ring);
    ringtrace_ring::file::recover(path).unwrap()
}

/// A ring file written event by event at chosen times: the clock starts
/// at 1,000,000 ticks.
pub struct Scripted {
    clock: ManualClock,
    ring: RingBuffer<ManualClock>,
}

impl Scripted {
    /// A new ring file at `path`.
    pub fn new(path: &Path) -> Scripted {
        let clock = ManualClock(Arc::new(AtomicU64::new(1_000_000)));
        let ring = ring(path, clock.clone());
        Scripted { clock, ring }
    }

    /// Writes `payload` on `cpu`, `gap` ticks after the last.
    pub fn at(&self, cpu: usize, payload: &[u8], gap: u64) {
        self.clock.advance(gap);
        self.ring.cpu_writer(cpu).write(payload).unwrap();
    }

    /// 300 page reads of thread 100 on CPU 0 (`n` 0 to 299, note
    /// `filler`), enough to wrap its ring many times over: the oldest are
    /// overwritten.
    pub fn fillers(&self) {
        for n in 0..300 {
            self.at(0, &page_read(100, n, "filler"), 1237);
        }
    }
}

/// Two page reads of thread 7 (`n` 1 and 2) in a one-CPU ring file at
/// `path` stamped by a `counter` clock, whose ticks are not time;
/// recovered.
pub fn counter_ring(path: &Path) -> ringtrace_ring::file::Recovery {
    let config = RingConfig::default()
        .cpus(1)
        .per_cpu_bytes(8192)
        .quarantine_pages(1)
        .file(path)
        .metadata(metadata().to_bytes());
    let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
    ring.cpu_writer(0).write(&page_read(7, 1, "a")).unwrap();
    ring.cpu_writer(0).write(&page_read(7, 2, "b")).unwrap();
    drop(ring);
    ringtrace_ring::file::recover(path).unwrap()
}

/// The property tests' configuration: 64 cases, no regression files.
pub fn cases() -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: 64,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}
