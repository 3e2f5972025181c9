//! Tracepoints for ringtrace: static keys, typed tracepoints recorded into
//! the ring, and per-CPU event counters.
//!
//! - [`StaticKey`]: what a disabled tracepoint costs (a relaxed load and a
//!   branch not taken), with opt-in code patching (`static-keys` feature).
//! - [`tracepoint!`] declares tracepoints with typed fields and a text
//!   format; [`trace!`] fires one, evaluating its arguments only when it is
//!   enabled; [`registry`] lists them and turns them on and off by name.
//!   Events go to the ring set with [`set_sink`]; [`registry::decode`] turns
//!   them back into fields and text.
//! - [`EventCounters`]: the kernel's lock_events in userspace, with the
//!   DEBUG_PREEMPT check as an opt-in.
//!
//! ```
//! use ringtrace_clock::ClockSpec;
//! use ringtrace_ring::{RingBuffer, RingConfig};
//! use ringtrace_tracepoint::{registry, trace, tracepoint};
//!
//! tracepoint! {
//!     /// A page was read.
//!     pub fn page_read(page: u64, hit: bool) = "page={} hit={}";
//! }
//!
//! let clock = "mono".parse::<ClockSpec>()?.build()?;
//! let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(64 * 1024), clock)?;
//! ringtrace_tracepoint::set_sink(Box::leak(Box::new(ring)))?;
//!
//! trace!(page_read(1, false)); // off: nothing recorded
//! registry::enable("page_read")?; // or its full name, "<crate>:page_read"
//! trace!(page_read(2, true));
//!
//! let ring = ringtrace_tracepoint::sink().unwrap();
//! let event = ring.merged().next().unwrap();
//! let decoded = registry::decode(&event.payload)?;
//! assert_eq!(decoded.tracepoint.event, "page_read");
//! assert_eq!(decoded.text(), format!("{}: page=2 hit=true", page_read::TRACEPOINT.name));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod counters;
mod field;
pub mod latency;
mod location;
mod macros;
pub mod preemptirq;
pub mod registry;
mod sink;
mod static_key;
mod tracepoint;
pub mod tracing_record;

pub use counters::{CounterSum, EventCounters, PreemptViolations};
pub use field::{decode_field, render, FieldKind, FieldValue, TraceField};
pub use location::SourceLocation;
pub use registry::TracepointError;
pub use sink::{
    dropped, dropped_by_cause, forget_thread_ids_in_fork_children, set_sink, sink, thread_id,
    Dropped, SinkAlreadySet, EVENT_HEADER_LEN,
};
pub use static_key::StaticKey;
pub use tracepoint::{fnv1a, Field, KeyHandle, Tracepoint, TracepointNames, RESERVED_IDS};

/// What the macros need from this crate's dependencies. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::field::fixed_len;
    pub use crate::registry::Registered;
    pub use crate::sink::{record, record_whole, EVENT_HEADER_LEN};
    pub use inventory;
    #[cfg(feature = "static-keys")]
    pub use static_keys;
}
