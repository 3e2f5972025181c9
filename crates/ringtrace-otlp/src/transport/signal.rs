//! The two signals the transport sends, spans and log records, behind one
//! trait, so batching and retrying are written once.
//!
//! A signal's queued item is its `Resource*` message (all the records of
//! one resource); a request is a list of them, merged so that one resource
//! (and, within it, one instrumentation scope) appears once.

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::logs::v1::ResourceLogs;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;

use super::endpoint::Endpoint;
use super::stats::{RecordCounts, SendStats};

/// What a 2xx response said about the records it did not keep.
pub(super) struct PartialSuccess {
    /// `rejected_spans` or `rejected_log_records`; negative values (a
    /// broken collector) read as 0.
    pub(super) rejected: u64,
    /// `error_message`, empty when there is none.
    pub(super) message: String,
}

/// A signal: its queued item type, its request and response messages, its
/// URL and its counters.
pub(super) trait Signal: prost::Message + Sized {
    /// The `Export*ServiceResponse` a collector answers with.
    type Response: prost::Message + Default;

    /// The records in one item (spans, or log records).
    fn record_count(&self) -> u64;

    /// Adds `self` to a request's item list: into the entry with the same
    /// resource (and scope) if there is one, else as a new entry.
    fn merge_into(self, items: &mut Vec<Self>);

    /// The encoded `Export*ServiceRequest` carrying `items`.
    fn encode_request(items: Vec<Self>) -> Vec<u8>;

    /// The partial success a response reports, if any.
    fn partial_success(response: &Self::Response) -> Option<PartialSuccess>;

    /// The URL this signal is POSTed to.
    fn url(endpoint: &Endpoint) -> &str;

    /// This signal's counters.
    fn counts(stats: &mut SendStats) -> &mut RecordCounts;
}

/// Moves `item` into the element of `list` it is `same` as (with `absorb`),
/// or to the end of `list`. Linear: a request holds few distinct
/// resources and scopes.
fn merge_by<T>(
    list: &mut Vec<T>,
    item: T,
    same: impl Fn(&T, &T) -> bool,
    absorb: impl FnOnce(&mut T, T),
) {
    match list.iter_mut().find(|entry| same(entry, &item)) {
        Some(entry) => absorb(entry, item),
        None => list.push(item),
    }
}

impl Signal for ResourceSpans {
    type Response = ExportTraceServiceResponse;

    fn record_count(&self) -> u64 {
        self.scope_spans
            .iter()
            .map(|scope| scope.spans.len() as u64)
            .sum()
    }

    fn merge_into(self, items: &mut Vec<Self>) {
        merge_by(
            items,
            self,
            |a, b| a.resource == b.resource && a.schema_url == b.schema_url,
            |entry, item| {
                for scope in item.scope_spans {
                    merge_by(
                        &mut entry.scope_spans,
                        scope,
                        |a, b| a.scope == b.scope && a.schema_url == b.schema_url,
                        |entry, scope| entry.spans.extend(scope.spans),
                    );
                }
            },
        );
    }

    fn encode_request(items: Vec<Self>) -> Vec<u8> {
        prost::Message::encode_to_vec(&ExportTraceServiceRequest {
            resource_spans: items,
        })
    }

    fn partial_success(response: &Self::Response) -> Option<PartialSuccess> {
        response
            .partial_success
            .as_ref()
            .map(|partial| PartialSuccess {
                rejected: u64::try_from(partial.rejected_spans).unwrap_or(0),
                message: partial.error_message.clone(),
            })
    }

    fn url(endpoint: &Endpoint) -> &str {
        endpoint.traces_url()
    }

    fn counts(stats: &mut SendStats) -> &mut RecordCounts {
        &mut stats.spans
    }
}

impl Signal for ResourceLogs {
    type Response = ExportLogsServiceResponse;

    fn record_count(&self) -> u64 {
        self.scope_logs
            .iter()
            .map(|scope| scope.log_records.len() as u64)
            .sum()
    }

    fn merge_into(self, items: &mut Vec<Self>) {
        merge_by(
            items,
            self,
            |a, b| a.resource == b.resource && a.schema_url == b.schema_url,
            |entry, item| {
                for scope in item.scope_logs {
                    merge_by(
                        &mut entry.scope_logs,
                        scope,
                        |a, b| a.scope == b.scope && a.schema_url == b.schema_url,
                        |entry, scope| entry.log_records.extend(scope.log_records),
                    );
                }
            },
        );
    }

    fn encode_request(items: Vec<Self>) -> Vec<u8> {
        prost::Message::encode_to_vec(&ExportLogsServiceRequest {
            resource_logs: items,
        })
    }

    fn partial_success(response: &Self::Response) -> Option<PartialSuccess> {
        response
            .partial_success
            .as_ref()
            .map(|partial| PartialSuccess {
                rejected: u64::try_from(partial.rejected_log_records).unwrap_or(0),
                message: partial.error_message.clone(),
            })
    }

    fn url(endpoint: &Endpoint) -> &str {
        endpoint.logs_url()
    }

    fn counts(stats: &mut SendStats) -> &mut RecordCounts {
        &mut stats.log_records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{
        any_value, AnyValue, InstrumentationScope, KeyValue,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{ScopeSpans, Span};

    fn spans(service: &str, scope: &str, ids: &[u8]) -> ResourceSpans {
        let attribute = KeyValue {
            key: "service.name".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(service.into())),
            }),
        };
        ResourceSpans {
            resource: Some(Resource {
                attributes: vec![attribute],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: scope.into(),
                    ..InstrumentationScope::default()
                }),
                spans: ids
                    .iter()
                    .map(|&id| Span {
                        span_id: vec![id; 8],
                        ..Span::default()
                    })
                    .collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }
    }

    #[test]
    fn merging_keeps_one_entry_per_resource_and_scope() {
        let mut items = Vec::new();
        spans("a", "x", &[1, 2]).merge_into(&mut items);
        spans("b", "x", &[3]).merge_into(&mut items);
        spans("a", "x", &[4]).merge_into(&mut items);
        spans("a", "y", &[5]).merge_into(&mut items);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].scope_spans.len(), 2);
        assert_eq!(items[0].record_count(), 4);
        assert_eq!(items[1].record_count(), 1);
        let ids: Vec<u8> = items[0].scope_spans[0]
            .spans
            .iter()
            .map(|s| s.span_id[0])
            .collect();
        assert_eq!(ids, [1, 2, 4]);
    }
}
