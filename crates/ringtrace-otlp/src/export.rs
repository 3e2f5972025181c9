//! The export: a trace's span trees assembled, decided by the keep rules,
//! and those kept sent with the events outside any span as log records.

use crate::convert::{host_name, Resources};
use crate::pipeline::Pipeline;
use crate::transport::{Endpoint, SendError, SendStats, TransportOptions};
use ringtrace_export::spans::{assemble, AssembleSummary, KeepRules, KeepStats};
use ringtrace_export::Trace;
use thiserror::Error;

/// What [`export_otlp`] sends, and where.
///
/// ```
/// use ringtrace_otlp::{KeepRules, OtlpOptions};
/// let options = OtlpOptions::new("http://127.0.0.1:4318".parse()?)
///     .service_name("checkout")
///     .keep(KeepRules::parse(["error", "slower:250ms"])?);
/// assert_eq!(options.endpoint().traces_url(), "http://127.0.0.1:4318/v1/traces");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct OtlpOptions {
    pub(crate) endpoint: Endpoint,
    pub(crate) service_name: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) keep: KeepRules,
    pub(crate) logs: bool,
    pub(crate) transport: TransportOptions,
}

impl OtlpOptions {
    /// Everything sent to `endpoint`, each process under its command name
    /// as `service.name`, every tree kept, events outside spans sent as
    /// log records, the transport's defaults.
    pub fn new(endpoint: Endpoint) -> OtlpOptions {
        OtlpOptions {
            endpoint,
            service_name: None,
            host: None,
            keep: KeepRules::default(),
            logs: true,
            transport: TransportOptions::default(),
        }
    }

    /// The `service.name` of every process (its command name by default).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The `host.name` of every process (this machine's by default).
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// The tail-sampling rules: which trees to send.
    pub fn keep(mut self, rules: KeepRules) -> Self {
        self.keep = rules;
        self
    }

    /// Whether events outside any span are sent as log records (yes by
    /// default).
    pub fn logs(mut self, send: bool) -> Self {
        self.logs = send;
        self
    }

    /// How requests are batched, retried and timed out.
    pub fn transport(mut self, options: TransportOptions) -> Self {
        self.transport = options;
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// What an export sent.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OtlpSummary {
    /// Trees kept and dropped, by rule.
    pub kept: KeepStats,
    /// What the trace held (trees, spans, unclosed spans, events).
    pub assembled: AssembleSummary,
    /// The transport's counts: requests, retries, delivered and
    /// undelivered spans and log records.
    pub sent: SendStats,
    /// Spans and log records never handed to the transport, because an
    /// earlier batch could not be delivered and the export stopped.
    pub not_sent_spans: u64,
    /// Log records not handed to the transport (see `not_sent_spans`).
    pub not_sent_logs: u64,
}

impl OtlpSummary {
    /// Spans kept but not delivered: refused or failed batches, and
    /// those never sent after the export stopped.
    pub fn undelivered_spans(&self) -> u64 {
        self.sent.spans.undelivered + self.sent.spans.queued() + self.not_sent_spans
    }

    /// Log records not delivered (as [`OtlpSummary::undelivered_spans`]).
    pub fn undelivered_logs(&self) -> u64 {
        self.sent.log_records.undelivered + self.sent.log_records.queued() + self.not_sent_logs
    }
}

/// Why an export did not deliver everything.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The endpoint did not take a batch (after its retries); the export
    /// stopped there. The summary counts what was delivered, what was
    /// not, and what was never sent.
    #[error("{source}; in all, {} spans and {} log records delivered, {} spans and {} log records not delivered", summary.sent.spans.delivered, summary.sent.log_records.delivered, summary.undelivered_spans(), summary.undelivered_logs())]
    Undelivered {
        /// What the transport said.
        source: SendError,
        /// The counts.
        summary: Box<OtlpSummary>,
    },
    /// The sending thread of a live export could not start or failed.
    #[error("the OTLP export's sending thread failed")]
    Worker,
}

/// Sends `trace` to an OpenTelemetry collector over OTLP/HTTP: its span
/// trees that `options`' keep rules keep, as spans, and its events
/// outside any span, as log records.
///
/// Trees are assembled as the trace is read ([`assemble`]), so memory
/// holds the trees still open and the transport's bounded queue, not the
/// trace. When the endpoint does not take a batch after its retries, the
/// export stops sending, counts the rest, and returns
/// [`OtlpError::Undelivered`] with every count: nothing is dropped
/// without being counted.
pub fn export_otlp(trace: &Trace<'_>, options: OtlpOptions) -> Result<OtlpSummary, OtlpError> {
    let host = options.host.clone().unwrap_or_else(host_name);
    let resources = Resources::of(trace, options.service_name.as_deref(), &host);
    let mut run = Pipeline::new(resources, &options);
    let assembled = assemble::<std::convert::Infallible>(trace, &mut |a| {
        run.take(a);
        Ok(())
    })
    .unwrap_or_else(|never| match never {});
    run.finish(assembled)
}
