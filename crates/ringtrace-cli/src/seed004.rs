//! Seed 004, both halves, in one run: "tracing: do not disable interrupts
//! for trace_clock_local" (Steven Rostedt, 2009).
//!
//! The patch traded correctness for speed: reading `sched_clock()` with
//! irqs disabled cost 210 ns per recorded event in ring_buffer_benchmark,
//! with preemption disabled 179 ns (irq/preempt = 1.17), at the price of "a
//! seldom incorrect timestamp" when the timer interrupt lands mid-read.
//!
//! - **Cost**: ring_buffer_benchmark's figure, in [`crate::seed004_cost`]:
//!   hammer runs with `sched@preempt` and `sched@irq` back to back in
//!   rounds, producer CPU ns per entry, difference and ratio per round.
//! - **Wrong timestamps**: from the `clocks` rows under the tick (handler
//!   updating the clock data only): `sched@raw` and `sched@preempt` record
//!   wrong timestamps; `sched@irq`, `sched@irq-hard` and `sched-latch` none.

use crate::clocks::ClockRow;
use crate::seed004_cost;
use serde::Serialize;

pub use crate::seed004_cost::{SEED_IRQ_NS, SEED_PREEMPT_NS};

/// The cost half: ring_buffer_benchmark's figure, irq against preempt
/// ([`seed004_cost`]).
pub type CostHalf = seed004_cost::Seed004Cost;

/// Measures the cost half: `rounds` paired rounds of hammer runs of
/// [`seed004_cost::RUN`] per side.
pub fn cost_half(rounds: usize) -> Result<CostHalf, Box<dyn std::error::Error>> {
    Ok(seed004_cost::measure(rounds, seed004_cost::RUN)?)
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
    /// Disabling irqs costs more per recorded event
    /// ([`seed004_cost::RULE`]).
    pub cost_reproduced: bool,
    /// Unprotected and preempt-protected reads record wrong timestamps
    /// and irq-masked or latched ones none.
    pub wrong_reproduced: bool,
}

impl Seed004 {
    /// Assembles the verdict.
    pub fn new(cost: Result<CostHalf, String>, rows: &[ClockRow]) -> Seed004 {
        let wrong = wrong_half(rows);
        let cost_reproduced = cost.as_ref().is_ok_and(seed004_cost::cost_reproduced);
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
        Ok(c) => out.push_str(&seed004_cost::text(c)),
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
