//! The facade's tracer: building, recording, reading, exporting, finishing.

use ringtrace::{ExportFormat, Mode, Tracer, TracerError};
use std::path::PathBuf;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-facade-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_bad_builder_value_is_named_with_the_valid_ones() {
    let err = |b: ringtrace::TracerBuilder| b.build().unwrap_err().to_string();
    let e = err(Tracer::builder().clock("sundial"));
    assert!(
        e.contains("sundial") && e.contains("valid sources") && e.contains("tsc"),
        "{e}"
    );
    let e = err(Tracer::builder().clock("mono@sometimes"));
    assert!(
        e.contains("sometimes") && e.contains("valid protections"),
        "{e}"
    );
    let e = err(Tracer::builder().page_size(3000));
    assert!(e.contains("3000") && e.contains("power of two"), "{e}");
    let e = err(Tracer::builder().buffer_size(0));
    assert!(e.contains('0'), "{e}");
    let e = err(Tracer::builder().cpus(0));
    assert!(e.contains("cpu") || e.contains("CPU"), "{e}");
    let e = err(Tracer::builder().append(true));
    assert!(
        e.contains("file"),
        "append without a file names the fix: {e}"
    );
    let dir = temp_dir("exists");
    let path = dir.join("taken");
    std::fs::write(&path, b"not a trace").unwrap();
    let e = err(Tracer::builder().file(&path));
    assert!(e.contains("taken"), "names the file: {e}");
    let e = err(Tracer::builder().file(""));
    assert!(
        e.contains("path is empty") && e.contains("name a file"),
        "{e}"
    );
    let e = err(Tracer::builder().stream_to(""));
    assert!(
        e.contains("empty path") && e.contains("name a directory"),
        "{e}"
    );
}

#[test]
fn a_clock_can_be_given_by_name_spec_or_value() {
    let spec: ringtrace::ClockSpec = "counter".parse().unwrap();
    let by_spec = Tracer::builder()
        .clock(spec)
        .buffer_size(8192)
        .build()
        .unwrap();
    assert_eq!(by_spec.clock_info().name, "counter");
    let clock = "mono"
        .parse::<ringtrace::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let by_value = Tracer::builder()
        .clock(clock)
        .buffer_size(8192)
        .build()
        .unwrap();
    assert_eq!(by_value.clock_info().name, "mono");
    let default = Tracer::builder().buffer_size(8192).build().unwrap();
    assert_eq!(default.clock_info().name, ringtrace::DEFAULT_CLOCK);
}

#[test]
fn recorded_events_are_read_back_in_order_and_counted() {
    let tracer = Tracer::builder()
        .clock("counter")
        .cpus(1)
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    for i in 0u32..100 {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    let mut r = tracer.reserve(4).unwrap();
    r.write(&100u32.to_le_bytes());
    r.commit();
    let got: Vec<u32> = tracer
        .merged()
        .map(|e| u32::from_le_bytes(e.payload[..4].try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..=100).collect::<Vec<_>>());
    let stats = tracer.finish().unwrap();
    assert_eq!(stats.ring.hit, 101);
    assert_eq!(stats.ring.read, 101);
    assert_eq!(stats.ring.hit, stats.ring.accounted());
}

#[test]
fn a_full_discard_mode_tracer_counts_what_it_refused() {
    let tracer = Tracer::builder()
        .clock("counter")
        .cpus(1)
        .page_size(4096)
        .buffer_size(8192)
        .mode(Mode::Discard)
        .build()
        .unwrap();
    let mut refused = 0;
    for _ in 0..10_000 {
        if tracer.write(&[0u8; 64]).is_err() {
            refused += 1;
        }
    }
    let stats = tracer.stats();
    assert!(refused > 0);
    assert_eq!(stats.ring.missed, refused);
    assert_eq!(stats.ring.hit + stats.ring.missed, 10_000);
}

#[test]
fn a_file_tracer_survives_its_program_and_reads_back_with_recover() {
    let dir = temp_dir("file");
    let path = dir.join("app.trace");
    let tracer = Tracer::builder()
        .clock("mono")
        .cpus(2)
        .buffer_size(64 << 10)
        .file(&path)
        .build()
        .unwrap();
    assert_eq!(tracer.file_path(), Some(path.as_path()));
    for i in 0u64..50 {
        tracer
            .ring()
            .cpu_writer((i % 2) as usize)
            .write(&i.to_le_bytes())
            .unwrap();
    }
    let stats = tracer.finish().unwrap();
    assert_eq!(stats.ring.hit, 50);
    let recovery = ringtrace::ring::file::recover(&path).unwrap();
    assert_eq!(recovery.merged().len(), 50);
    assert!(!recovery.has_problems(), "{:?}", recovery.totals());
    // the tracepoints' descriptions are in the file
    let meta =
        ringtrace::export::TraceMetadata::parse(recovery.metadata.as_ref().unwrap()).unwrap();
    assert!(meta
        .tracepoints
        .iter()
        .any(|t| t.name.contains("irq_disable")));
}

#[test]
fn a_memory_tracer_exports_to_every_format() {
    let dir = temp_dir("export");
    let tracer = Tracer::builder()
        .clock("mono")
        .cpus(1)
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    for i in 0u64..10 {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    for format in ExportFormat::ALL.iter().copied() {
        let out = dir.join(format.name());
        let done = tracer.export(format, &out).unwrap();
        // Raw payloads have no description: a format that cannot carry
        // them says so rather than dropping them silently.
        assert!(
            done.events == 10 || !done.warnings.is_empty(),
            "{}: {done:?}",
            format.name()
        );
        assert!(std::fs::metadata(&out).is_ok(), "{}", format.name());
    }
    // exporting reads without consuming
    assert_eq!(tracer.stats().ring.entries, 10);
    let err = tracer
        .export(ExportFormat::Text, &dir.join("no/such/dir/out"))
        .unwrap_err();
    assert!(matches!(err, TracerError::Export(_)), "{err}");
}

#[test]
fn dropping_a_tracer_makes_every_committed_event_readable() {
    let tracer = Tracer::builder()
        .clock("counter")
        .cpus(1)
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    let ring = tracer.shared_ring();
    tracer.write(b"last words").unwrap();
    drop(tracer);
    let events: Vec<_> = ring.merged().collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload, b"last words");
}
