//! A session directory: the rings of one or more traced processes streamed
//! to disk as they run, in chunks per process and CPU, and read back.
//!
//! A recorder ([`SessionWriter`]) makes the directory, adds each process
//! ([`SessionWriter::add_process`]) and hands its drainer a
//! [`ProcessWriter`], which appends the pages drained from the ring
//! (whole, or fragments of a page still being written), the losses with
//! their cause, and the metadata records; chunks rotate by size and age,
//! and `max_size` keeps the newest. A reader ([`Session::open`]) gives
//! each process as a `ringtrace_ring::file::Recovery`, the loss entries
//! in time order, and what was rotated out. A writer killed at any moment
//! leaves a session that reads back up to its last append.
//!
//! The format, byte by byte, is docs/format.md's "The session directory".
//!
//! ```
//! use ringtrace_clock::Counter;
//! use ringtrace_ring::{RingBuffer, RingConfig};
//! use ringtrace_session::{ProcessExit, ProcessInfo, Session, SessionOptions, SessionWriter};
//!
//! let parent = std::env::temp_dir().join(format!("ringtrace-doc-lib-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&parent);
//! std::fs::create_dir(&parent)?;
//! let dir = parent.join("trace");
//!
//! // A ring, and a page drained from it.
//! let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192), Counter::new())?;
//! ring.write(b"hello")?;
//! ring.flush();
//! let page = ring.cpu_buffer(0).unwrap().read_page().unwrap();
//!
//! let session = SessionWriter::create(&dir, SessionOptions::default())?;
//! let mut process = session.add_process(ProcessInfo {
//!     pid: 1234,
//!     start: 5678,
//!     ppid: 1,
//!     comm: "demo".into(),
//!     header: ring.snapshot(Vec::new()).header,
//!     metadata: Vec::new(),
//! })?;
//! process.append_page(0, &page.bytes)?;
//! process.finish(ProcessExit::Exited(0))?;
//! session.finish()?;
//!
//! let read = Session::open(&dir)?;
//! let recovery = &read.recoveries()[0];
//! assert_eq!(recovery.merged()[0].payload, b"hello");
//! assert_eq!(read.processes()[0].exit, Some(ProcessExit::Exited(0)));
//! # std::fs::remove_dir_all(&parent)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
mod bounded;
mod chunk;
mod codec;
mod cpu_read;
mod drain;
mod error;
mod fsutil;
pub mod halves;
mod index;
mod loss;
mod open_chunk;
mod options;
pub mod pacer;
mod page;
mod process;
mod process_writer;
mod reader;
mod records;
mod shared;
mod streamed;
mod writer;

pub use drain::{Drained, Drainer};
pub use error::{CreateError, OpenError, OptionsError, ParseLossCauseError, Unwritten, WriteError};
pub use index::{Counters, RotatedOut, INDEX_VERSION};
pub use loss::{Loss, LossCause};
pub use options::{
    Compression, SessionOptions, DEFAULT_ROTATE_SIZE, MAX_ROTATE_SIZE, MIN_MAX_SIZE, ZSTD_LEVELS,
};
pub use pacer::Pacer;
pub use process::{ProcessExit, ProcessInfo};
pub use process_writer::{ProcessSummary, ProcessWriter};
pub use reader::{Session, SessionProcess, LOSS_NOT_WRITTEN, NOT_WRITTEN};
pub use records::{FileRecords, RecordSource, RingRecords};
pub use writer::{SessionSummary, SessionWriter};
