//! A trace of one or more processes: each process's recovered ring file,
//! decoded by its own metadata, and every event placed on one timeline,
//! so that the dump and the exporters merge them in time order.

use super::decode::Decoder;
use super::summary::{metadata_decoder, MetadataDecoder, UnusableMetadata};
use super::text::comm;
use ringtrace_clock::{Guarantee, TickConversion};
use ringtrace_ring::file::{EventSource, FileClock, Recovery};
use ringtrace_ring::Event;
use thiserror::Error;

/// How the processes' timestamps are put on one timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Alignment {
    /// The processes share one clock, comparable across processes (the
    /// same name and conversion, ordered globally): their ticks are
    /// compared as they are. A trace whose clocks differ is refused
    /// ([`TraceError::IncomparableClocks`]).
    #[default]
    SharedClock,
    /// Each event is placed at its wall-clock time, by its process's
    /// wall-clock anchor (`FileHeader::wall_ns_at`): any clocks, to within
    /// the anchors' precision. Ticks that are not time count as one ns
    /// each after their anchor.
    WallClock,
}

/// Why the processes cannot make one trace.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// No process at all.
    #[error("a trace needs at least one ring file; none was given")]
    Empty,
    /// Two processes' clocks cannot be compared, so their events cannot
    /// be merged in time order as they are.
    #[error(
        "cannot merge {first} and {other} in time order: {why}; align them by their wall-clock anchors instead (--align-wall-clock, Alignment::WallClock)"
    )]
    IncomparableClocks {
        /// The first process, its file and clock, in words.
        first: String,
        /// The process whose clock does not compare with it.
        other: String,
        /// Why, in words.
        why: String,
    },
}

/// One process of a trace: its recovered file and its own decoder.
#[derive(Debug, Clone)]
pub struct Process<'r> {
    /// What was recovered from its ring file.
    pub recovery: &'r Recovery,
    /// Its decoder, by its own metadata and metadata records, and its
    /// metadata in words.
    pub metadata: MetadataDecoder,
    wall: bool,
}

impl<'r> Process<'r> {
    fn new(recovery: &'r Recovery, wall: bool) -> Process<'r> {
        Process {
            recovery,
            metadata: metadata_decoder(recovery),
            wall,
        }
    }

    /// Its pid (the header's).
    pub fn pid(&self) -> u32 {
        self.recovery.header.pid
    }

    /// Its command name, `<...>` when the header has none.
    pub fn comm(&self) -> &'r str {
        comm(self.recovery)
    }

    /// The decoder of its events.
    pub fn decoder(&self) -> &Decoder {
        &self.metadata.decoder
    }

    /// Its metadata in words, or why it cannot be used.
    pub fn summary(&self) -> &Result<String, UnusableMetadata> {
        &self.metadata.summary
    }

    /// `ticks` of its clock on the trace's timeline (see [`Trace::clock`]).
    pub fn timeline(&self, ticks: u64) -> u64 {
        if !self.wall {
            return ticks;
        }
        let h = &self.recovery.header;
        h.wall_ns_at(ticks).unwrap_or_else(|| {
            // Ticks that are not time: one ns each from the anchor.
            if ticks >= h.anchor_ticks {
                h.wall_ns.saturating_add(ticks - h.anchor_ticks)
            } else {
                h.wall_ns.saturating_sub(h.anchor_ticks - ticks)
            }
        })
    }

    /// The earlier of its anchor and its first event, on the timeline.
    pub(crate) fn start(&self) -> u64 {
        let r = self.recovery;
        let first = r
            .cpus
            .iter()
            .filter_map(|c| c.events.iter().map(|e| e.ts).min())
            .min();
        let anchor = r.header.anchor_ticks;
        self.timeline(first.map_or(anchor, |f| f.min(anchor)))
    }

    /// The process in words: `process 12 (app, /tmp/app.ring) on clock `mono``.
    fn words(&self) -> String {
        format!(
            "process {} ({}, {}) on clock `{}`",
            self.pid(),
            self.comm(),
            self.recovery.path.display(),
            self.recovery.header.clock.name
        )
    }
}

/// One event of a trace: which process, the event, and its time on the
/// trace's timeline.
#[derive(Debug, Clone, Copy)]
pub struct TraceEvent<'r> {
    /// The index of its process in [`Trace::processes`].
    pub process: usize,
    /// The event as recovered.
    pub event: &'r Event,
    /// Its time on the timeline ([`Trace::clock`]'s ticks).
    pub ts: u64,
}

/// The recovered ring files of one or more processes, ready to be dumped
/// or exported as one trace.
///
/// Each process's events are decoded by its own metadata; their times are
/// put on one timeline ([`Alignment`]), in the ticks of [`Trace::clock`]:
/// the processes' shared clock, or wall-clock ns since the Unix epoch.
///
/// ```
/// use ringtrace_export::{Alignment, Trace, TraceError};
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-trace-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let mut recoveries = Vec::new();
/// for name in ["a.ring", "b.ring"] {
///     let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(dir.join(name));
///     let ring = RingBuffer::new(config, ringtrace_clock::Counter::new())?;
///     ring.write(b"x")?;
///     drop(ring);
///     recoveries.push(file::recover(dir.join(name))?);
/// }
/// // A counter's ticks are not time: two of them do not compare...
/// let err = Trace::new(&recoveries, Alignment::SharedClock).unwrap_err();
/// assert!(matches!(err, TraceError::IncomparableClocks { .. }), "{err}");
/// // ...unless placed by their wall-clock anchors.
/// let trace = Trace::new(&recoveries, Alignment::WallClock)?;
/// assert_eq!(trace.events().len(), 2);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Trace<'r> {
    processes: Vec<Process<'r>>,
    align: Alignment,
    clock: FileClock,
    source: Option<Source<'r>>,
}

/// Where a streamed trace's events come from.
#[derive(Clone, Copy)]
pub(crate) struct Source<'r>(pub &'r dyn EventSource);

impl std::fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSource")
    }
}

/// The timeline's clock under [`Alignment::WallClock`]: ns since the epoch.
fn wall_clock() -> FileClock {
    FileClock {
        name: "wall-clock".into(),
        frequency_hz: Some(1_000_000_000),
        mult: Some(TickConversion::NANOSECONDS.mult()),
        shift: TickConversion::SHIFT,
        ticks_are_ns: true,
        guarantee: Guarantee::Global,
        precision_ns: Some(1.0),
    }
}

/// Why the clocks `a` (of the first process) and `b` do not compare, if
/// they do not: what [`Trace::new`] refuses under
/// [`Alignment::SharedClock`] (a recorder warns with it as it adds a
/// process).
///
/// ```
/// use ringtrace_export::clocks_incomparable;
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// let header = |clock: &str| {
///     let clock = clock.parse::<ringtrace_clock::ClockSpec>().unwrap().build().unwrap();
///     let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192), clock).unwrap();
///     ring.snapshot(Vec::new()).header.clock
/// };
/// assert_eq!(clocks_incomparable(&header("mono"), &header("mono")), None);
/// assert!(clocks_incomparable(&header("mono"), &header("counter")).is_some());
/// ```
pub fn clocks_incomparable(a: &FileClock, b: &FileClock) -> Option<String> {
    for c in [a, b] {
        if c.mult.is_none() {
            return Some(format!(
                "clock `{}` counts ticks that are not time, which no other process shares",
                c.name
            ));
        }
        if c.guarantee != Guarantee::Global {
            return Some(format!(
                "clock `{}` is ordered {}, not globally, so its readings do not compare across processes",
                c.name, c.guarantee
            ));
        }
    }
    if a.name != b.name {
        return Some(format!("clocks `{}` and `{}` differ", a.name, b.name));
    }
    if (a.mult, a.shift) != (b.mult, b.shift) && !same_counter(a, b) {
        return Some(format!(
            "clock `{}` converts ticks to ns differently in each (ns = ticks x {} >> {} and x {} >> {})",
            a.name,
            a.mult.unwrap_or(0),
            a.shift,
            b.mult.unwrap_or(0),
            b.shift
        ));
    }
    None
}

/// Whether `a` and `b`, of the same name, are one counter calibrated in
/// each process (the TSC: each process measures its frequency), whose
/// ticks therefore compare: conversions within 100 parts per million,
/// which the first process's then converts for all.
fn same_counter(a: &FileClock, b: &FileClock) -> bool {
    if a.ticks_are_ns || b.ticks_are_ns || a.shift != b.shift {
        return false;
    }
    match (a.mult, b.mult, a.frequency_hz, b.frequency_hz) {
        (Some(ma), Some(mb), Some(_), Some(_)) => {
            let (ma, mb) = (ma as f64, mb as f64);
            (ma - mb).abs() <= ma.max(mb) * 1e-4
        }
        _ => false,
    }
}

impl<'r> Trace<'r> {
    /// The trace of `recoveries` (one per process), their times aligned
    /// as `align` says. Refuses processes whose clocks do not compare
    /// under [`Alignment::SharedClock`] (one process always does).
    pub fn new(recoveries: &'r [Recovery], align: Alignment) -> Result<Trace<'r>, TraceError> {
        let first = recoveries.first().ok_or(TraceError::Empty)?;
        let wall = align == Alignment::WallClock;
        let processes: Vec<Process<'r>> =
            recoveries.iter().map(|r| Process::new(r, wall)).collect();
        if !wall && processes.len() > 1 {
            for p in &processes[1..] {
                let clock = &p.recovery.header.clock;
                if let Some(why) = clocks_incomparable(&first.header.clock, clock) {
                    return Err(TraceError::IncomparableClocks {
                        first: processes[0].words(),
                        other: p.words(),
                        why,
                    });
                }
            }
        }
        Ok(Trace {
            processes,
            align,
            clock: if wall {
                wall_clock()
            } else {
                first.header.clock.clone()
            },
            source: None,
        })
    }

    /// The trace of one process, on its own clock.
    pub fn single(recovery: &'r Recovery) -> Trace<'r> {
        Trace {
            processes: vec![Process::new(recovery, false)],
            align: Alignment::SharedClock,
            clock: recovery.header.clock.clone(),
            source: None,
        }
    }

    /// The same trace with its events read from `source` (its process `i`
    /// is this trace's process `i`) a batch at a time, not from the
    /// recoveries: a session opened streamed, whose recoveries hold no
    /// events. [`Trace::for_each_event`] and the Perfetto export then hold
    /// one batch per CPU buffer, whatever the trace's size; the other
    /// formats read every event into memory first, and
    /// [`Trace::events`] and the dump, which hold references into the
    /// recoveries, see only the events these hold.
    pub fn with_source(mut self, source: &'r dyn EventSource) -> Trace<'r> {
        self.source = Some(Source(source));
        self
    }

    /// Whether its events come from a source ([`Trace::with_source`]).
    pub fn is_streamed(&self) -> bool {
        self.source.is_some()
    }

    /// Its recoveries with every event its source gives read into them,
    /// with the loss notes read with them (as they are, for a trace that
    /// is not streamed): for readers that need the whole trace at once.
    pub fn materialized(&self) -> Vec<Recovery> {
        self.processes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut r = p.recovery.clone();
                if let Some(source) = self.source() {
                    for (cpu, c) in r.cpus.iter_mut().enumerate() {
                        // The recovery's own notes are those after the
                        // last event (a streamed session's); the batches'
                        // are placed among the events they are read with.
                        let mut notes = Vec::new();
                        for batch in source.batches(i, cpu) {
                            let at = c.events.len();
                            notes.extend(batch.loss_notes.into_iter().map(|mut n| {
                                n.before += at;
                                n
                            }));
                            c.events.extend(batch.events);
                            c.fill.extend(batch.fill);
                        }
                        // Those after the last event are the recovery's.
                        notes.retain(|n| n.before < c.events.len());
                        notes.append(&mut c.loss_notes);
                        c.loss_notes = notes;
                        c.counts.recovered = c.events.len() as u64;
                    }
                }
                r
            })
            .collect()
    }

    pub(crate) fn source(&self) -> Option<&'r dyn EventSource> {
        self.source.map(|s| s.0)
    }

    /// The processes, in the order given.
    pub fn processes(&self) -> &[Process<'r>] {
        &self.processes
    }

    /// How the processes' times were aligned.
    pub fn alignment(&self) -> Alignment {
        self.align
    }

    /// The clock of the timeline: the processes' shared clock, or (aligned
    /// by wall clock) ns since the Unix epoch, named `wall-clock`.
    pub fn clock(&self) -> &FileClock {
        &self.clock
    }

    /// Whether it has one process only.
    pub fn is_single(&self) -> bool {
        self.processes.len() == 1
    }

    /// The earliest of the processes' anchors and first events, on the
    /// timeline: where the dump and the exporters count time from.
    pub fn base(&self) -> u64 {
        self.processes.iter().map(Process::start).min().unwrap_or(0)
    }

    /// Every event of every process in time order (ties: by pid, then
    /// CPU, then the order read).
    pub fn events(&self) -> Vec<TraceEvent<'r>> {
        let mut all: Vec<TraceEvent<'r>> = self
            .processes
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                p.recovery
                    .cpus
                    .iter()
                    .flat_map(|c| c.events.iter())
                    .map(move |e| TraceEvent {
                        process: i,
                        event: e,
                        ts: p.timeline(e.ts),
                    })
            })
            .collect();
        let pids: Vec<u32> = self.processes.iter().map(Process::pid).collect();
        all.sort_by_key(|t| (t.ts, pids[t.process], t.event.cpu));
        all
    }

    /// The process whose recovery holds `e` (by address: `e` is one of
    /// [`Trace::events`]); the first process for an event from elsewhere.
    pub fn process_of(&self, e: &Event) -> usize {
        let at: *const Event = e;
        self.processes
            .iter()
            .position(|p| {
                p.recovery
                    .cpus
                    .iter()
                    .any(|c| c.events.as_ptr_range().contains(&at))
            })
            .unwrap_or(0)
    }

    /// What the alignment means for the output, in words: nothing for a
    /// shared clock.
    pub fn alignment_notes(&self) -> Vec<String> {
        if self.align != Alignment::WallClock {
            return Vec::new();
        }
        let mut notes = vec![
            "processes aligned by their wall-clock anchors: each event is placed at its process's anchor (a CLOCK_REALTIME reading taken when its ring was opened) plus its ticks since then; times compare across processes only to within the anchors' precision".to_owned(),
        ];
        for p in &self.processes {
            if p.recovery.header.clock.mult.is_none() {
                notes.push(format!(
                    "process {} ({}): clock `{}` counts ticks that are not time; its events are placed one ns per tick after its anchor, in their order, not at their times",
                    p.pid(),
                    p.comm(),
                    p.recovery.header.clock.name
                ));
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(name: &str, hz: Option<u64>, guarantee: Guarantee) -> FileClock {
        let conversion = hz.and_then(TickConversion::from_frequency);
        FileClock {
            name: name.into(),
            frequency_hz: hz,
            mult: conversion.map(|c| c.mult()),
            shift: TickConversion::SHIFT,
            ticks_are_ns: hz == Some(1_000_000_000),
            guarantee,
            precision_ns: None,
        }
    }

    #[test]
    fn only_one_global_clock_of_time_with_one_conversion_compares_across_processes() {
        let mono = clock("mono", Some(1_000_000_000), Guarantee::Global);
        assert_eq!(clocks_incomparable(&mono, &mono.clone()), None);
        let why = |a: &FileClock, b: &FileClock| clocks_incomparable(a, b).unwrap();
        let counter = clock("counter", None, Guarantee::Global);
        assert!(why(&mono, &counter).contains("`counter` counts ticks that are not time"));
        assert!(why(&counter, &counter).contains("not time"));
        let local = clock("local", Some(2_000_000_000), Guarantee::PerCpu);
        assert!(why(&local, &local).contains("ordered per-cpu, not globally"));
        let boot = clock("boot", Some(1_000_000_000), Guarantee::Global);
        assert!(why(&mono, &boot).contains("clocks `mono` and `boot` differ"));
        let tsc = |hz| clock("tsc", Some(hz), Guarantee::Global);
        let said = why(&tsc(2_400_000_000), &tsc(3_000_000_000));
        assert!(
            said.contains("differently") && !said.contains("Some"),
            "{said}"
        );
        // One counter calibrated by each process: a few ticks a second
        // apart, the same clock.
        assert_eq!(
            clocks_incomparable(&tsc(2_100_000_343), &tsc(2_100_000_146)),
            None
        );
    }
}
