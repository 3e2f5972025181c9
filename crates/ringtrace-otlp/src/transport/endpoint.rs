//! Where the requests go: a collector's base URL, parsed once, and the two
//! signal URLs derived from it.
//!
//! The accepted forms follow the OTLP exporter specification's
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (a base, signal paths appended) and
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full traces URL, used as is):
//!
//! | written                           | traces go to                      | logs go to                      |
//! |-----------------------------------|-----------------------------------|---------------------------------|
//! | `http://host:4318`                | `http://host:4318/v1/traces`      | `http://host:4318/v1/logs`      |
//! | `http://host:4318/otlp/`          | `http://host:4318/otlp/v1/traces` | `http://host:4318/otlp/v1/logs` |
//! | `http://host:4318/p/v1/traces`    | `http://host:4318/p/v1/traces`    | `http://host:4318/p/v1/logs`    |
//! | `http://host:4318/p/v1/logs`      | `http://host:4318/p/v1/traces`    | `http://host:4318/p/v1/logs`    |
//!
//! Only `http://` is accepted: the crate is built without TLS, so an
//! `https://` URL is refused rather than sent in clear text.

use std::fmt;
use std::str::FromStr;

/// The signal path a traces URL ends with.
const TRACES_PATH: &str = "/v1/traces";
/// The signal path a logs URL ends with.
const LOGS_PATH: &str = "/v1/logs";
/// The port an `http://` URL without one means.
const HTTP_DEFAULT_PORT: u16 = 80;
/// What every [`EndpointError`] lists as valid.
const VALID_FORMS: &str = "valid endpoints are `http://host:port` (signal paths /v1/traces and \
                           /v1/logs appended) or `http://host:port/v1/traces`";

/// An OTLP/HTTP collector endpoint: the host and port, and the path prefix
/// the signal paths (`/v1/traces`, `/v1/logs`) are appended to.
///
/// ```
/// use ringtrace_otlp::transport::Endpoint;
///
/// let base: Endpoint = "http://127.0.0.1:4318".parse()?;
/// assert_eq!(base.traces_url(), "http://127.0.0.1:4318/v1/traces");
/// assert_eq!(base.logs_url(), "http://127.0.0.1:4318/v1/logs");
///
/// let full: Endpoint = "http://collector:4318/v1/traces".parse()?;
/// assert_eq!(full.logs_url(), "http://collector:4318/v1/logs");
/// # Ok::<(), ringtrace_otlp::transport::EndpointError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://host:port` with the path prefix, never ending in `/`.
    base: String,
    /// `base` + `/v1/traces`.
    traces_url: String,
    /// `base` + `/v1/logs`.
    logs_url: String,
}

impl Endpoint {
    /// The URL spans are POSTed to (ends in `/v1/traces`).
    pub fn traces_url(&self) -> &str {
        &self.traces_url
    }

    /// The URL log records are POSTed to (ends in `/v1/logs`).
    pub fn logs_url(&self) -> &str {
        &self.logs_url
    }
}

impl fmt::Display for Endpoint {
    /// The base URL: scheme, host, port and path prefix, without a signal
    /// path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

/// Why a string is not an [`Endpoint`]. Every variant names the URL as
/// written and, in its message, the forms that are valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The string is empty (or only spaces).
    #[error("empty OTLP endpoint; {VALID_FORMS}")]
    Empty,
    /// No `scheme://` in front.
    #[error("OTLP endpoint `{url}` has no scheme; {VALID_FORMS}")]
    MissingScheme {
        /// The URL as written.
        url: String,
    },
    /// `https://`: this build has no TLS.
    #[error(
        "OTLP endpoint `{url}` uses https, but ringtrace-otlp is built without TLS; send to a \
         local collector or sidecar over http (`http://127.0.0.1:4318`) and let it forward over \
         TLS"
    )]
    TlsNotBuilt {
        /// The URL as written.
        url: String,
    },
    /// A scheme other than `http` or `https`.
    #[error(
        "OTLP endpoint `{url}` has scheme `{scheme}`; only `http` is supported; {VALID_FORMS}"
    )]
    UnknownScheme {
        /// The URL as written.
        url: String,
        /// The scheme found before `://`.
        scheme: String,
    },
    /// Nothing between `://` and the port or path.
    #[error("OTLP endpoint `{url}` has no host; {VALID_FORMS}")]
    MissingHost {
        /// The URL as written.
        url: String,
    },
    /// A host with characters no host name or IP address has.
    #[error(
        "OTLP endpoint `{url}` has host `{host}`, which is not a host name, an IPv4 address or \
         a bracketed IPv6 address (`[::1]`); {VALID_FORMS}"
    )]
    BadHost {
        /// The URL as written.
        url: String,
        /// The host part.
        host: String,
    },
    /// A port that is not a number in `1..=65535`.
    #[error(
        "OTLP endpoint `{url}` has port `{port}`; a port is a number in 1..=65535; {VALID_FORMS}"
    )]
    BadPort {
        /// The URL as written.
        url: String,
        /// The text after the host's `:`.
        port: String,
    },
    /// `user:password@` in the URL.
    #[error(
        "OTLP endpoint `{url}` carries credentials (`user@`); pass them as a header \
         (TransportOptions::header) instead; {VALID_FORMS}"
    )]
    Credentials {
        /// The URL as written.
        url: String,
    },
    /// A `?query` or `#fragment`.
    #[error("OTLP endpoint `{url}` has a query or fragment, which OTLP/HTTP does not use; {VALID_FORMS}")]
    QueryOrFragment {
        /// The URL as written.
        url: String,
    },
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(written: &str) -> Result<Self, Self::Err> {
        let url = written.trim();
        if url.is_empty() {
            return Err(EndpointError::Empty);
        }
        let owned = || url.to_owned();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(EndpointError::MissingScheme { url: owned() });
        };
        if scheme.eq_ignore_ascii_case("https") {
            return Err(EndpointError::TlsNotBuilt { url: owned() });
        }
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(EndpointError::UnknownScheme {
                url: owned(),
                scheme: scheme.to_owned(),
            });
        }
        if rest.contains(['?', '#']) {
            return Err(EndpointError::QueryOrFragment { url: owned() });
        }
        let (authority, path) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(EndpointError::Credentials { url: owned() });
        }
        let (host, port) = split_host_port(url, authority)?;
        let prefix = signal_prefix(path);
        let base = format!("http://{host}:{port}{prefix}");
        Ok(Endpoint {
            traces_url: format!("{base}{TRACES_PATH}"),
            logs_url: format!("{base}{LOGS_PATH}"),
            base,
        })
    }
}

/// Splits `host[:port]` or `[v6][:port]`, checking both halves.
fn split_host_port<'a>(url: &str, authority: &'a str) -> Result<(&'a str, u16), EndpointError> {
    let (host, port) = if authority.starts_with('[') {
        // A bracketed IPv6 literal: the port, if any, follows `]:`.
        match authority.find(']') {
            Some(close) => {
                let (host, after) = authority.split_at(close + 1);
                match after.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None if after.is_empty() => (host, None),
                    None => {
                        return Err(EndpointError::BadHost {
                            url: url.to_owned(),
                            host: authority.to_owned(),
                        })
                    }
                }
            }
            None => {
                return Err(EndpointError::BadHost {
                    url: url.to_owned(),
                    host: authority.to_owned(),
                })
            }
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(EndpointError::MissingHost {
            url: url.to_owned(),
        });
    }
    if !is_valid_host(host) {
        return Err(EndpointError::BadHost {
            url: url.to_owned(),
            host: host.to_owned(),
        });
    }
    let port = match port {
        None => HTTP_DEFAULT_PORT,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port != 0 && text.bytes().all(|b| b.is_ascii_digit()) => port,
            _ => {
                return Err(EndpointError::BadPort {
                    url: url.to_owned(),
                    port: text.to_owned(),
                })
            }
        },
    };
    Ok((host, port))
}

/// A host name or IPv4 address (letters, digits, `-`, `.`, `_`), or a
/// bracketed IPv6 address (hex digits, `:`, `.`, and a `%zone`).
fn is_valid_host(host: &str) -> bool {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => {
            !v6.is_empty()
                && v6.contains(':')
                && v6
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'.' | b'%'))
        }
        None => host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')),
    }
}

/// The path prefix the signal paths are appended to: the path without a
/// trailing `/` and without a trailing signal path.
fn signal_prefix(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.strip_suffix(TRACES_PATH)
        .or_else(|| path.strip_suffix(LOGS_PATH))
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<Endpoint, EndpointError> {
        url.parse()
    }

    #[test]
    fn base_url_gets_both_signal_paths() -> Result<(), EndpointError> {
        let endpoint = parse("http://localhost:4318/")?;
        assert_eq!(endpoint.traces_url(), "http://localhost:4318/v1/traces");
        assert_eq!(endpoint.logs_url(), "http://localhost:4318/v1/logs");
        assert_eq!(endpoint.to_string(), "http://localhost:4318");
        Ok(())
    }

    #[test]
    fn signal_url_keeps_its_prefix_for_the_sibling() -> Result<(), EndpointError> {
        let endpoint = parse("http://[::1]:9/otlp/v1/traces")?;
        assert_eq!(endpoint.traces_url(), "http://[::1]:9/otlp/v1/traces");
        assert_eq!(endpoint.logs_url(), "http://[::1]:9/otlp/v1/logs");
        let endpoint = parse("HTTP://h/v1/logs")?;
        assert_eq!(endpoint.traces_url(), "http://h:80/v1/traces");
        Ok(())
    }

    /// Whether an error is the expected variant.
    type IsExpected = fn(&EndpointError) -> bool;

    #[test]
    fn malformed_urls_name_the_part_that_is_wrong() {
        let cases: &[(&str, IsExpected)] = &[
            ("", |e| matches!(e, EndpointError::Empty)),
            ("localhost:4318", |e| {
                matches!(e, EndpointError::MissingScheme { .. })
            }),
            ("127.0.0.1", |e| {
                matches!(e, EndpointError::MissingScheme { .. })
            }),
            ("https://h:4318", |e| {
                matches!(e, EndpointError::TlsNotBuilt { .. })
            }),
            ("grpc://h:4317", |e| {
                matches!(e, EndpointError::UnknownScheme { .. })
            }),
            ("http://:4318", |e| {
                matches!(e, EndpointError::MissingHost { .. })
            }),
            ("http:///v1/traces", |e| {
                matches!(e, EndpointError::MissingHost { .. })
            }),
            ("http://h:0", |e| matches!(e, EndpointError::BadPort { .. })),
            ("http://h:99999", |e| {
                matches!(e, EndpointError::BadPort { .. })
            }),
            ("http://h:+80", |e| {
                matches!(e, EndpointError::BadPort { .. })
            }),
            ("http://h:", |e| matches!(e, EndpointError::BadPort { .. })),
            ("http://a b:1", |e| {
                matches!(e, EndpointError::BadHost { .. })
            }),
            ("http://[::1:1", |e| {
                matches!(e, EndpointError::BadHost { .. })
            }),
            ("http://u:p@h:1", |e| {
                matches!(e, EndpointError::Credentials { .. })
            }),
            ("http://h:1/?x=1", |e| {
                matches!(e, EndpointError::QueryOrFragment { .. })
            }),
        ];
        for (url, expected) in cases {
            match parse(url) {
                Ok(endpoint) => panic!("`{url}` parsed as {endpoint}"),
                Err(error) => {
                    assert!(expected(&error), "`{url}`: {error:?}");
                    let text = error.to_string();
                    assert!(text.contains("http://"), "`{url}`: {text}");
                    assert!(text.contains(url.trim()), "`{url}`: {text}");
                }
            }
        }
    }
}
