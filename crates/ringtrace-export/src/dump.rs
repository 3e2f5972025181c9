//! `ringtrace dump`: a recovered file's events in ftrace's text format (or
//! one JSON object each), after `#` lines saying what the file is.

use super::decode::Decoded;
use super::text::{clock_words, escape, escape_bytes, hex, seconds, utc_time, writer_words};
use super::trace::{Process, Trace};
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
    #[error("CPU {given} is out of range: {file} has CPU buffers 0 to {last}")]
    CpuOutOfRange {
        /// The CPU asked for.
        given: usize,
        /// The file.
        file: String,
        /// Its last CPU buffer.
        last: usize,
    },
    /// A streamed trace ([`Trace::with_source`]): the dump holds its
    /// events in memory, from the recoveries.
    #[error("a streamed trace cannot be dumped: read it whole (Trace::materialized, or a session opened with Session::open) and dump that")]
    Streamed,
}

/// A recovered file, ready to print event by event.
///
/// Each line is ftrace's: `<comm>-<tid> [cpu] <timestamp>: <event>:
/// <fields>`. The comm is the writer's (from the header); the tid is the
/// one a tracepoint event carries, and the writer's pid for an event
/// without one (untagged or raw). A [`Trace`] of several processes
/// ([`Dump::for_trace`]) has each line's comm and pid from its own
/// process's header, timestamps on the trace's timeline since its
/// earliest anchor or event, and `#` lines for every process. The timestamp is in seconds with nine
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
    trace: Trace<'r>,
    /// Timestamps count from here, on the trace's timeline.
    base_ticks: u64,
    options: DumpOptions,
    /// For each process's live ring: events that ended after the read, by
    /// the accounting words read again (or why they could not be).
    ended_after_read: Vec<Option<Result<u64, String>>>,
}

/// For a live ring: the events that ended after `recovery` was read, by
/// its file's accounting words read again (or why they could not be).
fn ended_after_read(recovery: &Recovery) -> Option<Result<u64, String>> {
    // A file can be read again to count what ended after the read; a
    // memory ring's snapshot was taken under its readers' locks and has
    // no file to read again.
    // (A session's process is read from a directory: no file either.)
    let has_file =
        recovery.path.as_os_str() != ringtrace_ring::file::MEMORY_PATH && recovery.path.is_file();
    (recovery.writer == WriterState::Live && has_file).then(|| {
        ringtrace_ring::file::recover(&recovery.path)
            .map(|later| {
                later
                    .file_stats()
                    .hit
                    .saturating_sub(recovery.file_stats().hit)
            })
            .map_err(|e| e.to_string())
    })
}

impl<'r> Dump<'r> {
    /// Prepares `recovery` for printing. For a live ring, reads the file's
    /// accounting words again to count the events written since.
    pub fn new(recovery: &'r Recovery, options: DumpOptions) -> Result<Dump<'r>, DumpError> {
        Dump::for_trace(Trace::single(recovery), options)
    }

    /// Prepares a trace of one or more processes for printing: every
    /// process's events merged in time order, each line with its own
    /// process's command name, and `#` lines describing every process.
    /// With one process, exactly what [`Dump::new`] prints.
    ///
    /// ```
    /// use ringtrace_export::{Alignment, Dump, DumpOptions, Trace};
    /// use ringtrace_ring::{file, RingBuffer, RingConfig};
    /// let dir = std::env::temp_dir().join(format!("ringtrace-dump-trace-doc-{}", std::process::id()));
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
    /// let dump = Dump::for_trace(Trace::new(&recoveries, Alignment::SharedClock)?, DumpOptions::default())?;
    /// assert_eq!(dump.events().len(), 2);
    /// assert!(dump.comments()[0].contains("2 processes"), "{:?}", dump.comments());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_trace(trace: Trace<'r>, options: DumpOptions) -> Result<Dump<'r>, DumpError> {
        if trace.is_streamed() {
            return Err(DumpError::Streamed);
        }
        let cpus = trace
            .processes()
            .iter()
            .map(|p| p.recovery.cpus.len())
            .max()
            .unwrap_or(0);
        if let Some(cpu) = options.cpu.filter(|&c| c >= cpus) {
            let files: Vec<String> = trace
                .processes()
                .iter()
                .map(|p| p.recovery.path.display().to_string())
                .collect();
            return Err(DumpError::CpuOutOfRange {
                given: cpu,
                file: files.join(", "),
                last: cpus.saturating_sub(1),
            });
        }
        let ended_after_read = trace
            .processes()
            .iter()
            .map(|p| ended_after_read(p.recovery))
            .collect();
        Ok(Dump {
            base_ticks: trace.base(),
            trace,
            options,
            ended_after_read,
        })
    }

    /// The trace being dumped.
    pub fn trace(&self) -> &Trace<'r> {
        &self.trace
    }

    /// The first process's metadata records appended at run time (its
    /// metadata annex), in order, beside the metadata its events are
    /// decoded by.
    pub fn metadata_records(&self) -> &[Vec<u8>] {
        self.trace.processes()[0].decoder().metadata_records()
    }

    /// The counts of the CPUs dumped of `r`.
    fn counts(&self, r: &Recovery) -> RecoveryCounts {
        match self.options.cpu {
            Some(cpu) => r.cpus.get(cpu).map(|c| c.counts).unwrap_or_default(),
            None => r.totals(),
        }
    }

    /// The `#` lines that come before the events.
    pub fn comments(&self) -> Vec<String> {
        let processes = self.trace.processes();
        let mut out = Vec::new();
        if let [p] = processes {
            let (head, tail) = self.process_lines(p, 0);
            out.push(format!("# ringtrace dump of {}", p.recovery.path.display()));
            out.extend(head);
            out.push(self.single_timestamps(p));
            out.extend(tail);
        } else {
            out.push(format!(
                "# ringtrace dump of {} processes, merged in time order",
                processes.len()
            ));
            for (i, p) in processes.iter().enumerate() {
                out.push(format!(
                    "# process {} ({}): {}",
                    p.pid(),
                    p.comm(),
                    p.recovery.path.display()
                ));
                let (head, tail) = self.process_lines(p, i);
                out.extend(
                    head.into_iter()
                        .chain(tail)
                        .map(|l| format!("#   {}", l.trim_start_matches("# "))),
                );
            }
            out.push(self.merged_timestamps());
            out.extend(
                self.trace
                    .alignment_notes()
                    .into_iter()
                    .map(|n| format!("# {n}")),
            );
        }
        out.push("#".to_owned());
        out.push("#           TASK-PID     CPU#     TIMESTAMP  FUNCTION".to_owned());
        out.push("#              | |         |         |         |".to_owned());
        // The path, the command name, the metadata's names and the
        // problems found can all hold what a terminal would obey.
        out.into_iter().map(|l| escape(&l).into_owned()).collect()
    }

    /// What the timestamps of a single process's dump count.
    fn single_timestamps(&self, p: &Process<'_>) -> String {
        let h = &p.recovery.header;
        if h.clock.mult.is_none() {
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
        }
    }

    /// What the timestamps of several processes' dump count.
    fn merged_timestamps(&self) -> String {
        let clock = self.trace.clock();
        let anchor = self
            .trace
            .processes()
            .iter()
            .map(|p| p.timeline(p.recovery.header.anchor_ticks))
            .min()
            .unwrap_or(0);
        if clock.mult.is_none() {
            format!(
                "# timestamps: raw ticks of clock `{}`, which are not time",
                clock.name
            )
        } else if self.base_ticks == anchor {
            format!("# timestamps: seconds of clock `{}` since the earliest anchor (when the first of the rings was opened)", clock.name)
        } else {
            format!(
                "# timestamps: seconds of clock `{}` since the first event, {} ticks before the earliest anchor",
                clock.name,
                anchor - self.base_ticks
            )
        }
    }

    /// The `#` lines of one process: those before the timestamps line
    /// (writer, clock, anchor), and those after it.
    fn process_lines(&self, p: &Process<'_>, i: usize) -> (Vec<String>, Vec<String>) {
        let r = p.recovery;
        let h = &r.header;
        let head = vec![
            format!("# writer: {}", writer_words(r)),
            format!("# clock: {}", clock_words(&h.clock)),
            format!(
                "# wall-clock anchor: {} at clock ticks {}",
                utc_time(h.wall_ns),
                h.anchor_ticks
            ),
        ];
        let mut out = Vec::new();
        match p.summary() {
            Ok(words) => out.push(format!("# metadata: {words}")),
            Err(why) => out.push(format!(
                "# metadata: none usable ({why}); events are shown raw"
            )),
        }
        let decoder = p.decoder();
        let records = decoder.metadata_records();
        if !records.is_empty() {
            out.push(format!(
                "# metadata records: {} appended at run time ({} bytes), {} of them `tracing` callsites that decode `tracing:*` events",
                records.len(),
                records.iter().map(Vec::len).sum::<usize>(),
                decoder.callsites().len()
            ));
        }
        for p in decoder.callsite_problems() {
            out.push(format!("# problem in the metadata records: {p}"));
        }
        for p in r.annex_problems() {
            out.push(format!("# problem in the metadata records: {p}"));
        }
        let c = self.counts(r);
        let which = self
            .options
            .cpu
            .map_or_else(|| "every CPU".to_owned(), |cpu| format!("CPU {cpu}"));
        out.push(format!(
            "# events ({which}): {} recovered; skipped: {} pending (reservations open when the writer stopped), {} unreadable, {} changed while read",
            c.recovered, c.skipped_pending, c.skipped_unreadable, c.changed_while_read
        ));
        let s = match self.options.cpu {
            Some(cpu) => r.cpus.get(cpu).map(|c| c.file_stats).unwrap_or_default(),
            None => r.file_stats(),
        };
        // Refused writes (`missed`) are on no event: a ring file counts
        // them, but not when (a session's are in its loss notes below).
        out.push(format!(
            "# before them: {} overwritten (overrun), {} read by a consumer, {} lost, {} discarded, {} refused (writes the ring turned away)",
            s.overrun, s.read, s.lost, s.discarded, s.missed
        ));
        // Losses whose cause was recorded (a session's), per CPU: where
        // each was is marked before the event after it.
        for c in &r.cpus {
            if self.options.cpu.is_some_and(|only| only != c.cpu) || c.loss_notes.is_empty() {
                continue;
            }
            let mut by_why: Vec<(&str, u64)> = Vec::new();
            for n in &c.loss_notes {
                match by_why.iter_mut().find(|(w, _)| *w == n.why) {
                    Some((_, count)) => *count += n.count,
                    None => by_why.push((&n.why, n.count)),
                }
            }
            let words: Vec<String> = by_why.iter().map(|(w, n)| format!("{n} {w}")).collect();
            let after = c.unplaced().after_last;
            let tail = if after > 0 {
                format!(" ({after} of them after its last event)")
            } else {
                String::new()
            };
            out.push(format!(
                "# lost on CPU {}: {}{tail}",
                c.cpu,
                words.join(", ")
            ));
        }
        if let Some(Some(after)) = self.ended_after_read.get(i) {
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
            Some(cpu) => r.cpus.get(cpu).into_iter().collect(),
            None => r.cpus.iter().collect(),
        };
        for c in cpus {
            for p in &c.problems {
                out.push(format!("# problem on CPU {}: {p}", c.cpu));
            }
        }
        (head, out)
    }

    /// The events to print, in time order (ties: by pid, then CPU).
    pub fn events(&self) -> Vec<&'r Event> {
        self.trace
            .events()
            .into_iter()
            .map(|t| t.event)
            .filter(|e| self.options.cpu.is_none_or(|cpu| e.cpu == cpu))
            .collect()
    }

    /// Nanoseconds of `e` (of process `p`) since the base, or `None` when
    /// ticks are not time.
    fn ns(&self, p: &Process<'_>, e: &Event) -> Option<u64> {
        self.trace
            .clock()
            .ticks_to_ns(p.timeline(e.ts).saturating_sub(self.base_ticks))
    }

    /// One event as ftrace prints it, after ftrace's `CPU:N [LOST M
    /// EVENTS]` line when events of its CPU were overwritten or lost
    /// before it (`Event::lost_before`).
    ///
    /// In a trace of several processes the lost-events line names the
    /// process whose CPU buffer lost them: `CPU:0 [LOST 5 EVENTS] in
    /// app-1234`.
    pub fn line(&self, e: &Event) -> String {
        let line = self.event_line(e);
        if e.lost_before == 0 {
            return line;
        }
        let mut lost = format!("CPU:{} [LOST {} EVENTS]", e.cpu, e.lost_before);
        let why = self.loss_why(e);
        if !why.is_empty() {
            lost = format!("CPU:{} [LOST {} EVENTS: {why}]", e.cpu, e.lost_before);
        }
        if self.trace.is_single() {
            return format!("{lost}\n{line}");
        }
        let p = &self.trace.processes()[self.trace.process_of(e)];
        let who = escape(&format!("{}-{}", p.comm(), p.pid())).into_owned();
        format!("{lost} in {who}\n{line}")
    }

    /// Why the events lost before `e` were lost, where its recovery says
    /// (`CpuRecovery::loss_notes`, a session's): `3 refused, 2 writer
    /// died`; empty where it does not.
    fn loss_why(&self, e: &Event) -> String {
        let p = &self.trace.processes()[self.trace.process_of(e)];
        let at: *const Event = e;
        let Some(cpu) = p
            .recovery
            .cpus
            .iter()
            .find(|c| c.events.as_ptr_range().contains(&at))
        else {
            return String::new();
        };
        // Its index in its CPU's events (it is one of them, by address).
        let index = (at as usize - cpu.events.as_ptr() as usize) / std::mem::size_of::<Event>();
        let notes: Vec<String> = cpu
            .loss_notes
            .iter()
            .filter(|n| n.before == index)
            .map(|n| format!("{} {}", n.count, escape(&n.why)))
            .collect();
        notes.join(", ")
    }

    fn event_line(&self, e: &Event) -> String {
        let p = &self.trace.processes()[self.trace.process_of(e)];
        let d = p.decoder().decode(&e.payload);
        let tid = d.tid().unwrap_or(p.pid());
        let ts = match self.ns(p, e) {
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
                let lasted = match p.recovery.header.clock.ticks_to_ns(ticks) {
                    Some(ns) => format!(" lasted={ns}ns"),
                    None => format!(" lasted={ticks}ticks"),
                };
                what.extend_from_slice(lasted.as_bytes());
            }
        }
        format!(
            "{:>16}-{:<7} [{:03}] {ts}: {}",
            escape(p.comm()),
            tid,
            e.cpu,
            escape_bytes(&what)
        )
    }

    /// The losses no event carries
    /// ([`CpuRecovery::unplaced`](ringtrace_ring::file::CpuRecovery::unplaced)),
    /// as JSON objects for `dump --json` to print after the events, one per
    /// CPU and cause: `kind` `"lost"`, `cpu`, `lost` (how many events),
    /// `cause` (`no_event_recovered`: a CPU of which no event was
    /// recovered; `refused_time_unknown`: writes a ring file's CPU buffer
    /// refused, whose times it does not record; `after_last_event`: a
    /// session's losses after the CPU's last event), and `ts`, `ns` and
    /// `wall_ns` of the CPU's last event, where the other readers place
    /// them (null when it has none). In a trace of several processes, also
    /// `pid` and `comm`.
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_export::{Alignment, Dump, DumpOptions, Trace};
    /// use ringtrace_ring::{Mode, RingBuffer, RingConfig};
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).mode(Mode::Discard);
    /// let ring = RingBuffer::new(config, Counter::new())?;
    /// while ring.write(&[7; 64]).is_ok() {}
    /// let _ = ring.write(&[7; 64]); // refused: the ring is full
    /// let recovery = ring.snapshot(Vec::new());
    /// let trace = Trace::new(std::slice::from_ref(&recovery), Alignment::SharedClock)?;
    /// let dump = Dump::for_trace(trace, DumpOptions::default())?;
    /// let losses = dump.unplaced_losses_json();
    /// assert_eq!(losses[0]["cause"], "refused_time_unknown");
    /// assert!(losses[0]["lost"].as_u64() >= Some(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unplaced_losses_json(&self) -> Vec<Value> {
        use crate::analysis::LossCause;
        let mut out = Vec::new();
        for p in self.trace.processes() {
            for c in &p.recovery.cpus {
                if self.options.cpu.is_some_and(|only| only != c.cpu) {
                    continue;
                }
                let u = c.unplaced();
                let last = c.events.iter().max_by_key(|e| e.ts);
                for (count, cause) in [
                    (u.no_event, LossCause::NoEventRecovered),
                    (u.refused, LossCause::Refused),
                    (u.after_last, LossCause::AfterLastEvent),
                ] {
                    if count == 0 {
                        continue;
                    }
                    let mut loss = json!({
                        "kind": "lost",
                        "cpu": c.cpu,
                        "lost": count,
                        "cause": cause.to_string(),
                        "ts": last.map(|e| e.ts),
                        "ns": last.and_then(|e| self.ns(p, e)),
                        "wall_ns": last.and_then(|e| p.recovery.header.wall_ns_at(e.ts)),
                    });
                    if let (Some(map), false) = (loss.as_object_mut(), self.trace.is_single()) {
                        map.insert("pid".into(), Value::from(p.pid()));
                        map.insert("comm".into(), Value::from(p.comm()));
                    }
                    out.push(loss);
                }
            }
        }
        out
    }

    /// One event as a JSON object: `cpu`, `ts` (ticks), `ns` (since the
    /// base; null when ticks are not time), `wall_ns` (null when unknown),
    /// `event` (null when raw), `kind` (`tracepoint`, `untagged`,
    /// `tracing`, `raw`; a `tracing` record adds `level`, `target`,
    /// `callsite`, `span`, `parent` and a local span's `start` in ticks
    /// where it has them),
    /// `tid`, `lost_before` (events of its CPU overwritten or lost just
    /// before it), and `fields` as an object, or `raw` as hex (with `why` when
    /// the payload could not be decoded). In a trace of several processes,
    /// also `pid` and `comm`: its process's.
    pub fn json(&self, e: &Event) -> Value {
        let p = &self.trace.processes()[self.trace.process_of(e)];
        let d = p.decoder().decode(&e.payload);
        let kind = match d {
            Decoded::Tracepoint { .. } => "tracepoint",
            Decoded::Untagged { .. } => "untagged",
            Decoded::Tracing(_) => "tracing",
            Decoded::Raw { .. } => "raw",
        };
        let mut out = json!({
            "cpu": e.cpu,
            "ts": e.ts,
            "ns": self.ns(p, e),
            "wall_ns": p.recovery.header.wall_ns_at(e.ts),
            "event": d.name(),
            "kind": kind,
            "tid": d.tid().unwrap_or(p.pid()),
            "lost_before": e.lost_before,
        });
        if let Some(map) = out.as_object_mut() {
            if !self.trace.is_single() {
                map.insert("pid".into(), Value::from(p.pid()));
                map.insert("comm".into(), Value::from(p.comm()));
            }
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
