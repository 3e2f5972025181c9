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

    /// A cursor resumed at `pos` with running time `ts`, reading no further
    /// than `limit` (for reading a page that is still being written).
    pub(crate) fn resume(page: &'a [u8], pos: usize, ts: u64, limit: usize) -> Self {
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

    fn word(&self, at: usize) -> Option<u32> {
        (at + 4 <= self.limit).then(|| u32_at(self.page, at))
    }
}

impl<'a> Iterator for RecordCursor<'a> {
    type Item = Result<Record<'a>, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let Some(head) = self.word(self.pos) else {
                self.done = true;
                return None;
            };
            let type_len = head & 31;
            if head & PENDING != 0 {
                return self.corrupt("record was reserved but never committed");
            }
            let delta = u64::from(head >> 5);
            match type_len {
                0 => return self.corrupt("record header is zero (never written)"),
                1..=TYPE_DATA_MAX => {
                    let len = type_len as usize * 4;
                    let start = self.pos + 4;
                    if start + len > self.limit {
                        return self.corrupt("data record runs past the end of the page");
                    }
                    self.ts = self.ts.saturating_add(delta);
                    self.pos = start + len;
                    return Some(Ok(Record::Event {
                        ts: self.ts,
                        payload: &self.page[start..start + len],
                    }));
                }
                TYPE_DISCARD => {
                    let Some(total) = self.word(self.pos + 4) else {
                        return self.corrupt("discard record is cut off");
                    };
                    let total = total as usize;
                    if total < 8 || total % 4 != 0 || self.pos + total > self.limit {
                        return self.corrupt("discard record has an impossible length");
                    }
                    self.ts = self.ts.saturating_add(delta);
                    self.pos += total;
                    return Some(Ok(Record::Discard { ts: self.ts }));
                }
                TYPE_DATA_LONG => {
                    let Some(len) = self.word(self.pos + 4) else {
                        return self.corrupt("long data record is cut off");
                    };
                    let len = len as usize;
                    let start = self.pos + 8;
                    let end = start.checked_add(len.next_multiple_of(4));
                    match end {
                        Some(end) if end <= self.limit => {
                            self.ts = self.ts.saturating_add(delta);
                            self.pos = end;
                            return Some(Ok(Record::Event {
                                ts: self.ts,
                                payload: &self.page[start..start + len],
                            }));
                        }
                        _ => return self.corrupt("long data record runs past the end of the page"),
                    }
                }
                TYPE_PADDING => {
                    self.done = true;
                    return None;
                }
                TYPE_TIME_EXTEND => {
                    let Some(high) = self.word(self.pos + 4) else {
                        return self.corrupt("time extend is cut off");
                    };
                    self.ts = self
                        .ts
                        .saturating_add(delta | (u64::from(high) << DELTA_BITS));
                    self.pos += 8;
                }
                _ => {
                    // TYPE_TIME_STAMP
                    let (Some(low), Some(high)) =
                        (self.word(self.pos + 4), self.word(self.pos + 8))
                    else {
                        return self.corrupt("time stamp is cut off");
                    };
                    let abs = u64::from(low) | (u64::from(high) << 32);
                    // A reader's time never goes back, even on a bad page.
                    self.ts = self.ts.max(abs);
                    self.pos += 12;
                }
            }
        }
        None
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
}
