//! The atomics the ring is built from, behind a facade: std's (and
//! portable-atomic's 128-bit) normally, loom's under `cfg(loom)`, so the same
//! reserve/commit/read code is model-checked. As tokio and bytes do it.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

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
#[derive(Debug)]
pub(crate) struct AtomicPair {
    #[cfg(not(loom))]
    word: portable_atomic::AtomicU128,
    #[cfg(loom)]
    word: loom::sync::Mutex<u128>,
}

/// Packs (low, high) into one u128.
#[inline(always)]
pub(crate) fn pair(low: u64, high: u64) -> u128 {
    u128::from(low) | (u128::from(high) << 64)
}

/// Splits a u128 into (low, high).
#[inline(always)]
pub(crate) fn unpair(word: u128) -> (u64, u64) {
    (word as u64, (word >> 64) as u64)
}

impl AtomicPair {
    pub(crate) fn new(low: u64, high: u64) -> Self {
        AtomicPair {
            #[cfg(not(loom))]
            word: portable_atomic::AtomicU128::new(pair(low, high)),
            #[cfg(loom)]
            word: loom::sync::Mutex::new(pair(low, high)),
        }
    }

    /// The current (low, high).
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> (u64, u64) {
        #[cfg(not(loom))]
        {
            unpair(self.word.load(order))
        }
        #[cfg(loom)]
        {
            let _ = order; // a mutex orders everything
            unpair(*self.word.lock().unwrap())
        }
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
        #[cfg(not(loom))]
        {
            self.word
                .compare_exchange(current, new, success, failure)
                .map(|_| ())
                .map_err(unpair)
        }
        #[cfg(loom)]
        {
            let _ = (success, failure);
            let mut word = self.word.lock().unwrap();
            if *word == current {
                *word = new;
                Ok(())
            } else {
                Err(unpair(*word))
            }
        }
    }
}

/// The reader lock: parking_lot's normally, loom's under `cfg(loom)` (a real
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
