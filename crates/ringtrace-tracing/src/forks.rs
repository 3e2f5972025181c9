//! Span and callsite ids in a fork child. A child forked from a process
//! that records goes on writing into the ring it inherited when that is a
//! file ring (shared with its parent), and readers take both processes'
//! records as one process's. Its copy of the registry, of the
//! subscriber's serial counter or of the callsite id counter would hand
//! out the very ids its parent goes on handing out: readers would join
//! two spans into one, and name a record of one callsite after another
//! described under the same id.
//!
//! A handler registered with `pthread_atfork` gives each child a value of
//! its own, drawn from its pid and the monotonic clock: the layer XORs its
//! ids with it (as it does to tell registries apart,
//! `crate::span_namespace`), and the subscriber numbers its spans from a
//! block drawn from it (`crate::subscriber::span_ids`), and callsites
//! the child describes take ids from a range drawn from it
//! (`crate::callsites`). Ids of a parent
//! and its child never meet while the parent has made fewer than 2^32
//! spans; two children's meet only if their draws fall within the spans
//! they make of each other, about one chance in 2^20 for a million spans
//! each.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// 0 in the process that started; the child's own value in a fork child.
static SALT: AtomicU64 = AtomicU64::new(0);

/// What the layer XORs its span ids with in this process (0 but in a fork
/// child).
#[inline(always)]
pub(crate) fn salt() -> u64 {
    // Relaxed: written once, by the fork handler, before the child's only
    // thread records anything.
    SALT.load(Ordering::Relaxed)
}

/// Registers the fork handler, once per process.
pub(crate) fn register() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: `in_child` calls only async-signal-safe functions
        // (getpid, clock_gettime), stores to atomics and to a
        // const-initialised thread-local Cell (no lazy initialisation, no
        // destructor): all safe in a fork child. A failure (ENOMEM) leaves
        // a child's ids as its parent's would be, as before.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
}

extern "C" fn in_child() {
    let value = draw();
    SALT.store(value, Ordering::Relaxed);
    crate::subscriber::span_ids::start_afresh(value);
    crate::callsites::start_afresh(value >> 32);
}

/// A value of this child's: its pid and the time, mixed (never 0).
fn draw() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write; getpid cannot fail.
    let pid = unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
        libc::getpid()
    };
    let seed = (now.tv_sec as u64)
        .wrapping_mul(1_000_000_007)
        .wrapping_add(now.tv_nsec as u64)
        ^ (u64::from(pid as u32) << 40);
    crate::span_namespace::splitmix64(seed).max(1)
}
