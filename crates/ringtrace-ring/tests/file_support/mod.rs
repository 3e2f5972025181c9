//! Helpers shared by the file backend's tests: a scratch directory, the
//! shape of a small file ring, and the errors a refused file gives.
#![allow(dead_code)]

use ringtrace_clock::Clock;
use ringtrace_ring::file::{FileError, FileHeader};
use ringtrace_ring::{ConfigError, Mode, RingBuffer, RingConfig};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory of its own for one test, removed when the test passes and
/// kept (and named on stderr) when it fails, for a look at the file.
#[derive(Debug)]
pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ringtrace-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for a look", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A file ring's configuration: `cpus` buffers of `pages` pages of `page`
/// bytes, two quarantine pages and a metadata annex of 1 KiB (a small
/// file), no fixup on its own.
pub fn config(path: &Path, mode: Mode, cpus: usize, page: usize, pages: usize) -> RingConfig {
    RingConfig::default()
        .cpus(cpus)
        .page_size(page)
        .per_cpu_bytes(page * pages)
        .mode(mode)
        .quarantine_pages(2)
        .metadata_capacity(ANNEX)
        .fixup_after(None)
        .file(path)
}

/// The metadata annex of [`config`]'s rings, in bytes.
pub const ANNEX: usize = 1024;

/// The file error a ring that could not be made gave; panics if it was
/// made, or failed for another reason.
pub fn file_error<C: Clock>(made: Result<RingBuffer<C>, ConfigError>) -> FileError {
    match made {
        Ok(_) => panic!("the ring was made; an error was expected"),
        Err(ConfigError::File(e)) => e,
        Err(other) => panic!("not a file error: {other}"),
    }
}

/// Bytes of the encoded header (its checksum last), from its fields, as
/// docs/format.md lays them out.
pub fn header_len(h: &FileHeader) -> usize {
    let fixed = 8 + 4 + 4 + 5 * 4 + 13 * 8;
    let clock = 1 + h.clock.name.len() + 8 + 8 + 4 + 1 + 1 + 8;
    let writer = 8 + 8 + 4 + 1 + h.comm.len();
    fixed + clock + writer + 8 + 8
}

/// The payload length event `seq` of writer `writer` is written with:
/// 16 to 215 bytes, so that short events and long ones (over 104 bytes)
/// mix.
pub fn len_for(writer: u32, seq: u64) -> usize {
    16 + ((seq * 7 + u64::from(writer) * 13) % 200) as usize
}

/// The counter clock going on from a later reading: the child's clock, as
/// a later run of the same program would have it.
pub struct CounterFrom(pub std::sync::atomic::AtomicU64);

impl ringtrace_clock::Clock for CounterFrom {
    fn read(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
    fn info(&self) -> ringtrace_clock::ClockInfo {
        ringtrace_clock::Clock::info(&ringtrace_clock::Counter::new())
    }
}
