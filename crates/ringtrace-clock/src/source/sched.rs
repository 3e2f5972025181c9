//! `sched` and `sched-latch`: x86 `sched_clock()` as it was when
//! trace_clock_local stopped disabling interrupts (2009), and as the kernel
//! later fixed it.
//!
//! `sched_clock()` turned TSC cycles into nanoseconds with per-CPU
//! conversion data (`cyc2ns`) that the timer tick and frequency changes
//! rewrote with plain stores. Read with interrupts enabled, a tick landing
//! between the reader's loads of that data gave a value mixing two
//! generations of it: "if a timer interrupt comes in, sched_clock may report
//! a wrong time" (Peter Zijlstra, quoted in seed 004's patch). The kernel
//! later put the data behind a seqcount latch (`cyc2ns_read_begin()`), whose
//! readers retry.
//!
//! Here:
//!
//! ```text
//!   ns = offset + ((cycles - anchor) * mult) >> 32
//! ```
//!
//! with `{anchor, mult, offset}` per thread (the tick is a signal aimed at a
//! thread, as the kernel's lands on a CPU). [`tick`] is the timer interrupt's
//! work: it re-anchors the data at the current cycle count (so the clock is
//! continuous across the tick) and nudges `mult` by 1/4096, alternately up
//! and down, as frequency corrections did. It stores `mult`, `anchor` and
//! `offset` one by one. [`Sched`] reads `anchor`, `mult` and `offset` one by
//! one after the counter, with no latch: a tick between those loads gives a
//! value about one tick period ahead of time. [`SchedLatch`] reads a copy of
//! the same data behind a seqcount latch and never tears.
//!
//! Wrong readings are counted against an exact reference, [`check`]: the
//! values every consistent generation of the data gives for the same cycle
//! count. A reading outside that range mixed generations.
//!
//! ```
//! use ringtrace_clock::{Clock, Sched, SchedLatch};
//! let sched = Sched::new().unwrap();
//! let t0 = sched.read();
//! ringtrace_clock::sched::tick(); // what the timer interrupt does
//! let t1 = sched.read();
//! assert!(t1 >= t0);
//! let (cycles, value) = ringtrace_clock::sched::last_read();
//! assert_eq!(value, t1);
//! assert!(ringtrace_clock::sched::check(cycles, value).is_right());
//! assert!(SchedLatch::new().unwrap().read() > 0);
//! ```

use super::Local;
use crate::emulation::soft_irq;
use crate::{Clock, ClockError, ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Fixed-point shift of `mult`.
const SHIFT: u32 = 32;
/// Generations of the data kept for [`check`] and [`check_since`]: enough
/// that a reading checked a few hundred microseconds late under a 20 µs
/// tick still finds the generation it used.
const HISTORY: usize = 64;

/// What every thread's data starts from: the counter, its conversion, and
/// the cycle count at which the clock reads 0.
#[derive(Debug)]
struct Base {
    counter: Local,
    mult: u64,
    origin: u64,
}

fn base(name: &'static str) -> Result<&'static Base, ClockError> {
    static BASE: OnceLock<Result<Base, String>> = OnceLock::new();
    BASE.get_or_init(|| {
        let counter = Local::new().map_err(|e| e.to_string())?;
        let hz = counter
            .info()
            .frequency_hz
            .ok_or("the local counter has no known frequency")?;
        let mult = ((1_000_000_000u128 << SHIFT) / u128::from(hz)) as u64;
        if mult == 0 {
            return Err(format!("the local counter's {hz} Hz is out of range"));
        }
        let origin = counter.read();
        Ok(Base {
            counter,
            mult,
            origin,
        })
    })
    .as_ref()
    .map_err(|reason| ClockError::Unavailable {
        source_name: name,
        reason: reason.clone(),
    })
}

/// One generation of the conversion data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Data {
    anchor: u64,
    mult: u64,
    offset: u64,
}

impl Data {
    /// ns at `cycles`: signed, so a count from before the anchor (a tick
    /// after the counter was read) extrapolates back.
    #[inline(always)]
    fn ns(self, cycles: u64) -> u64 {
        let since = cycles.wrapping_sub(self.anchor) as i64;
        let scaled = (i128::from(since) * i128::from(self.mult)) >> SHIFT;
        self.offset.wrapping_add(scaled as u64)
    }
}

/// Three words written one by one, read one by one.
struct Words {
    anchor: AtomicU64,
    mult: AtomicU64,
    offset: AtomicU64,
}

impl Words {
    const fn zero() -> Words {
        Words {
            anchor: AtomicU64::new(0),
            mult: AtomicU64::new(0),
            offset: AtomicU64::new(0),
        }
    }

    /// Stores `d` word by word, `mult` first, as the tick did.
    #[inline(always)]
    fn store(&self, d: Data) {
        // Relaxed, with compiler barriers: only this thread and its signal
        // handlers touch the data, and a handler runs between two of this
        // thread's instructions, so program order is all there is to keep.
        self.mult.store(d.mult, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        self.anchor.store(d.anchor, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        self.offset.store(d.offset, Ordering::Relaxed);
    }

    /// Loads word by word, `anchor` first and `offset` last, as
    /// `__cycles_2_ns` used the conversion before adding the offset. A tick
    /// between two loads mixes generations.
    #[inline(always)]
    fn load(&self) -> Data {
        let anchor = self.anchor.load(Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let mult = self.mult.load(Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let offset = self.offset.load(Ordering::Relaxed);
        Data {
            anchor,
            mult,
            offset,
        }
    }
}

/// A thread's clock data: live words for [`Sched`], a latched pair of
/// copies for [`SchedLatch`], the history [`check`] uses, and the last
/// reading.
///
/// Every access is Relaxed, ordered by compiler fences where order
/// matters: only the owning thread and the signal handlers that interrupt
/// it touch the data, and a handler runs to completion between two of the
/// thread's instructions, so program order is the only order there is (the
/// emulation's rule, see `crate::emulation`).
struct ThreadData {
    /// 0 until the thread's data is set up (`mult` is never 0 after).
    ready: AtomicU64,
    live: Words,
    latch_seq: AtomicU64,
    latch: [Words; 2],
    /// Generations written so far; `history[g % HISTORY]` holds generation g.
    generation: AtomicU64,
    history: [Words; HISTORY],
    last_cycles: AtomicU64,
    last_value: AtomicU64,
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
            last_cycles: AtomicU64::new(0),
            last_value: AtomicU64::new(0),
        }
    };
}

/// Sets up the calling thread's data from the process-wide base, once.
/// Runs with the soft irq mask, so the thread's own tick cannot interleave.
#[cold]
fn set_up(t: &ThreadData, b: &Base) {
    let flags = soft_irq::save();
    if t.ready.load(Ordering::Relaxed) == 0 {
        let d = Data {
            anchor: b.origin,
            mult: b.mult,
            offset: 0,
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

#[inline(always)]
fn with_data<R>(b: &Base, f: impl FnOnce(&ThreadData) -> R) -> R {
    DATA.with(|t| {
        if t.ready.load(Ordering::Relaxed) == 0 {
            set_up(t, b);
        }
        f(t)
    })
}

/// The timer tick's work on the calling thread's clock data: re-anchor at
/// the current cycle count, nudge `mult`, store the words one by one (the
/// unlatched data) and through the latch (the latched copy). Call it from
/// the emulated timer interrupt (a handler installed with
/// [`install_irq_handler`](crate::emulation::interrupt::install_irq_handler)).
/// Async-signal-safe; a no-op where the `sched` sources cannot work.
pub fn tick() {
    let Ok(b) = base("sched") else {
        return;
    };
    with_data(b, |t| {
        let now = b.counter.read();
        let current = t.live.load();
        let generation = t.generation.load(Ordering::Relaxed) + 1;
        let nudge = b.mult >> 12;
        let mult = if generation % 2 == 1 {
            b.mult + nudge
        } else {
            b.mult - nudge
        };
        let next = Data {
            anchor: now,
            mult,
            offset: current.ns(now),
        };
        // History first, so that check() knows a generation before any
        // reading can use it.
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

/// Ticks applied to the calling thread's data so far.
pub fn ticks() -> u64 {
    DATA.with(|t| t.generation.load(Ordering::Relaxed))
}

/// The calling thread's last `sched` or `sched-latch` reading, as
/// (cycles, value): what [`check`] takes.
pub fn last_read() -> (u64, u64) {
    DATA.with(|t| {
        (
            t.last_cycles.load(Ordering::Relaxed),
            t.last_value.load(Ordering::Relaxed),
        )
    })
}

/// How a reading compares with the exact reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the values consistent data gives for its cycle count.
    Right,
    /// Later than any of them, by this many ns.
    Ahead(u64),
    /// Earlier than any of them, by this many ns.
    Behind(u64),
}

impl Verdict {
    /// Whether the reading was right.
    pub fn is_right(self) -> bool {
        self == Verdict::Right
    }
}

/// Checks `value`, read at `cycles` on the calling thread, against the
/// exact reference: what each generation of the thread's data still kept
/// (the last 64) gives for `cycles`, read with irqs masked so no tick
/// interleaves. Any consistent generation is right; a torn reading is off
/// by about a tick period. When more than a few ticks may have passed
/// since the read, prefer [`check_since`], which leaves out generations
/// older than the read (their extrapolation drifts by the mult nudge).
pub fn check(cycles: u64, value: u64) -> Verdict {
    let first = ticks().saturating_sub(HISTORY as u64 - 1);
    check_since(first, cycles, value).unwrap_or(Verdict::Right)
}

/// Checks `value`, read at `cycles` on the calling thread when the data's
/// generation was `first` (what [`ticks`] said just before the read),
/// against generations `first` to now: exactly the data the read could
/// have used. `None` when generation `first` has left the history (more
/// than 63 ticks since), so the reading cannot be checked.
///
/// ```
/// use ringtrace_clock::{sched, Clock, Sched};
/// let clock = Sched::new().unwrap();
/// let first = sched::ticks();
/// let value = clock.read();
/// let (cycles, _) = sched::last_read();
/// assert_eq!(sched::check_since(first, cycles, value), Some(sched::Verdict::Right));
/// ```
pub fn check_since(first: u64, cycles: u64, value: u64) -> Option<Verdict> {
    let Ok(b) = base("sched") else {
        return Some(Verdict::Right);
    };
    let flags = soft_irq::save();
    let range = with_data(b, |t| {
        let newest = t.generation.load(Ordering::Relaxed);
        if first > newest || newest - first >= HISTORY as u64 {
            return None;
        }
        Some(
            (first..=newest)
                .map(|g| t.history[(g % HISTORY as u64) as usize].load().ns(cycles))
                .fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v))),
        )
    });
    soft_irq::restore(flags);
    let (lo, hi) = range?;
    Some(if value > hi {
        Verdict::Ahead(value - hi)
    } else if value < lo {
        Verdict::Behind(lo - value)
    } else {
        Verdict::Right
    })
}

fn info(name: &str, guarantee: Guarantee) -> ClockInfo {
    ClockInfo {
        name: name.to_owned(),
        frequency_hz: Some(1_000_000_000),
        ticks_are_ns: true,
        guarantee,
        precision_ns: Some(1.0),
        conversion: Some(TickConversion::NANOSECONDS),
    }
}

/// `sched`: the unlatched `sched_clock()`; a tick mid-read tears it.
#[derive(Debug, Clone, Copy)]
pub struct Sched {
    base: &'static Base,
}

impl Sched {
    /// The `sched` source, on the local counter; fails where `local` has no
    /// known frequency.
    pub fn new() -> Result<Sched, ClockError> {
        Ok(Sched {
            base: base("sched")?,
        })
    }
}

impl Clock for Sched {
    #[inline]
    fn read(&self) -> u64 {
        let b = self.base;
        with_data(b, |t| {
            let cycles = b.counter.read();
            compiler_fence(Ordering::SeqCst);
            let value = t.live.load().ns(cycles);
            t.last_cycles.store(cycles, Ordering::Relaxed);
            t.last_value.store(value, Ordering::Relaxed);
            value
        })
    }

    fn info(&self) -> ClockInfo {
        info("sched", Guarantee::None)
    }
}

/// `sched-latch`: the same data behind a seqcount latch; never tears.
#[derive(Debug, Clone, Copy)]
pub struct SchedLatch {
    base: &'static Base,
}

impl SchedLatch {
    /// The `sched-latch` source, on the local counter.
    pub fn new() -> Result<SchedLatch, ClockError> {
        Ok(SchedLatch {
            base: base("sched-latch")?,
        })
    }
}

impl Clock for SchedLatch {
    #[inline]
    fn read(&self) -> u64 {
        let b = self.base;
        with_data(b, |t| loop {
            // cyc2ns_read_begin(): the copy the sequence points at, and
            // again if a tick moved it meanwhile.
            let seq = t.latch_seq.load(Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            let cycles = b.counter.read();
            let value = t.latch[(seq & 1) as usize].load().ns(cycles);
            compiler_fence(Ordering::SeqCst);
            if t.latch_seq.load(Ordering::Relaxed) == seq {
                t.last_cycles.store(cycles, Ordering::Relaxed);
                t.last_value.store(value, Ordering::Relaxed);
                break value;
            }
        })
    }

    fn info(&self) -> ClockInfo {
        info("sched-latch", Guarantee::PerCpu)
    }
}

/// Wrong readings of a clock found by [`measure_wrong`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WrongReadings {
    /// Readings checked.
    pub reads: u64,
    /// Readings later than the exact reference.
    pub ahead: u64,
    /// Readings not checked: so many ticks passed between the read and its
    /// check that the generation it used had left the history.
    pub unchecked: u64,
    /// Readings earlier than the exact reference.
    pub behind: u64,
    /// The largest error seen, in ns.
    pub max_error_ns: u64,
    /// Ticks applied to this thread's data meanwhile.
    pub ticks: u64,
}

impl WrongReadings {
    /// Wrong readings in either direction.
    pub fn wrong(&self) -> u64 {
        self.ahead + self.behind
    }

    /// Counts one verdict of [`check_since`] (`None`: unchecked).
    pub fn count_checked(&mut self, verdict: Option<Verdict>) {
        match verdict {
            Some(v) => self.count(v),
            None => self.unchecked += 1,
        }
    }

    /// Counts one verdict.
    pub fn count(&mut self, verdict: Verdict) {
        self.reads += 1;
        match verdict {
            Verdict::Right => {}
            Verdict::Ahead(by) => {
                self.ahead += 1;
                self.max_error_ns = self.max_error_ns.max(by);
            }
            Verdict::Behind(by) => {
                self.behind += 1;
                self.max_error_ns = self.max_error_ns.max(by);
            }
        }
    }
}

/// Reads `clock` (a `sched` or `sched-latch` source, under any protection)
/// on the calling thread for `run`, and checks every reading against the
/// exact reference. Reads go in batches of 64, each between two loads of
/// the generation; each batch is then checked ([`check_since`]) against
/// the generations its reading could have used. Ticks also land during
/// the checks (each masks irqs alone), which the generation bounds allow
/// for; a reading whose generation left the history is counted unchecked,
/// never wrong.
pub fn measure_wrong(clock: &dyn Clock, run: std::time::Duration) -> WrongReadings {
    let mut found = WrongReadings::default();
    let ticks_before = ticks();
    let until = std::time::Instant::now() + run;
    let mut batch = [(0u64, 0u64, 0u64); 64];
    while std::time::Instant::now() < until {
        for slot in batch.iter_mut() {
            let first = ticks();
            std::hint::black_box(clock.read());
            let (cycles, value) = last_read();
            *slot = (first, cycles, value);
        }
        for &(first, cycles, value) in &batch {
            found.count_checked(check_since(first, cycles, value));
        }
    }
    found.ticks = ticks() - ticks_before;
    found
}
