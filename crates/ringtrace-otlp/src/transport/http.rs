//! One OTLP/HTTP attempt: a POST of an encoded request, its outcome sorted
//! into a response body or an [`AttemptError`].

use std::io::Read;
use std::time::Duration;

use super::error::{AttemptError, ERROR_BODY_BYTES};
use super::options::TransportOptions;

/// The protobuf encoding of OTLP/HTTP.
const CONTENT_TYPE: &str = "application/x-protobuf";
/// The largest 2xx response body read; an `Export*ServiceResponse` is a
/// few bytes plus an error message.
const MAX_RESPONSE_BYTES: u64 = 1 << 20;

/// The HTTP side of a sender: a connection-pooling agent and the headers
/// every request carries.
pub(super) struct HttpClient {
    agent: ureq::Agent,
    headers: Vec<(String, String)>,
}

/// What a 2xx answer carried.
pub(super) struct Answer {
    /// The response body, or why it could not be read.
    pub(super) body: Result<Vec<u8>, String>,
}

impl HttpClient {
    /// A client with `options`' timeout and headers. Statuses are read,
    /// not turned into errors, and redirects are not followed (a POST body
    /// is not re-sent elsewhere; a 3xx is a permanent failure).
    pub(super) fn new(options: &TransportOptions) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout))
            .timeout_connect(Some(options.timeout))
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("ringtrace-otlp/", env!("CARGO_PKG_VERSION")))
            .build();
        HttpClient {
            agent: config.into(),
            headers: options.headers.clone(),
        }
    }

    /// POSTs `body` to `url` once.
    pub(super) fn post(&self, url: &str, body: &[u8]) -> Result<Answer, AttemptError> {
        let mut request = self.agent.post(url).content_type(CONTENT_TYPE);
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let mut response = request.send(body).map_err(classify)?;
        let status = response.status();
        if status.is_success() {
            let body = response
                .body_mut()
                .with_config()
                .limit(MAX_RESPONSE_BYTES)
                .read_to_vec()
                .map_err(|error| error.to_string());
            return Ok(Answer { body });
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_retry_after);
        let mut head = Vec::with_capacity(ERROR_BODY_BYTES);
        // A body that breaks off is still worth its first bytes.
        let _ = response
            .body_mut()
            .as_reader()
            .take(ERROR_BODY_BYTES as u64)
            .read_to_end(&mut head);
        Err(AttemptError::Status {
            status: status.as_u16(),
            retry_after,
            body: String::from_utf8_lossy(&head).trim().to_owned(),
        })
    }
}

/// `Retry-After` in its delay-seconds form; an HTTP date gives `None` (the
/// computed backoff is used instead).
fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Sorts the client's errors into retryable (timeouts, connections) and
/// permanent (a request that cannot be built) ones.
fn classify(error: ureq::Error) -> AttemptError {
    let message = error.to_string();
    match error {
        ureq::Error::Timeout(_) => AttemptError::Timeout { message },
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            AttemptError::Timeout { message }
        }
        ureq::Error::Io(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound
        | ureq::Error::Protocol(_) => AttemptError::Connection { message },
        _ => AttemptError::Request { message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_ignores_dates() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
