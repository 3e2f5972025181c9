//! Traces read back and written for other tools. The root holds the
//! readers: the JSON metadata a file ring (a flight recorder) carries so
//! its events can be decoded without the program that wrote them
//! ([`TraceMetadata`]), the decoding ([`Decoder`], [`metadata_decoder`]),
//! and the ftrace-like text `ringtrace dump` prints ([`Dump`]), of one
//! process's file or of a [`Trace`] of several processes merged in time
//! order. The
//! exporters (trace-cmd, Chrome/Perfetto, CTF, text) are in [`export`];
//! [`text`] has what they write text with: every string from the trace
//! escaped ([`text::escape`]), times, the writer and clock in words.
//!
//! A program that records into a file ring hands the metadata to the
//! ring; a reader then needs only the file:
//!
//! ```
//! use ringtrace_ring::{file, RingBuffer, RingConfig};
//! use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
//! use ringtrace_tracepoint::{registry, trace, tracepoint};
//!
//! tracepoint! {
//!     system = app;
//!     /// A page was read.
//!     pub fn page_read(page: u64, hit: bool) = "page={} hit={}";
//! }
//!
//! let dir = std::env::temp_dir().join(format!("ringtrace-trace-file-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("app.ring");
//! let config = RingConfig::default()
//!     .cpus(1)
//!     .per_cpu_bytes(64 * 1024)
//!     .quarantine_pages(4)
//!     .file(&path)
//!     .metadata(metadata_for_tracepoints()?.to_bytes());
//! let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
//! ringtrace_tracepoint::set_sink(Box::leak(Box::new(RingBuffer::new(config, clock)?)))?;
//! registry::enable("app:page_read")?;
//! trace!(page_read(2, true));
//!
//! // Later, in another process (here the same one, the ring still open):
//! let recovery = file::recover(&path)?;
//! let dump = Dump::new(&recovery, DumpOptions::default())?;
//! let line = dump.line(dump.events()[0]);
//! assert!(line.ends_with(": app:page_read: page=2 hit=true"), "{line}");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod analysis;
mod decode;
mod dump;
pub mod export;
mod merge;
mod metadata;
pub mod spans;
mod summary;
pub mod text;
mod trace;
mod tracing_export;
mod wall;

pub use decode::{Decoded, Decoder};
pub use dump::{Dump, DumpError, DumpOptions};
pub use merge::{CausedEvent, Item};
pub use metadata::{
    metadata_for_tracepoints, EventLayout, FieldDesc, MetadataError, TraceMetadata, TracepointDesc,
    METADATA_VERSION,
};
pub use summary::{metadata_decoder, MetadataDecoder, UnusableMetadata};
pub use trace::{clocks_incomparable, Alignment, Process, Trace, TraceError, TraceEvent};
pub use wall::{WallClock, WallSource};
