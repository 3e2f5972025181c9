//! Taking over a ring file whose writer is gone (`append`): the ring goes
//! on from where the file's control words say it was, once they are
//! checked and the marks a writer that died mid-operation left are
//! repaired.

use super::walk::walk;
use crate::config::Geometry;
use crate::format::{self, PAGE_HEADER};
use crate::page::counters::RareCounters;
use crate::page::memory::CpuMemory;
use crate::page::meta::{gen_of, tag_of, Commit, Slot};
use crate::shared::{Fresh, SharedState};
use crate::sync::Ordering;

/// Checks one CPU buffer's control words before anything is changed:
/// every slot names its own page, in range, and the write offset agrees
/// with its slot. Returns which pages the slots hold.
pub(crate) fn check_memory(memory: &CpuMemory, geometry: &Geometry) -> Result<(), String> {
    check(&memory.slots, &memory.hot, geometry).map(|_| ())
}

fn check(
    slots: &crate::page::zeroed::ZeroedSlice<crate::sync::AtomicU64>,
    hot: &crate::page::hot::WriterHot,
    geometry: &Geometry,
) -> Result<Vec<bool>, String> {
    let n = geometry.pages_per_cpu;
    let physical = geometry.physical_pages();
    // Relaxed: nothing else touches the words (see `adopt`).
    let mut in_slots = vec![false; physical];
    for (index, slot) in slots.iter().enumerate() {
        let s = Slot::unpack(slot.load(Ordering::Relaxed));
        match in_slots.get_mut(s.phys) {
            Some(used) if !*used => *used = true,
            Some(_) => {
                return Err(format!(
                    "slot {index} names page {}, which another slot names too",
                    s.phys
                ))
            }
            None => return Err(format!("slot {index} names page {}, of {physical}", s.phys)),
        }
    }
    let (write, _) = hot.state.load(Ordering::Relaxed);
    let pos = (write & (geometry.page_size as u64 - 1)) as usize;
    let seq = write >> geometry.page_shift();
    let lap = Slot::unpack(slots[(seq % n as u64) as usize].load(Ordering::Relaxed)).gen;
    let open_ok = if pos == 0 {
        lap == gen_of(seq, n) || lap == gen_of(seq, n).wrapping_sub(1)
    } else {
        lap == gen_of(seq, n) && pos >= PAGE_HEADER
    };
    if !open_ok {
        return Err(format!(
            "the write offset {write} (page {seq}, byte {pos}) does not agree with its slot, at lap {lap}"
        ));
    }
    Ok(in_slots)
}

/// A buffer over `memory` as the file left it, or what is wrong with
/// its control words (which no checksum covers). Repairs, in order:
///
/// - The page the dead reader held out of the ring: its unread events
///   are counted lost, and it becomes a spare.
/// - An overrun claim cut short between its two counts: the counts are
///   made equal, or every reader would wait for it.
/// - A claim whose claimer died before zeroing its page (OPENING
///   without ZEROED, which would refuse every writer for good; only a
///   ring without a pool of zeroed pages claims so): done here, the
///   claimer being gone.
/// - A pool of zeroed pages is taken afresh from the pages in no slot,
///   and zeroed: a claimer that died holding one left it anywhere.
/// - Every page of the ring window that is not complete (`repair_page`):
///   reservations that never committed become discard records, one
///   written whole whose commit never landed is counted (a hit), and
///   what follows a header never written is covered by one discard and
///   its committed events counted lost. The pages are then whole, each
///   counting the events it holds, and the open page can be written on.
pub(crate) fn adopt(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Result<Fresh, String> {
    let n = geometry.pages_per_cpu;
    let physical = geometry.physical_pages();
    let CpuMemory {
        hot,
        rare,
        slots,
        commits,
        words,
        zero_on_claim,
    } = &memory;
    let zero_on_claim = *zero_on_claim;
    // Relaxed throughout: the buffer is not shared yet (the file's old
    // writer is gone, checked by the caller).
    let in_slots = check(slots, hot, &geometry)?;
    let (write, last_ts) = hot.state.load(Ordering::Relaxed);
    let pos = (write & (geometry.page_size as u64 - 1)) as usize;
    let seq = write >> geometry.page_shift();
    // The open-page cache may name a page from before a swap: empty it.
    hot.open_page.store(u64::MAX, Ordering::Relaxed);
    let reader_page = rare.reader_page.swap(0, Ordering::Relaxed);
    if reader_page != 0 {
        let phys = (reader_page & 0xFFFF_FFFF).wrapping_sub(1) as usize;
        if let Some(commit) = commits.get(phys) {
            let events = Commit::unpack(commit.word.load(Ordering::Relaxed)).events;
            let unread = events.saturating_sub((reader_page >> 32) as u32);
            RareCounters::bump(&rare.lost, u64::from(unread));
        }
    }
    let started = rare.overrun_claims_started.load(Ordering::Relaxed);
    rare.overrun_claims_done.store(started, Ordering::Relaxed);
    let mut free: Vec<usize> = (0..physical).rev().filter(|&p| !in_slots[p]).collect();
    // The pool of zeroed pages is the process's, not the file's: take
    // it afresh from the pages in no slot (the highest, which the
    // reader would use last), zeroing what the last run left in them.
    let pooled = if zero_on_claim {
        crate::page::zero_pool::pool_pages(geometry.quarantine_pages)
            .min(free.len().saturating_sub(2))
    } else {
        0
    };
    let pool: Vec<usize> = free.drain(..pooled).collect();
    for &phys in &pool {
        words.zero_page(phys);
    }
    let buffer = SharedState::assemble(
        cpu,
        geometry,
        memory,
        crate::page::zero_pool::ZeroPool::new(pool),
    );
    for index in 0..n {
        let slot_word = &buffer.slots()[index];
        let slot = Slot::unpack(slot_word.load(Ordering::Relaxed));
        let commit = Commit::unpack(buffer.commit_word(slot.phys).load(Ordering::Relaxed));
        if !commit.opening || commit.zeroed || !zero_on_claim {
            continue;
        }
        let want = if commit.tag == tag_of(slot.gen.wrapping_add(1)) {
            slot.gen.wrapping_add(1)
        } else if commit.tag == tag_of(slot.gen) {
            slot.gen
        } else {
            continue;
        };
        buffer.zero_claimed(slot_word, want, commit, slot.phys);
    }
    let tail = buffer.tail_seq(write);
    for page in tail.saturating_sub(n as u64 - 1)..=tail {
        let slot = Slot::unpack(buffer.slot_of(page).load(Ordering::Relaxed));
        let commit = Commit::unpack(buffer.commit_word(slot.phys).load(Ordering::Relaxed));
        let complete = commit.bytes == geometry.page_size;
        if slot.gen != gen_of(page, n)
            || commit.opening
            || complete
            || commit.tag != tag_of(slot.gen)
        {
            continue;
        }
        let end = if page == seq && pos != 0 {
            pos
        } else {
            geometry.page_size
        };
        repair_page(&buffer, slot.phys, page, end, commit, last_ts)?;
    }
    Ok(Fresh {
        state: buffer,
        reader_pages: free,
    })
}

/// Makes page `phys` (virtual page `seq`, reserved up to byte `end`)
/// whole, as its commit word `commit` says it is not; see `adopt`.
fn repair_page(
    s: &SharedState,
    phys: usize,
    seq: u64,
    end: usize,
    commit: Commit,
    base_ts: u64,
) -> Result<(), String> {
    let mut bytes = Vec::new();
    s.words().read_into(phys, 0, s.page_size(), &mut bytes);
    let (hole, found) = if commit.header {
        let walked = walk(
            &bytes,
            u64::from_le_bytes(bytes[0..8].try_into().unwrap_or_default()),
        );
        for &(at, size, head) in &walked.pending_at {
            // A reservation that never ended ends now, as a discard
            // keeping its delta (as Reservation's drop does).
            s.words().store(phys, at + 4, size as u32);
            s.words().store(
                phys,
                at,
                format::TYPE_DISCARD | (head & !format::PENDING & !31),
            );
            RareCounters::bump(&s.hot().hit, 1);
            RareCounters::bump(&s.rare().discarded, 1);
        }
        let hole = walked
            .unwritten_at
            .or(walked.corrupt_at)
            .filter(|&at| at < end);
        (hole, walked.events.len() as u32)
    } else {
        // The writer that opened the page died before writing its
        // header: nothing in it can be timed.
        s.words().store_page_header(phys, seq, base_ts);
        (Some(PAGE_HEADER).filter(|&at| at < end), 0)
    };
    if let Some(at) = hole {
        let size = end - at;
        if end == s.page_size() {
            // A closed page: its tail is padding (a writer that died
            // before padding it leaves a hole of any size, even 4).
            s.words()
                .store(phys, at, format::record_header(format::TYPE_PADDING, 0));
        } else if size >= 8 {
            // The open page: writers go on after the hole, so a walk
            // must step over it.
            s.words().store(phys, at + 4, size as u32);
            s.words()
                .store(phys, at, format::record_header(format::TYPE_DISCARD, 0));
        } else {
            return Err(format!(
                "page {seq} has {size} bytes after a hole at byte {at}, too few for a record"
            ));
        }
    }
    // The page now counts what it holds: the events before any hole
    // (`found`), a record written whole whose commit never landed (the
    // writer died between its last store and its commit) among them,
    // ended now and counted a hit, as a recovery returns it; committed
    // events past a hole, which nothing can reach, counted lost. Then
    // `hit - lost` grows by `found - events` either way, and the page's
    // count agrees with its records for every reader and recovery.
    RareCounters::bump(
        &s.rare().lost,
        u64::from(commit.events.saturating_sub(found)),
    );
    RareCounters::bump(&s.hot().hit, u64::from(found.saturating_sub(commit.events)));
    let events = found;
    let whole = Commit {
        bytes: end,
        events,
        header: true,
        ..commit
    };
    s.commit_line(phys)
        .word
        .store(whole.pack(), Ordering::Relaxed);
    Ok(())
}
