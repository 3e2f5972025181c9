//! OTLP/HTTP transport: spans and log records POSTed to a collector as
//! protobuf, blocking, for an exporter that turns a recorded trace into
//! OTLP after the fact (no async runtime).
//!
//! ```text
//!  push_spans ──► Queue<ResourceSpans> ─┐  full batch, or queue_bytes
//!                                       ├─ exceeded, or flush()
//!  push_logs ───► Queue<ResourceLogs> ──┘        │
//!                                                ▼
//!                  merge same resource + scope, cut at max_batch_bytes
//!                                                │
//!                                                ▼
//!            POST {endpoint}/v1/traces | /v1/logs (application/x-protobuf)
//!              2xx ─────────────► delivered (+ partial_success rejected)
//!              429 502 503 504,
//!              refused, timeout ─► wait (doubling, or a longer Retry-After; capped)
//!                                  and retry, up to max_retries
//!              other status,
//!              retries exhausted ─► undelivered, SendError::Undelivered
//! ```
//!
//! Every record pushed ends, once flushed, in exactly one of
//! [`RecordCounts::delivered`] and [`RecordCounts::undelivered`].
//!
//! The modules, one idea each: [`Endpoint`] parsing (`endpoint`), the
//! settings (`options`), the two signals behind one trait (`signal`), the
//! queue and its batches (`batch`), one HTTP attempt (`http`), the
//! sender's retry loop and accounting (`sender`), its counters (`stats`)
//! and errors (`error`).

mod batch;
mod endpoint;
mod error;
mod http;
mod options;
mod sender;
mod signal;
mod stats;

pub use endpoint::{Endpoint, EndpointError};
pub use error::{AttemptError, SendError};
pub use options::{check_header, TransportOptions};
pub use sender::Sender;
pub use stats::{RecordCounts, SendStats};
