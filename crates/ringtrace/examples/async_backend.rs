//! ringtrace as the `tracing` backend of an async service: a tokio
//! multi-thread runtime runs requests as tasks, each an
//! `#[instrument] async fn` whose span goes with the task from worker
//! thread to worker thread; a reply task's span `follows_from` the
//! request that sent it. At the end the program reads its own trace back
//! and checks that every task's span kept one id across threads, was
//! entered and left in turn, and closed once; it prints how many tasks
//! ran on more than one thread and exports a Chrome/Perfetto JSON trace
//! (kept at PATH with `--chrome PATH`; else written to a temporary file,
//! measured and removed).
//!
//! `cargo run --example async_backend --features tracing`; with
//! `-- --ring PATH` it records into a ring file at PATH (a flight
//! recorder that `ringtrace dump` and `ringtrace export` read after the
//! program has ended) instead of memory.

use ringtrace::{DumpOptions, ExportFormat, Tracer};
use std::collections::BTreeMap;
use tracing::{info, instrument, Instrument};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const REQUESTS: u64 = 64;

/// One request: waits for its input, computes, yields now and then (so
/// that the runtime may move it to another worker), and sends a reply.
#[instrument(level = "info", skip(input, reply))]
async fn request(
    id: u64,
    input: tokio::sync::oneshot::Receiver<u64>,
    reply: tokio::sync::mpsc::Sender<(u64, tracing::Span)>,
) -> u64 {
    let value = input.await.unwrap_or(0);
    let mut sum = 0;
    for step in 0..4 {
        sum += value * step;
        tokio::task::yield_now().await;
    }
    info!(sum, "computed");
    // Now and then a request is slow, or fails: what tail sampling keeps
    // (`ringtrace export --format otlp --keep error --keep slower:2ms`).
    if id % 16 == 3 {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    if id % 16 == 15 {
        tracing::error!(id, "request failed");
    }
    // The reply's span follows from this one: it is caused by it, not
    // inside it.
    let _ = reply.send((sum, tracing::Span::current())).await;
    sum
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = Tracer::builder().buffer_size(4 << 20);
    let mut chrome = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--ring", Some(path)) => builder = builder.file(path),
            ("--chrome", Some(path)) => chrome = Some(std::path::PathBuf::from(path)),
            _ => {
                return Err(format!(
                    "usage: async_backend [--ring PATH] [--chrome PATH], not `{flag}`"
                )
                .into())
            }
        }
    }
    let tracer = builder.build()?;
    tracing_subscriber::registry().with(tracer.layer()).init();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    let total = runtime.block_on(async {
        let (reply_tx, mut reply_rx) = tokio::sync::mpsc::channel(16);
        let mut inputs = Vec::new();
        let mut tasks = Vec::new();
        for id in 0..REQUESTS {
            let (tx, rx) = tokio::sync::oneshot::channel();
            inputs.push(tx);
            tasks.push(tokio::spawn(request(id, rx, reply_tx.clone())));
        }
        drop(reply_tx);
        for (id, tx) in inputs.into_iter().enumerate() {
            let _ = tx.send(id as u64);
        }
        let replies = tokio::spawn(async move {
            let mut total = 0;
            while let Some((sum, cause)) = reply_rx.recv().await {
                let span = tracing::info_span!("reply", sum);
                span.follows_from(&cause);
                async { total += sum }.instrument(span).await;
            }
            total
        });
        for t in tasks {
            t.await?;
        }
        replies.await
    })?;
    drop(runtime);
    info!(total, "all requests done");
    tracer.flush();

    // Read the trace back: each request's span, by id.
    let snapshot = tracer.snapshot()?;
    let dump = ringtrace::export::Dump::new(&snapshot, DumpOptions::default())?;
    let mut spans: BTreeMap<u64, Vec<(String, u64)>> = BTreeMap::new();
    let mut links = 0;
    for event in dump.events() {
        let r = dump.json(event);
        if r["event"] == "tracing:span_follows" {
            links += 1;
        }
        if r["callsite"] != "request" {
            continue;
        }
        if let (Some(span), Some(name), Some(tid)) =
            (r["span"].as_u64(), r["event"].as_str(), r["tid"].as_u64())
        {
            spans.entry(span).or_default().push((name.to_owned(), tid));
        }
    }
    let mut moved = 0;
    for (span, records) in &spans {
        let kinds: Vec<&str> = records.iter().map(|r| r.0.as_str()).collect();
        let closes = kinds.iter().filter(|k| **k == "tracing:span_close").count();
        let enters = kinds.iter().filter(|k| **k == "tracing:span_enter").count();
        let exits = kinds.iter().filter(|k| **k == "tracing:span_exit").count();
        if kinds.first() != Some(&"tracing:span_new") || closes != 1 || enters != exits {
            return Err(format!("request span #{span} read back broken: {kinds:?}").into());
        }
        let mut threads: Vec<u64> = records.iter().map(|r| r.1).collect();
        threads.sort_unstable();
        threads.dedup();
        moved += usize::from(threads.len() > 1);
    }
    if spans.len() as u64 != REQUESTS || links != REQUESTS {
        return Err(format!(
            "{} request spans and {links} follows_from links read back, of {REQUESTS}",
            spans.len()
        )
        .into());
    }
    println!(
        "{REQUESTS} requests (total {total}): every span one id, closed once; {moved} ran on more than one thread; {links} replies follow from their request"
    );
    let kept = chrome.is_some();
    let out = chrome.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("async_backend-{}.json", std::process::id()))
    });
    let summary = tracer.export(ExportFormat::Chrome, &out)?;
    let bytes = std::fs::metadata(&out).map_or(0, |m| m.len());
    if kept {
        println!(
            "exported {} events to {} ({bytes} bytes)",
            summary.events,
            out.display()
        );
    } else {
        std::fs::remove_file(&out)?;
        println!(
            "exported {} events as Chrome JSON ({bytes} bytes; --chrome PATH keeps it)",
            summary.events
        );
    }
    Ok(())
}
