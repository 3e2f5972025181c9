//! Reading one CPU buffer's chunks back: the chunk files in order, their
//! entries into events (with the losses before each) and loss entries.
//! A chunk that cannot be read is a problem of this CPU; the others are
//! read.

use crate::bounded;
use crate::chunk::{self, Entry, HEADER_LEN};
use crate::halves::Held;
use crate::index::RotatedOut;
use crate::loss::{Loss, LossCause};
use crate::page;
use ringtrace_ring::file::{CpuRecovery, FillSample, LossNote};
use ringtrace_ring::Event;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Who the chunks must belong to.
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    pub pid: u32,
    pub start: u64,
    pub cpu: usize,
    pub page_size: usize,
    /// Chunks numbered below it were rotated out (a crash may have left
    /// their files).
    pub first_kept: u32,
    /// What the chunks rotated out held: their losses are counted before
    /// the first chunk kept.
    pub rotated: RotatedOut,
}

/// Why a page's `lost` was lost, as a loss note says it.
const PAGE_LOST: &str = "overwritten or lost with a writer (the page's count)";

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

/// What one chunk held: its events (with the losses before each), its
/// loss entries, its problems, and where the losses stand among its
/// events.
pub(crate) struct ChunkRead {
    pub events: Vec<Event>,
    pub losses: Vec<Loss>,
    pub problems: Vec<String>,
    /// Loss notes, `before` counted within this chunk's events.
    pub loss_notes: Vec<LossNote>,
    /// Fill samples, in the order written.
    pub fill: Vec<FillSample>,
}

/// One CPU buffer's chunks, read one at a time, in order: each holds
/// one chunk's events, so that a reader that goes through them once holds
/// no more. A loss at the end of one chunk counts on the first event of
/// the next.
pub(crate) struct CpuChunks {
    dir: PathBuf,
    owner: Owner,
    listing: std::vec::IntoIter<(u32, bool)>,
    pending_lost: u64,
    /// The lowest chunk number listed: the losses of the chunks rotated
    /// out are read as if at its start.
    first_listed: Option<u32>,
}

impl CpuChunks {
    /// The chunks of `dir` for `owner`.
    pub fn new(dir: &Path, owner: Owner) -> CpuChunks {
        let listed = listing(dir, owner.first_kept);
        CpuChunks {
            first_listed: listed.first().map(|(n, _)| *n),
            listing: listed.into_iter(),
            dir: dir.to_owned(),
            owner,
            pending_lost: 0,
        }
    }

    /// The losses of the chunks rotated out, into `out` as its first
    /// loss entries and notes (before its first event), and into the
    /// count the next event carries.
    fn rotated_losses(&mut self, out: &mut ChunkRead) {
        let rotated = self.owner.rotated;
        self.pending_lost = self.pending_lost.saturating_add(rotated.lost_total());
        let (losses, notes) = rotated_out_losses(&self.owner);
        out.losses.extend(losses);
        out.loss_notes.extend(notes);
    }

    /// Reads chunk `number` (the open one if `open`).
    fn chunk(&mut self, number: u32, open: bool) -> ChunkRead {
        let mut out = ChunkRead {
            events: Vec::new(),
            losses: Vec::new(),
            problems: Vec::new(),
            loss_notes: Vec::new(),
            fill: Vec::new(),
        };
        if self.first_listed == Some(number) {
            self.rotated_losses(&mut out);
        }
        let owner = &self.owner;
        let name = crate::open_chunk::file_name(number, if open { "open" } else { "chunk" });
        let path = self.dir.join(&name);
        let bytes = match bounded::read(&path, chunk::MAX_FILE, "a chunk") {
            Ok(b) => b,
            Err(e) => {
                out.problems.push(format!("{name} cannot be read: {e}"));
                return out;
            }
        };
        if open && bytes.len() < HEADER_LEN {
            return out; // made, and its writer stopped before its header
        }
        let read = match chunk::read(&bytes, open) {
            Ok(r) => r,
            Err(why) => {
                out.problems.push(format!("{name} cannot be read: {why}"));
                return out;
            }
        };
        let h = &read.header;
        if h.pid != owner.pid
            || h.start != owner.start
            || h.cpu as usize != owner.cpu
            || h.number != number
        {
            out.problems.push(format!(
                "{name} belongs elsewhere: its header says pid {}, start {}, CPU {}, chunk {}",
                h.pid, h.start, h.cpu, h.number
            ));
            return out;
        }
        if let Some(why) = &read.problem {
            out.problems
                .push(format!("{name} is damaged, read up to it: {why}"));
        }
        for entry in read.entries {
            match entry {
                Entry::Loss { ts, count, cause } => {
                    self.pending_lost = self.pending_lost.saturating_add(count);
                    out.losses.push(loss(owner, ts, count, cause));
                    out.loss_notes
                        .push(LossNote::new(out.events.len(), count, cause.name()));
                }
                Entry::Fill {
                    ts,
                    pages,
                    capacity,
                } => out.fill.push(FillSample::new(ts, pages, capacity)),
                Entry::Page(bytes) => {
                    if bytes.len() > owner.page_size {
                        out.problems.push(format!(
                            "{name} holds a page of {} bytes, past the ring's page size {}: skipped",
                            bytes.len(),
                            owner.page_size
                        ));
                        continue;
                    }
                    let Some(decoded) = page::decode(&bytes) else {
                        out.problems.push(format!(
                            "{name} holds a page of {} bytes, shorter than a page header: skipped",
                            bytes.len()
                        ));
                        continue;
                    };
                    if let Some(why) = decoded.problem {
                        out.problems.push(format!(
                            "{name}: page {} is damaged, read up to it: {why}",
                            decoded.header.seq
                        ));
                    }
                    let page_lost = u64::from(decoded.header.lost);
                    if page_lost > 0 {
                        self.pending_lost = self.pending_lost.saturating_add(page_lost);
                        out.loss_notes
                            .push(LossNote::new(out.events.len(), page_lost, PAGE_LOST));
                    }
                    for (ts, payload) in decoded.events {
                        out.events.push(Event {
                            cpu: owner.cpu,
                            ts,
                            payload,
                            lost_before: std::mem::take(&mut self.pending_lost),
                        });
                    }
                }
            }
        }
        out
    }
}

impl Iterator for CpuChunks {
    type Item = ChunkRead;

    fn next(&mut self) -> Option<ChunkRead> {
        let (number, open) = self.listing.next()?;
        Some(self.chunk(number, open))
    }
}

/// The loss notes of `dir`'s chunks for `owner` after its last event (no
/// later event carries them), each with `before` set to `usize::MAX`
/// (after every event): read from the last chunk back to the last that
/// holds an event, so that a streamed reader need not read the rest.
pub(crate) fn trailing_notes(dir: &Path, owner: Owner) -> Vec<LossNote> {
    let mut chunks = CpuChunks::new(dir, owner);
    let listing: Vec<(u32, bool)> = std::mem::take(&mut chunks.listing).collect();
    let mut out = Vec::new();
    if listing.is_empty() {
        // Every chunk rotated out: their losses are all this CPU has.
        let (_, notes) = rotated_out_losses(&chunks.owner);
        return notes
            .into_iter()
            .map(|mut n| {
                n.before = usize::MAX;
                n
            })
            .collect();
    }
    for (number, open) in listing.into_iter().rev() {
        let read = chunks.chunk(number, open);
        let events = read.events.len();
        let mut here: Vec<LossNote> = read
            .loss_notes
            .into_iter()
            .filter(|n| n.before >= events)
            .map(|mut n| {
                n.before = usize::MAX;
                n
            })
            .collect();
        here.append(&mut out);
        out = here;
        if events > 0 {
            break;
        }
    }
    out
}

/// What the chunks of `dir` for `owner` hold, counted a chunk at a time:
/// their events and refusal entries, with those of the chunks rotated out.
pub(crate) fn held(dir: &Path, owner: Owner) -> Held {
    let mut held = Held::new(owner.rotated.events, 0, 0);
    let mut count = |losses: &[Loss]| {
        for l in losses {
            match l.cause {
                LossCause::Refused => held.refused = held.refused.saturating_add(l.count),
                LossCause::BlockedTooLong => {
                    held.timed_out = held.timed_out.saturating_add(l.count);
                }
                LossCause::Overwritten | LossCause::WriterDied => {}
            }
        }
    };
    let chunks = CpuChunks::new(dir, owner);
    if chunks.first_listed.is_none() {
        count(&rotated_out_losses(&chunks.owner).0);
    }
    let mut events = 0u64;
    for chunk in chunks {
        events = events.saturating_add(chunk.events.len() as u64);
        count(&chunk.losses);
    }
    held.events = held.events.saturating_add(events);
    held
}

/// Reads every chunk of `dir` for `owner`.
pub(crate) fn read(dir: &Path, owner: Owner) -> CpuRead {
    let mut out = CpuRead {
        recovery: CpuRecovery::new(owner.cpu),
        losses: Vec::new(),
    };
    let chunks = CpuChunks::new(dir, owner);
    if chunks.first_listed.is_none() {
        // Every chunk rotated out (or none written): no chunk carries
        // the rotated-out losses, so they are this CPU's only notes.
        let (losses, notes) = rotated_out_losses(&chunks.owner);
        out.losses = losses;
        out.recovery.loss_notes = notes;
    }
    for mut chunk in chunks {
        let before = out.recovery.events.len();
        for mut note in chunk.loss_notes {
            note.before += before;
            out.recovery.loss_notes.push(note);
        }
        out.recovery.problems.append(&mut chunk.problems);
        out.recovery.events.append(&mut chunk.events);
        out.recovery.fill.append(&mut chunk.fill);
        out.losses.append(&mut chunk.losses);
    }
    out.recovery.counts.recovered = out.recovery.events.len() as u64;
    out
}

/// The losses the chunks rotated out held, as loss entries (at the
/// latest time they held) and notes (before event 0): one per cause,
/// then one for their pages' `lost`. Said by the same words as the
/// entries and pages they came from, so that totals by cause hold them.
fn rotated_out_losses(owner: &Owner) -> (Vec<Loss>, Vec<LossNote>) {
    let rotated = &owner.rotated;
    let mut losses = Vec::new();
    let mut notes = Vec::new();
    for cause in LossCause::ALL {
        let count = rotated.lost(cause);
        if count > 0 {
            losses.push(loss(owner, rotated.last_ts, count, cause));
            notes.push(LossNote::new(0, count, cause.name()));
        }
    }
    if rotated.page_lost > 0 {
        notes.push(LossNote::new(0, rotated.page_lost, PAGE_LOST));
    }
    (losses, notes)
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
