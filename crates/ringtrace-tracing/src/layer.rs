//! [`RingLayer`]: a `tracing_subscriber::Layer` writing `tracing` events
//! and span activity into a ring.

use crate::callsites::{CallsiteTable, REFUSED};
use crate::encode::{Encode, Measure};
use crate::one_pass::OnePass;
use crate::span_sites::SpanSites;
use crate::stats::{Counters, LayerStats};
use ringtrace_clock::{AnyClock, Clock};
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::{RecordKind, RECORD_HEADER_LEN};
use std::sync::Arc;
use thiserror::Error;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The longest string or `Debug` rendering kept by default, in bytes:
/// longer ones are cut at a character boundary at or below it and marked
/// cut (readers show `…[cut]` after them).
pub const DEFAULT_STRING_LIMIT: usize = 256;
/// The largest string limit a builder takes: a string's length is a u16
/// in the wire format, and a record must fit in a ring page.
pub const MAX_STRING_LIMIT: usize = 16 * 1024;
/// Callsites a layer describes by default.
pub const DEFAULT_CALLSITE_CAPACITY: usize = 4096;

/// A layer setting out of range.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LayerConfigError {
    /// The string limit.
    #[error("string limit {0} is out of range: it must be 1 to {MAX_STRING_LIMIT} bytes")]
    StringLimit(usize),
    /// The callsite capacity.
    #[error("callsite capacity {0} is out of range: it must be 1 to 1048576")]
    CallsiteCapacity(usize),
}

/// Records `tracing` events, and span creation, values, enter, exit and
/// close, into a ring, each stamped by the ring's clock.
///
/// Install it beside other layers; it composes with `EnvFilter` and
/// per-layer filters like any layer:
///
/// ```
/// use ringtrace_tracing::RingLayer;
/// use tracing_subscriber::layer::SubscriberExt;
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
/// let config = ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(64 << 10);
/// let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(config, clock)?);
/// let layer = RingLayer::new(ring.clone());
/// let subscriber = tracing_subscriber::registry().with(layer.clone());
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!(page = 7, "read");
/// });
/// assert_eq!(layer.stats().recorded, 1);
/// assert_eq!(ring.metadata_records().len(), 1); // the callsite, described once
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # What it writes
///
/// Each callsite is described once, on its first record, in the ring's
/// metadata annex (in the file for a file ring, so a reader without the
/// program decodes it): its name, target, level, file, line and field
/// names, under an id. Records carry that id, the thread's id, and the
/// field values; ringtrace-tracepoint's `tracing_record` module defines the
/// layout. Recording allocates nothing and takes no lock once a callsite
/// is described: fields are visited straight into the reserved slot, and
/// strings and `Debug` renderings longer than the [string
/// limit](RingLayerBuilder::string_limit) are cut and marked.
///
/// A record the ring refuses is counted in [`LayerStats::dropped`]; a
/// callsite the annex has no room for is counted refused and its records
/// are not written ([`LayerStats::unregistered`]).
pub struct RingLayer<C: Clock = AnyClock> {
    inner: Arc<Inner<C>>,
    /// The callsites of this installed layer's spans (see `span_sites`):
    /// made when the layer joins a subscriber, whose registry's ids it
    /// holds; until then (or under a wrapper that does not pass the
    /// layer's joining on) every edge asks the registry.
    spans: Option<Arc<SpanSites>>,
}

struct Inner<C: Clock> {
    ring: Arc<RingBuffer<C>>,
    callsites: CallsiteTable,
    string_limit: usize,
    counters: Counters,
}

impl<C: Clock> Clone for RingLayer<C> {
    /// Another handle on the same layer: same ring, callsites and counts.
    fn clone(&self) -> Self {
        RingLayer {
            inner: Arc::clone(&self.inner),
            // Its own table when it joins a subscriber.
            spans: None,
        }
    }
}

impl<C: Clock> std::fmt::Debug for RingLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingLayer")
            .field("string_limit", &self.inner.string_limit)
            .field("callsite_capacity", &self.inner.callsites.capacity())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Settings of a [`RingLayer`].
#[derive(Debug)]
pub struct RingLayerBuilder<C: Clock = AnyClock> {
    ring: Arc<RingBuffer<C>>,
    string_limit: usize,
    callsite_capacity: usize,
}

impl<C: Clock> RingLayerBuilder<C> {
    /// The longest string or `Debug` rendering kept, in bytes (1 to
    /// [`MAX_STRING_LIMIT`]; [`DEFAULT_STRING_LIMIT`] by default).
    pub fn string_limit(mut self, bytes: usize) -> Self {
        self.string_limit = bytes;
        self
    }

    /// Callsites the layer can describe ([`DEFAULT_CALLSITE_CAPACITY`] by
    /// default); past it, a new callsite's records are not written. The
    /// ring's metadata annex must have room for their descriptions too
    /// (about 60 bytes plus the names each).
    pub fn callsite_capacity(mut self, callsites: usize) -> Self {
        self.callsite_capacity = callsites;
        self
    }

    /// The layer, or which setting is out of range.
    ///
    /// ```
    /// # let clock = "mono".parse::<ringtrace_clock::ClockSpec>().unwrap().build().unwrap();
    /// # let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(
    /// #     ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(16 << 10), clock).unwrap());
    /// use ringtrace_tracing::RingLayer;
    /// let layer = RingLayer::builder(ring.clone()).string_limit(64).build()?;
    /// let err = RingLayer::builder(ring).string_limit(0).build().unwrap_err();
    /// assert!(err.to_string().contains("1 to 16384"), "{err}");
    /// # Ok::<(), ringtrace_tracing::LayerConfigError>(())
    /// ```
    pub fn build(self) -> Result<RingLayer<C>, LayerConfigError> {
        if !(1..=MAX_STRING_LIMIT).contains(&self.string_limit) {
            return Err(LayerConfigError::StringLimit(self.string_limit));
        }
        if !(1..=1 << 20).contains(&self.callsite_capacity) {
            return Err(LayerConfigError::CallsiteCapacity(self.callsite_capacity));
        }
        Ok(self.checked())
    }

    /// The layer, the settings being in range.
    fn checked(self) -> RingLayer<C> {
        // Records carry the thread's id; a fork child must not carry its
        // parent's.
        ringtrace_tracepoint::forget_thread_ids_in_fork_children();
        let counters = Counters::new();
        RingLayer {
            spans: None,
            inner: Arc::new(Inner {
                ring: self.ring,
                callsites: CallsiteTable::new(self.callsite_capacity),
                string_limit: self.string_limit,
                counters,
            }),
        }
    }
}

impl<C: Clock> RingLayer<C> {
    /// A layer recording into `ring` with the default settings.
    pub fn new(ring: Arc<RingBuffer<C>>) -> RingLayer<C> {
        // The defaults are in range.
        RingLayer::builder(ring).checked()
    }

    /// A builder for a layer recording into `ring`.
    pub fn builder(ring: Arc<RingBuffer<C>>) -> RingLayerBuilder<C> {
        RingLayerBuilder {
            ring,
            string_limit: DEFAULT_STRING_LIMIT,
            callsite_capacity: DEFAULT_CALLSITE_CAPACITY,
        }
    }

    /// The ring it records into.
    pub fn ring(&self) -> &Arc<RingBuffer<C>> {
        &self.inner.ring
    }

    /// Its string limit, in bytes.
    pub fn string_limit(&self) -> usize {
        self.inner.string_limit
    }

    /// What it recorded and what it could not, so far.
    pub fn stats(&self) -> LayerStats {
        self.inner.counters.snapshot()
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

/// Puts a record's header, then `span` and `parent` (or the span a
/// `follows_from` record's span follows) when given.
#[inline(always)]
fn put_prefix(
    kind: RecordKind,
    callsite: u32,
    span: Option<u64>,
    parent: Option<u64>,
    mut put: impl FnMut(&[u8]),
) {
    put(&header(kind, callsite));
    if let Some(span) = span {
        put(&span.to_le_bytes());
    }
    if let Some(parent) = parent {
        put(&parent.to_le_bytes());
    }
}

/// What visits a record's fields: the event's, the span's attributes, or
/// the values recorded into a span.
type Fields<'f> = &'f dyn Fn(&mut dyn tracing_core::field::Visit);

impl<C: Clock> Inner<C> {
    /// The callsite id of `meta`, or `None` (counted) when it could not be
    /// described.
    #[inline]
    fn callsite(&self, meta: &'static Metadata<'static>) -> Option<u32> {
        match self.callsites.id(meta, &self.ring, &self.counters) {
            REFUSED => {
                self.counters.unregistered();
                None
            }
            id => Some(id),
        }
    }

    /// Writes one record: header, then `span` (and `parent`) when given,
    /// then the fields `record` visits, if any. Encoded in one pass on the
    /// stack and written whole when it fits there (see `one_pass`), else
    /// sized first and written into its reservation.
    #[inline]
    fn write(
        &self,
        kind: RecordKind,
        callsite: u32,
        span: Option<u64>,
        parent: Option<u64>,
        fields: Option<Fields<'_>>,
    ) {
        let mut pass = OnePass::new(self.string_limit);
        put_prefix(kind, callsite, span, parent, |b| pass.put(b));
        if let Some(fields) = fields {
            pass.begin_fields();
            fields(&mut pass);
        }
        let cuts = pass.cuts();
        match pass.finish() {
            Some(record) => match self.ring.write(record) {
                Ok(_) => self.recorded(cuts),
                Err(_) => self.counters.dropped(),
            },
            None => self.write_measured(kind, callsite, span, parent, fields),
        }
    }

    /// A record written: counted, and its cut strings.
    #[inline(always)]
    fn recorded(&self, cuts: u32) {
        self.counters.recorded();
        if cuts > 0 {
            self.counters.strings_cut(u64::from(cuts));
        }
    }

    /// [`write`](Self::write) for a record too large for the stack: its
    /// fields measured first, then written into a reservation of that
    /// size.
    #[cold]
    #[inline(never)]
    fn write_measured(
        &self,
        kind: RecordKind,
        callsite: u32,
        span: Option<u64>,
        parent: Option<u64>,
        fields: Option<Fields<'_>>,
    ) {
        let mut measure = Measure::new(self.string_limit);
        if let Some(fields) = fields {
            fields(&mut measure);
        }
        let len = RECORD_HEADER_LEN
            + span.map_or(0, |_| 8)
            + parent.map_or(0, |_| 8)
            + fields.map_or(0, |_| 1 + measure.len);
        let Ok(mut r) = self.ring.reserve(len) else {
            self.counters.dropped();
            return;
        };
        {
            let mut stream = r.stream();
            put_prefix(kind, callsite, span, parent, |b| {
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
        self.recorded(measure.cuts());
    }

    /// The callsite id of span `id`: from `spans` when it holds it, else
    /// from the registry; `None` when the span is unknown or its callsite
    /// could not be described.
    #[inline]
    fn span_callsite<S>(
        &self,
        id: &Id,
        ctx: &Context<'_, S>,
        spans: Option<&SpanSites>,
    ) -> Option<u32>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        match spans.and_then(|s| s.get(id.into_u64())) {
            Some(callsite) => Some(callsite),
            None => self.callsite(ctx.metadata(id)?),
        }
    }

    /// A span record with no fields: enter, exit, close.
    #[inline]
    fn span_edge<S>(
        &self,
        kind: RecordKind,
        id: &Id,
        ctx: &Context<'_, S>,
        spans: Option<&SpanSites>,
    ) where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        if let Some(callsite) = self.span_callsite(id, ctx, spans) {
            self.write(kind, callsite, Some(id.into_u64()), None, None);
        }
    }
}

impl<S, C> Layer<S> for RingLayer<C>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    C: Clock + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let inner = &*self.inner;
        if let Some(callsite) = inner.callsite(event.metadata()) {
            inner.write(
                RecordKind::Event,
                callsite,
                None,
                None,
                Some(&|v| event.record(v)),
            );
        }
    }

    fn on_layer(&mut self, _subscriber: &mut S) {
        self.spans = Some(Arc::new(SpanSites::new()));
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        let Some(callsite) = inner.callsite(attrs.metadata()) else {
            return;
        };
        if let Some(spans) = &self.spans {
            spans.set(id.into_u64(), callsite);
        }
        // The registry resolved the parent (explicit, or the current span).
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent().map(|p| p.id().into_u64()));
        inner.write(
            RecordKind::SpanNew,
            callsite,
            Some(id.into_u64()),
            Some(parent.unwrap_or(0)),
            Some(&|v| attrs.record(v)),
        );
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        if let Some(callsite) = inner.span_callsite(id, &ctx, self.spans.as_deref()) {
            let fields: Fields<'_> = &|v| values.record(v);
            inner.write(
                RecordKind::SpanRecord,
                callsite,
                Some(id.into_u64()),
                None,
                Some(fields),
            );
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        if let Some(callsite) = inner.span_callsite(span, &ctx, self.spans.as_deref()) {
            // The span's id, then the one it follows from.
            let (span, follows) = (Some(span.into_u64()), Some(follows.into_u64()));
            inner.write(RecordKind::SpanFollows, callsite, span, follows, None);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        self.inner
            .span_edge(RecordKind::SpanEnter, id, &ctx, self.spans.as_deref());
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        self.inner
            .span_edge(RecordKind::SpanExit, id, &ctx, self.spans.as_deref());
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        self.inner
            .span_edge(RecordKind::SpanClose, &id, &ctx, self.spans.as_deref());
    }
}
