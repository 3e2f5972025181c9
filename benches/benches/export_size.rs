//! Bytes per event of each way a trace is kept: the ring file, and what
//! the exporters write from it (Parquet, Chrome JSON, Perfetto, CTF,
//! trace-cmd).
//!
//! `cargo bench -p ringtrace-benches --bench export_size`
//! (env `REQUESTS`, default 50000)
//!
//! The workload is `REQUESTS` service requests, recorded through
//! `RingSubscriber` into a file ring sized to keep them all: span
//! `request` (two integer fields) entered, inside it span `db` (one
//! field) entered, an `info!` with two integers and a message, both
//! exited and closed. That is 9 ring records a request (2 spans' new,
//! enter, exit and close, and the event): the "events" the table divides
//! by. A ring file has the size of its capacity whatever it holds, so
//! the ring's own bytes are measured as `stream_to` (and `ringtrace
//! record`) keep them: the same workload streamed into a session, its
//! written pages in chunks, without and with zstd. Each export's bytes
//! are the sum of the files it wrote from the ring file. The figures are sizes, not times: they
//! change only with the workload and the formats.

mod common;

use common::{cpu_model, request};
use ringtrace::ring::Mode;
use ringtrace::session::{Compression as SessionCompression, SessionOptions};
use ringtrace::{ExportFormat as Format, Tracer};
use ringtrace_parquet::{Compression, ParquetOptions};
use std::path::Path;

/// Bytes of the files under `path` (a file or a directory), as written.
fn bytes(path: &Path) -> u64 {
    let meta = std::fs::metadata(path).unwrap();
    if meta.is_file() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| bytes(&e.unwrap().path()))
        .sum()
}

/// Bytes of a session that `stream_to` wrote of `requests` requests:
/// the ring's written pages as `ringtrace record` keeps them.
fn streamed(requests: u64, dir: &Path, compression: SessionCompression) -> u64 {
    let tracer = Tracer::builder()
        .buffer_size(4 << 20)
        // Writers wait for the consumer rather than lose a record.
        .blocking(std::time::Duration::from_secs(5))
        .stream_to(dir)
        .stream_options(SessionOptions::default().compression(compression))
        .build()
        .unwrap();
    tracing::subscriber::with_default(tracer.subscriber(), || {
        for i in 0..requests {
            request(i);
        }
    });
    let summary = tracer.finish_stream().unwrap();
    assert_eq!(tracer.ring().stats().missed, 0, "{summary:?}");
    drop(tracer);
    bytes(dir)
}

fn main() {
    let testing = std::env::args().any(|a| a == "--test");
    let requests: u64 = match testing {
        true => 500,
        false => std::env::var("REQUESTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50_000),
    };
    let dir = std::env::temp_dir().join(format!("ringtrace-export-size-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ring_file = dir.join("trace.ring");
    // About 60 bytes a record; room for all of them on one CPU.
    let per_cpu = (requests as usize * 9 * 64 * 2)
        .next_power_of_two()
        .max(1 << 20);
    let tracer = Tracer::builder()
        .file(&ring_file)
        .buffer_size(per_cpu)
        .mode(Mode::Discard)
        .build()
        .unwrap();
    tracing::subscriber::with_default(tracer.subscriber(), || {
        for i in 0..requests {
            request(i);
        }
    });
    let stats = tracer.ring().stats();
    assert_eq!(stats.missed, 0, "the ring must keep every record");
    let events = stats.hit;
    tracer.ring().flush();

    let mut rows: Vec<(String, u64)> = Vec::new();
    for (name, compression, out) in [
        (
            "ring pages streamed (session)",
            SessionCompression::None,
            "session",
        ),
        (
            "ring pages streamed, zstd 3",
            SessionCompression::Zstd { level: 3 },
            "session-zstd",
        ),
    ] {
        let path = dir.join(out);
        rows.push((name.into(), streamed(requests, &path, compression)));
    }
    for (name, format, out) in [
        ("Chrome JSON", Format::Chrome, "trace.json"),
        ("Perfetto protobuf", Format::Perfetto, "trace.pftrace"),
        ("trace-cmd trace.dat", Format::TraceCmd, "trace.dat"),
        ("CTF directory", Format::Ctf, "ctf"),
    ] {
        let path = dir.join(out);
        tracer.export(format, &path).unwrap();
        rows.push((name.into(), bytes(&path)));
    }
    for (name, compression, out) in [
        ("Parquet, zstd (default)", Compression::Zstd, "parquet-zstd"),
        (
            "Parquet, uncompressed",
            Compression::Uncompressed,
            "parquet-plain",
        ),
    ] {
        let path = dir.join(out);
        let options = ParquetOptions::default().compression(compression);
        tracer.export_parquet(&path, &options).unwrap();
        rows.push((name.into(), bytes(&path)));
    }
    let cpu = cpu_model();
    println!("# export_size: {requests} requests, {events} ring records (events); {cpu}");
    println!("| kept as | bytes | bytes per event | against Parquet (zstd) |");
    println!("|---|---|---|---|");
    let parquet = rows
        .iter()
        .find(|r| r.0.starts_with("Parquet, zstd"))
        .map_or(1, |r| r.1);
    for (name, size) in &rows {
        println!(
            "| {name} | {size} | {:.1} | {:.1} |",
            *size as f64 / events as f64,
            *size as f64 / parquet as f64
        );
    }
    drop(tracer);
    let _ = std::fs::remove_dir_all(&dir);
}
