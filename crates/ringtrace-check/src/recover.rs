//! Any bytes as a ring file: `ringtrace_ring::file::recover_bytes` returns
//! a typed error or a (partial) recovery, never a panic, and what it
//! returns is self-consistent.

use crate::Violation;
use ringtrace_ring::file::recover_bytes;

/// What a recovery of the input gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// The input was refused with a typed error.
    pub refused: bool,
    /// Events returned.
    pub events: usize,
}

/// Recovers `bytes` as a ring file and checks that:
///
/// - each CPU's `recovered` count is the number of events it returned;
/// - every payload fits in a page of the header's page size (less the
///   page header and a record header: a corrupt page may hold a short
///   record no writer would have placed, but never one past its end);
/// - `merged()` returns every event once, in time order;
/// - the events of one page never go back in time (they are walked from
///   one base time, deltas added);
/// - the metadata records are never empty and, framed (each its length
///   plus 4), fit in the annex's capacity.
pub fn check(bytes: &[u8]) -> Result<Recovered, Violation> {
    let fail = |detail: String| {
        Err(Violation {
            property: "a recovery is self-consistent",
            detail,
        })
    };
    let recovery = match recover_bytes("fuzz-input", bytes.to_vec()) {
        Ok(r) => r,
        Err(e) => {
            let message = e.to_string();
            if !message.contains("fuzz-input") {
                return fail(format!("an error that does not name the file: {message}"));
            }
            return Ok(Recovered {
                refused: true,
                events: 0,
            });
        }
    };
    let max_payload = recovery
        .header
        .page_size
        .saturating_sub(ringtrace_ring::format::PAGE_HEADER + 4);
    let mut total = 0usize;
    for cpu in &recovery.cpus {
        if cpu.counts.recovered != cpu.events.len() as u64 {
            return fail(format!(
                "CPU {} counts {} recovered events and returns {}",
                cpu.cpu,
                cpu.counts.recovered,
                cpu.events.len()
            ));
        }
        if let Some(e) = cpu.events.iter().find(|e| e.payload.len() > max_payload) {
            return fail(format!(
                "CPU {} returned a payload of {} bytes, more than a page of {} holds",
                cpu.cpu,
                e.payload.len(),
                recovery.header.page_size
            ));
        }
        if cpu.events.iter().any(|e| e.cpu != cpu.cpu) {
            return fail(format!("CPU {} returned another CPU's event", cpu.cpu));
        }
        total += cpu.events.len();
    }
    let records = recovery.metadata_records();
    if records.iter().any(|r| r.is_empty()) {
        return fail("an empty metadata record".into());
    }
    let framed: u64 = records.iter().map(|r| 4 + r.len() as u64).sum();
    if framed > recovery.header.layout.annex_capacity {
        return fail(format!(
            "metadata records of {framed} bytes framed in an annex of {}",
            recovery.header.layout.annex_capacity
        ));
    }
    let merged = recovery.merged();
    if merged.len() != total {
        return fail(format!("merged() has {} events of {total}", merged.len()));
    }
    if merged.windows(2).any(|w| w[0].ts > w[1].ts) {
        return fail("merged() goes back in time".into());
    }
    Ok(Recovered {
        refused: false,
        events: total,
    })
}
