//! A pairs result as text (the command's output) and as markdown (the
//! report's section).
//!
//! The text names each strategy only in its table rows, so that a reader
//! (or a test) can find a strategy's figures by its name.

use super::{kernel_x86_64, KeyKind, Method, Metrics, Pair, PairsResult, RESOLUTION_STEPS};
use ringtrace_tracepoint::preemptirq::StrategyKind;

/// `value` with two decimals, or `<bound` when it is under
/// `resolution_ns` (the bound rounded up, so that it stays a bound).
///
/// ```
/// use ringtrace_cli::pairs::fmt_ns;
/// assert_eq!(fmt_ns(1.234, 0.5), "1.23");
/// assert_eq!(fmt_ns(0.3, 0.861), "<0.87");
/// ```
pub fn fmt_ns(value: f64, resolution_ns: f64) -> String {
    if value >= resolution_ns {
        format!("{value:.2}")
    } else {
        format!("<{:.2}", (resolution_ns * 100.0).ceil() / 100.0)
    }
}

fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:+.2}"))
}

fn kernel_signed(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:+.0}"))
}

fn keys_line(keys: KeyKind) -> &'static str {
    match keys {
        KeyKind::Patched => "patched keys (static-keys: a no-op jump while off, as the kernel's)",
        KeyKind::Atomic => {
            "atomic keys (a load and a branch; build with --features static-keys for patched keys, as the kernel's)"
        }
    }
}

impl PairsResult {
    fn metrics(&self, pair: Pair, strategy: StrategyKind) -> Option<&Metrics> {
        self.pairs
            .get(pair.key())
            .and_then(|p| p.get(strategy.name()))
    }

    fn k(&self, pair: Pair) -> u64 {
        self.batch.get(pair.key()).copied().unwrap_or(1)
    }

    fn pct_name(&self) -> String {
        format!("{}th percentile", self.settings.percentile)
    }

    /// How a sample was timed, in a sentence.
    fn method_sentence(&self) -> String {
        match self.method {
            Method::Batched => format!(
                "a sample times K pairs back to back between two reads of the timer and counts \
                 as sample / K per pair, nothing subtracted; K (per pair) gives a sample at \
                 least 50 timer steps, so the one read in it is at most a fiftieth of it, the \
                 same for every strategy; the percentile is {}",
                self.percentile_from
            ),
            Method::Single => format!(
                "one pair per sample between two reads of the ns clock, nothing subtracted \
                 (the read is in every figure, as in the kernel patch's tables); the \
                 percentile is from {}",
                self.percentile_from
            ),
        }
    }

    /// The patch's tables, one per pair with a row per strategy, then the
    /// verdict; the command's text output.
    pub fn text(&self) -> String {
        let s = &self.settings;
        let mut out = format!(
            "pairs, {} method: threads {} (one per CPU), samples {} per thread, pair and strategy; \
             {} irq mask; {}, every tracepoint off\n\
             timer {}: step {:.2} ns (the smallest nonzero difference of two consecutive reads), \
             overhead {:.2} ns (not subtracted)\n\
             {}\n\
             max_avg: mean of the {} highest samples over all CPUs; percentile: the {}\n\
             trimmed: mean without the lowest and highest {}% of each CPU's samples; outliers: \
             samples above {}x their CPU's median\n\
             a median or percentile under {} timer steps per pair prints as <bound (below resolution)\n\
             Δavg, Δmed: minus the first row (no tracepoint code); kernel Δavg: the same \
             difference in the kernel patch's x86-64 tables\n",
            self.method,
            s.cpus,
            s.samples,
            s.irq_mask,
            keys_line(self.keys),
            self.timer,
            self.timer_step_ns,
            self.timer_overhead_ns,
            self.method_sentence(),
            s.highest,
            self.pct_name(),
            self.trim_percent,
            self.outlier_factor,
            RESOLUTION_STEPS,
        );
        if self.interrupted {
            let missing: Vec<&str> = Pair::ALL
                .into_iter()
                .filter(|p| !self.pairs.contains_key(p.key()))
                .map(|p| p.key())
                .collect();
            out.push_str(&format!(
                "Interrupted: stopped by a signal; not measured: {}; the verdict covers only the pairs below\n",
                if missing.is_empty() {
                    "none".to_owned()
                } else {
                    missing.join(", ")
                }
            ));
        }
        for pair in Pair::ALL {
            if !self.pairs.contains_key(pair.key()) {
                continue;
            }
            let resolution = self
                .metrics(pair, StrategyKind::Baseline)
                .map_or(0.0, |m| m.resolution_ns);
            out.push_str(&format!(
                "\n{} (K = {} pairs per sample, the cheapest median spans {:.0} timer steps; \
                 resolution {:.3} ns)\n\n",
                pair.title(),
                self.k(pair),
                self.batch_span_steps
                    .get(pair.key())
                    .copied()
                    .unwrap_or(0.0),
                resolution
            ));
            out.push_str(&format!(
                "{:<16} {:>9} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8} {:>12}\n",
                "Combined Metric",
                "average",
                "max_avg",
                "median",
                "percentile",
                "trimmed",
                "outliers",
                "Δavg",
                "Δmed",
                "kernel Δavg"
            ));
            out.push_str("Strategy\n");
            for strategy in StrategyKind::ALL {
                let Some(m) = self.metrics(pair, strategy) else {
                    continue;
                };
                let delta = self
                    .deltas
                    .get(pair.key())
                    .and_then(|d| d.get(strategy.name()));
                out.push_str(&format!(
                    "{:<16} {:>9.2} {:>9.2} {:>9} {:>10} {:>9.2} {:>9} {:>8} {:>8} {:>12}\n",
                    strategy.name(),
                    m.average,
                    m.max_avg,
                    fmt_ns(m.median, m.resolution_ns),
                    fmt_ns(m.percentile, m.resolution_ns),
                    m.trimmed_mean,
                    m.outliers,
                    signed(delta.map(|d| d.average_ns)),
                    signed(delta.and_then(|d| d.median_ns)),
                    kernel_signed(delta.and_then(|d| d.kernel_average_ns)),
                ));
            }
        }
        if self.method == Method::Single {
            // One-pair medians move in whole timer steps: the single method is
            // judged on its trimmed means (finding.rs).
            let f = super::finding(self, None, None);
            out.push_str(&format!(
                "\nPreemptirq verdict (single method): {}\n  rule: {}\n  ours: {}\n",
                f.verdict.text(),
                f.rule,
                f.ours
            ));
            return out;
        }
        let v = &self.verdict;
        // A pair whose medians are unresolved, or rest on too few samples,
        // answers neither claim: the verdict is not a `no`.
        let determined = v.pairs.values().all(|p| p.resolved && p.enough_samples);
        let yes = |b: bool| match (determined, b) {
            (false, _) => "undetermined",
            (true, true) => "yes",
            (true, false) => "no",
        };
        let per_pair = |f: &dyn Fn(&super::PairVerdict) -> String| {
            v.pairs
                .iter()
                .map(|(pair, p)| format!("{pair} {}", f(p)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "\nVerdict on the {} medians:\n\
             \x20 the always-made call is clearly above the early key check (by {:.0}% and the \
             resolution): {} ({} ns)\n\
             \x20 the early key check is within {:.0}% of no tracepoint code: {} ({})\n",
            v.method,
            super::CLEARLY_ABOVE * 100.0,
            yes(v.call_always_clearly_above_early_key),
            per_pair(&|p| format!("{:+.2}", p.call_minus_early_ns)),
            super::WITHIN * 100.0,
            yes(v.early_key_within_5pct_of_baseline),
            per_pair(&|p| format!("{:.3}x", p.early_over_baseline)),
        ));
        if v.pairs.values().any(|p| !p.resolved) {
            out.push_str("  (a median below resolution answers neither: `undetermined`)\n");
        }
        if v.pairs.values().any(|p| !p.enough_samples) {
            out.push_str(&format!(
                "  (a strategy with fewer than {} samples answers neither: `undetermined`)\n",
                super::MIN_SAMPLES
            ));
        }
        out
    }

    /// The pairs section of a markdown report: a level-2 heading, the
    /// tables in the kernel patch's shape with K, the timer step, the
    /// trimmed mean and the outliers, the deltas against the patch's, the
    /// verdict and a legend.
    pub fn markdown(&self) -> String {
        let s = &self.settings;
        let mut md = String::from(
            "## Preemptirq pairs: tracepoints that check their static key early\n\n\
             The kernel patch \"tracing/preemptirq: Optimize disabled tracepoint overhead\" \
             makes `local_irq_*` and `preempt_*` check the preemptirq tracepoints' \
             static key inline, before any call, instead of always calling a function that \
             checks it. Each of its kernel builds is a strategy here: `baseline` (`-master`, no \
             tracepoint code), `call-always` (`-master-trace`), `early-key` (`-patched-trace`). \
             Every tracepoint is off.\n\n",
        );
        md.push_str(&format!(
            "- Method: **{}**; threads: {} (one per CPU); samples: {} per thread, pair and \
             strategy; irq mask: {}.\n\
             - Keys: {}.\n\
             - Timer: {}, step {:.2} ns, overhead {:.2} ns (not subtracted).\n\
             - {}.\n\n",
            self.method,
            s.cpus,
            s.samples,
            s.irq_mask,
            keys_line(self.keys),
            self.timer,
            self.timer_step_ns,
            self.timer_overhead_ns,
            self.method_sentence()
        ));
        for pair in Pair::ALL {
            let resolution = self
                .metrics(pair, StrategyKind::Baseline)
                .map_or(0.0, |m| m.resolution_ns);
            md.push_str(&format!(
                "### {}\n\nK = {} pairs per sample (the cheapest median spans {:.0} timer \
                 steps); resolution {:.3} ns per pair. ns per pair:\n\n\
                 | Combined Metric | average | max_avg | median | percentile | trimmed mean | outliers |\n\
                 |---|---|---|---|---|---|---|\n",
                pair.title(),
                self.k(pair),
                self.batch_span_steps.get(pair.key()).copied().unwrap_or(0.0),
                resolution
            ));
            for strategy in StrategyKind::ALL {
                if let Some(m) = self.metrics(pair, strategy) {
                    md.push_str(&format!(
                        "| {} | {:.2} | {:.2} | {} | {} | {:.2} | {} of {} |\n",
                        strategy.name(),
                        m.average,
                        m.max_avg,
                        fmt_ns(m.median, m.resolution_ns),
                        fmt_ns(m.percentile, m.resolution_ns),
                        m.trimmed_mean,
                        m.outliers,
                        m.samples
                    ));
                }
            }
            md.push('\n');
        }
        md.push_str(
            "The kernel patch's x86-64 tables (Xeon Silver 4310, ns, timer read included):\n\n\
             | pair | build | average | max_avg | median | percentile |\n\
             |---|---|---|---|---|---|\n",
        );
        for pair in Pair::ALL {
            for strategy in StrategyKind::ALL {
                if let Some(k) = kernel_x86_64(pair, strategy) {
                    md.push_str(&format!(
                        "| {} | {} (`{}`) | {} | {} | {} | {} |\n",
                        pair.key(),
                        k.build,
                        strategy.name(),
                        k.average,
                        k.max_avg,
                        k.median,
                        k.percentile
                    ));
                }
            }
        }
        md.push_str(
            "\n### Cost over `baseline`\n\n\
             Each strategy minus `baseline`, ns per pair; the kernel patch's differences are \
             from its x86-64 tables (it has no irq save/restore table). A median difference is \
             `-` when a median is below resolution.\n\n\
             | pair | strategy | average | trimmed mean | median | kernel average | kernel median |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for (pair, by_strategy) in &self.deltas {
            for (strategy, d) in by_strategy {
                md.push_str(&format!(
                    "| {pair} | {strategy} | {} | {} | {} | {} | {} |\n",
                    signed(Some(d.average_ns)),
                    signed(Some(d.trimmed_mean_ns)),
                    signed(d.median_ns),
                    kernel_signed(d.kernel_average_ns),
                    kernel_signed(d.kernel_median_ns)
                ));
            }
        }
        if self.method == Method::Single {
            let f = super::finding(self, None, None);
            md.push_str(&format!(
                "\n### Verdict (single method: trimmed means, timer read included)\n\n\
                 **{}**. {}\n\nRule: {}.\n",
                f.verdict.text(),
                f.ours,
                f.rule
            ));
        } else {
            self.medians_verdict_markdown(&mut md);
        }
        md.push_str(&self.legend_markdown());
        md
    }

    /// The batched verdict on the medians, with its table.
    fn medians_verdict_markdown(&self, md: &mut String) {
        let v = &self.verdict;
        let yes = |b: bool| if b { "**yes**" } else { "**no**" };
        md.push_str(&format!(
            "\n### Verdict ({} medians)\n\n\
             - `call-always` is clearly above `early-key` (by {:.0}% of early-key's median and \
             by the resolution, for every pair): {}\n\
             - `early-key` is within {:.0}% of `baseline` (for every pair): {}\n\n\
             | pair | baseline | call-always | early-key | call-always - early-key | early-key / baseline | resolved |\n\
             |---|---|---|---|---|---|---|\n",
            v.method,
            super::CLEARLY_ABOVE * 100.0,
            yes(v.call_always_clearly_above_early_key),
            super::WITHIN * 100.0,
            yes(v.early_key_within_5pct_of_baseline),
        ));
        for (pair, p) in &v.pairs {
            md.push_str(&format!(
                "| {pair} | {:.3} | {:.3} | {:.3} | {:+.3} | {:.3} | {} |\n",
                p.baseline_ns,
                p.call_always_ns,
                p.early_key_ns,
                p.call_minus_early_ns,
                p.early_over_baseline,
                if p.resolved { "yes" } else { "no" }
            ));
        }
    }

    /// The markdown section's legend.
    fn legend_markdown(&self) -> String {
        let s = &self.settings;
        format!(
            "\nLegend:\n\n\
             - **average**: the average of the per-CPU averages.\n\
             - **max_avg**: the mean of the {} highest samples over all CPUs (in a batched \
             sample a preemption is spread over its K pairs, so it is smaller than one pair's \
             worst case).\n\
             - **median**: the median of the per-CPU medians.\n\
             - **percentile**: the {}: {}.\n\
             - **trimmed mean**: per CPU, the mean without the lowest and highest {}% of \
             samples; averaged over the CPUs.\n\
             - **outliers**: samples above {} times their CPU's median (preempted or \
             interrupted), of all samples.\n\
             - **K**: pairs timed back to back in one sample; figures are per pair.\n\
             - **timer step**: the smallest nonzero difference between two consecutive reads \
             of the timer: the finest a sample resolves.\n\
             - **<x**: below resolution, under {} timer steps per pair (2 x step / K).\n",
            s.highest,
            self.pct_name(),
            self.percentile_from,
            self.trim_percent,
            self.outlier_factor,
            RESOLUTION_STEPS
        )
    }
}

impl super::CodeSize {
    /// The code-size table as text: per pair a row per strategy with the
    /// call site's bytes and the instructions one pair executes, then the
    /// out-of-line callees.
    pub fn text(&self) -> String {
        let mut out = format!(
            "\nCode per call site (from this binary's symbol table and single-stepped counts; {}; \
             {} irq mask, whatever --irq the timings ran under: the hard mask is a system \
             call that would swamp the difference; every tracepoint off)\n\
             bytes: an inline(never) function holding one pair, minus an empty function's {} \
             byte(s); instructions: executed by one pair, calls followed, minus the empty \
             function's {}\n\n\
             {:<10} {:<12} {:>6} {:>13}\n",
            keys_line(self.keys),
            self.irq_mask,
            self.empty_function_bytes,
            self.empty_function_instructions,
            "pair",
            "strategy",
            "bytes",
            "instructions"
        );
        for pair in Pair::ALL {
            for strategy in StrategyKind::ALL {
                if let Some(r) = self.row(pair, strategy) {
                    out.push_str(&format!(
                        "{:<10} {:<12} {:>6} {:>13}\n",
                        pair.key(),
                        strategy.name(),
                        r.call_site_bytes,
                        r.instructions
                    ));
                }
            }
        }
        out.push_str(
            "\nOut-of-line callees (their bytes are in no call site's; their instructions, when \
             called, are in the counts above):\n",
        );
        for c in &self.callees {
            out.push_str(&format!(
                "  {:<22} {:>5} bytes  called by {}\n",
                c.name, c.bytes, c.called_by
            ));
        }
        out
    }

    /// The code-size table as markdown, for a report section.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "Code per call site, from this binary: bytes of an `#[inline(never)]` function \
             holding one pair minus an empty function's ({} byte(s)), and the instructions one \
             pair executes with every tracepoint off, counted by single-stepping it (calls \
             followed), minus the empty function's ({}). Keys: {}; irq mask: {}.\n\n\
             | pair | strategy | bytes per call site | instructions per pair |\n|---|---|---|---|\n",
            self.empty_function_bytes,
            self.empty_function_instructions,
            keys_line(self.keys),
            self.irq_mask
        );
        for pair in Pair::ALL {
            for strategy in StrategyKind::ALL {
                if let Some(r) = self.row(pair, strategy) {
                    md.push_str(&format!(
                        "| {} | {} | {} | {} |\n",
                        pair.key(),
                        strategy.name(),
                        r.call_site_bytes,
                        r.instructions
                    ));
                }
            }
        }
        md.push_str("\nOut-of-line callees, counted apart from the call sites:\n\n");
        for c in &self.callees {
            md.push_str(&format!(
                "- `{}`: {} bytes, called by {}\n",
                c.name, c.bytes, c.called_by
            ));
        }
        md
    }
}
