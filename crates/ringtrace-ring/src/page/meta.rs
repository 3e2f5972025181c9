//! The two atomic words that describe a page: the per-slot word and the
//! per-physical-page commit word. Their bits are laid out here, once.
//!
//! A CPU buffer has `N` ring *slots*; virtual page `seq` lives in slot
//! `seq % N` as that slot's generation `seq / N + 1` (generation 0 is "never
//! used"). A slot names the *physical* page holding it; the reader swaps a
//! physical page out of a slot (the kernel's reader page) and a fixup
//! replaces a stuck one, so the mapping changes.
//!
//! Slot word (u64), changed only by compare-and-swap:
//!
//! | bits   | field    | meaning                                          |
//! |--------|----------|--------------------------------------------------|
//! | 0..16  | consumed | events of this generation the reader has consumed in place |
//! | 16..32 | phys     | physical page holding the slot                   |
//! | 32..64 | gen      | generation of the slot (seq / N + 1), wrapping   |
//!
//! Commit word (u64), one per physical page; writers `fetch_add` to it, all
//! other changes are compare-and-swap:
//!
//! | bits   | field     | meaning                                         |
//! |--------|-----------|-------------------------------------------------|
//! | 0..20  | bytes     | bytes committed: header, events, discards, padding |
//! | 20     | HEADER    | the page header is written (added with its bytes by the writer that opens the page) |
//! | 21     | ZEROED    | a file ring's claim has zeroed the page (see `write::claim::prepare_page`) |
//! | 22     | STEPPED   | stepped over by an overwrite-mode claim while a reservation in it was open; commits that find it count their event as overrun, and the one that completes the page frees it (see `write::claim::step_over`) |
//! | 24..40 | events    | data events committed                           |
//! | 40     | OPENING   | claimed for generation `tag`, slot not yet moved; `events` still holds the old generation's count |
//! | 41     | RECLAIMED | taken out of its slot by a fixup; commits that find it count their event as lost |
//! | 42..64 | tag       | low 22 bits of the generation the counts belong to |
//!
//! A page is *complete* when `bytes == page_size`: every byte of it is
//! accounted for by a committed record, so no reservation in it is open.
//!
//! Beside each commit word, in the same 16 bytes ([`CommitLine`]), is the
//! page's `hits`: reservations ended on the page by the rseq write path,
//! which adds to both words in one 16-byte store. It is the page's share
//! of the buffer's `hit`, and never reset: a buffer's `hit` is its hot
//! line's count (the CAS path, remote updates, adoption) plus every
//! page's `hits`.

/// A physical page's commit word and its `hits` (see the module docs): 16
/// bytes, 16-aligned, so that one section store updates both. In a file
/// ring these are the first 16 bytes of each commit line (format version 3;
/// zero in older files, whose hits are all in the hot line).
#[derive(Debug)]
#[repr(C, align(16))]
pub(crate) struct CommitLine {
    pub word: crate::sync::AtomicU64,
    pub hits: crate::sync::AtomicU64,
}

// SAFETY: two integer atomics, valid for any bits and zero for `new(0)`,
// without Drop; repr(C) fixes their order (the file format's).
unsafe impl crate::page::zeroed::Zeroable for CommitLine {
    fn zero() -> Self {
        CommitLine {
            word: crate::sync::AtomicU64::new(0),
            hits: crate::sync::AtomicU64::new(0),
        }
    }
}

/// Decoded slot word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub consumed: u32,
    pub phys: usize,
    pub gen: u32,
}

impl Slot {
    #[inline(always)]
    pub(crate) fn unpack(word: u64) -> Slot {
        Slot {
            consumed: (word & 0xFFFF) as u32,
            phys: ((word >> 16) & 0xFFFF) as usize,
            gen: (word >> 32) as u32,
        }
    }

    #[inline(always)]
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.consumed <= 0xFFFF && self.phys <= 0xFFFF);
        u64::from(self.consumed) | ((self.phys as u64) << 16) | (u64::from(self.gen) << 32)
    }
}

/// The generation virtual page `seq` has in its slot.
#[inline(always)]
pub(crate) fn gen_of(seq: u64, pages: usize) -> u32 {
    (seq / pages as u64 + 1) as u32
}

pub(crate) const BYTES_MASK: u64 = (1 << 20) - 1;
/// Added, with the header's bytes, by the commit of the writer that opens a
/// page: bytes never reach bit 20 (a page is at most 2^16 bytes).
pub(crate) const HEADER: u64 = 1 << 20;
pub(crate) const ZEROED: u64 = 1 << 21;
pub(crate) const STEPPED: u64 = 1 << 22;
/// The flags that send a commit to the late path: a page out of its slot.
pub(crate) const LATE: u64 = RECLAIMED | STEPPED;
pub(crate) const EVENTS_SHIFT: u32 = 24;
pub(crate) const EVENTS_MASK: u64 = 0xFFFF;
pub(crate) const OPENING: u64 = 1 << 40;
pub(crate) const RECLAIMED: u64 = 1 << 41;
pub(crate) const TAG_SHIFT: u32 = 42;
pub(crate) const TAG_MASK: u64 = (1 << 22) - 1;
/// What one committed data event adds to a commit word, besides its bytes.
pub(crate) const ONE_EVENT: u64 = 1 << EVENTS_SHIFT;

/// Decoded commit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Commit {
    pub bytes: usize,
    pub events: u32,
    pub opening: bool,
    pub reclaimed: bool,
    /// The page header is written: a recovered file trusts its base time
    /// and sequence number only then.
    pub header: bool,
    /// The claim zeroed the page (file rings only).
    pub zeroed: bool,
    pub tag: u32,
}

impl Commit {
    #[inline(always)]
    pub(crate) fn unpack(word: u64) -> Commit {
        Commit {
            bytes: (word & BYTES_MASK) as usize,
            events: ((word >> EVENTS_SHIFT) & EVENTS_MASK) as u32,
            opening: word & OPENING != 0,
            reclaimed: word & RECLAIMED != 0,
            header: word & HEADER != 0,
            zeroed: word & ZEROED != 0,
            tag: ((word >> TAG_SHIFT) & TAG_MASK) as u32,
        }
    }

    #[inline(always)]
    pub(crate) fn pack(self) -> u64 {
        self.bytes as u64
            | (u64::from(self.events) << EVENTS_SHIFT)
            | if self.opening { OPENING } else { 0 }
            | if self.reclaimed { RECLAIMED } else { 0 }
            | if self.header { HEADER } else { 0 }
            | if self.zeroed { ZEROED } else { 0 }
            | ((u64::from(self.tag) & TAG_MASK) << TAG_SHIFT)
    }

    /// A page of generation `gen` with everything committed and `events`
    /// events in it; `header`: whether its page header is written.
    pub(crate) fn complete(gen: u32, page_size: usize, events: u32, header: bool) -> Commit {
        Commit {
            bytes: page_size,
            events,
            opening: false,
            reclaimed: false,
            header,
            zeroed: false,
            tag: tag_of(gen),
        }
    }

    /// A page being claimed for generation `gen`, still holding the old
    /// generation's `events` count and `header` flag (until the claim's
    /// step 2 the page is the old generation's, whole, and a recovered file
    /// reads it so).
    pub(crate) fn opening(gen: u32, events: u32, header: bool) -> Commit {
        Commit {
            bytes: 0,
            events,
            opening: true,
            reclaimed: false,
            header,
            zeroed: false,
            tag: tag_of(gen),
        }
    }

    /// A page claimed for generation `gen`, counting from zero.
    pub(crate) fn fresh(gen: u32) -> Commit {
        Commit {
            bytes: 0,
            events: 0,
            opening: false,
            reclaimed: false,
            header: false,
            zeroed: false,
            tag: tag_of(gen),
        }
    }
}

/// The commit-word tag of generation `gen`.
#[inline(always)]
pub(crate) fn tag_of(gen: u32) -> u32 {
    (u64::from(gen) & TAG_MASK) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_words_round_trip() {
        let s = Slot {
            consumed: 0xFFFF,
            phys: 0x1234,
            gen: u32::MAX,
        };
        assert_eq!(Slot::unpack(s.pack()), s);
    }

    #[test]
    fn commit_words_round_trip_and_events_add_without_carry_into_flags() {
        let c = Commit {
            bytes: 4096,
            events: 100,
            opening: true,
            reclaimed: false,
            header: true,
            zeroed: true,
            tag: TAG_MASK as u32,
        };
        assert_eq!(Commit::unpack(c.pack()), c);
        let added = Commit::unpack(c.pack() + 24 + ONE_EVENT);
        assert_eq!(
            (added.bytes, added.events, added.opening, added.tag),
            (4120, 101, true, c.tag)
        );
        let full = Commit::unpack(Commit::fresh(3).pack() + HEADER + 65_536);
        assert_eq!(
            (full.bytes, full.header, full.zeroed),
            (65_536, true, false)
        );
    }
}
