//! The sender: queues, batches, POSTs with retries, and accounts for every
//! record.
//!
//! A push queues its item and then sends, in the caller's thread, every
//! full batch: the caller waits while the collector is slow, and that
//! backpressure is what bounds memory. What waits is at most a batch's
//! worth per signal (`max_batch_bytes`) and at most `queue_bytes` for both
//! signals together, plus the item being pushed.
//!
//! A batch that fails for good (a permanent status, or retries exhausted)
//! is dropped from the queue, counted as undelivered, and reported by the
//! call that sent it. Nothing else changes: the next batch gets all its
//! retries again, so a collector that comes back loses only the batches
//! that ran out of retries while it was away.

use std::fmt;

use opentelemetry_proto::tonic::logs::v1::ResourceLogs;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;

use super::batch::{Batch, Queue};
use super::endpoint::Endpoint;
use super::error::{AttemptError, SendError};
use super::http::{Answer, HttpClient};
use super::options::TransportOptions;
use super::signal::Signal;
use super::stats::SendStats;

/// A blocking OTLP/HTTP sender of spans and log records to one collector.
///
/// ```no_run
/// use ringtrace_otlp::transport::{Endpoint, Sender, TransportOptions};
/// use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
///
/// let endpoint: Endpoint = "http://127.0.0.1:4318".parse()?;
/// let mut sender = Sender::new(endpoint, TransportOptions::default());
/// sender.push_spans(ResourceSpans::default())?;
/// sender.flush()?;
/// let stats = sender.stats();
/// assert_eq!(stats.spans.pushed, stats.spans.delivered + stats.spans.undelivered);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Dropping a sender flushes what is still queued, ignoring errors (and
/// not at all while the thread panics); call [`flush`](Sender::flush) to
/// learn the outcome.
pub struct Sender {
    endpoint: Endpoint,
    options: TransportOptions,
    client: HttpClient,
    spans: Queue<ResourceSpans>,
    logs: Queue<ResourceLogs>,
    stats: SendStats,
}

/// The batches that failed for good during one call.
#[derive(Default)]
struct Failures {
    /// The last failed batch's last error.
    last: Option<AttemptError>,
    /// Every URL a batch failed at, once each.
    urls: Vec<String>,
    attempts: u32,
    batches: u32,
}

impl Sender {
    /// A sender to `endpoint`. Nothing is sent (or connected) until a batch
    /// is full or [`flush`](Sender::flush) is called.
    pub fn new(endpoint: Endpoint, options: TransportOptions) -> Sender {
        Sender {
            client: HttpClient::new(&options),
            endpoint,
            options,
            spans: Queue::new(),
            logs: Queue::new(),
            stats: SendStats::default(),
        }
    }

    /// Queues the spans of one resource, and sends every full batch
    /// (`max_batch_bytes` of encoded requests), blocking until each is
    /// delivered or has failed for good. Queued items of the same resource
    /// and scope share one entry in the request.
    ///
    /// # Errors
    ///
    /// [`SendError::Undelivered`] when a batch sent by this call failed for
    /// good; its records are counted in [`SendStats`] and dropped. The item
    /// pushed was queued either way.
    pub fn push_spans(&mut self, spans: ResourceSpans) -> Result<(), SendError> {
        self.stats.spans.pushed += spans.record_count();
        self.spans.push(spans);
        self.send_ready(false)
    }

    /// Queues the log records of one resource, as
    /// [`push_spans`](Sender::push_spans) does spans (they go to
    /// [`Endpoint::logs_url`]).
    ///
    /// # Errors
    ///
    /// As for [`push_spans`](Sender::push_spans).
    pub fn push_logs(&mut self, logs: ResourceLogs) -> Result<(), SendError> {
        self.stats.log_records.pushed += logs.record_count();
        self.logs.push(logs);
        self.send_ready(false)
    }

    /// Sends everything queued. Afterwards nothing is queued, whatever the
    /// outcome.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ringtrace_otlp::transport::{Endpoint, SendError, Sender, TransportOptions};
    /// use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    ///
    /// // A port nobody listens on: every attempt is refused.
    /// let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    /// let endpoint: Endpoint = format!("http://127.0.0.1:{port}").parse()?;
    /// let options = TransportOptions::default().max_retries(1).initial_backoff(Duration::ZERO);
    /// let mut sender = Sender::new(endpoint, options);
    /// let spans = ResourceSpans {
    ///     scope_spans: vec![ScopeSpans { spans: vec![Span::default(); 3], ..Default::default() }],
    ///     ..Default::default()
    /// };
    /// sender.push_spans(spans)?;
    /// match sender.flush() {
    ///     Err(SendError::Undelivered { spans, attempts, .. }) => assert_eq!((spans, attempts), (3, 2)),
    ///     other => panic!("{other:?}"),
    /// }
    /// assert_eq!(sender.stats().spans.undelivered, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`SendError::Undelivered`] when any batch failed for good; the
    /// other batches were still sent, each with its own retries.
    pub fn flush(&mut self) -> Result<(), SendError> {
        self.send_ready(true)
    }

    /// What has been sent, retried, delivered and not delivered so far.
    pub fn stats(&self) -> &SendStats {
        &self.stats
    }

    /// The endpoint this sender POSTs to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends batches while a queue holds a full batch, both queues together
    /// hold more than `queue_bytes`, or `everything` is asked for.
    fn send_ready(&mut self, everything: bool) -> Result<(), SendError> {
        let spans_before = self.stats.spans.undelivered;
        let logs_before = self.stats.log_records.undelivered;
        let max_batch_bytes = self.options.max_batch_bytes;
        let mut failures = Failures::default();
        loop {
            let waiting = self.spans.bytes().saturating_add(self.logs.bytes());
            let all = everything || waiting > self.options.queue_bytes;
            if let Some(batch) = self.spans.take_batch(max_batch_bytes, all) {
                self.deliver(batch, &mut failures);
            } else if let Some(batch) = self.logs.take_batch(max_batch_bytes, all) {
                self.deliver(batch, &mut failures);
            } else {
                break;
            }
        }
        match failures.last {
            None => Ok(()),
            Some(last_error) => Err(SendError::Undelivered {
                urls: failures.urls,
                attempts: failures.attempts,
                batches: failures.batches,
                last_error,
                spans: self.stats.spans.undelivered - spans_before,
                log_records: self.stats.log_records.undelivered - logs_before,
            }),
        }
    }

    /// Sends one batch: up to `1 + max_retries` attempts, backing off
    /// between them, until a 2xx or a permanent failure. Counts its records
    /// as delivered or undelivered.
    fn deliver<S: Signal>(&mut self, batch: Batch<S>, failures: &mut Failures) {
        let url = S::url(&self.endpoint).to_owned();
        let body = S::encode_request(batch.items);
        let mut attempts = 0u32;
        loop {
            self.stats.requests += 1;
            if attempts > 0 {
                self.stats.retries += 1;
            }
            attempts += 1;
            let result = self.client.post(&url, &body);
            if matches!(result, Ok(_) | Err(AttemptError::Status { .. })) {
                self.stats.bytes_sent += body.len() as u64;
            }
            match result {
                Ok(answer) => {
                    S::counts(&mut self.stats).delivered += batch.records;
                    self.read_answer::<S>(answer);
                    return;
                }
                Err(error) if error.is_retryable() && attempts <= self.options.max_retries => {
                    std::thread::sleep(self.options.backoff(attempts, error.retry_after()));
                }
                Err(error) => {
                    S::counts(&mut self.stats).undelivered += batch.records;
                    self.stats.last_error = Some(format!("{url}: {error}"));
                    failures.attempts = failures.attempts.saturating_add(attempts);
                    failures.batches += 1;
                    if !failures.urls.contains(&url) {
                        failures.urls.push(url);
                    }
                    failures.last = Some(error);
                    return;
                }
            }
        }
    }

    /// Reads a 2xx body: the partial success it reports, or why it is not
    /// a response (which does not undo the delivery).
    fn read_answer<S: Signal>(&mut self, answer: Answer) {
        let decoded = answer.body.and_then(|body| {
            <S::Response as prost::Message>::decode(body.as_slice())
                .map_err(|error| format!("response body is not an OTLP response: {error}"))
        });
        match decoded {
            Ok(response) => {
                if let Some(partial) = S::partial_success(&response) {
                    S::counts(&mut self.stats).rejected += partial.rejected;
                    if !partial.message.is_empty() {
                        self.stats.last_response_note = Some(partial.message);
                    }
                }
            }
            Err(note) => {
                self.stats.undecodable_responses += 1;
                self.stats.last_response_note = Some(note);
            }
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // Best effort: the outcome is in the stats, which go with us.
            let _ = self.flush();
        }
    }
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("endpoint", &self.endpoint.to_string())
            .field("options", &self.options)
            .field("queued_bytes", &(self.spans.bytes() + self.logs.bytes()))
            .field("stats", &self.stats)
            .finish()
    }
}
