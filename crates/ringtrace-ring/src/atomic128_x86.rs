//! A 128-bit atomic for x86_64 in `asm!`, with no build flag: what the
//! ring's `(write, last_ts)` state needs, whatever the embedding program
//! puts in its own build.
//!
//! Without `-C target-feature=+cmpxchg16b`, portable-atomic dispatches at
//! run time and, on a CPU without the instruction, falls back to a lock,
//! which is not async-signal-safe: a signal handler that writes while its
//! thread holds the lock would wait for ever. Here the instruction is
//! always `lock cmpxchg16b`, checked to exist when a ring is built
//! ([`supported`]; every x86_64 CPU since 2006 has it), and a load is one
//! `vmovdqa` on a CPU with AVX (aligned 16-byte loads are atomic there:
//! Intel SDM 9.1.1, AMD APM 7.3.2) or a `lock cmpxchg16b` that writes back
//! what it found. No lock, no call: async-signal-safe, and the same code
//! for this workspace and an embedder.

use core::arch::asm;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU8, Ordering};

/// A 16-byte aligned u128 changed only by `lock cmpxchg16b`.
#[derive(Debug)]
#[repr(C, align(16))]
pub(crate) struct AtomicU128 {
    word: UnsafeCell<u128>,
}

// SAFETY: every access to `word` is one atomic instruction (a locked
// cmpxchg16b or an aligned vmovdqa on a CPU where it is atomic), so
// sharing it between threads is sound, as for std's atomics.
unsafe impl Sync for AtomicU128 {}

/// 0: not yet looked; 1: cmpxchg16b only; 2: cmpxchg16b and AVX; 3: no
/// cmpxchg16b.
static FEATURES: AtomicU8 = AtomicU8::new(0);

fn features() -> u8 {
    // Relaxed: a cached fact about the CPU, the same whoever computes it.
    let f = FEATURES.load(Ordering::Relaxed);
    if f != 0 {
        return f;
    }
    let f = if !std::arch::is_x86_feature_detected!("cmpxchg16b") {
        3
    } else if std::arch::is_x86_feature_detected!("avx") {
        2
    } else {
        1
    };
    FEATURES.store(f, Ordering::Relaxed);
    f
}

/// Whether this CPU has `cmpxchg16b`. The ring refuses to be built without
/// it, so the write path (signal handlers included) never looks.
pub(crate) fn supported() -> bool {
    features() != 3
}

impl AtomicU128 {
    pub(crate) const fn new(value: u128) -> Self {
        AtomicU128 {
            word: UnsafeCell::new(value),
        }
    }

    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *mut u128 {
        self.word.get()
    }

    /// The current value. Every ordering is the same here: a load on
    /// x86_64 is an Acquire load, and the locked form a full barrier.
    /// The CPU's features are looked up here if nobody has yet: a process
    /// that only reads rings (a recorder draining another process's ring
    /// file) builds none, and should still take the plain load. The locked
    /// one is as correct but writes the line back, taking it away from the
    /// writer's cache at every look.
    #[inline]
    pub(crate) fn load(&self, _order: Ordering) -> u128 {
        let (lo, hi): (u64, u64);
        if features() == 2 {
            // SAFETY: `word` is live and 16-byte aligned; with AVX the
            // aligned 16-byte load is atomic. `vmovdqa` is an AVX
            // instruction, present since FEATURES says so.
            unsafe {
                asm!(
                    "vmovdqa {x}, xmmword ptr [{p}]",
                    "vmovq {lo}, {x}",
                    "vpextrq {hi}, {x}, 1",
                    p = in(reg) self.word.get(),
                    x = out(xmm_reg) _,
                    lo = out(reg) lo,
                    hi = out(reg) hi,
                    options(nostack, readonly, preserves_flags),
                );
            }
        } else {
            // A compare-and-swap of 0 with 0: it stores 0 only where 0 was,
            // and otherwise returns (and writes back) the current value.
            match self.compare_exchange(0, 0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) | Err(v) => return v,
            }
        }
        u128::from(lo) | (u128::from(hi) << 64)
    }

    /// `lock cmpxchg16b`: replaces `current` with `new` if it is there;
    /// returns the value found (Ok if it was `current`). SeqCst whatever is
    /// asked: a locked instruction is a full barrier.
    #[inline]
    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        _success: Ordering,
        _failure: Ordering,
    ) -> Result<u128, u128> {
        let (lo, hi): (u64, u64);
        let ok: u8;
        // SAFETY: `word` is live and 16-byte aligned; the CPU has
        // cmpxchg16b (checked when the ring was built: `supported`). rbx,
        // which the instruction takes the new low half in, cannot be an
        // operand: it is swapped with r9 around the instruction, and every
        // operand is in a named register, so none is rbx.
        unsafe {
            asm!(
                "xchg rbx, r9",
                "lock cmpxchg16b xmmword ptr [r8]",
                "sete {ok}",
                "xchg rbx, r9",
                ok = out(reg_byte) ok,
                in("r8") self.word.get(),
                inout("r9") new as u64 => _,
                in("rcx") (new >> 64) as u64,
                inout("rax") current as u64 => lo,
                inout("rdx") (current >> 64) as u64 => hi,
                options(nostack),
            );
        }
        let found = u128::from(lo) | (u128::from(hi) << 64);
        if ok != 0 {
            Ok(current)
        } else {
            Err(found)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_exchange_swaps_only_the_expected_value_and_returns_what_it_found() {
        assert!(supported());
        let a = AtomicU128::new(5 | (7 << 64));
        assert_eq!(a.load(Ordering::SeqCst), 5 | (7 << 64));
        assert_eq!(
            a.compare_exchange(5, 9, Ordering::SeqCst, Ordering::SeqCst),
            Err(5 | (7 << 64))
        );
        let big = u128::MAX - 3;
        assert_eq!(
            a.compare_exchange(5 | (7 << 64), big, Ordering::SeqCst, Ordering::SeqCst),
            Ok(5 | (7 << 64))
        );
        assert_eq!(a.load(Ordering::SeqCst), big);
        // The locked load works too (FEATURES forced to "no AVX").
        let was = FEATURES.swap(1, Ordering::Relaxed);
        assert_eq!(a.load(Ordering::SeqCst), big);
        FEATURES.store(was, Ordering::Relaxed);
        assert_eq!(a.load(Ordering::SeqCst), big);
    }

    #[test]
    fn concurrent_compare_exchanges_never_lose_or_tear_an_update() {
        let a = std::sync::Arc::new(AtomicU128::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let a = std::sync::Arc::clone(&a);
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        let mut cur = a.load(Ordering::SeqCst);
                        loop {
                            // Both halves move together: high = low * 3.
                            let lo = (cur as u64) + 1;
                            let next = u128::from(lo) | (u128::from(lo * 3) << 64);
                            match a.compare_exchange(cur, next, Ordering::SeqCst, Ordering::SeqCst)
                            {
                                Ok(_) => break,
                                Err(v) => {
                                    assert_eq!((v >> 64) as u64, (v as u64) * 3, "torn");
                                    cur = v;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(a.load(Ordering::SeqCst), 200_000 | (600_000u128 << 64));
    }
}
