//! The records both front ends write, the layer and the subscriber: one
//! ring, its callsites' ids, the string limit and the counts, and the
//! write of one record (header, span ids, fields) in one pass.

use crate::callsites::{CallsiteTable, REFUSED};
use crate::encode::{Encode, Measure};
use crate::one_pass::OnePass;
use crate::stats::{Counters, Tally};
use ringtrace_clock::Clock;
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::{RecordKind, RECORD_HEADER_LEN};
use std::sync::Arc;
use tracing_core::Metadata;

/// What records into one ring for a layer or a subscriber.
pub(crate) struct Recorder<C: Clock> {
    pub(crate) ring: Arc<RingBuffer<C>>,
    pub(crate) callsites: CallsiteTable,
    pub(crate) string_limit: usize,
    pub(crate) counters: Counters,
}

impl<C: Clock> Recorder<C> {
    /// A recorder into `ring`, the settings being in range.
    pub(crate) fn new(ring: Arc<RingBuffer<C>>, string_limit: usize, callsites: usize) -> Self {
        // Records carry the thread's id; a fork child must not carry its
        // parent's.
        ringtrace_tracepoint::forget_thread_ids_in_fork_children();
        // Nor its parent's span ids.
        crate::forks::register();
        Recorder {
            ring,
            callsites: CallsiteTable::new(callsites),
            string_limit,
            counters: Counters::new(),
        }
    }
}

/// A record's header: its kind, the thread's id, its callsite's id.
#[inline(always)]
fn header(kind: RecordKind, callsite: u32) -> [u8; RECORD_HEADER_LEN] {
    let mut head = [0u8; RECORD_HEADER_LEN];
    head[..4].copy_from_slice(&kind.id().to_le_bytes());
    head[4..8].copy_from_slice(&ringtrace_tracepoint::thread_id().to_le_bytes());
    head[8..].copy_from_slice(&callsite.to_le_bytes());
    head
}

/// What comes before a record's fields: its header (kind, thread,
/// callsite) and the span ids it carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    kind: RecordKind,
    callsite: u32,
    /// The span the record is about (every span record).
    span: Option<u64>,
    /// A creation's parent (0 for a root), or the span a `follows_from`
    /// record's span follows.
    other: Option<u64>,
}

impl Head {
    /// An event of `callsite`.
    pub(crate) fn event(callsite: u32) -> Head {
        Head {
            kind: RecordKind::Event,
            callsite,
            span: None,
            other: None,
        }
    }

    /// An event of `callsite` whose parent was given where it was made:
    /// `parent` (0: in no span, `parent: None`).
    pub(crate) fn event_in(callsite: u32, parent: u64) -> Head {
        Head {
            kind: RecordKind::EventIn,
            callsite,
            span: None,
            other: Some(parent),
        }
    }

    /// A record about `span` alone: its values, enter, exit or close.
    pub(crate) fn span(kind: RecordKind, callsite: u32, span: u64) -> Head {
        Head {
            kind,
            callsite,
            span: Some(span),
            other: None,
        }
    }

    /// The creation of `span` under `parent` (0: a root).
    pub(crate) fn new_span(callsite: u32, span: u64, parent: u64) -> Head {
        Head {
            other: Some(parent),
            ..Head::span(RecordKind::SpanNew, callsite, span)
        }
    }

    /// `span` follows from `follows`.
    pub(crate) fn follows(callsite: u32, span: u64, follows: u64) -> Head {
        Head {
            other: Some(follows),
            ..Head::span(RecordKind::SpanFollows, callsite, span)
        }
    }

    /// Its bytes.
    fn len(self) -> usize {
        RECORD_HEADER_LEN + self.span.map_or(0, |_| 8) + self.other.map_or(0, |_| 8)
    }

    /// Puts the header, then the span ids.
    #[inline(always)]
    fn put(self, mut put: impl FnMut(&[u8])) {
        put(&header(self.kind, self.callsite));
        if let Some(span) = self.span {
            put(&span.to_le_bytes());
        }
        if let Some(other) = self.other {
            put(&other.to_le_bytes());
        }
    }
}

/// What visits a record's fields: the event's, the span's attributes, or
/// the values recorded into a span.
pub(crate) type Fields<'f> = &'f dyn Fn(&mut dyn tracing_core::field::Visit);

impl<C: Clock> Recorder<C> {
    /// The callsite id of `meta`, or `None` (counted) when it could not be
    /// described.
    #[inline]
    pub(crate) fn callsite(&self, meta: &'static Metadata<'static>) -> Option<u32> {
        match self.callsites.id(meta, &self.ring, &self.counters) {
            REFUSED => {
                self.counters.unregistered();
                None
            }
            id => Some(id),
        }
    }

    /// Writes one record: `head`, then the fields `fields` visits, if
    /// any. Encoded in one pass on the
    /// stack and written whole when it fits there (see `one_pass`), else
    /// sized first and written into its reservation.
    #[inline]
    pub(crate) fn write(&self, head: Head, fields: Option<Fields<'_>>) {
        self.write_counted(head, fields, &self.counters);
    }

    /// [`write`](Self::write), the record counted by `tally` (the
    /// subscriber counts in the thread's state it already holds).
    #[inline]
    pub(crate) fn write_counted<T: Tally>(
        &self,
        head: Head,
        fields: Option<Fields<'_>>,
        tally: &T,
    ) {
        // A field's `Debug` that panics unwinds through here, the record
        // unwritten (or, in its reservation, turned into a discard by the
        // ring): counted dropped. (No cost unless it unwinds.)
        let unwinding = DroppedIfUnwinding(&self.counters);
        let mut pass = OnePass::new(self.string_limit);
        head.put(|b| pass.put(b));
        if let Some(fields) = fields {
            pass.begin_fields();
            fields(&mut pass);
        }
        let (cuts, skipped) = (pass.cuts(), pass.skipped());
        match pass.finish() {
            Some(record) => match self.ring.write(record) {
                Ok(_) => self.recorded(cuts, skipped, tally),
                Err(_) => self.counters.dropped(),
            },
            None => self.write_measured(head, fields, tally),
        }
        std::mem::forget(unwinding);
    }

    /// A record written: counted, and its cut strings.
    #[inline(always)]
    fn recorded<T: Tally>(&self, cuts: u32, skipped: u32, tally: &T) {
        tally.recorded();
        if cuts > 0 {
            self.counters.strings_cut(u64::from(cuts));
        }
        if skipped > 0 {
            self.counters.fields_dropped(u64::from(skipped));
        }
    }

    /// [`write`](Self::write) for a record too large for the stack: its
    /// fields measured first, then written into a reservation of that
    /// size.
    #[cold]
    #[inline(never)]
    fn write_measured<T: Tally>(&self, head: Head, fields: Option<Fields<'_>>, tally: &T) {
        let measure_at = |limit: usize| {
            let mut measure = Measure::new(limit);
            if let Some(fields) = fields {
                fields(&mut measure);
            }
            let len = head.len() + fields.map_or(0, |_| 1 + measure.len);
            (measure, len)
        };
        let (mut measure, mut len) = measure_at(self.string_limit);
        // Larger than a page holds (a string limit above what a page
        // takes): its strings are cut to the longest limit at which it
        // fits, found by halving, before it is reserved. Only a record
        // whose other fields alone overflow a page is refused (by the
        // ring, which counts it) and dropped.
        let max = ringtrace_ring::format::max_payload(self.ring.geometry().page_size);
        if len > max {
            let (mut fits, mut too_long) = (0, self.string_limit);
            let mut best = None;
            while fits < too_long {
                let mid = fits + (too_long - fits) / 2;
                let (m, l) = measure_at(mid);
                if l <= max {
                    best = Some((m, l));
                    fits = mid + 1;
                } else {
                    too_long = mid;
                }
            }
            if let Some(found) = best {
                (measure, len) = found;
            }
        }
        let Ok(mut r) = self.ring.reserve(len) else {
            self.counters.dropped();
            return;
        };
        {
            let mut stream = r.stream();
            head.put(|b| {
                stream.put(b);
            });
            if let Some(fields) = fields {
                stream.put(&[measure.count as u8]);
                fields(&mut Encode {
                    measure: &measure,
                    stream: &mut stream,
                    at: 0,
                });
            }
        }
        r.commit();
        self.recorded(measure.cuts(), measure.skipped, tally);
    }
}

/// Counts a record dropped when dropped itself: only while unwinding out
/// of a write (it is forgotten once the record is committed).
struct DroppedIfUnwinding<'c>(&'c Counters);

impl Drop for DroppedIfUnwinding<'_> {
    fn drop(&mut self) {
        self.0.dropped();
    }
}
