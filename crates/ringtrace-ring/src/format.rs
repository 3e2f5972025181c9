//! The byte format of a page: its header and the records in it.
//! docs/format.md is the prose version of this file.
//!
//! ```text
//!  page (page_size bytes, little-endian)
//!  +------------------------------------------------------------+
//!  | 0  base_ts   u64   timestamp of the first record            |
//!  | 8  seq       u64   virtual page number in its CPU buffer     |
//!  | 16 commit    u32   end of data; 0 = walk to PADDING or end   |
//!  | 20 events    u32   data events in the page (0 = not counted) |
//!  | 24 skip      u32   events consumed before the page was taken |
//!  | 28 lost      u32   events lost just before this page         |
//!  | 32 records ...                                               |
//!  +------------------------------------------------------------+
//!
//!  record header (u32): bits 0..5 type_len, bits 5..31 time_delta,
//!                       bit 31 PENDING (reserved, not yet committed)
//!    type_len 0        never written: a corrupt or unfinished page
//!    type_len 1..=26   data, payload of type_len * 4 bytes follows
//!    type_len 27       DISCARD: abandoned reservation; u32 total length
//!                      follows; its time_delta still counts
//!    type_len 28       DATA_LONG: u32 payload length follows, then the
//!                      payload padded to 4 bytes
//!    type_len 29       PADDING: the rest of the page is empty
//!    type_len 30       TIME_EXTEND: u32 follows; delta = time_delta |
//!                      (u32 << 26), 58 bits; the next record has delta 0
//!    type_len 31       TIME_STAMP: two u32 follow, the low and high
//!                      halves of an absolute time (a delta of 2^58 or more)
//! ```
//!
//! Timestamps: a record's time is the previous record's time plus its
//! time_delta; the first record's predecessor is `base_ts`.
//!
//! PENDING: a data event's header is stored twice. Right after the space
//! is reserved it is stored with bit 31 set, so that a file ring recovered
//! after a crash can step over a reservation that never committed (its
//! size is in the header, and in the length word a long event writes
//! first); the commit stores it again without the bit, after the payload.
//! Readers of a live ring only ever walk committed bytes, so for them a
//! PENDING header is corruption.

use thiserror::Error;

/// Bytes of page header before the first record.
pub const PAGE_HEADER: usize = 32;
/// Bits of time delta in a record header (the kernel has 27; one went to
/// PENDING).
pub const DELTA_BITS: u32 = 26;
/// A data event's header as stored between its reservation and its commit.
pub const PENDING: u32 = 1 << 31;
/// Largest delta a record header holds.
pub const MAX_DELTA: u64 = (1 << DELTA_BITS) - 1;
/// Largest delta a TIME_EXTEND holds (58 bits).
pub const MAX_EXTENDED_DELTA: u64 = (1 << (DELTA_BITS + 32)) - 1;

/// Largest `type_len` of a short data record.
pub const TYPE_DATA_MAX: u32 = 26;
/// A reservation dropped without commit.
pub const TYPE_DISCARD: u32 = 27;
/// Data with an explicit length word.
pub const TYPE_DATA_LONG: u32 = 28;
/// The rest of the page is empty.
pub const TYPE_PADDING: u32 = 29;
/// A delta too large for a record header.
pub const TYPE_TIME_EXTEND: u32 = 30;
/// An absolute timestamp.
pub const TYPE_TIME_STAMP: u32 = 31;

/// Byte offsets of the page header fields.
pub(crate) mod header {
    pub const BASE_TS: usize = 0;
    pub const SEQ: usize = 8;
    pub const COMMIT: usize = 16;
    pub const EVENTS: usize = 20;
    pub const SKIP: usize = 24;
    pub const LOST: usize = 28;
}

/// A record header word.
#[inline(always)]
pub(crate) fn record_header(type_len: u32, delta: u64) -> u32 {
    debug_assert!(type_len < 32 && delta <= MAX_DELTA);
    type_len | ((delta as u32) << 5)
}

/// What goes in front of an event to carry its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimePrefix {
    /// The delta fits the event's own header.
    None,
    /// A TIME_EXTEND record with this delta precedes the event.
    Extend(u64),
    /// A TIME_STAMP record with this absolute time precedes the event.
    Stamp(u64),
}

impl TimePrefix {
    /// The prefix needed for `delta`, given the absolute time `ts`.
    #[inline(always)]
    pub(crate) fn for_delta(delta: u64, ts: u64) -> TimePrefix {
        if delta <= MAX_DELTA {
            TimePrefix::None
        } else if delta <= MAX_EXTENDED_DELTA {
            TimePrefix::Extend(delta)
        } else {
            TimePrefix::Stamp(ts)
        }
    }

    /// Bytes the prefix takes.
    #[inline(always)]
    pub(crate) fn size(self) -> usize {
        match self {
            TimePrefix::None => 0,
            TimePrefix::Extend(_) => 8,
            TimePrefix::Stamp(_) => 12,
        }
    }
}

/// Bytes a data event of `len` payload bytes takes, without time prefix.
#[inline(always)]
pub(crate) fn event_size(len: usize) -> usize {
    if is_short(len) {
        4 + len
    } else {
        8 + len.next_multiple_of(4)
    }
}

/// Whether a payload of `len` bytes uses the short encoding.
#[inline(always)]
pub(crate) fn is_short(len: usize) -> bool {
    len % 4 == 0 && len >= 4 && len / 4 <= TYPE_DATA_MAX as usize
}

/// The largest payload a page of `page_size` holds: the page less its
/// header and a long event header. (An event that needs a time prefix and
/// does not fit with it starts a new page, where it needs none.)
pub fn max_payload(page_size: usize) -> usize {
    page_size.saturating_sub(PAGE_HEADER + 8)
}

/// A page that cannot be decoded: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The buffer is not a whole page.
    #[error("page of {len} bytes is invalid: a page is a power of two of at least {min} bytes")]
    PageLength {
        /// The length given.
        len: usize,
        /// The smallest page.
        min: usize,
    },
    /// A header field is out of range.
    #[error("page header field `{field}` is {value}, out of range (page of {page_size} bytes)")]
    Header {
        /// The field name.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The page size.
        page_size: usize,
    },
    /// A record that cannot be right.
    #[error("corrupt record at byte {offset}: {reason}")]
    Record {
        /// Where the record starts in the page.
        offset: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// One decoded record that a reader sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A data event.
    Event {
        /// Its timestamp, in clock ticks.
        ts: u64,
        /// Its payload, exactly as written.
        payload: &'a [u8],
    },
    /// A reservation that was dropped without commit.
    Discard {
        /// The time it was reserved at.
        ts: u64,
    },
}

#[inline]
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32_at(bytes, at)) | (u64::from(u32_at(bytes, at + 4)) << 32)
}

/// The header of a page, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Timestamp of the first record.
    pub base_ts: u64,
    /// Virtual page number within its CPU buffer.
    pub seq: u64,
    /// End of data, or 0 when the page is walked to PADDING or its end.
    pub commit: u32,
    /// Data events in the page (0 when not counted).
    pub events: u32,
    /// Events consumed before the page was taken, skipped by readers.
    pub skip: u32,
    /// Events lost just before this page.
    pub lost: u32,
}

impl PageHeader {
    /// Reads and checks the header of `page`.
    pub fn parse(page: &[u8]) -> Result<PageHeader, FormatError> {
        if page.len() < crate::config::MIN_PAGE_SIZE || !page.len().is_power_of_two() {
            return Err(FormatError::PageLength {
                len: page.len(),
                min: crate::config::MIN_PAGE_SIZE,
            });
        }
        let h = PageHeader {
            base_ts: u64_at(page, header::BASE_TS),
            seq: u64_at(page, header::SEQ),
            commit: u32_at(page, header::COMMIT),
            events: u32_at(page, header::EVENTS),
            skip: u32_at(page, header::SKIP),
            lost: u32_at(page, header::LOST),
        };
        let commit = h.commit as usize;
        if commit != 0 && (commit < PAGE_HEADER || commit > page.len() || commit % 4 != 0) {
            return Err(FormatError::Header {
                field: "commit",
                value: u64::from(h.commit),
                page_size: page.len(),
            });
        }
        Ok(h)
    }

    /// Writes this header into the first bytes of `page`; returns false,
    /// writing nothing, if `page` is shorter than a header.
    pub fn write_to(&self, page: &mut [u8]) -> bool {
        if page.len() < PAGE_HEADER {
            return false;
        }
        page[header::BASE_TS..header::BASE_TS + 8].copy_from_slice(&self.base_ts.to_le_bytes());
        page[header::SEQ..header::SEQ + 8].copy_from_slice(&self.seq.to_le_bytes());
        page[header::COMMIT..header::COMMIT + 4].copy_from_slice(&self.commit.to_le_bytes());
        page[header::EVENTS..header::EVENTS + 4].copy_from_slice(&self.events.to_le_bytes());
        page[header::SKIP..header::SKIP + 4].copy_from_slice(&self.skip.to_le_bytes());
        page[header::LOST..header::LOST + 4].copy_from_slice(&self.lost.to_le_bytes());
        true
    }
}

/// Walks the records of a page, keeping the running timestamp.
///
/// Never panics, whatever the bytes: every length is checked against the
/// page before it is used.
#[derive(Debug, Clone)]
pub struct RecordCursor<'a> {
    page: &'a [u8],
    pos: usize,
    limit: usize,
    ts: u64,
    done: bool,
}

impl<'a> RecordCursor<'a> {
    /// A cursor at the first record of `page`.
    pub fn new(page: &'a [u8]) -> Result<RecordCursor<'a>, FormatError> {
        let header = PageHeader::parse(page)?;
        let limit = if header.commit == 0 {
            page.len()
        } else {
            header.commit as usize
        };
        Ok(RecordCursor {
            page,
            pos: PAGE_HEADER,
            limit,
            ts: header.base_ts,
            done: false,
        })
    }

    /// A cursor resumed at byte `pos` with running time `ts`, reading no
    /// further than `limit` nor than the end of `page`: for a page still
    /// being written, or a piece of one (a drained piece cut at its
    /// commit, which [`new`](RecordCursor::new) refuses for not being a
    /// page's length). Never panics, whatever the arguments.
    ///
    /// ```
    /// use ringtrace_ring::format::{PageBuilder, PageHeader, RecordCursor, PAGE_HEADER};
    ///
    /// let mut b = PageBuilder::new(256, 0);
    /// b.push(10, &[1, 2, 3, 4]);
    /// let page = b.finish(0);
    /// let h = PageHeader::parse(&page).unwrap();
    /// let piece = &page[..h.commit as usize]; // not a page's length
    /// let events = RecordCursor::resume(piece, PAGE_HEADER, h.base_ts, piece.len()).count();
    /// assert_eq!(events, 1);
    /// ```
    pub fn resume(page: &'a [u8], pos: usize, ts: u64, limit: usize) -> Self {
        RecordCursor {
            page,
            pos,
            limit: limit.min(page.len()),
            ts,
            done: false,
        }
    }

    /// Byte offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The running timestamp (that of the last record passed).
    pub fn timestamp(&self) -> u64 {
        self.ts
    }

    fn corrupt(&mut self, reason: &'static str) -> Option<Result<Record<'a>, FormatError>> {
        self.done = true;
        Some(Err(FormatError::Record {
            offset: self.pos,
            reason,
        }))
    }

    #[inline]
    fn word(&self, at: usize) -> Option<u32> {
        (at + 4 <= self.limit).then(|| u32_at(self.page, at))
    }
}

/// One record passed by [`RecordCursor::step`], without building the
/// [`Record`] (or the error) a reader of values needs.
enum Step {
    /// A data event: its payload's range in the page.
    Event(usize, usize),
    /// A discarded reservation.
    Discard,
    /// A time extend or absolute time stamp (the running time moved).
    Time,
    /// The end of the records (their limit, or padding).
    End,
    /// A record that cannot be right: the cursor has not moved past it.
    Bad(&'static str),
}

impl<'a> RecordCursor<'a> {
    /// Passes one record, updating the position and running time.
    #[inline(always)]
    fn step(&mut self) -> Step {
        let Some(head) = self.word(self.pos) else {
            return Step::End;
        };
        let type_len = head & 31;
        if head & PENDING != 0 {
            return Step::Bad("record was reserved but never committed");
        }
        let delta = u64::from(head >> 5);
        match type_len {
            0 => Step::Bad("record header is zero (never written)"),
            1..=TYPE_DATA_MAX => {
                let len = type_len as usize * 4;
                let start = self.pos + 4;
                if start + len > self.limit {
                    return Step::Bad("data record runs past the end of the page");
                }
                self.ts = self.ts.saturating_add(delta);
                self.pos = start + len;
                Step::Event(start, len)
            }
            TYPE_DISCARD => {
                let Some(total) = self.word(self.pos + 4) else {
                    return Step::Bad("discard record is cut off");
                };
                let total = total as usize;
                if total < 8 || total % 4 != 0 || self.pos + total > self.limit {
                    return Step::Bad("discard record has an impossible length");
                }
                self.ts = self.ts.saturating_add(delta);
                self.pos += total;
                Step::Discard
            }
            TYPE_DATA_LONG => {
                let Some(len) = self.word(self.pos + 4) else {
                    return Step::Bad("long data record is cut off");
                };
                let len = len as usize;
                let start = self.pos + 8;
                match start.checked_add(len.next_multiple_of(4)) {
                    Some(end) if end <= self.limit => {
                        self.ts = self.ts.saturating_add(delta);
                        self.pos = end;
                        Step::Event(start, len)
                    }
                    _ => Step::Bad("long data record runs past the end of the page"),
                }
            }
            TYPE_PADDING => Step::End,
            TYPE_TIME_EXTEND => {
                let Some(high) = self.word(self.pos + 4) else {
                    return Step::Bad("time extend is cut off");
                };
                self.ts = self
                    .ts
                    .saturating_add(delta | (u64::from(high) << DELTA_BITS));
                self.pos += 8;
                Step::Time
            }
            _ => {
                // TYPE_TIME_STAMP
                let (Some(low), Some(high)) = (self.word(self.pos + 4), self.word(self.pos + 8))
                else {
                    return Step::Bad("time stamp is cut off");
                };
                let abs = u64::from(low) | (u64::from(high) << 32);
                // A reader's time never goes back, even on a bad page.
                self.ts = self.ts.max(abs);
                self.pos += 12;
                Step::Time
            }
        }
    }

    /// Moves past up to `n` events and the records before each, and stops
    /// just after the last event it passed: the `n`th, or the last before
    /// the end of the records or a record that cannot be right (records
    /// after it are left for [`next`](Iterator::next), which reports the
    /// bad one). Returns how many events it passed;
    /// [`timestamp`](Self::timestamp) is then the last one's time. What a
    /// reader that counts events, rather than looks at them, walks with:
    /// no record is built.
    ///
    /// ```
    /// use ringtrace_ring::format::{PageBuilder, RecordCursor};
    ///
    /// let mut b = PageBuilder::new(256, 100);
    /// for (ts, byte) in [(100, 1u8), (105, 2), (109, 3)] {
    ///     b.push(ts, &[byte; 4]);
    /// }
    /// let page = b.finish(0);
    /// let mut cursor = RecordCursor::new(&page).unwrap();
    /// assert_eq!(cursor.skip_events(2), 2);
    /// assert_eq!(cursor.timestamp(), 105);
    /// assert_eq!(cursor.skip_events(u32::MAX), 1);
    /// assert_eq!(cursor.timestamp(), 109);
    /// assert!(cursor.next().is_none());
    /// ```
    pub fn skip_events(&mut self, n: u32) -> u32 {
        let mut passed = 0;
        let mut after = (self.pos, self.ts);
        while passed < n {
            // The common record, a committed short data record inside the
            // limit, in a loop of its own with the cursor in registers;
            // anything else (and its checks) goes through `step`.
            let (mut pos, mut ts) = (self.pos, self.ts);
            let before = passed;
            let records = &self.page[..self.limit.min(self.page.len())];
            while passed < n {
                // One 4-byte load (the bytes taken one by one, the walk
                // costs twice as much: it is a chain of dependent loads).
                let Some(&head) = records.get(pos..).and_then(<[u8]>::first_chunk::<4>) else {
                    break;
                };
                let head = u32::from_le_bytes(head);
                let type_len = head & 31;
                let end = pos + 4 + type_len as usize * 4;
                // type_len 1..=TYPE_DATA_MAX: 0 wraps to u32::MAX.
                if head & PENDING != 0
                    || type_len.wrapping_sub(1) >= TYPE_DATA_MAX
                    || end > records.len()
                {
                    break;
                }
                ts = ts.saturating_add(u64::from(head >> 5));
                pos = end;
                passed += 1;
            }
            (self.pos, self.ts) = (pos, ts);
            if passed > before {
                after = (pos, ts);
            }
            if passed >= n {
                break;
            }
            match self.step() {
                Step::Event(..) => {
                    passed += 1;
                    after = (self.pos, self.ts);
                }
                Step::Discard | Step::Time => {}
                Step::End | Step::Bad(_) => break,
            }
        }
        (self.pos, self.ts) = after;
        passed
    }
}

impl<'a> Iterator for RecordCursor<'a> {
    type Item = Result<Record<'a>, FormatError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.step() {
                Step::Event(start, len) => {
                    return Some(Ok(Record::Event {
                        ts: self.ts,
                        payload: &self.page[start..start + len],
                    }));
                }
                Step::Discard => return Some(Ok(Record::Discard { ts: self.ts })),
                Step::Time => {}
                Step::End => self.done = true,
                Step::Bad(reason) => return self.corrupt(reason),
            }
        }
        None
    }
}

/// Encodes events into a page of the ring's format (docs/format.md), as
/// writers would have: for a reader's copy of events that are no longer in
/// pages (a recovery's, handed on to a session), so that everything
/// downstream reads pages.
///
/// ```
/// use ringtrace_ring::format::{PageBuilder, RecordCursor, Record};
/// let mut b = PageBuilder::new(256, 7);
/// assert!(b.push(1_000, b"abcd"));
/// assert!(b.push(1_000 + (1 << 30), b"a longer payload")); // a time extend
/// assert!(!b.push(2_000, &[0; 300])); // does not fit: start another page
/// let page = b.finish(5);
/// let times: Vec<u64> = RecordCursor::new(&page).unwrap().filter_map(|r| match r {
///     Ok(Record::Event { ts, .. }) => Some(ts),
///     _ => None,
/// }).collect();
/// assert_eq!(times, [1_000, 1_000 + (1 << 30)]);
/// ```
#[derive(Debug, Clone)]
pub struct PageBuilder {
    bytes: Vec<u8>,
    page_size: usize,
    seq: u64,
    base_ts: Option<u64>,
    last_ts: u64,
    events: u32,
}

impl PageBuilder {
    /// An empty page of `page_size` bytes (a power of two, at least 64;
    /// anything else is rounded up to one), numbered `seq`.
    pub fn new(page_size: usize, seq: u64) -> PageBuilder {
        let page_size = page_size
            .max(crate::config::MIN_PAGE_SIZE)
            .next_power_of_two();
        let mut bytes = Vec::with_capacity(page_size);
        bytes.resize(PAGE_HEADER, 0);
        PageBuilder {
            bytes,
            page_size,
            seq,
            base_ts: None,
            last_ts: 0,
            events: 0,
        }
    }

    /// Events in the page so far.
    pub fn events(&self) -> u32 {
        self.events
    }

    /// Appends an event at time `ts` (raised to the last one's if earlier:
    /// a page's times never go back); false, appending nothing, if it does
    /// not fit.
    pub fn push(&mut self, ts: u64, payload: &[u8]) -> bool {
        let ts = ts.max(self.last_ts);
        let base = *self.base_ts.get_or_insert(ts);
        let delta = ts - if self.events == 0 { base } else { self.last_ts };
        let prefix = TimePrefix::for_delta(delta, ts);
        let need = prefix.size() + event_size(payload.len());
        if self.bytes.len() + need > self.page_size {
            if self.events == 0 {
                self.base_ts = None;
            }
            return false;
        }
        let word = |b: &mut Vec<u8>, w: u32| b.extend_from_slice(&w.to_le_bytes());
        let own_delta = match prefix {
            TimePrefix::None => delta,
            TimePrefix::Extend(d) => {
                word(
                    &mut self.bytes,
                    record_header(TYPE_TIME_EXTEND, d & MAX_DELTA),
                );
                word(&mut self.bytes, (d >> DELTA_BITS) as u32);
                0
            }
            TimePrefix::Stamp(t) => {
                word(&mut self.bytes, record_header(TYPE_TIME_STAMP, 0));
                self.bytes.extend_from_slice(&t.to_le_bytes());
                0
            }
        };
        if is_short(payload.len()) {
            word(
                &mut self.bytes,
                record_header((payload.len() / 4) as u32, own_delta),
            );
            self.bytes.extend_from_slice(payload);
        } else {
            word(&mut self.bytes, record_header(TYPE_DATA_LONG, own_delta));
            word(&mut self.bytes, payload.len() as u32);
            self.bytes.extend_from_slice(payload);
            self.bytes.resize(self.bytes.len().next_multiple_of(4), 0);
        }
        self.last_ts = ts;
        self.events += 1;
        true
    }

    /// The page: its header (`lost`: events lost just before its first),
    /// the records, then zeros, its length the next power of two that
    /// holds them (at most the page size).
    pub fn finish(self, lost: u32) -> Vec<u8> {
        let commit = self.bytes.len();
        let len = commit
            .next_power_of_two()
            .clamp(crate::config::MIN_PAGE_SIZE, self.page_size);
        let mut bytes = self.bytes;
        bytes.resize(len, 0);
        PageHeader {
            base_ts: self.base_ts.unwrap_or(0),
            seq: self.seq,
            commit: commit as u32,
            events: self.events,
            skip: 0,
            lost,
        }
        .write_to(&mut bytes);
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_with(records: &[u32], base: u64) -> Vec<u8> {
        let mut page = vec![0u8; 128];
        PageHeader {
            base_ts: base,
            seq: 0,
            commit: 0,
            events: 0,
            skip: 0,
            lost: 0,
        }
        .write_to(&mut page);
        for (i, w) in records.iter().enumerate() {
            page[PAGE_HEADER + 4 * i..PAGE_HEADER + 4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        page
    }

    #[test]
    fn deltas_accumulate_from_the_base_timestamp() {
        let page = page_with(
            &[
                record_header(1, 5),
                0xAABB,
                record_header(1, 7),
                0xCCDD,
                record_header(TYPE_PADDING, 0),
            ],
            100,
        );
        let ts: Vec<u64> = RecordCursor::new(&page)
            .unwrap()
            .map(|r| match r.unwrap() {
                Record::Event { ts, .. } => ts,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ts, vec![105, 112]);
    }

    #[test]
    fn time_extend_carries_58_bits() {
        let delta = (3u64 << DELTA_BITS) | 9;
        let page = page_with(
            &[
                record_header(TYPE_TIME_EXTEND, delta & MAX_DELTA),
                (delta >> DELTA_BITS) as u32,
                record_header(1, 0),
                1,
            ],
            10,
        );
        let first = RecordCursor::new(&page).unwrap().next().unwrap().unwrap();
        assert_eq!(
            first,
            Record::Event {
                ts: 10 + delta,
                payload: &1u32.to_le_bytes()
            }
        );
    }

    #[test]
    fn zero_header_is_reported_as_corruption() {
        let page = page_with(&[], 0);
        let err = RecordCursor::new(&page)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err.to_string().contains("never written"), "{err}");
    }

    #[test]
    fn oversized_long_record_is_reported_not_read() {
        let page = page_with(&[record_header(TYPE_DATA_LONG, 0), u32::MAX], 0);
        let err = RecordCursor::new(&page)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err.to_string().contains("past the end"), "{err}");
    }

    /// The events `next` yields before the end or the first error.
    fn events_of(cursor: RecordCursor<'_>) -> Vec<u64> {
        cursor
            .map_while(Result::ok)
            .filter_map(|r| match r {
                Record::Event { ts, .. } => Some(ts),
                Record::Discard { .. } => None,
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 8 } else { 512 },
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn skipping_counts_what_next_yields(
            words in proptest::collection::vec(proptest::prelude::any::<u32>(), 0..24),
            types in proptest::collection::vec(0u32..32, 0..24),
            n in 0u32..30,
        ) {
            // Words with plausible record types now and then, so that
            // whole records, not only corruption, are walked.
            let records: Vec<u32> = words
                .iter()
                .zip(types.iter().chain(std::iter::repeat(&0)))
                .map(|(w, t)| if t % 3 == 0 { w & !PENDING } else { (w & !31 & !PENDING) | (t % 27).max(1) })
                .collect();
            let page = page_with(&records, 1000);
            let all = events_of(RecordCursor::new(&page).unwrap());
            let mut cursor = RecordCursor::new(&page).unwrap();
            let passed = cursor.skip_events(n) as usize;
            proptest::prop_assert_eq!(passed, all.len().min(n as usize));
            if passed > 0 {
                proptest::prop_assert_eq!(cursor.timestamp(), all[passed - 1]);
            }
            // What is left reads as the rest.
            proptest::prop_assert_eq!(events_of(cursor), all[passed..].to_vec());
        }
    }
}
