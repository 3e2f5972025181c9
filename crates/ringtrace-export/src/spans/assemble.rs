//! The walk that puts span trees back together: each `tracing` record of
//! the trace, in time order, applied to the spans still open, each tree
//! handed over when its last span closes.

use super::ids::stable_hash;
use super::{trace_id_of, Assembled, EventData, SpanData, SpanLink, SpanTree};
use crate::decode::Decoded;
use crate::trace::Trace;
use ringtrace_tracepoint::tracing_record::{RecordKind, TracingRecord};
use ringtrace_tracepoint::FieldValue;
use std::collections::HashMap;

/// What [`assemble`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AssembleSummary {
    /// Trees handed over.
    pub trees: u64,
    /// Spans in them.
    pub spans: u64,
    /// Spans never closed in the trace (ended at its last time).
    pub unclosed: u64,
    /// `tracing` events, inside spans or not.
    pub events: u64,
    /// Of those, events outside any span.
    pub loose_events: u64,
    /// Span records (enter, exit, close, record, link) of spans whose
    /// creation is not in the trace (overwritten, lost, or before it
    /// began): left out.
    pub orphan_records: u64,
    /// Spans whose parent's creation is not in the trace: made roots.
    pub orphan_spans: u64,
    /// Events that are not `tracing` records (tracepoints, raw), left
    /// to the event exporters.
    pub other_events: u64,
}

/// A span still open: where it is.
#[derive(Debug, Clone, Copy)]
struct Live {
    /// Its tree, by its root's uid.
    root: u64,
    /// Its place in the tree's spans.
    index: usize,
}

/// A tree with spans still open.
#[derive(Debug)]
struct OpenTree {
    spans: Vec<SpanData>,
    open: usize,
}

/// A thread's entered span: its id and uid (the id may have been reused
/// once it closed without its exit in the trace), and when it was entered
/// (ns).
#[derive(Debug, Clone, Copy)]
struct Entered {
    id: u64,
    uid: u64,
    at: u64,
}

/// Which process a record is from: its place in the trace, and what its
/// spans' uids are made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessKey {
    /// Its place in the trace (what [`SpanData::process`] holds).
    pub index: usize,
    /// Its pid.
    pub pid: u32,
    /// Its ring header's anchor ticks (a pid reused by a later process
    /// has another).
    pub anchor_ticks: u64,
}

impl ProcessKey {
    /// The key of process `index` with `pid` and `anchor_ticks`.
    pub fn new(index: usize, pid: u32, anchor_ticks: u64) -> ProcessKey {
        ProcessKey {
            index,
            pid,
            anchor_ticks,
        }
    }
}

/// Span trees put back together one record at a time, for a reader that
/// gets records as they come (a recorder draining live rings) rather
/// than a whole [`Trace`]; [`assemble`] is this over a trace.
///
/// Records must come in time order for each span; trees are handed over
/// by [`Assembler::take`] once whole, and by [`Assembler::finish`] at the
/// end.
#[derive(Debug, Default)]
pub struct Assembler {
    live: HashMap<(usize, u64), Live>,
    trees: HashMap<(usize, u64), OpenTree>,
    stacks: HashMap<(usize, u32), Vec<Entered>>,
    summary: AssembleSummary,
    last_ns: u64,
    ready: Vec<Assembled>,
}

/// Walks `trace` in time order and hands each [`SpanTree`] to `f` when
/// its last span closes, each event outside any span as it comes, and
/// the trees still open at the end (their open spans ended at the
/// trace's last time, `closed: false`). Stops at `f`'s first error.
///
/// ```
/// use ringtrace_export::spans::{assemble, Assembled};
/// use ringtrace_export::Trace;
/// # let dir = std::env::temp_dir().join(format!("ringtrace-assemble-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let path = dir.join("empty.ring");
/// # let config = ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path);
/// # drop(ringtrace_ring::RingBuffer::new(config, ringtrace_clock::Counter::new())?);
/// let recovery = ringtrace_ring::file::recover(&path)?;
/// let mut trees = 0;
/// let summary = assemble::<std::io::Error>(&Trace::single(&recovery), &mut |a| {
///     if let Assembled::Tree(_) = a {
///         trees += 1;
///     }
///     Ok(())
/// })?;
/// assert_eq!((trees, summary.trees), (0, 0));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn assemble<E>(
    trace: &Trace<'_>,
    f: &mut dyn FnMut(Assembled) -> Result<(), E>,
) -> Result<AssembleSummary, E> {
    let mut assembler = Assembler::new();
    let clock = trace.clock().clone();
    let ns = |ticks: u64| clock.ticks_to_ns(ticks).unwrap_or(ticks);
    trace.for_each_event(&mut |process, e, ts| {
        let p = &trace.processes()[process];
        let h = &p.recovery.header;
        let key = ProcessKey::new(process, h.pid, h.anchor_ticks);
        match p.decoder().decode(&e.payload) {
            Decoded::Tracing(r) => {
                let start = r.start.map(|s| ns(p.timeline(s)));
                assembler.record(key, &r, e.cpu, ns(ts), start);
            }
            _ => assembler.other(ns(ts)),
        }
        for a in assembler.take() {
            f(a)?;
        }
        Ok(())
    })?;
    let (rest, summary) = assembler.finish();
    for a in rest {
        f(a)?;
    }
    Ok(summary)
}

/// A field list as owned pairs, without `skip`.
fn owned(r: &TracingRecord<'_>, skip: Option<&str>) -> Vec<(String, FieldValue)> {
    r.fields
        .iter()
        .filter(|f| Some(f.name) != skip)
        .map(|f| (f.name.to_owned(), f.value.clone()))
        .collect()
}

impl Assembler {
    /// An assembler with nothing open.
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Applies `tracing` record `r` of process `key`, read from CPU `cpu`
    /// at `at` (ns on the timeline); `start` is a local span's start (ns),
    /// which the record holds in ticks.
    pub fn record(
        &mut self,
        key: ProcessKey,
        r: &TracingRecord<'_>,
        cpu: usize,
        at: u64,
        start: Option<u64>,
    ) {
        self.last_ns = self.last_ns.max(at);
        let process = key.index;
        let id = r.span.unwrap_or(0);
        match r.kind {
            RecordKind::Event | RecordKind::EventIn => return self.event(process, r, cpu, at),
            RecordKind::SpanNew => return self.new_span(key, r, cpu, at),
            RecordKind::LocalSpan => {
                let start = start.map_or(at, |s| s.min(at));
                return self.local_span(key, r, cpu, (start, at));
            }
            _ => {}
        }
        let Some(live) = self.live.get(&(process, id)).copied() else {
            self.summary.orphan_records += 1;
            return;
        };
        match r.kind {
            RecordKind::SpanRecord => {
                let fields = owned(r, None);
                let span = self.span_mut(process, live);
                for (name, value) in fields {
                    match span.fields.iter_mut().find(|(n, _)| *n == name) {
                        Some(old) => old.1 = value,
                        None => span.fields.push((name, value)),
                    }
                }
            }
            RecordKind::SpanEnter => {
                let span = self.span_mut(process, live);
                if !span.threads.contains(&r.tid) {
                    span.threads.push(r.tid);
                }
                let uid = span.uid;
                self.stacks
                    .entry((process, r.tid))
                    .or_default()
                    .push(Entered { id, uid, at });
            }
            RecordKind::SpanExit => {
                let uid = self.span_mut(process, live).uid;
                let stack = self.stacks.entry((process, r.tid)).or_default();
                if let Some(i) = stack.iter().rposition(|e| e.uid == uid) {
                    let entered = stack.remove(i);
                    // A thread inside a span twice (entered again before
                    // it exited) is inside it once: its time counts from
                    // its first enter to its last exit. The innermost
                    // entry goes first, so the last one left is the
                    // earliest.
                    if !stack.iter().any(|e| e.uid == uid) {
                        let span = self.span_mut(process, live);
                        span.busy_ns = span.busy_ns.saturating_add(at.saturating_sub(entered.at));
                    }
                }
            }
            RecordKind::SpanFollows => {
                let from = r
                    .follows
                    .and_then(|f| self.live.get(&(process, f)).copied())
                    .and_then(|l| {
                        let tree = self.trees.get(&(process, l.root))?;
                        Some(SpanLink {
                            uid: tree.spans[l.index].uid,
                            trace_id: trace_id_of(&tree.spans[0]),
                        })
                    });
                if let Some(link) = from {
                    let span = self.span_mut(process, live);
                    if !span.follows.iter().any(|l| l.uid == link.uid) {
                        span.follows.push(link);
                    }
                }
            }
            RecordKind::SpanClose => self.close(process, id, live, at, true),
            _ => {}
        }
    }

    /// Counts an event that is no `tracing` record, at `at` (ns).
    pub fn other(&mut self, at: u64) {
        self.last_ns = self.last_ns.max(at);
        self.summary.other_events += 1;
    }

    /// The trees made whole and the events outside spans since the last
    /// call, in the order they came.
    pub fn take(&mut self) -> std::vec::Drain<'_, Assembled> {
        self.ready.drain(..)
    }

    /// Trees with a span still open.
    pub fn open_trees(&self) -> usize {
        self.trees.len()
    }

    /// What was found so far.
    pub fn summary(&self) -> AssembleSummary {
        self.summary
    }

    fn span_mut(&mut self, process: usize, live: Live) -> &mut SpanData {
        let tree = self
            .trees
            .get_mut(&(process, live.root))
            .expect("a live span's tree is open");
        &mut tree.spans[live.index]
    }

    /// The span thread `tid` of `process` is in now, if its creation is
    /// in the trace.
    fn current(&self, process: usize, tid: u32) -> Option<Live> {
        let top = self.stacks.get(&(process, tid))?.last()?;
        let live = self.live.get(&(process, top.id)).copied()?;
        let tree = self.trees.get(&(process, live.root))?;
        (tree.spans[live.index].uid == top.uid).then_some(live)
    }

    fn event(&mut self, process: usize, r: &TracingRecord<'_>, cpu: usize, at: u64) {
        self.summary.events += 1;
        let message = r.fields.iter().find_map(|f| match (&f.value, f.name) {
            (FieldValue::Str(s), "message") => Some(s.clone()),
            _ => None,
        });
        let skip = message.as_ref().map(|_| "message");
        let mut event = EventData {
            process,
            ts_ns: at,
            tid: r.tid,
            cpu,
            name: message.unwrap_or_else(|| r.callsite.name.clone()),
            target: r.callsite.target.clone(),
            level: r.callsite.level.0,
            fields: owned(r, skip),
            span: None,
        };
        // An event made with its parent given is in that span (or in none,
        // for `parent: None`); any other in its thread's current span.
        let live = match r.kind {
            RecordKind::EventIn => r.parent.and_then(|p| self.live.get(&(process, p)).copied()),
            _ => self.current(process, r.tid),
        };
        match live {
            Some(live) => {
                let span = self.span_mut(process, live);
                event.span = Some(span.uid);
                span.events.push(event);
            }
            None => {
                self.summary.loose_events += 1;
                self.ready.push(Assembled::Event(event));
            }
        }
    }

    fn new_span(&mut self, key: ProcessKey, r: &TracingRecord<'_>, cpu: usize, at: u64) {
        let process = key.index;
        let id = r.span.unwrap_or(0);
        if let Some(old) = self.live.get(&(process, id)).copied() {
            // Its id was reused, so it closed, but the close is not in the
            // trace.
            self.close(process, id, old, at, false);
        }
        let uid = stable_hash(&[u64::from(key.pid), key.anchor_ticks, id, at]);
        let parent = r
            .parent
            .and_then(|pid| self.live.get(&(process, pid)).copied());
        if r.parent.is_some() && parent.is_none() {
            self.summary.orphan_spans += 1;
        }
        let mut span = SpanData {
            process,
            uid,
            parent: None,
            id,
            name: r.callsite.name.clone(),
            target: r.callsite.target.clone(),
            level: r.callsite.level.0,
            start_ns: at,
            end_ns: at,
            closed: false,
            busy_ns: 0,
            tid: r.tid,
            cpu,
            threads: Vec::new(),
            fields: owned(r, None),
            follows: Vec::new(),
            events: Vec::new(),
            local: false,
        };
        let live = match parent {
            Some(parent) => {
                span.parent = Some(self.span_mut(process, parent).uid);
                let tree = self
                    .trees
                    .get_mut(&(process, parent.root))
                    .expect("a live span's tree is open");
                tree.spans.push(span);
                tree.open += 1;
                Live {
                    root: parent.root,
                    index: tree.spans.len() - 1,
                }
            }
            None => {
                self.trees.insert(
                    (process, uid),
                    OpenTree {
                        spans: vec![span],
                        open: 1,
                    },
                );
                Live {
                    root: uid,
                    index: 0,
                }
            }
        };
        self.live.insert((process, id), live);
    }

    fn local_span(
        &mut self,
        key: ProcessKey,
        r: &TracingRecord<'_>,
        cpu: usize,
        (start, end): (u64, u64),
    ) {
        let process = key.index;
        let uid = stable_hash(&[
            u64::from(key.pid),
            key.anchor_ticks,
            u64::MAX,
            u64::from(r.tid),
            start,
            end,
        ]);
        let mut span = SpanData {
            process,
            uid,
            parent: None,
            id: 0,
            name: r.callsite.name.clone(),
            target: r.callsite.target.clone(),
            level: r.callsite.level.0,
            start_ns: start,
            end_ns: end,
            closed: true,
            busy_ns: end - start,
            tid: r.tid,
            cpu,
            threads: vec![r.tid],
            fields: owned(r, None),
            follows: Vec::new(),
            events: Vec::new(),
            local: true,
        };
        let parent = self.current(process, r.tid).filter(|l| {
            self.trees
                .get(&(process, l.root))
                .is_some_and(|t| t.spans[l.index].start_ns <= start)
        });
        match parent {
            Some(parent) => {
                span.parent = Some(self.span_mut(process, parent).uid);
                let tree = self
                    .trees
                    .get_mut(&(process, parent.root))
                    .expect("a live span's tree is open");
                tree.spans.push(span);
            }
            None => self.hand_over(SpanTree {
                process,
                spans: vec![span],
            }),
        }
    }

    /// Ends span `id` at `at`; hands its tree over if it was the last
    /// open.
    fn close(&mut self, process: usize, id: u64, live: Live, at: u64, closed: bool) {
        self.live.remove(&(process, id));
        let span = self.span_mut(process, live);
        span.end_ns = at.max(span.start_ns);
        span.closed = closed;
        if !closed {
            self.summary.unclosed += 1;
        }
        let tree = self
            .trees
            .get_mut(&(process, live.root))
            .expect("a live span's tree is open");
        tree.open -= 1;
        if tree.open == 0 {
            let tree = self
                .trees
                .remove(&(process, live.root))
                .expect("the tree is open");
            self.hand_over(SpanTree {
                process,
                spans: tree.spans,
            });
        }
    }

    fn hand_over(&mut self, tree: SpanTree) {
        self.summary.trees += 1;
        self.summary.spans += tree.spans.len() as u64;
        self.ready.push(Assembled::Tree(tree));
    }

    /// Ends every span still open at the last time seen (`closed:
    /// false`), and returns what was not taken yet with their trees,
    /// oldest root first, and the summary.
    pub fn finish(mut self) -> (Vec<Assembled>, AssembleSummary) {
        let end = self.last_ns;
        // Threads still inside a span: their time counts to the end.
        let stacks: Vec<((usize, u32), Vec<Entered>)> = self.stacks.drain().collect();
        for ((process, _), stack) in stacks {
            // Once per span a thread is inside, from its earliest enter.
            let mut seen = std::collections::HashSet::new();
            for entered in stack {
                if !seen.insert(entered.uid) {
                    continue;
                }
                let Some(live) = self.live.get(&(process, entered.id)).copied() else {
                    continue;
                };
                let span = self.span_mut(process, live);
                if span.uid == entered.uid {
                    span.busy_ns = span.busy_ns.saturating_add(end.saturating_sub(entered.at));
                }
            }
        }
        let live: Vec<((usize, u64), Live)> = self.live.drain().collect();
        for ((process, _), live) in live {
            let span = self.span_mut(process, live);
            span.end_ns = end.max(span.start_ns);
            self.summary.unclosed += 1;
        }
        let mut open: Vec<((usize, u64), OpenTree)> = self.trees.drain().collect();
        open.sort_by_key(|(key, t)| (t.spans[0].start_ns, *key));
        for ((process, _), tree) in open {
            self.hand_over(SpanTree {
                process,
                spans: tree.spans,
            });
        }
        (self.ready, self.summary)
    }
}
