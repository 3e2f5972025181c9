//! Taking over a ring file whose writer is gone (`append`): the ring goes
//! on from where the file's control words say it was, after the repairs
//! a writer that died mid-operation needs.

use crate::config::Geometry;
use crate::cpu_buffer::CpuBuffer;
use crate::memory::CpuMemory;
use crate::meta::{tag_of, Commit, Slot};
use crate::stats::RareCounters;
use crate::sync::Ordering;

impl CpuBuffer {
    /// A buffer over `memory` as the file left it. Repairs, in order:
    ///
    /// - The page the dead reader held out of the ring: its unread events
    ///   are counted lost, and it becomes a spare.
    /// - A claim whose claimer died before zeroing its page (OPENING
    ///   without ZEROED, which would refuse every writer for good): done
    ///   here, the claimer being gone.
    /// - An overrun claim cut short between its two counts: the counts are
    ///   made equal, or every reader would wait for it.
    ///
    /// A reservation the dead writer never committed leaves its page
    /// incomplete; the reader's fixup takes such a page out and counts its
    /// events lost, as for a writer that dies in a live ring.
    pub(crate) fn adopt(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Self {
        let n = geometry.pages_per_cpu;
        let physical = geometry.physical_pages();
        let CpuMemory {
            hot,
            rare,
            slots,
            commits,
            words,
            zero_on_claim,
        } = memory;
        // Relaxed throughout: the buffer is not shared yet (the file's old
        // writer is gone, checked by the caller).
        let mut in_slots = vec![false; physical];
        for slot in slots.iter() {
            let s = Slot::unpack(slot.load(Ordering::Relaxed));
            if let Some(used) = in_slots.get_mut(s.phys) {
                *used = true;
            }
        }
        let reader_page = rare.reader_page.swap(0, Ordering::Relaxed);
        if reader_page != 0 {
            let phys = (reader_page & 0xFFFF_FFFF).wrapping_sub(1) as usize;
            if let Some(commit) = commits.get(phys) {
                let events = Commit::unpack(commit.load(Ordering::Relaxed)).events;
                let unread = events.saturating_sub((reader_page >> 32) as u32);
                RareCounters::bump(&rare.lost, u64::from(unread));
            }
        }
        let started = rare.overrun_claims_started.load(Ordering::Relaxed);
        rare.overrun_claims_done.store(started, Ordering::Relaxed);
        let free = (0..physical).rev().filter(|&p| !in_slots[p]).collect();
        let _ = n;
        let buffer = CpuBuffer {
            cpu,
            geometry,
            hot,
            slots,
            commits,
            words,
            rare,
            reader: crate::sync::Mutex::new(crate::reader::ReaderState::new(free)),
            zero_on_claim,
        };
        for index in 0..buffer.slots.len() {
            let slot_word = &buffer.slots[index];
            let slot = Slot::unpack(slot_word.load(Ordering::Relaxed));
            let Some(commit_word) = buffer.commits.get(slot.phys) else {
                continue;
            };
            let commit = Commit::unpack(commit_word.load(Ordering::Relaxed));
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
        buffer
    }
}
