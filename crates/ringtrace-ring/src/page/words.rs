//! Page memory: every page of every CPU buffer is an array of atomic 32-bit
//! words.
//!
//! Why atomics for payload bytes too: in overwrite mode a writer can reuse a
//! page while a non-consuming iterator is still copying it. The iterator
//! notices afterwards and throws the copy away, but in Rust's memory model a
//! plain read racing a plain write is undefined behaviour whether or not the
//! result is used. Relaxed atomic loads and stores compile to plain moves on
//! x86_64 and aarch64, and make the race defined. Events are 4-byte aligned,
//! so a word never holds bytes of two reservations.

use crate::page::zeroed::ZeroedSlice;
use crate::sync::{AtomicU32, Ordering};

/// The pages of one CPU buffer.
#[derive(Debug)]
pub(crate) struct PageWords {
    words: ZeroedSlice<AtomicU32>,
    page_words: usize,
}

impl PageWords {
    /// Pages of `page_size` bytes over `words`: zeroed and mapped rather
    /// than written, so that a page the ring never reaches (most of the
    /// quarantine's, see `RingConfig::quarantine_pages`) costs address
    /// space, not memory.
    pub(crate) fn new(words: ZeroedSlice<AtomicU32>, page_size: usize) -> Self {
        PageWords {
            words,
            page_words: page_size / 4,
        }
    }

    /// The address of physical page 0's first byte (the rseq fast path's
    /// base, see `rseq::FastLine`).
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        self.words.as_ptr().cast_mut().cast()
    }

    /// Zeroes page `phys`, word by word (a concurrent iterator may be
    /// copying it, and detects the reuse afterwards).
    pub(crate) fn zero_page(&self, phys: usize) {
        let start = phys * self.page_words;
        if let Some(page) = self.words.get(start..start + self.page_words) {
            for word in page {
                // Relaxed: ordered for readers by the caller's fences and
                // the commit word's Release. A word already zero is left
                // alone, so that a page never written (most of a new
                // file's) is not dirtied in the page cache for nothing.
                if word.load(Ordering::Relaxed) != 0 {
                    word.store(0, Ordering::Relaxed);
                }
            }
        }
    }

    #[inline(always)]
    pub(crate) fn word(&self, phys: usize, byte: usize) -> &AtomicU32 {
        let index = phys * self.page_words + byte / 4;
        debug_assert!(byte / 4 < self.page_words && index < self.words.len());
        // SAFETY: every caller passes a physical page index taken from a slot
        // word or the reader's free list (all below the page count the array
        // was built with) and a byte offset inside the page (a record
        // position below page_size, checked when the record was placed), so
        // `index` is in bounds. This is the write path's only indexing; the
        // unchecked access saves a compare and branch per payload word.
        unsafe { self.words.get_unchecked(index) }
    }

    /// The `n` words from a 4-aligned byte offset of page `phys`.
    #[inline(always)]
    pub(crate) fn words(&self, phys: usize, byte: usize, n: usize) -> &[AtomicU32] {
        let start = phys * self.page_words + byte / 4;
        debug_assert!(byte / 4 + n <= self.page_words && start + n <= self.words.len());
        // SAFETY: as for `word`: the range is a reservation's payload, which
        // was placed to end inside its page, or (`copy_to`) a reader's span
        // of committed bytes, 4-aligned and ending at or before the page
        // size; either way it is within `words`.
        unsafe { self.words.get_unchecked(start..start + n) }
    }

    /// Stores one word at a 4-aligned byte offset of page `phys`.
    #[inline(always)]
    pub(crate) fn store(&self, phys: usize, byte: usize, value: u32) {
        // Relaxed: published by the commit word's Release (see CpuBuffer).
        self.word(phys, byte).store(value, Ordering::Relaxed);
    }

    /// Stores a u64 as two words at a 4-aligned byte offset.
    pub(crate) fn store_u64(&self, phys: usize, byte: usize, value: u64) {
        self.store(phys, byte, value as u32);
        self.store(phys, byte + 4, (value >> 32) as u32);
    }

    /// Writes a fresh page header for virtual page `seq` into page `phys`:
    /// its base time, its sequence number, and zero commit, event, skip and
    /// lost fields (those are filled in only in a reader's copy).
    pub(crate) fn store_page_header(&self, phys: usize, seq: u64, base_ts: u64) {
        use crate::format::header;
        self.store_u64(phys, header::BASE_TS, base_ts);
        self.store_u64(phys, header::SEQ, seq);
        for field in [header::COMMIT, header::EVENTS, header::SKIP, header::LOST] {
            self.store(phys, field, 0);
        }
    }

    /// Loads one word at a 4-aligned byte offset of page `phys`.
    #[inline(always)]
    pub(crate) fn load(&self, phys: usize, byte: usize) -> u32 {
        // Relaxed: readers order these loads with fences or the commit word.
        self.word(phys, byte).load(Ordering::Relaxed)
    }

    /// Copies `len` bytes (a multiple of 4) from byte offset `at` of page
    /// `phys` into `out`.
    pub(crate) fn read_into(&self, phys: usize, at: usize, len: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(len, 0);
        self.copy_to(phys, at, at + len, out, 0);
    }

    /// Copies bytes `from..end` (4-aligned, inside the page) of page
    /// `phys` into `out` from byte `to`: one Relaxed load per word over
    /// one slice of the page, so that the loop is a load and a store.
    pub(crate) fn copy_to(&self, phys: usize, from: usize, end: usize, out: &mut [u8], to: usize) {
        debug_assert!(from % 4 == 0 && end % 4 == 0 && from <= end);
        debug_assert!(end / 4 <= self.page_words);
        let words = self.words(phys, from, (end - from) / 4);
        let Some(out) = out.get_mut(to..to + (end - from)) else {
            return;
        };
        for (dst, w) in out.chunks_exact_mut(4).zip(words) {
            // Relaxed: readers order these loads with fences or the
            // commit word, as `load`'s.
            dst.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
    }
}
