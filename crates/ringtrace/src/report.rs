//! `ringtrace report`: a short hammer per clock, then pairs, then clocks;
//! markdown tables in the seeds' shapes, `report.json` and a plot.

use crate::clocks::{self, ClockRow, ClocksConfig, Unavailable};
use crate::hammer::{self, HammerConfig, HammerResult};
use crate::pairs::{self, Pair, PairsConfig, PairsResult};
use plotters::prelude::*;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::{ClockSpec, Protection, SourceName};
use ringtrace_tracepoint::preemptirq::StrategyKind;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// How long the report runs.
#[derive(Debug, Clone, Copy)]
pub struct ReportConfig {
    /// Under two minutes on 2 cores.
    pub quick: bool,
}

/// Everything a report measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What ran it.
    pub machine: String,
    /// One hammer run per available clock source (raw protection).
    pub hammer: Vec<HammerResult>,
    /// The pairs measurement.
    pub pairs: PairsResult,
    /// The pairs settings, for the table heading.
    pub pairs_samples: usize,
    /// The clocks measurement.
    pub clocks: Vec<ClockRow>,
    /// Clock sources that cannot work here.
    pub unavailable: Vec<Unavailable>,
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpus} CPUs, {model}, Linux {}", kernel.trim())
}

/// Runs the report; `progress` gets a line per step.
pub fn run(
    config: ReportConfig,
    progress: &dyn Fn(&str),
) -> Result<Report, Box<dyn std::error::Error>> {
    let hammer_time = if config.quick {
        Duration::from_millis(400)
    } else {
        Duration::from_secs(3)
    };
    let mut hammer_runs = Vec::new();
    for source in SourceName::ALL {
        let spec = ClockSpec {
            source,
            global: false,
            protection: Protection::Raw,
        };
        if spec.build().is_err() {
            continue;
        }
        progress(&format!("hammer with {spec}"));
        let hc = HammerConfig {
            duration: hammer_time,
            clock: spec,
            producer_nice: 0,
            consumer_nice: 0,
            ..HammerConfig::default()
        };
        hammer_runs.push(hammer::run(&hc)?);
    }
    progress("pairs");
    let samples = if config.quick { 200_000 } else { 2_000_000 };
    let pc = PairsConfig {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        samples,
        highest: 1000,
        percentile: 99,
        irq: IrqBackend::Soft,
    };
    let pairs_result = pairs::run(&pc, &|| {})?;
    progress("clocks");
    let cc = ClocksConfig {
        anomaly_run: if config.quick {
            Duration::from_millis(30)
        } else {
            Duration::from_millis(150)
        },
        ..ClocksConfig::default()
    };
    let (clock_rows, unavailable) = clocks::run(&cc, &|name| progress(&format!("clocks: {name}")));
    Ok(Report {
        machine: machine(),
        hammer: hammer_runs,
        pairs: pairs_result,
        pairs_samples: samples,
        clocks: clock_rows,
        unavailable,
    })
}

impl Report {
    /// Markdown tables in the seeds' shapes.
    pub fn markdown(&self) -> String {
        let mut md = format!("# ringtrace report\n\nMachine: {}\n\n", self.machine);
        md.push_str("## Ring buffer hammer, one run per clock (ring_buffer_benchmark)\n\n");
        md.push_str("| clock | time (us) | hit | read | overruns | entries | total | missed | entries/ms | ns/entry |\n");
        md.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for h in &self.hammer {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |\n",
                h.clock,
                h.time_us,
                h.hit,
                h.read,
                h.overruns,
                h.entries,
                h.total,
                h.missed,
                h.entries_per_ms,
                h.ns_per_entry
            ));
        }
        md.push_str(&format!(
            "\n## Preemptirq pairs (seed 000), soft irq mask, {} samples per CPU, ns\n\
             Timer overhead {:.2} ns subtracted.\n",
            self.pairs_samples, self.pairs.timer_overhead_ns
        ));
        for pair in Pair::ALL {
            md.push_str(&format!("\n{}\n\n| Combined Metric | average | max_avg | median | percentile |\n|---|---|---|---|---|\n", pair.title()));
            for strategy in StrategyKind::ALL {
                if let Some(m) = self
                    .pairs
                    .pairs
                    .get(pair.key())
                    .and_then(|p| p.get(strategy.name()))
                {
                    md.push_str(&format!(
                        "| {} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                        strategy.name(),
                        m.average,
                        m.max_avg,
                        m.median,
                        m.percentile
                    ));
                }
            }
        }
        md.push_str("\n## Clocks under each protection (seed 004)\n\n");
        md.push_str("| clock | protection | read ns | record ns | inversions | events | skew ns |\n|---|---|---|---|---|---|---|\n");
        for r in &self.clocks {
            md.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {} | {} | {:.0} |\n",
                r.clock, r.protection, r.read_ns, r.record_ns, r.inversions, r.events, r.skew_ns
            ));
        }
        for u in &self.unavailable {
            md.push_str(&format!("\n- `{}` unavailable: {}", u.clock, u.reason));
        }
        md.push('\n');
        md
    }

    /// Writes the report as JSON.
    pub fn write_json(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()).into())
    }

    /// Draws the pair costs per strategy and the record cost per clock and
    /// protection into an SVG file.
    pub fn write_svg(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        self.draw_svg(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()).into())
    }

    fn draw_svg(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (1100, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(420);
        self.draw_pairs(&top)?;
        self.draw_record_cost(&bottom)?;
        root.present()?;
        Ok(())
    }

    fn draw_pairs<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        // One panel per pair: the share of samples per power-of-two bucket
        // of latency, a line per strategy.
        let panels = area.split_evenly((1, Pair::ALL.len()));
        let colors = [BLUE, RED, GREEN];
        for (panel, pair) in panels.iter().zip(Pair::ALL) {
            let Some(by_strategy) = self.pairs.distribution.get(pair.key()) else {
                continue;
            };
            let xmax = by_strategy
                .values()
                .flat_map(|v| v.iter().map(|p| p[0]))
                .fold(2.0f64, f64::max);
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!("{}: latency distribution", pair.key()),
                    ("sans-serif", 16),
                )
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(45)
                .build_cartesian_2d((0.5f64..xmax * 2.0).log_scale(), 0f64..1.0f64)?;
            chart
                .configure_mesh()
                .x_desc("ns (bucket upper bound)")
                .y_desc("share of samples")
                .draw()?;
            for (si, strategy) in StrategyKind::ALL.iter().enumerate() {
                let color = colors[si];
                let points: Vec<(f64, f64)> = by_strategy
                    .get(strategy.name())
                    .map(|v| v.iter().map(|p| (p[0].max(0.5), p[1])).collect())
                    .unwrap_or_default();
                chart
                    .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                    .label(strategy.name())
                    .legend(move |(x, y)| swatch(x, y, color));
            }
            legend(&mut chart)?;
        }
        Ok(())
    }

    fn draw_record_cost<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        let sources: Vec<String> = {
            let mut v: Vec<String> = self.clocks.iter().map(|r| r.clock.clone()).collect();
            v.dedup();
            v
        };
        let ymax = self
            .clocks
            .iter()
            .map(|r| r.record_ns)
            .fold(1.0f64, f64::max);
        let mut chart = ChartBuilder::on(area)
            .caption(
                "Recorded event cost per clock and protection (ns, log scale)",
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..sources.len() as f64, (1f64..ymax * 2.0).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(sources.len().max(1))
            .x_label_formatter(&|x| sources.get(*x as usize).cloned().unwrap_or_default())
            .y_desc("ns per event")
            .draw()?;
        let colors = [BLUE, GREEN, MAGENTA, RED];
        for (pi, protection) in ["raw", "preempt", "irq-soft", "irq-hard"]
            .iter()
            .enumerate()
        {
            let color = colors[pi];
            let points: Vec<(f64, f64)> = self
                .clocks
                .iter()
                .filter(|r| r.protection == *protection)
                .filter_map(|r| {
                    sources
                        .iter()
                        .position(|s| *s == r.clock)
                        .map(|i| (i as f64, r.record_ns.max(1.0)))
                })
                .collect();
            chart
                .draw_series(points.iter().map(|&(x, v)| {
                    let x0 = x + 0.1 + pi as f64 * 0.2;
                    Rectangle::new([(x0, 1.0), (x0 + 0.18, v)], color.filled())
                }))?
                .label(*protection)
                .legend(move |(x, y)| swatch(x, y, color));
        }
        legend(&mut chart)
    }
}

/// A legend's colour square.
fn swatch(x: i32, y: i32, color: RGBColor) -> Rectangle<(i32, i32)> {
    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
}

/// Draws the series legend in the upper left corner.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()?;
    Ok(())
}
