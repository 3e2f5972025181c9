//! The five tables of a scripted trace (tracepoints, preemptirq sections,
//! `tracing` events and spans, a raw payload, a local span) read back
//! with parquet's own reader: their rows, ids, times and MAP fields.

mod common;

use common::*;
use ringtrace_export::{Dump, DumpOptions, Trace};
use ringtrace_parquet::{write_parquet, ParquetOptions, ParquetSummary};
use std::collections::BTreeMap;

type Fields = BTreeMap<String, parquet::record::Field>;

fn export(
    dir: &TempDir,
    options: ParquetOptions,
) -> (ringtrace_ring::file::Recovery, ParquetSummary) {
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let done = write_parquet(&Trace::single(&recovery), &dir.path().join("out"), &options).unwrap();
    (recovery, done)
}

fn by_name<'t>(rows: &'t [Fields], column: &str, value: &str) -> &'t Fields {
    rows.iter()
        .find(|r| string(r, column).as_deref() == Some(value))
        .unwrap_or_else(|| panic!("no row with {column} = {value}"))
}

#[test]
fn every_table_reads_back_with_the_rows_the_trace_holds() {
    let dir = TempDir::new("parquet-rows");
    let (recovery, done) = export(&dir, ParquetOptions::default().host("db-7"));
    let out = dir.path().join("out");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "events.parquet",
            "losses.parquet",
            "processes.parquet",
            "sections.parquet",
            "spans.parquet"
        ]
    );
    assert_eq!(
        dir.entries(),
        ["app.ring", "out"],
        "no temporary directory is left"
    );

    // Every event of the dump is a row of the events table but the 12
    // span records (3 new, 3 enter, 3 exit, 2 close, 1 local span).
    let dump = Dump::new(&recovery, DumpOptions::default()).unwrap();
    assert_eq!(dump.events().len(), 19);
    let events = read(&out, "events");
    assert_eq!(events.rows.len(), 7);
    assert_eq!(done.events, 7);
    let spans = read(&out, "spans");
    assert_eq!(spans.rows.len(), 4);
    assert_eq!(done.spans, 4);
    assert_eq!(read(&out, "sections").rows.len(), 2);
    assert_eq!(read(&out, "losses").rows.len(), 0);
    assert_eq!(done.lost, 0);
    let processes = read(&out, "processes");
    assert_eq!(processes.rows.len(), 1);
    let p = &processes.rows[0];
    assert_eq!(long(p, "events"), 19);
    assert_eq!(long(p, "lost"), 0);
    assert_eq!(long(p, "first_ns"), 1_000_100);
    assert_eq!(long(p, "last_ns"), 1_001_600);
    assert_eq!(string(p, "clock").as_deref(), Some("manual"));
    assert_eq!(string(p, "ring"), Some(recovery.path.display().to_string()));
    assert_eq!(
        string(p, "wall_source").as_deref(),
        Some("the ring header's wall-clock anchor")
    );

    // The summary's tables are the files, rows and sizes.
    for t in &done.tables {
        assert_eq!(read(&out, &t.name).rows.len() as u64, t.rows, "{}", t.name);
        assert_eq!(std::fs::metadata(&t.path).unwrap().len(), t.bytes);
    }
    // Every row names the host, the process and its command.
    for name in ["events", "spans", "losses", "processes", "sections"] {
        for row in read(&out, name).rows {
            assert_eq!(string(&row, "host").as_deref(), Some("db-7"), "{name}");
            assert_eq!(long(&row, "pid"), i64::from(recovery.header.pid), "{name}");
            assert_eq!(string(&row, "comm"), Some(recovery.header.comm.clone()));
        }
    }
}

#[test]
fn events_carry_kind_name_level_target_and_fields_as_a_map() {
    let dir = TempDir::new("parquet-events");
    export(&dir, ParquetOptions::default());
    let rows = read(&dir.path().join("out"), "events").rows;
    let kinds: Vec<(String, String)> = rows
        .iter()
        .map(|r| (string(r, "kind").unwrap(), string(r, "name").unwrap()))
        .collect();
    let kind = |k: &str, n: &str| (k.to_owned(), n.to_owned());
    assert_eq!(
        kinds,
        [
            kind("tracepoint", "preemptirq:irq_disable"),
            kind("event", "querying"),
            kind("tracepoint", "preemptirq:irq_enable"),
            kind("tracepoint", "app:page_read"),
            kind("event", "boom"),
            kind("tracepoint", "preemptirq:irq_disable"),
            kind("raw", "raw"),
        ],
        "in time order"
    );
    let times: Vec<i64> = rows.iter().map(|r| long(r, "time_ns")).collect();
    assert_eq!(
        times,
        [1_000_100, 1_000_450, 1_000_500, 1_000_900, 1_001_200, 1_001_400, 1_001_500]
    );

    let entry = |k: &str, v: &str| (k.to_owned(), Some(v.to_owned()));
    let querying = by_name(&rows, "name", "querying");
    assert_eq!(string(querying, "level").as_deref(), Some("INFO"));
    assert_eq!(string(querying, "target").as_deref(), Some("app::db"));
    assert_eq!(long(querying, "tid"), 10);
    assert_eq!(int(querying, "cpu"), 0);
    assert_eq!(
        map(querying, "fields"),
        Some(vec![entry("n", "7")]),
        "the message names it"
    );
    let boom = by_name(&rows, "name", "boom");
    assert_eq!(string(boom, "level").as_deref(), Some("ERROR"));
    assert_eq!(map(boom, "fields"), Some(vec![entry("code", "-3")]));
    assert_eq!((long(boom, "tid"), int(boom, "cpu")), (11, 1));

    let read_page = by_name(&rows, "name", "app:page_read");
    assert_eq!(
        map(read_page, "fields"),
        Some(vec![entry("n", "5"), entry("note", "x")])
    );
    assert_eq!(
        (string(read_page, "level"), string(read_page, "target")),
        (None, None)
    );
    let irq = by_name(&rows, "name", "preemptirq:irq_enable");
    assert_eq!(
        map(irq, "fields"),
        Some(vec![
            entry("ip", "irq.rs:10:5"),
            entry("parent", "irq.rs:11:5")
        ])
    );
    let raw = by_name(&rows, "kind", "raw");
    let fields = map(raw, "fields").unwrap();
    assert_eq!(fields[0], entry("raw", "eeeeeeeeee"));
    assert_eq!(fields[1].0, "why");
    assert!(
        fields[1]
            .1
            .as_deref()
            .is_some_and(|w| w.contains("no tracepoint")),
        "{fields:?}"
    );
    assert_eq!(
        long(raw, "tid"),
        long(raw, "pid"),
        "a raw event is its process's"
    );
    assert!(rows.iter().all(|r| long(r, "lost_before") == 0));
}

#[test]
fn a_spans_ids_parents_and_durations_are_exact() {
    let dir = TempDir::new("parquet-spans");
    export(&dir, ParquetOptions::default());
    let rows = read(&dir.path().join("out"), "spans").rows;
    let names: Vec<String> = rows.iter().map(|r| string(r, "name").unwrap()).collect();
    assert_eq!(names, ["request", "db", "idle", "compute"], "by start");

    let request = by_name(&rows, "name", "request");
    assert_eq!(
        string(request, "trace_id").as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736"),
        "the traceparent's"
    );
    assert_eq!(
        string(request, "parent_span_id").as_deref(),
        Some("00f067aa0ba902b7"),
        "the remote parent"
    );
    let id = string(request, "span_id").unwrap();
    assert_eq!(id.len(), 16);
    assert!(id
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(
        [
            long(request, "start_ns"),
            long(request, "end_ns"),
            long(request, "duration_ns")
        ],
        [1_000_150, 1_001_100, 950]
    );
    assert_eq!(long(request, "busy_ns"), 800);
    assert_eq!(
        (
            int(request, "threads"),
            boolean(request, "task"),
            long(request, "events")
        ),
        (1, false, 0)
    );
    assert!(boolean(request, "closed") && !boolean(request, "error") && !boolean(request, "local"));
    let entry = |k: &str, v: &str| (k.to_owned(), Some(v.to_owned()));
    assert_eq!(
        map(request, "fields"),
        Some(vec![
            entry("user", "ada"),
            entry("traceparent", TRACEPARENT)
        ])
    );
    assert_eq!(string(request, "level").as_deref(), Some("INFO"));
    assert_eq!(long(request, "tid"), 10);

    let db = by_name(&rows, "name", "db");
    assert_eq!(string(db, "parent_span_id"), Some(id), "the request's");
    assert_eq!(string(db, "trace_id"), string(request, "trace_id"));
    assert_eq!(
        [
            long(db, "start_ns"),
            long(db, "end_ns"),
            long(db, "duration_ns"),
            long(db, "busy_ns")
        ],
        [1_000_300, 1_000_850, 550, 400 + 100]
    );
    assert_eq!(
        (int(db, "threads"), boolean(db, "task")),
        (2, true),
        "threads 10 and 11"
    );
    assert_eq!(long(db, "events"), 1, "`querying`");
    assert_eq!(string(db, "level").as_deref(), Some("DEBUG"));
    assert_eq!(map(db, "fields"), Some(vec![entry("query", "select 1")]));

    let idle = by_name(&rows, "name", "idle");
    assert!(!boolean(idle, "closed"), "never closed");
    assert_eq!(
        [long(idle, "start_ns"), long(idle, "end_ns")],
        [1_001_300, 1_001_600],
        "to the trace's end"
    );
    assert!(boolean(idle, "error"), "level ERROR");
    assert_eq!(
        string(idle, "parent_span_id"),
        None,
        "a root with no traceparent"
    );
    assert_eq!(string(idle, "trace_id").map(|t| t.len()), Some(32));
    assert_eq!(map(idle, "fields"), Some(vec![]), "an empty map, not NULL");

    let compute = by_name(&rows, "name", "compute");
    assert!(boolean(compute, "local") && boolean(compute, "closed"));
    assert_eq!(string(compute, "level"), None, "a local span has no level");
    assert_eq!(
        [long(compute, "start_ns"), long(compute, "duration_ns")],
        [1_001_550, 50]
    );
    assert_eq!(long(compute, "tid"), 12);
    for r in &rows {
        assert_eq!(
            long(r, "end_unix_ns") - long(r, "start_unix_ns"),
            long(r, "duration_ns"),
            "unix times keep the spacing"
        );
    }
}

#[test]
fn preemptirq_sections_pair_per_thread_and_one_left_open_ends_with_the_trace() {
    let dir = TempDir::new("parquet-sections");
    export(&dir, ParquetOptions::default());
    let rows = read(&dir.path().join("out"), "sections").rows;
    let got: Vec<(i64, i32, String, i64, i64, i64, bool)> = rows
        .iter()
        .map(|r| {
            (
                long(r, "tid"),
                int(r, "cpu"),
                string(r, "section").unwrap(),
                long(r, "start_ns"),
                long(r, "end_ns"),
                long(r, "duration_ns"),
                boolean(r, "closed"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (10, 0, "irqs off".into(), 1_000_100, 1_000_500, 400, true),
            (11, 1, "irqs off".into(), 1_001_400, 1_001_600, 200, false),
        ]
    );
}

#[test]
fn unix_ns_is_the_timeline_placed_by_the_ring_headers_anchor() {
    let dir = TempDir::new("parquet-unix");
    let (recovery, _) = export(&dir, ParquetOptions::default());
    let h = &recovery.header;
    let offset = h.wall_ns as i64 - h.anchor_ticks as i64;
    for name in ["events", "losses"] {
        for r in read(&dir.path().join("out"), name).rows {
            assert_eq!(long(&r, "unix_ns"), long(&r, "time_ns") + offset, "{name}");
        }
    }
    for r in read(&dir.path().join("out"), "sections").rows {
        assert_eq!(long(&r, "start_unix_ns"), long(&r, "start_ns") + offset);
    }
}

#[test]
fn the_schemas_are_plain_int64_times_strings_and_a_standard_map() {
    let dir = TempDir::new("parquet-schema");
    export(&dir, ParquetOptions::default());
    let schema = read(&dir.path().join("out"), "events").schema;
    for line in [
        "REQUIRED BYTE_ARRAY host (STRING);",
        "REQUIRED INT64 pid;",
        "REQUIRED INT64 time_ns;",
        "REQUIRED INT64 unix_ns;",
        "OPTIONAL BYTE_ARRAY level (STRING);",
        "OPTIONAL group fields (MAP) {",
        "REPEATED group key_value {",
        "REQUIRED BYTE_ARRAY key (STRING);",
        "OPTIONAL BYTE_ARRAY value (STRING);",
    ] {
        assert!(schema.contains(line), "{line} not in\n{schema}");
    }
    assert!(!schema.contains("TIMESTAMP"), "{schema}");
}

#[test]
fn small_row_groups_are_each_sorted_by_time() {
    let dir = TempDir::new("parquet-groups");
    let (recovery, done) = export(&dir, ParquetOptions::default().row_group_rows(2));
    let out = dir.path().join("out");
    let events = read(&out, "events");
    assert_eq!(events.row_groups, 4, "7 rows, 2 a group");
    let spans = read(&out, "spans");
    assert_eq!(spans.row_groups, 2);
    for pair in spans.rows.chunks(2) {
        assert!(long(&pair[0], "start_ns") <= long(&pair[pair.len() - 1], "start_ns"));
    }
    assert_eq!(done.spans, 4);
    let whole = dir.path().join("whole");
    let one = write_parquet(
        &Trace::single(&recovery),
        &whole,
        &ParquetOptions::default(),
    )
    .unwrap();
    assert_eq!(read(&whole, "events").row_groups, 1);
    let rows = |d: &std::path::Path, t| read(d, t).rows;
    for t in ["events", "spans", "sections", "processes"] {
        let (a, b) = (rows(&out, t), rows(&whole, t));
        if t == "spans" {
            let ids = |r: &[Fields]| {
                let mut v: Vec<_> = r.iter().map(|r| string(r, "span_id")).collect();
                v.sort();
                v
            };
            assert_eq!(ids(&a), ids(&b));
        } else {
            assert_eq!(a, b, "{t}: the same rows, whatever the groups");
        }
    }
    assert_eq!(one.events, done.events);
}
