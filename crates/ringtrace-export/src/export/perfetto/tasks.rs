//! Which `tracing` spans are async tasks, and the flows that link spans,
//! found in one pass over the trace before it is written.
//!
//! A span entered more than once, or on more than one thread (an
//! `#[instrument] async fn`, a future under `.instrument()`, polled by
//! one worker and then another), is a task: it gets a track of its own,
//! on which one slice spans its life (creation to close), and a flow
//! (its chain) that runs from that slice through the slices of the
//! threads that polled it, in time order: the first poll, and each poll
//! by another thread than the one before. Any other span is a slice on the
//! thread that entered it. A span that follows from another
//! (`Span::follows_from`) has a flow from the other's first slice to its
//! own; a link whose two spans are not both drawn (a record overwritten)
//! is left out, so that every flow connects two slices.
//!
//! Span ids are reused once a span closes, so a span is known by its
//! process, its id and its creation's time. The pass holds the spans open
//! at each point of the trace, the tasks and links it found, and the
//! last [`RECENT`] spans closed (a span may be followed from after it
//! closed: a link to one closed longer ago is not drawn, and counted).

use crate::trace::Trace;
use ringtrace_tracepoint::tracing_record::RecordKind;
use std::collections::{HashMap, HashSet, VecDeque};

/// A span: its process (its place in the trace), its id, and its
/// creation's time on the timeline (0 when its creation is not in the
/// trace).
pub(super) type SpanKey = (u32, u64, u64);

/// Spans closed whose links are still looked for.
pub(super) const RECENT: usize = 1 << 16;

/// What the pass saw of one span.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    created: bool,
    enters: u64,
    first_tid: Option<u32>,
    threads: bool,
}

impl Seen {
    fn is_task(&self) -> bool {
        self.enters > 1 || self.threads
    }

    /// Whether a slice of it is drawn: a task's at its creation, another
    /// span's when it is entered.
    fn drawn(&self) -> bool {
        if self.is_task() {
            self.created
        } else {
            self.enters > 0
        }
    }
}

/// The tasks and flows of a trace.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    chains: HashMap<SpanKey, u64>,
    /// Flows a span's first slice begins (it is a cause) and ends (it
    /// follows from another).
    causes: HashMap<SpanKey, Vec<u64>>,
    follows: HashMap<SpanKey, Vec<u64>>,
    /// Spans that are tasks.
    tasks: HashSet<SpanKey>,
    /// `follows_from` links drawn as flows, and those not drawn: a span
    /// they join not in the trace (or closed too long before), or in it
    /// but never entered (it has no slice to draw a flow from).
    pub links: u64,
    pub links_dropped: u64,
    pub links_unentered: u64,
}

/// The pass's state.
#[derive(Default)]
struct Pass {
    open: HashMap<(u32, u64), (SpanKey, Seen)>,
    recent: VecDeque<SpanKey>,
    closed: HashMap<(u32, u64), (SpanKey, Seen)>,
    /// Spans that are a link's end, and what was seen of them at close.
    linked: HashMap<SpanKey, Option<Seen>>,
    links: Vec<(SpanKey, SpanKey)>,
    next_flow: u64,
    found: Tasks,
}

impl Pass {
    fn flow(&mut self) -> u64 {
        self.next_flow += 1;
        self.next_flow
    }

    /// `key` is done with: a task keeps its chain.
    fn finish(&mut self, key: SpanKey, seen: Seen) {
        if seen.is_task() {
            self.found.tasks.insert(key);
            // A chain starts at the task's slice: none without it.
            if seen.created {
                let flow = self.flow();
                self.found.chains.insert(key, flow);
            }
        }
        if let Some(at_close) = self.linked.get_mut(&key) {
            *at_close = Some(seen);
        }
        let id = (key.0, key.1);
        self.closed.insert(id, (key, seen));
        self.recent.push_back(key);
        if self.recent.len() > RECENT {
            if let Some(old) = self.recent.pop_front() {
                if self
                    .closed
                    .get(&(old.0, old.1))
                    .is_some_and(|(k, _)| *k == old)
                {
                    self.closed.remove(&(old.0, old.1));
                }
            }
        }
    }

    /// The span of `id` a link names: the one open, else the one closed
    /// last (if recent).
    fn named(&self, id: (u32, u64)) -> Option<SpanKey> {
        self.open
            .get(&id)
            .or_else(|| self.closed.get(&id))
            .map(|(key, _)| *key)
    }
}

impl Tasks {
    /// Finds the tasks and links among the events of `trace` (a pass
    /// over them).
    pub fn find(trace: &Trace<'_>) -> Tasks {
        let processes = trace.processes();
        let mut pass = Pass::default();
        let _ = trace.for_each_event::<()>(&mut |process, event, ts| {
            let payload = &event.payload;
            let kind = payload
                .first_chunk::<4>()
                .and_then(|id| RecordKind::from_id(u32::from_le_bytes(*id)));
            if !matches!(
                kind,
                Some(
                    RecordKind::SpanNew
                        | RecordKind::SpanEnter
                        | RecordKind::SpanFollows
                        | RecordKind::SpanClose
                )
            ) {
                return Ok(());
            }
            let p = &processes[process];
            let crate::decode::Decoded::Tracing(r) = p.decoder().decode(payload) else {
                return Ok(());
            };
            let Some(span) = r.span else { return Ok(()) };
            let id = (process as u32, span);
            match r.kind {
                RecordKind::SpanNew => {
                    if let Some((key, seen)) = pass.open.remove(&id) {
                        pass.finish(key, seen); // its close was lost
                    }
                    let seen = Seen {
                        created: true,
                        ..Seen::default()
                    };
                    pass.open.insert(id, ((id.0, id.1, ts), seen));
                }
                RecordKind::SpanEnter => {
                    let (_, s) = pass
                        .open
                        .entry(id)
                        .or_insert(((id.0, id.1, 0), Seen::default()));
                    s.enters += 1;
                    match s.first_tid {
                        None => s.first_tid = Some(r.tid),
                        Some(tid) if tid != r.tid => s.threads = true,
                        Some(_) => {}
                    }
                }
                RecordKind::SpanClose => {
                    if let Some((key, seen)) = pass.open.remove(&id) {
                        pass.finish(key, seen);
                    }
                }
                _ => {
                    let Some(from) = r.follows else { return Ok(()) };
                    match (pass.named(id), pass.named((id.0, from))) {
                        (Some(span), Some(cause)) if span != cause => {
                            for end in [span, cause] {
                                let at_close = pass
                                    .closed
                                    .get(&(end.0, end.1))
                                    .filter(|(k, _)| *k == end)
                                    .map(|(_, seen)| *seen);
                                pass.linked.entry(end).or_insert(at_close);
                            }
                            pass.links.push((span, cause));
                        }
                        _ => pass.found.links_dropped += 1,
                    }
                }
            }
            Ok(())
        });
        let mut open: Vec<(SpanKey, Seen)> = pass.open.drain().map(|(_, v)| v).collect();
        open.sort_by_key(|(key, _)| *key);
        for (key, seen) in open {
            pass.finish(key, seen);
        }
        for (span, cause) in std::mem::take(&mut pass.links) {
            let drawn = |key: &SpanKey| {
                pass.linked
                    .get(key)
                    .copied()
                    .flatten()
                    .is_some_and(|s| s.drawn())
            };
            if drawn(&span) && drawn(&cause) {
                let flow = pass.flow();
                pass.found.causes.entry(cause).or_default().push(flow);
                pass.found.follows.entry(span).or_default().push(flow);
                pass.found.links += 1;
            } else {
                pass.found.links_unentered += 1;
            }
        }
        pass.found
    }

    /// Whether `span` is a task.
    pub fn is_task(&self, span: SpanKey) -> bool {
        self.tasks.contains(&span)
    }

    /// The flow through a task's slices.
    pub fn chain(&self, span: SpanKey) -> Option<u64> {
        self.chains.get(&span).copied()
    }

    /// The flows `span`'s first slice begins and ends: given once.
    pub fn first_slice(&mut self, span: SpanKey) -> (Vec<u64>, Vec<u64>) {
        (
            self.causes.remove(&span).unwrap_or_default(),
            self.follows.remove(&span).unwrap_or_default(),
        )
    }

    /// Forgets `span` (closed: its id may be reused).
    pub fn done(&mut self, span: SpanKey) {
        self.tasks.remove(&span);
        self.chains.remove(&span);
        self.causes.remove(&span);
        self.follows.remove(&span);
    }
}
