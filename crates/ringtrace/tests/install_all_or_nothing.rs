//! An install that finds one slot taken sets none: the local-span ring set
//! first by its building block leaves the tracepoint sink empty. One test in
//! this binary, since the slots are per process.
#![cfg(feature = "tracing")]

use ringtrace::{InstallError, Tracer};

#[test]
fn an_install_refused_by_the_local_span_slot_sets_no_slot() {
    let spans = Tracer::builder()
        .clock("counter")
        .cpus(1)
        .buffer_size(8192)
        .build()
        .unwrap();
    ringtrace::tracing_layer::set_local_span_ring(spans.shared_ring()).unwrap();

    let tracer = Tracer::builder()
        .clock("mono")
        .cpus(1)
        .buffer_size(8192)
        .build()
        .unwrap();
    let err = tracer.install().unwrap_err();
    let InstallError::LocalSpans {
        taken,
        sink_installed,
    } = &err
    else {
        panic!("the local-span slot is the one taken: {err:?}");
    };
    assert_eq!(taken.clock, "counter", "names the ring set first");
    assert!(!sink_installed);
    let text = err.to_string();
    assert!(text.contains("local spans already record"), "{text}");
    assert!(text.contains("nothing was installed"), "{text}");

    assert!(ringtrace::tracepoint::sink().is_none(), "no slot was set");
    assert!(!tracer.is_installed());
    // The refused tracer holds its ring alone: no count was leaked.
    assert_eq!(std::sync::Arc::strong_count(&tracer.shared_ring()), 2);
}
