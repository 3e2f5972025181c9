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

use crate::trace::Trace;
use ringtrace_tracepoint::tracing_record::RecordKind;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A span, by process (its place in the trace) and id.
pub(super) type SpanKey = (u32, u64);

/// What the pass saw of one span.
#[derive(Debug, Default)]
struct Seen {
    created: bool,
    enters: u64,
    first_tid: Option<u32>,
    threads: bool,
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
    /// `follows_from` links drawn as flows.
    pub links: u64,
}

impl Tasks {
    /// Finds the tasks and links among the events of `trace` (a pass
    /// over them).
    pub fn find(trace: &Trace<'_>) -> Tasks {
        let processes = trace.processes();
        let mut seen: BTreeMap<SpanKey, Seen> = BTreeMap::new();
        let mut links: Vec<(SpanKey, SpanKey)> = Vec::new();
        let _ = trace.for_each_event::<()>(&mut |process, event, _| {
            let payload = &event.payload;
            let kind = payload
                .first_chunk::<4>()
                .and_then(|id| RecordKind::from_id(u32::from_le_bytes(*id)));
            if !matches!(
                kind,
                Some(RecordKind::SpanNew | RecordKind::SpanEnter | RecordKind::SpanFollows)
            ) {
                return Ok(());
            }
            let p = &processes[process];
            let crate::decode::Decoded::Tracing(r) = p.decoder().decode(payload) else {
                return Ok(());
            };
            let Some(span) = r.span else { return Ok(()) };
            let key = (process as u32, span);
            let s = seen.entry(key).or_default();
            match r.kind {
                RecordKind::SpanNew => s.created = true,
                RecordKind::SpanEnter => {
                    s.enters += 1;
                    match s.first_tid {
                        None => s.first_tid = Some(r.tid),
                        Some(tid) if tid != r.tid => s.threads = true,
                        Some(_) => {}
                    }
                }
                _ => {
                    if let Some(from) = r.follows {
                        links.push((key, (process as u32, from)));
                    }
                }
            }
            Ok(())
        });
        let mut found = Tasks::default();
        let mut next = 0u64;
        let mut flow = || {
            next += 1;
            next
        };
        for (key, s) in &seen {
            if s.enters > 1 || s.threads {
                found.tasks.insert(*key);
                // A chain starts at the task's slice: none without it.
                if s.created {
                    found.chains.insert(*key, flow());
                }
            }
        }
        let drawn = |key: &SpanKey| {
            seen.get(key).is_some_and(|s| {
                if found.tasks.contains(key) {
                    s.created
                } else {
                    s.enters > 0
                }
            })
        };
        let mut kept = Vec::new();
        for (span, cause) in links {
            if drawn(&span) && drawn(&cause) && span != cause {
                kept.push((span, cause));
            }
        }
        for (span, cause) in kept {
            let id = flow();
            found.causes.entry(cause).or_default().push(id);
            found.follows.entry(span).or_default().push(id);
            found.links += 1;
        }
        found
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
}
