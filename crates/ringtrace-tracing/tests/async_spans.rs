//! Spans that cross threads, as async tasks' spans do: one identity from
//! creation to close whichever thread enters them, their `follows_from`
//! links, and a tokio multi-thread runtime's `#[instrument] async fn`s
//! read back whole.

mod common;

use common::{dump_json, ring};
use ringtrace_tracing::RingLayer;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// The span records of `json` by span id: each record's kind and thread.
fn by_span(json: &[Value]) -> BTreeMap<u64, Vec<(String, u64)>> {
    let mut spans: BTreeMap<u64, Vec<(String, u64)>> = BTreeMap::new();
    for r in json {
        let (Some(span), Some(name)) = (r["span"].as_u64(), r["event"].as_str()) else {
            continue;
        };
        let kind = name.trim_start_matches("tracing:").to_owned();
        spans
            .entry(span)
            .or_default()
            .push((kind, r["tid"].as_u64().unwrap()));
    }
    spans
}

/// A span's life checked: created first, closed once and last, every
/// enter matched by an exit on the same thread before the next enter.
/// Returns the threads that entered it.
fn check_life(span: u64, records: &[(String, u64)]) -> BTreeSet<u64> {
    assert_eq!(
        records.first().map(|r| r.0.as_str()),
        Some("span_new"),
        "#{span}: {records:?}"
    );
    assert_eq!(
        records.last().map(|r| r.0.as_str()),
        Some("span_close"),
        "#{span}: {records:?}"
    );
    let closes = records.iter().filter(|r| r.0 == "span_close").count();
    assert_eq!(closes, 1, "#{span} closed {closes} times: {records:?}");
    let mut inside: Option<u64> = None;
    let mut threads = BTreeSet::new();
    for (kind, tid) in records {
        match kind.as_str() {
            "span_enter" => {
                assert_eq!(inside, None, "#{span} entered twice: {records:?}");
                inside = Some(*tid);
                threads.insert(*tid);
            }
            "span_exit" => {
                assert_eq!(
                    inside,
                    Some(*tid),
                    "#{span} left by another thread: {records:?}"
                );
                inside = None;
            }
            _ => {}
        }
    }
    assert_eq!(inside, None, "#{span} never left: {records:?}");
    threads
}

/// A future that is pending once, then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[test]
fn a_task_polled_on_two_threads_keeps_one_span_id_and_closes_once() {
    let ring = ring();
    let dispatch =
        tracing::Dispatch::new(tracing_subscriber::registry().with(RingLayer::new(ring.clone())));
    // The future is polled once on this thread, then finished on another,
    // as a work-stealing runtime moves a task.
    let mut task = tracing::dispatcher::with_default(&dispatch, || {
        Box::pin(
            async {
                tracing::info!("before");
                YieldOnce(false).await;
                tracing::info!("after");
            }
            .instrument(tracing::info_span!("task", n = 1u64)),
        )
    });
    let first = tracing::dispatcher::with_default(&dispatch, || {
        task.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    });
    assert!(first.is_pending());
    let other = dispatch.clone();
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&other, || {
            let done = task.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(done.is_ready());
            drop(task);
        })
    })
    .join()
    .unwrap();
    let json = dump_json(&ring);
    let spans = by_span(&json);
    assert_eq!(spans.len(), 1, "{spans:?}");
    let (&span, records) = spans.iter().next().unwrap();
    let threads = check_life(span, records);
    assert_eq!(threads.len(), 2, "entered on {threads:?}: {records:?}");
    // Both events carry the thread that wrote them.
    let events: Vec<u64> = json
        .iter()
        .filter(|r| r["event"] == "tracing:event")
        .map(|r| r["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    assert_ne!(events[0], events[1]);
}

#[test]
fn follows_from_links_are_recorded_with_both_ids() {
    let ring = ring();
    let subscriber = tracing_subscriber::registry().with(RingLayer::new(ring.clone()));
    let (cause, effect) = tracing::subscriber::with_default(subscriber, || {
        let cause = tracing::info_span!("send");
        let effect = tracing::info_span!("receive");
        effect.follows_from(&cause);
        (
            cause.id().unwrap().into_u64(),
            effect.id().unwrap().into_u64(),
        )
    });
    let json = dump_json(&ring);
    let link: Vec<&Value> = json
        .iter()
        .filter(|r| r["event"] == "tracing:span_follows")
        .collect();
    assert_eq!(link.len(), 1, "{json:?}");
    assert_eq!(link[0]["span"].as_u64(), Some(effect));
    assert_eq!(link[0]["follows"].as_u64(), Some(cause));
    assert_eq!(link[0]["callsite"], "receive");
}

#[tracing::instrument(level = "info", skip(rx))]
async fn worker(n: u64, rx: tokio::sync::oneshot::Receiver<u64>) -> u64 {
    tracing::info!(n, "waiting");
    let got = rx.await.unwrap_or(0);
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    tracing::info!(got, "done");
    got + n
}

#[test]
fn instrumented_tasks_on_a_multi_thread_runtime_read_back_whole() {
    let ring = ring();
    let dispatch =
        tracing::Dispatch::new(tracing_subscriber::registry().with(RingLayer::new(ring.clone())));
    let _default = tracing::dispatcher::set_default(&dispatch);
    // Not the global default (other tests run beside this one): each
    // worker thread takes it as its own for its whole life.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&dispatch)))
        .build()
        .unwrap();
    const TASKS: u64 = 40;
    let total = runtime.block_on(async {
        let mut senders = Vec::new();
        let mut tasks = Vec::new();
        for n in 0..TASKS {
            let (tx, rx) = tokio::sync::oneshot::channel();
            senders.push(tx);
            tasks.push(tokio::spawn(worker(n, rx)));
        }
        for (n, tx) in senders.into_iter().enumerate() {
            tx.send(n as u64).unwrap();
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    });
    drop(runtime);
    assert_eq!(total, 2 * (0..TASKS).sum::<u64>());
    let json = dump_json(&ring);
    let spans = by_span(&json);
    assert_eq!(spans.len() as u64, TASKS, "one span a task: {spans:?}");
    let mut moved = 0;
    for (span, records) in &spans {
        if check_life(*span, records).len() > 1 {
            moved += 1;
        }
    }
    eprintln!("{moved} of {TASKS} tasks ran on more than one thread");
}
