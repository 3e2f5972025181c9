//! The atomics the ring is built from, behind a facade: std's (and
//! portable-atomic's 128-bit) normally, loom's under `cfg(loom)`, so the same
//! reserve/commit/read code is model-checked. As tokio and bytes do it.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Lets another thread make progress while this one waits for it: a spin
/// hint normally, a yield to loom's scheduler under `cfg(loom)` (which
/// otherwise sees a spin loop that never ends).
#[inline]
pub(crate) fn spin_wait(spins: u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// A 128-bit atomic word, used as a (low, high) pair of u64 that must change
/// together: the ring's (write offset, last timestamp).
///
/// Under `cfg(loom)` the pair is modelled with the orderings the code asks
/// for, not behind a lock: the values live in an append-only arena loom does
/// not see, and a loom `AtomicUsize` holds the index of the current one, so
/// a load of the index with ordering O is a load of the pair with O, and a
/// compare-and-swap of the index is a compare-and-swap of the pair. Values
/// never repeat (the write offset only grows), so comparing indices is
/// comparing values.
#[derive(Debug)]
pub(crate) struct AtomicPair {
    #[cfg(not(loom))]
    word: Word128,
    #[cfg(loom)]
    index: loom::sync::atomic::AtomicUsize,
    #[cfg(loom)]
    arena: std::sync::Mutex<Vec<(u64, u64)>>,
}

/// The 128-bit atomic under the pair: this crate's own `lock cmpxchg16b`
/// on x86_64 (no build flag needed, no lock: `atomic128_x86`),
/// portable-atomic's elsewhere (aarch64: `casp` or `ldxp`/`stxp`) and
/// under Miri, which cannot run the assembly.
#[cfg(all(not(loom), target_arch = "x86_64", not(miri)))]
type Word128 = crate::atomic128_x86::AtomicU128;
#[cfg(all(not(loom), not(all(target_arch = "x86_64", not(miri)))))]
type Word128 = portable_atomic::AtomicU128;

/// Whether this CPU can run the ring: on x86_64, `cmpxchg16b` (every
/// x86_64 CPU since 2006 has it); `Err` names what is missing.
pub(crate) fn check_cpu() -> Result<(), String> {
    #[cfg(all(not(loom), target_arch = "x86_64", not(miri)))]
    if !crate::atomic128_x86::supported() {
        return Err("this CPU has no cmpxchg16b, which the ring's 128-bit state needs".into());
    }
    Ok(())
}

/// Packs (low, high) into one u128.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn pair(low: u64, high: u64) -> u128 {
    u128::from(low) | (u128::from(high) << 64)
}

/// Splits a u128 into (low, high).
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn unpair(word: u128) -> (u64, u64) {
    (word as u64, (word >> 64) as u64)
}

#[cfg(not(loom))]
impl AtomicPair {
    pub(crate) fn new(low: u64, high: u64) -> Self {
        AtomicPair {
            word: Word128::new(pair(low, high)),
        }
    }

    /// The current (low, high).
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> (u64, u64) {
        unpair(self.word.load(order))
    }

    /// The pair's address (16-byte aligned), for the rseq sections.
    #[cfg_attr(
        not(all(target_os = "linux", target_arch = "x86_64", not(miri))),
        allow(dead_code)
    )]
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *mut u128 {
        self.word.as_ptr()
    }

    /// Replaces `current` with `new` if the word still holds `current`;
    /// returns the value found on failure.
    #[inline]
    pub(crate) fn compare_exchange(
        &self,
        current: (u64, u64),
        new: (u64, u64),
        success: Ordering,
        failure: Ordering,
    ) -> Result<(), (u64, u64)> {
        let (current, new) = (pair(current.0, current.1), pair(new.0, new.1));
        self.word
            .compare_exchange(current, new, success, failure)
            .map(|_| ())
            .map_err(unpair)
    }
}

#[cfg(loom)]
impl AtomicPair {
    pub(crate) fn new(low: u64, high: u64) -> Self {
        AtomicPair {
            index: loom::sync::atomic::AtomicUsize::new(0),
            arena: std::sync::Mutex::new(vec![(low, high)]),
        }
    }

    /// The arena. (A std mutex: loom switches threads only at its own
    /// operations, so this is never contended and adds no ordering loom
    /// could see.)
    fn arena(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.arena.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn value(&self, index: usize) -> (u64, u64) {
        self.arena()[index]
    }

    /// The index of `v`, added if new: one index per value, so an index
    /// CAS compares values.
    fn intern(&self, v: (u64, u64)) -> usize {
        let mut arena = self.arena();
        match arena.iter().position(|&x| x == v) {
            Some(i) => i,
            None => {
                arena.push(v);
                arena.len() - 1
            }
        }
    }

    pub(crate) fn load(&self, order: Ordering) -> (u64, u64) {
        self.value(self.index.load(order))
    }

    /// A value CAS as an index CAS with the caller's orderings. A value
    /// never stored cannot be current: the CAS fails, reading the current
    /// value as a failed CAS does (an RMW of nothing, so it reads the
    /// latest, as cmpxchg16b and casp do).
    pub(crate) fn compare_exchange(
        &self,
        current: (u64, u64),
        new: (u64, u64),
        success: Ordering,
        failure: Ordering,
    ) -> Result<(), (u64, u64)> {
        let fresh = self.intern(new);
        let want = self.arena().iter().position(|&x| x == current);
        match want {
            Some(want) => self
                .index
                .compare_exchange(want, fresh, success, failure)
                .map(|_| ())
                .map_err(|actual| self.value(actual)),
            None => Err(self.value(self.index.fetch_add(0, failure))),
        }
    }
}

/// The reader lock (and the metadata annex's): parking_lot's normally, loom's under `cfg(loom)` (a real
/// mutex would block loom's single OS thread).
#[derive(Debug)]
pub(crate) struct Mutex<T> {
    #[cfg(not(loom))]
    inner: parking_lot::Mutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex {
            #[cfg(not(loom))]
            inner: parking_lot::Mutex::new(value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    #[cfg(not(loom))]
    pub(crate) fn lock(&self) -> parking_lot::MutexGuard<'_, T> {
        self.inner.lock()
    }

    #[cfg(loom)]
    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        // A panic while the lock is held is a test failure anyway.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
