//! A session opened streamed (a chunk at a time) exports the same rows
//! as the session read whole.

mod common;

use common::*;
use ringtrace_export::{Alignment, Trace};
use ringtrace_parquet::{write_parquet, ParquetOptions};
use ringtrace_session::Session;

#[test]
fn a_streamed_session_gives_the_same_rows_as_the_whole_read() {
    let dir = TempDir::new("parquet-streamed");
    let session_dir = dir.path().join("session");
    session(&session_dir, 3000, true);
    let chunks = std::fs::read_dir(session_dir.join("4242-7").join("cpu0"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(chunks > 2, "the session is in several chunks: {chunks}");

    let whole = Session::open(&session_dir).unwrap();
    let whole_recoveries = whole.recoveries();
    let whole_trace = Trace::new(&whole_recoveries, Alignment::SharedClock).unwrap();
    let streamed = Session::open_streamed(&session_dir).unwrap();
    let streamed_recoveries = streamed.recoveries();
    assert!(streamed_recoveries
        .iter()
        .all(|r| r.cpus.iter().all(|c| c.events.is_empty())));
    let streamed_trace = Trace::new(&streamed_recoveries, Alignment::SharedClock)
        .unwrap()
        .with_source(&streamed);

    let options = ParquetOptions::default().host("h").row_group_rows(500);
    let (a, b) = (dir.path().join("whole"), dir.path().join("streamed"));
    let done_whole = write_parquet(&whole_trace, &a, &options).unwrap();
    let done_streamed = write_parquet(&streamed_trace, &b, &options).unwrap();
    assert_eq!(done_whole.events, 3007);
    assert_eq!(
        (done_whole.events, done_whole.spans, done_whole.lost),
        (
            done_streamed.events,
            done_streamed.spans,
            done_streamed.lost
        )
    );
    assert_eq!(read(&a, "events").row_groups, 7, "3007 rows, 500 a group");
    for t in ["events", "spans", "sections", "processes"] {
        assert_eq!(read(&a, t).rows, read(&b, t).rows, "{t}");
    }
    // The losses: the same rows, causes included, whether the session
    // is read whole or a chunk at a time.
    let losses = |dir| {
        read(dir, "losses")
            .rows
            .iter()
            .map(|r| {
                (
                    int(r, "cpu"),
                    long(r, "time_ns"),
                    long(r, "count"),
                    string(r, "cause").unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(losses(&a), losses(&b));
    assert_eq!(losses(&a).len(), 2);
    assert!(
        losses(&b).iter().all(|l| l.3 != "lost"),
        "each with its recorded cause: {:?}",
        losses(&b)
    );
    assert!(
        done_streamed.warnings.is_empty(),
        "{:?}",
        done_streamed.warnings
    );
    assert!(
        streamed.stream_problems().is_empty(),
        "{:?}",
        streamed.stream_problems()
    );
}
