//! Trace files (flight recorders) read back without the program that wrote
//! them: the JSON metadata a file ring carries so its events can be
//! decoded ([`TraceMetadata`]) and the decoding ([`Decoder`]).
//!
//! A program that records into a file ring hands the metadata to the
//! ring; a reader then needs only the file:
//!
//! ```
//! use ringtrace::ring::{file, RingBuffer, RingConfig};
//! use ringtrace::trace_file::{metadata_for_tracepoints, Decoder, TraceMetadata};
//! use ringtrace::tracepoint::{registry, trace, tracepoint};
//!
//! tracepoint! {
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
//!     .metadata(metadata_for_tracepoints().to_bytes());
//! let clock = "mono".parse::<ringtrace::clock::ClockSpec>()?.build()?;
//! ringtrace::tracepoint::set_sink(Box::leak(Box::new(RingBuffer::new(config, clock)?)));
//! registry::enable("page_read")?;
//! trace!(page_read(2, true));
//!
//! // Later, in another process (here the same one, the ring still open):
//! let recovery = file::recover(&path)?;
//! let decoder = Decoder::new(&TraceMetadata::parse(recovery.metadata.as_ref().map_err(|e| e.clone())?)?);
//! let event = decoder.decode(&recovery.merged()[0].payload);
//! assert_eq!((event.name(), event.text()), (Some("page_read"), "page=2 hit=true".to_owned()));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod decode;
mod metadata;
mod time;

pub use decode::{render, Decoded, Decoder};
pub use metadata::{
    kind_name, metadata_for_tracepoints, EventLayout, FieldDesc, MetadataError, TraceMetadata,
    TracepointDesc, METADATA_VERSION,
};
pub use time::{seconds, utc_time};
