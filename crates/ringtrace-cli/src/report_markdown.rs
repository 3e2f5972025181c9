//! The report as markdown: the patches table first, then each measurement,
//! then a legend of every term.

use crate::clock_local::{self, ClockLocal};
use crate::finding::{Finding, Verdict};
use crate::instrumentation;
use crate::pairs;
use crate::report::Report;
use ringtrace_export::text::escape;
use serde::Serialize;

/// One line of the patches table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PatchRow {
    /// The patch's short name: `preemptirq`, `bh_irqsave`, `lock_events`,
    /// `debug_preempt` or `clock_local`.
    pub name: &'static str,
    /// The patch, by its subject line.
    pub patch: &'static str,
    /// What it claims, in its own words.
    pub claim: &'static str,
    /// Its figure.
    pub patch_figure: &'static str,
    /// Ours, with its spread.
    pub ours: String,
    /// How ours was measured, in one phrase.
    pub method: String,
    /// The rule that produced the verdict (printed in the legend).
    pub rule: String,
    /// The verdict.
    pub verdict: Verdict,
}

const NOT_RUN: &str = "not run (the report was stopped first)";

fn preemptirq_finding(r: &Report) -> Finding {
    let rule = pairs::finding_rule();
    let batched = r.pairs.as_ref().and_then(|p| p.as_ref().ok());
    let code = r.code_size.as_ref().and_then(|c| c.as_ref().ok());
    match &r.pairs_single {
        Some(Ok(rounds)) => pairs::finding_rounds(rounds, batched, code),
        Some(Err(e)) => Finding::not_measured("one pair per sample", &rule, e.clone()),
        None => Finding::not_measured("one pair per sample", &rule, NOT_RUN),
    }
}

fn bh_irqsave_finding(r: &Report) -> Finding {
    match &r.bh {
        Some(b) => instrumentation::bh::finding(b),
        None => Finding::not_measured(
            &instrumentation::bh::method(),
            instrumentation::bh::RULE,
            NOT_RUN,
        ),
    }
}

fn lock_events_finding(r: &Report) -> Finding {
    match &r.counters {
        Some(c) => instrumentation::lock_events::finding(c),
        None => Finding::not_measured(
            instrumentation::lock_events::METHOD,
            instrumentation::lock_events::RULE,
            NOT_RUN,
        ),
    }
}

fn debug_preempt_finding(r: &Report) -> Finding {
    match &r.debug_preempt {
        Some(d) => instrumentation::debug_preempt::finding(d),
        None => Finding::not_measured(
            instrumentation::debug_preempt::METHOD,
            instrumentation::debug_preempt::RULE,
            NOT_RUN,
        ),
    }
}

fn clock_local_finding(r: &Report) -> Finding {
    match &r.clock_local {
        Some(s) => clock_local::finding(s),
        None => Finding::not_measured("", clock_local::TEAR_RULE, NOT_RUN),
    }
}

fn row(
    name: &'static str,
    patch: &'static str,
    claim: &'static str,
    patch_figure: &'static str,
    f: Finding,
) -> PatchRow {
    PatchRow {
        name,
        patch,
        claim,
        patch_figure,
        ours: f.ours,
        method: f.method,
        rule: f.rule,
        verdict: f.verdict,
    }
}

/// The patches table's rows for a report.
pub fn patches_table(r: &Report) -> Vec<PatchRow> {
    vec![
        row(
            "preemptirq",
            "tracing/preemptirq: Optimize disabled tracepoint overhead",
            "\"This makes the impact of disabled preemptirq IRQ and preempt tracing negligible in performance-sensitive environments.\"",
            "irq pair 28 ns base, 46 master-trace, 30 patched-trace (x86-64 averages, timer read included)",
            preemptirq_finding(r),
        ),
        row(
            "bh_irqsave",
            "Reducing local_bh_enable/disable overhead in irqtrace",
            "\"A significant portion of the overhead is in the added irq flags save and restore, which I think is not needed if IRQ tracing is unused.\"",
            "3% of UDP throughput (IA-64, netperf)",
            bh_irqsave_finding(r),
        ),
        row(
            "lock_events",
            "locking/lock_events: Add locking events for rtmutex slow paths",
            "\"Add locking events for rtlock_slowlock() and rt_mutex_slowlock() for profiling the slow path behavior of rt_spin_lock() and rt_mutex_lock().\"",
            "rtlock_slowlock 401,701,156 and rtmutex_slowlock 139,672 events in a kernel build (RT debug kernel)",
            lock_events_finding(r),
        ),
        row(
            "debug_preempt",
            "lib/Kconfig.debug: do not enable DEBUG_PREEMPT by default",
            "\"enabling DEBUG_PREEMPT may result in significant increase in runtime overhead due to frequent invocation of __this_cpu_preempt_check() function\"",
            "about 10% of hackbench (9.45% to 13.18%)",
            debug_preempt_finding(r),
        ),
        row(
            "clock_local",
            "tracing: do not disable interrupts for trace_clock_local",
            "\"Balancing a seldom incorrect timestamp with a 15% performance boost, I'll take the performance boost.\"",
            "210 ns vs 179 ns per recorded event (31 ns, 1.17), ring_buffer_benchmark",
            clock_local_finding(r),
        ),
    ]
}

/// What the terms mean.
pub const LEGEND: &str = "\
## Legend

- **p10 / p50 / p90**: the 10th, 50th and 90th percentiles over rounds. \
Each round measures both sides back to back; a **ratio** is taken per round.
- **average / max_avg / median / percentile** (pairs): as walac/tracer-benchmark \
combines them: the average of the per-CPU averages, the mean of the highest samples \
over all CPUs, the median of the per-CPU medians, the largest per-CPU percentile.
- **verdict**: produced by the rule printed for its patch under the patches table; \
\"seen\" verdicts say what was found when it is neither reproduced nor not (a bound, a \
mechanism shown only in an amplified setting).
- **torn readings**: readings outside what any consistent generation of the sched clock \
data gives for the same cycle count (the exact reference): an update landed between the \
loads of the data. **flattened**: events whose own reading was right but whose timestamp \
the ring's monotonic fixup raised to a torn reading ahead of it.
- **amplified**: `sched-wide`, whose window is wider than the 2009 kernel's; its figures \
show the mechanism, not the kernel's rate.
- **fixups**: timestamps the ring raised so that a CPU buffer's time never goes back.
- **skew**: the largest step back seen between two CPUs taking turns.
- **ns/entry** (hammer): the producer's wall time per event, as the kernel's \
ring_buffer_benchmark reports it; with a consumer on 2 CPUs much of it is CPU sharing.
";

fn clock_local_section(s: &ClockLocal) -> String {
    let mut md = String::from("## trace_clock_local without irq disabling, both halves\n\n");
    md.push_str("```\n");
    md.push_str(&clock_local::text(s));
    md.push_str("```\n\n");
    md
}

fn instrumentation_section(r: &Report) -> String {
    let mut md = String::new();
    for (title, present, finding) in [
        (
            "The bh pair with and without irq tracing's flags save/restore",
            r.bh.is_some(),
            bh_irqsave_finding(r),
        ),
        (
            "Lock events for the rtmutex slow paths, counted per CPU",
            r.counters.is_some(),
            lock_events_finding(r),
        ),
        (
            "DEBUG_PREEMPT's this_cpu check",
            r.debug_preempt.is_some(),
            debug_preempt_finding(r),
        ),
    ] {
        if present {
            md.push_str(&format!(
                "## {title}\n\n{}\n\nMethod: {}. Rule: {}. Verdict: {}.\n\n",
                finding.ours,
                finding.method,
                finding.rule,
                finding.verdict.text()
            ));
        }
    }
    md
}

fn pairs_single_section(r: &Report) -> String {
    let mut md = String::new();
    match &r.pairs_single {
        Some(Ok(rounds)) => {
            if let Some(last) = rounds.last() {
                md.push_str(&format!(
                    "## Preemptirq pairs by the patch's method, the last of {} rounds\n\n",
                    rounds.len()
                ));
                // The run's own title would repeat the section's.
                let body = last.markdown();
                let body = body
                    .strip_prefix("## ")
                    .and_then(|b| b.split_once('\n'))
                    .map_or(body.as_str(), |(_, rest)| rest);
                md.push_str(body);
                md.push('\n');
            }
        }
        Some(Err(e)) => md.push_str(&format!(
            "## Preemptirq pairs by the patch's method\n\nerror: {}\n\n",
            escape(e)
        )),
        None => {}
    }
    match &r.code_size {
        Some(Ok(c)) => {
            md.push_str("## Code size and instructions per preemptirq pair\n\n");
            md.push_str(&c.markdown());
            md.push('\n');
        }
        Some(Err(e)) => md.push_str(&format!(
            "## Code size and instructions per preemptirq pair\n\nnot counted: {}\n\n",
            escape(e)
        )),
        None => {}
    }
    md
}

fn clocks_section(
    rows: &[crate::clocks::ClockRow],
    unavailable: &[crate::clocks::Unavailable],
) -> String {
    let mut md = String::from("## Every clock under every protection, under clock updates\n\n");
    md.push_str("| clock | protection | read ns | record ns | handler | events | torn readings (ahead/behind) | wrong recorded (ahead/behind) | flattened | fixups | updates | updates/s | skew ns |\n");
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let cell = |w: Option<crate::update_run::Wrong>| {
        w.map_or("-".to_owned(), |w| format!("{}/{}", w.ahead, w.behind))
    };
    for r in rows {
        let record = r
            .record_ns
            .map_or("error".to_owned(), |v| format!("{v:.2}"));
        let clock = if r.amplified {
            format!("{} (amplified)", r.clock)
        } else {
            r.clock.clone()
        };
        for run in std::iter::once(&r.update).chain(r.update_write.iter()) {
            match run {
                Ok(t) => md.push_str(&format!(
                    "| {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |\n",
                    clock,
                    r.protection,
                    r.read_ns,
                    record,
                    t.handler.name(),
                    t.events,
                    cell(t.wrong_readings),
                    cell(t.wrong_recorded),
                    t.flattened.map_or("-".to_owned(), |f| f.to_string()),
                    t.ts_fixups,
                    t.updates,
                    t.update_hz,
                    r.skew_ns
                )),
                Err(e) => md.push_str(&format!(
                    "| {} | {} | {:.2} | {} | error: {} |  |  |  |  |  |  |  |  |\n",
                    clock,
                    r.protection,
                    r.read_ns,
                    record,
                    escape(e).replace('|', "/")
                )),
            }
        }
    }
    for u in unavailable {
        md.push_str(&format!(
            "\n- `{}` unavailable: {}",
            u.clock,
            escape(&u.reason)
        ));
    }
    md.push_str("\n\n");
    md
}

fn hammer_section(runs: &[crate::report::HammerRepeats]) -> String {
    let mut md = String::from(
        "## ring_buffer_benchmark per clock, repeated\n\n\
         ns/entry is the kernel's wall-clock figure; CPU ns/entry divides the producer's own \
         CPU time instead, taking out the CPU it shared with the consumer.\n\n\
         | clock | runs | ns/entry p10 | p50 | p90 | CPU ns/entry p10 | p50 | p90 | hit (last run) | overruns | read | errors |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for h in runs {
        let ok: Vec<_> = h.runs.iter().filter_map(|r| r.as_ref().ok()).collect();
        let errors: Vec<String> = h
            .runs
            .iter()
            .filter_map(|r| r.as_ref().err().cloned())
            .collect();
        let last = ok.last();
        md.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} |\n",
            h.clock,
            ok.len(),
            h.ns_per_entry.p10,
            h.ns_per_entry.p50,
            h.ns_per_entry.p90,
            h.ns_per_entry_cpu.p10,
            h.ns_per_entry_cpu.p50,
            h.ns_per_entry_cpu.p90,
            last.map_or("-".into(), |l| l.hit.to_string()),
            last.map_or("-".into(), |l| l.overruns.to_string()),
            last.map_or("-".into(), |l| l.read.to_string()),
            if errors.is_empty() {
                "-".to_owned()
            } else {
                cell(&errors.join("; "))
            }
        ));
    }
    md.push('\n');
    md
}

fn kept_trace_section(k: &crate::report::KeptTrace) -> String {
    let mut md = String::from(
        "## The kept trace

",
    );
    // The path is the user's, and the error may quote a file or the
    // system: neither may break a line or reach the terminal raw.
    let path = escape(&k.path);
    match &k.events {
        Ok(n) => md.push_str(&format!(
            "One more hammer run ({} s, clock {}, no consumer; not one of the runs above, \
             since a file ring zeroes each page it claims) wrote its ring to `{}`: {n} events \
             left in it. Read it with `ringtrace dump {}` (or `ringtrace recover`).\n\n",
            k.seconds, k.clock, path, path
        )),
        Err(e) => md.push_str(&format!(
            "The hammer run meant to keep its trace in `{path}` failed: {}\n\n",
            escape(e)
        )),
    }
    md
}

/// A table cell: a `|` in the text would end the cell early, and a
/// newline the table; other controls would reach the terminal.
fn cell(text: &str) -> String {
    escape(text).replace('|', "/")
}

impl Report {
    /// The whole report as markdown.
    pub fn markdown(&self) -> String {
        // The machine's description is read from /proc.
        let mut md = format!(
            "# ringtrace report\n\nMachine: {}\n\n",
            escape(&self.machine)
        );
        if self.interrupted {
            md.push_str("**Stopped before the end: what follows is what was measured.**\n\n");
        }
        md.push_str("## The patches\n\n| name | patch | claim, in its words | patch's figure | ours | how ours was measured | verdict |\n|---|---|---|---|---|---|---|\n");
        let rows = patches_table(self);
        for row in &rows {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                row.name,
                row.patch,
                cell(row.claim),
                cell(row.patch_figure),
                cell(if row.ours.is_empty() { "-" } else { &row.ours }),
                cell(&row.method),
                cell(&row.verdict.text())
            ));
        }
        md.push_str("\nLegend of the verdicts, the rule behind each:\n\n");
        for row in &rows {
            md.push_str(&format!("- **{}**: {}\n", row.name, row.rule));
        }
        md.push('\n');
        if let Some(s) = &self.clock_local {
            md.push_str(&clock_local_section(s));
        }
        match &self.pairs {
            Some(Ok(p)) => {
                md.push_str(&p.markdown());
                md.push('\n');
            }
            Some(Err(e)) => {
                md.push_str(&format!("## Preemptirq pairs\n\nerror: {}\n\n", escape(e)))
            }
            None => {}
        }
        md.push_str(&pairs_single_section(self));
        md.push_str(&instrumentation_section(self));
        if let Some(rows) = &self.clocks {
            md.push_str(&clocks_section(rows, &self.unavailable));
        }
        if let Some(h) = &self.hammer {
            md.push_str(&hammer_section(h));
        }
        if let Some(k) = &self.kept_trace {
            md.push_str(&kept_trace_section(k));
        }
        md.push_str(LEGEND);
        md
    }

    /// The patches table, for the JSON.
    pub fn patches(&self) -> Vec<PatchRow> {
        patches_table(self)
    }
}

#[cfg(test)]
mod tests {
    use crate::clocks::Unavailable;
    use crate::report::{HammerRepeats, KeptTrace, Report};
    use crate::spread::Spread;

    /// What a terminal would obey: a C0 control but the newline, DEL, a C1
    /// control, a bidi control.
    fn obeyed(c: char) -> bool {
        let n = c as u32;
        (c != '\n' && n < 0x20)
            || (0x7f..0xa0).contains(&n)
            || (0x202a..=0x202e).contains(&n)
            || (0x2066..=0x2069).contains(&n)
    }

    #[test]
    fn strings_from_files_and_errors_neither_break_lines_nor_reach_the_terminal() {
        let bad = "x\ny\r\x1b[2J\u{9b}\u{202e}|z";
        let report = Report {
            machine: format!("2 CPUs, {bad}, Linux {bad}"),
            quick: true,
            interrupted: false,
            clocks: Some(Vec::new()),
            unavailable: vec![Unavailable {
                clock: "tsc".into(),
                reason: bad.into(),
            }],
            clock_local: None,
            pairs: Some(Err(bad.into())),
            pairs_single: Some(Err(bad.into())),
            code_size: Some(Err(bad.into())),
            bh: None,
            counters: None,
            debug_preempt: None,
            hammer: Some(vec![HammerRepeats {
                clock: "mono".into(),
                runs: vec![Err(bad.into())],
                ns_per_entry: Spread::of(Vec::new()),
                ns_per_entry_cpu: Spread::of(Vec::new()),
            }]),
            kept_trace: Some(KeptTrace {
                path: format!("/tmp/{bad}"),
                clock: "mono".into(),
                seconds: 1.0,
                events: Err(bad.into()),
            }),
        };
        let md = report.markdown();
        assert!(!md.chars().any(obeyed), "{md:?}");
        let shown = "x\\ny\\r\\x1b[2J\\u{9b}\\u{202e}";
        assert!(
            md.contains(&format!("Machine: 2 CPUs, {shown}|z, Linux {shown}|z\n")),
            "{md}"
        );
        // In a table row, `|` would end the cell: it is `/` there.
        let row = md.lines().find(|l| l.starts_with("| mono |")).unwrap();
        assert!(row.ends_with(&format!("| {shown}/z |")), "{row}");
        // The machine's two, three errors, the unavailable clock, the kept
        // trace's path and error, the hammer row (and the patches table).
        assert!(md.matches(shown).count() >= 9, "{md}");
    }
}
