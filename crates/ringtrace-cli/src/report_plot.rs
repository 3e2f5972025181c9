//! The report's plot: one panel per finding, each a set of horizontal
//! bars (median, with a whisker from p10 to p90) labelled on the y axis,
//! whose scale is fitted to the data. Horizontal bars keep every label on
//! its own bar, however many there are.

use crate::report::Report;
use crate::spread::Spread;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use std::path::Path;

/// One bar.
struct Bar {
    label: String,
    value: Spread,
    /// Index into the panel's palette.
    color: usize,
}

impl Bar {
    fn new(label: impl Into<String>, value: Spread, color: usize) -> Bar {
        Bar {
            label: label.into(),
            value,
            color,
        }
    }

    fn single(label: impl Into<String>, v: f64, color: usize) -> Bar {
        Bar::new(
            label,
            Spread {
                p10: v,
                p50: v,
                p90: v,
            },
            color,
        )
    }
}

const PALETTE: [RGBColor; 4] = [
    RGBColor(66, 114, 196),
    RGBColor(221, 132, 82),
    RGBColor(85, 168, 104),
    RGBColor(196, 78, 82),
];

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    unit: &str,
    bars: &[Bar],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    if bars.is_empty() {
        area.titled(&format!("{title}: not measured"), ("sans-serif", 16))?;
        return Ok(());
    }
    let xmax = bars
        .iter()
        .map(|b| b.value.p90.max(b.value.p50))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.12;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(190)
        // A segmented range a..b has a segment for every value from a to b
        // inclusive: one per bar.
        .build_cartesian_2d(0f64..xmax, (0..bars.len() - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(unit)
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let mut r = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (b.value.p50.max(0.0), SegmentValue::Exact(i + 1)),
            ],
            PALETTE[b.color % PALETTE.len()].filled(),
        );
        r.set_margin(4, 4, 0, 0);
        r
    }))?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        PathElement::new(
            vec![
                (b.value.p10, SegmentValue::CenterOf(i)),
                (b.value.p90, SegmentValue::CenterOf(i)),
            ],
            BLACK.stroke_width(2),
        )
    }))?;
    Ok(())
}

impl Report {
    /// Draws the report's panels into an SVG file.
    /// Drawn to a temporary file and renamed over `path`, so a failure
    /// never leaves a truncated plot.
    pub fn write_svg(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let tmp = path.with_extension(format!("tmp-{}.svg", std::process::id()));
        let drawn = self
            .draw_svg(&tmp)
            .map_err(|e| format!("cannot draw {}: {e}", path.display()));
        let done = drawn.and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
        });
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done.map_err(Into::into)
    }

    fn draw_svg(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (1300, 1500)).into_drawing_area();
        root.fill(&WHITE)?;
        let panels = root.split_evenly((3, 2));
        let mut seed004 = Vec::new();
        if let Some(s) = &self.seed004 {
            if let Ok(c) = &s.cost {
                seed004.push(Bar::new("sched@preempt", c.preempt_ns, 0));
                seed004.push(Bar::new("sched@irq", c.irq_ns, 1));
            }
        }
        panel(
            &panels[0],
            "004 trace_clock_local: ns per recorded event",
            "ns",
            &seed004,
        )?;
        let mut tears = Vec::new();
        if let Some(s) = &self.seed004 {
            for (label, run, color) in
                [("faithful", &s.faithful, 0), ("amplified", &s.amplified, 1)]
            {
                if let Ok(t) = run {
                    let per_million = |p: f64| p * 1e6;
                    tears.push(Bar::new(
                        format!("{} ({label})", t.clock),
                        Spread {
                            p10: per_million(t.rate.low),
                            p50: per_million(t.rate.estimate),
                            p90: per_million(t.rate.high),
                        },
                        color,
                    ));
                }
            }
        }
        panel(
            &panels[1],
            "004: torn readings per million updates (95% interval)",
            "per million",
            &tears,
        )?;
        let mut pairs = Vec::new();
        if let Some(Ok(p)) = &self.pairs {
            for (pair, by_strategy) in &p.pairs {
                for (si, strategy) in ["baseline", "call-always", "early-key"].iter().enumerate() {
                    if let Some(m) = by_strategy.get(strategy) {
                        pairs.push(Bar::single(format!("{pair} {strategy}"), m.median, si));
                    }
                }
            }
        }
        panel(
            &panels[2],
            "000 preemptirq tracepoints off: ns per pair (median)",
            "ns",
            &pairs,
        )?;
        let mut small = Vec::new();
        if let Some(b) = &self.bh {
            small.push(Bar::new("001 bh pair", b.ns.a, 0));
            small.push(Bar::new("001 bh pair + irq save/restore", b.ns.b, 1));
        }
        if let Some(d) = &self.debug_preempt {
            small.push(Bar::new("003 counter loop", d.ns.a, 0));
            small.push(Bar::new("003 + DEBUG_PREEMPT check", d.ns.b, 1));
        }
        panel(
            &panels[3],
            "001 and 003: instrumentation off, ns",
            "ns",
            &small,
        )?;
        let mut counters = Vec::new();
        if let Some(c) = &self.counters {
            counters.push(Bar::new("per-CPU counter", c.ns.a, 0));
            counters.push(Bar::new("one shared atomic", c.ns.b, 1));
        }
        panel(
            &panels[4],
            "002 lock event counters: ns per increment, concurrent",
            "ns",
            &counters,
        )?;
        let hammer: Vec<Bar> = self
            .hammer
            .iter()
            .flatten()
            .flat_map(|h| {
                [
                    Bar::new(format!("{} wall", h.clock), h.ns_per_entry, 0),
                    Bar::new(format!("{} producer CPU", h.clock), h.ns_per_entry_cpu, 1),
                ]
            })
            .collect();
        panel(
            &panels[5],
            "ring_buffer_benchmark: ns per entry per clock",
            "ns",
            &hammer,
        )?;
        root.present()?;
        Ok(())
    }
}
