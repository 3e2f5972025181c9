//! `ringtrace stats`: the figures of [`ringtrace::export::analysis`]
//! printed as tables for people, or as one JSON object whose lists have
//! the SQL queries' column names (docs/analysis.md), for
//! scripts/check_sql.py to compare with DuckDB's and ClickHouse's.

use ringtrace::export::analysis::{Analysis, Threshold};
use ringtrace::export::text::escape;

/// The figures as one JSON object (one line): `section_threshold_ns`,
/// then `slowest_spans`, `span_time_per_thread`, `losses_per_cpu_second`
/// and `long_sections`, each an array of objects, in the analysis's
/// order. Strings are escaped as `dump --json` escapes them.
pub fn json(a: &Analysis) -> Result<String, serde_json::Error> {
    let text = serde_json::to_string(a)?;
    Ok(format!("{}\n", ringtrace::export::text::escape_json(&text)))
}

/// The figures as four tables, each under a heading that says what its
/// rows are and in what order; `(none)` for an empty one.
pub fn text(a: &Analysis) -> String {
    let mut out = String::new();
    table(
        &mut out,
        "Slowest spans by name (durations; p50 and p99 by nearest rank), by p99",
        &["name", "spans", "unclosed", "p50", "p99", "max", "total"],
        a.slowest_spans.iter().map(|s| {
            vec![
                escape(&s.name).into_owned(),
                s.spans.to_string(),
                s.unclosed.to_string(),
                duration(s.p50_ns),
                duration(s.p99_ns),
                duration(s.max_ns),
                duration(s.total_ns),
            ]
        }),
    );
    table(
        &mut out,
        "Time in spans per thread (busy time, on the thread that created each span), busiest first",
        &["pid", "comm", "tid", "name", "spans", "busy"],
        a.span_time_per_thread.iter().map(|t| {
            vec![
                t.pid.to_string(),
                escape(&t.comm).into_owned(),
                t.tid.to_string(),
                escape(&t.name).into_owned(),
                t.spans.to_string(),
                duration(t.busy_ns),
            ]
        }),
    );
    let lost: u64 = a.losses_per_cpu_second.iter().map(|l| l.lost).sum();
    table(
        &mut out,
        &format!("Lost events per CPU and second of the trace's clock ({lost} in all)"),
        &["pid", "comm", "cpu", "second", "lost"],
        a.losses_per_cpu_second.iter().map(|l| {
            vec![
                l.pid.to_string(),
                escape(&l.comm).into_owned(),
                l.cpu.to_string(),
                l.second.to_string(),
                l.lost.to_string(),
            ]
        }),
    );
    table(
        &mut out,
        &format!(
            "Preemptirq sections longer than {}, longest first",
            Threshold::from_ns(a.section_threshold_ns)
        ),
        &[
            "pid", "comm", "tid", "cpu", "section", "start_ns", "duration", "closed",
        ],
        a.long_sections.iter().map(|s| {
            vec![
                s.pid.to_string(),
                escape(&s.comm).into_owned(),
                s.tid.to_string(),
                s.cpu.to_string(),
                s.section.clone(),
                s.start_ns.to_string(),
                duration(s.duration_ns),
                if s.closed { "yes" } else { "no (trace ended)" }.to_owned(),
            ]
        }),
    );
    out
}

/// `ns` in the largest unit that keeps it at 1 or more, three decimals:
/// `812ns`, `12.500us`, `3.000ms`, `1.250s`.
fn duration(ns: u64) -> String {
    let (scale, unit) = match ns {
        0..1_000 => return format!("{ns}ns"),
        1_000..1_000_000 => (1_000, "us"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    let thousandths = ns / (scale / 1_000);
    format!("{}.{:03}{unit}", thousandths / 1_000, thousandths % 1_000)
}

/// Appends a heading, then `rows` under `header` in columns as wide as
/// their widest cell (numbers right-aligned), then a blank line.
fn table(
    out: &mut String,
    heading: &str,
    header: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) {
    let rows: Vec<Vec<String>> = rows.collect();
    out.push_str(heading);
    out.push('\n');
    if rows.is_empty() {
        out.push_str("  (none)\n\n");
        return;
    }
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let numeric = |i: usize| {
        rows.iter()
            .all(|r| r[i].starts_with(|c: char| c.is_ascii_digit()))
    };
    let right: Vec<bool> = (0..header.len()).map(numeric).collect();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::from(" ");
        for (i, cell) in cells.enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            text.push(' ');
            if right[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
            text.push(' ');
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for r in &rows {
        line(&mut r.iter().map(String::as_str));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_in_the_largest_unit_with_three_decimals() {
        assert_eq!(duration(0), "0ns");
        assert_eq!(duration(999), "999ns");
        assert_eq!(duration(1_000), "1.000us");
        assert_eq!(duration(12_500), "12.500us");
        assert_eq!(duration(3_000_000), "3.000ms");
        assert_eq!(duration(1_250_000_000), "1.250s");
        assert_eq!(duration(u64::MAX), "18446744073.709s");
    }

    #[test]
    fn a_table_aligns_its_columns_and_says_none_when_empty() {
        let mut out = String::new();
        let rows = vec![
            vec!["a".to_owned(), "5".to_owned()],
            vec!["long name".to_owned(), "12345".to_owned()],
        ];
        table(&mut out, "T", &["name", "n"], rows.into_iter());
        table(&mut out, "E", &["x"], std::iter::empty());
        assert_eq!(
            out,
            "T\n  name           n\n  a              5\n  long name  12345\n\nE\n  (none)\n\n"
        );
    }
}
