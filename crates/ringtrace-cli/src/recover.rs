//! `ringtrace recover`: what a recovery of a trace file found, as text or
//! JSON: the file, the writer, the clock, the geometry, the metadata, and
//! each CPU's counts.

use ringtrace::export::metadata_decoder;
use ringtrace::export::text::{clock_words, escape, utc_time, writer_name, writer_words};
use ringtrace::ring::file::{Recovery, RecoveryCounts, WriterState};
use ringtrace::ring::Stats;
use serde_json::{json, Value};

fn geometry_words(r: &Recovery) -> String {
    let h = &r.header;
    format!(
        "{} CPU{} x {} pages of {} bytes, {} quarantine pages, {} mode; file {} bytes",
        h.cpus,
        if h.cpus == 1 { "" } else { "s" },
        h.pages_per_cpu,
        h.page_size,
        h.quarantine_pages,
        h.mode,
        h.layout.file_len
    )
}

/// The metadata records in words: how many, in how many bytes.
fn records_words(r: &Recovery) -> String {
    let records = r.metadata_records();
    let bytes: usize = records.iter().map(Vec::len).sum();
    format!(
        "{} metadata record{} appended at run time ({bytes} bytes)",
        records.len(),
        if records.len() == 1 { "" } else { "s" }
    )
}

fn counts_words(c: &RecoveryCounts) -> String {
    format!(
        "recovered {}, skipped pending {}, skipped unreadable {}, changed while read {}",
        c.recovered, c.skipped_pending, c.skipped_unreadable, c.changed_while_read
    )
}

fn stats_words(s: &Stats) -> String {
    format!(
        "hit {}, read {}, overrun {}, lost {}, discarded {}, missed {} (page still being written {}, page being prepared {}, too large {}), ts_fixups {}",
        s.hit,
        s.read,
        s.overrun,
        s.lost,
        s.discarded,
        s.missed,
        s.busy,
        s.preparing,
        s.too_large,
        s.ts_fixups
    )
}

/// What `ringtrace recover` prints: the file, the writer, the clock, the
/// geometry, the metadata (and the records appended at run time, with
/// any damage to them, when there are), then each CPU's counts,
/// accounting words and problems, and a total; one line each, with what
/// comes from the file escaped ([`escape`]).
pub fn recovery_text(r: &Recovery) -> String {
    let mut out = String::new();
    // The path, the command name and the problems found can hold what a
    // terminal would obey: each line is escaped.
    let mut line = |s: String| {
        out.push_str(&escape(&s));
        out.push('\n');
    };
    let h = &r.header;
    line(format!("file:      {}", r.path.display()));
    line(format!("writer:    {}", writer_words(r)));
    line(format!("clock:     {}", clock_words(&h.clock)));
    line(format!(
        "anchor:    {} (clock ticks {})",
        utc_time(h.wall_ns),
        h.anchor_ticks
    ));
    line(format!("geometry:  {}", geometry_words(r)));
    match metadata_decoder(r).summary {
        Ok(words) => line(format!("metadata:  {words}")),
        Err(why) => line(format!("metadata:  none usable: {why}")),
    }
    if !r.metadata_records().is_empty() || !r.annex_problems().is_empty() {
        line(format!("records:   {}", records_words(r)));
        for p in r.annex_problems() {
            line(format!("           problem: {p}"));
        }
    }
    for c in &r.cpus {
        line(format!("cpu {:>3}:   {}", c.cpu, counts_words(&c.counts)));
        line(format!(
            "           accounting: {}",
            stats_words(&c.file_stats)
        ));
        for p in &c.problems {
            line(format!("           problem: {p}"));
        }
    }
    line(format!("total:     {}", counts_words(&r.totals())));
    line(format!(
        "           accounting: {}",
        stats_words(&r.file_stats())
    ));
    if r.has_problems() {
        line("Recovered in part: the problems above say what could not be read.".into());
    }
    out
}

fn counts_json(c: &RecoveryCounts) -> Value {
    json!({
        "recovered": c.recovered,
        "skipped_pending": c.skipped_pending,
        "skipped_unreadable": c.skipped_unreadable,
        "changed_while_read": c.changed_while_read,
    })
}

fn stats_json(s: &Stats) -> Value {
    json!({
        "hit": s.hit,
        "read": s.read,
        "overrun": s.overrun,
        "lost": s.lost,
        "discarded": s.discarded,
        "missed": s.missed,
        "missed_busy": s.busy,
        "missed_preparing": s.preparing,
        "missed_too_large": s.too_large,
        "ts_fixups": s.ts_fixups,
        "entries": s.entries,
        "pages_reclaimed": s.pages_reclaimed,
        "fixups_refused": s.fixups_refused,
    })
}

/// What `ringtrace recover --json` prints: [`recovery_text`]'s contents
/// as one object.
pub fn recovery_json(r: &Recovery) -> Value {
    let h = &r.header;
    let c = &h.clock;
    let metadata = match metadata_decoder(r).summary {
        Ok(words) => json!({ "usable": true, "summary": words }),
        Err(why) => json!({ "usable": false, "error": why.to_string() }),
    };
    let status_word = match r.writer {
        WriterState::Unknown(w) => Some(w),
        _ => None,
    };
    // When the process exited normally with the ring alive: the clock's
    // ticks and the wall-clock time (read then, or placed by the anchor),
    // each null when unknown.
    let exit = match r.writer {
        WriterState::Exited(exit) => {
            let wall_ns = exit.wall_ns_or_anchored(h);
            json!({
                "ticks": exit.ticks,
                "wall_ns": wall_ns,
                "wall_time": wall_ns.map(utc_time),
                "code": exit.code,
            })
        }
        _ => Value::Null,
    };
    json!({
        "file": r.path.display().to_string(),
        "writer": {
            "state": writer_name(r.writer),
            "status_word": status_word,
            "exit": exit,
            "pid": h.pid,
            "comm": h.comm,
            "words": writer_words(r),
        },
        "clock": {
            "name": c.name,
            "frequency_hz": c.frequency_hz,
            "mult": c.mult,
            "shift": c.shift,
            "ticks_are_ns": c.ticks_are_ns,
            "ticks_are_time": c.mult.is_some(),
            "guarantee": c.guarantee.name(),
            "precision_ns": c.precision_ns,
        },
        "wall_ns": h.wall_ns,
        "wall_time": utc_time(h.wall_ns),
        "anchor_ticks": h.anchor_ticks,
        "geometry": {
            "cpus": h.cpus,
            "pages_per_cpu": h.pages_per_cpu,
            "page_size": h.page_size,
            "quarantine_pages": h.quarantine_pages,
            "mode": h.mode.name(),
            "file_len": h.layout.file_len,
        },
        "metadata": metadata,
        "metadata_records": {
            "count": r.metadata_records().len(),
            "bytes": r.metadata_records().iter().map(Vec::len).sum::<usize>(),
            "annex_capacity": h.layout.annex_capacity,
            "problems": r.annex_problems(),
        },
        "cpus": r.cpus.iter().map(|c| json!({
            "cpu": c.cpu,
            "counts": counts_json(&c.counts),
            "accounting": stats_json(&c.file_stats),
            "problems": c.problems,
        })).collect::<Vec<_>>(),
        "total": {
            "counts": counts_json(&r.totals()),
            "accounting": stats_json(&r.file_stats()),
        },
        "has_problems": r.has_problems(),
    })
}
