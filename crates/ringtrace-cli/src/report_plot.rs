//! The report's plot: one panel per finding, each a set of horizontal
//! bars (median, with a whisker from p10 to p90) labelled on the y axis,
//! whose scale is fitted to the data. Horizontal bars keep every label on
//! its own bar, however many there are. Each panel is as tall as its bars
//! need (a row as its tallest), the y label area as wide as its
//! longest label, and the x axis gets as many ticks as fit their labels.

use crate::report::{Report, WriteError};
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

/// One panel: a title, the unit of its x axis, and its bars, drawn from
/// the bottom up.
struct Panel {
    title: String,
    unit: &'static str,
    bars: Vec<Bar>,
}

impl Panel {
    fn new(title: impl Into<String>, unit: &'static str, bars: Vec<Bar>) -> Panel {
        Panel {
            title: title.into(),
            unit,
            bars,
        }
    }
}

// The layout, in pixels of the SVG. plotters writes a font of size `s` as
// `font-size = s / 1.24`; the widths below are reckoned on what it writes.

/// The canvas width; two panels side by side.
const WIDTH: u32 = 1300;
/// Panels per row.
const COLUMNS: usize = 2;
/// The titles' font.
const CAPTION_FONT: f64 = 18.0;
/// The tick labels' and unit's font.
const LABEL_FONT: f64 = 15.0;
/// What plotters divides a font size by to write it.
const FONT_SCALE: f64 = 1.24;
/// A character's width as a share of the written font size, taken wide
/// (DejaVu Sans digits are 0.64 em, lower case about 0.55): labels are
/// given room for this and never run into each other.
const CHAR_EM: f64 = 0.66;
/// Height per bar: at least twice a label's height, so that labels on
/// neighbouring bars keep a gap.
const BAR_PX: u32 = 30;
/// The margin around a panel's chart.
const MARGIN: u32 = 10;
/// The x axis' label area: tick labels, then the unit below them.
const X_LABEL_AREA: u32 = 50;
/// The caption's height.
const CAPTION_PX: u32 = 34;
/// The shortest panel (for one or no bar).
const MIN_PANEL_PX: u32 = 170;
/// The widest the y label area may get, as a share of the panel width.
const MAX_Y_LABEL_SHARE: f64 = 0.45;

/// Width in pixels of `text` in a font of plotters size `font`.
fn text_px(text: &str, font: f64) -> f64 {
    text.chars().count() as f64 * font / FONT_SCALE * CHAR_EM
}

/// A panel's height for `bars` bars.
fn panel_px(bars: usize) -> u32 {
    (CAPTION_PX + X_LABEL_AREA + 2 * MARGIN + bars as u32 * BAR_PX).max(MIN_PANEL_PX)
}

/// `label`, cut with an ellipsis to fit `width` pixels (a last resort:
/// the y label area grows to the longest label first).
fn fit(label: &str, width: f64) -> String {
    if text_px(label, LABEL_FONT) <= width {
        return label.to_owned();
    }
    let mut cut: String = label.chars().collect();
    while !cut.is_empty() && text_px(&format!("{cut}…"), LABEL_FONT) > width {
        cut.pop();
    }
    format!("{cut}…")
}

/// A tick value in few characters, for ticks about `step` apart: the
/// decimals the step needs and no trailing zeros (`2.5`, `40`, `0.004`),
/// thousands as `k` when ticks are thousands apart (`2k`, `12.5k`: every
/// tick of an axis in the same form).
fn tick_text(v: f64, step: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    }
    // One decimal more than the step's first significant digit needs:
    // steps of 2.5 or 0.25 keep their last digit.
    let decimals = |step: f64| {
        if step > 0.0 && step.is_finite() {
            ((-step.log10()).ceil() + 1.0).clamp(0.0, 6.0) as usize
        } else {
            2
        }
    };
    if v.abs() < step.abs() * 1e-6 || v == 0.0 {
        "0".to_owned()
    } else if step >= 1000.0 {
        let d = decimals(step / 1000.0);
        format!("{}k", trim(format!("{:.d$}", v / 1000.0)))
    } else {
        let d = decimals(step);
        trim(format!("{v:.d$}"))
    }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Panel,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let bars = &p.bars;
    if bars.is_empty() {
        area.titled(
            &format!("{}: not measured", p.title),
            ("sans-serif", CAPTION_FONT),
        )?;
        return Ok(());
    }
    let finite = || {
        bars.iter()
            .flat_map(|b| [b.value.p10, b.value.p50, b.value.p90])
            .filter(|v| v.is_finite())
    };
    let xmax = finite().fold(0.0f64, f64::max) * 1.12;
    let xmin = finite().fold(0.0f64, f64::min) * 1.12;
    let xmax = if xmax - xmin < 1e-9 { xmin + 1.0 } else { xmax };
    let panel_w = f64::from(area.dim_in_pixel().0);
    // The y label area: the longest label's width and a gap, no wider
    // than MAX_Y_LABEL_SHARE of the panel (longer labels are cut to fit).
    let longest = bars
        .iter()
        .map(|b| text_px(&b.label, LABEL_FONT))
        .fold(0.0f64, f64::max);
    let y_area = (longest + 16.0).min(panel_w * MAX_Y_LABEL_SHARE);
    let labels: Vec<String> = bars.iter().map(|b| fit(&b.label, y_area - 12.0)).collect();
    // As many x ticks as fit with their widest label and a gap: plotters
    // takes the count as a most.
    let axis_w = panel_w - y_area - 2.0 * f64::from(MARGIN);
    let ticks_that_fit = |step: f64| {
        let widest = [xmin, xmax, xmin + step, xmax - step]
            .iter()
            .map(|&v| text_px(&tick_text(v, step), LABEL_FONT) + 2.0 * text_px("0", LABEL_FONT))
            .fold(0.0f64, f64::max);
        ((axis_w / widest) as usize).clamp(2, 10)
    };
    // The labels' width depends on the step, the step on their count: a
    // first guess at 10 ticks, then the count that guess's labels allow.
    let x_ticks = ticks_that_fit((xmax - xmin) / 10.0);
    let x_ticks = ticks_that_fit((xmax - xmin) / x_ticks as f64).min(x_ticks);
    // plotters takes the count as a most, so ticks are at least this far
    // apart: the decimals this step needs are enough.
    let step = (xmax - xmin) / x_ticks as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", CAPTION_FONT))
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(y_area as u32)
        // A segmented range a..b has a segment for every value from a to b
        // inclusive: one per bar. plotters draws nothing on an empty range
        // 0..0, so a single bar gets an empty segment above it.
        .build_cartesian_2d(xmin..xmax, (0..bars.len().max(2) - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .label_style(("sans-serif", LABEL_FONT))
        .x_labels(x_ticks)
        .x_label_formatter(&|v| tick_text(*v, step))
        .y_labels(bars.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(p.unit)
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
        let v = b.value.p50;
        let mut r = Rectangle::new(
            [
                (v.min(0.0), SegmentValue::Exact(i)),
                (v.max(0.0), SegmentValue::Exact(i + 1)),
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

/// Draws `panels` on `root`, two a row, each row as tall as its panel
/// with the most bars, each panel as tall as its own bars need.
fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    panels: &[Panel],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let mut rest = root.clone();
    for row in panels.chunks(COLUMNS) {
        let (area, below) = rest.split_vertically(row_px(row));
        let cells = area.split_evenly((1, COLUMNS));
        for (cell, p) in cells.iter().zip(row) {
            // Its own height at the top of the cell: a short panel beside a
            // tall one keeps bars of the usual height.
            let (own, _) = cell.split_vertically(panel_px(p.bars.len()));
            panel(&own, p)?;
        }
        rest = below;
    }
    root.present()?;
    Ok(())
}

fn row_px(row: &[Panel]) -> u32 {
    row.iter()
        .map(|p| panel_px(p.bars.len()))
        .max()
        .unwrap_or(0)
}

/// The canvas size for `panels`.
fn canvas(panels: &[Panel]) -> (u32, u32) {
    (
        WIDTH,
        panels.chunks(COLUMNS).map(row_px).sum::<u32>().max(1),
    )
}

impl Report {
    /// Draws the report's panels into an SVG file.
    /// Drawn to a temporary file and renamed over `path`, so a failure
    /// never leaves a truncated plot.
    pub fn write_svg(&self, path: &Path) -> Result<(), WriteError> {
        let tmp = path.with_extension(format!("tmp-{}.svg", std::process::id()));
        let drawn = self.draw_svg(&tmp).map_err(|e| WriteError::Draw {
            path: path.to_owned(),
            reason: e.to_string(),
        });
        let done = drawn.and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|source| WriteError::Io {
                path: path.to_owned(),
                source,
            })
        });
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }

    fn draw_svg(&self, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
        let panels = self.panels();
        let root = SVGBackend::new(path, canvas(&panels)).into_drawing_area();
        draw_panels(&root, &panels)
    }

    /// The plot's panels, in reading order.
    fn panels(&self) -> Vec<Panel> {
        let mut clock_local = Vec::new();
        if let Some(s) = &self.clock_local {
            if let Ok(c) = &s.cost {
                clock_local.push(Bar::new("sched@preempt", c.preempt_ns, 0));
                clock_local.push(Bar::new("sched@irq", c.irq_ns, 1));
                clock_local.push(Bar::new("irq - preempt, per round", c.diff_ns, 3));
            }
        }
        let mut tears = Vec::new();
        if let Some(s) = &self.clock_local {
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
        let mut small = Vec::new();
        if let Some(b) = &self.bh {
            small.push(Bar::new("bh_irqsave: bh pair", b.ns.a, 0));
            small.push(Bar::new(
                "bh_irqsave: bh pair + irq save/restore",
                b.ns.b,
                1,
            ));
        }
        if let Some(d) = &self.debug_preempt {
            small.push(Bar::new("debug_preempt: counter loop", d.ns.a, 0));
            small.push(Bar::new("debug_preempt: + DEBUG_PREEMPT check", d.ns.b, 1));
        }
        let mut counters = Vec::new();
        if let Some(c) = &self.counters {
            counters.push(Bar::new("per-CPU counter", c.ns.a, 0));
            counters.push(Bar::new("one shared atomic", c.ns.b, 1));
        }
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
        vec![
            Panel::new(
                "trace_clock_local: hammer, producer CPU ns per entry",
                "ns per entry",
                clock_local,
            ),
            Panel::new(
                "trace_clock_local: torn readings per million updates (95% interval)",
                "per million",
                tears,
            ),
            Panel::new(
                "preemptirq tracepoints off: ns per pair (median)",
                "ns",
                pairs,
            ),
            Panel::new(
                "bh_irqsave and debug_preempt: instrumentation off, ns",
                "ns",
                small,
            ),
            Panel::new(
                "lock event counters: ns per increment, concurrent",
                "ns",
                counters,
            ),
            Panel::new(
                "ring_buffer_benchmark: ns per entry per clock",
                "ns",
                hammer,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock_local::cost::{CostHalf, CostRound, SideRun};
    use crate::clock_local::ClockLocal;
    use crate::report::HammerRepeats;

    fn spread(p10: f64, p50: f64, p90: f64) -> Spread {
        Spread { p10, p50, p90 }
    }

    fn cost() -> CostHalf {
        let side = |ns| SideRun {
            ns_per_entry_cpu: ns,
            ns_per_entry: ns + 0.5,
            entries: 10_000_000,
            cpu_share: 0.97,
        };
        let rounds = [(24.0, 28.0), (25.0, 29.5), (23.0, 21.0), (30.0, 33.0)]
            .iter()
            .enumerate()
            .map(|(i, &(p, q))| CostRound {
                irq_first: i % 2 == 1,
                preempt: side(p),
                irq: side(q),
            })
            .collect();
        CostHalf::from_rounds(
            rounds,
            crate::clock_local::cost::RUN,
            Ok(2_600_000_000),
            true,
        )
    }

    /// A report with every panel but the pairs' filled, wrong-timestamp
    /// counts in the tens of thousands and every clock source's hammer rows.
    fn report() -> Report {
        let source = |torn: u64, updates: u64| crate::clock_local::tear::SourceRun {
            reads: 100_000_000,
            updates,
            ahead: torn / 2,
            behind: torn - torn / 2,
            max_error_ns: 2_500_000_000,
            unchecked: 0,
            seconds: 30.0,
            update_hz: updates as f64 / 30.0,
        };
        let tear = |clock: &str, amplified: bool, torn: u64, updates: u64| {
            crate::clock_local::tear::summarise(
                clock,
                amplified,
                1000,
                source(torn, updates),
                Err("not run".into()),
            )
        };
        let clock_local = ClockLocal::new(
            Ok(cost()),
            Ok(tear("sched@preempt", false, 0, 30_000)),
            Ok(tear("sched-wide@preempt", true, 1308, 9_999)),
            &[],
        );
        let hammer = [
            "tsc",
            "tsc-ordered",
            "mono",
            "mono-raw",
            "boot",
            "quanta",
            "counter",
            "local",
            "sched",
            "sched-latch",
            "global:tsc-ordered",
        ]
        .iter()
        .map(|c| HammerRepeats {
            clock: (*c).to_owned(),
            runs: Vec::new(),
            ns_per_entry: spread(20.0, 40.0, 130.0),
            ns_per_entry_cpu: spread(15.0, 20.0, 30.0),
        })
        .collect();
        Report {
            machine: "test".into(),
            quick: true,
            interrupted: false,
            clocks: None,
            unavailable: Vec::new(),
            clock_local: Some(clock_local),
            pairs: None,
            pairs_single: None,
            code_size: None,
            bh: Some(crate::instrumentation::bh_pair(3, 1000)),
            counters: Some(crate::instrumentation::counters(2, 1000)),
            debug_preempt: Some(crate::instrumentation::debug_preempt(3, 1000)),
            hammer: Some(hammer),
            kept_trace: None,
        }
    }

    fn svg(panels: &[Panel]) -> String {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, canvas(panels)).into_drawing_area();
            draw_panels(&root, panels).unwrap();
        }
        out
    }

    /// A text's box on the canvas: left, top, right, bottom, and the text.
    type TextBox = (f64, f64, f64, f64, String);

    fn attr(tag: &str, name: &str) -> Option<String> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = tag[start..].find('"')?;
        Some(tag[start..start + len].to_owned())
    }

    /// Every `<text>` of `svg`, boxed by the same width estimate as the
    /// layout's, less its margin (0.6 em a character).
    fn text_boxes(svg: &str) -> Vec<TextBox> {
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let content = rest.split("</text>").next().unwrap().trim();
                let content = content.replace("&amp;", "&").replace("&lt;", "<");
                let num = |n: &str| attr(tag, n).unwrap().parse::<f64>().unwrap();
                let (x, y, size) = (num("x"), num("y"), num("font-size"));
                let w = content.chars().count() as f64 * size * 0.6;
                let left = match attr(tag, "text-anchor").as_deref() {
                    Some("middle") => x - w / 2.0,
                    Some("end") => x - w,
                    _ => x,
                };
                let dy = attr(tag, "dy").unwrap_or_default();
                let shift = if let Some(em) = dy.strip_suffix("em") {
                    em.parse::<f64>().unwrap() * size
                } else if let Some(ex) = dy.strip_suffix("ex") {
                    ex.parse::<f64>().unwrap() * size * 0.5
                } else {
                    0.0
                };
                let baseline = y + shift;
                (
                    left,
                    baseline - 0.76 * size,
                    left + w,
                    baseline + 0.2 * size,
                    content,
                )
            })
            .collect()
    }

    fn assert_no_label_overlaps(svg: &str, (width, height): (u32, u32)) {
        let boxes = text_boxes(svg);
        assert!(boxes.len() > 3, "{svg}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.0 >= 0.0 && a.2 <= f64::from(width) && a.1 >= 0.0 && a.3 <= f64::from(height),
                "{a:?} is off the {width}x{height} canvas"
            );
            for b in &boxes[i + 1..] {
                let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn the_reports_labels_neither_overlap_nor_leave_the_canvas() {
        let panels = report().panels();
        assert_no_label_overlaps(&svg(&panels), canvas(&panels));
    }

    #[test]
    fn many_long_labels_and_large_or_negative_values_still_do_not_overlap() {
        let long = |i: usize| {
            Bar::new(
                format!("global:tsc-ordered@irq-hard producer CPU {i}"),
                spread(-3.5, 12_345.0, 48_000.0),
                i,
            )
        };
        let panels = vec![
            Panel::new("thirty bars", "ns", (0..30).map(long).collect()),
            Panel::new("one bar", "timestamps", vec![Bar::single("x", 0.004, 0)]),
            Panel::new("none", "ns", Vec::new()),
            Panel::new(
                "small and negative",
                "ns",
                vec![Bar::new("d", spread(-9.2, 4.3, 18.5), 3)],
            ),
        ];
        let s = svg(&panels);
        assert_no_label_overlaps(&s, canvas(&panels));
        // The longest labels were cut to fit, with an ellipsis.
        assert!(s.contains('…'), "{s}");
    }

    #[test]
    fn tiny_values_get_distinct_tick_labels_and_a_single_bar_its_label() {
        let panels = vec![Panel::new(
            "one bar",
            "timestamps",
            vec![Bar::single("only", 0.004, 0)],
        )];
        let s = svg(&panels);
        assert_no_label_overlaps(&s, canvas(&panels));
        let texts: Vec<String> = text_boxes(&s).into_iter().map(|b| b.4).collect();
        assert!(texts.iter().any(|t| t == "only"), "{texts:?}");
        let ticks: Vec<&String> = texts.iter().filter(|t| t.parse::<f64>().is_ok()).collect();
        assert!(ticks.len() >= 2, "{texts:?}");
        let mut distinct = ticks.clone();
        distinct.dedup();
        assert_eq!(distinct, ticks, "repeated tick labels");
    }

    #[test]
    fn the_clock_local_panel_shows_each_side_and_the_difference_per_round() {
        let panels = report().panels();
        let labels: Vec<&str> = panels[0].bars.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            ["sched@preempt", "sched@irq", "irq - preempt, per round"]
        );
        let c = cost();
        assert_eq!(panels[0].bars[2].value, c.diff_ns);
        assert_eq!(panels[0].bars[1].value, c.irq_ns);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_text(0.0, 1.0), "0");
        assert_eq!(tick_text(2.5, 2.5), "2.5");
        assert_eq!(tick_text(40.0, 10.0), "40");
        assert_eq!(tick_text(0.25, 0.25), "0.25");
        assert_eq!(tick_text(0.004, 0.0005), "0.004");
        assert_eq!(tick_text(12_500.0, 2500.0), "12.5k");
        assert_eq!(tick_text(40_000.0, 10_000.0), "40k");
        assert_eq!(tick_text(2000.0, 2000.0), "2k");
        assert_eq!(tick_text(12_000.0, 5.0), "12000");
        assert_eq!(tick_text(-5.0, 5.0), "-5");
    }
}
