//! Walking one page of a recovered file: committed events, reservations
//! that never committed (PENDING), and where the walk had to stop.

use crate::format::{self, PAGE_HEADER};

/// What a page walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Committed events: (time, payload).
    pub events: Vec<(u64, Vec<u8>)>,
    /// Reservations that never committed, stepped over.
    pub pending: u64,
    /// Why the walk stopped before the page's end or its padding, if it did
    /// for a reason worth telling (a header never written is not one: it is
    /// where the writers had got to).
    pub stopped: Option<String>,
    /// Where it stopped: a header that was never written, at this byte.
    pub unwritten_at: Option<usize>,
    /// Where it stopped on a corrupt record, at this byte.
    pub corrupt_at: Option<usize>,
    /// Each PENDING record: (byte offset, size, header word).
    pub pending_at: Vec<(usize, usize, u32)>,
    /// The bytes of the page header and of every record the walk passed
    /// that is not PENDING (events, discards, time prefixes), and of the
    /// padding it ended at: what the page's commit word counts, plus any
    /// record written whole whose commit never landed.
    pub written_bytes: u64,
    /// Where the walk ended: the padding's byte, the page's end, the
    /// header never written, or the corrupt record.
    pub end: usize,
    /// The walk ended at padding or at the page's end: it passed every
    /// record the page holds.
    pub reached_end: bool,
}

fn word(page: &[u8], at: usize) -> Option<u32> {
    let b = page.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Walks `page` from its first record, from time `base_ts`. Never panics
/// and never reads outside `page`, whatever its bytes.
pub(crate) fn walk(page: &[u8], base_ts: u64) -> Walked {
    let mut out = Walked {
        written_bytes: PAGE_HEADER as u64,
        ..Walked::default()
    };
    let mut pos = PAGE_HEADER;
    let mut ts = base_ts;
    let end = page.len();
    let stop = |out: &mut Walked, pos: usize, why: &str| {
        out.stopped = Some(format!("byte {pos}: {why}"));
        out.corrupt_at = Some(pos);
    };
    while pos + 4 <= end {
        let Some(head) = word(page, pos) else { break };
        if head == 0 {
            out.unwritten_at = Some(pos);
            break;
        }
        let pending = head & format::PENDING != 0;
        let type_len = head & 31;
        let delta = u64::from((head & !format::PENDING) >> 5);
        // (size of the record, whether it is a data event, payload range)
        let (size, payload) = match type_len {
            0 => {
                stop(&mut out, pos, "a PENDING header with no type");
                break;
            }
            1..=format::TYPE_DATA_MAX => {
                let len = type_len as usize * 4;
                (4 + len, Some((pos + 4, len)))
            }
            format::TYPE_DATA_LONG => {
                let Some(len) = word(page, pos + 4) else {
                    stop(&mut out, pos, "a long event cut off by the page's end");
                    break;
                };
                let len = len as usize;
                match len
                    .checked_next_multiple_of(4)
                    .and_then(|l| l.checked_add(8))
                {
                    Some(size) => (size, Some((pos + 8, len))),
                    None => {
                        stop(&mut out, pos, "a long event of impossible length");
                        break;
                    }
                }
            }
            _ if pending => {
                stop(
                    &mut out,
                    pos,
                    "a PENDING header on a record that is not an event",
                );
                break;
            }
            format::TYPE_DISCARD => match word(page, pos + 4) {
                Some(total) if total >= 8 && total % 4 == 0 => (total as usize, None),
                _ => {
                    stop(&mut out, pos, "a discard record of impossible length");
                    break;
                }
            },
            format::TYPE_PADDING => {
                out.written_bytes += (end - pos) as u64;
                out.reached_end = true;
                break;
            }
            format::TYPE_TIME_EXTEND => {
                let Some(high) = word(page, pos + 4) else {
                    stop(&mut out, pos, "a time extend cut off by the page's end");
                    break;
                };
                ts = ts.saturating_add(delta | (u64::from(high) << format::DELTA_BITS));
                pos += 8;
                out.written_bytes += 8;
                continue;
            }
            _ => {
                let (Some(low), Some(high)) = (word(page, pos + 4), word(page, pos + 8)) else {
                    stop(&mut out, pos, "a time stamp cut off by the page's end");
                    break;
                };
                ts = ts.max(u64::from(low) | (u64::from(high) << 32));
                pos += 12;
                out.written_bytes += 12;
                continue;
            }
        };
        if pos.checked_add(size).is_none_or(|e| e > end) {
            stop(&mut out, pos, "a record that runs past the page's end");
            break;
        }
        // Every record's delta counts, committed or not: the next record's
        // time is reckoned from it.
        ts = ts.saturating_add(delta);
        match payload {
            _ if pending => {
                out.pending += 1;
                out.pending_at.push((pos, size, head));
            }
            Some((start, len)) => out.events.push((ts, page[start..start + len].to_vec())),
            None => {}
        }
        if !pending {
            out.written_bytes += size as u64;
        }
        pos += size;
    }
    if pos + 4 > end && out.corrupt_at.is_none() && out.unwritten_at.is_none() {
        out.reached_end = true;
    }
    out.end = pos;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{record_header, PageHeader, PENDING, TYPE_DISCARD, TYPE_PADDING};

    fn page(records: &[u32]) -> Vec<u8> {
        let mut page = vec![0u8; 128];
        PageHeader {
            base_ts: 100,
            seq: 0,
            commit: 0,
            events: 0,
            skip: 0,
            lost: 0,
        }
        .write_to(&mut page);
        for (i, w) in records.iter().enumerate() {
            let at = PAGE_HEADER + 4 * i;
            page[at..at + 4].copy_from_slice(&w.to_le_bytes());
        }
        page
    }

    #[test]
    fn a_pending_event_is_stepped_over_and_its_delta_kept() {
        let p = page(&[
            record_header(1, 5),
            7,
            record_header(2, 3) | PENDING,
            0xdead,
            0xbeef,
            record_header(1, 2),
            9,
            record_header(TYPE_DISCARD, 1),
            8,
            record_header(TYPE_PADDING, 0),
        ]);
        let w = walk(&p, 100);
        assert_eq!(w.pending, 1);
        assert_eq!(
            w.events,
            vec![
                (105, 7u32.to_le_bytes().to_vec()),
                (110, 9u32.to_le_bytes().to_vec())
            ]
        );
        assert!(w.stopped.is_none());
    }

    #[test]
    fn a_header_never_written_ends_the_walk_where_it_is() {
        let p = page(&[record_header(1, 0), 1]);
        let w = walk(&p, 0);
        assert_eq!((w.events.len(), w.unwritten_at), (1, Some(PAGE_HEADER + 8)));
    }

    #[test]
    fn an_impossible_length_stops_the_walk_with_a_reason() {
        let p = page(&[record_header(format::TYPE_DATA_LONG, 0) | PENDING, u32::MAX]);
        let w = walk(&p, 0);
        assert!(w.stopped.unwrap().contains("past the page"), "stops");
        assert_eq!(w.pending, 0);
    }
}
