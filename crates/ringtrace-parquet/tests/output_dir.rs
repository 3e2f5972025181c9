//! Where an export may go: nothing but an empty directory or a previous
//! export is replaced, a refusal names the path and why and leaves
//! everything as it was, and a bad option is refused before anything is
//! written.

mod common;

use common::*;
use ringtrace_export::Trace;
use ringtrace_parquet::{write_parquet, ParquetError, ParquetOptions};

#[test]
fn a_directory_holding_an_unrelated_file_is_left_untouched_and_the_error_names_it() {
    let dir = TempDir::new("parquet-unrelated");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    std::fs::write(out.join("events.parquet"), b"PAR1 not really").unwrap();
    let err =
        write_parquet(&Trace::single(&recovery), &out, &ParquetOptions::default()).unwrap_err();
    assert!(matches!(err, ParquetError::Refused { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&out.display().to_string()), "{text}");
    assert!(
        text.contains("notes.txt") && text.contains("not a table"),
        "{text}"
    );
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(out.join("events.parquet")).unwrap(),
        b"PAR1 not really"
    );
    assert_eq!(
        dir.entries(),
        ["app.ring", "out"],
        "no temporary directory left"
    );
}

#[test]
fn a_table_name_that_is_not_parquet_is_refused() {
    let dir = TempDir::new("parquet-not-parquet");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("spans.parquet"), b"a ring, maybe").unwrap();
    let err = write_parquet(&Trace::single(&recovery), &out, &ParquetOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spans.parquet") && err.contains("PAR1"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(out.join("spans.parquet")).unwrap(),
        b"a ring, maybe"
    );
}

#[test]
fn a_file_given_as_the_directory_is_refused_and_the_ring_file_named_as_such() {
    let dir = TempDir::new("parquet-file");
    let ring = dir.path().join("app.ring");
    let recovery = scripted_file(&ring);
    let before = std::fs::read(&ring).unwrap();
    let trace = Trace::single(&recovery);
    let err = write_parquet(&trace, &ring, &ParquetOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("ring file") && text.contains("app.ring"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&ring).unwrap(),
        before,
        "the ring file is untouched"
    );

    let other = dir.path().join("plain.txt");
    std::fs::write(&other, b"x").unwrap();
    let err = write_parquet(&trace, &other, &ParquetOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("plain.txt") && text.contains("is a file, not a directory"),
        "{text}"
    );
    assert_eq!(std::fs::read(&other).unwrap(), b"x");

    // A directory that holds the ring file (a session's, say) is refused too.
    let err = write_parquet(&trace, dir.path(), &ParquetOptions::default()).unwrap_err();
    assert!(err.to_string().contains("app.ring"), "{err}");
    assert!(ring.is_file());
}

#[test]
fn an_empty_directory_is_filled_and_a_previous_export_replaced() {
    let dir = TempDir::new("parquet-replace");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let trace = Trace::single(&recovery);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let first = write_parquet(&trace, &out, &ParquetOptions::default().host("first")).unwrap();
    assert_eq!(first.tables.len(), 5);
    let second = write_parquet(&trace, &out, &ParquetOptions::default().host("second")).unwrap();
    assert_eq!(second.events, first.events);
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
    let rows = read(&out, "processes").rows;
    assert_eq!(string(&rows[0], "host").as_deref(), Some("second"));
    assert_eq!(
        dir.entries(),
        ["app.ring", "out"],
        "nothing old or temporary left"
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 5);
}

#[test]
fn an_empty_or_overlong_host_is_refused_before_anything_is_written() {
    let dir = TempDir::new("parquet-host");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let trace = Trace::single(&recovery);
    let out = dir.path().join("out");
    for host in [String::new(), "h".repeat(256)] {
        let err = write_parquet(&trace, &out, &ParquetOptions::default().host(host)).unwrap_err();
        assert!(matches!(err, ParquetError::Host { .. }), "{err}");
        assert!(err.to_string().contains("1 to 255 bytes"), "{err}");
    }
    let err =
        write_parquet(&trace, &out, &ParquetOptions::default().row_group_rows(0)).unwrap_err();
    assert!(err.to_string().contains("at least 1 row"), "{err}");
    assert_eq!(dir.entries(), ["app.ring"], "nothing was written");
}

#[test]
fn the_default_host_is_this_machines_name() {
    let dir = TempDir::new("parquet-default-host");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let out = dir.path().join("out");
    write_parquet(&Trace::single(&recovery), &out, &ParquetOptions::default()).unwrap();
    let expected = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let rows = read(&out, "events").rows;
    assert!(rows
        .iter()
        .all(|r| string(r, "host") == Some(expected.clone())));
}

#[test]
fn an_uncompressed_export_holds_the_same_rows() {
    let dir = TempDir::new("parquet-uncompressed");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let trace = Trace::single(&recovery);
    let (a, b) = (dir.path().join("zstd"), dir.path().join("none"));
    let options = ParquetOptions::default().host("h");
    write_parquet(&trace, &a, &options).unwrap();
    let plain = options.compression("none".parse().unwrap());
    write_parquet(&trace, &b, &plain).unwrap();
    for t in ["events", "spans", "losses", "processes", "sections"] {
        assert_eq!(read(&a, t).rows, read(&b, t).rows, "{t}");
    }
}

#[test]
fn a_directory_name_of_255_bytes_is_written_through_a_temporary_name_that_fits() {
    let dir = TempDir::new("parquet-long-name");
    let recovery = scripted_file(&dir.path().join("app.ring"));
    let long = "é".repeat(127) + "x";
    assert_eq!(long.len(), 255);
    let out = dir.path().join(&long);
    write_parquet(&Trace::single(&recovery), &out, &ParquetOptions::default()).unwrap();
    assert!(out.join("events.parquet").is_file());
    assert_eq!(
        dir.entries(),
        ["app.ring".to_owned(), long],
        "no temporary directory left"
    );
}
