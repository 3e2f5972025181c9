//! Tracers racing to install: exactly one wins, the others are told which
//! ring did. One test in this binary, since the sink is per process.

use ringtrace::Tracer;
use std::sync::Barrier;

#[test]
fn of_tracers_installed_at_once_exactly_one_becomes_the_sink() {
    let tracers: Vec<Tracer> = (0..4)
        .map(|_| {
            Tracer::builder()
                .clock("counter")
                .cpus(1)
                .buffer_size(8192)
                .build()
                .unwrap()
        })
        .collect();
    let start = Barrier::new(tracers.len());
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = tracers
            .iter()
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    t.install().map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for err in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(err.contains("already installed"), "{err}");
    }
    let winners: Vec<_> = tracers.iter().filter(|t| t.is_installed()).collect();
    assert_eq!(winners.len(), 1);
    // The losers' rings were given back: dropping them frees them (no
    // strong count leaked by a refused install).
    for t in tracers.iter().filter(|t| !t.is_installed()) {
        assert_eq!(std::sync::Arc::strong_count(&t.shared_ring()), 2);
    }
}
