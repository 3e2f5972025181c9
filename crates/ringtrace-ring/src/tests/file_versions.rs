//! A ring file of an older format version: recovered, and refused for
//! appending.

use crate::file::{recover_bytes, FileError};
use crate::{ConfigError, RingBuffer, RingConfig};
use ringtrace_clock::Counter;

#[test]
#[cfg_attr(miri, ignore = "creates and maps a file")]
fn a_version_1_file_recovers_without_records_and_is_not_appended_to() {
    let dir = std::env::temp_dir().join(format!("ringtrace-v1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("v1.ring");
    let _ = std::fs::remove_file(&path);
    let config = || {
        RingConfig::default()
            .cpus(1)
            .page_size(1024)
            .per_cpu_bytes(4096)
            .quarantine_pages(1)
            .metadata_capacity(0)
            .file(&path)
    };
    let ring = RingBuffer::new(config(), Counter::new()).unwrap();
    ring.cpu_writer(0).write(b"old").unwrap();
    drop(ring);
    // The same file as version 1 wrote it: 11 layout words, no annex.
    let mut bytes = std::fs::read(&path).unwrap();
    let mut header = recover_bytes("v2", bytes.clone()).unwrap().header;
    header.version = 1;
    let encoded = header.encode();
    bytes[..crate::file::layout::STATUS_OFFSET].fill(0);
    bytes[..encoded.len()].copy_from_slice(&encoded);
    let old = recover_bytes("v1", bytes.clone()).unwrap();
    assert_eq!(old.header, header);
    assert!(!old.has_problems(), "{:?}", old.cpus[0].problems);
    assert_eq!(old.merged()[0].payload, b"old");
    assert!(old.metadata_records().is_empty());
    std::fs::write(&path, &bytes).unwrap();
    match RingBuffer::new(config().append(true), Counter::new()) {
        Err(ConfigError::File(FileError::Mismatch { what, .. })) => {
            assert!(what.contains("format version 1"), "{what}");
            assert!(what.contains("start a new file"), "{what}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
