//! How a [`Sender`](super::Sender) sends: timeouts, retries and their
//! backoff, batch and queue sizes, extra headers.

use std::fmt;
use std::time::Duration;

/// The settings of a [`Sender`](super::Sender), built from
/// [`TransportOptions::default`] with setters:
///
/// ```
/// use std::time::Duration;
/// use ringtrace_otlp::transport::TransportOptions;
///
/// let options = TransportOptions::default()
///     .timeout(Duration::from_secs(2))
///     .max_retries(3)
///     .header("authorization", "Bearer t0ken");
/// // Header values stay out of debug output: they are often credentials.
/// assert!(!format!("{options:?}").contains("t0ken"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TransportOptions {
    /// Time for one HTTP request, connecting to reading the response.
    pub(super) timeout: Duration,
    /// Attempts after the first, per batch.
    pub(super) max_retries: u32,
    /// The wait before the first retry; doubled for each one after.
    pub(super) initial_backoff: Duration,
    /// The longest wait between attempts, whether computed or asked for
    /// by the server's `Retry-After`.
    pub(super) max_backoff: Duration,
    /// A request's encoded size the batcher fills up to; in `1..`.
    pub(super) max_batch_bytes: usize,
    /// The encoded bytes both queues may hold before they are flushed.
    pub(super) queue_bytes: usize,
    /// Extra headers, sent on every request in this order.
    pub(super) headers: Vec<(String, String)>,
}

impl Default for TransportOptions {
    /// 10 s per request, 5 retries backing off from 100 ms to at most 5 s,
    /// 4 MiB batches, 64 MiB queued, no extra headers.
    fn default() -> Self {
        TransportOptions {
            timeout: Duration::from_secs(10),
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            max_batch_bytes: 4 << 20,
            queue_bytes: 64 << 20,
            headers: Vec::new(),
        }
    }
}

impl TransportOptions {
    /// Time allowed for one HTTP request, from connecting to the end of the
    /// response body. Default 10 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times a batch is sent again after a retryable failure
    /// (429, 502, 503, 504, a connection error or a timeout). Default 5, so
    /// a batch gets at most 6 attempts.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The wait before the first retry, doubled before each later one.
    /// Default 100 ms.
    pub fn initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// The longest wait between two attempts; a server's `Retry-After` is
    /// capped at it too. Default 5 s.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// The encoded size a request is filled up to. An item larger than this
    /// is sent alone. Default 4 MiB; 0 is taken as 1 (every item alone).
    pub fn max_batch_bytes(mut self, bytes: usize) -> Self {
        self.max_batch_bytes = bytes.max(1);
        self
    }

    /// The encoded bytes spans and log records together may wait in the
    /// queues; past it both are flushed. Default 64 MiB.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Adds an HTTP header sent with every request (for example
    /// `authorization`). A name or value HTTP does not allow makes every
    /// request fail, counted as undelivered, with an error naming it:
    /// check it first with [`check_header`].
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Replaces all extra headers.
    pub fn headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.headers = headers;
        self
    }

    /// The wait before retry number `retry` (1 for the first retry): the
    /// initial backoff doubled `retry - 1` times, or the server's
    /// `Retry-After` when it asked for longer (a shorter one, `0` say,
    /// does not make the retries come back to back), either way at most
    /// the maximum.
    pub(super) fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let doublings = retry.saturating_sub(1).min(31);
        let computed = self.initial_backoff.saturating_mul(1 << doublings);
        retry_after
            .map_or(computed, |asked| asked.max(computed))
            .min(self.max_backoff)
    }
}

impl fmt::Debug for TransportOptions {
    /// Header values are left out: they are often credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("TransportOptions")
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_batch_bytes", &self.max_batch_bytes)
            .field("queue_bytes", &self.queue_bytes)
            .field("header_names", &header_names)
            .finish()
    }
}

/// Headers the transport sets itself, which a caller's would contradict.
const OWN_HEADERS: [&str; 5] = [
    "content-type",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
];

/// Whether `name: value` can be sent with every request: the name an HTTP
/// token (RFC 9110 5.6.2) and not one the transport sets itself, the
/// value visible characters, spaces and tabs only (no CR, LF or other
/// control). The error names the header and what it may hold.
///
/// ```
/// use ringtrace_otlp::transport::check_header;
/// assert!(check_header("authorization", "Bearer x").is_ok());
/// assert!(check_header("bad name", "x").unwrap_err().contains("token"));
/// assert!(check_header("x-a", "1\r\nX-B: 2").unwrap_err().contains("control"));
/// assert!(check_header("Content-Length", "5").unwrap_err().contains("sets it"));
/// ```
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(tchar) {
        return Err(format!(
            "header name `{}` is not an HTTP token: letters, digits and !#$%&'*+-.^_`|~ only",
            name.escape_debug()
        ));
    }
    if OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "header `{name}`: the exporter sets it itself; leave it out"
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|&c| c != '\t' && (c.is_control() || c == '\u{7f}'))
    {
        return Err(format!(
            "header `{name}`: its value holds the control character {:?}; visible characters, spaces and tabs only",
            c
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_retry_after_only_lengthens_it() {
        let options = TransportOptions::default()
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(500));
        let waits: Vec<u128> = (1..=5)
            .map(|n| options.backoff(n, None).as_millis())
            .collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        assert_eq!(options.backoff(u32::MAX, None), Duration::from_millis(500));
        // Retry-After lengthens a wait, never shortens it.
        let asked = Some(Duration::from_millis(50));
        assert_eq!(options.backoff(2, asked), Duration::from_millis(200));
        let asked = Some(Duration::ZERO);
        assert_eq!(options.backoff(1, asked), Duration::from_millis(100));
        let asked = Some(Duration::from_millis(300));
        assert_eq!(options.backoff(1, asked), Duration::from_millis(300));
        let asked = Some(Duration::from_secs(3600));
        assert_eq!(options.backoff(1, asked), Duration::from_millis(500));
    }

    #[test]
    fn debug_leaves_out_header_values() {
        let options = TransportOptions::default().header("authorization", "secret");
        let text = format!("{options:?}");
        assert!(text.contains("authorization"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }
}
