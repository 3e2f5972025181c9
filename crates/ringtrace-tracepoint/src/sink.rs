//! Where tracepoints record: one ring for the process, as the kernel's
//! tracepoints write to the global trace buffer.

use ringtrace_clock::AnyClock;
use ringtrace_ring::RingBuffer;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The ring tracepoints record into (null: none yet).
static SINK: AtomicPtr<RingBuffer<AnyClock>> = AtomicPtr::new(std::ptr::null_mut());
/// Events an enabled tracepoint could not record (no sink, or the ring
/// refused the reservation).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Makes `ring` the ring that enabled tracepoints record into.
///
/// ```
/// use ringtrace_clock::ClockSpec;
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// let clock = "mono".parse::<ClockSpec>().unwrap().build().unwrap();
/// let ring = RingBuffer::new(RingConfig::default().per_cpu_bytes(64 * 1024), clock).unwrap();
/// ringtrace_tracepoint::set_sink(Box::leak(Box::new(ring)));
/// assert!(ringtrace_tracepoint::sink().is_some());
/// ```
pub fn set_sink(ring: &'static RingBuffer<AnyClock>) {
    // Release: a tracepoint that loads the pointer with Acquire sees the
    // ring fully built.
    SINK.store(ring as *const _ as *mut _, Ordering::Release);
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

/// Events enabled tracepoints failed to record, process-wide.
pub fn dropped() -> u64 {
    // Relaxed: a statistic.
    DROPPED.load(Ordering::Relaxed)
}

/// Records one event: the tracepoint's id, then what `encode` writes. Used
/// by the code [`tracepoint!`](crate::tracepoint) generates.
#[doc(hidden)]
#[inline]
pub fn record(id: u32, fields_len: usize, encode: impl FnOnce(&mut dyn FnMut(&[u8]))) {
    let Some(ring) = sink() else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let Ok(mut r) = ring.reserve(4 + fields_len) else {
        // Relaxed: a statistic. The ring counts the miss too.
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    {
        let mut stream = r.stream();
        stream.put(&id.to_le_bytes());
        encode(&mut |bytes| {
            stream.put(bytes);
        });
    }
    r.commit();
}
