//! Entries of one CPU gathered to be appended together: pages and losses
//! encoded into one buffer, which the process writer writes with one
//! write per chunk they land in (`ProcessWriter::append_batch`), instead
//! of one per page. A drainer fills one per CPU per round.

use crate::chunk::{self, KIND_FILL, KIND_LOSS, KIND_PAGE};
use crate::error::WriteError;
use crate::index::Counters;
use crate::loss::LossCause;
use crate::page;

/// What one entry of a batch holds, as its counts need it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Held {
    /// A page: its events (records less `skip`) and its header's `lost`.
    Page { events: u64, lost: u64 },
    /// A loss.
    Loss { count: u64, cause: LossCause },
    /// A fill sample.
    Fill,
}

/// One entry: where it ends in the batch's bytes, its times, what it
/// holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queued {
    pub end: usize,
    pub first: u64,
    pub last: u64,
    pub held: Held,
}

impl Queued {
    /// Adds this entry, `len` bytes, to what was written.
    pub fn count_written(&self, c: &mut Counters, len: u64) {
        match self.held {
            Held::Page { events, lost } => {
                c.pages += 1;
                c.events += events;
                c.page_lost += lost;
            }
            Held::Loss { count, cause } => {
                c.loss_entries += 1;
                c.lost_by_cause[cause.index()] += count;
            }
            Held::Fill => {}
        }
        c.raw_bytes += len;
        c.disk_bytes += len;
    }

    /// Adds this entry to what could not be written. The events it said
    /// were lost are lost all the same: counted (a loss entry's by its
    /// cause), so that the counts still add up to what was fired.
    pub fn count_unwritten(&self, c: &mut Counters) {
        match self.held {
            Held::Page { events, lost } => {
                c.unwritten.pages += 1;
                c.unwritten.events += events;
                c.unwritten.lost += lost;
                c.page_lost += lost;
            }
            Held::Loss { count, cause } => {
                c.unwritten.losses += 1;
                c.unwritten.lost += count;
                c.lost_by_cause[cause.index()] += count;
            }
            Held::Fill => {}
        }
    }
}

/// Encoded entries of one CPU, in order.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub bytes: Vec<u8>,
    pub entries: Vec<Queued>,
}

impl Batch {
    /// Empties it, keeping its allocations.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a page (or a piece of one) read from `cpu`'s buffer, as
    /// `ProcessWriter::append_page` takes it; refused, as there, when it
    /// is not 32 bytes to `page_size` long. Returns its events.
    pub fn page(&mut self, cpu: usize, bytes: &[u8], page_size: usize) -> Result<u64, WriteError> {
        let s = page::summary(bytes).unwrap_or(page::Summary {
            events: 0,
            first: 0,
            last: 0,
            lost: 0,
        });
        self.page_summarized(cpu, bytes, page_size, s)
    }

    /// [`page`](Batch::page) for a page whose summary `s` is known (what
    /// the drain found while copying it), so that it is not walked again.
    pub fn page_summarized(
        &mut self,
        cpu: usize,
        bytes: &[u8],
        page_size: usize,
        s: page::Summary,
    ) -> Result<u64, WriteError> {
        if bytes.len() < ringtrace_ring::format::PAGE_HEADER || bytes.len() > page_size {
            return Err(WriteError::PageSize {
                cpu,
                len: bytes.len(),
                page_size,
            });
        }
        chunk::append_entry_to(&mut self.bytes, KIND_PAGE, bytes);
        self.entries.push(Queued {
            end: self.bytes.len(),
            first: s.first,
            last: s.last,
            held: Held::Page {
                events: s.events,
                lost: s.lost,
            },
        });
        Ok(s.events)
    }

    /// Adds a loss: `count` events lost at `ts` for `cause`.
    pub fn loss(&mut self, ts: u64, count: u64, cause: LossCause) {
        let payload = chunk::loss_payload(ts, count, cause);
        chunk::append_entry_to(&mut self.bytes, KIND_LOSS, &payload);
        self.entries.push(Queued {
            end: self.bytes.len(),
            first: ts,
            last: ts,
            held: Held::Loss { count, cause },
        });
    }

    /// Adds a fill sample: at `ts`, `pages` of the buffer's `capacity`
    /// were waiting for the reader.
    pub fn fill(&mut self, ts: u64, pages: u32, capacity: u32) {
        let payload = chunk::fill_payload(ts, pages, capacity);
        chunk::append_entry_to(&mut self.bytes, KIND_FILL, &payload);
        self.entries.push(Queued {
            end: self.bytes.len(),
            first: ts,
            last: ts,
            held: Held::Fill,
        });
    }

    /// Where entry `i` starts in [`bytes`](Batch::bytes).
    pub fn start_of(&self, i: usize) -> usize {
        match i {
            0 => 0,
            i => self.entries.get(i - 1).map_or(0, |e| e.end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(held: Held) -> Queued {
        Queued {
            end: 0,
            first: 0,
            last: 0,
            held,
        }
    }

    #[test]
    fn entries_not_written_still_count_the_losses_they_carried() {
        let mut c = Counters::default();
        queued(Held::Page { events: 5, lost: 2 }).count_unwritten(&mut c);
        queued(Held::Loss {
            count: 7,
            cause: LossCause::Refused,
        })
        .count_unwritten(&mut c);
        queued(Held::Fill).count_unwritten(&mut c);
        let u = c.unwritten;
        assert_eq!((u.pages, u.events, u.losses, u.lost), (1, 5, 1, 9));
        // Lost all the same, by the page's count and by cause.
        assert_eq!((c.page_lost, c.lost(LossCause::Refused)), (2, 7));
        // Nothing of them is in what was written.
        assert_eq!((c.pages, c.events, c.loss_entries), (0, 0, 0));
    }
}
