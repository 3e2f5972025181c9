//! A trace's `tracing` spans put back together as trees, for the
//! exporters that send spans rather than events (OTLP, Parquet's spans
//! table) and for deciding after the fact which trees to keep
//! ([`KeepRules`], tail sampling).
//!
//! [`assemble`] walks a trace in time order and hands over, one at a
//! time:
//!
//! - a [`SpanTree`] when every span of it has closed (or at the trace's
//!   end, its open spans ended there and marked unclosed): a root span,
//!   every span created under it (on any thread: an async task keeps its
//!   identity across the threads that poll it), and the events recorded
//!   while each was its thread's current span;
//! - an [`EventData`] for each event recorded outside any span.
//!
//! Memory is bounded by the trees still open, not by the trace: a session
//! read a chunk at a time ([`Trace::with_source`](crate::Trace::with_source))
//! streams through.
//!
//! A span is known by its [`SpanData::uid`]: `tracing` reuses a span's id
//! once it closes, so the id alone does not name a span across a trace.
//! The uid is a hash of the process's pid and ring anchor, the span's id
//! and its creation time: the same span gets the same uid each time the
//! trace is read.
//!
//! Local spans (`local_span!`, written once at their end with their
//! start) have no id or parent of their own: each is placed under the
//! span its thread was in when it ended, if that span began before it;
//! else it is a root.

mod assemble;
mod ids;
mod keep;

pub use assemble::{assemble, AssembleSummary, Assembler, ProcessKey};
pub use ids::{TraceContext, TraceContextError};
pub use keep::{KeepDecision, KeepRule, KeepRuleError, KeepRules, KeepStats};

use ringtrace_tracepoint::FieldValue;

/// One span of a [`SpanTree`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SpanData {
    /// Its process's place in [`Trace::processes`](crate::Trace::processes).
    pub process: usize,
    /// Its name for this trace: stable each time the trace is read,
    /// never 0, unique within its process (see the module's docs).
    pub uid: u64,
    /// Its parent's uid; `None` for a root.
    pub parent: Option<u64>,
    /// Its `tracing` span id (reused once it closes); 0 for a local span.
    pub id: u64,
    /// Its callsite's name.
    pub name: String,
    /// Its callsite's target.
    pub target: String,
    /// Its callsite's level: 1 TRACE to 5 ERROR, 0 for a local span.
    pub level: u8,
    /// Its creation, ns on the trace's timeline.
    pub start_ns: u64,
    /// Its close, ns on the trace's timeline (the trace's last time when
    /// it never closed).
    pub end_ns: u64,
    /// Whether its close is in the trace.
    pub closed: bool,
    /// How long threads were inside it (entered and not yet exited), ns,
    /// summed over its threads.
    pub busy_ns: u64,
    /// The thread that created it.
    pub tid: u32,
    /// The CPU its creation was recorded on.
    pub cpu: usize,
    /// The threads that entered it, in the order they first did.
    pub threads: Vec<u32>,
    /// Its fields: those given at its creation, then those recorded later
    /// (a later value replaces an earlier one of the same name).
    pub fields: Vec<(String, FieldValue)>,
    /// The spans it follows from (`Span::follows_from`), of those the
    /// trace still had.
    pub follows: Vec<SpanLink>,
    /// The events recorded while it was its thread's current span, in
    /// time order.
    pub events: Vec<EventData>,
    /// Whether it is a local span.
    pub local: bool,
}

impl SpanData {
    /// Its duration, ns.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Whether it failed: a field named `error` (any value but `false`
    /// or an empty string), level ERROR, or an ERROR event inside it.
    pub fn is_error(&self) -> bool {
        self.level >= 5
            || self.fields.iter().any(|(n, v)| n == "error" && truthy(v))
            || self.events.iter().any(|e| e.level >= 5)
    }

    /// The value of its field `name`.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// A span another follows from: it may be in another tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpanLink {
    /// Its uid.
    pub uid: u64,
    /// Its tree's trace id ([`SpanTree::trace_id`]), as its root stood
    /// when the link was recorded.
    pub trace_id: [u8; 16],
}

/// The trace id of the tree whose root is `root` (see
/// [`SpanTree::trace_id`]).
pub(crate) fn trace_id_of(root: &SpanData) -> [u8; 16] {
    if let Some(FieldValue::Str(s)) = root.field("traceparent") {
        if let Ok(c) = TraceContext::parse(s) {
            return c.trace_id;
        }
    }
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&ids::stable_hash(&[root.uid, 1]).to_be_bytes());
    id[8..].copy_from_slice(&ids::stable_hash(&[root.uid, 2]).to_be_bytes());
    id
}

/// Whether a field's value says "yes": anything but `false`, 0 and an
/// empty string.
fn truthy(v: &FieldValue) -> bool {
    match v {
        FieldValue::Bool(b) => *b,
        FieldValue::Str(s) => !s.is_empty(),
        FieldValue::Unsigned(u) => *u != 0,
        FieldValue::Signed(i) => *i != 0,
        _ => true,
    }
}

/// A `tracing` event of the trace.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EventData {
    /// Its process's place in [`Trace::processes`](crate::Trace::processes).
    pub process: usize,
    /// Its time, ns on the trace's timeline.
    pub ts_ns: u64,
    /// The thread that recorded it.
    pub tid: u32,
    /// The CPU it was recorded on.
    pub cpu: usize,
    /// Its message (the `message` field when it is a string), else its
    /// callsite's name.
    pub name: String,
    /// Its callsite's target.
    pub target: String,
    /// Its callsite's level: 1 TRACE to 5 ERROR.
    pub level: u8,
    /// Its fields but the message.
    pub fields: Vec<(String, FieldValue)>,
    /// The uid of the span it was recorded in; `None` outside any span.
    pub span: Option<u64>,
}

/// A root span and every span created under it, with their events.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SpanTree {
    /// Its process's place in [`Trace::processes`](crate::Trace::processes).
    pub process: usize,
    /// Its spans: the root first, then the others in creation order.
    pub spans: Vec<SpanData>,
}

impl SpanTree {
    /// The root span.
    pub fn root(&self) -> &SpanData {
        &self.spans[0]
    }

    /// Whether any span of it failed ([`SpanData::is_error`]).
    pub fn has_error(&self) -> bool {
        self.spans.iter().any(SpanData::is_error)
    }

    /// The longest span's duration, ns.
    pub fn longest_ns(&self) -> u64 {
        self.spans
            .iter()
            .map(SpanData::duration_ns)
            .max()
            .unwrap_or(0)
    }

    /// Its trace id: the one of the W3C trace context its root carries
    /// (it joins that distributed trace), else one made from its root's
    /// uid (the same each time the trace is read).
    pub fn trace_id(&self) -> [u8; 16] {
        trace_id_of(self.root())
    }

    /// The W3C trace context its root carries in a `traceparent` field,
    /// if one does and it parses.
    pub fn trace_context(&self) -> Option<TraceContext> {
        match self.root().field("traceparent") {
            Some(FieldValue::Str(s)) => TraceContext::parse(s).ok(),
            _ => None,
        }
    }
}

/// One piece of a trace, as [`assemble`] hands them over.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Assembled {
    /// A tree whose spans have all closed (or the trace ended).
    Tree(SpanTree),
    /// An event recorded outside any span.
    Event(EventData),
}
