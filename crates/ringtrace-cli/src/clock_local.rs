//! "tracing: do not disable interrupts for trace_clock_local" (Steven
//! Rostedt, 2009), both halves, in one run.
//!
//! The patch traded correctness for speed: reading `sched_clock()` with
//! irqs disabled cost 210 ns per recorded event in ring_buffer_benchmark,
//! with preemption disabled 179 ns (irq/preempt = 1.17), at the price of "a
//! seldom incorrect timestamp" when the timer interrupt lands mid-read.
//!
//! - **Cost**: ring_buffer_benchmark's figure, in [`crate::clock_local::cost`]:
//!   hammer runs with `sched@preempt` and `sched@irq` back to back in
//!   rounds, producer CPU ns per entry, difference and ratio per round.
//! - **Wrong timestamps**: [`crate::clock_local::tear`]: the faithful read
//!   (`sched@preempt`, its data loads back to back as in 2009) under
//!   updates at the user's rate, and the amplified one (`sched-wide`,
//!   20 kHz); torn readings per update with a 95% interval.
//! - **The checker's control**: from the `clocks` rows, the reads that
//!   cannot tear (irq-masked, latched) must show no wrong reading in either
//!   handler mode; a count there would mean the checker fools itself.

pub mod cost;
pub mod tear;

use crate::clocks::ClockRow;
use crate::finding::{Finding, Verdict};
use serde::Serialize;
use tear::TearRun;

pub use cost::{CostHalf, PATCH_IRQ_NS, PATCH_PREEMPT_NS};

/// Measures the cost half: `rounds` paired rounds of hammer runs of
/// [`cost::RUN`] per side.
pub fn cost_half(rounds: usize) -> Result<CostHalf, cost::CostError> {
    cost::measure(rounds, cost::RUN)
}

/// Wrong readings where none can occur: one clock that cannot tear, under
/// updates, in one handler mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Control {
    /// The clock name.
    pub clock: String,
    /// `update` or `update+write`.
    pub handler: &'static str,
    /// Wrong readings and wrong recorded timestamps (both directions), or
    /// why unknown.
    pub wrong: Result<u64, String>,
    /// Events recorded.
    pub events: u64,
    /// Updates that ran on the writer.
    pub updates: u64,
}

/// A read that cannot tear: a clock source under a protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ControlRead {
    /// The clock source's name.
    pub clock: &'static str,
    /// The protection's name (`raw`: none).
    pub protection: &'static str,
}

const fn read(clock: &'static str, protection: &'static str) -> ControlRead {
    ControlRead { clock, protection }
}

/// The reads that cannot tear: irq-masked or latched, the amplified
/// window included.
pub const CONTROLS: [ControlRead; 6] = [
    read("sched", "irq"),
    read("sched", "irq-soft"),
    read("sched", "irq-hard"),
    read("sched-wide", "irq"),
    read("sched-latch", "raw"),
    read("sched-latch", "preempt"),
];

/// The controls, read off the `clocks` rows (both handler modes).
pub fn controls(rows: &[ClockRow]) -> Vec<Control> {
    let mut out = Vec::new();
    for ControlRead { clock, protection } in CONTROLS {
        let name = if protection == "raw" {
            clock.to_owned()
        } else {
            format!("{clock}@{protection}")
        };
        let row = rows
            .iter()
            .find(|r| r.clock == clock && r.protection == protection);
        let Some(row) = row else {
            out.push(Control {
                clock: name,
                handler: "update",
                wrong: Err("not measured (unavailable here)".to_owned()),
                events: 0,
                updates: 0,
            });
            continue;
        };
        for run in std::iter::once(&row.update).chain(row.update_write.iter()) {
            out.push(match run {
                Ok(t) => Control {
                    clock: name.clone(),
                    handler: t.handler.name(),
                    wrong: match (t.wrong_readings, t.wrong_recorded) {
                        (Some(a), Some(b)) => Ok(a.total() + b.total()),
                        _ => Err("not checked".to_owned()),
                    },
                    events: t.events,
                    updates: t.updates,
                },
                Err(e) => Control {
                    clock: name.clone(),
                    handler: "update",
                    wrong: Err(e.clone()),
                    events: 0,
                    updates: 0,
                },
            });
        }
    }
    out
}

/// Both halves and what they say.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClockLocal {
    /// irq over preempt, per recorded event.
    pub cost: Result<CostHalf, String>,
    /// The faithful tear: `sched@preempt` under updates at the user's rate.
    pub faithful: Result<TearRun, String>,
    /// The amplified tear: `sched-wide@preempt` under 20 kHz updates.
    pub amplified: Result<TearRun, String>,
    /// Reads that cannot tear, under updates: each must show none.
    pub controls: Vec<Control>,
    /// Disabling irqs costs more per recorded event
    /// ([`cost::RULE`]).
    pub cost_reproduced: bool,
}

/// The tear's rule, as the legend prints it.
pub const TEAR_RULE: &str = "the tear is reproduced when the faithful read (its data loads back to back, as 2009's __cycles_2_ns) shows torn readings whose 95% Wilson interval per update excludes 0; when only the amplified read tears, the verdict says so with the faithful bound; either way only if every control (irq-masked and latched reads, both handler modes) shows no wrong reading, since a count there means the checker is wrong";

impl ClockLocal {
    /// Assembles the findings.
    pub fn new(
        cost: Result<CostHalf, String>,
        faithful: Result<TearRun, String>,
        amplified: Result<TearRun, String>,
        rows: &[ClockRow],
    ) -> ClockLocal {
        let cost_reproduced = cost.as_ref().is_ok_and(cost::cost_reproduced);
        ClockLocal {
            cost,
            faithful,
            amplified,
            controls: controls(rows),
            cost_reproduced,
        }
    }

    /// The tear half's verdict, by [`TEAR_RULE`].
    pub fn tear_verdict(&self) -> Verdict {
        let bad: Vec<String> = self
            .controls
            .iter()
            .filter_map(|c| match &c.wrong {
                Ok(0) if c.updates > 0 => None,
                Ok(0) => Some(format!("{} ({}): no update reached it", c.clock, c.handler)),
                Ok(n) => Some(format!("{} ({}) {n}", c.clock, c.handler)),
                Err(e) => Some(format!("{} ({}): {e}", c.clock, c.handler)),
            })
            .collect();
        if !bad.is_empty() {
            return Verdict::NotMeasurable(format!(
                "reads that cannot tear were counted wrong or not checked: {}",
                bad.join(", ")
            ));
        }
        let faithful = match &self.faithful {
            Ok(f) => f,
            Err(e) => return Verdict::NotMeasurable(format!("the faithful run failed: {e}")),
        };
        if faithful.source.updates == 0 {
            return Verdict::NotMeasurable("no update reached the faithful reader".into());
        }
        if faithful.rate.excludes_zero() {
            return Verdict::Reproduced;
        }
        let bound = format!(
            "at faithful settings fewer than {:.1} per million updates (95%, {} updates)",
            tear::per_million(faithful.rate.high),
            faithful.source.updates
        );
        match &self.amplified {
            Ok(a) if a.rate.excludes_zero() => Verdict::Seen(format!(
                "mechanism reproduced when amplified ({} torn in {} updates); {bound}",
                a.torn, a.source.updates
            )),
            Ok(_) => Verdict::Seen(format!("no tear even when amplified; {bound}")),
            Err(e) => Verdict::Seen(format!("{bound}; the amplified run failed: {e}")),
        }
    }
}

/// The patches table's finding for trace_clock_local, both halves.
pub fn finding(s: &ClockLocal) -> Finding {
    let cost = match &s.cost {
        Ok(c) => format!("cost: {}", cost::finding_text(c)),
        Err(e) => format!("cost: error: {e}"),
    };
    let tear = |r: &Result<TearRun, String>, label: &str| match r {
        Ok(t) => format!(
            "{label} {} torn in {} updates ({:.1} per million, 95% {:.1} to {:.1}; {} flattened)",
            t.torn,
            t.source.updates,
            tear::per_million(t.rate.estimate),
            tear::per_million(t.rate.low),
            tear::per_million(t.rate.high),
            t.flattened
        ),
        Err(e) => format!("{label}: error: {e}"),
    };
    let tear_verdict = s.tear_verdict();
    let cost_verdict = cost::finding(&s.cost).verdict;
    let verdict = if let Verdict::NotMeasurable(why) = cost_verdict {
        Verdict::NotMeasurable(format!("the cost half: {why}"))
    } else if !s.cost_reproduced {
        match tear_verdict {
            Verdict::Reproduced => Verdict::Seen("the tear reproduced, the cost not".into()),
            Verdict::Seen(what) => Verdict::Seen(format!("cost not reproduced; {what}")),
            other => other,
        }
    } else {
        match tear_verdict {
            Verdict::Reproduced => Verdict::Reproduced,
            Verdict::Seen(what) => Verdict::Seen(format!("cost reproduced; {what}")),
            other => other,
        }
    };
    Finding {
        ours: format!(
            "{cost}; {}; {}",
            tear(&s.faithful, "faithful"),
            tear(&s.amplified, "amplified")
        ),
        method: format!(
            "{}; sched@preempt read back to back under emulated frequency-change interrupts, \
             every reading checked against the exact reference",
            cost::METHOD
        ),
        rule: format!("both halves: the cost is {}; {TEAR_RULE}", cost::RULE),
        verdict,
    }
}

/// The findings in words, with the numbers behind them.
pub fn text(s: &ClockLocal) -> String {
    let mut out = String::from("trace_clock_local without irq disabling, both halves:\n");
    match &s.cost {
        Ok(c) => out.push_str(&cost::text(c)),
        Err(e) => out.push_str(&format!("  cost: error: {e}\n")),
    }
    for (label, run) in [("faithful", &s.faithful), ("amplified", &s.amplified)] {
        match run {
            Ok(t) => {
                out.push_str(&format!("  {label}: {}\n", tear::line(t)));
                for k in &t.at_kernel_rates {
                    out.push_str(&format!(
                        "    at {} ({:.0}/s): {:.3} to {:.3} torn readings per hour{}\n",
                        k.source,
                        k.updates_per_s,
                        k.torn_per_hour_low,
                        k.torn_per_hour_high,
                        if t.amplified {
                            " (amplified window)"
                        } else {
                            ""
                        }
                    ));
                }
            }
            Err(e) => out.push_str(&format!("  {label}: error: {e}\n")),
        }
    }
    let controls: Vec<String> = s
        .controls
        .iter()
        .map(|c| match &c.wrong {
            Ok(n) => format!("{} {} {n}/{}", c.clock, c.handler, c.events),
            Err(e) => format!("{} {}: {e}", c.clock, c.handler),
        })
        .collect();
    out.push_str(&format!(
        "  controls (wrong/events; must be 0): {}\n",
        controls.join(", ")
    ));
    let f = finding(s);
    out.push_str(&format!(
        "  verdict: {}\n  rule: {}\n",
        f.verdict.text(),
        f.rule
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock_local::tear::{summarise, SourceRun};

    fn tear(amplified: bool, torn: u64, updates: u64) -> Result<TearRun, String> {
        let source = SourceRun {
            reads: 1_000_000,
            updates,
            ahead: torn,
            behind: 0,
            max_error_ns: 1_000,
            unchecked: 0,
            seconds: 1.0,
            update_hz: updates as f64,
        };
        Ok(summarise(
            if amplified {
                "sched-wide@preempt"
            } else {
                "sched@preempt"
            },
            amplified,
            1000,
            source,
            Err("not run".into()),
        ))
    }

    fn control(wrong: u64) -> Control {
        Control {
            clock: "sched@irq".into(),
            handler: "update",
            wrong: Ok(wrong),
            events: 1000,
            updates: 100,
        }
    }

    fn both(faithful: Result<TearRun, String>, amplified: Result<TearRun, String>) -> ClockLocal {
        let mut s = ClockLocal::new(Err("not run".into()), faithful, amplified, &[]);
        s.controls = vec![control(0), control(0)];
        s
    }

    #[test]
    fn a_faithful_tear_whose_interval_excludes_zero_is_reproduced() {
        let s = both(tear(false, 3, 30_000), tear(true, 1_300, 10_000));
        assert_eq!(s.tear_verdict(), Verdict::Reproduced);
    }

    #[test]
    fn a_tear_only_when_amplified_says_so_with_the_faithful_bound() {
        let s = both(tear(false, 0, 30_000), tear(true, 1_300, 10_000));
        let Verdict::Seen(what) = s.tear_verdict() else {
            panic!("{:?}", s.tear_verdict());
        };
        assert!(
            what.starts_with("mechanism reproduced when amplified (1300 torn in 10000 updates)")
        );
        // 3.84 / 30003.84 per update: 128 per million.
        assert!(
            what.contains("fewer than 128.0 per million updates (95%, 30000 updates)"),
            "{what}"
        );
    }

    #[test]
    fn no_tear_anywhere_is_seen_as_such_not_as_reproduced() {
        let s = both(tear(false, 0, 30_000), tear(true, 0, 10_000));
        assert!(
            matches!(s.tear_verdict(), Verdict::Seen(w) if w.starts_with("no tear even when amplified"))
        );
    }

    #[test]
    fn a_control_counted_wrong_makes_the_tear_not_measurable() {
        let mut s = both(tear(false, 3, 30_000), tear(true, 1_300, 10_000));
        s.controls.push(control(1));
        assert!(
            matches!(s.tear_verdict(), Verdict::NotMeasurable(w) if w.contains("sched@irq (update) 1"))
        );
    }

    #[test]
    fn a_control_no_update_reached_proves_nothing() {
        let mut s = both(tear(false, 3, 30_000), tear(true, 1_300, 10_000));
        s.controls.push(Control {
            updates: 0,
            ..control(0)
        });
        assert!(
            matches!(s.tear_verdict(), Verdict::NotMeasurable(w) if w.contains("no update reached it"))
        );
    }

    #[test]
    fn no_update_reaching_the_reader_is_not_measurable() {
        let s = both(tear(false, 0, 0), tear(true, 1_300, 10_000));
        assert!(matches!(s.tear_verdict(), Verdict::NotMeasurable(_)));
        let s = both(Err("no timer".into()), tear(true, 1_300, 10_000));
        assert!(matches!(s.tear_verdict(), Verdict::NotMeasurable(w) if w.contains("no timer")));
    }

    #[test]
    fn the_finding_needs_the_cost_half_measured() {
        let s = both(tear(false, 3, 30_000), tear(true, 1_300, 10_000));
        assert!(
            matches!(finding(&s).verdict, Verdict::NotMeasurable(w) if w.starts_with("the cost half"))
        );
    }

    #[test]
    fn controls_are_read_from_both_handler_modes_and_missing_rows_are_errors() {
        let c = controls(&[]);
        assert_eq!(c.len(), CONTROLS.len());
        assert!(c.iter().all(|c| c.wrong.is_err()));
    }
}
