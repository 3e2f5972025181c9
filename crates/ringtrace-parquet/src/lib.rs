//! ringtrace traces as Parquet tables, for SQL engines (DuckDB,
//! ClickHouse, Spark, pandas): [`write_parquet`] writes a [`Trace`] (ring
//! files, or a session read whole or streamed) as a directory of five
//! tables.
//!
//! Every table starts with the same three columns: `host` (STRING, the
//! [`ParquetOptions::host`]), `pid` (INT64) and `comm` (STRING, the
//! process's command name). Times are INT64 ns: `*_ns` on the trace's
//! timeline (its clock's ticks in ns; ticks as they are for a clock whose
//! ticks are not time), `*unix_ns` since the Unix epoch (by
//! [`Trace::wall_clock`](ringtrace_export::Trace::wall_clock)). Nullable
//! columns are OPTIONAL; `fields` is a MAP<STRING, STRING> (the standard
//! layout), each value shown as `Display` shows it.
//!
//! `events.parquet`: every event but `tracing` span records, in time order.
//! - `tid` INT64: the thread that recorded it (the pid for untagged and raw events)
//! - `cpu` INT32: the CPU buffer it was read from
//! - `time_ns`, `unix_ns` INT64: when
//! - `kind` STRING: `tracepoint`, `event` (a `tracing` event), `untagged` or `raw`
//! - `name` STRING: the tracepoint's (`sched:sched_switch`), the event's message (or its callsite's name), the layout's, or `raw`
//! - `level` STRING NULL: `TRACE` to `ERROR`, for `tracing` events
//! - `target` STRING NULL: the `tracing` event's target
//! - `fields` MAP: its fields (a `tracing` event's but the message that names it); a raw one's `raw` (hex) and `why`
//! - `lost_before` INT64: events of its CPU buffer lost just before it
//!
//! `spans.parquet`: each `tracing` span, rows of a row group by start.
//! - `trace_id` STRING: 32 hex digits, its tree's (a W3C `traceparent` its root carries, else made from the root)
//! - `span_id` STRING: 16 hex digits, its uid (the same each time the trace is read)
//! - `parent_span_id` STRING NULL: its parent's; a root's remote parent from its `traceparent`
//! - `name`, `target` STRING; `level` STRING NULL (NULL for a local span)
//! - `tid` INT64: the thread that created it
//! - `threads` INT32: the threads that entered it; `task` BOOLEAN: more than one did
//! - `start_ns`, `end_ns`, `duration_ns` INT64: its life (to the trace's end when unclosed)
//! - `busy_ns` INT64: time threads were inside it, summed
//! - `start_unix_ns`, `end_unix_ns` INT64
//! - `closed` BOOLEAN: its close is in the trace
//! - `error` BOOLEAN: level ERROR, a truthy `error` field or an ERROR event inside it
//! - `local` BOOLEAN: a local span (`local_span!`)
//! - `events` INT64: `tracing` events recorded inside it
//! - `fields` MAP: its fields, later records replacing earlier values
//!
//! `losses.parquet`: events lost, as the Perfetto and Chrome exports count them.
//! - `cpu` INT32: the CPU buffer that lost them
//! - `time_ns`, `unix_ns` INT64: the event after them, or the trace's start for a buffer with no event left
//! - `count` INT64: how many
//! - `cause` STRING: the cause a session read whole records (`refused`, `overwritten`, ...), `lost` where none is recorded, `overwritten or lost (no event recovered)`
//!
//! `processes.parquet`: one row per process.
//! - `clock` STRING: its ring's clock; `ring` STRING: its ring file or session directory
//! - `events` INT64: its events in the trace (span records included); `lost` INT64: as the losses table counts
//! - `first_ns`, `last_ns` INT64 NULL: its first and last events' times
//! - `wall_source` STRING: where `unix_ns` comes from, in words
//!
//! `sections.parquet`: preemptirq sections (irqs, preemption, softirqs off), rows of a row group by start.
//! - `tid` INT64; `cpu` INT32: the CPU its begin was recorded on
//! - `section` STRING: `irqs off`, `preempt off` or `softirqs off`
//! - `start_ns`, `end_ns`, `duration_ns`, `start_unix_ns` INT64
//! - `closed` BOOLEAN: false when the trace ended first (ended at its last time)
//!
//! ```
//! use ringtrace_export::Trace;
//! use ringtrace_parquet::{write_parquet, ParquetOptions};
//! use ringtrace_ring::{file, RingBuffer, RingConfig};
//! let dir = std::env::temp_dir().join(format!("ringtrace-parquet-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("app.ring");
//! let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path);
//! let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
//! let ring = RingBuffer::new(config, clock)?;
//! ring.write(b"no metadata: a raw event")?;
//! drop(ring);
//! let recovery = file::recover(&path)?;
//!
//! let out = dir.join("tables");
//! let options = ParquetOptions::default().host("db-7");
//! let done = write_parquet(&Trace::single(&recovery), &out, &options)?;
//! assert_eq!(done.events, 1);
//! assert_eq!(done.tables.len(), 5);
//! assert!(out.join("events.parquet").is_file());
//! // The ring file is never a target.
//! assert!(write_parquet(&Trace::single(&recovery), &path, &options).is_err());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod columns;
mod error;
mod events;
mod losses;
mod options;
mod output;
mod schema;
mod sections;
mod spans;

pub use error::ParquetError;
pub use options::{Compression, ParquetOptions, DEFAULT_ROW_GROUP_ROWS, MAX_HOST_BYTES};

use columns::{Row, TableWriter};
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use ringtrace_export::Trace;
use schema::Table;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One table written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableSummary {
    /// Its name: `events`, `spans`, `losses`, `processes`, `sections`.
    pub name: String,
    /// Its file, in the export's directory.
    pub path: PathBuf,
    /// Its rows.
    pub rows: u64,
    /// Its file's size.
    pub bytes: u64,
}

/// What [`write_parquet`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParquetSummary {
    /// The export's directory.
    pub dir: PathBuf,
    /// Its tables, in the order `events`, `spans`, `losses`, `processes`,
    /// `sections`.
    pub tables: Vec<TableSummary>,
    /// Rows of the events table: the trace's events but span records.
    pub events: u64,
    /// Rows of the spans table.
    pub spans: u64,
    /// Events lost: the losses table's `count` summed, what the Perfetto
    /// and Chrome exports count.
    pub lost: u64,
    /// What the tables leave out or how they place times, in words;
    /// empty when nothing is to be said.
    pub warnings: Vec<String>,
}

/// The first three columns of every row: the host, then each process's
/// pid and command name.
pub(crate) struct Origins {
    host: ByteArray,
    processes: Vec<(i64, ByteArray)>,
}

impl Origins {
    fn new(host: &str, trace: &Trace<'_>) -> Origins {
        Origins {
            host: ByteArray::from(host),
            processes: trace
                .processes()
                .iter()
                .map(|p| (i64::from(p.pid()), ByteArray::from(p.comm())))
                .collect(),
        }
    }

    /// Pushes `host`, `pid`, `comm` of process `process`.
    pub(crate) fn push(&self, row: &mut Row<'_>, process: usize) {
        let (pid, comm) = self.processes.get(process).cloned().unwrap_or_default();
        row.str(Some(self.host.clone()))
            .i64(Some(pid))
            .str(Some(comm));
    }
}

/// Writes `trace` as five Parquet tables in the directory `dir` (see the
/// crate's docs for what each holds).
///
/// `dir` may be absent, an empty directory, or a previous export (a
/// directory holding only the five tables' files): it is replaced only
/// once every table is complete, through a temporary directory beside
/// it. Anything else at `dir` is refused ([`ParquetError::Refused`]),
/// and so are a bad host and zero rows a group, before anything is
/// written.
///
/// The trace is read twice, once for the events, losses and sections and
/// once for the spans; a streamed trace
/// ([`Trace::with_source`](ringtrace_export::Trace::with_source)) is
/// streamed both times. Memory holds one row group per table and the
/// span trees still open.
pub fn write_parquet(
    trace: &Trace<'_>,
    dir: &Path,
    options: &ParquetOptions,
) -> Result<ParquetSummary, ParquetError> {
    let host = options.checked()?;
    output::check(trace, dir)?;
    let staging = output::Staging::new(dir)?;
    let properties = Arc::new(
        WriterProperties::builder()
            .set_compression(options.compression.codec())
            .set_created_by(format!("ringtrace-parquet {}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let rows = options.row_group_rows;
    let create = |t| TableWriter::create(t, &staging.tmp, dir, &properties, rows);
    let origins = Origins::new(&host, trace);

    let (mut events, mut losses, mut sections) = (
        create(Table::Events)?,
        create(Table::Losses)?,
        create(Table::Sections)?,
    );
    let tables = events::Tables {
        events: &mut events,
        losses: &mut losses,
        sections: &mut sections,
    };
    let walked = events::walk(trace, &origins, tables, rows)?;
    let mut spans_table = create(Table::Spans)?;
    let spans = spans::walk(trace, &origins, &mut spans_table, rows)?;
    let mut processes = create(Table::Processes)?;
    write_processes(trace, &origins, &walked.counts, &mut processes)?;

    let tables = vec![
        events.finish()?,
        spans_table.finish()?,
        losses.finish()?,
        processes.finish()?,
        sections.finish()?,
    ];
    let mut warnings = trace.alignment_notes();
    warnings.extend(walked.warnings);
    warnings.extend(spans.warnings);
    warnings.extend(staging.commit(trace)?);
    Ok(ParquetSummary {
        dir: dir.to_owned(),
        tables,
        events: walked.events,
        spans: spans.spans,
        lost: walked.lost,
        warnings,
    })
}

/// The processes table: one row per process.
fn write_processes(
    trace: &Trace<'_>,
    origins: &Origins,
    counts: &[events::ProcessCounts],
    out: &mut TableWriter,
) -> Result<(), ParquetError> {
    let wall = trace.wall_clock().source().words();
    for (i, p) in trace.processes().iter().enumerate() {
        let c = counts.get(i).copied().unwrap_or_default();
        let mut row = out.row();
        origins.push(&mut row, i);
        row.text(&p.recovery.header.clock.name)
            .text(&p.recovery.path.to_string_lossy())
            .u64(c.events)
            .u64(c.lost)
            .i64(c.first_ns.map(columns::saturated))
            .i64(c.last_ns.map(columns::saturated))
            .text(wall);
        row.end()?;
    }
    out.flush()
}
