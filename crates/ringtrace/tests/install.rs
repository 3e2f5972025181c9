//! The process-wide slots: installed once, together, never silently
//! swapped. One test in this binary, since the slots are per process.

use ringtrace::tracepoint::registry;
use ringtrace::{trace, tracepoint, InstallError, Tracer};

tracepoint! {
    /// An event of this test.
    pub fn install_probe(value: u64) = "value={}";
}

#[test]
fn a_second_install_is_refused_naming_the_slot_and_the_first_ring_keeps_recording() {
    let first = Tracer::builder()
        .clock("counter")
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    let second = Tracer::builder()
        .clock("mono")
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    assert!(!first.is_installed());
    first.install().unwrap();
    assert!(first.is_installed());

    let err = second.install().unwrap_err();
    assert!(
        matches!(err, InstallError::TracepointSink(_)),
        "the sink is the slot found taken: {err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("already installed"), "{err}");
    assert!(err.contains("tracepoint sink"), "names the slot: {err}");
    assert!(err.contains("nothing was installed"), "{err}");
    assert!(
        err.contains("counter"),
        "names the installed ring's clock: {err}"
    );
    let again = first.install().unwrap_err().to_string();
    assert!(again.contains("already installed"), "{again}");
    assert!(!second.is_installed());

    registry::enable("install_probe").unwrap();
    trace!(install_probe(7));
    #[cfg(feature = "tracing")]
    {
        let _span = ringtrace::tracing_layer::local_span!("install_span");
    }
    assert_eq!(second.stats().ring.hit, 0, "the refused ring got nothing");
    let text = first.dump(Default::default()).unwrap();
    assert!(text.contains("install_probe: value=7"), "{text}");
    #[cfg(feature = "tracing")]
    assert!(
        text.contains("tracing:local_span: span install_span"),
        "install made local spans record into the ring too: {text}"
    );

    // Dropping the installed tracer leaves its ring in place for the
    // tracepoints: later events still land, and stay readable.
    let ring = first.shared_ring();
    drop(first);
    trace!(install_probe(8));
    assert_eq!(
        ringtrace::tracepoint::sink().unwrap() as *const _,
        &*ring as *const _
    );
    let span = u64::from(cfg!(feature = "tracing"));
    assert_eq!(ring.stats().hit, 2 + span);
}
