//! The floor of any two-section rseq writer on this host: what one event
//! costs when reserve and commit are each one restartable sequence and
//! nothing else is done that a ring must do (no buffer lookup, no path
//! check, no `Reservation`, no general loop: one page's words and commit
//! line reached by direct pointers).
//!
//! The ring's rseq path makes the same two sections (reserve: compare the
//! `(write, last_ts)` guess and store the new pair; commit: add to the
//! page's commit word and hits in one 16-byte store), so the gap between
//! this and the ring is what the ring's own bookkeeping costs, and this
//! figure is what no ring with a reserve and a commit section can beat
//! here. `ring_ratio` times it beside the ring; `cargo run --release -p
//! ringtrace-benches --example section_floor` alone.
//!
//! [`SectionFloor::record_16b_one_section`] is the same event made by
//! one section instead of two: the record, the commit line and the state
//! all stored inside the reserve section, the state last. It is not a
//! protocol a ring could use (an abort between its last two stores would
//! leave the commit line counting an event the state never reserved, and
//! nothing tells the abort handler which side of that instruction it was
//! stopped on: see docs/design.md, "Cost, and what is left"); it is what
//! dropping the second section could save at most.

use core::arch::asm;
use core::arch::x86_64::{__m128i, _mm_set_epi64x, _rdtsc};
use std::cell::UnsafeCell;

/// One page of 4096 bytes, its commit line and the writer's state.
#[repr(C, align(64))]
pub struct SectionFloor {
    /// (write offset, last timestamp), 16-aligned; the reserve section
    /// stores it.
    state: UnsafeCell<[u64; 2]>,
    /// Its CPU: what the reserve and commit sections check `cpu_id`
    /// against (the ring's gate word).
    gate: u64,
    rseq_offset: isize,
    words: Vec<u32>,
    /// (commit word, hits), 16-aligned.
    commit: Box<Line>,
    /// For [`SectionFloor::record_16b_lookup`]: the open page as the
    /// ring's fast line has it, (first virtual byte, physical page), read
    /// in one 16-byte load; always (0, 0) here, one page.
    open: Line,
    /// Read from memory, as the ring's is.
    page_size: u64,
}

/// The sections store it.
#[repr(C, align(16))]
struct Line(UnsafeCell<[u64; 2]>);

/// A section's start, as the ring's (`rseq::section`): its descriptor
/// (start 4, commit before 5, abort 6) in `__rseq_cs`, stored into the
/// thread's rseq area, then `cpu_id` against the gate, leaving to 7.
macro_rules! section_start {
    () => {
        concat!(
            ".pushsection __rseq_cs, \"aw\"\n.balign 32\n3:\n",
            ".long 0, 0\n.quad 4f, (5f - 4f), 6f\n.popsection\n",
            "lea {t}, [rip + 3b]\n",
            "mov qword ptr fs:[{off} + 8], {t}\n",
            "4:\n",
            "mov {t:e}, dword ptr fs:[{off} + 4]\n",
            "cmp {t}, qword ptr [{gate}]\n",
            "jne 7f",
        )
    };
}

/// The abort handler (label 6) behind glibc's signature: leave to 7.
macro_rules! abort_to_7 {
    () => {
        concat!(
            ".pushsection __rseq_failure, \"ax\"\n",
            ".byte 0x0f, 0xb9, 0x3d\n.long 0x53053053\n",
            "6:\njmp 7f\n.popsection",
        )
    };
}

/// Reserve: compare the guess and store the new pair, as a section.
/// True if it committed.
#[inline(always)]
unsafe fn reserve_section(w: &SectionFloor, guess: (u64, u64), new: __m128i) -> bool {
    let ok: u32;
    // SAFETY: the caller's: `w` lives, its state is 16-aligned, and the
    // rseq offset is glibc's; the section stores only the state.
    unsafe {
        asm!(
            section_start!(),
            "cmp qword ptr [{state}], {lo}",
            "jne 7f",
            "cmp qword ptr [{state} + 8], {hi}",
            "jne 7f",
            "movdqa xmmword ptr [{state}], {new}",
            "5:",
            "mov {ok:e}, 1",
            "jmp 8f",
            abort_to_7!(),
            "7:",
            "xor {ok:e}, {ok:e}",
            "8:",
            off = in(reg) w.rseq_offset,
            gate = in(reg) &w.gate,
            state = in(reg) w.state.get(),
            lo = in(reg) guess.0,
            hi = in(reg) guess.1,
            new = in(xmm_reg) new,
            t = out(reg) _,
            ok = out(reg) ok,
        );
    }
    ok != 0
}

/// Commit: add `add` to the commit line (word and hits) unless
/// RECLAIMED, as a section. An abort or a refusal leaves it undone,
/// which this measurement does not mind.
#[inline(always)]
unsafe fn commit_section(w: &SectionFloor, add: __m128i) {
    // SAFETY: the caller's.
    unsafe { commit_section_at(w, w.commit.0.get(), add) }
}

/// [`commit_section`] on the line at `line`.
#[inline(always)]
unsafe fn commit_section_at(w: &SectionFloor, line: *mut [u64; 2], add: __m128i) {
    // SAFETY: as in reserve_section; the section stores only the line.
    unsafe {
        asm!(
            section_start!(),
            "bt qword ptr [{line}], 41",
            "jc 7f",
            "movdqa {x}, xmmword ptr [{line}]",
            "paddq {x}, {add}",
            "movdqa xmmword ptr [{line}], {x}",
            "5:",
            abort_to_7!(),
            "7:",
            off = in(reg) w.rseq_offset,
            gate = in(reg) &w.gate,
            line = in(reg) line,
            add = in(xmm_reg) add,
            t = out(reg) _,
            x = out(xmm_reg) _,
        );
    }
}

/// One event: guess, rdtsc, the fit and delta checks, the reserve
/// section, the PENDING header, 16 payload bytes, the header, the
/// commit section. False when the page is full or a section did not
/// commit (the caller starts the page again).
fn write16(w: &mut SectionFloor, payload: &[u8; 16]) -> bool {
    // SAFETY: only this thread touches the state.
    let [write, last] = unsafe { *w.state.get() };
    // SAFETY: rdtsc exists on every x86_64 CPU.
    let now = unsafe { _rdtsc() };
    let pos = write & 4095;
    let (delta, behind) = now.overflowing_sub(last);
    if pos == 0 || pos + 20 > 4096 || behind || delta > 0x3FF_FFFF {
        return false;
    }
    // SAFETY: SSE2 is on every x86_64 CPU.
    let new = unsafe { _mm_set_epi64x(now as i64, (write + 20) as i64) };
    // SAFETY: `w` is live and laid out as the sections need.
    if !unsafe { reserve_section(w, (write, last), new) } {
        return false;
    }
    let at = pos as usize / 4;
    let header = ((delta as u32) << 5) | 4;
    let record = &mut w.words[at..at + 5];
    record[0] = header | 0x8000_0000;
    for (word, bytes) in record[1..].iter_mut().zip(payload.chunks_exact(4)) {
        *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    record[0] = header;
    // SAFETY: as above.
    unsafe { commit_section(w, _mm_set_epi64x(1, 20 + (1 << 24))) };
    true
}

/// [`write16`] with the ring's open-page lookup added: the page from a
/// 16-byte `(first, phys)` entry, the fit checked as `0 < write - first`
/// and `write - first + size <= page_size` (from memory), the record at
/// `words + phys * page_size + (write - first)` and the commit line at
/// `commit + phys * 128`, as `CpuBuffer::write_whole` does. What any
/// writer that must find the open page this way costs at least.
fn write16_lookup(w: &mut SectionFloor, payload: &[u8; 16]) -> bool {
    use core::arch::x86_64::{_mm_cvtsi128_si64, _mm_load_si128, _mm_unpackhi_epi64};
    // SAFETY: only this thread touches the state.
    let [write, last] = unsafe { *w.state.get() };
    // SAFETY: rdtsc exists on every x86_64 CPU.
    let now = unsafe { _rdtsc() };
    // SAFETY: `open` is 16-aligned (Line's repr) and live; SSE2.
    let (first, phys) = unsafe {
        let v = _mm_load_si128(w.open.0.get().cast());
        (
            _mm_cvtsi128_si64(v) as u64,
            _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v)) as u64,
        )
    };
    let rel = write.wrapping_sub(first);
    let (delta, behind) = now.overflowing_sub(last);
    if rel == 0 || rel.wrapping_add(20) > w.page_size || behind || delta > 0x3FF_FFFF {
        return false;
    }
    // SAFETY: SSE2 is on every x86_64 CPU.
    let new = unsafe { _mm_set_epi64x(now as i64, (write + 20) as i64) };
    // SAFETY: `w` is live and laid out as the sections need.
    if !unsafe { reserve_section(w, (write, last), new) } {
        return false;
    }
    let at = ((phys * w.page_size + rel) / 4) as usize;
    let header = ((delta as u32) << 5) | 4;
    let record = &mut w.words[at..at + 5];
    record[0] = header | 0x8000_0000;
    for (word, bytes) in record[1..].iter_mut().zip(payload.chunks_exact(4)) {
        *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    record[0] = header;
    // One page, so phys is 0: the line is `commit`, reached as the ring
    // reaches a page's.
    let line = w.commit.0.get().wrapping_byte_add((phys << 7) as usize);
    // SAFETY: as above; `line` is `commit`.
    unsafe { commit_section_at(w, line, _mm_set_epi64x(1, 20 + (1 << 24))) };
    true
}

fn rseq_offset() -> Option<isize> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the
    // symbol, where glibc has it, is a const isize.
    unsafe {
        let p = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        (!p.is_null()).then(|| *(p as *const isize))
    }
}

impl SectionFloor {
    /// A writer pinned to the caller's CPU (which the caller keeps it
    /// on), or `None` without glibc's rseq registration.
    pub fn new(cpu: usize) -> Option<Self> {
        Some(SectionFloor {
            state: UnsafeCell::new([16, 0]),
            gate: cpu as u64,
            rseq_offset: rseq_offset()?,
            words: vec![0; 1024],
            commit: Box::new(Line(UnsafeCell::new([0, 0]))),
            open: Line(UnsafeCell::new([0, 0])),
            page_size: 4096,
        })
    }

    /// One event of 16 bytes; a full page (or a section that did not
    /// commit: an abort, a migration) starts the page again.
    #[inline(never)]
    pub fn record_16b(&mut self, payload: &[u8; 16]) {
        if !write16(self, payload) {
            // SAFETY: rdtsc exists on every x86_64 CPU.
            *self.state.get_mut() = [16, unsafe { _rdtsc() }];
            // The page's commit word counts from zero again, as a claim
            // makes it (its event count would reach RECLAIMED's bit in
            // 2^17 events, and every commit would then be refused); the
            // hits go on.
            self.commit.0.get_mut()[0] = 0;
        }
    }
}

impl SectionFloor {
    /// [`record_16b`](Self::record_16b) with the ring's open-page lookup
    /// (see `write16_lookup`).
    #[inline(never)]
    pub fn record_16b_lookup(&mut self, payload: &[u8; 16]) {
        if !write16_lookup(self, payload) {
            // SAFETY: rdtsc exists on every x86_64 CPU.
            *self.state.get_mut() = [16, unsafe { _rdtsc() }];
            self.commit.0.get_mut()[0] = 0;
        }
    }
}

/// The whole event inside one section: the cpu check, the guess
/// compared, the record (header and 16 payload bytes), the commit line
/// and then the state stored; true if it committed. (Not a protocol: see
/// the module's docs.)
#[inline(always)]
unsafe fn one_section(
    w: &SectionFloor,
    guess: (u64, u64),
    new: __m128i,
    record: *mut u32,
    header: u32,
    payload: __m128i,
    add: __m128i,
) -> bool {
    let ok: u32;
    // SAFETY: as in reserve_section; the section stores the record (the
    // floor's own page), the commit line and the state.
    unsafe {
        asm!(
            section_start!(),
            "cmp qword ptr [{state}], {lo}",
            "jne 7f",
            "cmp qword ptr [{state} + 8], {hi}",
            "jne 7f",
            "bt qword ptr [{line}], 41",
            "jc 7f",
            "movdqa {x}, xmmword ptr [{line}]",
            "paddq {x}, {add}",
            "mov dword ptr [{rec}], {hdr:e}",
            "movups xmmword ptr [{rec} + 4], {pl}",
            "movdqa xmmword ptr [{line}], {x}",
            "movdqa xmmword ptr [{state}], {new}",
            "5:",
            "mov {ok:e}, 1",
            "jmp 8f",
            abort_to_7!(),
            "7:",
            "xor {ok:e}, {ok:e}",
            "8:",
            off = in(reg) w.rseq_offset,
            gate = in(reg) &w.gate,
            state = in(reg) w.state.get(),
            lo = in(reg) guess.0,
            hi = in(reg) guess.1,
            new = in(xmm_reg) new,
            line = in(reg) w.commit.0.get(),
            add = in(xmm_reg) add,
            rec = in(reg) record,
            hdr = in(reg) header,
            pl = in(xmm_reg) payload,
            x = out(xmm_reg) _,
            t = out(reg) _,
            ok = out(reg) ok,
        );
    }
    ok != 0
}

/// [`write16`] as one section (see `one_section`).
fn write16_one_section(w: &mut SectionFloor, payload: &[u8; 16]) -> bool {
    use core::arch::x86_64::_mm_loadu_si128;
    // SAFETY: only this thread touches the state.
    let [write, last] = unsafe { *w.state.get() };
    // SAFETY: rdtsc exists on every x86_64 CPU.
    let now = unsafe { _rdtsc() };
    let pos = write & 4095;
    let (delta, behind) = now.overflowing_sub(last);
    if pos == 0 || pos + 20 > 4096 || behind || delta > 0x3FF_FFFF {
        return false;
    }
    // SAFETY: SSE2 is on every x86_64 CPU; `payload` is 16 bytes.
    let (new, bytes) = unsafe {
        (
            _mm_set_epi64x(now as i64, (write + 20) as i64),
            _mm_loadu_si128(payload.as_ptr().cast()),
        )
    };
    let header = ((delta as u32) << 5) | 4;
    // `pos + 20 <= 4096`: the record's 20 bytes are inside the page.
    let record = w.words[pos as usize / 4..].as_mut_ptr();
    // SAFETY: `w` is live and laid out as the section needs.
    unsafe {
        one_section(
            w,
            (write, last),
            new,
            record,
            header,
            bytes,
            _mm_set_epi64x(1, 20 + (1 << 24)),
        )
    }
}

impl SectionFloor {
    /// [`record_16b`](Self::record_16b) made by one section instead of
    /// two (see the module's docs: a cost, not a protocol).
    #[inline(never)]
    pub fn record_16b_one_section(&mut self, payload: &[u8; 16]) {
        if !write16_one_section(self, payload) {
            // SAFETY: rdtsc exists on every x86_64 CPU.
            *self.state.get_mut() = [16, unsafe { _rdtsc() }];
            self.commit.0.get_mut()[0] = 0;
        }
    }
}

impl SectionFloor {
    /// Events the commit section counted: what tells a measurement that
    /// its sections committed rather than failed cheaply.
    pub fn hits(&self) -> u64 {
        // SAFETY: only the owning thread writes the line, and `&self`
        // means it is not writing now.
        unsafe { (*self.commit.0.get())[1] }
    }
}

#[cfg(test)]
mod tests {
    use super::SectionFloor;

    #[test]
    fn the_floor_writer_commits_its_events() {
        let cpu = ringtrace_ring::cpu::current_cpu();
        if !crate::pin(cpu) {
            return;
        }
        let Some(mut floor) = SectionFloor::new(cpu) else {
            eprintln!("skipped: no rseq registration");
            return;
        };
        // Past 2^17 events, where a commit word never reset would have
        // its event count reach the RECLAIMED bit.
        let events = 300_000;
        for i in 0..events {
            match i % 3 {
                0 => floor.record_16b(&[7; 16]),
                1 => floor.record_16b_lookup(&[7; 16]),
                _ => floor.record_16b_one_section(&[7; 16]),
            }
        }
        // A full page (every 204 events) starts again, losing that event;
        // an abort loses one too.
        assert!(
            floor.hits() >= events * 9 / 10,
            "{} of {events}",
            floor.hits()
        );
    }
}
