//! Seed 004, both halves, in one run: "tracing: do not disable interrupts
//! for trace_clock_local" (Steven Rostedt, 2009).
//!
//! The patch traded correctness for speed: reading `sched_clock()` with
//! irqs disabled cost 210 ns per recorded event in ring_buffer_benchmark,
//! with preemption disabled 179 ns (irq/preempt = 1.17), at the price of "a
//! seldom incorrect timestamp" when the timer interrupt lands mid-read.
//!
//! - **Cost**: rounds of the record cost of `sched@preempt` and `sched@irq`
//!   back to back (alternating which goes first), the ratio taken per
//!   round, reported as p10/p50/p90 over the rounds.
//! - **Wrong timestamps**: from the `clocks` rows under the tick (handler
//!   updating the clock data only): `sched@raw` and `sched@preempt` record
//!   wrong timestamps; `sched@irq`, `sched@irq-hard` and `sched-latch` none.

use crate::clocks::{record_cost_batches, small_ring, ClockRow};
use crate::spread::{paired, Spread};
use ringtrace_clock::ClockSpec;
use serde::Serialize;

/// The seed's own figures.
pub const SEED_IRQ_NS: f64 = 210.0;
/// The seed's own figures.
pub const SEED_PREEMPT_NS: f64 = 179.0;

/// The cost half: irq over preempt, paired per round.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostHalf {
    /// Rounds measured.
    pub rounds: usize,
    /// ns per recorded event under `sched@preempt`.
    pub preempt_ns: Spread,
    /// ns per recorded event under `sched@irq`.
    pub irq_ns: Spread,
    /// `sched@irq` over `sched@preempt`, per round.
    pub ratio: Spread,
    /// Whether `irq` includes the x86 flags round trip here (else it is
    /// the soft mask alone and costs about what `preempt` does).
    pub irq_has_flags_round_trip: bool,
}

/// Measures the cost half: `rounds` pairs of record-cost runs.
pub fn cost_half(rounds: usize) -> Result<CostHalf, Box<dyn std::error::Error>> {
    let preempt = small_ring("sched@preempt".parse::<ClockSpec>()?.build()?)?;
    let irq = small_ring("sched@irq".parse::<ClockSpec>()?.build()?)?;
    let p = paired(
        rounds,
        || record_cost_batches(&preempt, 21),
        || record_cost_batches(&irq, 21),
    );
    Ok(CostHalf {
        rounds: p.rounds,
        preempt_ns: p.a,
        irq_ns: p.b,
        ratio: p.ratio,
        irq_has_flags_round_trip: ringtrace_clock::emulation::flags_irq::HAS_FLAGS_ROUND_TRIP,
    })
}

/// Wrong timestamps recorded under the tick by one clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WrongUnderTick {
    /// The clock name.
    pub clock: String,
    /// Wrong timestamps recorded (both directions), or why unknown.
    pub wrong_recorded: Result<u64, String>,
    /// Events recorded.
    pub events: u64,
    /// Ticks that ran on the writer.
    pub ticks: u64,
}

/// The clocks whose wrong-timestamp counts decide the correctness half,
/// and whether each should record wrong timestamps.
pub const EXPECTED: [(&str, &str, bool); 6] = [
    ("sched", "raw", true),
    ("sched", "preempt", true),
    ("sched", "irq", false),
    ("sched", "irq-hard", false),
    ("sched-latch", "raw", false),
    ("sched-latch", "preempt", false),
];

/// The correctness half, read off the `clocks` rows.
pub fn wrong_half(rows: &[ClockRow]) -> Vec<WrongUnderTick> {
    EXPECTED
        .iter()
        .map(|&(clock, protection, _)| {
            let name = if protection == "raw" {
                clock.to_owned()
            } else {
                format!("{clock}@{protection}")
            };
            let row = rows
                .iter()
                .find(|r| r.clock == clock && r.protection == protection);
            match row.map(|r| &r.tick) {
                Some(Ok(t)) => WrongUnderTick {
                    clock: name,
                    wrong_recorded: t
                        .wrong_recorded
                        .map(|w| w.total())
                        .ok_or_else(|| "not checked".to_owned()),
                    events: t.events,
                    ticks: t.ticks,
                },
                Some(Err(e)) => WrongUnderTick {
                    clock: name,
                    wrong_recorded: Err(e.clone()),
                    events: 0,
                    ticks: 0,
                },
                None => WrongUnderTick {
                    clock: name,
                    wrong_recorded: Err("not measured (unavailable here)".to_owned()),
                    events: 0,
                    ticks: 0,
                },
            }
        })
        .collect()
}

/// Both halves and what they say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Seed004 {
    /// irq over preempt, per recorded event.
    pub cost: Result<CostHalf, String>,
    /// Wrong timestamps under the tick.
    pub wrong: Vec<WrongUnderTick>,
    /// Disabling irqs costs more per recorded event (the median ratio
    /// over rounds above 1, and its 10th percentile too).
    pub cost_reproduced: bool,
    /// Unprotected and preempt-protected reads record wrong timestamps
    /// and irq-masked or latched ones none.
    pub wrong_reproduced: bool,
}

impl Seed004 {
    /// Assembles the verdict.
    pub fn new(cost: Result<CostHalf, String>, rows: &[ClockRow]) -> Seed004 {
        let wrong = wrong_half(rows);
        let cost_reproduced = cost
            .as_ref()
            .is_ok_and(|c| c.ratio.p50 > 1.0 && c.ratio.p10 > 1.0);
        let wrong_reproduced =
            wrong
                .iter()
                .zip(EXPECTED)
                .all(|(w, (_, _, tears))| match w.wrong_recorded {
                    Ok(n) => (n > 0) == tears && w.ticks > 0,
                    Err(_) => false,
                });
        Seed004 {
            cost,
            wrong,
            cost_reproduced,
            wrong_reproduced,
        }
    }
}

/// The verdict in words, with the numbers behind it.
pub fn text(s: &Seed004) -> String {
    let mut out =
        String::from("trace_clock_local without irq disabling (seed 004), both halves:\n");
    match &s.cost {
        Ok(c) => out.push_str(&format!(
            "  cost: sched@irq {:.1} ns, sched@preempt {:.1} ns per recorded event (medians); \
             irq/preempt paired over {} rounds: p10 {:.2} p50 {:.2} p90 {:.2} (seed: {:.0}/{:.0} = {:.2}){}\n",
            c.irq_ns.p50,
            c.preempt_ns.p50,
            c.rounds,
            c.ratio.p10,
            c.ratio.p50,
            c.ratio.p90,
            SEED_IRQ_NS,
            SEED_PREEMPT_NS,
            SEED_IRQ_NS / SEED_PREEMPT_NS,
            if c.irq_has_flags_round_trip {
                ""
            } else {
                "; irq is the soft mask alone on this architecture"
            }
        )),
        Err(e) => out.push_str(&format!("  cost: error: {e}\n")),
    }
    for w in &s.wrong {
        match &w.wrong_recorded {
            Ok(n) => out.push_str(&format!(
                "  {:<20} {n} wrong timestamps recorded in {} events under {} ticks\n",
                w.clock, w.events, w.ticks
            )),
            Err(e) => out.push_str(&format!("  {:<20} error: {e}\n", w.clock)),
        }
    }
    let say = |ok: bool| if ok { "reproduced" } else { "not reproduced" };
    out.push_str(&format!(
        "  verdict: irq costs more than preempt: {}; preempt and raw record wrong timestamps, irq and the latch none: {}\n",
        say(s.cost_reproduced),
        say(s.wrong_reproduced)
    ));
    out
}
