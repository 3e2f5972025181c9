//! Where tracepoints record: one ring for the process, as the kernel's
//! tracepoints write to the global trace buffer.

use ringtrace_clock::AnyClock;
use ringtrace_ring::{ReserveError, RingBuffer};
use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The ring tracepoints record into (null: none yet).
static SINK: AtomicPtr<RingBuffer<AnyClock>> = AtomicPtr::new(std::ptr::null_mut());
/// Bytes before a tracepoint event's fields: its tracepoint's id and the
/// writing thread's id, each a little-endian u32.
pub const EVENT_HEADER_LEN: usize = 8;

/// Events an enabled tracepoint could not record because no sink was set;
/// in no ring count.
static DROPPED_NO_SINK: AtomicU64 = AtomicU64::new(0);
/// ... because the ring was full (discard mode); the ring counts each in
/// its `missed` too, as each of the causes below.
static DROPPED_FULL: AtomicU64 = AtomicU64::new(0);
/// ... because the page to reuse was busy (the ring's `busy`).
static DROPPED_BUSY: AtomicU64 = AtomicU64::new(0);
static DROPPED_PREPARING: AtomicU64 = AtomicU64::new(0);
/// ... because the event cannot fit in a page (the ring's `too_large`).
static DROPPED_TOO_LARGE: AtomicU64 = AtomicU64::new(0);
/// ... because a blocking ring stayed full for its whole timeout (the
/// ring's `timed_out`).
static DROPPED_TIMED_OUT: AtomicU64 = AtomicU64::new(0);

/// Makes `ring` the ring that enabled tracepoints record into, once per
/// process.
///
/// A second call is refused with [`SinkAlreadySet`] and leaves the first
/// ring in place: tracepoints may be writing into it at that moment, and a
/// silent swap would split one trace over two rings.
///
/// A building block: `ringtrace::Tracer::install` is the usual way in. It
/// sets this slot and every other process-wide one ringtrace has (the
/// local-span ring) together, and keeps the ring for the process's
/// lifetime, as this needs.
///
/// ```
/// use ringtrace_clock::ClockSpec;
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// let build = || {
///     let clock = "mono".parse::<ClockSpec>().unwrap().build().unwrap();
///     RingBuffer::new(RingConfig::default().per_cpu_bytes(64 * 1024), clock).unwrap()
/// };
/// ringtrace_tracepoint::set_sink(Box::leak(Box::new(build())))?;
/// assert!(ringtrace_tracepoint::sink().is_some());
/// let again = ringtrace_tracepoint::set_sink(Box::leak(Box::new(build())));
/// assert!(again.unwrap_err().to_string().contains("already"));
/// # Ok::<(), ringtrace_tracepoint::SinkAlreadySet>(())
/// ```
pub fn set_sink(ring: &'static RingBuffer<AnyClock>) -> Result<(), SinkAlreadySet> {
    // Here rather than at a thread's first event, which may be in a signal
    // handler, where registering (a lock, an allocation) is not safe. No
    // event is recorded before a sink is set.
    forget_tid_in_fork_children();
    // Release on success: a tracepoint that loads the pointer with Acquire
    // sees the ring fully built (and the fork handler registered). Acquire
    // on failure: the error reads the ring already installed.
    SINK.compare_exchange(
        std::ptr::null_mut(),
        ring as *const _ as *mut _,
        Ordering::Release,
        Ordering::Acquire,
    )
    .map(|_| ())
    .map_err(|installed| {
        // SAFETY: a non-null value in SINK came from a `&'static
        // RingBuffer` stored by an earlier successful call.
        let installed = unsafe { &*installed };
        SinkAlreadySet::new(
            installed.clock_info().name,
            installed.file_path().map(|p| p.display().to_string()),
        )
    })
}

/// A second [`set_sink`] (or `Tracer::install`) in one process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error(
    "a ring is already installed as the process-wide tracepoint sink (clock {clock}{}); \
     it can be set once per process: record into the installed ring, or use a ring that is \
     not installed (its own Tracer) for other events",
    file.as_ref().map(|f| format!(", file {f}")).unwrap_or_default()
)]
pub struct SinkAlreadySet {
    /// The installed ring's clock.
    pub clock: String,
    /// The installed ring's file, for a file ring.
    pub file: Option<String>,
}

impl SinkAlreadySet {
    /// The refusal for a sink that holds the ring with `clock` (its name)
    /// and, for a file ring, `file`.
    pub fn new(clock: String, file: Option<String>) -> SinkAlreadySet {
        SinkAlreadySet { clock, file }
    }
}

/// The ring tracepoints record into, if one is set.
pub fn sink() -> Option<&'static RingBuffer<AnyClock>> {
    // Acquire: pairs with set_sink's Release.
    let ring = SINK.load(Ordering::Acquire);
    // SAFETY: the only non-null values stored come from a `&'static
    // RingBuffer` in set_sink, so the pointer is valid for 'static and the
    // ring is Sync.
    unsafe { ring.as_ref() }
}

/// Events enabled tracepoints failed to record, process-wide: the sum of
/// [`Dropped`]'s causes ([`dropped_by_cause`]).
///
/// Compared with the sink ring's [`Stats`](ringtrace_ring::Stats): the
/// ring counts every refusal (full, busy, preparing, too large) from any writer of
/// it, in `missed` and by cause, and [`Dropped`] counts, by the same
/// causes, the ones a tracepoint met. So with tracepoints the only writer,
/// each cause here equals its ring count's growth since the sink was set
/// (`full` to [`Stats::full`](ringtrace_ring::Stats::full), `busy` to
/// `busy`, `preparing` to `preparing`, `too_large` to `too_large`,
/// [`Dropped::refused`] to `missed`);
/// events fired with no sink are in no ring count.
pub fn dropped() -> u64 {
    dropped_by_cause().total()
}

/// Events enabled tracepoints failed to record, by cause, process-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Dropped {
    /// No sink was set ([`set_sink`]) when the tracepoint fired.
    pub no_sink: u64,
    /// The sink ring was full, in discard mode ([`ReserveError::Full`]).
    pub full: u64,
    /// The sink ring's page to reuse was still being written
    /// ([`ReserveError::Busy`]).
    pub busy: u64,
    /// The sink ring's page to reuse was being prepared
    /// ([`ReserveError::Preparing`]).
    pub preparing: u64,
    /// The event was larger than a page holds ([`ReserveError::TooLarge`]).
    pub too_large: u64,
    /// The sink ring blocks, and stayed full for its whole timeout
    /// ([`ReserveError::TimedOut`]).
    pub timed_out: u64,
}

impl Dropped {
    /// All of them: what [`dropped`] returns.
    pub fn total(&self) -> u64 {
        self.no_sink + self.refused()
    }

    /// The ones the sink ring refused, `full + busy + preparing +
    /// too_large + timed_out`: each is also one of the ring's
    /// [`missed`](ringtrace_ring::Stats::missed).
    pub fn refused(&self) -> u64 {
        self.full + self.busy + self.preparing + self.too_large + self.timed_out
    }
}

/// [`dropped`], by cause.
///
/// ```
/// let before = ringtrace_tracepoint::dropped_by_cause();
/// assert_eq!(before.total(), ringtrace_tracepoint::dropped());
/// ```
pub fn dropped_by_cause() -> Dropped {
    // Relaxed: statistics, each read on its own; exact at a quiescent
    // point by whatever made it quiescent (joining the writers).
    Dropped {
        no_sink: DROPPED_NO_SINK.load(Ordering::Relaxed),
        full: DROPPED_FULL.load(Ordering::Relaxed),
        busy: DROPPED_BUSY.load(Ordering::Relaxed),
        preparing: DROPPED_PREPARING.load(Ordering::Relaxed),
        too_large: DROPPED_TOO_LARGE.load(Ordering::Relaxed),
        timed_out: DROPPED_TIMED_OUT.load(Ordering::Relaxed),
    }
}

thread_local! {
    /// The thread's id, once read (0: not yet; no thread has id 0).
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's id (`gettid`), read from the system once per
/// thread and then from a thread-local: one TLS load per event; what
/// tracepoint events (and ringtrace-tracing's records) carry.
/// Async-signal-safe: a signal handler that interrupts the first read
/// reads and stores the same id. A fork child reads its own id once a
/// sink is set or [`forget_thread_ids_in_fork_children`] was called.
///
/// ```
/// assert_eq!(ringtrace_tracepoint::thread_id(), ringtrace_tracepoint::thread_id());
/// assert_ne!(ringtrace_tracepoint::thread_id(), 0);
/// ```
#[inline]
pub fn thread_id() -> u32 {
    current_tid()
}

#[inline]
pub(crate) fn current_tid() -> u32 {
    TID.with(|tid| match tid.get() {
        0 => {
            // SAFETY: gettid has no preconditions and cannot fail.
            let id = u32::try_from(unsafe { libc::gettid() }).unwrap_or(0);
            tid.set(id);
            id
        }
        id => id,
    })
}

/// Registers, once per process, a fork handler that clears the forking
/// thread's cached [`thread_id`] in the child: the child's only thread is
/// a copy of that thread, thread-locals and all, but has an id of its own.
/// [`set_sink`] calls it; a writer that records without the sink calls it
/// when set up (not in a signal handler: it may take a lock).
pub fn forget_thread_ids_in_fork_children() {
    forget_tid_in_fork_children()
}

fn forget_tid_in_fork_children() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    extern "C" fn in_child() {
        TID.with(|tid| tid.set(0));
    }
    REGISTERED.call_once(|| {
        // SAFETY: `in_child` only stores to a const-initialised thread-local
        // Cell (no lazy initialisation, no destructor), which is safe in a
        // fork child. A failure (ENOMEM) only leaves a child of a fork
        // reporting its parent thread's id.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
}

/// Records one event: the tracepoint's id, the writing thread's id (both
/// u32, little-endian), then what `encode` writes. Used by the code
/// [`tracepoint!`](crate::tracepoint) generates.
#[doc(hidden)]
#[inline]
pub fn record(id: u32, fields_len: usize, encode: impl FnOnce(&mut dyn FnMut(&[u8]))) {
    // Relaxed, every count below: statistics.
    let Some(ring) = sink() else {
        DROPPED_NO_SINK.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let mut r = match ring.reserve(EVENT_HEADER_LEN + fields_len) {
        Ok(r) => r,
        Err(e) => return count_refused(e),
    };
    {
        let mut stream = r.stream();
        stream.put(&id.to_le_bytes());
        stream.put(&current_tid().to_le_bytes());
        encode(&mut |bytes| {
            stream.put(bytes);
        });
    }
    r.commit();
}

/// Records one event whose bytes are all in `event`: its first
/// [`EVENT_HEADER_LEN`] bytes are filled here (the tracepoint's id, the
/// writing thread's id), its fields follow, already encoded. One whole
/// write ([`RingBuffer::write`]), the ring's cheapest. Used by the code
/// [`tracepoint!`](crate::tracepoint) generates for tracepoints whose
/// fields all have a fixed size.
#[doc(hidden)]
#[inline]
pub fn record_whole(id: u32, event: &mut [u8]) {
    // Relaxed, every count below: statistics.
    let Some(ring) = sink() else {
        DROPPED_NO_SINK.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if let Some(header) = event.get_mut(..EVENT_HEADER_LEN) {
        header[..4].copy_from_slice(&id.to_le_bytes());
        header[4..].copy_from_slice(&current_tid().to_le_bytes());
    }
    if let Err(e) = ring.write(event) {
        count_refused(e);
    }
}

/// Counts an event the sink ring refused, by cause (the ring counts it
/// too, in `missed` and by the same cause). Out of line: `record` is
/// inlined into every tracepoint.
#[cold]
#[inline(never)]
fn count_refused(e: ReserveError) {
    let cause = match e {
        ReserveError::Full => &DROPPED_FULL,
        ReserveError::Busy => &DROPPED_BUSY,
        ReserveError::Preparing => &DROPPED_PREPARING,
        ReserveError::TooLarge { .. } => &DROPPED_TOO_LARGE,
        ReserveError::TimedOut => &DROPPED_TIMED_OUT,
    };
    // Relaxed: a statistic, as the others.
    cause.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gettid() -> u32 {
        // SAFETY: gettid has no preconditions.
        u32::try_from(unsafe { libc::gettid() }).unwrap_or(0)
    }

    #[test]
    fn the_cached_thread_id_is_the_threads_own() {
        assert_eq!(current_tid(), gettid());
        assert_eq!(current_tid(), gettid());
        let other = std::thread::spawn(|| (current_tid(), gettid()))
            .join()
            .unwrap();
        assert_eq!(other.0, other.1);
        assert_ne!(other.0, current_tid());
    }

    #[test]
    fn a_fork_child_reads_its_own_thread_id_not_its_parents() {
        forget_tid_in_fork_children();
        let parent = current_tid();
        // SAFETY: the child only reads thread-locals and makes system
        // calls (no allocation, no lock) before _exit, as is safe after
        // fork in a process with other threads.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let own = current_tid();
            let ok = own == gettid() && own != parent;
            // SAFETY: ends the child at once, without running the parent's
            // exit handlers or destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child read its parent's thread id (status {status:#x})"
        );
    }
}
