//! A program with two tracepoints of one name: the tracer refuses to
//! describe its events (they could not be told apart) with an error naming
//! both declarations, instead of writing metadata no reader accepts.

use ringtrace::tracepoint::TracepointError;
use ringtrace::{Tracer, TracerError};

mod one {
    ringtrace::tracepoint! {
        /// Declared here and in `other`.
        pub fn clash(v: u32) = "v={}";
    }
}

mod other {
    ringtrace::tracepoint! {
        /// Declared here and in `one`.
        pub fn clash(v: u32) = "v={}";
    }
}

#[test]
fn dump_export_and_a_file_ring_refuse_a_program_with_a_duplicate_name() {
    let tracer = Tracer::builder()
        .clock("counter")
        .buffer_size(64 << 10)
        .build()
        .unwrap();
    let err = tracer.dump(Default::default()).unwrap_err();
    let TracerError::Tracepoints(TracepointError::Duplicate {
        name,
        first,
        second,
    }) = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*name, "duplicates:clash");
    assert_eq!(
        (*first, *second),
        (
            one::clash::TRACEPOINT.declared_at,
            other::clash::TRACEPOINT.declared_at
        )
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("{}:{}", first.file, first.line))
            && text.contains(&format!("{}:{}", second.file, second.line)),
        "{text}"
    );

    let dir = std::env::temp_dir().join(format!("ringtrace-duplicates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exported = tracer.export(ringtrace::ExportFormat::Chrome, &dir.join("t.json"));
    assert!(matches!(exported, Err(TracerError::Tracepoints(_))));
    let file = Tracer::builder()
        .clock("counter")
        .buffer_size(64 << 10)
        .file(dir.join("t.ring"))
        .build();
    assert!(matches!(file, Err(TracerError::Tracepoints(_))));
    assert!(!dir.join("t.ring").exists(), "nothing made");
    std::fs::remove_dir_all(&dir).unwrap();
}
