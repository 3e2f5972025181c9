//! [`RingSubscriber`]: a `tracing::Subscriber` of ringtrace's own, for
//! programs that record only into ringtrace.

mod clones;
mod filter;
pub(crate) mod span_ids;
mod threads;

use crate::callsites::REFUSED;
use crate::layer::{LayerConfigError, RingLayerBuilder};
use crate::recorder::{Fields, Head, Recorder};
use crate::stats::LayerStats;
use clones::Clones;
use filter::TargetFilter;
use ringtrace_clock::{AnyClock, Clock};
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::RecordKind;
use span_ids::IdLayout;
use std::sync::Arc;
use thiserror::Error;
use threads::{Mine, Threads};
use tracing_core::span::{Attributes, Current, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, LevelFilter, Metadata, Subscriber};

pub use filter::FilterError;

/// A [`RingSubscriberBuilder`] setting that is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SubscriberConfigError {
    /// The string limit or the callsite capacity.
    #[error(transparent)]
    Layer(#[from] LayerConfigError),
    /// The filter spec.
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// The filter spec from an environment variable.
    #[error("the environment variable {var}: {error}")]
    FilterEnv {
        /// The variable's name.
        var: String,
        /// What is wrong with its value.
        error: FilterError,
    },
}

/// Records `tracing` events and spans into a ring, as the [`RingLayer`]
/// does, without `tracing-subscriber`'s registry.
///
/// The records are the layer's, byte for byte, so every reader and
/// exporter takes them unchanged. What it leaves out is the registry's
/// work: its slab of span slots, and the reference counts and lookups
/// on each span's slot that every enter, exit and close pays. Instead:
///
/// - a span's id is unique in the process and carries its callsite, so
///   an enter, an exit or a close is one ring write and nothing else;
///   ids are numbered from blocks each thread takes, so no word is
///   shared by the threads on each span;
/// - each thread keeps its own stack of entered spans (a new span's
///   parent, `Span::current()`);
/// - a span closes when its last handle is dropped; only spans whose
///   handle is cloned are counted, in a table the others never touch;
/// - counts are per thread, summed when read ([`stats`](Self::stats));
/// - a thread being torn down (a thread-local's `Drop` that logs) still
///   records, without its stack of entered spans (its new spans have no
///   contextual parent), where the registry's thread state would panic
///   and abort the process.
///
/// Filtering is by level and target, in `RUST_LOG` syntax
/// ([`filter`](RingSubscriberBuilder::filter)), decided once per
/// callsite. For span or field filters, or to compose with `fmt` or
/// other layers, use the [`RingLayer`] on the registry.
///
/// ```
/// use ringtrace_tracing::RingSubscriber;
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
/// let config = ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(64 << 10);
/// let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(config, clock)?);
/// let subscriber = RingSubscriber::builder(ring.clone()).filter("info,noisy=warn").build()?;
/// tracing::subscriber::with_default(subscriber, || {
///     let span = tracing::info_span!("request", id = 7u64);
///     span.in_scope(|| tracing::info!(rows = 3, "read"));
///     tracing::debug!("not recorded: below info");
/// });
/// assert_eq!(ring.stats().hit, 5); // new, enter, the event, exit, close
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`RingLayer`]: crate::RingLayer
pub struct RingSubscriber<C: Clock = AnyClock> {
    recorder: Arc<Recorder<C>>,
    filter: TargetFilter,
    ids: IdLayout,
    threads: Threads,
    clones: Clones,
}

impl<C: Clock> std::fmt::Debug for RingSubscriber<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSubscriber")
            .field("string_limit", &self.recorder.string_limit)
            .field("max_level", &self.filter.max_level())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Settings of a [`RingSubscriber`].
#[derive(Debug)]
pub struct RingSubscriberBuilder<C: Clock = AnyClock> {
    /// The ring and the settings the layer has too.
    records: RingLayerBuilder<C>,
    filter: Result<TargetFilter, SubscriberConfigError>,
}

impl<C: Clock> RingSubscriberBuilder<C> {
    /// The longest string or `Debug` rendering kept, in bytes (1 to
    /// [`MAX_STRING_LIMIT`](crate::MAX_STRING_LIMIT); 256 by default); a
    /// record too large for a page at this limit has its strings cut
    /// shorter until it fits, as the layer's
    /// ([`RingLayerBuilder::string_limit`](crate::RingLayerBuilder::string_limit)).
    pub fn string_limit(mut self, bytes: usize) -> Self {
        self.records = self.records.string_limit(bytes);
        self
    }

    /// Callsites it can describe (4096 by default); past it, a new
    /// callsite's records are not written and are counted.
    pub fn callsite_capacity(mut self, callsites: usize) -> Self {
        self.records = self.records.callsite_capacity(callsites);
        self
    }

    /// Records only what `spec` enables: directives in `RUST_LOG`
    /// syntax, as tracing-subscriber's `EnvFilter` reads them, without
    /// span or field parts: `LEVEL`, `TARGET=LEVEL` or `TARGET`,
    /// separated by commas. The longest matching target decides; a
    /// callsite no directive matches is not recorded. Every level is
    /// recorded by default.
    ///
    /// ```
    /// # let clock = "mono".parse::<ringtrace_clock::ClockSpec>().unwrap().build().unwrap();
    /// # let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(
    /// #     ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(16 << 10), clock).unwrap());
    /// use ringtrace_tracing::RingSubscriber;
    /// let err = RingSubscriber::builder(ring).filter("info,db=loud").build().unwrap_err();
    /// assert!(err.to_string().contains("`db=loud`"), "{err}");
    /// assert!(err.to_string().contains("off, error, warn, info, debug, trace"), "{err}");
    /// ```
    pub fn filter(mut self, spec: &str) -> Self {
        self.filter = spec.parse().map_err(SubscriberConfigError::Filter);
        self
    }

    /// Records what the environment variable `var` (`RUST_LOG`, say)
    /// enables, as [`filter`](Self::filter) reads it; when `var` is not
    /// set, or holds no directive (empty, or commas alone), the filter
    /// stays as it was (every level, unless
    /// [`filter`](Self::filter) was given first). A set `var` replaces
    /// an earlier `filter`, but not its error: a bad spec given in the
    /// program fails `build` whatever the environment says.
    pub fn filter_from_env(mut self, var: &str) -> Self {
        if self.filter.is_err() {
            return self;
        }
        let failed = |error| SubscriberConfigError::FilterEnv {
            var: var.to_owned(),
            error,
        };
        match std::env::var(var) {
            // A variable with no directive (empty, or commas only) is as
            // if unset, as EnvFilter reads it: the filter stays.
            Ok(spec) if spec.split(',').any(|d| !d.trim().is_empty()) => {
                self.filter = spec.parse().map_err(failed);
            }
            Err(std::env::VarError::NotUnicode(spec)) => {
                self.filter = Err(failed(FilterError {
                    directive: spec.to_string_lossy().into_owned(),
                    why: "it is not UTF-8; directives are text",
                }));
            }
            _ => {}
        }
        self
    }

    /// The subscriber, or which setting is not valid.
    pub fn build(self) -> Result<RingSubscriber<C>, SubscriberConfigError> {
        let filter = self.filter?;
        let layer = self.records.build()?;
        Ok(RingSubscriber::with(layer, filter))
    }
}

impl<C: Clock> RingSubscriber<C> {
    /// A builder for a subscriber recording into `ring`.
    pub fn builder(ring: Arc<RingBuffer<C>>) -> RingSubscriberBuilder<C> {
        RingSubscriberBuilder {
            records: crate::RingLayer::builder(ring),
            filter: Ok(TargetFilter::everything()),
        }
    }

    /// A subscriber recording every level into `ring`, with the default
    /// settings.
    pub fn new(ring: Arc<RingBuffer<C>>) -> RingSubscriber<C> {
        RingSubscriber::with(crate::RingLayer::new(ring), TargetFilter::everything())
    }

    /// A subscriber writing what `layer` would, filtered by `filter`.
    fn with(layer: crate::RingLayer<C>, filter: TargetFilter) -> RingSubscriber<C> {
        let recorder = layer.recorder();
        RingSubscriber {
            ids: IdLayout::for_slots(recorder.callsites.slots()),
            recorder,
            filter,
            threads: Threads::default(),
            clones: Clones::default(),
        }
    }

    /// The ring it records into.
    pub fn ring(&self) -> &Arc<RingBuffer<C>> {
        &self.recorder.ring
    }

    /// What it recorded and what it could not, so far. Installed, it is
    /// reached through the dispatcher:
    ///
    /// ```
    /// # let clock = "mono".parse::<ringtrace_clock::ClockSpec>().unwrap().build().unwrap();
    /// # let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(
    /// #     ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(16 << 10), clock).unwrap());
    /// use ringtrace_tracing::RingSubscriber;
    /// let dispatch = tracing::Dispatch::new(RingSubscriber::new(ring));
    /// tracing::dispatcher::with_default(&dispatch, || tracing::warn!("disk slow"));
    /// let stats = dispatch.downcast_ref::<RingSubscriber>().unwrap().stats();
    /// assert_eq!(stats.recorded, 1);
    /// ```
    pub fn stats(&self) -> LayerStats {
        let mut stats = self.recorder.counters.snapshot();
        // Records are counted in each thread's state, not the counters.
        stats.recorded = self.threads.recorded();
        stats
    }

    /// The callsite id and metadata of the span `id`, or `None` (counted)
    /// when its records are not written.
    #[inline]
    fn site_of(&self, id: u64) -> Option<(&'static Metadata<'static>, u32)> {
        let found = self
            .ids
            .slot(id)
            .and_then(|slot| self.recorder.callsites.at(slot))
            .filter(|&(_, callsite)| callsite != REFUSED);
        if found.is_none() {
            self.recorder.counters.unregistered();
        }
        found
    }

    /// A span record with no fields (enter, exit, close), counted in
    /// `mine`.
    #[inline]
    fn span_edge(&self, kind: RecordKind, id: u64, mine: &Mine<'_>) {
        if let Some((_, callsite)) = self.site_of(id) {
            self.recorder
                .write_counted(Head::span(kind, callsite, id), None, mine);
        }
    }
}

impl<C: Clock + 'static> Subscriber for RingSubscriber<C> {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if self.filter.enabled(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.filter.enabled(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.filter.max_level())
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let rec = &*self.recorder;
        let site = rec
            .callsites
            .site(attrs.metadata(), &rec.ring, &rec.counters);
        let id = self
            .ids
            .new_id(site.filter(|s| s.id != REFUSED).map(|s| s.slot));
        match site {
            Some(site) if site.id != REFUSED => {
                let mine = self.threads.mine();
                let parent = if let Some(parent) = attrs.parent() {
                    parent.into_u64()
                } else if attrs.is_contextual() {
                    mine.current().unwrap_or(0)
                } else {
                    0
                };
                let fields: Fields<'_> = &|v| attrs.record(v);
                let head = Head::new_span(site.id, id, parent);
                rec.write_counted(head, Some(fields), &mine);
            }
            _ => rec.counters.unregistered(),
        }
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let id = span.into_u64();
        if let Some((_, callsite)) = self.site_of(id) {
            let fields: Fields<'_> = &|v| values.record(v);
            let mine = self.threads.mine();
            let head = Head::span(RecordKind::SpanRecord, callsite, id);
            self.recorder.write_counted(head, Some(fields), &mine);
        }
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        let id = span.into_u64();
        if let Some((_, callsite)) = self.site_of(id) {
            let head = Head::follows(callsite, id, follows.into_u64());
            let mine = self.threads.mine();
            self.recorder.write_counted(head, None, &mine);
        }
    }

    fn event(&self, event: &Event<'_>) {
        let rec = &*self.recorder;
        if let Some(callsite) = rec.callsite(event.metadata()) {
            let fields: Fields<'_> = &|v| event.record(v);
            let mine = self.threads.mine();
            // Contextual: readers take the thread's current span, which
            // they know from its enters and exits.
            let head = if event.is_contextual() {
                Head::event(callsite)
            } else {
                Head::event_in(callsite, event.parent().map_or(0, Id::into_u64))
            };
            rec.write_counted(head, Some(fields), &mine);
        }
    }

    fn enter(&self, span: &Id) {
        let id = span.into_u64();
        let mine = self.threads.mine();
        mine.push(id);
        self.span_edge(RecordKind::SpanEnter, id, &mine);
    }

    fn exit(&self, span: &Id) {
        let id = span.into_u64();
        let mine = self.threads.mine();
        mine.pop(id);
        self.span_edge(RecordKind::SpanExit, id, &mine);
    }

    fn clone_span(&self, span: &Id) -> Id {
        self.clones.cloned(span.into_u64());
        span.clone()
    }

    fn try_close(&self, span: Id) -> bool {
        let id = span.into_u64();
        if !self.clones.dropped_last(id) {
            return false;
        }
        self.span_edge(RecordKind::SpanClose, id, &self.threads.mine());
        true
    }

    fn current_span(&self) -> Current {
        let Some(id) = self.threads.current() else {
            return Current::none();
        };
        match self
            .ids
            .slot(id)
            .and_then(|s| self.recorder.callsites.at(s))
        {
            Some((meta, _)) => Current::new(Id::from_u64(id), meta),
            // A span whose callsite the table had no room for.
            None => Current::none(),
        }
    }
}
