//! A reserved, not yet committed event.

use super::percpu::add_to_line;
use crate::format;
use crate::order;
use crate::page::counters::RareCounters;
use crate::page::meta;
use crate::shared::SharedState;
use crate::sync::{AtomicU32, Ordering};

/// Room for one event in a CPU buffer, between reserve and commit.
///
/// Write the payload with [`write`](Reservation::write) (or piecewise with
/// [`write_at`](Reservation::write_at)), then [`commit`](Reservation::commit).
/// Dropped without commit (an early return, a panic unwinding), it becomes a
/// discard record: the page is never left waiting for it.
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// use ringtrace_clock::Counter;
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
/// let ring = RingBuffer::new(config, Counter::new()).unwrap();
/// let mut r = ring.reserve(5).unwrap();
/// r.write(b"hello");
/// r.commit();
/// assert_eq!(ring.stats().hit, 1);
/// ```
#[must_use = "a reservation not committed becomes a discard record"]
#[derive(Debug)]
pub struct Reservation<'a> {
    buffer: &'a SharedState,
    /// The event record's words: header, then (for a long event) the
    /// length, then the payload.
    record: &'a [AtomicU32],
    /// The page's commit word and hits.
    commit: &'a meta::CommitLine,
    /// The event header the commit stores.
    header: u32,
    /// Index in `record` of the first payload word (1 or 2).
    payload_at: u32,
    len: u32,
    /// Every payload byte has been written (or zeroed): `write` and
    /// `stream` define all of it; before the first `write_at`, and at a
    /// commit without either, the payload is zeroed, because the page may
    /// hold an older lap's bytes and they must never show.
    filled: bool,
    /// What the commit adds to the commit word: the record's bytes and one
    /// event.
    add: u64,
    ts: u64,
}

impl<'a> Reservation<'a> {
    /// A reservation of the record `record` (header word included) on the
    /// page counted by `commit`. Both are resolved by the reserve, so
    /// neither the writer nor the commit decodes anything.
    #[inline(always)]
    pub(crate) fn new(
        buffer: &'a SharedState,
        record: &'a [AtomicU32],
        commit: &'a meta::CommitLine,
        header: u32,
        len: usize,
        ts: u64,
    ) -> Self {
        Reservation {
            buffer,
            record,
            commit,
            header,
            payload_at: if format::is_short(len) { 1 } else { 2 },
            len: len as u32,
            filled: len == 0,
            add: (record.len() * 4) as u64 + meta::ONE_EVENT,
            ts,
        }
    }

    #[inline(always)]
    fn payload(&self) -> &'a [AtomicU32] {
        // Never out of range: a record is its header words plus the payload.
        self.record.get(self.payload_at as usize..).unwrap_or(&[])
    }

    /// The payload length reserved.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the payload is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The event's timestamp, in clock ticks.
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.ts
    }

    /// The CPU buffer the event went to.
    #[inline]
    pub fn cpu(&self) -> usize {
        self.buffer.cpu()
    }

    /// Writes the whole payload. `bytes` longer than the reservation are cut
    /// to it; shorter ones leave the rest zero.
    #[inline(always)]
    pub fn write(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.len());
        store_bytes(self.payload(), &bytes[..n]);
        if n < self.len() {
            self.zero_from(n);
        }
        self.filled = true;
    }

    /// Zeroes the payload from byte `n`: the page may hold an older lap's
    /// bytes, and they must never show.
    #[inline(always)]
    fn zero_from(&self, n: usize) {
        // A free function on the words, so that the reservation itself need
        // not be spilled to memory for a call on the fast path's way.
        zero_words(self.payload(), n.div_ceil(4));
    }

    /// Writes `bytes` at `offset` into the payload; `offset` must be a
    /// multiple of 4 (pieces are whole words). Bytes past the reservation are
    /// cut off; returns how many were written.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> usize {
        if offset % 4 != 0 || offset >= self.len() {
            return 0;
        }
        if !self.filled {
            self.zero_from(0);
            self.filled = true;
        }
        let n = bytes.len().min(self.len() - offset);
        store_bytes(&self.payload()[offset / 4..], &bytes[..n]);
        n
    }

    /// A byte-granular writer over the payload, for encoders that produce
    /// the payload piece by piece (tracepoint fields, say).
    ///
    /// ```
    /// # use ringtrace_ring::{RingBuffer, RingConfig};
    /// # use ringtrace_clock::Counter;
    /// # let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024), Counter::new()).unwrap();
    /// let mut r = ring.cpu_writer(0).reserve(7).unwrap();
    /// let mut w = r.stream();
    /// w.put(&[1, 2, 3]);
    /// w.put(&[4, 5, 6, 7]);
    /// drop(w);
    /// r.commit();
    /// assert_eq!(ring.cpu_buffer(0).unwrap().read_event().unwrap().payload, [1, 2, 3, 4, 5, 6, 7]);
    /// ```
    pub fn stream(&mut self) -> PayloadStream<'_> {
        // The stream writes from the start and zeroes what it does not
        // write when dropped.
        self.filled = true;
        PayloadStream {
            words: self.payload(),
            pos: 0,
            pending: [0; 4],
            limit: self.len(),
        }
    }

    /// Commits the event: once every reservation of its page is committed,
    /// the page is readable as a whole.
    #[inline(always)]
    pub fn commit(self) {
        // No Drop: it would turn the event into a discard record.
        let this = std::mem::ManuallyDrop::new(self);
        if !this.filled {
            this.zero_from(0);
        }
        if let Some(header) = this.record.first() {
            // Readers see it through the Release add below. Release here is
            // for a crash: the payload is stored first in program order and
            // for the compiler, so a file recovered after a kill never finds
            // this header (PENDING cleared) without its payload. A plain
            // store on x86_64.
            header.store(this.header, order::RECORD_HEADER);
        }
        // Release: see write::claim::commit_bytes. The hit is counted now, not
        // at reserve, so that a reservation that never ends is in no count.
        let reclaimed = add_to_line(this.buffer, this.commit, this.add, 1);
        if reclaimed {
            this.lost_late();
        }
    }

    /// A fixup took the page while we wrote: the event is counted as lost,
    /// not silently dropped.
    #[cold]
    fn lost_late(&self) {
        RareCounters::bump(&self.buffer.rare().lost, 1);
    }
}

impl Drop for Reservation<'_> {
    /// Turns the reservation into a discard record, keeping its time delta
    /// so later deltas still add up, and commits it.
    fn drop(&mut self) {
        let size = self.add - meta::ONE_EVENT;
        // Every record has at least two words (header and one more).
        if let [header, second, ..] = self.record {
            // Published by the Release add below. The length first and the
            // header Release after it, for a crash (as at commit): until
            // then the PENDING header still says how to step over it.
            second.store(size as u32, Ordering::Relaxed);
            header.store(
                format::TYPE_DISCARD | (self.header & !31),
                order::RECORD_HEADER,
            );
        }
        // Release: see write::claim::commit_bytes.
        add_to_line(self.buffer, self.commit, size, 1);
        RareCounters::bump(&self.buffer.rare().discarded, 1);
    }
}

/// Writes a payload a few bytes at a time, whole words at once. Bytes past
/// the reservation are cut off; what is not written stays zero. The last
/// partial word is stored when the stream is dropped.
#[derive(Debug)]
pub struct PayloadStream<'r> {
    words: &'r [AtomicU32],
    pos: usize,
    pending: [u8; 4],
    limit: usize,
}

impl PayloadStream<'_> {
    /// Appends `bytes`; returns how many fit.
    #[inline]
    pub fn put(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.limit - self.pos);
        let mut rest = &bytes[..n];
        // Complete the pending partial word a byte at a time...
        while self.pos % 4 != 0 {
            let Some((&b, tail)) = rest.split_first() else {
                return n;
            };
            self.pending[self.pos % 4] = b;
            self.pos += 1;
            rest = tail;
            if self.pos % 4 == 0 {
                self.flush_word(self.pos / 4 - 1);
            }
        }
        // ...then store whole words straight from `bytes`...
        let mut words = rest.chunks_exact(4);
        for chunk in &mut words {
            if let Some(word) = self.words.get(self.pos / 4) {
                let value = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                // Relaxed: published by the commit's Release add.
                word.store(value, Ordering::Relaxed);
            }
            self.pos += 4;
        }
        // ...and keep the last bytes pending.
        for &b in words.remainder() {
            self.pending[self.pos % 4] = b;
            self.pos += 1;
        }
        n
    }

    /// Bytes written so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn flush_word(&mut self, index: usize) {
        if let Some(word) = self.words.get(index) {
            // Relaxed: published by the commit's Release add.
            word.store(u32::from_le_bytes(self.pending), Ordering::Relaxed);
        }
        self.pending = [0; 4];
    }
}

impl Drop for PayloadStream<'_> {
    fn drop(&mut self) {
        if self.pos % 4 != 0 {
            self.flush_word(self.pos / 4);
        }
        // Zero the rest: an older lap's bytes must never show.
        for word in self.words.iter().skip(self.pos.div_ceil(4)) {
            word.store(0, Ordering::Relaxed);
        }
    }
}

/// Zeroes `words` from index `from` on.
#[cold]
#[inline(never)]
fn zero_words(words: &[AtomicU32], from: usize) {
    for word in words.iter().skip(from) {
        // Relaxed: published by the commit's Release, like the payload.
        word.store(0, Ordering::Relaxed);
    }
}

/// Begins a claimed record (step F's first half): a long event's length
/// word, then the header `header` with PENDING. Returns the payload's
/// words. The space is the writer's since its reserve (step D).
#[inline(always)]
pub(super) fn store_pending(record: &[AtomicU32], len: usize, header: u32) -> &[AtomicU32] {
    let short = format::is_short(len);
    if let (false, Some(length)) = (short, record.get(1)) {
        // Relaxed: published by the commit's Release add; ordered for a
        // crash by the Release header store below.
        length.store(len as u32, Ordering::Relaxed);
    }
    if let Some(first) = record.first() {
        // Release, for a crash rather than for readers (who see only
        // committed bytes): the length is stored first in program order
        // and for the compiler, so a recovered file can step over the
        // record (format::PENDING). A plain store on x86_64.
        first.store(header | format::PENDING, order::RECORD_HEADER);
    }
    record.get(if short { 1 } else { 2 }..).unwrap_or(&[])
}

/// Stores `bytes` into `words`, the last partial word padded with zeros.
#[inline(always)]
pub(super) fn store_bytes(words: &[AtomicU32], bytes: &[u8]) {
    // Whole 16-byte pieces first, each one unaligned vector load and store
    // on x86_64 (two instructions where four word stores take eight);
    // the rest word by word.
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    let (words, bytes) = {
        let pieces = (bytes.len() / 16).min(words.len() / 4);
        for k in 0..pieces {
            store_16(&words[4 * k..4 * k + 4], &bytes[16 * k..16 * k + 16]);
        }
        (&words[4 * pieces..], &bytes[16 * pieces..])
    };
    let mut chunks = bytes.chunks_exact(4);
    for (word, chunk) in words.iter().zip(&mut chunks) {
        let value = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        // Relaxed: published by the commit's Release add.
        word.store(value, Ordering::Relaxed);
    }
    let rest = chunks.remainder();
    if let (false, Some(word)) = (rest.is_empty(), words.get(bytes.len() / 4)) {
        // Assembled in a register: copied into a zeroed array, the bytes
        // went through a call to memcpy and a load that could not be
        // forwarded from its byte stores, a quarter of a `tracing`
        // event's write.
        let value = match *rest {
            [a] => u32::from(a),
            [a, b] => u32::from(u16::from_le_bytes([a, b])),
            [a, b, c] => u32::from(u16::from_le_bytes([a, b])) | u32::from(c) << 16,
            _ => 0,
        };
        word.store(value, Ordering::Relaxed);
    }
}

/// Stores the 16 bytes of `bytes` into the four words `words` with one
/// unaligned vector store.
///
/// In asm, not as a copy through a pointer: the words are atomics that an
/// iterator copying the page in overwrite mode may read while we write
/// them, and a plain copy would race them in the Rust memory model. What
/// the store does is what four Relaxed word stores in order do on x86_64:
/// each 4-aligned word lies in one cache line and is written whole, and
/// stores are seen in program order (TSO), so the commit's Release store
/// after it publishes it as it publishes word stores; an iterator racing
/// it is told by its seqlock, as with word stores.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
#[inline(always)]
fn store_16(words: &[AtomicU32], bytes: &[u8]) {
    assert!(words.len() == 4 && bytes.len() == 16);
    // SAFETY: 16 readable bytes at `bytes` and four live words at `words`
    // (checked above, and folded away where the caller's lengths show
    // it); the words are behind UnsafeCells (atomics), so a store through
    // a shared reference is allowed, and the store is the four word
    // stores argued above. No stack, flags untouched.
    unsafe {
        core::arch::asm!(
            "movups {x}, xmmword ptr [{src}]",
            "movups xmmword ptr [{dst}], {x}",
            src = in(reg) bytes.as_ptr(),
            dst = in(reg) words.as_ptr(),
            x = out(xmm_reg) _,
            options(nostack, preserves_flags),
        );
    }
}

// SAFETY-free note: every field is a shared reference into a `Sync` buffer
// or plain data, so the compiler derives Send and Sync; a reservation may be
// committed from another thread than the one that reserved it.

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{RingBuffer, RingConfig};
    use ringtrace_clock::Counter;

    #[test]
    fn store_bytes_stores_every_length_whole_pads_the_last_word_and_nothing_past_it() {
        use super::store_bytes;
        use crate::sync::{AtomicU32, Ordering};
        // Lengths across the 16-byte pieces and the word-by-word rest, at
        // word offsets that leave the pieces unaligned to 16 bytes.
        for len in 0..=40usize {
            for at in 0..3usize {
                let words: Vec<AtomicU32> = (0..16).map(|_| AtomicU32::new(0xDEAD_BEEF)).collect();
                let bytes: Vec<u8> = (1..=len as u8).collect();
                let room = len.div_ceil(4);
                store_bytes(&words[at..at + room], &bytes);
                let got: Vec<u8> = words[at..at + room]
                    .iter()
                    .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
                    .collect();
                assert_eq!(got[..len], bytes[..], "len {len} at {at}");
                assert!(
                    got[len..].iter().all(|&b| b == 0),
                    "len {len} at {at}: padding"
                );
                for (k, w) in words.iter().enumerate() {
                    if k < at || k >= at + room {
                        assert_eq!(
                            w.load(Ordering::Relaxed),
                            0xDEAD_BEEF,
                            "len {len} at {at}: word {k}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_stream_writes_any_split_of_the_payload_as_the_payload() {
        let ring = RingBuffer::new(
            RingConfig::default().cpus(1).per_cpu_bytes(64 * 1024),
            Counter::new(),
        )
        .unwrap();
        // Every split of a payload that spans several words and a partial
        // one; shorter under Miri, which runs each split a thousand times
        // slower (the split points still cross word boundaries).
        let len = if cfg!(miri) { 9 } else { 23 };
        let payload: Vec<u8> = (1..=len).collect();
        for first in 0..payload.len() {
            for second in first..payload.len() {
                let mut r = ring.cpu_writer(0).reserve(payload.len() + 2).unwrap();
                {
                    let mut w = r.stream();
                    assert_eq!(w.put(&payload[..first]), first);
                    w.put(&payload[first..second]);
                    w.put(&payload[second..]);
                    // Past the reservation: cut to it.
                    assert_eq!(w.put(&[9, 9, 9]), 2);
                    assert_eq!(w.position(), payload.len() + 2);
                }
                r.commit();
                let got = ring.cpu_buffer(0).unwrap().read_event().unwrap().payload;
                assert_eq!(got[..payload.len()], payload[..], "split {first}/{second}");
                assert_eq!(got[payload.len()..], [9, 9]);
            }
        }
    }
}
