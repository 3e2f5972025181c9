//! Tracepoints against a real ring: off means nothing recorded and nothing
//! evaluated; on means one event per fire with the right fields.

// Under the static-keys feature keys flip only in a single-threaded
// process, and the test harness runs these tests on threads of its own, so
// they would only see ThreadsRunning. The harness-less tests/registry.rs
// and tests/dropped.rs, and examples/patched_keys.rs, run under it.
#![cfg(not(feature = "static-keys"))]

use ringtrace_clock::ClockSpec;
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracepoint::{registry, trace, tracepoint, FieldValue, TracepointError};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

tracepoint! {
    /// Fired by the off/on test.
    pub fn tp_switch(count: u32, label: &str) = "count={} label={}";
    /// Fired by the argument-evaluation test.
    pub fn tp_lazy(value: u64) = "value={}";
    /// Enabled by a glob.
    pub fn tp_glob_a(x: i32) = "x={}";
    /// Enabled by a glob.
    pub fn tp_glob_b(x: i32) = "x={}";
    /// Fired from two threads by the thread-id test.
    pub fn tp_tid(marker: u32) = "marker={}";
    /// Carries a location.
    pub fn tp_where(at: &'static std::panic::Location<'static>, ok: bool) = "at={} ok={}";
    /// Every fixed-size kind: built on the stack, written whole.
    pub fn tp_fixed(
        a: u8, b: u16, c: u32, d: u64, e: i8, f: i16, g: i32, h: i64, x: f64, ok: bool
    ) = "{} {} {} {} {} {} {} {} {} {}";
    /// No fields at all: the header alone.
    pub fn tp_empty() = "";
}

fn sink() -> &'static RingBuffer<ringtrace_clock::AnyClock> {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let clock = "counter".parse::<ClockSpec>().unwrap().build().unwrap();
        let ring = RingBuffer::new(RingConfig::default().per_cpu_bytes(256 * 1024), clock).unwrap();
        ringtrace_tracepoint::set_sink(Box::leak(Box::new(ring)))
            .expect("the first sink of this process");
    });
    ringtrace_tracepoint::sink().unwrap()
}

/// Serialises the tests that write to the shared sink. A page with an
/// open reservation is not readable yet, so a test reading while another
/// test's write is in flight on the same page would miss its own events.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The decoded events of tracepoint `event` (of this crate's system) now in the sink (not consumed,
/// so tests running side by side do not take each other's events).
fn events_of(event: &str) -> Vec<Vec<FieldValue>> {
    let ring = sink();
    ring.flush();
    (0..ring.cpus())
        .flat_map(|cpu| ring.iter(cpu).unwrap())
        .filter_map(|e| registry::decode(&e.payload).ok())
        .filter(|d| d.tracepoint.name == format!("tracepoints:{event}"))
        .map(|d| d.values)
        .collect()
}

#[test]
fn disabled_tracepoint_records_nothing_and_enabled_one_records_each_fire() {
    let _only_writer = exclusive();
    sink();
    trace!(tp_switch(1, "off"));
    assert!(events_of("tp_switch").is_empty());
    assert_eq!(registry::enable("tp_switch"), Ok(1));
    trace!(tp_switch(2, "on"));
    trace!(tp_switch(3, "on"));
    registry::disable("tp_switch").unwrap();
    trace!(tp_switch(4, "off again"));
    let got = events_of("tp_switch");
    assert_eq!(
        got,
        vec![
            vec![FieldValue::Unsigned(2), FieldValue::Str("on".into())],
            vec![FieldValue::Unsigned(3), FieldValue::Str("on".into())],
        ]
    );
}

#[test]
fn arguments_of_a_disabled_tracepoint_are_not_evaluated() {
    let _only_writer = exclusive();
    sink();
    static CALLS: AtomicU32 = AtomicU32::new(0);
    fn costly() -> u64 {
        CALLS.fetch_add(1, Ordering::SeqCst);
        42
    }
    trace!(tp_lazy(costly()));
    assert_eq!(CALLS.load(Ordering::SeqCst), 0);
    registry::enable("tp_lazy").unwrap();
    trace!(tp_lazy(costly()));
    registry::disable("tp_lazy").unwrap();
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(events_of("tp_lazy"), vec![vec![FieldValue::Unsigned(42)]]);
}

#[test]
fn listing_shows_each_tracepoint_with_its_state_and_fields() {
    registry::enable("tp_glob_*").unwrap();
    let listed = registry::list();
    let a = listed
        .iter()
        .find(|t| t.name == "tracepoints:tp_glob_a")
        .unwrap();
    let b = listed.iter().find(|t| t.event == "tp_glob_b").unwrap();
    assert!(a.enabled && b.enabled);
    assert_eq!(a.fields, vec!["x: I32"]);
    assert_eq!(a.format, "x={}");
    assert_eq!(a.system, "tracepoints", "the test crate's name");
    assert_eq!(registry::disable("tracepoints:tp_glob_*"), Ok(2));
    assert!(!registry::find("tp_glob_a").unwrap().is_enabled());
    registry::check().unwrap();
}

#[test]
fn unknown_tracepoint_name_is_an_error_listing_the_valid_ones() {
    let err = registry::enable("no_such_tracepoint").unwrap_err();
    assert!(matches!(err, TracepointError::Unknown { .. }));
    let text = err.to_string();
    assert!(
        text.contains("no_such_tracepoint")
            && text.contains("tracepoints:tp_switch")
            && text.contains("preemptirq:irq_disable"),
        "{text}"
    );
}

#[test]
fn events_render_with_the_declared_format() {
    let _only_writer = exclusive();
    sink();
    registry::enable("tp_where").unwrap();
    let here = std::panic::Location::caller();
    trace!(tp_where(here, true));
    registry::disable("tp_where").unwrap();
    let ring = sink();
    let text: Vec<String> = (0..ring.cpus())
        .flat_map(|cpu| ring.iter(cpu).unwrap())
        .filter_map(|e| registry::decode(&e.payload).ok())
        .filter(|d| d.tracepoint == &tp_where::TRACEPOINT)
        .map(|d| d.text())
        .collect();
    assert_eq!(
        text,
        vec![format!(
            "tracepoints:tp_where: at={}:{}:{} ok=true",
            here.file(),
            here.line(),
            here.column()
        )]
    );
}

#[test]
fn garbage_payloads_are_decode_errors_not_panics() {
    assert!(registry::decode(&[1, 2]).is_err());
    assert!(registry::decode(&[0xff; 4]).is_err());
    let mut cut = tp_switch::TRACEPOINT.id.to_le_bytes().to_vec();
    assert!(registry::decode(&cut).is_err()); // no thread id
    cut.extend_from_slice(&42u32.to_le_bytes());
    cut.extend_from_slice(&[7, 0]); // count cut off
    let err = registry::decode(&cut).unwrap_err().to_string();
    assert!(err.contains("count"), "{err}");
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    u32::try_from(unsafe { libc::gettid() }).unwrap()
}

#[test]
fn each_event_carries_the_id_of_the_thread_that_recorded_it() {
    let _only_writer = exclusive();
    sink();
    registry::enable("tp_tid").unwrap();
    trace!(tp_tid(1));
    let other = std::thread::spawn(|| {
        trace!(tp_tid(2));
        trace!(tp_tid(2));
        gettid()
    })
    .join()
    .unwrap();
    registry::disable("tp_tid").unwrap();
    let ring = sink();
    ring.flush();
    let mut got: Vec<(u64, u32)> = (0..ring.cpus())
        .flat_map(|cpu| ring.iter(cpu).unwrap())
        .filter_map(|e| registry::decode(&e.payload).ok())
        .filter(|d| d.tracepoint.event == "tp_tid")
        .map(|d| match d.values[..] {
            [FieldValue::Unsigned(marker)] => (marker, d.tid),
            _ => panic!("tp_tid has one u32 field: {d:?}"),
        })
        .collect();
    got.sort();
    assert_ne!(gettid(), other);
    assert_eq!(got, vec![(1, gettid()), (2, other), (2, other)]);
}

#[test]
fn fixed_size_fields_written_whole_read_back_as_fired() {
    let _only_writer = exclusive();
    sink();
    assert_eq!(registry::enable("tp_fixed"), Ok(1));
    assert_eq!(registry::enable("tp_empty"), Ok(1));
    for round in 0..3u8 {
        trace!(tp_fixed(
            round,
            0xBEEF,
            0xDEAD_BEEF,
            u64::MAX - u64::from(round),
            -1,
            i16::MIN,
            -7,
            i64::MIN + 1,
            -2.5,
            round % 2 == 0
        ));
        trace!(tp_empty());
    }
    registry::disable("tp_fixed").unwrap();
    registry::disable("tp_empty").unwrap();
    let got = events_of("tp_fixed");
    assert_eq!(got.len(), 3);
    for (round, values) in got.iter().enumerate() {
        assert_eq!(
            values,
            &vec![
                FieldValue::Unsigned(round as u64),
                FieldValue::Unsigned(0xBEEF),
                FieldValue::Unsigned(0xDEAD_BEEF),
                FieldValue::Unsigned(u64::MAX - round as u64),
                FieldValue::Signed(-1),
                FieldValue::Signed(i16::MIN.into()),
                FieldValue::Signed(-7),
                FieldValue::Signed(i64::MIN + 1),
                FieldValue::Float(-2.5),
                FieldValue::Bool(round % 2 == 0),
            ]
        );
    }
    assert_eq!(events_of("tp_empty"), vec![Vec::<FieldValue>::new(); 3]);
}
