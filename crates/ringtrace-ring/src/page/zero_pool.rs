//! Spare pages for claims: a file ring's, zeroed ahead of the claims that
//! need them, and either ring's for an overwrite claim that steps over a
//! page a sleeping writer holds (`write::step_over`).
//!
//! A file ring's claim must put a zeroed page into the slot it moves on
//! (see `write::claim::prepare_page`): a recovered file must never show an
//! older lap's bytes where a reservation had not yet written its header.
//! Zeroing the claimed page in place made every other writer of the CPU
//! wait for the claimer, for as long as it was preempted. Instead a claim
//! swaps a page from this pool into the slot, already zero, in the same
//! compare-and-swap that moves the slot to its next generation; the page it
//! takes out is zeroed afterwards, by the claimer, off every other writer's
//! path, and then comes back to the pool. A claimer that sleeps while it
//! zeroes holds one page out of the pool, and stalls nobody.
//!
//! The pool is an array of words, each empty (0) or naming a zeroed
//! physical page (`phys + 1`). A page is taken by a compare-and-swap of its
//! word to 0, and given back into any empty word. The value in a word is
//! the page itself, so a word that was emptied and refilled with the same
//! page while a taker slept is still right to take (no ABA). The pool lives
//! in the process, not the file: a page in it is in no slot, so a recovered
//! file never reads it, and a ring reopened with `append` fills a new pool.
//! A child forked with the ring inherits a copy of the pool, whose pages
//! its parent may take too: only the process that made a pool takes from
//! it (`forks`), and a child's claims zero their page in place, as a ring
//! without a pool does, and step over none.

use crate::order;
use crate::sync::{AtomicU32, Ordering};

/// The most pages a CPU buffer's pool holds. A pool runs dry only when this
/// many writers sleep at once, each between taking a page and giving one
/// back: a claimer zeroing (a few hundred nanoseconds), or a writer whose
/// page was stepped over, until it commits.
pub(crate) const MAX_POOL_PAGES: usize = 64;

/// How many of a file ring's quarantine pages its pool takes: 16, or half
/// of them, whichever is more, up to [`MAX_POOL_PAGES`], always leaving
/// the reader one (beside its own page) for a fixup. A ring with fewer
/// quarantine pages than two has no pool: its claims zero their page in
/// place, and it steps over no page.
pub(crate) fn pool_pages(quarantine_pages: usize) -> usize {
    let most = quarantine_pages.saturating_sub(1);
    MAX_POOL_PAGES.min(most.min(16).max(quarantine_pages / 2))
}

/// How many spare pages a memory ring's pool has, beyond its quarantine
/// (which stays the reader's): [`MAX_POOL_PAGES`] (8 under Miri, whose
/// memory is slow, as its default quarantine is smaller), or what the
/// physical page numbers leave above `physical`. Anonymous memory: a
/// spare costs address space until a step-over first uses it.
pub(crate) fn memory_spares(physical: usize) -> usize {
    let most = if cfg!(miri) { 8 } else { MAX_POOL_PAGES };
    most.min(crate::config::MAX_PHYSICAL_PAGES.saturating_sub(physical))
}

/// Pages zeroed ahead for claims (empty for a memory ring, whose claims
/// need no zeroing).
#[derive(Debug)]
pub(crate) struct ZeroPool {
    /// `phys + 1` of a zeroed page, or 0.
    entries: Box<[AtomicU32]>,
    /// The fork generation of the process that made it (`forks`).
    made_in: u32,
}

impl ZeroPool {
    /// A pool holding `pages`, which must be all zero (every word of their
    /// records; their commit words are set when they are taken).
    pub(crate) fn new(pages: impl IntoIterator<Item = usize>) -> Self {
        let entries: Box<[AtomicU32]> = pages
            .into_iter()
            .map(|phys| AtomicU32::new(phys as u32 + 1))
            .collect();
        ZeroPool {
            entries,
            made_in: super::forks::generation(),
        }
    }

    /// Whether this process may take from it: it has pages, and this
    /// process made it (a forked child holds only a copy, whose pages its
    /// parent takes too).
    #[inline]
    pub(crate) fn usable(&self) -> bool {
        !self.entries.is_empty() && super::forks::generation() == self.made_in
    }

    /// How many pages circulate through the pool (taken or not).
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Takes a zeroed page, if one is in the pool. Acquire on success: the
    /// zeros stored before the page was given back happen before our use.
    pub(crate) fn take(&self) -> Option<usize> {
        if !self.usable() {
            return None;
        }
        for entry in self.entries.iter() {
            // Relaxed: only a hint of what to try; the CAS decides.
            let word = entry.load(Ordering::Relaxed);
            if word != 0
                && entry
                    .compare_exchange(word, 0, order::POOL_TAKE, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(word as usize - 1);
            }
        }
        None
    }

    /// Gives back zeroed page `phys`. Release: its zeros happen before any
    /// taker's use. The pages in circulation are exactly as many as the
    /// words, and the caller holds one, so a word is free; a pass that
    /// finds none lost races to other givers and takers, and tries again.
    pub(crate) fn give(&self, phys: usize) {
        debug_assert!(phys < u32::MAX as usize);
        let mut spins = 0;
        loop {
            for entry in self.entries.iter() {
                // Relaxed: a hint, as in `take`.
                if entry.load(Ordering::Relaxed) == 0
                    && entry
                        .compare_exchange(0, phys as u32 + 1, order::POOL_GIVE, Ordering::Relaxed)
                        .is_ok()
                {
                    return;
                }
            }
            crate::sync::spin_wait(spins);
            spins = spins.saturating_add(1);
        }
    }

    /// The pages in the pool now, for a check that none is lost.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> Vec<usize> {
        self.entries
            .iter()
            .map(|e| e.load(Ordering::Relaxed))
            .filter(|&w| w != 0)
            .map(|w| w as usize - 1)
            .collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_page_taken_is_gone_until_given_back() {
        let pool = ZeroPool::new([7, 9]);
        assert_eq!(pool.capacity(), 2);
        let a = pool.take().unwrap();
        let b = pool.take().unwrap();
        assert_eq!([a.min(b), a.max(b)], [7, 9]);
        assert_eq!(pool.take(), None);
        pool.give(a);
        assert_eq!(pool.take(), Some(a));
        assert_eq!(ZeroPool::new([]).take(), None);
    }

    #[test]
    fn pages_taken_and_given_by_threads_are_never_lost_or_doubled() {
        let pool = std::sync::Arc::new(ZeroPool::new(0..4));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let pool = std::sync::Arc::clone(&pool);
                std::thread::spawn(move || {
                    for _ in 0..if cfg!(miri) { 50 } else { 10_000 } {
                        if let Some(p) = pool.take() {
                            pool.give(p);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut pages = pool.pages();
        pages.sort_unstable();
        assert_eq!(pages, [0, 1, 2, 3]);
    }
}
