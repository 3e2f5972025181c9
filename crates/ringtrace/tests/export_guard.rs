//! An export never replaces a ring file: the tracer's own live one, another
//! tracer's, a closed one, or one reached through a symbolic link.

use ringtrace::export::export::{ExportError, RingTarget};
use ringtrace::{ExportFormat, Tracer, TracerError};
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringtrace-facade-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn file_tracer(path: &Path, events: u64) -> Tracer {
    let tracer = Tracer::builder()
        .clock("mono")
        .cpus(1)
        .buffer_size(64 << 10)
        .file(path)
        .build()
        .unwrap();
    for i in 0..events {
        tracer.write(&i.to_le_bytes()).unwrap();
    }
    tracer
}

/// What `recover` reads back from `path`: every event's payload.
fn recovered(path: &Path) -> Vec<Vec<u8>> {
    let recovery = ringtrace::ring::file::recover(path)
        .unwrap_or_else(|e| panic!("{} no longer recovers: {e}", path.display()));
    recovery
        .merged()
        .into_iter()
        .map(|e| e.payload.clone())
        .collect()
}

/// `tracer.export(format, out)` fails, in every format, as `expect` says.
fn refused_in_every_format(tracer: &Tracer, out: &Path, expect: impl Fn(&RingTarget) -> bool) {
    for format in ExportFormat::ALL.iter().copied() {
        match tracer.export(format, out) {
            Err(TracerError::Export(ExportError::RingFile { path, why })) => {
                assert_eq!(path, out, "{}", format.name());
                assert!(
                    expect(&why),
                    "{} to {}: {why:?}",
                    format.name(),
                    out.display()
                );
            }
            other => panic!(
                "{} to {}: not refused: {other:?}",
                format.name(),
                out.display()
            ),
        }
    }
}

#[test]
fn an_export_never_replaces_a_ring_file_live_closed_or_linked() {
    let dir = temp_dir("export-guard");
    let own = dir.join("own.ring");
    let tracer = file_tracer(&own, 10);
    let other_live = dir.join("other-live.ring");
    let other = file_tracer(&other_live, 3);
    let closed = dir.join("closed.ring");
    file_tracer(&closed, 5).finish().unwrap();
    let memory = Tracer::builder().cpus(1).buffer_size(8192).build().unwrap();
    memory.write(b"in memory").unwrap();
    std::os::unix::fs::symlink(&own, dir.join("own.link")).unwrap();
    std::os::unix::fs::symlink("closed.ring", dir.join("closed.link")).unwrap();
    let before = [recovered(&own), recovered(&other_live), recovered(&closed)];
    assert_eq!(before.iter().map(Vec::len).collect::<Vec<_>>(), [10, 3, 5]);

    let live = |ring: &Path| {
        let ring = std::fs::canonicalize(ring).unwrap();
        move |why: &RingTarget| matches!(why, RingTarget::Live { ring: r } if *r == ring)
    };
    let magic = |why: &RingTarget| matches!(why, RingTarget::RingFile { .. });
    // The tracer's own live file, by its name and through a link.
    refused_in_every_format(&tracer, &own, live(&own));
    refused_in_every_format(&tracer, &dir.join("own.link"), live(&own));
    // Another live tracer's file, from a file tracer and a memory one.
    refused_in_every_format(&tracer, &other_live, live(&other_live));
    refused_in_every_format(&memory, &own, live(&own));
    // A ring file nothing has open, by its name and through a relative link.
    refused_in_every_format(&tracer, &closed, magic);
    refused_in_every_format(&memory, &dir.join("closed.link"), magic);
    let message = tracer
        .export(ExportFormat::Text, &closed)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("closed.ring") && message.contains("is a ring file"),
        "{message}"
    );

    assert_eq!(
        [recovered(&own), recovered(&other_live), recovered(&closed)],
        before,
        "a refused export changed a ring file"
    );
    assert!(std::fs::symlink_metadata(dir.join("own.link"))
        .unwrap()
        .file_type()
        .is_symlink());
    // A new path is written, in every format.
    for format in ExportFormat::ALL.iter().copied() {
        let out = dir.join(format!("out.{}", format.name()));
        let done = tracer.export(format, &out).unwrap();
        assert_eq!(done.path, out);
        assert!(std::fs::metadata(&out).is_ok(), "{}", format.name());
    }
    drop(other);
    // Once its tracer is gone the file is an ordinary ring file: still
    // refused, by its magic.
    refused_in_every_format(&tracer, &other_live, magic);
    assert_eq!(recovered(&other_live), before[1]);
    drop(tracer);
    std::fs::remove_dir_all(&dir).unwrap();
}
