//! ringtrace as a backend for the `tracing` crate: [`RingSubscriber`], a
//! `tracing::Subscriber` of its own for programs that record only into
//! ringtrace; [`RingLayer`], a `tracing_subscriber::Layer` that records
//! the same into a ringtrace ring beside other layers; and
//! fastrace-style [local spans](local_span!).
//!
//! The subscriber, installed alone (`ringtrace::Tracer::subscriber`
//! makes it for a tracer's ring), is the cheaper: it does without the
//! registry's span slab and reference counts, and filters by level and
//! target in `RUST_LOG` syntax:
//!
//! ```
//! # let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
//! # let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(
//! #     ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(64 << 10), clock)?);
//! let subscriber = ringtrace_tracing::RingSubscriber::builder(ring.clone())
//!     .filter("info")
//!     .filter_from_env("RUST_LOG")
//!     .build()?;
//! tracing::subscriber::set_global_default(subscriber)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The layer composes with fmt, `EnvFilter` and any other layer, in one
//! line beside them (`ringtrace::Tracer::layer` makes the layer for a
//! tracer's ring):
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//! # let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
//! # let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(
//! #     ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(64 << 10), clock)?);
//! let layer = ringtrace_tracing::RingLayer::new(ring.clone());
//! tracing_subscriber::registry().with(layer).init();
//!
//! let span = tracing::info_span!("load", page = 3u64);
//! span.in_scope(|| tracing::warn!(bytes = 4096, "slow read"));
//! drop(span);
//! assert_eq!(ring.stats().hit, 5); // new, enter, the event, exit, close
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is recorded
//!
//! - Events: the callsite's id, the thread's id and each field's value.
//! - Spans: creation (id, parent, fields), values recorded later, enter,
//!   exit and close, and `follows_from` links. A span keeps its id from
//!   creation to close whichever threads enter it (an async task's span
//!   moving between a runtime's workers), so a reader rebuilds each task's
//!   life from its records. An installed layer remembers each span's
//!   callsite from its creation, so an enter or exit does not look the
//!   span up in the registry.
//! - Each callsite's metadata (name, target, level, file, line, field
//!   names) once, in the ring's metadata annex: in the file's header area
//!   for a file ring, where `ringtrace dump`, `ringtrace recover` and the
//!   exporters find it.
//!
//! Recording allocates nothing and takes no lock once a callsite is
//! described (the first record of each callsite describes it, which
//! allocates once): a record's fields are visited once, into a buffer of
//! 256 bytes on the stack, and the record goes into the ring in one
//! whole-event write. Integers, floats and bools are written as 8 (or 1)
//! bytes, no formatting. Strings and `Debug` renderings are cut at the
//! [string limit](RingLayerBuilder::string_limit)
//! ([`DEFAULT_STRING_LIMIT`], 256 bytes, by default) at a character
//! boundary, and marked cut: readers show `…[cut]` after them. A record
//! too large for the stack buffer is visited again in two passes, one
//! to measure it and one to write it into a reservation of that size
//! (a `Debug` value is then rendered again).
//!
//! The wire format is ringtrace-tracepoint's `tracing_record` module, shared
//! with the readers.
//!
//! # Filtering
//!
//! The layer is an ordinary layer: `EnvFilter` before it in the stack, or
//! a per-layer filter (`layer.with_filter(EnvFilter::new("warn"))`),
//! decides what reaches it.
//!
//! # Local spans
//!
//! [`local_span!`] records a span of a thread's time named by a static
//! string, without the `tracing` dispatcher: a clock read when it begins
//! and one ring record, with its start, when it ends; nothing else. They record into the ring set by
//! [`set_local_span_ring`], once per process.

mod callsites;
mod encode;
mod forks;
mod layer;
mod local_span;
mod one_pass;
mod recorder;
mod span_namespace;
mod span_sites;
mod stats;
mod subscriber;
mod thread_exit;

pub use layer::{
    LayerConfigError, RingLayer, RingLayerBuilder, DEFAULT_CALLSITE_CAPACITY, DEFAULT_STRING_LIMIT,
    MAX_STRING_LIMIT,
};
pub use local_span::{
    local_span_ring, local_span_stats, set_local_span_ring, LocalSpan, LocalSpanRingAlreadySet,
    LocalSpanSite, LocalSpanStats,
};
pub use ringtrace_tracepoint::tracing_record::CUT_MARK;
pub use stats::LayerStats;
pub use subscriber::{FilterError, RingSubscriber, RingSubscriberBuilder, SubscriberConfigError};
