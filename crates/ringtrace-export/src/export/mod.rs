//! `ringtrace export`: a recovered trace written in another tool's format.
//!
//! Every exporter takes a [`Trace`]: one [`Recovery`] (a file ring read
//! back, see [`ringtrace_ring::file::recover`]) or several, one per
//! process, merged in time order ([`export_trace`]); and writes its output through
//! [`output`], so that a failure leaves no half-written file. Where the
//! ring lost or overwrote events, each format says so in its own way (see
//! docs/export.md).

pub mod chrome;
mod ctf;
mod guard;
pub mod interrupt;
pub mod output;
mod perfetto;
pub mod stale;
mod trace_cmd;

use crate::dump::{Dump, DumpError, DumpOptions};
use crate::trace::Trace;
pub use guard::{session_holding, RingTarget};
use ringtrace_ring::file::Recovery;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The formats `ringtrace export --format` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// `ringtrace dump`'s text: ftrace's lines.
    Text,
    /// A trace-cmd `trace.dat` (version 6): `trace-cmd report -i FILE`
    /// reads it.
    TraceCmd,
    /// The Chrome trace-event JSON that Perfetto UI and chrome://tracing
    /// open (see [`chrome`]).
    Chrome,
    /// A CTF 1.8 trace directory, as babeltrace2 and Trace Compass read
    /// it.
    Ctf,
    /// Perfetto's own protobuf trace, which ui.perfetto.dev and the trace
    /// processor open: tracks per process and thread, interned names,
    /// typed arguments, a clock snapshot (see `docs/export.md`).
    Perfetto,
}

impl Format {
    /// Every format, as `--format` names them.
    pub const ALL: &'static [Format] = &[
        Format::Text,
        Format::TraceCmd,
        Format::Chrome,
        Format::Ctf,
        Format::Perfetto,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::TraceCmd => "trace-cmd",
            Format::Chrome => "chrome",
            Format::Ctf => "ctf",
            Format::Perfetto => "perfetto",
        }
    }

    /// Parses a `--format` name.
    ///
    /// ```
    /// use ringtrace_export::export::Format;
    /// assert_eq!(Format::parse("text").unwrap(), Format::Text);
    /// assert_eq!(Format::parse("chrome").unwrap(), Format::Chrome);
    /// assert!(Format::parse("pdf").unwrap_err().to_string().contains("text"));
    /// ```
    pub fn parse(name: &str) -> Result<Format, ExportError> {
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.name() == name)
            .ok_or_else(|| ExportError::UnknownFormat {
                given: name.to_owned(),
                valid: Format::ALL
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportSummary {
    /// The output.
    pub path: PathBuf,
    /// Events written.
    pub events: u64,
    /// Events the output marks as lost or overwritten.
    pub lost: u64,
    /// What the output could not carry (events left out, values cut), in
    /// words; empty when it carries everything.
    pub warnings: Vec<String>,
}

/// Why an export failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A `--format` that does not exist.
    #[error("unknown export format `{given}`; valid formats: {valid}")]
    UnknownFormat {
        /// What was asked for.
        given: String,
        /// The formats there are.
        valid: String,
    },
    /// The output could not be written.
    #[error("cannot write {}: {reason}", path.display())]
    Output {
        /// The output asked for.
        path: PathBuf,
        /// Why.
        reason: String,
        /// The kind of the I/O error that stopped it, where one did: a
        /// closed pipe (`-o -` into `| head`) is `BrokenPipe`.
        kind: Option<std::io::ErrorKind>,
    },
    /// The output leads to a ring file, which an export never replaces.
    #[error("refusing to export to {}: {why}", path.display())]
    RingFile {
        /// The output asked for.
        path: PathBuf,
        /// Which ring file it leads to.
        why: RingTarget,
    },
    /// The trace cannot be put in this format.
    #[error("{0}")]
    Unsupported(String),
    /// The dump options do not fit the trace.
    #[error(transparent)]
    Dump(#[from] DumpError),
}

impl ExportError {
    /// The output failed with `e`.
    pub(crate) fn io(path: &Path, e: &std::io::Error) -> Self {
        ExportError::Output {
            path: path.to_owned(),
            reason: e.to_string(),
            kind: Some(e.kind()),
        }
    }

    /// The output is refused for `reason`, with no I/O error behind it.
    pub(crate) fn refused(path: &Path, reason: impl Into<String>) -> Self {
        ExportError::Output {
            path: path.to_owned(),
            reason: reason.into(),
            kind: None,
        }
    }

    /// Whether the output was a pipe whose reader had gone: what a shell
    /// reports as a program killed by SIGPIPE, not a failure to report.
    pub fn is_closed_pipe(&self) -> bool {
        matches!(
            self,
            ExportError::Output {
                kind: Some(std::io::ErrorKind::BrokenPipe),
                ..
            }
        )
    }
}

/// Writes `recovery` to `out` in `format`.
///
/// `out` is refused ([`ExportError::RingFile`]) when it leads, through any
/// name or link, to a ring file: the one `recovery` was read from, one a
/// ring of this process has open, or any other (it starts with
/// [`MAGIC`](ringtrace_ring::file::MAGIC)). Remove a ring file first to
/// replace it.
///
/// ```
/// use ringtrace_export::export::{export, ExportError, Format};
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-export-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("app.ring");
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path);
/// let ring = RingBuffer::new(config, ringtrace_clock::Counter::new())?;
/// ring.write(b"kept")?;
/// let trace = ring.snapshot(Vec::new());
/// let err = export(&trace, Format::Text, &path).unwrap_err();
/// assert!(matches!(err, ExportError::RingFile { .. }), "{err}");
/// export(&trace, Format::Text, &dir.join("app.txt"))?;
/// assert_eq!(file::recover(&path)?.merged()[0].payload, b"kept");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export(
    recovery: &Recovery,
    format: Format,
    out: &Path,
) -> Result<ExportSummary, ExportError> {
    export_trace(&Trace::single(recovery), format, out)
}

/// Writes a trace of one or more processes to `out` in `format`: every
/// process's events decoded by its own metadata, merged in time order,
/// each shown with its process's pid and command name (docs/export.md
/// says how each format shows them). With one process, exactly what
/// [`export`] writes.
///
/// `out` is refused as [`export`] refuses it, for the ring file of every
/// process. Under [`Alignment::WallClock`](crate::Alignment::WallClock)
/// the summary's warnings say that times were aligned.
///
/// ```
/// use ringtrace_export::export::{export_trace, Format};
/// use ringtrace_export::{Alignment, Trace};
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-export-trace-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?;
/// let mut recoveries = Vec::new();
/// for name in ["a.ring", "b.ring"] {
///     let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(dir.join(name));
///     let ring = RingBuffer::new(config, clock.build()?)?;
///     ring.write(name.as_bytes())?;
///     drop(ring);
///     recoveries.push(file::recover(dir.join(name))?);
/// }
/// let trace = Trace::new(&recoveries, Alignment::SharedClock)?;
/// let done = export_trace(&trace, Format::Chrome, &dir.join("both.json"))?;
/// assert_eq!(done.events, 2);
/// assert!(export_trace(&trace, Format::Text, &dir.join("b.ring")).is_err());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export_trace(
    trace: &Trace<'_>,
    format: Format,
    out: &Path,
) -> Result<ExportSummary, ExportError> {
    for p in trace.processes() {
        guard::refuse_ring_target(p.recovery, out)?;
    }
    if trace.is_streamed() && format != Format::Perfetto {
        // Only the Perfetto export streams: the others read every event
        // into memory first.
        let held = trace.materialized();
        let whole = Trace::new(&held, trace.alignment())
            .map_err(|e| ExportError::Unsupported(e.to_string()))?;
        return export_trace(&whole, format, out);
    }
    let mut done = match format {
        Format::Text => text(trace, out),
        Format::TraceCmd => trace_cmd::write(trace, out),
        Format::Chrome => chrome::export(trace, out),
        Format::Ctf => ctf::write(trace, out),
        Format::Perfetto => perfetto::export(trace, out),
    }?;
    done.warnings.extend(trace.alignment_notes());
    Ok(done)
}

/// The text format: `ringtrace dump`'s output, `#` lines included.
fn text(trace: &Trace<'_>, out: &Path) -> Result<ExportSummary, ExportError> {
    let dump = Dump::for_trace(trace.clone(), DumpOptions::default())?;
    let events = dump.events();
    // Losses marked on the events after them, and, as the Chrome export
    // counts them, those no event carries (`CpuRecovery::unplaced`: a CPU
    // with no event, refused writes, losses after a CPU's last event; the
    // `#` lines state them).
    let lost = events.iter().map(|e| e.lost_before).sum::<u64>()
        + trace
            .processes()
            .iter()
            .flat_map(|p| &p.recovery.cpus)
            .map(|c| c.unplaced().total())
            .sum::<u64>();
    let failed = |e: std::io::Error| ExportError::io(out, &e);
    output::write_file(out, |w| {
        for line in dump.comments() {
            writeln!(w, "{line}").map_err(failed)?;
        }
        for e in &events {
            writeln!(w, "{}", dump.line(e)).map_err(failed)?;
        }
        Ok(())
    })?;
    Ok(ExportSummary {
        path: out.to_owned(),
        events: events.len() as u64,
        lost,
        warnings: Vec::new(),
    })
}
