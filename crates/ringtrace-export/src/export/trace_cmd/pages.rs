//! One CPU's events as the kernel's ring buffer pages (sub-buffers), as
//! `trace_pipe_raw` hands them to trace-cmd.
//!
//! ```text
//!  page header: u64 timestamp (absolute, of the page's first event)
//!               u64 commit: bytes of data; bit 31 RB_MISSED_EVENTS,
//!                   bit 30 RB_MISSED_STORED (the count, a u64, follows
//!                   the data)
//!  event:       u32 type_len:5 | time_delta:27 << 5
//!    type_len 1..=28   data of type_len * 4 bytes follows
//!    type_len 0        u32 length (itself included), then the data
//!    type_len 30       TIME_EXTEND: u32 delta >> 27 follows
//! ```

/// Bytes of a page header.
pub const HEADER: usize = 16;
/// Bits of delta in an event header.
const DELTA_BITS: u32 = 27;
/// Largest delta a TIME_EXTEND holds.
const MAX_EXTENDED: u64 = (1 << (DELTA_BITS + 32)) - 1;
/// `RINGBUF_TYPE_TIME_EXTEND`.
const TYPE_TIME_EXTEND: u32 = 30;
/// Largest data a header's type_len holds (`RB_MAX_SMALL_DATA`).
const MAX_SMALL_DATA: usize = 28 * 4;
/// `RB_MISSED_EVENTS`.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// `RB_MISSED_STORED`.
pub const MISSED_STORED: u64 = 1 << 30;

/// Bytes an event of `len` data bytes takes (`rb_calculate_event_length`).
pub fn event_len(len: usize) -> usize {
    let len = len.max(1);
    let array = if len > MAX_SMALL_DATA { 4 } else { 0 };
    (len + array + 4).next_multiple_of(4)
}

/// The page size that holds the largest event, `largest` data bytes, with
/// a time extend and a missed-events count beside it: 4096, or the next
/// power of two.
pub fn page_size_for(largest: usize) -> usize {
    (HEADER + 8 + event_len(largest) + 8)
        .next_power_of_two()
        .max(4096)
}

/// Builds one CPU's pages.
#[derive(Debug)]
pub struct Pages {
    page_size: usize,
    /// Every finished page, back to back.
    done: Vec<u8>,
    /// The page being filled: its data, its first timestamp, the last
    /// event's timestamp, and the events lost before it.
    data: Vec<u8>,
    page_ts: u64,
    last_ts: u64,
    missed: u64,
}

impl Pages {
    /// No pages yet, of `page_size` bytes.
    pub fn new(page_size: usize) -> Pages {
        Pages {
            page_size,
            done: Vec::new(),
            data: Vec::new(),
            page_ts: 0,
            last_ts: 0,
            missed: 0,
        }
    }

    /// Room for data in a page (what the missed count needs kept aside).
    fn room(&self) -> usize {
        let reserve = if self.missed > 0 { 8 } else { 0 };
        self.page_size - HEADER - reserve
    }

    /// Appends an event of `data` at `ts` (ns, or ticks), after `lost`
    /// events of this CPU that were lost: those mark the page it starts,
    /// which is a new one. A time that goes back, or a delta too large for
    /// a time extend, starts a new page too (its header's timestamp is
    /// absolute). `data` must fit a page ([`page_size_for`]).
    pub fn push(&mut self, ts: u64, data: &[u8], lost: u64) {
        let len = event_len(data.len());
        let fresh = self.data.is_empty() && self.missed == 0;
        let needs_new = !fresh
            && (lost > 0 || ts < self.last_ts || ts - self.last_ts > MAX_EXTENDED || {
                let delta = ts - self.last_ts;
                let extend = if delta >> DELTA_BITS > 0 { 8 } else { 0 };
                self.data.len() + extend + len > self.room()
            });
        if needs_new {
            self.finish();
        }
        if self.data.is_empty() {
            self.page_ts = ts;
            self.last_ts = ts;
            self.missed = self.missed.max(lost);
        }
        let mut delta = ts - self.last_ts;
        if delta >> DELTA_BITS > 0 {
            let low = (delta & ((1 << DELTA_BITS) - 1)) as u32;
            self.word(TYPE_TIME_EXTEND | (low << 5));
            self.word((delta >> DELTA_BITS) as u32);
            delta = 0;
        }
        let delta = (delta as u32) << 5;
        let padded = data.len().max(1).next_multiple_of(4);
        if data.len().max(1) > MAX_SMALL_DATA {
            self.word(delta);
            self.word((len - 4) as u32);
        } else {
            self.word((padded / 4) as u32 | delta);
        }
        self.data.extend_from_slice(data);
        self.data.resize(self.data.len() + padded - data.len(), 0);
        self.last_ts = ts;
    }

    fn word(&mut self, w: u32) {
        self.data.extend_from_slice(&w.to_le_bytes());
    }

    /// Closes the page being filled, if it holds anything.
    fn finish(&mut self) {
        if self.data.is_empty() && self.missed == 0 {
            return;
        }
        let start = self.done.len();
        self.done.resize(start + self.page_size, 0);
        let page = &mut self.done[start..];
        let mut commit = self.data.len() as u64;
        if self.missed > 0 {
            commit |= MISSED_EVENTS | MISSED_STORED;
            let at = HEADER + self.data.len();
            page[at..at + 8].copy_from_slice(&self.missed.to_le_bytes());
        }
        page[0..8].copy_from_slice(&self.page_ts.to_le_bytes());
        page[8..16].copy_from_slice(&commit.to_le_bytes());
        page[HEADER..HEADER + self.data.len()].copy_from_slice(&self.data);
        self.data.clear();
        self.missed = 0;
    }

    /// Every page, the last one closed.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.finish();
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(page: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(page[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn event_lengths_follow_the_kernels_rule() {
        assert_eq!(event_len(0), 8);
        assert_eq!(event_len(8), 12);
        assert_eq!(event_len(10), 16);
        assert_eq!(event_len(112), 116);
        assert_eq!(event_len(113), 124);
        assert_eq!(page_size_for(100), 4096);
        assert_eq!(page_size_for(5000), 8192);
    }

    #[test]
    fn small_long_and_extended_events_are_encoded_as_the_kernel_does() {
        let mut p = Pages::new(4096);
        p.push(1000, &[1; 8], 0);
        p.push(1005, &[2; 120], 0);
        p.push(1005 + (3 << 27) + 7, &[3; 4], 0);
        let page = p.into_bytes();
        assert_eq!(page.len(), 4096);
        assert_eq!(u64::from_le_bytes(page[0..8].try_into().unwrap()), 1000);
        let commit = u64::from_le_bytes(page[8..16].try_into().unwrap());
        assert_eq!(commit, 12 + 128 + 8 + 8);
        assert_eq!(word(&page, 16), 2); // type_len 2, delta 0
        assert_eq!(word(&page, 28), 5 << 5); // type_len 0, delta 5
        assert_eq!(word(&page, 32), 124); // the length word and the data
        assert_eq!(word(&page, 156), 30 | (7 << 5)); // TIME_EXTEND, low bits
        assert_eq!(word(&page, 160), 3); // high bits
        assert_eq!(word(&page, 164), 1); // type_len 1, delta 0
    }

    #[test]
    fn a_loss_starts_a_page_marked_with_the_count_after_its_data() {
        let mut p = Pages::new(4096);
        p.push(1, &[0; 8], 0);
        p.push(2, &[0; 8], 41);
        p.push(1, &[0; 8], 0); // back in time: a third page
        let pages = p.into_bytes();
        assert_eq!(pages.len(), 3 * 4096);
        let second = &pages[4096..8192];
        let commit = u64::from_le_bytes(second[8..16].try_into().unwrap());
        assert_eq!(commit, MISSED_EVENTS | MISSED_STORED | 12);
        assert_eq!(u64::from_le_bytes(second[28..36].try_into().unwrap()), 41);
    }

    #[test]
    fn a_full_page_continues_on_the_next() {
        let mut p = Pages::new(4096);
        for i in 0..1000 {
            p.push(i, &[0; 28], 0);
        }
        let pages = p.into_bytes();
        // 32 bytes an event, 127 a page.
        assert_eq!(pages.len(), 8 * 4096);
        assert_eq!(
            u64::from_le_bytes(pages[4096..4104].try_into().unwrap()),
            127
        );
    }
}
