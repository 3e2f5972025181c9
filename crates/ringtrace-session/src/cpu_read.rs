//! Reading one CPU buffer's chunks back: the chunk files in order, their
//! entries into events (with the losses before each) and loss entries.
//! A chunk that cannot be read is a problem of this CPU; the others are
//! read.

use crate::chunk::{self, Entry, HEADER_LEN};
use crate::loss::{Loss, LossCause};
use crate::page;
use ringtrace_ring::file::{CpuRecovery, LossNote};
use ringtrace_ring::Event;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Who the chunks must belong to.
pub(crate) struct Owner {
    pub pid: u32,
    pub start: u64,
    pub cpu: usize,
    pub page_size: usize,
    /// Chunks numbered below it were rotated out (a crash may have left
    /// their files).
    pub first_kept: u32,
}

/// One CPU buffer read back: its events and problems, and its losses.
pub(crate) struct CpuRead {
    pub recovery: CpuRecovery,
    pub losses: Vec<Loss>,
}

/// The chunk files of `dir`: number, and whether it is the open one. A
/// `.open` beside a `.chunk` of the same number is the leftover of a
/// finish cut short, and skipped.
fn listing(dir: &Path, first_kept: u32) -> Vec<(u32, bool)> {
    let mut found: BTreeMap<u32, bool> = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let (number, open) = if let Some(n) = name.strip_suffix(".chunk") {
            (n, false)
        } else if let Some(n) = name.strip_suffix(".open") {
            (n, true)
        } else {
            continue; // temporary files of a finish cut short
        };
        let Ok(number) = number.parse::<u32>() else {
            continue;
        };
        if number < first_kept {
            continue;
        }
        let slot = found.entry(number).or_insert(open);
        *slot = *slot && open;
    }
    found.into_iter().collect()
}

/// Reads the chunks of `dir` for `owner`.
pub(crate) fn read(dir: &Path, owner: &Owner) -> CpuRead {
    let mut out = CpuRead {
        recovery: CpuRecovery::new(owner.cpu),
        losses: Vec::new(),
    };
    let mut pending_lost = 0u64;
    for (number, open) in listing(dir, owner.first_kept) {
        let name = crate::open_chunk::file_name(number, if open { "open" } else { "chunk" });
        let path = dir.join(&name);
        let problems = &mut out.recovery.problems;
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{name} cannot be read: {e}"));
                continue;
            }
        };
        if open && bytes.len() < HEADER_LEN {
            continue; // made, and its writer stopped before its header
        }
        let read = match chunk::read(&bytes, open) {
            Ok(r) => r,
            Err(why) => {
                problems.push(format!("{name} cannot be read: {why}"));
                continue;
            }
        };
        let h = &read.header;
        if h.pid != owner.pid
            || h.start != owner.start
            || h.cpu as usize != owner.cpu
            || h.number != number
        {
            problems.push(format!(
                "{name} belongs elsewhere: its header says pid {}, start {}, CPU {}, chunk {}",
                h.pid, h.start, h.cpu, h.number
            ));
            continue;
        }
        if let Some(why) = &read.problem {
            problems.push(format!("{name} is damaged, read up to it: {why}"));
        }
        for entry in read.entries {
            match entry {
                Entry::Loss { ts, count, cause } => {
                    pending_lost = pending_lost.saturating_add(count);
                    out.losses.push(loss(owner, ts, count, cause));
                    let before = out.recovery.events.len();
                    out.recovery
                        .loss_notes
                        .push(LossNote::new(before, count, cause.name()));
                }
                Entry::Page(bytes) => {
                    if bytes.len() > owner.page_size {
                        out.recovery.problems.push(format!(
                            "{name} holds a page of {} bytes, past the ring's page size {}: skipped",
                            bytes.len(),
                            owner.page_size
                        ));
                        continue;
                    }
                    let Some(decoded) = page::decode(&bytes) else {
                        out.recovery.problems.push(format!(
                            "{name} holds a page of {} bytes, shorter than a page header: skipped",
                            bytes.len()
                        ));
                        continue;
                    };
                    if let Some(why) = decoded.problem {
                        out.recovery.problems.push(format!(
                            "{name}: page {} is damaged, read up to it: {why}",
                            decoded.header.seq
                        ));
                    }
                    let page_lost = u64::from(decoded.header.lost);
                    if page_lost > 0 {
                        pending_lost = pending_lost.saturating_add(page_lost);
                        let before = out.recovery.events.len();
                        out.recovery.loss_notes.push(LossNote::new(
                            before,
                            page_lost,
                            "overwritten or lost with a writer (the page's count)",
                        ));
                    }
                    for (ts, payload) in decoded.events {
                        out.recovery.events.push(Event {
                            cpu: owner.cpu,
                            ts,
                            payload,
                            lost_before: std::mem::take(&mut pending_lost),
                        });
                    }
                }
            }
        }
    }
    out.recovery.counts.recovered = out.recovery.events.len() as u64;
    out
}

fn loss(owner: &Owner, ts: u64, count: u64, cause: LossCause) -> Loss {
    Loss {
        pid: owner.pid,
        start: owner.start,
        cpu: owner.cpu,
        ts,
        count,
        cause,
    }
}
