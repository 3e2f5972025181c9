//! Helpers of the Parquet export's tests: a hand-set ns clock, a script
//! of tracepoints and `tracing` records written at chosen times into a
//! ring, and the tables read back with parquet's own row reader.
#![allow(dead_code)]

pub use ringtrace_testkit::TempDir;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use ringtrace_clock::Clock;
use ringtrace_export::{FieldDesc, TraceMetadata, TracepointDesc};
use ringtrace_ring::{Mode, RingBuffer, RingConfig};
use ringtrace_tracepoint::tracing_record::{Callsite, CallsiteKind, Level, RecordKind};
use ringtrace_tracepoint::tracing_record::{TAG_I64, TAG_STR, TAG_U64};
use ringtrace_tracepoint::{FieldKind, SourceLocation, TraceField};
use std::collections::BTreeMap;
use std::path::Path;

/// A 1 GHz clock set by hand: a tick is a ns, so times are exact.
pub type NsClock = ringtrace_clock::ManualClock;

pub const IRQ_DISABLE: u32 = 1;
pub const IRQ_ENABLE: u32 = 2;
pub const PAGE_READ: u32 = 3;

/// The tracepoints of the scripts.
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
    TraceMetadata::new(vec![
        tp(
            IRQ_DISABLE,
            "preemptirq:irq_disable",
            loc(),
            "caller={} parent={}",
        ),
        tp(
            IRQ_ENABLE,
            "preemptirq:irq_enable",
            loc(),
            "caller={} parent={}",
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
    ])
}

/// The `tracing` callsites of the scripts, by id.
pub const EVENT: u32 = 1;
pub const REQUEST: u32 = 2;
pub const DB: u32 = 3;
pub const IDLE: u32 = 4;
pub const COMPUTE: u32 = 5;
pub const FAILURE: u32 = 6;

pub fn callsites() -> Vec<Callsite> {
    let site = |id, kind, level, name: &str, fields: &[&str]| Callsite {
        id,
        kind,
        level: Level(level),
        name: name.into(),
        target: "app::db".into(),
        file: None,
        line: None,
        fields: fields.iter().map(|f| (*f).to_owned()).collect(),
    };
    vec![
        site(
            EVENT,
            CallsiteKind::Event,
            3,
            "event db.rs:9",
            &["message", "n", "code"],
        ),
        site(
            REQUEST,
            CallsiteKind::Span,
            3,
            "request",
            &["user", "traceparent"],
        ),
        site(DB, CallsiteKind::Span, 2, "db", &["query"]),
        site(IDLE, CallsiteKind::Span, 5, "idle", &[]),
        site(COMPUTE, CallsiteKind::LocalSpan, 0, "compute", &[]),
        site(
            FAILURE,
            CallsiteKind::Event,
            5,
            "event db.rs:30",
            &["message", "code"],
        ),
    ]
}

/// A field of a record: its index and value.
pub enum Value {
    Str(&'static str),
    U64(u64),
    I64(i64),
}

/// A `tracing` record's payload: kind, tid, callsite, then `rest`.
pub fn record(kind: RecordKind, tid: u32, callsite: u32, rest: &[u8]) -> Vec<u8> {
    let mut p = kind.id().to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    p.extend_from_slice(&callsite.to_le_bytes());
    p.extend_from_slice(rest);
    p
}

fn fields(values: &[(u8, Value)]) -> Vec<u8> {
    let mut out = vec![values.len() as u8];
    for (index, v) in values {
        out.push(*index);
        match v {
            Value::Str(s) => {
                out.push(TAG_STR);
                out.extend_from_slice(&(s.len() as u16).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            Value::U64(n) => {
                out.push(TAG_U64);
                out.extend_from_slice(&n.to_le_bytes());
            }
            Value::I64(n) => {
                out.push(TAG_I64);
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
    }
    out
}

pub fn event(tid: u32, callsite: u32, values: &[(u8, Value)]) -> Vec<u8> {
    record(RecordKind::Event, tid, callsite, &fields(values))
}

pub fn span_new(tid: u32, callsite: u32, id: u64, parent: u64, values: &[(u8, Value)]) -> Vec<u8> {
    let mut rest = id.to_le_bytes().to_vec();
    rest.extend_from_slice(&parent.to_le_bytes());
    rest.extend_from_slice(&fields(values));
    record(RecordKind::SpanNew, tid, callsite, &rest)
}

/// An enter, exit or close of span `id`.
pub fn span_edge(kind: RecordKind, tid: u32, callsite: u32, id: u64) -> Vec<u8> {
    record(kind, tid, callsite, &id.to_le_bytes())
}

pub fn local_span(tid: u32, start: u64) -> Vec<u8> {
    record(RecordKind::LocalSpan, tid, COMPUTE, &start.to_le_bytes())
}

fn put<T: TraceField>(p: &mut Vec<u8>, v: T) {
    v.encode(&mut |b: &[u8]| p.extend_from_slice(b));
}

/// A tracepoint's payload: id, tid, then its fields.
fn tracepoint(id: u32, tid: u32, fill: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.extend_from_slice(&tid.to_le_bytes());
    fill(&mut p);
    p
}

pub fn preemptirq(id: u32, tid: u32) -> Vec<u8> {
    let at = |line| SourceLocation {
        file: "irq.rs",
        line,
        column: 5,
    };
    tracepoint(id, tid, |p| {
        put(p, at(10));
        put(p, at(11));
    })
}

pub fn page_read(tid: u32, n: u32, note: &'static str) -> Vec<u8> {
    tracepoint(PAGE_READ, tid, |p| {
        put(p, n);
        put(p, note);
    })
}

/// The ring config of the scripts: `cpus` CPUs, the metadata, room for
/// the callsites.
pub fn config(cpus: usize, per_cpu_bytes: usize) -> RingConfig {
    RingConfig::default()
        .cpus(cpus)
        .page_size(4096)
        .per_cpu_bytes(per_cpu_bytes)
        .mode(Mode::Overwrite)
        .quarantine_pages(1)
        .fixup_after(None)
        .metadata_capacity(4096)
        .metadata(metadata().to_bytes())
}

/// A ring file at `path` stamped by a clock starting at 1,000,000 ns,
/// the callsites appended.
pub fn ring(path: &Path, cpus: usize, per_cpu_bytes: usize) -> (RingBuffer<NsClock>, NsClock) {
    let clock = NsClock::ns(1_000_000);
    let c = config(cpus, per_cpu_bytes).file(path);
    let ring = RingBuffer::new(c, clock.clone()).unwrap();
    for site in callsites() {
        ring.append_metadata(&site.to_record()).unwrap();
    }
    (ring, clock)
}

/// The W3C context the script's `request` root carries.
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The script: (CPU, ns after the last, payload). Its times, from
/// 1,000,000: see each line.
pub fn script() -> Vec<(usize, u64, Vec<u8>)> {
    use RecordKind::*;
    vec![
        (0, 100, preemptirq(IRQ_DISABLE, 10)), // 1_000_100
        (
            0,
            50,
            span_new(
                10,
                REQUEST,
                1,
                0,
                &[(0, Value::Str("ada")), (1, Value::Str(TRACEPARENT))],
            ),
        ), // 1_000_150
        (0, 50, span_edge(SpanEnter, 10, REQUEST, 1)), // 1_000_200
        (
            0,
            100,
            span_new(10, DB, 2, 1, &[(0, Value::Str("select 1"))]),
        ), // 1_000_300
        (0, 100, span_edge(SpanEnter, 10, DB, 2)), // 1_000_400
        (
            0,
            50,
            event(
                10,
                EVENT,
                &[(0, Value::Str("querying")), (1, Value::U64(7))],
            ),
        ), // 1_000_450
        (0, 50, preemptirq(IRQ_ENABLE, 10)),   // 1_000_500
        (1, 100, span_edge(SpanEnter, 11, DB, 2)), // 1_000_600
        (1, 100, span_edge(SpanExit, 11, DB, 2)), // 1_000_700
        (0, 100, span_edge(SpanExit, 10, DB, 2)), // 1_000_800
        (0, 50, span_edge(SpanClose, 10, DB, 2)), // 1_000_850
        (0, 50, page_read(10, 5, "x")),        // 1_000_900
        (0, 100, span_edge(SpanExit, 10, REQUEST, 1)), // 1_001_000
        (0, 100, span_edge(SpanClose, 10, REQUEST, 1)), // 1_001_100
        (
            1,
            100,
            event(11, FAILURE, &[(0, Value::Str("boom")), (1, Value::I64(-3))]),
        ), // 1_001_200
        (1, 100, span_new(11, IDLE, 3, 0, &[])), // 1_001_300
        (1, 100, preemptirq(IRQ_DISABLE, 11)), // 1_001_400
        (0, 100, vec![0xEE; 5]),               // 1_001_500
        (0, 100, local_span(12, 1_001_550)),   // 1_001_600
    ]
}

/// Writes the script into `ring`.
pub fn play(ring: &RingBuffer<NsClock>, clock: &NsClock) {
    for (cpu, gap, payload) in script() {
        clock.advance(gap);
        ring.cpu_writer(cpu).write(&payload).unwrap();
    }
}

/// The script in a 2-CPU ring file at `path`, recovered.
pub fn scripted_file(path: &Path) -> ringtrace_ring::file::Recovery {
    let (ring, clock) = ring(path, 2, 64 * 1024);
    play(&ring, &clock);
    drop(ring);
    ringtrace_ring::file::recover(path).unwrap()
}

/// A table read back: its rows, each column by name.
pub struct Table {
    pub rows: Vec<BTreeMap<String, Field>>,
    pub row_groups: usize,
    pub schema: String,
}

/// Reads `dir/<name>.parquet` with parquet's own reader.
pub fn read(dir: &Path, name: &str) -> Table {
    let file = std::fs::File::open(dir.join(format!("{name}.parquet"))).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let row_groups = reader.metadata().num_row_groups();
    let mut schema = Vec::new();
    parquet::schema::printer::print_schema(&mut schema, reader.metadata().file_metadata().schema());
    let rows = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| columns(&r.unwrap()))
        .collect();
    Table {
        rows,
        row_groups,
        schema: String::from_utf8(schema).unwrap(),
    }
}

fn columns(row: &Row) -> BTreeMap<String, Field> {
    row.get_column_iter()
        .map(|(name, f)| (name.clone(), f.clone()))
        .collect()
}

pub fn long(row: &BTreeMap<String, Field>, name: &str) -> i64 {
    match &row[name] {
        Field::Long(v) => *v,
        other => panic!("{name} is {other:?}"),
    }
}

pub fn int(row: &BTreeMap<String, Field>, name: &str) -> i32 {
    match &row[name] {
        Field::Int(v) => *v,
        other => panic!("{name} is {other:?}"),
    }
}

pub fn boolean(row: &BTreeMap<String, Field>, name: &str) -> bool {
    match &row[name] {
        Field::Bool(v) => *v,
        other => panic!("{name} is {other:?}"),
    }
}

/// A string column; `None` for NULL.
pub fn string(row: &BTreeMap<String, Field>, name: &str) -> Option<String> {
    match &row[name] {
        Field::Str(v) => Some(v.clone()),
        Field::Null => None,
        other => panic!("{name} is {other:?}"),
    }
}

/// A MAP column, as (key, value) pairs in order; `None` for NULL.
pub fn map(row: &BTreeMap<String, Field>, name: &str) -> Option<Vec<(String, Option<String>)>> {
    match &row[name] {
        Field::MapInternal(m) => Some(
            m.entries()
                .iter()
                .map(|(k, v)| {
                    let Field::Str(k) = k else {
                        panic!("key {k:?}")
                    };
                    let v = match v {
                        Field::Str(v) => Some(v.clone()),
                        Field::Null => None,
                        other => panic!("value {other:?}"),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Field::Null => None,
        other => panic!("{name} is {other:?}"),
    }
}

/// Drains every page the ring has into `process`'s chunks.
pub fn drain(ring: &RingBuffer<NsClock>, process: &mut ringtrace_session::ProcessWriter) {
    ring.flush();
    for cpu in 0..ring.cpu_buffers().len() {
        let buffer = ring.cpu_buffer(cpu).unwrap();
        while let Some(page) = buffer.read_page() {
            process.append_page(cpu, &page.bytes).unwrap();
        }
    }
}

/// A session directory at `dir` of one process that played the script,
/// then `fillers` page reads (thread 20, alternating CPUs, 10 ns apart),
/// drained every 50 events into small chunks; with `loss`, 3 events of
/// CPU 1 refused before the fillers, and 2 of CPU 0 written over after
/// the script.
pub fn session(dir: &Path, fillers: u32, loss: bool) {
    use ringtrace_session::{LossCause, ProcessExit, ProcessInfo, SessionOptions, SessionWriter};
    // A memory ring: the session keeps the metadata and the callsites.
    let clock = NsClock::ns(1_000_000);
    let config = RingConfig::default()
        .cpus(2)
        .page_size(4096)
        .per_cpu_bytes(256 * 1024)
        .quarantine_pages(1)
        .fixup_after(None);
    let ring = RingBuffer::new(config, clock.clone()).unwrap();
    let options = SessionOptions::default().rotate_size(16 << 10);
    let mut header = ring.snapshot(metadata().to_bytes()).header;
    (header.pid, header.comm) = (4242, "app".into());
    let session = SessionWriter::create(dir, options).unwrap();
    let mut process = session
        .add_process(ProcessInfo {
            pid: 4242,
            start: 7,
            ppid: 1,
            comm: "app".into(),
            header,
            metadata: metadata().to_bytes(),
        })
        .unwrap();
    for site in callsites() {
        process.append_metadata_record(&site.to_record()).unwrap();
    }
    play(&ring, &clock);
    drain(&ring, &mut process);
    if loss {
        process
            .append_loss(1, clock.read(), 3, LossCause::Refused)
            .unwrap();
        process
            .append_loss(0, clock.read(), 2, LossCause::Overwritten)
            .unwrap();
    }
    for n in 0..fillers {
        clock.advance(10);
        let cpu = (n % 2) as usize;
        ring.cpu_writer(cpu)
            .write(&page_read(20, n, "filler"))
            .unwrap();
        if n % 50 == 49 {
            drain(&ring, &mut process);
        }
    }
    drain(&ring, &mut process);
    process.finish(ProcessExit::Exited(0)).unwrap();
    session.finish().unwrap();
}
