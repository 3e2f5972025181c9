//! The `decode` property: any bytes given as a page decode without a
//! panic or undefined behaviour, into records or typed errors.
//!
//! For every page: the header parses or is refused with a
//! [`FormatError`]; a header that parses writes back the same; the
//! [`RecordCursor`] stops, never yields after an error, moves forward with
//! every record, hands out payloads that lie inside the page, and its time
//! never goes back; [`PageBuf`] (what `read_page` returns, whose fields
//! are public) decodes the same bytes without a panic.
//!
//! ```
//! // Byte 0 picks the page size (64 << n % 11), byte 1 the commit field's
//! // handling; the rest is the page.
//! let outcome = ringtrace_check::decode::check(&[0, 1, 0xFF, 0xFF]).unwrap();
//! assert_eq!(outcome.page_size, 64);
//! assert!(outcome.header_ok);
//! ```

use crate::{ensure, Violation};
use ringtrace_ring::format::{FormatError, PageHeader, Record, RecordCursor, PAGE_HEADER};
use ringtrace_ring::PageBuf;

/// What decoding a page found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeOutcome {
    /// The page size tried.
    pub page_size: usize,
    /// Whether its header parsed.
    pub header_ok: bool,
    /// Records decoded (events and discards).
    pub records: usize,
    /// Whether the walk ended on a corrupt record.
    pub corrupt: bool,
}

/// Checks `bytes` as given (usually refused for its length), then as a
/// page: the first byte names the page size (`64 << n % 11`), the second
/// what to do with the header's `commit` field (kept as it is, set to 0,
/// or brought into range, so that random bytes reach the records), and the
/// rest is the page, cut or padded with zeros.
pub fn check(bytes: &[u8]) -> Result<DecodeOutcome, Violation> {
    check_page(bytes)?;
    let size = bytes.first().copied().unwrap_or(0);
    let commit_mode = bytes.get(1).copied().unwrap_or(0);
    let rest = bytes.get(2..).unwrap_or_default();
    let page_size = 64usize << (size % 11);
    let mut page = rest[..rest.len().min(page_size)].to_vec();
    page.resize(page_size, 0);
    let commit = u32::from_le_bytes([page[16], page[17], page[18], page[19]]) as usize;
    let commit = match commit_mode % 3 {
        0 => commit,
        1 => 0,
        _ => (PAGE_HEADER + commit % (page_size - PAGE_HEADER + 1)) & !3,
    };
    page[16..20].copy_from_slice(&(commit as u32).to_le_bytes());
    check_page(&page)
}

/// Checks one buffer as a page.
pub fn check_page(page: &[u8]) -> Result<DecodeOutcome, Violation> {
    let mut outcome = DecodeOutcome {
        page_size: page.len(),
        ..DecodeOutcome::default()
    };
    let header = match PageHeader::parse(page) {
        Ok(h) => h,
        Err(e) => {
            let cursor = RecordCursor::new(page).map(|_| ());
            ensure(
                cursor == Err(e.clone()),
                "the cursor and the header disagree",
                || format!("header refused with {e}, cursor gave {cursor:?}"),
            )?;
            ensure(
                matches!(
                    e,
                    FormatError::PageLength { .. } | FormatError::Header { .. }
                ),
                "a header was refused with a record error",
                || format!("{e}"),
            )?;
            return Ok(outcome);
        }
    };
    outcome.header_ok = true;
    let mut copy = page.to_vec();
    ensure(
        header.write_to(&mut copy),
        "a parsed header did not write back",
        || format!("{header:?}"),
    )?;
    ensure(
        PageHeader::parse(&copy) == Ok(header),
        "a header does not round-trip",
        || format!("{header:?}"),
    )?;
    let mut cursor = RecordCursor::new(page).map_err(|e| {
        Violation::new(
            "the cursor refused a page whose header parsed",
            e.to_string(),
        )
    })?;
    let range = page.as_ptr_range();
    let mut ts = header.base_ts;
    let mut pos = cursor.position();
    // Every record takes at least 4 bytes, so a walk has at most this many.
    let most = page.len() / 4 + 1;
    let mut steps = 0;
    while let Some(item) = cursor.next() {
        steps += 1;
        ensure(steps <= most, "the cursor does not stop", || {
            format!("{steps} records from a page of {} bytes", page.len())
        })?;
        let record = match item {
            Ok(r) => r,
            Err(e) => {
                outcome.corrupt = true;
                ensure(
                    matches!(e, FormatError::Record { .. }),
                    "a record error of the wrong kind",
                    || format!("{e}"),
                )?;
                ensure(
                    cursor.next().is_none(),
                    "the cursor went on after an error",
                    || format!("after {e}"),
                )?;
                break;
            }
        };
        outcome.records += 1;
        let record_ts = match record {
            Record::Event { ts, payload } => {
                let p = payload.as_ptr_range();
                ensure(
                    p.start >= range.start && p.end <= range.end,
                    "a payload lies outside its page",
                    || format!("{} bytes at {:?}", payload.len(), p),
                )?;
                ts
            }
            Record::Discard { ts } => ts,
        };
        ensure(record_ts >= ts, "time went back in a page", || {
            format!("{record_ts} after {ts}")
        })?;
        ensure(
            cursor.timestamp() == record_ts,
            "the cursor's time is not its record's",
            || format!("cursor {}, record {record_ts}", cursor.timestamp()),
        )?;
        ensure(
            cursor.position() > pos && cursor.position() <= page.len(),
            "the cursor did not move forward inside the page",
            || format!("from {pos} to {} of {}", cursor.position(), page.len()),
        )?;
        ts = record_ts;
        pos = cursor.position();
    }
    let buf = PageBuf {
        cpu: 0,
        bytes: page.to_vec(),
    };
    ensure(
        buf.header() == header,
        "a PageBuf read another header",
        || format!("{:?} against {header:?}", buf.header()),
    )?;
    let events = buf.events().count();
    ensure(
        events <= outcome.records,
        "a PageBuf found more events than the page holds",
        || format!("{events} events, {} records", outcome.records),
    )?;
    Ok(outcome)
}
