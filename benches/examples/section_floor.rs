//! The floor of any two-section rseq writer on this host: what one event
//! costs, in bare-rdtsc units, when reserve and commit are each one
//! restartable sequence and nothing else is done that a ring must do
//! (no buffer lookup, no path check, no `Reservation`, no general loop:
//! one page's words and commit line reached by direct pointers).
//!
//! `cargo run --release -p ringtrace-benches --example section_floor`
//!
//! The ring's rseq path makes the same two sections (reserve: compare the
//! `(write, last_ts)` guess and store the new pair; commit: add to the
//! page's commit word and hits in one 16-byte store), so the gap between
//! this and `write_pair rseq` is what the ring's own bookkeeping costs,
//! and this figure is what no ring with a reserve and a commit section
//! can beat here. x86_64 Linux with glibc 2.35+ only; elsewhere it says so.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod floor {
    use core::arch::asm;
    use core::arch::x86_64::{__m128i, _mm_set_epi64x, _rdtsc};
    use std::cell::UnsafeCell;
    use std::hint::black_box;
    use std::time::Instant;

    /// One page of 4096 bytes, its commit line and the writer's state.
    #[repr(C, align(64))]
    struct Writer {
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
    }

    /// The sections store it.
    #[repr(C, align(16))]
    struct Line(UnsafeCell<[u64; 2]>);

    /// Reserve: compare the guess and store the new pair, as a section.
    /// True if it committed.
    #[inline(always)]
    unsafe fn reserve_section(w: &Writer, guess: (u64, u64), new: __m128i) -> bool {
        let ok: u32;
        // SAFETY: the caller's: `w` lives, its state is 16-aligned, and the
        // rseq offset is glibc's; the section stores only the state.
        unsafe {
            asm!(
                ".pushsection __rseq_cs, \"aw\"", ".balign 32", "3:",
                ".long 0, 0", ".quad 4f, (5f - 4f), 6f", ".popsection",
                "lea {t}, [rip + 3b]",
                "mov qword ptr fs:[{off} + 8], {t}",
                "4:",
                "mov {t:e}, dword ptr fs:[{off} + 4]",
                "cmp {t}, qword ptr [{gate}]",
                "jne 7f",
                "cmp qword ptr [{state}], {lo}",
                "jne 7f",
                "cmp qword ptr [{state} + 8], {hi}",
                "jne 7f",
                "movdqa xmmword ptr [{state}], {new}",
                "5:",
                "mov {ok:e}, 1",
                "jmp 8f",
                ".pushsection __rseq_failure, \"ax\"", ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053", "6:", "jmp 7f", ".popsection",
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
    unsafe fn commit_section(w: &Writer, add: __m128i) {
        // SAFETY: as in reserve_section; the section stores only the line.
        unsafe {
            asm!(
                ".pushsection __rseq_cs, \"aw\"", ".balign 32", "3:",
                ".long 0, 0", ".quad 4f, (5f - 4f), 6f", ".popsection",
                "lea {t}, [rip + 3b]",
                "mov qword ptr fs:[{off} + 8], {t}",
                "4:",
                "mov {t:e}, dword ptr fs:[{off} + 4]",
                "cmp {t}, qword ptr [{gate}]",
                "jne 7f",
                "bt qword ptr [{line}], 41",
                "jc 7f",
                "movdqa {x}, xmmword ptr [{line}]",
                "paddq {x}, {add}",
                "movdqa xmmword ptr [{line}], {x}",
                "5:",
                ".pushsection __rseq_failure, \"ax\"", ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053", "6:", "jmp 7f", ".popsection",
                "7:",
                off = in(reg) w.rseq_offset,
                gate = in(reg) &w.gate,
                line = in(reg) w.commit.0.get(),
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
    #[inline(never)]
    fn write16(w: &mut Writer, payload: &[u8; 16]) -> bool {
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

    fn rseq_offset() -> Option<isize> {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the
        // symbol, where glibc has it, is a const isize.
        unsafe {
            let p = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
            (!p.is_null()).then(|| *(p as *const isize))
        }
    }

    pub fn main() {
        let cpu = ringtrace_ring::cpu::current_cpu();
        let pinned = ringtrace_benches::pin(cpu);
        let (Some(rseq_offset), true) = (rseq_offset(), pinned) else {
            println!("section_floor: needs glibc's rseq registration and a pinned thread");
            return;
        };
        let mut w = Writer {
            state: UnsafeCell::new([16, 0]),
            gate: cpu as u64,
            rseq_offset,
            words: vec![0; 1024],
            commit: Box::new(Line(UnsafeCell::new([0, 0]))),
        };
        let payload = [0xA5u8; 16];
        let n = 50_000u32;
        let mut ratios = Vec::new();
        for _ in 0..151 {
            let t = Instant::now();
            for _ in 0..n {
                // SAFETY: as above.
                black_box(unsafe { _rdtsc() });
            }
            let bare = t.elapsed().as_nanos() as f64;
            let t = Instant::now();
            for _ in 0..n {
                if !write16(&mut w, black_box(&payload)) {
                    // SAFETY: as above.
                    *w.state.get_mut() = [16, unsafe { _rdtsc() }];
                }
            }
            ratios.push(t.elapsed().as_nanos() as f64 / bare);
        }
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q) as usize];
        println!(
            "two-section floor: times a bare rdtsc p10 {:.2} p50 {:.2} p90 {:.2}",
            at(0.1),
            at(0.5),
            at(0.9)
        );
    }
}

fn main() {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    floor::main();
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    println!("section_floor: x86_64 Linux only");
}
