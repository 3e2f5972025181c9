//! A non-consuming iterator over one CPU buffer, which detects pages
//! overwritten while it reads them.
//!
//! It copies a page, then checks (after an Acquire fence) that the slot
//! still names the same generation and physical page. A writer that reused
//! the page meanwhile changed the slot first and fenced with Release before
//! writing, so a copy holding any of its bytes fails the check: the copy is
//! thrown away and the page counted in [`CpuIter::overwritten_pages`]. This
//! is a seqlock whose sequence is the slot word.

use super::state::ReaderState;
use crate::event::Event;
use crate::format::{PageHeader, Record, RecordCursor, PAGE_HEADER};
use crate::order;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::shared::SharedState;
use crate::sync::Mutex;

/// Iterates over the unread events of one CPU buffer without consuming them.
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// use ringtrace_clock::Counter;
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
/// let ring = RingBuffer::new(config, Counter::new()).unwrap();
/// ring.cpu_writer(0).write(b"one").unwrap();
/// ring.cpu_writer(0).write(b"two").unwrap();
/// let seen: Vec<Vec<u8>> = ring.iter(0).unwrap().map(|e| e.payload).collect();
/// assert_eq!(seen, vec![b"one".to_vec(), b"two".to_vec()]);
/// assert_eq!(ring.stats().entries, 2); // still there
/// ```
#[derive(Debug)]
pub struct CpuIter<'a> {
    buffer: &'a SharedState,
    seq: u64,
    page: Vec<u8>,
    pos: usize,
    ts: u64,
    limit: usize,
    skip: u32,
    overwritten: u64,
    done: bool,
}

impl<'a> CpuIter<'a> {
    pub(crate) fn new(buffer: &'a SharedState, reader: &Mutex<ReaderState>) -> Self {
        let st = reader.lock();
        let (seq, page, pos, ts, skip) = match st.taken_copy() {
            Some(t) => (t.seq + 1, t.bytes, t.pos, t.ts, t.skip),
            None => (st.position(), Vec::new(), 0, 0, 0),
        };
        drop(st);
        let limit = page.len();
        CpuIter {
            buffer,
            seq,
            page,
            pos,
            ts,
            limit,
            skip,
            overwritten: 0,
            done: false,
        }
    }

    /// Pages that were overwritten before or while this iterator read them.
    pub fn overwritten_pages(&self) -> u64 {
        self.overwritten
    }

    /// Copies the next readable page; false when there is none.
    fn load_next_page(&mut self) -> bool {
        let b = self.buffer;
        let shift = b.geometry().page_shift();
        let page_size = b.page_size();
        for _ in 0..4 * b.pages() {
            let (write, _) = b.hot().state.load(order::ITER_LOAD);
            let tail = b.tail_seq(write);
            let oldest = tail.saturating_sub(b.pages() as u64 - 1);
            if self.seq < oldest {
                self.overwritten += oldest - self.seq;
                self.seq = oldest;
            }
            if self.seq > tail {
                return false;
            }
            let want = gen_of(self.seq, b.pages());
            let slot_word = b.slot_of(self.seq).load(order::ITER_LOAD);
            let slot = Slot::unpack(slot_word);
            if slot.gen != want {
                if slot.gen.wrapping_sub(want) as i32 > 0 {
                    self.overwritten += 1;
                    self.seq += 1;
                    continue;
                }
                return false;
            }
            let c1 = b.commit_word(slot.phys).load(order::ITER_LOAD);
            let commit = Commit::unpack(c1);
            let limit = if commit.opening {
                if commit.tag == tag_of(want) {
                    return false; // being opened: nothing in it yet
                }
                self.overwritten += 1;
                self.seq += 1;
                continue;
            } else if commit.bytes == page_size && commit.tag == tag_of(want) {
                page_size
            } else if write >> shift == self.seq {
                // The open page: readable up to the frontier when no
                // reservation below it is open. That takes the state read
                // *between* two equal loads of the commit word, as the
                // consuming reader does: `c1`, then `state`, then `c2`,
                // each Acquire so none moves before the one above it.
                // Equal loads mean the word did not change between them
                // (within a generation it only grows), so at the state read
                // the committed bytes were `c1`'s; equal to the frontier
                // then, every reservation below it had committed. A state
                // read before `c1` (the `write` above) is not enough: a
                // reservation made and committed after it, of the size of
                // one still open below it, brings the count up to that
                // stale frontier.
                let (write_now, _) = b.hot().state.load(order::ITER_LOAD);
                let c2 = b.commit_word(slot.phys).load(order::ITER_LOAD);
                let frontier = (write_now & (page_size as u64 - 1)) as usize;
                if c1 != c2
                    || write_now >> shift != self.seq
                    || commit.bytes != frontier
                    || frontier < PAGE_HEADER
                {
                    return false;
                }
                frontier
            } else {
                // Closed, waiting for a commit: nothing after it is in
                // order yet.
                return false;
            };
            b.words().read_into(slot.phys, 0, limit, &mut self.page);
            order::ITER_FENCE.place();
            if b.slot_of(self.seq).load(order::ITER_LOAD) != slot_word {
                self.overwritten += 1;
                self.seq += 1;
                continue;
            }
            self.page.resize(page_size.max(self.page.len()), 0);
            self.skip = slot.consumed;
            self.pos = PAGE_HEADER;
            self.ts = PageHeader::parse(&self.page)
                .map(|h| h.base_ts)
                .unwrap_or(0);
            self.limit = limit;
            self.seq += 1;
            return true;
        }
        false
    }
}

impl Iterator for CpuIter<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        while !self.done {
            if self.pos >= PAGE_HEADER && self.pos < self.limit {
                let mut cursor = RecordCursor::resume(&self.page, self.pos, self.ts, self.limit);
                loop {
                    let record = cursor.next();
                    self.pos = cursor.position();
                    self.ts = cursor.timestamp();
                    match record {
                        Some(Ok(Record::Event { ts, payload })) => {
                            if self.skip > 0 {
                                self.skip -= 1;
                                continue;
                            }
                            return Some(Event {
                                cpu: self.buffer.cpu(),
                                ts,
                                payload: payload.to_vec(),
                                lost_before: 0,
                            });
                        }
                        Some(Ok(Record::Discard { .. })) => continue,
                        Some(Err(_)) | None => {
                            self.pos = self.limit;
                            break;
                        }
                    }
                }
            }
            if !self.load_next_page() {
                self.done = true;
            }
        }
        None
    }
}
