//! The preemptirq tracepoints and latency tracers.
//!
//! Tracepoint keys and the sink are process-wide, so these tests take a
//! lock and run one at a time; each runs its sections on a fresh thread so
//! per-thread state starts clean.

// Under the static-keys feature keys flip only in a single-threaded
// process, and the test harness runs these tests on threads of its own, so
// they would only see ThreadsRunning. The harness-less tests/registry.rs
// and tests/dropped.rs, and examples/patched_keys.rs, run under it.
#![cfg(not(feature = "static-keys"))]

use ringtrace_clock::emulation::interrupt;
use ringtrace_clock::ClockSpec;
use ringtrace_ring::{RingBuffer, RingConfig};
use ringtrace_tracepoint::latency::{self, LatencyMode, Tracer};
use ringtrace_tracepoint::preemptirq::{self, Baseline, CallAlways, EarlyKey, Hard, Soft};
use ringtrace_tracepoint::{
    local_bh_disable, local_bh_enable, local_irq_disable, local_irq_enable,
};
use ringtrace_tracepoint::{
    local_irq_restore, local_irq_save, preempt_disable, preempt_enable, registry,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let clock = "counter".parse::<ClockSpec>().unwrap().build().unwrap();
        let ring = RingBuffer::new(RingConfig::default().per_cpu_bytes(512 * 1024), clock).unwrap();
        ringtrace_tracepoint::set_sink(Box::leak(Box::new(ring)))
            .expect("the first sink of this process");
    });
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Consumes the sink and returns (tracepoint, ip line, parent line) of the
/// preemptirq events in it.
fn drain_events() -> Vec<(&'static str, u32, u32)> {
    let ring = ringtrace_tracepoint::sink().unwrap();
    ring.flush();
    let mut out = Vec::new();
    for e in ring.merged() {
        let Ok(d) = registry::decode(&e.payload) else {
            continue;
        };
        let line = |i: usize| match &d.values[i] {
            ringtrace_tracepoint::FieldValue::Location { line, .. } => *line,
            _ => 0,
        };
        assert_eq!(d.tracepoint.system, "preemptirq");
        out.push((d.tracepoint.event, line(0), line(1)));
    }
    out
}

/// Keeps the calling thread on the CPU it is on (a refusal leaves it free
/// to move, which the tests that need it then report).
fn pin_to_current_cpu() {
    let cpu = ringtrace_ring::cpu::current_cpu();
    // SAFETY: a zeroed cpu_set_t with one CPU set is a valid mask, and the
    // call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn on_fresh_thread(f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(f).join().unwrap();
}

#[track_caller]
fn nested_irq_section<S: preemptirq::Strategy>() -> (u32, u32) {
    // disable/enable do not nest (irqs are a flag, not a count, as in the
    // kernel); save/restore do.
    let outer = line!() + 1;
    local_irq_disable!(S, Soft);
    let flags = local_irq_save!(S, Soft); // already off: no event
    let inner = local_irq_save!(S, Soft);
    local_irq_restore!(inner, S, Soft);
    local_irq_restore!(flags, S, Soft); // back to off: no event
    let end = line!() + 1;
    local_irq_enable!(S, Soft);
    (outer, end)
}

#[test]
fn tracepoints_fire_once_per_outermost_transition_with_both_locations() {
    let _g = serial();
    drain_events();
    preemptirq::set_tracepoints(true).unwrap();
    for strategy in ["call-always", "early-key"] {
        let (tx, rx) = std::sync::mpsc::channel();
        on_fresh_thread(move || {
            // line!() on the line of the call: the parent location.
            let found = match strategy {
                "call-always" => (nested_irq_section::<CallAlways>(), line!()),
                _ => (nested_irq_section::<EarlyKey>(), line!()),
            };
            tx.send(found).unwrap();
        });
        let ((disable_line, enable_line), call_line) = rx.recv().unwrap();
        let events = drain_events();
        let irq: Vec<_> = events.iter().filter(|e| e.0.starts_with("irq_")).collect();
        assert_eq!(
            irq,
            vec![
                &("irq_disable", disable_line, call_line),
                &("irq_enable", enable_line, call_line)
            ],
            "{strategy}"
        );
    }
    on_fresh_thread(|| {
        preempt_disable!(CallAlways);
        preempt_disable!(CallAlways);
        preempt_enable!(CallAlways);
        preempt_enable!(CallAlways);
        local_bh_disable!(CallAlways, Soft);
        local_bh_disable!(CallAlways, Soft);
        assert_eq!(preemptirq::softirq_count(), 2);
        local_bh_enable!(CallAlways, Soft);
        local_bh_enable!(CallAlways, Soft);
    });
    preemptirq::set_tracepoints(false).unwrap();
    let names: Vec<&str> = drain_events().iter().map(|e| e.0).collect();
    assert_eq!(
        names,
        vec![
            "preempt_disable",
            "preempt_enable",
            "softirqs_disable",
            "softirqs_enable"
        ]
    );
}

#[test]
fn nothing_is_recorded_with_the_tracepoints_off_under_any_strategy() {
    let _g = serial();
    drain_events();
    on_fresh_thread(|| {
        fn pairs<S: preemptirq::Strategy>() {
            for _ in 0..100 {
                local_irq_disable!(S, Soft);
                local_irq_enable!(S, Soft);
                let f = local_irq_save!(S, Hard);
                local_irq_restore!(f, S, Hard);
                preempt_disable!(S);
                preempt_enable!(S);
                local_bh_disable!(S, Soft);
                local_bh_enable!(S, Soft);
            }
        }
        pairs::<Baseline>();
        pairs::<CallAlways>();
        pairs::<EarlyKey>();
    });
    assert_eq!(drain_events(), vec![]);
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn irqsoff_tracer_finds_a_planted_long_section_with_its_start_and_end() {
    let _g = serial();
    latency::reset();
    latency::start(Tracer::IrqsOff, LatencyMode::Max).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    on_fresh_thread(move || {
        // On one CPU, as a kernel section with irqs off is: moved in the
        // middle (a loaded host does), its events would be on the other
        // CPU's buffer, and the snapshot of the CPU it ended on empty.
        pin_to_current_cpu();
        for _ in 0..50 {
            local_irq_disable!();
            local_irq_enable!();
        }
        let start = line!() + 1;
        local_irq_disable!();
        spin(Duration::from_millis(20));
        let end = line!() + 1;
        local_irq_enable!();
        tx.send((start, end)).unwrap();
    });
    latency::stop().unwrap();
    let (start, end) = rx.recv().unwrap();
    let worst = latency::max_sections()
        .into_iter()
        .max_by_key(|s| s.duration)
        .expect("no section measured");
    assert_eq!(worst.tracer, Tracer::IrqsOff);
    assert!(
        worst.duration >= Duration::from_millis(20),
        "{:?}",
        worst.duration
    );
    assert_eq!((worst.start.line, worst.end.line), (start, end));
    assert!(
        !worst.snapshot.is_empty(),
        "no snapshot of the CPU's events"
    );
    drain_events();
}

#[test]
fn threshold_mode_reports_only_sections_over_the_threshold() {
    let _g = serial();
    latency::reset();
    latency::start(
        Tracer::PreemptIrqsOff,
        LatencyMode::Threshold(Duration::from_millis(5)),
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    on_fresh_thread(move || {
        for _ in 0..20 {
            preempt_disable!();
            preempt_enable!();
        }
        tx.send(line!() + 1).unwrap();
        preempt_disable!();
        local_irq_disable!();
        spin(Duration::from_millis(8));
        local_irq_enable!();
        spin(Duration::from_millis(2));
        preempt_enable!(); // the combined section: about 10 ms
    });
    latency::stop().unwrap();
    let start = rx.recv().unwrap();
    let reports = latency::threshold_reports();
    // The short sections are far under 5 ms; only an OS preemption in the
    // middle of one could push it over, so look for the planted one rather
    // than count.
    let planted: Vec<_> = reports.iter().filter(|r| r.start.line == start).collect();
    assert_eq!(planted.len(), 1, "{reports:?}");
    assert!(planted[0].duration >= Duration::from_millis(10));
    assert_eq!(planted[0].tracer, Tracer::PreemptIrqsOff);
    assert!(reports
        .iter()
        .all(|r| r.duration > Duration::from_millis(5)));
    drain_events();
}

#[test]
fn soft_masking_through_the_traced_calls_defers_a_signal_to_restore() {
    let _g = serial();
    static HITS: AtomicU32 = AtomicU32::new(0);
    let signal = libc::SIGRTMIN() + 9;
    interrupt::install_irq_handler(signal, |_| {
        HITS.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    on_fresh_thread(move || {
        let flags = local_irq_save!();
        interrupt::raise_on_current_thread(signal).unwrap();
        assert_eq!(HITS.load(Ordering::SeqCst), 0, "delivered while masked");
        local_irq_restore!(flags);
        assert_eq!(HITS.load(Ordering::SeqCst), 1, "not delivered at restore");
    });
    interrupt::uninstall_irq_handler(signal).unwrap();
}

#[test]
fn unknown_tracer_name_lists_the_valid_ones() {
    let err = Tracer::parse("wakeup").unwrap_err().to_string();
    assert!(err.contains("irqsoff, preemptoff, preemptirqsoff"), "{err}");
    assert!(
        err.contains("latency tracer") && !err.contains("tracepoint"),
        "{err}"
    );
}
