//! [`RingLayer`]: a `tracing_subscriber::Layer` writing `tracing` events
//! and span activity into a ring.

use crate::callsites::REFUSED;
use crate::recorder::{Fields, Head, Recorder};
use crate::span_namespace::{next_salt, ring_id};
use crate::span_sites::SpanSites;
use crate::stats::LayerStats;
use ringtrace_clock::{AnyClock, Clock};
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::RecordKind;
use std::sync::Arc;
use thiserror::Error;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The longest string or `Debug` rendering kept by default, in bytes:
/// longer ones are cut at a character boundary at or below it and marked
/// cut (readers show `…[cut]` after them).
pub const DEFAULT_STRING_LIMIT: usize = 256;
/// The largest string limit a builder takes: a string's length is a u16
/// in the wire format. A record must also fit in a ring page: one that
/// would not at the limit has its strings cut shorter until it does.
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
    inner: Arc<Recorder<C>>,
    /// The callsites of this installed layer's spans (see `span_sites`):
    /// made when the layer joins a subscriber, whose registry's ids it
    /// holds; until then (or under a wrapper that does not pass the
    /// layer's joining on) every edge asks the registry.
    spans: Option<Arc<SpanSites>>,
    /// What this installed layer's registry's span ids are XORed with in
    /// the ring (see `span_namespace`): 0 for the first registry to
    /// record into the ring.
    salt: u64,
}

impl<C: Clock> Clone for RingLayer<C> {
    /// Another handle on the same layer: same ring, callsites and counts.
    fn clone(&self) -> Self {
        RingLayer {
            inner: Arc::clone(&self.inner),
            // Its own table and ids when it joins a subscriber.
            spans: None,
            salt: 0,
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
    /// [`MAX_STRING_LIMIT`]; [`DEFAULT_STRING_LIMIT`] by default). A
    /// record that would not fit in one of the ring's pages at this limit
    /// has its strings cut shorter until it fits (counted in
    /// `strings_cut`), rather than being dropped.
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
        RingLayer {
            spans: None,
            salt: 0,
            inner: Arc::new(Recorder::new(
                self.ring,
                self.string_limit,
                self.callsite_capacity,
            )),
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

    /// What it records with (shared by its clones).
    pub(crate) fn recorder(&self) -> Arc<Recorder<C>> {
        Arc::clone(&self.inner)
    }

    /// What it recorded and what it could not, so far.
    pub fn stats(&self) -> LayerStats {
        self.inner.counters.snapshot()
    }
}

impl<C: Clock> RingLayer<C> {
    /// The callsite id of span `id`: from `spans` when it holds it, else
    /// from the registry; `None` when the span is unknown or its callsite
    /// could not be described.
    #[inline]
    fn span_callsite<S>(
        inner: &Recorder<C>,
        id: &Id,
        ctx: &Context<'_, S>,
        spans: Option<&SpanSites>,
    ) -> Option<u32>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        match spans.and_then(|s| s.get(id.into_u64())) {
            Some(callsite) if callsite != REFUSED => Some(callsite),
            // Not in the table, or refused (asked again, so counted).
            _ => inner.callsite(ctx.metadata(id)?),
        }
    }

    /// A span record with no fields: enter, exit, close.
    #[inline]
    fn span_edge<S>(&self, kind: RecordKind, id: &Id, ctx: &Context<'_, S>)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let inner = &*self.inner;
        if let Some(callsite) = Self::span_callsite(inner, id, ctx, self.spans.as_deref()) {
            let head = Head::span(kind, callsite, self.ring_id(id));
            inner.write(head, None);
        }
    }

    /// The id span `id` of this layer's registry has in the ring (in a
    /// fork child, apart from its parent's: `crate::forks`).
    #[inline(always)]
    fn ring_id(&self, id: &Id) -> u64 {
        ring_id(id.into_u64(), self.salt ^ crate::forks::salt())
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
            // Contextual: readers take the thread's current span, which
            // they know from its enters and exits.
            let head = if event.is_contextual() {
                Head::event(callsite)
            } else {
                Head::event_in(callsite, event.parent().map_or(0, |p| self.ring_id(p)))
            };
            inner.write(head, Some(&|v| event.record(v)));
        }
    }

    fn on_layer(&mut self, _subscriber: &mut S) {
        self.spans = Some(Arc::new(SpanSites::new()));
        // Another registry's spans on this ring are numbered from 1 too.
        self.salt = next_salt(self.inner.ring.clone());
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        let callsite = inner.callsite(attrs.metadata());
        if let Some(spans) = &self.spans {
            // Set even when refused: the registry hands ids out again, and
            // an entry left to an earlier span of this id would write this
            // span's edges under that one's callsite.
            spans.set(id.into_u64(), callsite.unwrap_or(REFUSED));
        }
        let Some(callsite) = callsite else {
            return;
        };
        // The registry resolved the parent (explicit, or the current span).
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent().map(|p| self.ring_id(&p.id())));
        let head = Head::new_span(callsite, self.ring_id(id), parent.unwrap_or(0));
        inner.write(head, Some(&|v| attrs.record(v)));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        if let Some(callsite) = Self::span_callsite(inner, id, &ctx, self.spans.as_deref()) {
            let fields: Fields<'_> = &|v| values.record(v);
            let head = Head::span(RecordKind::SpanRecord, callsite, self.ring_id(id));
            inner.write(head, Some(fields));
        }
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        let inner = &*self.inner;
        if let Some(callsite) = Self::span_callsite(inner, span, &ctx, self.spans.as_deref()) {
            let head = Head::follows(callsite, self.ring_id(span), self.ring_id(follows));
            inner.write(head, None);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        self.span_edge(RecordKind::SpanEnter, id, &ctx);
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        self.span_edge(RecordKind::SpanExit, id, &ctx);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        self.span_edge(RecordKind::SpanClose, &id, &ctx);
    }
}
