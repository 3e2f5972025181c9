//! `export_otlp` of traces recorded through the `tracing` layer, against
//! a real OTLP/HTTP receiver (`receiver`): every kept span arrives once,
//! with its trace and parent ids, attributes and times exactly as the
//! trace's own reader assembles them; tail sampling sends only the trees
//! its rules keep and counts the rest; events outside spans arrive as log
//! records; a receiver answering 503 then recovering loses nothing; a
//! receiver gone ends the export with an error and the counts.

#[allow(unused_imports)] // The fixtures are for the transport tests.
mod receiver;

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use receiver::{Receiver, Script};
use ringtrace_export::spans::{assemble, Assembled, SpanTree};
use ringtrace_export::Trace;
use ringtrace_otlp::{export_otlp, KeepRules, OtlpError, OtlpOptions, TransportOptions};
use ringtrace_ring::file::Recovery;
use ringtrace_ring::{RingBuffer, RingConfig};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A trace of `workload`, recorded through the layer on a `mono` ring.
fn recorded(workload: impl FnOnce()) -> Recovery {
    let clock = "mono"
        .parse::<ringtrace_clock::ClockSpec>()
        .unwrap()
        .build()
        .unwrap();
    let config = RingConfig::default().cpus(2).per_cpu_bytes(1 << 20);
    let ring = Arc::new(RingBuffer::new(config, clock).unwrap());
    let layer = ringtrace_tracing::RingLayer::new(Arc::clone(&ring));
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, workload);
    ring.snapshot(Vec::new())
}

/// A service: requests with a db span and an event each, one failing,
/// one slow; events outside spans.
fn service() {
    tracing::info!(port = 8080u64, "listening");
    for i in 0..40u64 {
        let request = tracing::info_span!("request", i, route = "/orders");
        let _r = request.enter();
        let db = tracing::debug_span!("db", table = "orders");
        db.in_scope(|| tracing::info!(rows = i, "queried"));
        if i == 7 {
            tracing::error!(code = 500u64, "failed");
        }
        if i == 9 {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    tracing::warn!("shutting down");
}

fn trees(recovery: &Recovery) -> Vec<SpanTree> {
    let mut trees = Vec::new();
    assemble::<()>(&Trace::single(recovery), &mut |a| {
        if let Assembled::Tree(t) = a {
            trees.push(t);
        }
        Ok(())
    })
    .unwrap();
    trees
}

fn quick() -> TransportOptions {
    TransportOptions::default()
        .timeout(Duration::from_millis(800))
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(50))
        .max_batch_bytes(4096)
}

fn attribute<'a>(
    attrs: &'a [opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

#[test]
fn every_span_arrives_once_with_its_ids_times_and_attributes_exact() -> TestResult {
    let recovery = recorded(service);
    let trace = Trace::single(&recovery);
    let receiver = Receiver::start()?;
    let options = OtlpOptions::new(receiver.url().parse()?)
        .service_name("orders")
        .host("web-1")
        .transport(quick());
    let summary = export_otlp(&trace, options)?;
    let expected = trees(&recovery);
    let wall = trace.wall_clock();
    let received = receiver.spans();
    let total: usize = expected.iter().map(|t| t.spans.len()).sum();
    assert_eq!(total, 80);
    assert_eq!(received.len(), total, "every span once");
    assert_eq!(summary.sent.spans.delivered, total as u64);
    assert_eq!(summary.undelivered_spans(), 0);
    let by_id: HashMap<Vec<u8>, _> = received
        .iter()
        .map(|r| (r.span.span_id.clone(), r))
        .collect();
    assert_eq!(by_id.len(), total, "span ids are unique");
    for tree in &expected {
        for s in &tree.spans {
            let r = by_id[&s.uid.to_be_bytes().to_vec()];
            assert_eq!(r.span.trace_id, tree.trace_id().to_vec());
            assert_eq!(
                r.span.parent_span_id,
                s.parent
                    .map(|p| p.to_be_bytes().to_vec())
                    .unwrap_or_default()
            );
            assert_eq!(r.span.name, s.name);
            assert_eq!(r.span.start_time_unix_nano, wall.unix_ns(s.start_ns));
            assert_eq!(r.span.end_time_unix_nano, wall.unix_ns(s.end_ns));
            assert_eq!(r.span.events.len(), s.events.len());
            assert_eq!(r.scope_name, "ringtrace");
            let res = &r.resource_attributes;
            assert_eq!(
                attribute(res, "service.name"),
                Some(&Value::StringValue("orders".into()))
            );
            assert_eq!(
                attribute(res, "host.name"),
                Some(&Value::StringValue("web-1".into()))
            );
            assert_eq!(
                attribute(res, "ringtrace.clock"),
                Some(&Value::StringValue("mono".into()))
            );
            if s.name == "request" {
                assert_eq!(
                    attribute(&r.span.attributes, "route"),
                    Some(&Value::StringValue("/orders".into()))
                );
                assert!(matches!(
                    attribute(&r.span.attributes, "i"),
                    Some(Value::IntValue(_))
                ));
            }
            let failed = s.is_error();
            assert_eq!(
                r.span.status.as_ref().map(|st| st.code),
                Some(if failed { StatusCode::Error as i32 } else { 0 })
            );
        }
    }
    // The two events outside spans, as log records.
    let logs = receiver.logs();
    let bodies: Vec<_> = logs
        .iter()
        .map(|l| {
            (
                l.record.severity_number,
                l.record.body.clone().and_then(|b| b.value),
            )
        })
        .collect();
    assert_eq!(
        bodies,
        [
            (9, Some(Value::StringValue("listening".into()))),
            (13, Some(Value::StringValue("shutting down".into())))
        ]
    );
    Ok(())
}

#[test]
fn tail_sampling_sends_only_the_trees_its_rules_keep() -> TestResult {
    let recovery = recorded(service);
    let trace = Trace::single(&recovery);
    let receiver = Receiver::start()?;
    let options = OtlpOptions::new(receiver.url().parse()?)
        .keep(KeepRules::parse(["error", "slower:80ms"])?)
        .logs(false)
        .transport(quick());
    let summary = export_otlp(&trace, options)?;
    let received = receiver.spans();
    let roots: HashSet<String> = received
        .iter()
        .filter(|r| r.span.parent_span_id.is_empty())
        .filter_map(|r| match attribute(&r.span.attributes, "i") {
            Some(Value::IntValue(i)) => Some(i.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(roots, HashSet::from(["7".to_owned(), "9".to_owned()]));
    assert_eq!(received.len(), 4, "two trees of two spans");
    assert_eq!(summary.kept.kept_trees, 2);
    assert_eq!(summary.kept.dropped_trees, 38);
    assert_eq!(summary.kept.by_rule, [1, 1]);
    assert!(receiver.logs().is_empty(), "logs(false) sends none");
    Ok(())
}

#[test]
fn a_receiver_answering_503_then_recovering_loses_nothing() -> TestResult {
    let recovery = recorded(service);
    let receiver = Receiver::with_script(Script::status_first(503, None, 3))?;
    let options = OtlpOptions::new(receiver.url().parse()?).transport(quick());
    let summary = export_otlp(&Trace::single(&recovery), options)?;
    assert_eq!(receiver.spans().len(), 80);
    assert_eq!(summary.sent.spans.delivered, 80);
    assert!(summary.sent.retries >= 3, "{:?}", summary.sent);
    Ok(())
}

#[test]
fn a_receiver_gone_ends_the_export_with_an_error_and_every_count() -> TestResult {
    let recovery = recorded(service);
    let mut receiver = Receiver::start()?;
    let url = receiver.url();
    receiver.stop();
    let options = OtlpOptions::new(url.parse()?).transport(quick().max_retries(2));
    let started = std::time::Instant::now();
    let err = export_otlp(&Trace::single(&recovery), options).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(20));
    let OtlpError::Undelivered { summary, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(summary.sent.spans.delivered, 0);
    assert_eq!(summary.undelivered_spans(), 80);
    assert_eq!(summary.undelivered_logs(), 2);
    let text = err.to_string();
    assert!(text.contains(&url), "{text}");
    assert!(
        text.contains("80 spans and 2 log records not delivered"),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_root_with_a_traceparent_joins_the_remote_trace() -> TestResult {
    let recovery = recorded(|| {
        let s = tracing::info_span!(
            "incoming",
            traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        s.in_scope(|| tracing::debug_span!("child").in_scope(|| {}));
    });
    let receiver = Receiver::start()?;
    let options = OtlpOptions::new(receiver.url().parse()?).transport(quick());
    export_otlp(&Trace::single(&recovery), options)?;
    let spans = receiver.spans();
    assert_eq!(spans.len(), 2);
    let trace_id = 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736u128
        .to_be_bytes()
        .to_vec();
    for s in &spans {
        assert_eq!(s.span.trace_id, trace_id);
    }
    let root = spans.iter().find(|s| s.span.name == "incoming").unwrap();
    assert_eq!(
        root.span.parent_span_id,
        0x00f0_67aa_0ba9_02b7u64.to_be_bytes().to_vec()
    );
    Ok(())
}
