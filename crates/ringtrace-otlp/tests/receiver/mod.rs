//! A test OTLP/HTTP collector: a real HTTP/1.1 server on `127.0.0.1:0`
//! (std's `TcpListener`, a thread per connection, keep-alive,
//! `Content-Length` bodies) that decodes `POST /v1/traces` and
//! `POST /v1/logs` with the opentelemetry-proto types and keeps every
//! request it accepts.
//!
//! Its behaviour is scripted ([`Script`]): fail the first K requests with a
//! status (and `Retry-After`) or by closing the connection, then answer
//! 200 with an encoded `Export*ServiceResponse`, optionally reporting
//! rejected records. [`Receiver::stop`] closes the port.
//!
//! Use it from a test file with `mod receiver;`. The `fixtures` (re-exported
//! here) build spans and log records with recognisable ids and resources.

// Each test file uses part of the helper.
#![allow(dead_code)]

use std::io::{self, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use wire::{read_request, response, Request};

mod fixtures;
mod wire;

pub use fixtures::{logs, service_name, span_id, spans};

/// How a scripted failure answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// An HTTP status, with a `Retry-After: seconds` header if given.
    Status {
        /// The status code.
        status: u16,
        /// Seconds for `Retry-After`.
        retry_after: Option<u64>,
    },
    /// Read the request, then close the connection without answering.
    Close,
}

/// The receiver's behaviour: `failing` for the first `first` requests (to
/// either signal path), then 200.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Script {
    /// How the first requests fail.
    pub failing: Reply,
    /// How many requests fail.
    pub first: usize,
    /// `rejected_spans` / `rejected_log_records` reported in every 200.
    pub rejected: i64,
}

impl Script {
    /// Answer 200 to everything.
    pub fn accept_all() -> Script {
        Script {
            failing: Reply::Close,
            first: 0,
            rejected: 0,
        }
    }

    /// Answer `status` (with `retry_after`) to the first `first` requests.
    pub fn status_first(status: u16, retry_after: Option<u64>, first: usize) -> Script {
        Script {
            failing: Reply::Status {
                status,
                retry_after,
            },
            first,
            rejected: 0,
        }
    }

    /// Close the connection on the first `first` requests.
    pub fn close_first(first: usize) -> Script {
        Script {
            failing: Reply::Close,
            first,
            rejected: 0,
        }
    }
}

/// One request as it arrived, whatever the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedRequest {
    /// The request target, e.g. `/v1/traces`.
    pub path: String,
    /// The headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The status answered; `None` when the connection was closed instead.
    pub answered: Option<u16>,
}

impl ReceivedRequest {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A span from an accepted request, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The span.
    pub span: Span,
    /// Its resource's attributes.
    pub resource_attributes: Vec<KeyValue>,
    /// Its instrumentation scope's name.
    pub scope_name: String,
}

/// A log record from an accepted request, with its resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedLog {
    /// The log record.
    pub record: LogRecord,
    /// Its resource's attributes.
    pub resource_attributes: Vec<KeyValue>,
}

#[derive(Default)]
struct State {
    requests: Vec<ReceivedRequest>,
    traces: Vec<ExportTraceServiceRequest>,
    logs: Vec<ExportLogsServiceRequest>,
    /// Open connections, shut down by `stop`.
    streams: Vec<TcpStream>,
}

struct Shared {
    script: Script,
    stopping: AtomicBool,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running test collector. Stops (closing its port) on drop.
pub struct Receiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Receiver {
    /// A receiver answering 200 to everything.
    pub fn start() -> io::Result<Receiver> {
        Receiver::with_script(Script::accept_all())
    }

    /// A receiver following `script`.
    pub fn with_script(script: Script) -> io::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            stopping: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || accept_loop(listener, accept_shared))?;
        Ok(Receiver {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:port`, the base endpoint.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes the listening port (connections are then refused) and every
    /// open connection. Returns once the port is closed.
    pub fn stop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            // Wake the accept loop so it sees `stopping` and drops the
            // listener.
            let _ = TcpStream::connect(self.addr);
            let _ = accept.join();
        }
        for stream in self.shared.lock().streams.drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Every request that arrived, accepted or not.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The accepted trace requests, decoded.
    pub fn trace_requests(&self) -> Vec<ExportTraceServiceRequest> {
        self.shared.lock().traces.clone()
    }

    /// The accepted log requests, decoded.
    pub fn log_requests(&self) -> Vec<ExportLogsServiceRequest> {
        self.shared.lock().logs.clone()
    }

    /// Every span of the accepted requests, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let state = self.shared.lock();
        let mut spans = Vec::new();
        for resource_spans in state.traces.iter().flat_map(|r| &r.resource_spans) {
            let attributes = resource_spans
                .resource
                .as_ref()
                .map(|r| r.attributes.clone())
                .unwrap_or_default();
            for scope_spans in &resource_spans.scope_spans {
                let scope_name = scope_spans
                    .scope
                    .as_ref()
                    .map(|s| s.name.clone())
                    .unwrap_or_default();
                spans.extend(scope_spans.spans.iter().map(|span| ReceivedSpan {
                    span: span.clone(),
                    resource_attributes: attributes.clone(),
                    scope_name: scope_name.clone(),
                }));
            }
        }
        spans
    }

    /// Every log record of the accepted requests, in arrival order.
    pub fn logs(&self) -> Vec<ReceivedLog> {
        let state = self.shared.lock();
        let mut logs = Vec::new();
        for resource_logs in state.logs.iter().flat_map(|r| &r.resource_logs) {
            let attributes = resource_logs
                .resource
                .as_ref()
                .map(|r| r.attributes.clone())
                .unwrap_or_default();
            for record in resource_logs.scope_logs.iter().flat_map(|s| &s.log_records) {
                logs.push(ReceivedLog {
                    record: record.clone(),
                    resource_attributes: attributes.clone(),
                });
            }
        }
        logs
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        shared.lock().streams.push(clone);
        let connection_shared = Arc::clone(&shared);
        let _ = std::thread::Builder::new()
            .name("otlp-receiver-conn".into())
            .spawn(move || serve(stream, &connection_shared));
    }
}

/// Answers requests on one connection until it closes or asks to.
fn serve(stream: TcpStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Ok(Some(request)) = read_request(&mut reader) {
        let closes = request
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        match answer(&request, shared) {
            None => {
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            Some(response) => {
                if writer
                    .write_all(&response)
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    return;
                }
            }
        }
        if closes {
            return;
        }
    }
}

/// The response bytes for `request`, or `None` to close the connection.
/// Records the request (and, when accepted, its decoded body).
fn answer(request: &Request, shared: &Shared) -> Option<Vec<u8>> {
    let mut state = shared.lock();
    let index = state.requests.len();
    let record = |answered: Option<u16>, state: &mut State| {
        state.requests.push(ReceivedRequest {
            path: request.path.clone(),
            headers: request.headers.clone(),
            answered,
        });
    };
    let signal_path = matches!(request.path.as_str(), "/v1/traces" | "/v1/logs");
    if request.method != "POST" || !signal_path {
        record(Some(404), &mut state);
        return Some(response(404, None, "text/plain", b"not an OTLP path"));
    }
    let script = shared.script;
    if index < script.first {
        return match script.failing {
            Reply::Close => {
                record(None, &mut state);
                None
            }
            Reply::Status {
                status,
                retry_after,
            } => {
                record(Some(status), &mut state);
                let text = format!("scripted failure {index} with status {status}");
                Some(response(status, retry_after, "text/plain", text.as_bytes()))
            }
        };
    }
    let partial = |message: &str| (script.rejected != 0).then(|| message.to_owned());
    let encoded = if request.path == "/v1/traces" {
        ExportTraceServiceRequest::decode(request.body.as_slice()).map(|decoded| {
            state.traces.push(decoded);
            ExportTraceServiceResponse {
                partial_success: partial("spans rejected by script").map(|error_message| {
                    ExportTracePartialSuccess {
                        rejected_spans: script.rejected,
                        error_message,
                    }
                }),
            }
            .encode_to_vec()
        })
    } else {
        ExportLogsServiceRequest::decode(request.body.as_slice()).map(|decoded| {
            state.logs.push(decoded);
            ExportLogsServiceResponse {
                partial_success: partial("log records rejected by script").map(|error_message| {
                    ExportLogsPartialSuccess {
                        rejected_log_records: script.rejected,
                        error_message,
                    }
                }),
            }
            .encode_to_vec()
        })
    };
    match encoded {
        Ok(body) => {
            record(Some(200), &mut state);
            Some(response(200, None, "application/x-protobuf", &body))
        }
        Err(error) => {
            record(Some(400), &mut state);
            Some(response(
                400,
                None,
                "text/plain",
                error.to_string().as_bytes(),
            ))
        }
    }
}
