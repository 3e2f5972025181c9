//! What readers hand out: events and whole pages.

use crate::format::{PageHeader, Record, RecordCursor};

/// What a drained page holds, as the drain found it while copying it
/// ([`CpuBuffer::read_committed_into`]): what a recorder needs to index
/// the page without walking its records again.
///
/// [`CpuBuffer::read_committed_into`]: crate::CpuBuffer::read_committed_into
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrainedPage {
    /// Its events (those past the header's `skip`).
    pub events: u32,
    /// The first one's time; the header's `base_ts` if it has none.
    pub first_ts: u64,
    /// The last one's time; the header's `base_ts` if it has none.
    pub last_ts: u64,
    /// Events lost just before it (the header's `lost`).
    pub lost: u64,
}

impl DrainedPage {
    /// What `bytes` (a page as readers hand it out) holds, walked: `None`
    /// when its header does not parse.
    pub(crate) fn walk(bytes: &[u8]) -> Option<DrainedPage> {
        let header = PageHeader::parse(bytes).ok()?;
        let mut out = DrainedPage {
            events: 0,
            first_ts: header.base_ts,
            last_ts: header.base_ts,
            lost: u64::from(header.lost),
        };
        let mut cursor = RecordCursor::new(bytes).ok()?;
        if cursor.skip_events(header.skip) == header.skip && cursor.skip_events(1) == 1 {
            out.first_ts = cursor.timestamp();
            out.events = 1 + cursor.skip_events(u32::MAX);
            out.last_ts = cursor.timestamp();
        }
        Some(out)
    }
}

/// One event as a consuming reader or iterator returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The CPU buffer it was read from.
    pub cpu: usize,
    /// Its timestamp, in clock ticks (convert with the clock's `ClockInfo`).
    pub ts: u64,
    /// Its payload, exactly as written.
    pub payload: Vec<u8>,
    /// Events of this CPU buffer lost (overrun, or skipped by a fixup) just
    /// before this one. Counted on the first event of each page read, since
    /// pages are lost oldest first: a loss lies between the previous page
    /// read and this one. Zero on a non-consuming iterator's events.
    pub lost_before: u64,
}

/// A whole page taken out of a CPU buffer by [`read_page`], as the kernel's
/// `ring_buffer_read_page` hands over the reader page. Its bytes decode on
/// their own (docs/format.md).
///
/// [`read_page`]: crate::CpuBuffer::read_page
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageBuf {
    /// The CPU buffer it came from.
    pub cpu: usize,
    /// The page: header and records.
    pub bytes: Vec<u8>,
}

impl PageBuf {
    /// The page header.
    pub fn header(&self) -> PageHeader {
        // The reader wrote this header itself; it parses.
        PageHeader::parse(&self.bytes).unwrap_or(PageHeader {
            base_ts: 0,
            seq: 0,
            commit: 0,
            events: 0,
            skip: 0,
            lost: 0,
        })
    }

    /// The page's unread events as (timestamp, payload), in order.
    pub fn events(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        let skip = self.header().skip as usize;
        RecordCursor::new(&self.bytes)
            .into_iter()
            .flatten()
            .map_while(Result::ok)
            .filter_map(|r| match r {
                Record::Event { ts, payload } => Some((ts, payload)),
                Record::Discard { .. } => None,
            })
            .skip(skip)
    }
}
