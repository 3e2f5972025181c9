//! The tracer: one ring, its clock, and what a program does with them:
//! install, record, read, export, finish.

use crate::builder::TracerBuilder;
use crate::error::{InstallError, TracerError};
use ringtrace_clock::{AnyClock, ClockInfo};
use ringtrace_export::export::{self, ExportSummary, Format};
use ringtrace_export::{metadata_for_tracepoints, Dump, DumpOptions};
use ringtrace_ring::file::Recovery;
use ringtrace_ring::{CpuIter, MergedReader, Reservation, ReserveError, RingBuffer, RingConfig};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// A ring, stamped by one clock, that a program records its events into.
///
/// Build one with [`Tracer::builder`]; [`install`](Tracer::install) it to
/// make it the ring the process's tracepoints record into. Recording
/// ([`write`](Tracer::write), [`reserve`](Tracer::reserve)) is lock-free,
/// allocation-free and async-signal-safe; everything else is for the
/// program's quiet moments.
///
/// # At exit
///
/// Dropping a tracer, or [`finish`](Tracer::finish), closes each CPU's
/// open page so every committed event can be read, and `finish` writes a
/// file ring to disk. A tracer that is [installed](Tracer::install), or
/// whose [`layer`](Tracer::layer) a global `tracing` subscriber holds,
/// keeps its ring for the rest of the process (events may come at any
/// moment), so the ring is never dropped. A file ring still alive when the
/// process exits normally (a return from `main`, `std::process::exit`) is
/// marked exited by an exit handler, with the time of the exit, so
/// `ringtrace recover` says `exited` (a dropped ring reads `closed`); a
/// crash, a kill or `abort()` leave it `died`. Every committed event is
/// kept, the open pages' too; an event reserved but not committed when the
/// process ends (a thread still writing as it exits, or killed mid-event)
/// is counted, never read torn, and such a thread's later events are kept
/// after the mark (docs/format.md, "Status word").
pub struct Tracer {
    ring: Arc<RingBuffer<AnyClock>>,
    /// The consumer streaming the ring to a session, if one was asked for.
    #[cfg(feature = "stream")]
    stream: Option<Arc<crate::stream::Stream>>,
    /// The ring's strong count once the stream started: more at drop, and
    /// the ring lives on elsewhere (a layer, a subscriber, installed).
    #[cfg(feature = "stream")]
    ring_holders: usize,
}

/// What a tracer recorded and what it could not. A `tracing` record the
/// layer or subscriber could not describe (a full metadata annex) never
/// reaches the ring: it is counted in their own stats (`RingLayer::stats`,
/// `RingSubscriber::stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TracerStats {
    /// The ring's counters summed over CPUs. At a quiescent moment `hit ==
    /// read + overrun + lost + entries + discarded`; `missed` counts every
    /// write and reservation the ring refused, whoever asked, and splits
    /// by cause: full in discard mode ([`full()`](ringtrace_ring::Stats::full)),
    /// the page to reuse still being written (`busy`), too large for a
    /// page (`too_large`).
    pub ring: ringtrace_ring::Stats,
    /// Events enabled tracepoints did not record, process-wide
    /// (`ringtrace_tracepoint::dropped()`): no sink installed yet, or
    /// refused by the ring (those are in `ring.missed` too, by the same
    /// cause, when this tracer is the installed one).
    pub tracepoints_dropped: u64,
    /// `tracepoints_dropped` by cause
    /// (`ringtrace_tracepoint::dropped_by_cause()`).
    pub tracepoints_dropped_by_cause: ringtrace_tracepoint::Dropped,
}

impl Tracer {
    /// A builder with the defaults: the `mono` clock, 1 MiB per CPU,
    /// overwrite mode, in memory.
    pub fn builder() -> TracerBuilder {
        TracerBuilder::default()
    }

    pub(crate) fn from_parts(
        mut config: RingConfig,
        clock: AnyClock,
    ) -> Result<Tracer, TracerError> {
        if config.file.is_some() && config.metadata.is_empty() {
            // The tracepoints' descriptions, so that a reader without the
            // program decodes the file (refused if two share a name).
            config.metadata = metadata_for_tracepoints()?.to_bytes();
        }
        let ring = RingBuffer::new(config, clock)?;
        // Where the ring's clock stands against BOOTTIME, MONOTONIC and
        // REALTIME, so that exports line up with the machine's other
        // traces; a full annex only loses that.
        let anchors = ringtrace_ring::file::ClockAnchors::read(ring.clock());
        let _ = ring.append_metadata(&anchors.to_record());
        Ok(Tracer {
            ring: Arc::new(ring),
            #[cfg(feature = "stream")]
            stream: None,
            #[cfg(feature = "stream")]
            ring_holders: 1,
        })
    }

    /// A tracer whose ring a consumer thread streams into `target`.
    #[cfg(feature = "stream")]
    pub(crate) fn streaming(
        config: RingConfig,
        clock: AnyClock,
        target: &crate::stream::StreamTarget,
    ) -> Result<Tracer, TracerError> {
        let metadata = if config.metadata.is_empty() {
            metadata_for_tracepoints()?.to_bytes()
        } else {
            config.metadata.clone()
        };
        // A ring file in the session directory would be taken for a
        // session's file, or make the directory not empty: refused first.
        let file = config.file.clone();
        if let Some(file) = &file {
            let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or(p.to_owned());
            if absolute(file).starts_with(absolute(&target.dir)) {
                return Err(TracerError::Stream(format!(
                    "the ring file {} is in the session directory {}: put it outside",
                    file.display(),
                    target.dir.display()
                )));
            }
        }
        // Made by this build (nothing there before): removed again if the
        // stream cannot start, so that the same build can be retried.
        let made = file.filter(|f| std::fs::symlink_metadata(f).is_err());
        let mut tracer = Tracer::from_parts(config, clock)?;
        let stream = match crate::stream::Stream::start(target, &tracer.ring, metadata) {
            Ok(stream) => stream,
            Err(e) => {
                drop(tracer);
                if let Some(made) = made {
                    let _ = std::fs::remove_file(made);
                }
                return Err(TracerError::Stream(e));
            }
        };
        tracer.stream = Some(stream);
        tracer.ring_holders = Arc::strong_count(&tracer.ring);
        Ok(tracer)
    }

    /// The session directory this tracer streams into
    /// ([`TracerBuilder::stream_to`]), if it does.
    #[cfg(feature = "stream")]
    pub fn stream_dir(&self) -> Option<&Path> {
        self.stream.as_deref().map(crate::stream::Stream::dir)
    }

    /// Stops the stream ([`TracerBuilder::stream_to`]): drains the ring to
    /// its end, finishes the session, and says what it holds, per process
    /// and CPU (events, pages, bytes, losses by cause, what could not be
    /// written). Events recorded afterwards stay in the ring. An error if
    /// the tracer does not stream, the stream was stopped already, or
    /// writing failed.
    #[cfg(feature = "stream")]
    pub fn finish_stream(&self) -> Result<ringtrace_session::SessionSummary, TracerError> {
        let stream = self
            .stream
            .as_ref()
            .ok_or_else(|| TracerError::Stream("this tracer does not stream (stream_to)".into()))?;
        stream.finish().map_err(TracerError::Stream)
    }

    /// Makes this tracer's ring the one every process-wide slot of
    /// ringtrace records into: the tracepoints' sink (the preemptirq
    /// tracepoints' too) and, with the `tracing` feature, the ring of
    /// fastrace-style local spans
    /// ([`tracing_layer::local_span!`](crate::tracing_layer::local_span)).
    /// Once per process: a second install, of this tracer or another, is
    /// an [`InstallError`] naming the slot and the ring set first, which
    /// stays.
    ///
    /// Every slot is checked before any is set, and installs are serialised,
    /// so a refused install sets nothing (see [`InstallError`] for the one
    /// race with the building blocks). The slots are set in the order
    /// above. The building blocks, for a program that wants one slot
    /// only, are [`tracepoint::set_sink`](crate::tracepoint::set_sink) and
    /// [`tracing_layer::set_local_span_ring`](crate::tracing_layer::set_local_span_ring).
    /// The `tracing` crate's own global subscriber is not one of these
    /// slots: the program composes its layers and installs them
    /// ([`layer`](Tracer::layer)).
    ///
    /// The ring then lives until the process exits, whatever becomes of
    /// this `Tracer`.
    ///
    /// ```
    /// use ringtrace::{trace, tracepoint, InstallError, Tracer};
    /// tracepoint! {
    ///     /// A request was served.
    ///     pub fn served(status: u16) = "status={}";
    /// }
    /// let tracer = Tracer::builder().build()?;
    /// tracer.install()?;
    /// ringtrace::tracepoint::registry::enable("served")?;
    /// trace!(served(200));
    /// {
    ///     let _span = ringtrace::tracing_layer::local_span!("parse");
    /// }
    /// assert_eq!(tracer.stats().ring.hit, 2); // the event and the span
    ///
    /// let other = Tracer::builder().build()?;
    /// assert!(matches!(other.install(), Err(InstallError::TracepointSink(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn install(&self) -> Result<(), InstallError> {
        // One install at a time: between the checks and the sets below no
        // other install can take a slot.
        static INSTALLING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = INSTALLING.lock().unwrap_or_else(PoisonError::into_inner);

        // Every slot first, so that a refusal sets nothing.
        if let Some(ring) = ringtrace_tracepoint::sink() {
            return Err(InstallError::TracepointSink(sink_taken(ring)));
        }
        #[cfg(feature = "tracing")]
        if let Err(taken) = local_spans_free() {
            return Err(InstallError::LocalSpans {
                taken,
                sink_installed: false,
            });
        }

        let leaked: &'static RingBuffer<AnyClock> = {
            let extra = Arc::clone(&self.ring);
            // SAFETY: `into_raw` gives up one strong count and never
            // releases it, so the allocation is never freed: the pointer
            // stays valid for the rest of the process, as 'static needs.
            unsafe { &*Arc::into_raw(extra) }
        };
        if let Err(e) = ringtrace_tracepoint::set_sink(leaked) {
            // SAFETY: the pointer came from `Arc::into_raw` just above and
            // nothing else holds it (the sink refused it): rebuild the Arc
            // to give the count back.
            drop(unsafe { Arc::from_raw(leaked as *const RingBuffer<AnyClock>) });
            return Err(InstallError::TracepointSink(e));
        }
        #[cfg(feature = "tracing")]
        ringtrace_tracing::set_local_span_ring(self.shared_ring()).map_err(|taken| {
            InstallError::LocalSpans {
                taken,
                sink_installed: true,
            }
        })?;
        Ok(())
    }

    /// Whether this tracer's ring is the installed one.
    pub fn is_installed(&self) -> bool {
        ringtrace_tracepoint::sink().is_some_and(|s| std::ptr::eq(s, &*self.ring))
    }

    /// The ring itself, for everything the tracer does not wrap (per-CPU
    /// buffers, `cpu_writer`, the geometry).
    pub fn ring(&self) -> &RingBuffer<AnyClock> {
        &self.ring
    }

    /// The ring, shared: what a `tracing` layer or a reader thread holds.
    pub fn shared_ring(&self) -> Arc<RingBuffer<AnyClock>> {
        Arc::clone(&self.ring)
    }

    /// A `tracing_subscriber::Layer` recording `tracing` events and spans
    /// into this tracer's ring, with the default settings (see
    /// [`RingLayer::builder`](ringtrace_tracing::RingLayer::builder) with
    /// [`shared_ring`](Tracer::shared_ring) for others). Install it beside
    /// other layers:
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    /// use tracing_subscriber::util::SubscriberInitExt;
    /// let tracer = ringtrace::Tracer::builder().build()?;
    /// tracing_subscriber::registry().with(tracer.layer()).init();
    ///
    /// tracing::info!(target: "app", user = "ada", attempts = 2, "logged in");
    /// let dump = tracer.dump(ringtrace::DumpOptions::default())?;
    /// assert!(dump.contains("tracing:event: INFO app: logged in user=ada attempts=2"), "{dump}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Each callsite is described once in the ring's metadata annex
    /// ([`TracerBuilder::metadata_capacity`](crate::TracerBuilder::metadata_capacity)
    /// bounds how many), so [`dump`](Tracer::dump), [`export`](Tracer::export)
    /// and, for a file ring, `ringtrace dump` show the events with their
    /// level, target and fields.
    #[cfg(feature = "tracing")]
    pub fn layer(&self) -> ringtrace_tracing::RingLayer {
        ringtrace_tracing::RingLayer::new(self.shared_ring())
    }

    /// A `tracing::Subscriber` of ringtrace's own recording `tracing`
    /// events and spans into this tracer's ring, every level, with the
    /// default settings: the cheapest way in for a program that records
    /// only into ringtrace, since it does without `tracing-subscriber`'s
    /// registry. The records are the [`layer`](Tracer::layer)'s. For a
    /// level or target filter (`RUST_LOG` syntax), see
    /// [`RingSubscriber::builder`](ringtrace_tracing::RingSubscriber::builder)
    /// with [`shared_ring`](Tracer::shared_ring).
    ///
    /// ```
    /// let tracer = ringtrace::Tracer::builder().build()?;
    /// tracing::subscriber::set_global_default(tracer.subscriber())?;
    ///
    /// let span = tracing::info_span!("request", id = 7u64);
    /// span.in_scope(|| tracing::info!(target: "app", rows = 3, "read"));
    /// drop(span);
    /// let dump = tracer.dump(ringtrace::DumpOptions::default())?;
    /// assert!(dump.contains("tracing:event: INFO app: read rows=3"), "{dump}");
    /// assert!(dump.contains("tracing:span_close"), "{dump}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "tracing")]
    pub fn subscriber(&self) -> ringtrace_tracing::RingSubscriber {
        ringtrace_tracing::RingSubscriber::new(self.shared_ring())
    }

    /// What the clock is, to convert timestamps (ticks to nanoseconds).
    pub fn clock_info(&self) -> ClockInfo {
        self.ring.clock_info()
    }

    /// The file of a file-backed tracer.
    pub fn file_path(&self) -> Option<&Path> {
        self.ring.file_path()
    }

    /// Records `payload` as one event on the calling CPU's buffer and
    /// returns its timestamp. Lock-free, allocation-free,
    /// async-signal-safe (in a [`blocking`](crate::TracerBuilder::blocking)
    /// tracer, a signal handler enters a
    /// [`SignalScope`](ringtrace_ring::SignalScope) so that its writes do
    /// not wait). A refusal is counted in the ring's `missed` and
    /// by its cause (see [`TracerStats::ring`]):
    ///
    /// ```
    /// let tracer = ringtrace::Tracer::builder().page_size(4096).build()?;
    /// let err = tracer.write(&[0; 5000]).unwrap_err();
    /// assert!(matches!(err, ringtrace::ReserveError::TooLarge { len: 5000, .. }));
    /// let ring = tracer.stats().ring;
    /// assert_eq!((ring.missed, ring.too_large), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn write(&self, payload: &[u8]) -> Result<u64, ReserveError> {
        self.ring.write(payload)
    }

    /// Reserves `len` bytes on the calling CPU's buffer to fill in place
    /// and [`commit`](Reservation::commit); dropped uncommitted, it becomes
    /// a discarded record. A refusal is counted as [`write`](Tracer::write)'s.
    #[inline]
    pub fn reserve(&self, len: usize) -> Result<Reservation<'_>, ReserveError> {
        self.ring.reserve(len)
    }

    /// A consuming reader over every CPU, in timestamp order.
    pub fn merged(&self) -> MergedReader<'_, AnyClock> {
        self.ring.merged()
    }

    /// A non-consuming iterator over the unread events of `cpu`.
    pub fn iter(&self, cpu: usize) -> Option<CpuIter<'_>> {
        self.ring.iter(cpu)
    }

    /// The ring's counters and the tracepoints' drops.
    pub fn stats(&self) -> TracerStats {
        let dropped = ringtrace_tracepoint::dropped_by_cause();
        TracerStats {
            ring: self.ring.stats(),
            tracepoints_dropped: dropped.total(),
            tracepoints_dropped_by_cause: dropped,
        }
    }

    /// Closes each CPU's open page, so every event committed so far can be
    /// read as a whole page.
    pub fn flush(&self) {
        self.ring.flush();
    }

    /// Every unread event, without consuming them, with the descriptions
    /// that decode them: what [`export`](Tracer::export) and
    /// [`dump`](Tracer::dump) read. Its wall-clock anchor is the one taken
    /// when the tracer was built, the same in every snapshot. Fails when two
    /// of the program's tracepoints share a name
    /// ([`TracerError::Tracepoints`]): their events could not be told apart.
    pub fn snapshot(&self) -> Result<Recovery, TracerError> {
        Ok(self.ring.snapshot(metadata_for_tracepoints()?.to_bytes()))
    }

    /// The unread events as `ringtrace dump` prints them: `#` comment lines,
    /// then one ftrace-like line per event. Every string from the trace is
    /// escaped ([`export::text::escape`](crate::export::text::escape)): a
    /// newline or an ESC in a field cannot break a line or reach a
    /// terminal.
    pub fn dump(&self, options: DumpOptions) -> Result<String, TracerError> {
        let snapshot = self.snapshot()?;
        let dump = Dump::new(&snapshot, options)?;
        let mut text = String::new();
        for line in dump.comments() {
            text.push_str(&line);
            text.push('\n');
        }
        for event in dump.events() {
            text.push_str(&dump.line(event));
            text.push('\n');
        }
        Ok(text)
    }

    /// Writes the unread events (not consuming them) to `out` in `format`:
    /// text, trace-cmd's trace.dat, Chrome's trace-event JSON (Perfetto),
    /// or CTF (babeltrace2). See `docs/export.md`.
    ///
    /// `out` never replaces a ring file: one that leads, through any name
    /// or link, to this tracer's file, to the file of any other ring this
    /// process has open, or to any ring file (by its magic) is refused with
    /// [`ExportError::RingFile`](ringtrace_export::export::ExportError::RingFile).
    pub fn export(&self, format: Format, out: &Path) -> Result<ExportSummary, TracerError> {
        Ok(export::export(&self.snapshot()?, format, out)?)
    }

    /// Sends the unread events' span trees (not consuming them) to an
    /// OpenTelemetry collector over OTLP/HTTP, those the options' keep
    /// rules keep, with the events outside spans as log records (the
    /// `otlp` feature; see [`otlp::export_otlp`](crate::otlp::export_otlp)).
    ///
    /// ```no_run
    /// # #[cfg(feature = "otlp")] {
    /// use ringtrace::otlp::{KeepRules, OtlpOptions};
    /// let tracer = ringtrace::Tracer::builder().build()?;
    /// // ... record ...
    /// let options = OtlpOptions::new("http://127.0.0.1:4318".parse()?)
    ///     .keep(KeepRules::parse(["error", "slower:250ms"])?);
    /// let sent = tracer.export_otlp(options)?;
    /// println!("{} spans delivered", sent.sent.spans.delivered);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "otlp")]
    pub fn export_otlp(
        &self,
        options: ringtrace_otlp::OtlpOptions,
    ) -> Result<ringtrace_otlp::OtlpSummary, TracerError> {
        let snapshot = self.snapshot()?;
        Ok(ringtrace_otlp::export_otlp(
            &ringtrace_export::Trace::single(&snapshot),
            options,
        )?)
    }

    /// Writes the unread events (not consuming them) as Parquet tables in
    /// directory `dir`: events, spans, losses, processes, preemptirq
    /// sections (the `parquet` feature; see docs/analysis.md for the
    /// columns and ready SQL).
    #[cfg(feature = "parquet")]
    pub fn export_parquet(
        &self,
        dir: &Path,
        options: &ringtrace_parquet::ParquetOptions,
    ) -> Result<ringtrace_parquet::ParquetSummary, TracerError> {
        let snapshot = self.snapshot()?;
        Ok(ringtrace_parquet::write_parquet(
            &ringtrace_export::Trace::single(&snapshot),
            dir,
            options,
        )?)
    }

    /// Stops the stream (if the tracer streams: drained to the end, the
    /// session finished), flushes, writes a file ring to disk, and returns
    /// the final counts.
    /// Events committed by other threads after this are recorded but not
    /// in the counts.
    pub fn finish(self) -> Result<TracerStats, TracerError> {
        #[cfg(feature = "stream")]
        if let Some(stream) = &self.stream {
            // A forked child's copy of an in-memory ring is its alone, and
            // nothing streams it: said, not finished as if streamed. (A
            // file ring's events are streamed by the parent.)
            if !stream.is_here() && self.ring.file_path().is_none() {
                return Err(TracerError::Stream(stream.not_here(false)));
            }
        }
        #[cfg(feature = "stream")]
        if let Some(stream) = self.stream.as_ref().filter(|s| s.is_here()) {
            if let Err(e) = stream.finish() {
                if !e.contains("finished already") {
                    return Err(TracerError::Stream(e));
                }
            }
        }
        self.ring.flush();
        self.ring.sync_file().map_err(|e| TracerError::Sync {
            path: self
                .ring
                .file_path()
                .map_or_else(String::new, |p| p.display().to_string()),
            reason: e.to_string(),
        })?;
        Ok(self.stats())
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        // The ring may live on (installed, or held by a layer); either way
        // every event committed so far becomes readable.
        self.ring.flush();
        // A stream whose ring nobody else holds ends here, drained to its
        // end; one whose ring lives on streams until the process exits.
        #[cfg(feature = "stream")]
        if let Some(stream) = self.stream.take().filter(|s| s.is_here()) {
            if Arc::strong_count(&self.ring) <= self.ring_holders {
                let _ = stream.finish();
            }
        }
    }
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("clock", &self.ring.clock_info().name)
            .field("geometry", &self.ring.geometry())
            .field("file", &self.ring.file_path())
            .field("installed", &self.is_installed())
            .finish()
    }
}

/// The refusal [`ringtrace_tracepoint::set_sink`] would give, for the ring
/// already in the sink.
fn sink_taken(ring: &RingBuffer<AnyClock>) -> ringtrace_tracepoint::SinkAlreadySet {
    ringtrace_tracepoint::SinkAlreadySet::new(
        ring.clock_info().name,
        ring.file_path().map(|p| p.display().to_string()),
    )
}

/// Whether the local-span ring is free; if not, the refusal
/// `set_local_span_ring` would give.
#[cfg(feature = "tracing")]
fn local_spans_free() -> Result<(), ringtrace_tracing::LocalSpanRingAlreadySet> {
    match ringtrace_tracing::local_span_ring() {
        None => Ok(()),
        Some(ring) => Err(ringtrace_tracing::LocalSpanRingAlreadySet::new(
            ring.clock_info().name,
            ring.file_path().map(|p| p.display().to_string()),
        )),
    }
}
