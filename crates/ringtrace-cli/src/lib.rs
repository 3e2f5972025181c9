//! The `ringtrace` command's measurements: what `ringtrace hammer`,
//! `pairs`, `clocks` and `report` run, so that the binary only parses
//! arguments and prints.
//!
//! This crate is the tool, with its argument parsing, progress bars, plots
//! and JSON. A program that embeds ringtrace as its tracing backend depends
//! on the `ringtrace` facade crate instead, which links none of them.
//!
//! - [`hammer`]: the kernel's ring_buffer_benchmark in userspace;
//! - [`pairs`]: what an irq disable/enable pair costs with each
//!   preemptirq instrumentation strategy;
//! - [`clocks`]: every clock source's read cost and guarantees;
//! - [`code_size`]: a function's bytes and the instructions it executes;
//! - [`record`]: `ringtrace record`, a session of traced processes streamed to disk;
//! - [`recover`]: what a recovery of a trace file found, as text or JSON;
//! - [`report`]: every patch's measurement, in one run;
//! - [`stats`]: `ringtrace stats`, the figures people ask of a trace, as tables or JSON;
//! - [`stop`]: SIGINT and SIGTERM as a graceful stop of any of them.
//!
//! ```no_run
//! use ringtrace_cli::hammer::{self, HammerConfig};
//! let result = hammer::run(&HammerConfig::default())?;
//! assert_eq!(result.total, result.hit);
//! # Ok::<(), ringtrace_cli::hammer::HammerError>(())
//! ```

pub mod clock_local;
pub mod clocks;
pub mod code_size;
pub mod finding;
pub mod fleet;
pub mod hammer;
mod hammer_threads;
pub mod instrumentation;
pub mod pairs;
pub mod record;
pub mod recover;
pub mod report;
mod report_error;
mod report_markdown;
mod report_plot;
pub mod sched;
pub mod spread;
pub mod stats;
pub mod stop;
pub mod update_run;
