//! The walk over a trace's events in time order, writing each as track
//! events: a tracepoint as an instant on its thread's track, a span edge
//! as a slice's begin or end (a preemptirq section on its CPU's track),
//! a counter tracepoint as counter samples, an untagged or undecodable
//! payload as an instant on its process's main thread; a loss as an
//! instant on its process's track and a sample of its CPU's events-lost
//! counter. `tracing` records are the spans module's.

use super::lanes::{Lane, Lanes};
use super::sink::{Arg, EventType, Sample, SeqKey, Sink, TrackEvent};
use super::stacks::{Open, Stacks};
use super::tasks::{SpanKey, Tasks};
use super::tracks::{TrackKey, Tracks};
use crate::decode::Decoded;
use crate::export::chrome::{is_counter, span_edge, SpanEdge};
use crate::metadata::TracepointDesc;
use crate::text::hex;
use crate::trace::{Process, Trace};
use ringtrace_ring::file::FillSample;
use ringtrace_ring::Event;
use ringtrace_tracepoint::FieldValue;
use std::collections::HashMap;
use std::io;

/// What the walk counted.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    /// Span ends with no open span to close (drawn as instants).
    pub unmatched: u64,
    /// Slices still open at the trace's end, ended there.
    pub closed_at_end: u64,
    /// Events lost, as the markers say.
    pub lost: u64,
    /// Events written.
    pub events: u64,
}

/// A live `tracing` span: what its slices are drawn with.
#[derive(Debug, Clone)]
pub(super) struct Live {
    /// Which span it is (its id may be reused once it closes).
    pub key: SpanKey,
    pub name: String,
    pub target: String,
    pub args: Vec<Arg<'static>>,
    /// Values recorded after its creation (a task's, given at its close).
    pub recorded: Vec<Arg<'static>>,
    /// Its task track, while its task slice is open.
    pub task_track: Option<u64>,
    /// Whether a slice of it was drawn (its first takes its links).
    pub drawn: bool,
    /// The thread that entered it last.
    pub polled_by: Option<u32>,
}

/// The walk's state.
pub(super) struct Walk<'t, 's, 'w> {
    pub trace: &'t Trace<'t>,
    pub sink: &'s mut Sink<'w>,
    pub tracks: Tracks,
    pub stacks: Stacks,
    pub lanes: Lanes,
    pub tasks: Tasks,
    /// By process and span id.
    pub spans: HashMap<(u32, u64), Live>,
    lost: HashMap<(u32, usize), u64>,
    pub counts: Counts,
    /// The latest time written, ns.
    pub last_ns: u64,
    /// The last thread written to: its sequence and track.
    last_thread: Option<((u32, u32), SeqKey, u64)>,
    /// Events read, by process and CPU.
    pub per_cpu: HashMap<(usize, usize), u64>,
    /// The last event's time, ns, by process and CPU.
    last_at: HashMap<(usize, usize), u64>,
}

/// `cpu`, then `fields` under their names (one named like an annotation
/// already there as `field:NAME`), each after `prefix`.
pub(super) fn with_cpu<'a>(
    cpu: &'a FieldValue,
    fields: &[(&'a str, &'a FieldValue)],
    prefix: &str,
) -> Vec<Arg<'a>> {
    let mut args = vec![Arg::of("cpu", cpu)];
    for (name, value) in fields {
        let mut arg = Arg::of(name, value);
        if !prefix.is_empty() {
            arg.name = format!("{prefix}{name}").into();
        }
        if args.iter().any(|a| a.name == arg.name) {
            arg.name = format!("field:{}", arg.name).into();
        }
        args.push(arg);
    }
    args
}

impl<'t, 's, 'w> Walk<'t, 's, 'w> {
    pub fn new(trace: &'t Trace<'t>, sink: &'s mut Sink<'w>, tasks: Tasks) -> Self {
        let tracks = Tracks::new(
            trace
                .processes()
                .iter()
                .enumerate()
                .map(|(i, p)| (i as u32, (p.pid(), p.comm().to_owned()))),
        );
        Walk {
            trace,
            sink,
            tracks,
            stacks: Stacks::default(),
            lanes: Lanes::default(),
            tasks,
            spans: HashMap::new(),
            lost: HashMap::new(),
            counts: Counts::default(),
            last_ns: 0,
            last_thread: None,
            per_cpu: HashMap::new(),
            last_at: HashMap::new(),
        }
    }

    /// Every process's track, and the losses of CPUs with no event left
    /// to carry them, at the trace's start.
    pub fn start(&mut self) -> io::Result<()> {
        let trace = self.trace;
        let start = self.sink.time().ns(trace.base());
        self.last_ns = start;
        for (i, _) in trace.processes().iter().enumerate() {
            let key = i as u32;
            self.tracks
                .uuid(self.sink, key, TrackKey::Process(key), None, None)?;
        }
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let count = c.unplaced().no_event;
                if count > 0 {
                    self.loss(
                        i as u32,
                        c.cpu,
                        count,
                        start,
                        Some(("no_event_recovered", FieldValue::Bool(true))),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// The losses no event carries but a CPU with no event's
    /// (`CpuRecovery::unplaced`): refused writes, whose times a ring file
    /// does not record, and losses after a CPU's last event, each at the
    /// time of that CPU's last event (the trace's start if it has none).
    pub fn trailing_losses(&mut self) -> io::Result<()> {
        let trace = self.trace;
        let start = self.sink.time().ns(trace.base());
        let why = |w: &str| Some(("why", FieldValue::Str(w.to_owned())));
        for (i, p) in trace.processes().iter().enumerate() {
            for c in &p.recovery.cpus {
                let u = c.unplaced();
                let at = self.last_at.get(&(i, c.cpu)).copied().unwrap_or(start);
                if u.refused > 0 {
                    self.loss(i as u32, c.cpu, u.refused, at, why("refused_time_unknown"))?;
                }
                if u.after_last > 0 {
                    self.loss(i as u32, c.cpu, u.after_last, at, why("after_last_event"))?;
                }
            }
        }
        Ok(())
    }

    /// Writes event `e` of process `process`, at `ts` on the timeline.
    pub fn event(&mut self, process: usize, e: &Event, ts: u64) -> io::Result<()> {
        let p: &'t Process<'t> = &self.trace.processes()[process];
        // Processes are told apart by their place in the trace (a pid can
        // be reused within a session); `pid` below is that key.
        let pid = process as u32;
        let ns = self.sink.time().ns(ts);
        self.counts.events += 1;
        *self.per_cpu.entry((process, e.cpu)).or_default() += 1;
        self.last_ns = self.last_ns.max(ns);
        let last = self.last_at.entry((process, e.cpu)).or_insert(ns);
        *last = (*last).max(ns);
        if e.lost_before > 0 {
            self.loss(pid, e.cpu, e.lost_before, ns, None)?;
        }
        let cpu = FieldValue::Unsigned(e.cpu as u64);
        let d = p.decoder().decode(&e.payload);
        match &d {
            Decoded::Tracing(r) => self.tracing(process, p, r, e.cpu, (ts, ns)),
            Decoded::Tracepoint { desc, tid, .. } => {
                self.tracepoint(pid, *tid, desc, &cpu, &d.fields(), e.cpu, ns)
            }
            Decoded::Untagged { layout, .. } => {
                let args = with_cpu(&cpu, &d.fields(), "");
                self.instant(pid, p.pid(), ns, &layout.name, "untagged", &args)
            }
            Decoded::Raw { why } => {
                let raw = FieldValue::Str(hex(&e.payload));
                let why = FieldValue::Str(why.clone());
                let args = [
                    Arg::of("cpu", &cpu),
                    Arg::of("raw", &raw),
                    Arg::of("why", &why),
                ];
                self.instant(pid, p.pid(), ns, "raw", "raw", &args)
            }
        }
    }

    /// The sequence of thread (pid, tid), begun with its track as the
    /// default if new, and that track.
    pub fn thread(&mut self, pid: u32, tid: u32) -> io::Result<(SeqKey, u64)> {
        if let Some((thread, seq, track)) = self.last_thread {
            if thread == (pid, tid) {
                return Ok((seq, track));
            }
        }
        let track = self
            .tracks
            .uuid(self.sink, pid, TrackKey::Thread { pid, tid }, None, None)?;
        let seq = SeqKey {
            pid,
            tid: Some(tid),
        };
        self.sink.begin(seq, Some(track))?;
        self.last_thread = Some(((pid, tid), seq, track));
        Ok((seq, track))
    }

    /// An instant on thread (pid, tid)'s track.
    pub fn instant(
        &mut self,
        pid: u32,
        tid: u32,
        ns: u64,
        name: &str,
        category: &str,
        args: &[Arg<'_>],
    ) -> io::Result<()> {
        let (seq, track) = self.thread(pid, tid)?;
        let e = TrackEvent {
            name: Some(name),
            category: Some(category),
            args,
            ..TrackEvent::new(EventType::Instant, track)
        };
        self.sink.event(seq, ns, &e)
    }

    /// Begins `slice` on thread (pid, tid)'s track, with `flows` begun
    /// or continued and `ends` ended there.
    pub fn begin_slice(
        &mut self,
        pid: u32,
        tid: u32,
        ns: u64,
        slice: Open,
        flows: &[u64],
        ends: &[u64],
    ) -> io::Result<()> {
        let (seq, track) = self.thread(pid, tid)?;
        let e = TrackEvent {
            name: Some(&slice.name),
            category: Some(&slice.category),
            args: &slice.args,
            flows,
            ends_flows: ends,
            ..TrackEvent::new(EventType::Begin, track)
        };
        self.sink.event(seq, ns, &e)?;
        self.stacks.begin((pid, tid), slice);
        Ok(())
    }

    /// Ends the slice of `pair` for `name` or `span` on thread (pid,
    /// tid)'s track with `args`: the slices above it end first and begin
    /// again after it. `false` if no such slice is open.
    pub fn end_slice(
        &mut self,
        pid: u32,
        tid: u32,
        ns: u64,
        end: (&str, &str, Option<u64>),
        args: &[Arg<'_>],
    ) -> io::Result<bool> {
        let (pair, name, span) = end;
        let Some(above) = self.stacks.end((pid, tid), pair, name, span) else {
            return Ok(false);
        };
        let (seq, track) = self.thread(pid, tid)?;
        let split = FieldValue::Str(name.to_owned());
        let split_args = [Arg::of("split_by_end_of", &split)];
        for _ in &above {
            let e = TrackEvent {
                args: &split_args,
                ..TrackEvent::new(EventType::End, track)
            };
            self.sink.event(seq, ns, &e)?;
        }
        let e = TrackEvent {
            args,
            ..TrackEvent::new(EventType::End, track)
        };
        self.sink.event(seq, ns, &e)?;
        for o in above {
            let mut again = o.args.clone();
            again.push(Arg::owned("continued", FieldValue::Bool(true)));
            let e = TrackEvent {
                name: Some(&o.name),
                category: Some(&o.category),
                args: &again,
                ..TrackEvent::new(EventType::Begin, track)
            };
            self.sink.event(seq, ns, &e)?;
        }
        Ok(true)
    }

    /// A tracepoint's event.
    #[allow(clippy::too_many_arguments)]
    fn tracepoint(
        &mut self,
        pid: u32,
        tid: u32,
        desc: &TracepointDesc,
        cpu: &FieldValue,
        fields: &[(&str, &FieldValue)],
        cpu_index: usize,
        ns: u64,
    ) -> io::Result<()> {
        let category = desc.name.split_once(':').map_or("tracepoint", |(s, _)| s);
        if let Some(edge) = span_edge(&desc.name) {
            let drawn = if edge.pair == "disable/enable" {
                self.section(pid, tid, &edge, cpu, fields, cpu_index, ns)?
            } else if edge.begins {
                let slice = Open {
                    name: edge.span.clone(),
                    category: category.to_owned(),
                    pair: edge.pair,
                    span: None,
                    args: with_cpu(cpu, fields, "")
                        .into_iter()
                        .map(Arg::into_owned)
                        .collect(),
                };
                self.begin_slice(pid, tid, ns, slice, &[], &[])?;
                true
            } else {
                let args = with_cpu(cpu, fields, "end_");
                self.end_slice(pid, tid, ns, (edge.pair, &edge.span, None), &args)?
            };
            if !drawn {
                self.counts.unmatched += 1;
                let unmatched = FieldValue::Str(edge.span.clone());
                let mut args = with_cpu(cpu, fields, "");
                args.push(Arg::of("unmatched_end", &unmatched));
                self.instant(pid, tid, ns, &desc.name, category, &args)?;
            }
            return Ok(());
        }
        if is_counter(&desc.name, &desc.fields) {
            let (seq, _) = self.thread(pid, tid)?;
            for (series, value) in fields {
                let sample = match value {
                    FieldValue::Unsigned(v) => Sample::Int(i64::try_from(*v).unwrap_or(i64::MAX)),
                    FieldValue::Signed(v) => Sample::Int(*v),
                    FieldValue::Float(v) => Sample::Double(*v),
                    _ => continue,
                };
                let name = if fields.len() == 1 {
                    desc.name.clone()
                } else {
                    format!("{}.{series}", desc.name)
                };
                let track = self.tracks.uuid(
                    self.sink,
                    pid,
                    TrackKey::Counter { pid, name },
                    None,
                    None,
                )?;
                let e = TrackEvent::new(EventType::Counter(sample), track);
                self.sink.event(seq, ns, &e)?;
            }
            return Ok(());
        }
        let args = with_cpu(cpu, fields, "");
        self.instant(pid, tid, ns, &desc.name, category, &args)
    }

    /// A preemptirq section's edge, on the track of the CPU it began on:
    /// `false` for an end with no section open.
    #[allow(clippy::too_many_arguments)]
    fn section(
        &mut self,
        pid: u32,
        tid: u32,
        edge: &SpanEdge,
        cpu: &FieldValue,
        fields: &[(&str, &FieldValue)],
        cpu_index: usize,
        ns: u64,
    ) -> io::Result<bool> {
        let (seq, _) = self.thread(pid, tid)?;
        let tid_value = FieldValue::Unsigned(u64::from(tid));
        let (kind, lane, mut args) = if edge.begins {
            let lane = self.lanes.begin(pid, tid, cpu_index, &edge.span);
            (EventType::Begin, lane, with_cpu(cpu, fields, ""))
        } else {
            let Some(lane) = self.lanes.end(pid, tid, &edge.span) else {
                return Ok(false);
            };
            (EventType::End, lane, with_cpu(cpu, fields, "end_"))
        };
        args.push(Arg::of("tid", &tid_value));
        let track = self.lane_track(pid, &lane)?;
        let e = TrackEvent {
            name: edge.begins.then_some(edge.span.as_str()),
            category: edge.begins.then_some("preemptirq"),
            args: &args,
            ..TrackEvent::new(kind, track)
        };
        self.sink.event(seq, ns, &e)?;
        Ok(true)
    }

    /// The track of a CPU's lane.
    pub fn lane_track(&mut self, writer: u32, lane: &Lane) -> io::Result<u64> {
        let key = TrackKey::Cpu {
            cpu: lane.cpu,
            section: lane.section.clone(),
            lane: lane.lane,
        };
        self.tracks.uuid(self.sink, writer, key, None, None)
    }

    /// How full CPU buffer `cpu` of the `process`-th process was at `ts`
    /// (timeline): a sample of its `buffer fill` counter, in percent of
    /// its pages.
    pub fn fill(
        &mut self,
        process: usize,
        cpu: usize,
        sample: &FillSample,
        ts: u64,
    ) -> io::Result<()> {
        let pid = process as u32;
        let ns = self.sink.time().ns(ts);
        let name = format!("cpu {cpu}: buffer fill (%)");
        let track =
            self.tracks
                .uuid(self.sink, pid, TrackKey::Counter { pid, name }, None, None)?;
        let percent = f64::from(sample.pages) * 100.0 / f64::from(sample.capacity.max(1));
        let seq = SeqKey { pid, tid: None };
        let e = TrackEvent::new(EventType::Counter(Sample::Double(percent)), track);
        self.sink.event(seq, ns, &e)
    }

    /// `count` events of process `pid`'s CPU `cpu` lost just before `ns`:
    /// an instant `lost` on the process's track, and the CPU's
    /// events-lost counter.
    fn loss(
        &mut self,
        pid: u32,
        cpu: usize,
        count: u64,
        ns: u64,
        extra: Option<(&str, FieldValue)>,
    ) -> io::Result<()> {
        self.counts.lost += count;
        let total = self.lost.entry((pid, cpu)).or_default();
        *total = total.saturating_add(count);
        let total = *total;
        let seq = SeqKey { pid, tid: None };
        let process = self
            .tracks
            .uuid(self.sink, pid, TrackKey::Process(pid), None, None)?;
        let (cpu_v, count_v) = (
            FieldValue::Unsigned(cpu as u64),
            FieldValue::Unsigned(count),
        );
        let mut args = vec![Arg::of("cpu", &cpu_v), Arg::of("count", &count_v)];
        if let Some((name, v)) = &extra {
            args.push(Arg::of(name, v));
        }
        let e = TrackEvent {
            name: Some("lost"),
            category: Some("ringtrace"),
            args: &args,
            ..TrackEvent::new(EventType::Instant, process)
        };
        self.sink.event(seq, ns, &e)?;
        let name = format!("cpu {cpu}: events lost");
        let counter =
            self.tracks
                .uuid(self.sink, pid, TrackKey::Counter { pid, name }, None, None)?;
        let sample = Sample::Int(i64::try_from(total).unwrap_or(i64::MAX));
        self.sink.event(
            seq,
            ns,
            &TrackEvent::new(EventType::Counter(sample), counter),
        )
    }

    /// Ends every slice still open at the trace's last time, with
    /// `unclosed: true`.
    pub fn finish(&mut self) -> io::Result<()> {
        let ns = self.last_ns;
        let unclosed = FieldValue::Bool(true);
        let args = [Arg::of("unclosed", &unclosed)];
        for ((pid, tid), open) in self.stacks.take_all() {
            let (seq, track) = self.thread(pid, tid)?;
            for _ in open {
                self.counts.closed_at_end += 1;
                let e = TrackEvent {
                    args: &args,
                    ..TrackEvent::new(EventType::End, track)
                };
                self.sink.event(seq, ns, &e)?;
            }
        }
        for ((pid, tid), lane) in self.lanes.take_all() {
            let (seq, _) = self.thread(pid, tid)?;
            let track = self.lane_track(pid, &lane)?;
            self.counts.closed_at_end += 1;
            let e = TrackEvent {
                args: &args,
                ..TrackEvent::new(EventType::End, track)
            };
            self.sink.event(seq, ns, &e)?;
        }
        self.finish_tasks(ns)
    }
}
