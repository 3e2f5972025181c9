//! `ringtrace dump`: a recovered file's events in ftrace's text format (or
//! one JSON object each), after `#` lines saying what the file is.

use super::decode::{Decoded, Decoder};
use super::summary::metadata_decoder;
use super::text::{clock_words, comm, escape, escape_bytes, hex, seconds, utc_time, writer_words};
use ringtrace_ring::file::{Recovery, RecoveryCounts, WriterState};
use ringtrace_ring::Event;
use ringtrace_tracepoint::FieldValue;
use serde_json::{json, Map, Value};
use thiserror::Error;

/// What to dump: every CPU's events, decoded, by default.
///
/// ```
/// use ringtrace_export::DumpOptions;
/// let options = DumpOptions::default().cpu(Some(2)).raw(true);
/// assert_eq!((options.cpu, options.raw), (Some(2), true));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpOptions {
    /// Only this CPU buffer's events (`None`: every CPU's).
    pub cpu: Option<usize>,
    /// Payloads as hex instead of decoded fields.
    pub raw: bool,
}

impl DumpOptions {
    /// Only `cpu`'s events, or (`None`) every CPU's.
    #[must_use]
    pub fn cpu(mut self, cpu: Option<usize>) -> DumpOptions {
        self.cpu = cpu;
        self
    }

    /// Payloads as hex instead of decoded fields.
    #[must_use]
    pub fn raw(mut self, raw: bool) -> DumpOptions {
        self.raw = raw;
        self
    }
}

/// Options that do not fit the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DumpError {
    /// A CPU the file has no buffer for.
    #[error("--cpu {given} is out of range: {file} has CPU buffers 0 to {last}")]
    CpuOutOfRange {
        /// The CPU asked for.
        given: usize,
        /// The file.
        file: String,
        /// Its last CPU buffer.
        last: usize,
    },
}

/// A recovered file, ready to print event by event.
///
/// Each line is ftrace's: `<comm>-<tid> [cpu] <timestamp>: <event>:
/// <fields>`. The comm is the writer's (from the header); the tid is the
/// one a tracepoint event carries, and the writer's pid for an event
/// without one (untagged or raw). The timestamp is in seconds with nine
/// decimals since the earlier of the header's anchor (when the ring was
/// opened) and the first event, converted by the file's clock; for a
/// clock whose ticks are not time it is the raw tick count, and the `#`
/// lines say so.
///
/// Each event is one line, and so is each `#` line: what comes from the
/// trace (the command name, names, formats, field values, the metadata's
/// strings, the path) is shown through [`escape`](crate::text::escape), so a
/// newline in a field is `\n`, an ESC is `\x1b`, a bidi override is
/// `\u{202e}`, and the bytes of a string field that are not UTF-8 show
/// as `\xNN`.
///
/// ```
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
/// let dir = std::env::temp_dir().join(format!("ringtrace-dump-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("doc.ring");
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).quarantine_pages(1)
///     .file(&path).metadata(metadata_for_tracepoints()?.to_bytes());
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
/// let ring = RingBuffer::new(config, clock)?;
/// ring.write(&[1, 2, 3])?;
/// drop(ring);
/// let recovery = file::recover(&path)?;
/// let dump = Dump::new(&recovery, DumpOptions::default())?;
/// assert!(dump.comments().iter().all(|l| l.starts_with('#')));
/// let line = dump.line(dump.events()[0]);
/// assert!(line.contains("[000]") && line.contains("raw: 010203"), "{line}");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Dump<'r> {
    recovery: &'r Recovery,
    decoder: Decoder,
    metadata: Result<String, crate::UnusableMetadata>,
    /// Timestamps count from here.
    base_ticks: u64,
    options: DumpOptions,
    /// For a live ring: events that ended after the read, by the
    /// accounting words read again (or why they could not be).
    ended_after_read: Option<Result<u64, String>>,
}

impl<'r> Dump<'r> {
    /// Prepares `recovery` for printing. For a live ring, reads the file's
    /// accounting words again to count the events written since.
    pub fn new(recovery: &'r Recovery, options: DumpOptions) -> Result<Dump<'r>, DumpError> {
        let cpus = recovery.cpus.len();
        if let Some(cpu) = options.cpu.filter(|&c| c >= cpus) {
            return Err(DumpError::CpuOutOfRange {
                given: cpu,
                file: recovery.path.display().to_string(),
                last: cpus.saturating_sub(1),
            });
        }
        let crate::MetadataDecoder {
            decoder,
            summary: metadata,
        } = metadata_decoder(recovery);
        let first = recovery
            .cpus
            .iter()
            .filter_map(|c| c.events.iter().map(|e| e.ts).min())
            .min();
        let anchor = recovery.header.anchor_ticks;
        // A file can be read again to count what ended after the read; a
        // memory ring's snapshot was taken under its readers' locks and
        // has no file to read again.
        let has_file = recovery.path.as_os_str() != ringtrace_ring::file::MEMORY_PATH;
        let ended_after_read = (recovery.writer == WriterState::Live && has_file).then(|| {
            ringtrace_ring::file::recover(&recovery.path)
                .map(|later| {
                    later
                        .file_stats()
                        .hit
                        .saturating_sub(recovery.file_stats().hit)
                })
                .map_err(|e| e.to_string())
        });
        Ok(Dump {
            recovery,
            decoder,
            metadata,
            base_ticks: first.map_or(anchor, |f| f.min(anchor)),
            options,
            ended_after_read,
        })
    }

    /// The file's metadata records appended at run time (its metadata
    /// annex), in order, beside the metadata the events are decoded by.
    pub fn metadata_records(&self) -> &[Vec<u8>] {
        self.decoder.metadata_records()
    }

    /// The counts of the CPUs dumped.
    fn counts(&self) -> RecoveryCounts {
        match self.options.cpu {
            Some(cpu) => self.recovery.cpus[cpu].counts,
            None => self.recovery.totals(),
        }
    }

    /// The `#` lines that come before the events.
    pub fn comments(&self) -> Vec<String> {
        let r = self.recovery;
        let h = &r.header;
        let mut out = vec![
            format!("# ringtrace dump of {}", r.path.display()),
            format!("# writer: {}", writer_words(r)),
            format!("# clock: {}", clock_words(&h.clock)),
            format!(
                "# wall-clock anchor: {} at clock ticks {}",
                utc_time(h.wall_ns),
                h.anchor_ticks
            ),
        ];
        out.push(if h.clock.mult.is_none() {
            format!(
                "# timestamps: raw ticks of clock `{}`, which are not time",
                h.clock.name
            )
        } else if self.base_ticks == h.anchor_ticks {
            "# timestamps: seconds since the anchor (when the ring was opened)".to_owned()
        } else {
            format!(
                "# timestamps: seconds since the first event, {} ticks before the anchor",
                h.anchor_ticks - self.base_ticks
            )
        });
        match &self.metadata {
            Ok(words) => out.push(format!("# metadata: {words}")),
            Err(why) => out.push(format!(
                "# metadata: none usable ({why}); events are shown raw"
            )),
        }
        let records = self.metadata_records();
        if !records.is_empty() {
            out.push(format!(
                "# metadata records: {} appended at run time ({} bytes), {} of them `tracing` callsites that decode `tracing:*` events",
                records.len(),
                records.iter().map(Vec::len).sum::<usize>(),
                self.decoder.callsites().len()
            ));
        }
        for p in self.decoder.callsite_problems() {
            out.push(format!("# problem in the metadata records: {p}"));
        }
        for p in r.annex_problems() {
            out.push(format!("# problem in the metadata records: {p}"));
        }
        let c = self.counts();
        let which = self
            .options
            .cpu
            .map_or_else(|| "every CPU".to_owned(), |cpu| format!("CPU {cpu}"));
        out.push(format!(
            "# events ({which}): {} recovered; skipped: {} pending (reservations open when the writer stopped), {} unreadable, {} changed while read",
            c.recovered, c.skipped_pending, c.skipped_unreadable, c.changed_while_read
        ));
        let s = match self.options.cpu {
            Some(cpu) => r.cpus[cpu].file_stats,
            None => r.file_stats(),
        };
        out.push(format!(
            "# before them: {} overwritten (overrun), {} read by a consumer, {} lost, {} discarded",
            s.overrun, s.read, s.lost, s.discarded
        ));
        if let Some(after) = &self.ended_after_read {
            out.push(match after {
                Ok(n) => format!(
                    "# live: a snapshot; it may miss {} events: {} on pages that changed while they were read, {} ended after the read (reservations counted by the accounting words read again, discards included)",
                    c.changed_while_read + n,
                    c.changed_while_read,
                    n
                ),
                Err(e) => format!(
                    "# live: a snapshot; it misses {} events on pages that changed while they were read, and those written since (the file could not be read again: {e})",
                    c.changed_while_read
                ),
            });
        }
        if r.writer == WriterState::Live && r.path.as_os_str() == ringtrace_ring::file::MEMORY_PATH
        {
            out.push(
                "# live: a snapshot of an in-memory ring, read with each CPU buffer's non-consuming iterator; events committed while it was read may or may not be in it, and later ones are not"
                    .to_owned(),
            );
        }
        let cpus: Vec<_> = match self.options.cpu {
            Some(cpu) => vec![&r.cpus[cpu]],
            None => r.cpus.iter().collect(),
        };
        for c in cpus {
            for p in &c.problems {
                out.push(format!("# problem on CPU {}: {p}", c.cpu));
            }
        }
        out.push("#".to_owned());
        out.push("#           TASK-PID     CPU#     TIMESTAMP  FUNCTION".to_owned());
        out.push("#              | |         |         |         |".to_owned());
        // The path, the command name, the metadata's names and the
        // problems found can all hold what a terminal would obey.
        out.into_iter().map(|l| escape(&l).into_owned()).collect()
    }

    /// The events to print, in time order (ties: by CPU).
    pub fn events(&self) -> Vec<&'r Event> {
        let mut events = self.recovery.merged();
        if let Some(cpu) = self.options.cpu {
            events.retain(|e| e.cpu == cpu);
        }
        events
    }

    /// Nanoseconds of `e` since the base, or `None` when ticks are not time.
    fn ns(&self, e: &Event) -> Option<u64> {
        self.recovery
            .header
            .clock
            .ticks_to_ns(e.ts.saturating_sub(self.base_ticks))
    }

    /// One event as ftrace prints it, after ftrace's `CPU:N [LOST M
    /// EVENTS]` line when events of its CPU were overwritten or lost
    /// before it (`Event::lost_before`).
    pub fn line(&self, e: &Event) -> String {
        let line = self.event_line(e);
        if e.lost_before > 0 {
            format!("CPU:{} [LOST {} EVENTS]\n{line}", e.cpu, e.lost_before)
        } else {
            line
        }
    }

    fn event_line(&self, e: &Event) -> String {
        let d = self.decoder.decode(&e.payload);
        let tid = d.tid().unwrap_or(self.recovery.header.pid);
        let ts = match self.ns(e) {
            Some(ns) => format!("{:>15}", seconds(ns)),
            None => format!("{:>15}", e.ts),
        };
        // Names, formats, reasons and values all come from the trace: the
        // event's part is built as bytes (a string field that is not UTF-8
        // keeps its own) and escaped as a whole.
        let name = d.name().unwrap_or("raw");
        let mut what = match (&d, self.options.raw) {
            (_, true) => format!("{name}: {}", hex(&e.payload)).into_bytes(),
            (Decoded::Raw { why }, false) => {
                format!("raw: {} ({why})", hex(&e.payload)).into_bytes()
            }
            (_, false) => {
                let mut what = format!("{name}: ").into_bytes();
                what.extend_from_slice(&d.text_bytes());
                what
            }
        };
        while what.last() == Some(&b' ') {
            what.pop();
        }
        // A local span is written at its end with its start: say how long.
        if let (Decoded::Tracing(t), false) = (&d, self.options.raw) {
            if let Some(start) = t.start {
                let ticks = e.ts.saturating_sub(start);
                let lasted = match self.recovery.header.clock.ticks_to_ns(ticks) {
                    Some(ns) => format!(" lasted={ns}ns"),
                    None => format!(" lasted={ticks}ticks"),
                };
                what.extend_from_slice(lasted.as_bytes());
            }
        }
        format!(
            "{:>16}-{:<7} [{:03}] {ts}: {}",
            escape(comm(self.recovery)),
            tid,
            e.cpu,
            escape_bytes(&what)
        )
    }

    /// One event as a JSON object: `cpu`, `ts` (ticks), `ns` (since the
    /// base; null when ticks are not time), `wall_ns` (null when unknown),
    /// `event` (null when raw), `kind` (`tracepoint`, `untagged`,
    /// `tracing`, `raw`; a `tracing` record adds `level`, `target`,
    /// `callsite`, `span`, `parent` and a local span's `start` in ticks
    /// where it has them),
    /// `tid`, `lost_before` (events of its CPU overwritten or lost just
    /// before it), and `fields` as an object, or `raw` as hex (with `why` when
    /// the payload could not be decoded).
    pub fn json(&self, e: &Event) -> Value {
        let d = self.decoder.decode(&e.payload);
        let kind = match d {
            Decoded::Tracepoint { .. } => "tracepoint",
            Decoded::Untagged { .. } => "untagged",
            Decoded::Tracing(_) => "tracing",
            Decoded::Raw { .. } => "raw",
        };
        let mut out = json!({
            "cpu": e.cpu,
            "ts": e.ts,
            "ns": self.ns(e),
            "wall_ns": self.recovery.header.wall_ns_at(e.ts),
            "event": d.name(),
            "kind": kind,
            "tid": d.tid().unwrap_or(self.recovery.header.pid),
            "lost_before": e.lost_before,
        });
        if let Some(map) = out.as_object_mut() {
            if let Decoded::Raw { why } = &d {
                map.insert("why".into(), Value::from(why.as_str()));
            }
            if let Decoded::Tracing(t) = &d {
                crate::tracing_export::insert_json(t, map);
            }
            if self.options.raw || matches!(d, Decoded::Raw { .. }) {
                map.insert("raw".into(), Value::from(hex(&e.payload)));
            } else {
                let fields: Map<String, Value> = d
                    .fields()
                    .into_iter()
                    .map(|(name, v)| (name.to_owned(), field_json(v)))
                    .collect();
                map.insert("fields".into(), Value::Object(fields));
            }
        }
        out
    }
}

pub(crate) fn field_json(v: &FieldValue) -> Value {
    match v {
        FieldValue::Unsigned(n) => Value::from(*n),
        FieldValue::Signed(n) => Value::from(*n),
        FieldValue::Bool(b) => Value::from(*b),
        // NaN and infinities, which JSON has no number for, become null.
        FieldValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        FieldValue::Str(s) => Value::from(s.as_str()),
        // JSON strings are Unicode: the bytes that are not UTF-8 become U+FFFD.
        FieldValue::Bytes(b) => Value::from(String::from_utf8_lossy(b)),
        FieldValue::Location { file, line, column } => {
            json!({ "file": file, "line": line, "column": column })
        }
    }
}
