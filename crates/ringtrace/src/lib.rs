//! ringtrace: a userspace tracing engine shaped like the Linux kernel's
//! ftrace ring buffer, and the measurements it exists for.
//!
//! This facade re-exports the engine's crates and holds the measuring
//! commands' logic, so that the `ringtrace` binary only parses arguments
//! and prints:
//!
//! - [`clock`]: clock sources, protections, the irq/preempt emulation;
//! - [`ring`]: the per-CPU lock-free ring buffers;
//! - [`tracepoint`]: static keys, tracepoints, preemptirq, latency tracers;
//! - [`hammer`]: the kernel's ring_buffer_benchmark in userspace;
//! - [`trace_file`]: trace files (file rings) read back without their
//!   program: the metadata they carry, `recover` and `dump`.
//!
//! ```no_run
//! use ringtrace::hammer::{self, HammerConfig};
//! let result = hammer::run(&HammerConfig::default())?;
//! assert_eq!(result.total, result.hit);
//! # Ok::<(), ringtrace::hammer::HammerError>(())
//! ```

pub use ringtrace_clock as clock;
/// Trace files read back: the metadata, decoding, `dump` and `recover`
/// (the `ringtrace-export` crate).
pub use ringtrace_export as trace_file;
pub use ringtrace_ring as ring;
pub use ringtrace_tracepoint as tracepoint;

pub mod clocks;
pub mod hammer;
mod hammer_threads;
pub mod instrumentation;
pub mod pairs;
pub mod report;
mod report_markdown;
mod report_plot;
pub mod sched;
pub mod seed004;
pub mod spread;
pub mod tick_run;
