//! The conversion data of the `sched` sources, per thread: its live words,
//! its latched copies, the history the checker reads, the update that
//! rewrites it, and the record of the thread's last reading.
//!
//! The model follows x86 `sched_clock()` as the trace_clock_local patch found it
//! (v2.6.32, November 2009):
//!
//! - arch/x86/include/asm/timer.h, `__cycles_2_ns()`:
//!   `ns = per_cpu(cyc2ns_offset, cpu); ns += cyc * per_cpu(cyc2ns, cpu) >> CYC2NS_SCALE_FACTOR;`
//!   two per-CPU words, the offset loaded first, the scale second.
//! - arch/x86/kernel/tsc.c, `set_cyc2ns_scale()`: under
//!   `local_irq_save()`, `rdtscll(tsc_now); ns_now = __cycles_2_ns(tsc_now);`
//!   then `*scale = ...;` and `*offset = ns_now - (tsc_now * *scale >> CYC2NS_SCALE_FACTOR);`:
//!   the scale stored first, the offset second, chosen so the clock is
//!   continuous at `tsc_now`.
//! - Its callers: `tsc_init()` at boot, and `time_cpufreq_notifier()` on a
//!   frequency change, a notifier `cpufreq_tsc()` does not even register
//!   on a CPU with a constant TSC. The timer tick never wrote the data.
//!
//! Here the scale has 32 fractional bits instead of 10 (a 128-bit product,
//! so the calibrated frequency converts exactly); that changes the
//! arithmetic after the loads, not the loads. The counter is the TSC from
//! its reset, as the kernel's was.

use crate::emulation::soft_irq;
use crate::source::Local;
use crate::{Clock, ClockError};
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Fixed-point shift of `mult`.
pub(crate) const SHIFT: u32 = 32;
/// Generations of the data kept for the checker: enough that a reading
/// checked a few hundred microseconds late under a 20 kHz update still
/// finds the generation it used.
pub(crate) const HISTORY: usize = 64;

/// What every thread's data starts from: the counter and its conversion.
#[derive(Debug)]
pub(crate) struct Base {
    pub(crate) counter: Local,
    /// The counter is the TSC, so the x86_64 reads can issue `rdtsc`
    /// themselves and fix the window in machine code (read on x86_64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) is_tsc: bool,
    /// ns per cycle, `SHIFT` fractional bits.
    pub(crate) mult: u64,
}

/// The process-wide base, or why the `sched` sources cannot work here.
pub(crate) fn base(name: &'static str) -> Result<&'static Base, ClockError> {
    static BASE: OnceLock<Result<Base, String>> = OnceLock::new();
    BASE.get_or_init(|| {
        let counter = Local::new().map_err(|e| e.to_string())?;
        let hz = counter
            .info()
            .frequency_hz
            .ok_or("the local counter has no known frequency")?;
        let mult = ((1_000_000_000u128 << SHIFT) / u128::from(hz)) as u64;
        if mult == 0 || mult >> 60 != 0 {
            return Err(format!("the local counter's {hz} Hz is out of range"));
        }
        Ok(Base {
            is_tsc: counter.backing() == "tsc",
            counter,
            mult,
        })
    })
    .as_ref()
    .map_err(|reason| ClockError::Unavailable {
        source_name: name,
        reason: reason.clone(),
    })
}

/// One generation of the conversion data: `cyc2ns_offset` and `cyc2ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Data {
    pub(crate) offset: u64,
    pub(crate) mult: u64,
}

impl Data {
    /// ns at `cycles`: `offset + cycles * mult >> SHIFT`, wrapping as the
    /// kernel's unsigned arithmetic does (an offset may be "negative").
    #[inline(always)]
    pub(crate) fn ns(self, cycles: u64) -> u64 {
        let scaled = (u128::from(cycles) * u128::from(self.mult)) >> SHIFT;
        self.offset.wrapping_add(scaled as u64)
    }
}

/// The two words, laid out as the x86_64 reads address them: `offset` at
/// byte 0, `mult` at byte 8.
///
/// Every access is Relaxed: only the owning thread and the signal
/// handlers that interrupt it touch the words, and a handler runs to
/// completion between two of the thread's instructions, so program order
/// (kept by compiler fences) is the only order there is.
#[repr(C)]
pub(crate) struct Words {
    pub(crate) offset: AtomicU64,
    pub(crate) mult: AtomicU64,
}

impl Words {
    const fn zero() -> Words {
        Words {
            offset: AtomicU64::new(0),
            mult: AtomicU64::new(0),
        }
    }

    /// Stores `d` as `set_cyc2ns_scale()` did: the scale, then the offset.
    #[inline(always)]
    pub(crate) fn store(&self, d: Data) {
        self.mult.store(d.mult, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        self.offset.store(d.offset, Ordering::Relaxed);
    }

    /// Loads as `__cycles_2_ns()` did: the offset, then the scale.
    #[inline(always)]
    pub(crate) fn load(&self) -> Data {
        let offset = self.offset.load(Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let mult = self.mult.load(Ordering::Relaxed);
        Data { offset, mult }
    }
}

/// The thread's last reading, written by every `sched` read: a sequence
/// count around two words, so a reader on the thread loads them as one
/// value (a handler that records a reading of its own moves the count).
struct ReadingRecord {
    seq: AtomicU64,
    cycles: AtomicU64,
    value: AtomicU64,
}

/// A thread's clock data: live words for the unlatched reads, a latched
/// pair of copies for `sched-latch`, the history the checker uses, and the
/// last reading. Relaxed throughout, for the reason [`Words`] gives.
pub(crate) struct ThreadData {
    /// 0 until the thread's data is set up.
    ready: AtomicU64,
    pub(crate) live: Words,
    pub(crate) latch_seq: AtomicU64,
    pub(crate) latch: [Words; 2],
    /// Updates applied so far; `history[g % HISTORY]` holds generation g.
    pub(crate) generation: AtomicU64,
    pub(crate) history: [Words; HISTORY],
    reading: ReadingRecord,
}

thread_local! {
    static DATA: ThreadData = const {
        ThreadData {
            ready: AtomicU64::new(0),
            live: Words::zero(),
            latch_seq: AtomicU64::new(0),
            latch: [Words::zero(), Words::zero()],
            generation: AtomicU64::new(0),
            history: [const { Words::zero() }; HISTORY],
            reading: ReadingRecord {
                seq: AtomicU64::new(0),
                cycles: AtomicU64::new(0),
                value: AtomicU64::new(0),
            },
        }
    };
}

/// Sets up the calling thread's data from the base, once (`tsc_init()`'s
/// `set_cyc2ns_scale()` for every CPU). Runs with the soft irq mask, so
/// the thread's own updates cannot interleave.
#[cold]
fn set_up(t: &ThreadData, b: &Base) {
    let flags = soft_irq::save();
    if t.ready.load(Ordering::Relaxed) == 0 {
        let d = Data {
            offset: 0,
            mult: b.mult,
        };
        t.live.store(d);
        t.latch[0].store(d);
        t.latch[1].store(d);
        t.history[0].store(d);
        t.generation.store(0, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        t.ready.store(1, Ordering::Relaxed);
    }
    soft_irq::restore(flags);
}

/// Runs `f` on the calling thread's data, set up first if need be.
#[inline(always)]
pub(crate) fn with_data<R>(b: &Base, f: impl FnOnce(&ThreadData) -> R) -> R {
    DATA.with(|t| {
        if t.ready.load(Ordering::Relaxed) == 0 {
            set_up(t, b);
        }
        f(t)
    })
}

impl ThreadData {
    /// Records a reading: the count made odd, the two words, the count
    /// made even again.
    #[inline(always)]
    pub(crate) fn record(&self, cycles: u64, value: u64) {
        let r = &self.reading;
        let seq = r.seq.load(Ordering::Relaxed);
        r.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        r.cycles.store(cycles, Ordering::Relaxed);
        r.value.store(value, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        r.seq.store(seq.wrapping_add(2), Ordering::Relaxed);
    }

    /// The three words of the record as they are, for [`SavedReading`].
    fn raw_record(&self) -> [u64; 3] {
        let r = &self.reading;
        [
            r.seq.load(Ordering::Relaxed),
            r.cycles.load(Ordering::Relaxed),
            r.value.load(Ordering::Relaxed),
        ]
    }

    fn restore_record(&self, words: [u64; 3]) {
        let r = &self.reading;
        r.cycles.store(words[1], Ordering::Relaxed);
        r.value.store(words[2], Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        r.seq.store(words[0], Ordering::Relaxed);
    }

    /// The last reading as one value: retried while a record is in
    /// progress or moved meanwhile (a few times at most: a handler that
    /// interrupted this thread's own record cannot wait for it).
    fn last_reading(&self) -> Reading {
        let r = &self.reading;
        let mut out = Reading {
            cycles: 0,
            value: 0,
        };
        for _ in 0..4 {
            let before = r.seq.load(Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            out.cycles = r.cycles.load(Ordering::Relaxed);
            out.value = r.value.load(Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if before % 2 == 0 && r.seq.load(Ordering::Relaxed) == before {
                break;
            }
        }
        out
    }
}

/// One reading of a `sched` source: the counter value it converted, and
/// the value it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The counter (TSC) value the reading converted.
    pub cycles: u64,
    /// The ns value it returned.
    pub value: u64,
}

/// The calling thread's last `sched`, `sched-wide` or `sched-latch`
/// reading, loaded as one value: what [`check_since`](super::check_since)
/// takes.
///
/// ```
/// use ringtrace_clock::{sched, Clock, Sched};
/// let value = Sched::new().unwrap().read();
/// assert_eq!(sched::last_reading().value, value);
/// ```
pub fn last_reading() -> Reading {
    DATA.with(|t| t.last_reading())
}

/// Keeps the interrupted code's reading record across a handler: saved
/// when made, put back when dropped. A handler that reads a `sched` clock
/// (one that writes an event, say) holds one, so the interrupted reader's
/// reference is never the handler's reading.
///
/// ```
/// use ringtrace_clock::{sched, Clock, Sched};
/// let clock = Sched::new().unwrap();
/// let mine = clock.read();
/// {
///     let _saved = sched::SavedReading::save();
///     clock.read(); // what a handler's own event would read
/// }
/// assert_eq!(sched::last_reading().value, mine);
/// ```
#[derive(Debug)]
#[must_use = "the record is put back when this is dropped"]
pub struct SavedReading {
    words: [u64; 3],
    /// The record is the saving thread's: not to be put back on another.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl SavedReading {
    /// Saves the calling thread's reading record.
    pub fn save() -> SavedReading {
        SavedReading {
            words: DATA.with(|t| t.raw_record()),
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for SavedReading {
    fn drop(&mut self) {
        DATA.with(|t| t.restore_record(self.words));
    }
}

/// The update of the calling thread's data, as `set_cyc2ns_scale()` made
/// it on a frequency change (see the module's sources): read the counter,
/// convert it with the current data, choose the new scale, and store the
/// scale and then an offset that keeps the clock continuous at that count.
/// Also stores the new generation in the history (first, so the checker
/// knows it before any reading can use it) and through the latch (the
/// copies `sched-latch` reads).
///
/// The new scale alternates 1/4096 above and below the calibrated one: a
/// frequency change whose correction keeps the clock within 0.03% of the
/// counter's time. Call it from an emulated interrupt (a handler installed
/// with [`install_irq_handler`](crate::emulation::interrupt::install_irq_handler)),
/// which runs with irqs masked as the kernel's caller did.
/// Async-signal-safe; a no-op where the `sched` sources cannot work.
pub fn update() {
    let Ok(b) = base("sched") else {
        return;
    };
    with_data(b, |t| {
        let now = b.counter.read();
        let ns_now = t.live.load().ns(now);
        let generation = t.generation.load(Ordering::Relaxed) + 1;
        let nudge = b.mult >> 12;
        let mult = if generation % 2 == 1 {
            b.mult + nudge
        } else {
            b.mult - nudge
        };
        let offset = ns_now.wrapping_sub(Data { offset: 0, mult }.ns(now));
        let next = Data { offset, mult };
        t.history[(generation % HISTORY as u64) as usize].store(next);
        compiler_fence(Ordering::SeqCst);
        t.generation.store(generation, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        t.live.store(next);
        // The latch (raw_write_seqcount_latch): odd sends readers to copy
        // 1 while copy 0 changes, even sends them back.
        let seq = t.latch_seq.load(Ordering::Relaxed);
        t.latch_seq.store(seq + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        t.latch[0].store(next);
        compiler_fence(Ordering::SeqCst);
        t.latch_seq.store(seq + 2, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        t.latch[1].store(next);
    });
}

/// Updates applied to the calling thread's data so far.
pub fn updates() -> u64 {
    DATA.with(|t| t.generation.load(Ordering::Relaxed))
}
