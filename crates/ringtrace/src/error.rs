//! What can go wrong when a tracer is built, installed, read or finished.

use thiserror::Error;

/// Why a [`Tracer`](crate::Tracer) call failed. Each message names the bad
/// value and what is valid.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TracerError {
    /// The clock name is unknown, malformed, or the clock is not available
    /// on this machine.
    #[error("clock: {0}")]
    Clock(#[from] ringtrace_clock::ClockError),
    /// The ring configuration is invalid, or its file cannot be made.
    #[error("ring: {0}")]
    Config(#[from] ringtrace_ring::ConfigError),
    /// A ring is already the process-wide sink.
    #[error(transparent)]
    AlreadyInstalled(#[from] ringtrace_tracepoint::SinkAlreadySet),
    /// The program's tracepoints cannot be described: two share a name
    /// or an id (the message names both and where they are declared).
    #[error("tracepoints: {0}")]
    Tracepoints(#[from] ringtrace_tracepoint::TracepointError),
    /// Local spans already record into another ring.
    #[cfg(feature = "tracing")]
    #[error(transparent)]
    LocalSpansAlreadySet(#[from] ringtrace_tracing::LocalSpanRingAlreadySet),
    /// The trace could not be exported.
    #[error("export: {0}")]
    Export(#[from] ringtrace_export::export::ExportError),
    /// The trace could not be read back for a dump.
    #[error("dump: {0}")]
    Dump(#[from] ringtrace_export::DumpError),
    /// The trace file could not be written to disk.
    #[error("cannot write the trace file {path} to disk: {reason}")]
    Sync {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}
