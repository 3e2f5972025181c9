//! The OTLP/HTTP transport against a real HTTP server (`receiver`):
//! delivery, batching, retries, permanent failures, accounting.

mod receiver;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use prost::Message;
use receiver::{logs, service_name, span_id, spans, Receiver, Script};
use ringtrace_otlp::transport::{
    AttemptError, Endpoint, EndpointError, SendError, Sender, TransportOptions,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Short timeouts and backoffs, so failing tests stay fast.
fn quick() -> TransportOptions {
    TransportOptions::default()
        .timeout(Duration::from_millis(800))
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(50))
}

fn sender(receiver: &Receiver, options: TransportOptions) -> Result<Sender, EndpointError> {
    Ok(Sender::new(receiver.url().parse()?, options))
}

#[test]
fn every_span_pushed_arrives_exactly_once_across_many_batches() -> TestResult {
    let receiver = Receiver::start()?;
    let max_batch_bytes = 2048;
    let mut sender = sender(&receiver, quick().max_batch_bytes(max_batch_bytes))?;
    let services = ["api", "db", "cache"];
    let mut pushed = 0u64;
    for push in 0..300u64 {
        let name = services[(push % 3) as usize];
        let count = push % 3 + 1;
        sender.push_spans(spans(name, pushed..pushed + count))?;
        pushed += count;
    }
    sender.flush()?;

    let mut seen = BTreeMap::new();
    for received in receiver.spans() {
        let id = span_id(&received.span).ok_or("span id is not 8 bytes")?;
        *seen.entry(id).or_insert(0) += 1;
        assert_eq!(received.scope_name, "ringtrace");
        assert!(service_name(&received.resource_attributes).is_some());
    }
    assert_eq!(seen.len() as u64, pushed, "some spans missing");
    assert!(seen.iter().all(|(_, &n)| n == 1), "some span arrived twice");
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (0..pushed).collect::<Vec<_>>()
    );

    let requests = receiver.trace_requests();
    assert!(requests.len() > 10, "only {} requests", requests.len());
    for request in &requests {
        assert!(
            request.encoded_len() <= max_batch_bytes,
            "{} bytes",
            request.encoded_len()
        );
        // One entry per resource: same-resource pushes were merged.
        assert!(request.resource_spans.len() <= services.len());
    }
    let stats = sender.stats();
    assert_eq!(
        (
            stats.spans.pushed,
            stats.spans.delivered,
            stats.spans.undelivered
        ),
        (pushed, pushed, 0)
    );
    assert_eq!(stats.requests, requests.len() as u64);
    assert_eq!(stats.retries, 0);
    Ok(())
}

#[test]
fn a_503_three_times_then_200_loses_nothing_and_counts_the_retries() -> TestResult {
    let receiver = Receiver::with_script(Script::status_first(503, None, 3))?;
    let mut sender = sender(&receiver, quick())?;
    sender.push_spans(spans("api", 0..10))?;
    sender.flush()?;

    assert_eq!(receiver.spans().len(), 10);
    let answers: Vec<_> = receiver.requests().iter().map(|r| r.answered).collect();
    assert_eq!(answers, [Some(503), Some(503), Some(503), Some(200)]);
    let stats = sender.stats();
    assert_eq!((stats.requests, stats.retries), (4, 3));
    assert_eq!((stats.spans.delivered, stats.spans.undelivered), (10, 0));
    Ok(())
}

#[test]
fn retry_after_is_honoured() -> TestResult {
    let receiver = Receiver::with_script(Script::status_first(429, Some(1), 1))?;
    let options = quick()
        .initial_backoff(Duration::from_millis(1))
        .max_backoff(Duration::from_secs(3));
    let mut sender = sender(&receiver, options)?;
    let start = Instant::now();
    sender.push_spans(spans("api", 0..1))?;
    sender.flush()?;
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
    assert!(waited < Duration::from_secs(3), "retried after {waited:?}");
    assert_eq!(sender.stats().retries, 1);
    assert_eq!(receiver.spans().len(), 1);
    Ok(())
}

#[test]
fn retry_after_is_capped_at_max_backoff() -> TestResult {
    let receiver = Receiver::with_script(Script::status_first(429, Some(3600), 2))?;
    let mut sender = sender(&receiver, quick().max_backoff(Duration::from_millis(100)))?;
    let start = Instant::now();
    sender.push_spans(spans("api", 0..1))?;
    sender.flush()?;
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(200),
        "retried after {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "retried after {waited:?}");
    assert_eq!(sender.stats().spans.delivered, 1);
    Ok(())
}

#[test]
fn a_400_is_a_permanent_failure_counted_as_undelivered_with_its_status() -> TestResult {
    let receiver = Receiver::with_script(Script::status_first(400, None, 1))?;
    let mut sender = sender(&receiver, quick())?;
    sender.push_spans(spans("api", 0..5))?;
    match sender.flush() {
        Err(SendError::Undelivered {
            attempts,
            spans,
            last_error: AttemptError::Status { status, body, .. },
            ..
        }) => {
            assert_eq!((attempts, spans, status), (1, 5, 400));
            assert!(body.contains("scripted failure"), "{body}");
        }
        other => return Err(format!("expected a 400 failure, got {other:?}").into()),
    }
    let stats = sender.stats();
    assert_eq!(
        (stats.requests, stats.retries),
        (1, 0),
        "a 400 is not retried"
    );
    assert_eq!((stats.spans.delivered, stats.spans.undelivered), (0, 5));
    let last_error = stats.last_error.as_deref().unwrap_or_default();
    assert!(last_error.contains("400"), "{last_error}");

    // The next batch is sent again, and delivered.
    sender.push_spans(spans("api", 5..8))?;
    sender.flush()?;
    assert_eq!(sender.stats().spans.delivered, 3);
    assert_eq!(receiver.spans().len(), 3);
    Ok(())
}

#[test]
fn a_stopped_receiver_gives_undelivered_naming_the_url_in_bounded_time() -> TestResult {
    let mut receiver = Receiver::start()?;
    let mut sender = sender(&receiver, quick().max_retries(2))?;
    receiver.stop();
    let start = Instant::now();
    sender.push_spans(spans("api", 0..7))?;
    sender.push_logs(logs("api", 4))?;
    let error = match sender.flush() {
        Err(error) => error,
        Ok(()) => return Err("a stopped receiver accepted a batch".into()),
    };
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
    let SendError::Undelivered {
        urls,
        attempts,
        batches,
        last_error,
        spans,
        log_records,
    } = &error
    else {
        return Err(format!("unexpected error {error:?}").into());
    };
    assert!(
        urls.iter().all(|u| u.starts_with(&receiver.url())),
        "{urls:?}"
    );
    assert!(error.to_string().contains(&receiver.url()), "{error}");
    // Each signal's failure names its own path.
    let said = error.to_string();
    assert!(
        said.contains("/v1/traces") && said.contains("/v1/logs"),
        "{said}"
    );
    assert_eq!(urls.len(), 2, "{urls:?}");
    assert_eq!((*spans, *log_records, *batches, *attempts), (7, 4, 2, 6));
    assert!(last_error.is_retryable(), "{last_error}");
    let stats = sender.stats();
    assert_eq!(
        (stats.spans.undelivered, stats.log_records.undelivered),
        (7, 4)
    );
    assert_eq!((stats.spans.delivered, stats.log_records.delivered), (0, 0));
    assert_eq!(stats.retries, 4);
    Ok(())
}

#[test]
fn a_recovering_endpoint_loses_only_the_batches_that_ran_out_of_retries() -> TestResult {
    // The first three requests see the connection closed; a batch gets two
    // attempts, so the first batch is lost, the second is delivered on its
    // second attempt, and the rest go through.
    let receiver = Receiver::with_script(Script::close_first(3))?;
    let mut sender = sender(&receiver, quick().max_retries(1).max_batch_bytes(300))?;
    let mut errors = Vec::new();
    let mut pushed = 0u64;
    for push in 0..40u64 {
        if let Err(error) = sender.push_spans(spans("api", push * 2..push * 2 + 2)) {
            errors.push(error);
        }
        pushed += 2;
    }
    if let Err(error) = sender.flush() {
        errors.push(error);
    }
    let stats = sender.stats();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let lost: u64 = errors
        .iter()
        .map(|error| match error {
            SendError::Undelivered { spans, .. } => *spans,
            _ => 0,
        })
        .sum();
    assert!(lost > 0);
    assert_eq!(stats.spans.undelivered, lost);
    assert_eq!(stats.spans.delivered + stats.spans.undelivered, pushed);
    assert_eq!(receiver.spans().len() as u64, stats.spans.delivered);
    let answers: Vec<_> = receiver
        .requests()
        .iter()
        .take(4)
        .map(|r| r.answered)
        .collect();
    assert_eq!(answers, [None, None, None, Some(200)]);
    Ok(())
}

#[test]
fn partial_success_rejections_are_counted() -> TestResult {
    let receiver = Receiver::with_script(Script {
        rejected: 2,
        ..Script::accept_all()
    })?;
    let mut sender = sender(&receiver, quick())?;
    sender.push_spans(spans("api", 0..5))?;
    sender.push_logs(logs("api", 3))?;
    sender.flush()?;
    let stats = sender.stats();
    assert_eq!((stats.spans.delivered, stats.spans.rejected), (5, 2));
    assert_eq!(
        (stats.log_records.delivered, stats.log_records.rejected),
        (3, 2)
    );
    assert_eq!(stats.undecodable_responses, 0);
    assert!(stats
        .last_response_note
        .as_deref()
        .is_some_and(|note| note.contains("rejected")));
    Ok(())
}

#[test]
fn logs_go_to_v1_logs_and_spans_to_v1_traces() -> TestResult {
    let receiver = Receiver::start()?;
    let mut sender = sender(&receiver, quick())?;
    sender.push_logs(logs("worker", 3))?;
    sender.flush()?;
    sender.push_spans(spans("worker", 0..2))?;
    sender.flush()?;

    let paths: Vec<_> = receiver.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/logs", "/v1/traces"]);
    let received = receiver.logs();
    assert_eq!(received.len(), 3);
    assert!(received
        .iter()
        .all(|log| service_name(&log.resource_attributes) == Some("worker")));
    assert_eq!(receiver.spans().len(), 2);
    assert_eq!(sender.stats().log_records.delivered, 3);
    Ok(())
}

#[test]
fn a_traces_url_sends_logs_to_its_sibling() -> TestResult {
    let receiver = Receiver::start()?;
    let endpoint: Endpoint = format!("{}/v1/traces", receiver.url()).parse()?;
    let mut sender = Sender::new(endpoint, quick());
    sender.push_logs(logs("worker", 1))?;
    sender.push_spans(spans("worker", 0..1))?;
    sender.flush()?;
    let mut paths: Vec<_> = receiver.requests().into_iter().map(|r| r.path).collect();
    paths.sort();
    assert_eq!(paths, ["/v1/logs", "/v1/traces"]);
    Ok(())
}

#[test]
fn bad_endpoint_urls_give_errors_naming_what_is_valid() {
    for url in [
        "",
        "localhost:4318",
        "ftp://h:1",
        "http://:4318",
        "http://h:99999",
        "http://h:port",
    ] {
        match url.parse::<Endpoint>() {
            Ok(endpoint) => panic!("`{url}` parsed as {endpoint}"),
            Err(error) => {
                let text = error.to_string();
                assert!(text.contains(url), "{text}");
                assert!(
                    text.contains("valid endpoints are `http://host:port`"),
                    "{text}"
                );
            }
        }
    }
    match "https://collector:4318".parse::<Endpoint>() {
        Err(error @ EndpointError::TlsNotBuilt { .. }) => {
            let text = error.to_string();
            assert!(
                text.contains("without TLS") && text.contains("http://"),
                "{text}"
            );
        }
        other => panic!("https was not refused: {other:?}"),
    }
}

#[test]
fn extra_headers_arrive_with_the_protobuf_content_type() -> TestResult {
    let receiver = Receiver::start()?;
    let options = quick()
        .header("authorization", "Bearer s3cret")
        .header("x-tenant", "blue");
    let mut sender = sender(&receiver, options)?;
    sender.push_spans(spans("api", 0..1))?;
    sender.flush()?;
    let requests = receiver.requests();
    let request = requests.first().ok_or("no request arrived")?;
    assert_eq!(request.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(request.header("x-tenant"), Some("blue"));
    assert_eq!(
        request.header("content-type"),
        Some("application/x-protobuf")
    );
    Ok(())
}

#[test]
fn queue_bytes_bounds_what_waits_before_a_flush() -> TestResult {
    let receiver = Receiver::start()?;
    // Batches could hold everything, but the queue may hold only ~1 KiB.
    let options = quick().max_batch_bytes(1 << 20).queue_bytes(1024);
    let mut sender = sender(&receiver, options)?;
    for push in 0..100u64 {
        sender.push_spans(spans("api", push..push + 1))?;
        let stats = sender.stats();
        assert!(
            stats.spans.queued() <= 30,
            "{} spans waiting",
            stats.spans.queued()
        );
    }
    assert!(
        !receiver.requests().is_empty(),
        "nothing was sent before the flush"
    );
    sender.flush()?;
    assert_eq!(receiver.spans().len(), 100);
    Ok(())
}

#[test]
fn an_invalid_header_fails_every_batch_without_retries() -> TestResult {
    let receiver = Receiver::start()?;
    let mut sender = sender(&receiver, quick().header("bad header", "x"))?;
    sender.push_spans(spans("api", 0..2))?;
    match sender.flush() {
        Err(SendError::Undelivered {
            attempts: 1,
            spans: 2,
            last_error: AttemptError::Request { .. },
            ..
        }) => {}
        other => return Err(format!("expected a request error, got {other:?}").into()),
    }
    assert!(receiver.requests().is_empty());
    Ok(())
}

#[test]
fn every_record_pushed_ends_delivered_or_undelivered() -> TestResult {
    for failures in [0, 1, 2, 3, 5, 8] {
        let receiver = Receiver::with_script(Script::close_first(failures))?;
        let options = quick().max_retries(1).max_batch_bytes(400);
        let mut sender = sender(&receiver, options)?;
        let (mut lost_spans, mut lost_logs) = (0, 0);
        let mut count = |result: Result<(), SendError>| {
            if let Err(SendError::Undelivered {
                spans, log_records, ..
            }) = result
            {
                lost_spans += spans;
                lost_logs += log_records;
            }
        };
        for push in 0..30u64 {
            count(sender.push_spans(spans("api", push * 3..push * 3 + 3)));
            count(sender.push_logs(logs("api", 2)));
        }
        count(sender.flush());
        let stats = sender.stats();
        for (what, counts) in [("spans", stats.spans), ("log records", stats.log_records)] {
            assert_eq!(
                counts.delivered + counts.undelivered,
                counts.pushed,
                "{what} with {failures} failures: {counts:?}"
            );
            assert_eq!(counts.queued(), 0);
        }
        assert_eq!((stats.spans.pushed, stats.log_records.pushed), (90, 60));
        assert_eq!(
            (stats.spans.undelivered, stats.log_records.undelivered),
            (lost_spans, lost_logs)
        );
        assert_eq!(receiver.spans().len() as u64, stats.spans.delivered);
        assert_eq!(receiver.logs().len() as u64, stats.log_records.delivered);
        // Two attempts per batch: every second failure loses a batch.
        let lost_batches = lost_spans.min(1) + lost_logs.min(1);
        assert!(
            failures < 2 || lost_batches > 0,
            "{failures} failures lost nothing"
        );
    }
    Ok(())
}
