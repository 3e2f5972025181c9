//! Pages as a drainer hands them over: whole pages, or fragments shorter
//! than the ring's page size (the records added to a page since its last
//! fragment). `ringtrace_ring`'s decoder takes whole pages only (a power of
//! two long), so a fragment is decoded from a copy padded with zeros, read
//! no further than its own bytes.

use ringtrace_ring::format::{PageHeader, Record, RecordCursor, PAGE_HEADER};

/// What one page holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// Its header.
    pub header: PageHeader,
    /// Its unread events (after `skip`), as (timestamp, payload).
    pub events: Vec<(u64, Vec<u8>)>,
    /// What stopped the walk early, in words.
    pub problem: Option<String>,
}

/// What a writer needs of a page: its unread events' count and first and
/// last times, and its header's `lost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    pub events: u64,
    pub first: u64,
    pub last: u64,
    pub lost: u64,
}

/// Summarises `bytes` as [`decode`] would read them, without copying a
/// payload: `None` when they are shorter than a page header. Never
/// panics.
pub(crate) fn summary(bytes: &[u8]) -> Option<Summary> {
    if bytes.len() < PAGE_HEADER {
        return None;
    }
    let header = raw_header(bytes);
    if header.commit % 4 != 0 {
        // A commit no page has: as `decode` reads it.
        let d = decode(bytes)?;
        let base = d.header.base_ts;
        return Some(Summary {
            events: d.events.len() as u64,
            first: d.events.first().map_or(base, |e| e.0),
            last: d.events.last().map_or(base, |e| e.0),
            lost: u64::from(d.header.lost),
        });
    }
    // Walked in place, as far as `decode` reads: no further than the
    // bytes (whole words) nor than the commit.
    let len = bytes.len() & !3;
    let commit = header.commit as usize;
    let end = if commit == 0 { len } else { commit.min(len) }.max(PAGE_HEADER);
    let mut out = Summary {
        events: 0,
        first: header.base_ts,
        last: header.base_ts,
        lost: u64::from(header.lost),
    };
    let mut cursor = RecordCursor::resume(bytes, PAGE_HEADER, header.base_ts, end);
    if cursor.skip_events(header.skip) == header.skip && cursor.skip_events(1) == 1 {
        out.first = cursor.timestamp();
        out.events = 1 + u64::from(cursor.skip_events(u32::MAX));
        out.last = cursor.timestamp();
    }
    Some(out)
}

/// Decodes `bytes`: `None` when they are shorter than a page header. Never
/// panics, whatever the bytes.
pub(crate) fn decode(bytes: &[u8]) -> Option<Decoded> {
    if bytes.len() < PAGE_HEADER {
        return None;
    }
    let len = bytes.len() & !3;
    let mut padded = vec![0u8; bytes.len().next_power_of_two().max(64)];
    padded[..bytes.len()].copy_from_slice(bytes);
    let header = PageHeader::parse(&padded).ok();
    // The header as stored, even when its commit is out of range.
    let stored = header.unwrap_or_else(|| raw_header(bytes));
    let mut problem = None;
    // Read no further than the fragment's own bytes, nor than its commit.
    let commit = stored.commit as usize;
    let end = if commit == 0 { len } else { commit.min(len) }.max(PAGE_HEADER);
    if commit > len {
        problem = Some(format!(
            "its commit, {commit} bytes, is past its end ({} bytes)",
            bytes.len()
        ));
    }
    let mut fixed = stored;
    fixed.commit = end as u32;
    fixed.write_to(&mut padded);
    let mut events = Vec::new();
    if let Ok(cursor) = RecordCursor::new(&padded) {
        for r in cursor {
            match r {
                Ok(Record::Event { ts, payload }) => events.push((ts, payload.to_vec())),
                Ok(Record::Discard { .. }) => {}
                Err(e) => {
                    problem.get_or_insert_with(|| e.to_string());
                    break;
                }
            }
        }
    }
    let skip = (stored.skip as usize).min(events.len());
    events.drain(..skip);
    Some(Decoded {
        header: stored,
        events,
        problem,
    })
}

fn raw_header(bytes: &[u8]) -> PageHeader {
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| u64::from(u32_at(at)) | (u64::from(u32_at(at + 4)) << 32);
    PageHeader {
        base_ts: u64_at(0),
        seq: u64_at(8),
        commit: u32_at(16),
        events: u32_at(20),
        skip: u32_at(24),
        lost: u32_at(28),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_clock::Counter;
    use ringtrace_ring::{RingBuffer, RingConfig};

    fn page() -> Vec<u8> {
        let ring = RingBuffer::new(
            RingConfig::default()
                .cpus(1)
                .page_size(256)
                .per_cpu_bytes(1024),
            Counter::new(),
        )
        .unwrap();
        for i in 0..3u32 {
            ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap();
        }
        ring.flush();
        ring.cpu_buffer(0).unwrap().read_page().unwrap().bytes
    }

    #[test]
    fn a_whole_page_and_a_fragment_of_it_decode_alike() {
        let p = page();
        let whole = decode(&p).unwrap();
        assert_eq!(whole.events.len(), 3);
        assert_eq!(whole.problem, None);
        let commit = whole.header.commit as usize;
        let cut = decode(&p[..commit]).unwrap();
        assert_eq!(cut.events, whole.events);
        // A fragment cut inside its last record keeps the records before.
        let torn = decode(&p[..commit - 4]).unwrap();
        assert_eq!(torn.events.len(), 2);
        assert!(torn.problem.is_some());
        assert!(decode(&p[..PAGE_HEADER - 1]).is_none());
    }

    #[test]
    fn skip_drops_the_first_events() {
        let mut p = page();
        p[24] = 2;
        assert_eq!(decode(&p).unwrap().events.len(), 1);
        p[24] = 9;
        assert_eq!(decode(&p).unwrap().events.len(), 0);
    }

    #[test]
    fn a_summary_counts_what_decode_reads() {
        let p = page();
        let commit = decode(&p).unwrap().header.commit as usize;
        let mut skipped = p.clone();
        skipped[24] = 1;
        for bytes in [&p[..], &p[..commit], &p[..commit - 4], &skipped[..]] {
            let d = decode(bytes).unwrap();
            let s = summary(bytes).unwrap();
            assert_eq!(s.events, d.events.len() as u64);
            assert_eq!(s.first, d.events.first().map_or(d.header.base_ts, |e| e.0));
            assert_eq!(s.last, d.events.last().map_or(d.header.base_ts, |e| e.0));
        }
        assert!(summary(&p[..PAGE_HEADER - 1]).is_none());
    }

    #[test]
    fn a_summary_agrees_with_decode_on_every_cut_and_commit() {
        let p = page();
        for commit in [0u32, 32, 40, 44, 48, 52, 64, 4096, 7, 255] {
            let mut q = p.clone();
            q[16..20].copy_from_slice(&commit.to_le_bytes());
            for cut in PAGE_HEADER..=q.len() {
                let bytes = &q[..cut];
                let d = decode(bytes).unwrap();
                let s = summary(bytes).unwrap();
                let base = d.header.base_ts;
                assert_eq!(s.events, d.events.len() as u64, "commit {commit} cut {cut}");
                assert_eq!(s.first, d.events.first().map_or(base, |e| e.0));
                assert_eq!(s.last, d.events.last().map_or(base, |e| e.0));
            }
        }
    }
}
