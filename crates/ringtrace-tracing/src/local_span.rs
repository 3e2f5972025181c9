//! Local spans, in the manner of fastrace's: a guard that reads the clock
//! when made and writes one record when dropped, holding the span's start
//! (the record's own time is its end), with nothing but a static name,
//! without `tracing`'s dispatcher. One ring write per span, as fastrace
//! collects a span once it ends; the price is the same as fastrace's: a
//! span still open when the process dies is not in the trace. They record
//! into one ring per process ([`set_local_span_ring`]); before one is set
//! a local span costs an atomic load and records nothing.

use crate::callsites::next_id;
use parking_lot::Mutex;
use ringtrace_clock::{AnyClock, Clock};
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::{
    Callsite, CallsiteKind, Level, RecordKind, RECORD_HEADER_LEN,
};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use thiserror::Error;

/// The ring local spans record into.
static RING: OnceLock<Arc<RingBuffer<AnyClock>>> = OnceLock::new();
/// Serialises the description of sites.
static DESCRIBING: Mutex<()> = Mutex::new(());
/// A site's id before it is described.
const UNDESCRIBED: u32 = 0;
/// A site's id when the annex had no room for it.
const REFUSED: u32 = u32::MAX;

static DROPPED: AtomicU64 = AtomicU64::new(0);
static SITES: AtomicU64 = AtomicU64::new(0);
static SITES_REFUSED: AtomicU64 = AtomicU64::new(0);

/// A second [`set_local_span_ring`] (or `ringtrace::Tracer::install`) in
/// one process: names the ring set first, which stays.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
#[error(
    "local spans already record into a ring (clock {clock}{}); the ring can be set once per \
     process",
    file.as_ref().map(|f| format!(", file {f}")).unwrap_or_default()
)]
pub struct LocalSpanRingAlreadySet {
    /// The clock of the ring set first.
    pub clock: String,
    /// The file of the ring set first, for a file ring.
    pub file: Option<String>,
}

impl LocalSpanRingAlreadySet {
    /// The refusal for a local-span ring with `clock` (its name) and, for
    /// a file ring, `file`.
    pub fn new(clock: String, file: Option<String>) -> LocalSpanRingAlreadySet {
        LocalSpanRingAlreadySet { clock, file }
    }
}

/// Makes `ring` the ring local spans record into, once per process (the
/// sites' ids are kept in statics, so they can be described in one ring
/// only).
///
/// A building block: `ringtrace::Tracer::install` sets this slot and the
/// tracepoint sink together, and is what a program usually calls. Call this
/// one alone to have local spans, and only them, record into a ring.
///
/// ```
/// use ringtrace_tracing::{local_span, set_local_span_ring};
/// let clock = "mono".parse::<ringtrace_clock::ClockSpec>()?.build()?;
/// let config = ringtrace_ring::RingConfig::default().cpus(1).per_cpu_bytes(16 << 10);
/// let ring = std::sync::Arc::new(ringtrace_ring::RingBuffer::new(config, clock)?);
/// set_local_span_ring(ring.clone())?;
/// {
///     let _span = local_span!("parse");
///     // ... the work the span covers ...
/// }
/// assert_eq!(ring.stats().hit, 1); // one record, at the span's end
/// assert!(set_local_span_ring(ring).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_local_span_ring(ring: Arc<RingBuffer<AnyClock>>) -> Result<(), LocalSpanRingAlreadySet> {
    ringtrace_tracepoint::forget_thread_ids_in_fork_children();
    RING.set(ring).map_err(|_| {
        let first = RING.get();
        LocalSpanRingAlreadySet::new(
            first.map(|r| r.clock_info().name).unwrap_or_default(),
            first.and_then(|r| r.file_path().map(|p| p.display().to_string())),
        )
    })
}

/// The ring local spans record into, if one is set
/// ([`set_local_span_ring`], or `ringtrace::Tracer::install`).
pub fn local_span_ring() -> Option<&'static RingBuffer<AnyClock>> {
    RING.get().map(|ring| &**ring)
}

/// What local spans recorded and could not, process-wide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSpanStats {
    /// Spans the ring refused.
    pub dropped: u64,
    /// Sites described in the ring's metadata annex.
    pub sites_registered: u64,
    /// Sites the annex had no room for (their spans record nothing).
    pub sites_refused: u64,
}

/// The local spans' counts so far.
pub fn local_span_stats() -> LocalSpanStats {
    // Relaxed: statistics.
    LocalSpanStats {
        dropped: DROPPED.load(Ordering::Relaxed),
        sites_registered: SITES.load(Ordering::Relaxed),
        sites_refused: SITES_REFUSED.load(Ordering::Relaxed),
    }
}

/// Where a local span is declared; [`local_span!`](crate::local_span)
/// makes one static per use.
#[derive(Debug)]
pub struct LocalSpanSite {
    name: &'static str,
    target: &'static str,
    file: &'static str,
    line: u32,
    id: AtomicU32,
}

impl LocalSpanSite {
    /// A site: the span's name, the module, file and line.
    pub const fn new(
        name: &'static str,
        target: &'static str,
        file: &'static str,
        line: u32,
    ) -> LocalSpanSite {
        LocalSpanSite {
            name,
            target,
            file,
            line,
            id: AtomicU32::new(UNDESCRIBED),
        }
    }

    #[inline]
    fn id(&'static self, ring: &RingBuffer<AnyClock>) -> u32 {
        // Acquire: pairs with the Release in `describe`; the id is final
        // once seen (and only ever described in one ring).
        match self.id.load(Ordering::Acquire) {
            UNDESCRIBED => self.describe(ring),
            id => id,
        }
    }

    #[cold]
    #[inline(never)]
    fn describe(&'static self, ring: &RingBuffer<AnyClock>) -> u32 {
        let _one = DESCRIBING.lock();
        let id = self.id.load(Ordering::Acquire);
        if id != UNDESCRIBED {
            return id;
        }
        let id = next_id();
        let record = Callsite {
            id,
            kind: CallsiteKind::LocalSpan,
            level: Level(0),
            name: self.name.to_owned(),
            target: self.target.to_owned(),
            file: Some(self.file.to_owned()),
            line: Some(self.line),
            fields: Vec::new(),
        }
        .to_record();
        let id = match ring.append_metadata(&record) {
            Ok(()) => {
                SITES.fetch_add(1, Ordering::Relaxed);
                id
            }
            Err(_) => {
                SITES_REFUSED.fetch_add(1, Ordering::Relaxed);
                REFUSED
            }
        };
        // Release: whoever loads the id sees the description appended.
        self.id.store(id, Ordering::Release);
        id
    }
}

/// A local span: made by [`local_span!`](crate::local_span), which reads
/// its start, and recorded when dropped (on the same thread: it is not
/// `Send`).
#[must_use = "a local span ends when dropped: bind it (`let _span = ...`)"]
#[derive(Debug)]
pub struct LocalSpan {
    /// The ring, the site's id and the start (ticks of the ring's clock);
    /// `None` when nothing is recorded.
    at: Option<(&'static RingBuffer<AnyClock>, u32, u64)>,
    /// Not `Send`: a thread leaves the span it entered.
    _thread: std::marker::PhantomData<*const ()>,
}

#[inline(always)]
fn record(ring: &RingBuffer<AnyClock>, id: u32, start: u64) {
    let mut record = [0u8; RECORD_HEADER_LEN + 8];
    record[..4].copy_from_slice(&RecordKind::LocalSpan.id().to_le_bytes());
    record[4..8].copy_from_slice(&ringtrace_tracepoint::thread_id().to_le_bytes());
    record[8..12].copy_from_slice(&id.to_le_bytes());
    record[12..].copy_from_slice(&start.to_le_bytes());
    if ring.write(&record).is_err() {
        // Relaxed: a statistic.
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

impl LocalSpan {
    /// Enters the span of `site`.
    #[inline]
    pub fn enter(site: &'static LocalSpanSite) -> LocalSpan {
        let at = RING.get().and_then(|ring| {
            let ring: &'static RingBuffer<AnyClock> = ring;
            match site.id(ring) {
                REFUSED => None,
                // The start: the ring's own clock, so that start and end
                // (the record's stamp) are on one time base.
                id => Some((ring, id, ring.clock().read())),
            }
        });
        LocalSpan {
            at,
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for LocalSpan {
    #[inline]
    fn drop(&mut self) {
        if let Some((ring, id, start)) = self.at {
            record(ring, id, start);
        }
    }
}

/// A local span named `$name` (a `&'static str`), entered here and left
/// when the guard is dropped. It records into the ring given to
/// [`set_local_span_ring`] (nothing before one is set); the name is
/// described once, at the first use.
///
/// ```
/// fn parse() {
///     let _span = ringtrace_tracing::local_span!("parse");
/// }
/// parse(); // no ring set here: records nothing
/// ```
#[macro_export]
macro_rules! local_span {
    ($name:expr) => {{
        static SITE: $crate::LocalSpanSite =
            $crate::LocalSpanSite::new($name, module_path!(), file!(), line!());
        $crate::LocalSpan::enter(&SITE)
    }};
}
