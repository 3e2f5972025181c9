//! Span trees and events as OTLP messages, built from the
//! `opentelemetry-proto` crate's types.
//!
//! - A span becomes an OTLP span: ids from its tree's trace id and its
//!   uid, its parent's uid (a root carrying a W3C `traceparent` field
//!   gets that trace's id and its remote parent), times in Unix ns, its
//!   fields as attributes, the events recorded inside it as span events,
//!   `follows_from` links as links. Fields named as tracing-opentelemetry
//!   names them keep their meaning: `otel.name` renames the span,
//!   `otel.kind` sets its kind, `otel.status_code` and
//!   `otel.status_message` its status. Otherwise a span that failed
//!   (an `error` field, level ERROR, or an ERROR event inside it) has
//!   status ERROR, with the `error` field's text as its message.
//! - An event outside any span becomes a log record, with its level as
//!   severity and its message as body.
//! - Each process is a resource: `service.name` (given, else the
//!   process's command name), `host.name`, `process.pid`,
//!   `process.executable.name`, and `ringtrace.clock`, the clock its
//!   times were read from.

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use ringtrace_export::spans::{EventData, SpanData, SpanTree};
use ringtrace_export::{Trace, WallClock};
use ringtrace_tracepoint::FieldValue;

/// The instrumentation scope every span and record is sent under.
pub const SCOPE: &str = "ringtrace";

/// Fields that set a span's name, kind or status instead of being
/// attributes (tracing-opentelemetry's names).
const SPECIAL: [&str; 4] = [
    "otel.name",
    "otel.kind",
    "otel.status_code",
    "otel.status_message",
];

/// What the resources say of each process.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resources {
    /// Per process: its resource, and how its times map to Unix time.
    processes: Vec<(Resource, WallClock)>,
}

/// One process as a resource.
pub(crate) struct ProcessInfo<'a> {
    pub pid: u32,
    pub comm: &'a str,
    pub clock: &'a str,
    pub wall: WallClock,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
    }
}

fn string(key: &str, value: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.into()))
}

fn int(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

/// A field's value as an attribute value.
fn value(v: &FieldValue) -> any_value::Value {
    match v {
        FieldValue::Unsigned(u) => match i64::try_from(*u) {
            Ok(i) => any_value::Value::IntValue(i),
            // Beyond i64: the exact digits as a string.
            Err(_) => any_value::Value::StringValue(u.to_string()),
        },
        FieldValue::Signed(i) => any_value::Value::IntValue(*i),
        FieldValue::Bool(b) => any_value::Value::BoolValue(*b),
        FieldValue::Float(f) => any_value::Value::DoubleValue(*f),
        FieldValue::Str(s) => any_value::Value::StringValue(s.clone()),
        FieldValue::Bytes(b) => any_value::Value::BytesValue(b.clone()),
        other => any_value::Value::StringValue(other.to_string()),
    }
}

/// `fields` as attributes, without the special ones.
fn attributes(fields: &[(String, FieldValue)]) -> Vec<KeyValue> {
    fields
        .iter()
        .filter(|(n, _)| !SPECIAL.contains(&n.as_str()))
        .map(|(n, v)| kv(n, value(v)))
        .collect()
}

/// The field `name` as text, if it is one.
fn text<'a>(fields: &'a [(String, FieldValue)], name: &str) -> Option<&'a str> {
    fields.iter().find_map(|(n, v)| match v {
        FieldValue::Str(s) if n == name => Some(s.as_str()),
        _ => None,
    })
}

/// A `tracing` level (1 TRACE to 5 ERROR) as its name.
fn level_name(level: u8) -> &'static str {
    match level {
        1 => "TRACE",
        2 => "DEBUG",
        3 => "INFO",
        4 => "WARN",
        5 => "ERROR",
        _ => "",
    }
}

/// This machine's host name.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

impl Resources {
    /// Each process of `trace` as a resource, named `service` (else by
    /// its command name) on `host`.
    pub(crate) fn of(trace: &Trace<'_>, service: Option<&str>, host: &str) -> Resources {
        let clock = trace.clock().name.clone();
        let wall = trace.wall_clock();
        let mut r = Resources::default();
        for p in trace.processes() {
            let info = ProcessInfo {
                pid: p.pid(),
                comm: p.comm(),
                clock: &clock,
                wall,
            };
            r.add(&info, service, host);
        }
        r
    }

    /// Adds a process as the next resource; returns its place.
    pub(crate) fn add(&mut self, p: &ProcessInfo<'_>, service: Option<&str>, host: &str) -> usize {
        let resource = Resource {
            attributes: vec![
                string("service.name", service.unwrap_or(p.comm)),
                string("host.name", host),
                int("process.pid", i64::from(p.pid)),
                string("process.executable.name", p.comm),
                string("ringtrace.clock", p.clock),
                string("telemetry.sdk.name", "ringtrace"),
            ],
            ..Resource::default()
        };
        self.processes.push((resource, p.wall));
        self.processes.len() - 1
    }

    /// Maps the times of the process at `process` by `wall` from now on.
    pub(crate) fn set_wall(&mut self, process: usize, wall: WallClock) {
        if let Some((_, w)) = self.processes.get_mut(process) {
            *w = wall;
        }
    }

    fn resource(&self, process: usize) -> Resource {
        self.processes
            .get(process)
            .map(|(r, _)| r.clone())
            .unwrap_or_default()
    }

    /// Unix ns of `ns` of process `process`'s times.
    fn unix(&self, process: usize, ns: u64) -> u64 {
        match self.processes.get(process) {
            Some((_, wall)) => wall.unix_ns(ns),
            None => ns,
        }
    }

    fn scope() -> InstrumentationScope {
        InstrumentationScope {
            name: SCOPE.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            ..InstrumentationScope::default()
        }
    }

    /// `tree`'s spans, as one resource's.
    pub(crate) fn spans(&self, tree: &SpanTree) -> ResourceSpans {
        let trace_id = tree.trace_id().to_vec();
        let remote = tree.trace_context().map(|c| c.parent_span_id.to_vec());
        let spans = tree
            .spans
            .iter()
            .map(|s| {
                let parent = match s.parent {
                    Some(p) => p.to_be_bytes().to_vec(),
                    None => remote.clone().unwrap_or_default(),
                };
                self.span(tree.process, s, trace_id.clone(), parent)
            })
            .collect();
        ResourceSpans {
            resource: Some(self.resource(tree.process)),
            scope_spans: vec![ScopeSpans {
                scope: Some(Resources::scope()),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }
    }

    fn span(
        &self,
        process: usize,
        s: &SpanData,
        trace_id: Vec<u8>,
        parent_span_id: Vec<u8>,
    ) -> Span {
        let mut attributes = attributes(&s.fields);
        attributes.push(string("target", s.target.clone()));
        if s.level > 0 {
            attributes.push(string("level", level_name(s.level)));
        }
        attributes.push(int("thread.id", i64::from(s.tid)));
        attributes.push(int(
            "ringtrace.busy_ns",
            i64::try_from(s.busy_ns).unwrap_or(i64::MAX),
        ));
        if s.threads.len() > 1 {
            attributes.push(int("ringtrace.threads", s.threads.len() as i64));
        }
        if !s.closed {
            attributes.push(kv("ringtrace.unclosed", any_value::Value::BoolValue(true)));
        }
        let kind = match text(&s.fields, "otel.kind").map(str::to_ascii_lowercase) {
            Some(k) if k == "server" => SpanKind::Server,
            Some(k) if k == "client" => SpanKind::Client,
            Some(k) if k == "producer" => SpanKind::Producer,
            Some(k) if k == "consumer" => SpanKind::Consumer,
            _ => SpanKind::Internal,
        };
        Span {
            trace_id: trace_id.clone(),
            span_id: s.uid.to_be_bytes().to_vec(),
            parent_span_id,
            name: text(&s.fields, "otel.name").unwrap_or(&s.name).to_owned(),
            kind: kind as i32,
            start_time_unix_nano: self.unix(process, s.start_ns),
            end_time_unix_nano: self.unix(process, s.end_ns),
            attributes,
            events: s
                .events
                .iter()
                .map(|e| self.span_event(process, e))
                .collect(),
            links: s
                .follows
                .iter()
                .map(|l| Link {
                    trace_id: l.trace_id.to_vec(),
                    span_id: l.uid.to_be_bytes().to_vec(),
                    ..Link::default()
                })
                .collect(),
            status: Some(status(s)),
            ..Span::default()
        }
    }

    fn span_event(&self, process: usize, e: &EventData) -> Event {
        Event {
            time_unix_nano: self.unix(process, e.ts_ns),
            name: e.name.clone(),
            attributes: event_attributes(e),
            dropped_attributes_count: 0,
        }
    }

    /// `events` (of one process, outside any span) as its log records.
    pub(crate) fn logs(&self, process: usize, events: &[EventData]) -> ResourceLogs {
        let log_records = events
            .iter()
            .map(|e| {
                let at = self.unix(process, e.ts_ns);
                LogRecord {
                    time_unix_nano: at,
                    observed_time_unix_nano: at,
                    severity_number: severity(e.level),
                    severity_text: level_name(e.level).to_owned(),
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(e.name.clone())),
                    }),
                    attributes: event_attributes(e),
                    ..LogRecord::default()
                }
            })
            .collect();
        ResourceLogs {
            resource: Some(self.resource(process)),
            scope_logs: vec![ScopeLogs {
                scope: Some(Resources::scope()),
                log_records,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }
    }
}

fn event_attributes(e: &EventData) -> Vec<KeyValue> {
    let mut a = attributes(&e.fields);
    a.push(string("level", level_name(e.level)));
    a.push(string("target", e.target.clone()));
    a.push(int("thread.id", i64::from(e.tid)));
    a
}

/// OTLP's severity number of a `tracing` level: TRACE 1, DEBUG 5,
/// INFO 9, WARN 13, ERROR 17.
fn severity(level: u8) -> i32 {
    match level {
        1..=5 => 1 + 4 * (i32::from(level) - 1),
        _ => 0,
    }
}

/// A span's status: `otel.status_code` when it has one, else ERROR when
/// it failed, else unset.
fn status(s: &SpanData) -> Status {
    let message = text(&s.fields, "otel.status_message");
    match text(&s.fields, "otel.status_code").map(str::to_ascii_lowercase) {
        Some(c) if c == "ok" => {
            return Status {
                message: message.unwrap_or_default().to_owned(),
                code: StatusCode::Ok as i32,
            }
        }
        Some(c) if c == "error" => {
            return Status {
                message: message.unwrap_or_default().to_owned(),
                code: StatusCode::Error as i32,
            }
        }
        _ => {}
    }
    if s.is_error() {
        let why = message
            .map(str::to_owned)
            .or_else(|| match s.field("error") {
                Some(FieldValue::Bool(_)) | None => None,
                Some(v) => Some(v.to_string()),
            })
            .or_else(|| {
                s.events
                    .iter()
                    .find(|e| e.level >= 5)
                    .map(|e| e.name.clone())
            })
            .unwrap_or_default();
        return Status {
            message: why,
            code: StatusCode::Error as i32,
        };
    }
    Status::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_otlp_severities() {
        assert_eq!(
            [1, 2, 3, 4, 5, 0].map(severity),
            [1, 5, 9, 13, 17, 0],
            "TRACE DEBUG INFO WARN ERROR none"
        );
    }

    #[test]
    fn integers_beyond_i64_are_sent_as_their_digits() {
        assert_eq!(
            value(&FieldValue::Unsigned(u64::MAX)),
            any_value::Value::StringValue(u64::MAX.to_string())
        );
        assert_eq!(
            value(&FieldValue::Unsigned(7)),
            any_value::Value::IntValue(7)
        );
    }
}
