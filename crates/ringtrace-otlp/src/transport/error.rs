//! The errors of sending: one HTTP attempt's ([`AttemptError`]) and a
//! `push_*`/`flush` call's ([`SendError`]).

use std::time::Duration;

/// How many bytes of an error response's body an [`AttemptError::Status`]
/// keeps.
pub(super) const ERROR_BODY_BYTES: usize = 200;

/// Why one HTTP attempt did not deliver its batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttemptError {
    /// The collector answered with a status other than 2xx.
    #[error("HTTP status {status}{}: {}", reason_suffix(*.status), body_text(.body))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The wait the collector asked for in `Retry-After` (seconds form
        /// only; an HTTP date is ignored).
        retry_after: Option<Duration>,
        /// The first 200 bytes of the response body, as UTF-8 (invalid
        /// bytes replaced).
        body: String,
    },
    /// The request did not finish within the timeout.
    #[error("timed out: {message}")]
    Timeout {
        /// Which phase timed out, in the HTTP client's words.
        message: String,
    },
    /// No connection, or it broke: refused, reset, closed before the
    /// response, unknown host, a response that is not HTTP.
    #[error("connection failed: {message}")]
    Connection {
        /// The HTTP client's or the operating system's error text.
        message: String,
    },
    /// The request could not be built (a header name or value HTTP does not
    /// allow, for example); nothing was sent.
    #[error("request not sent: {message}")]
    Request {
        /// What is wrong with the request.
        message: String,
    },
}

impl AttemptError {
    /// Whether sending the same batch again may succeed: 429, 502, 503 and
    /// 504, timeouts and connection failures. Other statuses and bad
    /// requests are permanent.
    pub fn is_retryable(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            AttemptError::Timeout { .. } | AttemptError::Connection { .. } => true,
            AttemptError::Request { .. } => false,
        }
    }

    /// The `Retry-After` wait the collector asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AttemptError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// ` Too Many Requests` for 429: the status's reason phrase, if it has one.
fn reason_suffix(status: u16) -> String {
    ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .map(|reason| format!(" {reason}"))
        .unwrap_or_default()
}

fn body_text(body: &str) -> &str {
    if body.trim().is_empty() {
        "(empty body)"
    } else {
        body
    }
}

/// Why a [`push_spans`](super::Sender::push_spans),
/// [`push_logs`](super::Sender::push_logs) or
/// [`flush`](super::Sender::flush) call did not deliver everything it sent.
///
/// The records it names are dropped (and counted in
/// [`SendStats`](super::SendStats)' `undelivered`); the queue is empty of
/// them, so memory stays bounded and the next call starts afresh, every
/// later batch getting its own retries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// One or more batches failed for good during the call.
    #[error(
        "{spans} spans and {log_records} log records not delivered to {} ({batches} \
         batch(es), {attempts} attempt(s)); last error: {last_error}",
        .urls.join(" and ")
    )]
    Undelivered {
        /// Every URL a batch failed for good at, once each, in the order
        /// they first failed (spans go to `/v1/traces`, log records to
        /// `/v1/logs`).
        urls: Vec<String>,
        /// HTTP attempts made for the failed batches, retries included.
        attempts: u32,
        /// How many batches failed.
        batches: u32,
        /// The last failed attempt's error.
        last_error: AttemptError,
        /// Spans in the failed batches.
        spans: u64,
        /// Log records in the failed batches.
        log_records: u64,
    },
}
