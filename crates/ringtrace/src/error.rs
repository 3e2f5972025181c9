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
    /// [`Tracer::install`](crate::Tracer::install) found a process-wide
    /// slot already set.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// The program's tracepoints cannot be described: two share a name
    /// or an id (the message names both and where they are declared).
    #[error("tracepoints: {0}")]
    Tracepoints(#[from] ringtrace_tracepoint::TracepointError),
    /// The trace could not be exported.
    #[error("export: {0}")]
    Export(#[from] ringtrace_export::export::ExportError),
    /// The trace could not be read back for a dump.
    #[error("dump: {0}")]
    Dump(#[from] ringtrace_export::DumpError),
    /// The OTLP export did not deliver everything; the error carries the
    /// counts of what was and was not delivered.
    #[cfg(feature = "otlp")]
    #[error("otlp: {0}")]
    Otlp(Box<ringtrace_otlp::OtlpError>),
    /// The Parquet export failed (nothing was left half-written).
    #[cfg(feature = "parquet")]
    #[error("parquet: {0}")]
    Parquet(#[from] ringtrace_parquet::ParquetError),
    /// A session variable set by `ringtrace record` (read by
    /// [`TracerBuilder::from_env`](crate::TracerBuilder::from_env)) holds
    /// a value that means nothing.
    #[error("the environment variable {var}={value:?} is not valid: expected {valid}")]
    Environment {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it may hold.
        valid: String,
    },
    /// The tracer's stream into a session directory could not start, or
    /// failed (the session's own error, naming the path).
    #[error("stream: {0}")]
    Stream(String),
    /// The trace file could not be written to disk.
    #[error("cannot write the trace file {path} to disk: {reason}")]
    Sync {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Why [`Tracer::install`](crate::Tracer::install) refused: a process-wide
/// slot it sets already holds a ring. Each variant names the slot and the
/// ring in it (its clock, and its file for a file ring); that ring stays.
///
/// Install checks every slot before it sets any, so when it refuses it has
/// set nothing, except in one race: a building-block setter
/// ([`ringtrace_tracepoint::set_sink`], `ringtrace_tracing::
/// set_local_span_ring`) called on another thread while `install` runs.
/// Then the slots set before the refused one stay set (a set slot is never
/// undone: events may already be recording into it), and the variant says
/// which.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The tracepoint sink ([`ringtrace_tracepoint::set_sink`]) already
    /// holds a ring. Nothing was installed: it is the first slot set.
    #[error("cannot install the tracer: {0}; nothing was installed")]
    TracepointSink(ringtrace_tracepoint::SinkAlreadySet),
    /// The local-span ring (`ringtrace_tracing::set_local_span_ring`)
    /// already holds a ring.
    #[cfg(feature = "tracing")]
    #[error(
        "cannot install the tracer: {taken}; {}",
        if *sink_installed {
            "the tracepoint sink was set to this tracer's ring before the local-span ring was found taken"
        } else {
            "nothing was installed"
        }
    )]
    LocalSpans {
        /// The ring local spans record into, set first.
        taken: ringtrace_tracing::LocalSpanRingAlreadySet,
        /// Whether this install had set the tracepoint sink before it
        /// found the slot taken (only when another thread set it directly
        /// meanwhile).
        sink_installed: bool,
    },
}

#[cfg(feature = "otlp")]
impl From<ringtrace_otlp::OtlpError> for TracerError {
    fn from(e: ringtrace_otlp::OtlpError) -> Self {
        TracerError::Otlp(Box::new(e))
    }
}
