//! ringtrace: a tracing engine shaped like the Linux kernel's ftrace ring
//! buffer, to embed as a program's tracing backend.
//!
//! Events go into per-CPU lock-free ring buffers, each stamped by a clock
//! chosen at run time; recording takes no lock, makes no system call and
//! allocates nothing, and is safe in a signal handler. A trace can live in
//! a file that survives a crash of the program and opens in trace-cmd,
//! Perfetto and babeltrace2.
//!
//! ```
//! use ringtrace::{Mode, Tracer};
//!
//! let tracer = Tracer::builder()
//!     .clock("mono")            // or "tsc@preempt", a ClockSpec, a Clock value
//!     .buffer_size(256 << 10)   // bytes per CPU
//!     .mode(Mode::Overwrite)
//!     .build()?;
//! tracer.write(b"hello")?;      // one event, stamped by the tracer's clock
//! let event = tracer.merged().next().unwrap();
//! assert_eq!(event.payload, b"hello");
//! let stats = tracer.finish()?;
//! assert_eq!(stats.ring.hit, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`Tracer`] and [`Tracer::builder`]: the ring, its clock, recording,
//!   readers, stats, dumps and exports; [`Tracer::install`] makes it the
//!   ring the process's tracepoints and local spans record into (once per
//!   process, one [`InstallError`] naming the slot already taken).
//! - [`tracepoint!`] declares typed tracepoints, off until enabled by name
//!   through [`tracepoint::registry`]; [`trace!`] fires one.
//! - [`clock`]: the clock sources and the irq/preempt emulation;
//!   [`ring`]: the ring itself; [`tracepoint`](mod@tracepoint): static keys, preemptirq,
//!   latency tracers; [`export`]: traces (trace files included) read
//!   back, and the exporters.
//!
//! - [`Tracer::layer`] (the `tracing` feature, on by default): a
//!   `tracing_subscriber::Layer` recording `tracing` events and spans into
//!   the tracer's ring, installed in one line beside other layers:
//!   `tracing_subscriber::registry().with(tracer.layer()).init();` (with
//!   `tracing_subscriber`'s `SubscriberExt` and `SubscriberInitExt` in
//!   scope, as [`Tracer::layer`] shows); [`tracing_layer`] has it and the
//!   fastrace-style local spans.
//!
//! The `ringtrace` command (`hammer`, `pairs`, `clocks`, `report`, `dump`,
//! `export`) is the `ringtrace-cli` crate; this crate links none of its
//! dependencies.

mod builder;
mod error;
mod session_env;
#[cfg(feature = "stream")]
mod stream;
mod tracer;

/// The README, whose Rust examples `cargo test --doc -p ringtrace`
/// compiles and runs (those marked `no_run` only compiled), so that they
/// work as shown.
#[cfg(all(doctest, feature = "tracing"))]
#[doc = include_str!("../../../README.md")]
mod readme {}

pub use builder::{ClockChoice, TracerBuilder, DEFAULT_BUFFER_SIZE, DEFAULT_CLOCK};
pub use error::{InstallError, TracerError};
pub use session_env::{
    process_start, SESSION_BUFFER_ENV, SESSION_CLOCK_ENV, SESSION_ENV, SESSION_MODE_ENV,
};
pub use tracer::{Tracer, TracerStats};

pub use ringtrace_clock as clock;
/// Traces read back and exported: the trace-file metadata, the decoder,
/// the dump, and the exporters in [`export::export`] (the
/// `ringtrace-export` crate).
pub use ringtrace_export as export;
pub use ringtrace_ring as ring;
/// Sessions: what `ringtrace record` and
/// [`TracerBuilder::stream_to`] write, and their reader (the
/// `ringtrace-session` crate; the `stream` feature, on by default).
#[cfg(feature = "stream")]
pub use ringtrace_session as session;
pub use ringtrace_tracepoint as tracepoint;
/// ringtrace as a `tracing` backend: the layer ([`Tracer::layer`]) and
/// local spans (the `ringtrace-tracing` crate; the `tracing` feature, on
/// by default).
#[cfg(feature = "tracing")]
pub use ringtrace_tracing as tracing_layer;

/// Span trees sent to an OpenTelemetry collector over OTLP/HTTP, chosen
/// after the fact by tail-sampling rules (the `ringtrace-otlp` crate; the
/// `otlp` feature).
#[cfg(feature = "otlp")]
pub use ringtrace_otlp as otlp;
/// A trace as Parquet tables for SQL engines (the `ringtrace-parquet`
/// crate; the `parquet` feature).
#[cfg(feature = "parquet")]
pub use ringtrace_parquet as parquet;

pub use ringtrace_clock::{AnyClock, Clock, ClockSpec};
pub use ringtrace_export::export::Format as ExportFormat;
pub use ringtrace_export::DumpOptions;
pub use ringtrace_ring::{Event, Mode, Reservation, ReserveError};
pub use ringtrace_tracepoint::{trace, tracepoint};
