//! OTLP messages for tests: resources, spans and log records with
//! recognisable ids and names.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

/// A resource with `service.name` = `name`.
pub fn service(name: &str) -> Resource {
    Resource {
        attributes: vec![KeyValue {
            key: "service.name".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(name.into())),
            }),
        }],
        ..Resource::default()
    }
}

/// The `service.name` attribute's value.
pub fn service_name(attributes: &[KeyValue]) -> Option<&str> {
    attributes
        .iter()
        .find(|kv| kv.key == "service.name")
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(name) => Some(name.as_str()),
            _ => None,
        })
}

/// Spans with ids `ids` (8 bytes, big-endian) of service `name`.
pub fn spans(name: &str, ids: impl IntoIterator<Item = u64>) -> ResourceSpans {
    ResourceSpans {
        resource: Some(service(name)),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "ringtrace".into(),
                ..InstrumentationScope::default()
            }),
            spans: ids
                .into_iter()
                .map(|id| Span {
                    trace_id: vec![7; 16],
                    span_id: id.to_be_bytes().to_vec(),
                    name: format!("span {id}"),
                    ..Span::default()
                })
                .collect(),
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    }
}

/// `count` log records (bodies `line {i}`) of service `name`.
pub fn logs(name: &str, count: usize) -> ResourceLogs {
    ResourceLogs {
        resource: Some(service(name)),
        scope_logs: vec![ScopeLogs {
            log_records: (0..count)
                .map(|i| LogRecord {
                    severity_text: "INFO".into(),
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(format!("line {i}"))),
                    }),
                    ..LogRecord::default()
                })
                .collect(),
            ..ScopeLogs::default()
        }],
        schema_url: String::new(),
    }
}

/// A span id as the `u64` [`spans`] made it from.
pub fn span_id(span: &Span) -> Option<u64> {
    Some(u64::from_be_bytes(span.span_id.as_slice().try_into().ok()?))
}
