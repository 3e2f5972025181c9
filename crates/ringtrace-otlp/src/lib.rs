//! ringtrace traces sent beyond one machine: span trees to an
//! OpenTelemetry collector over OTLP/HTTP, the trees to send chosen after
//! the fact by tail-sampling rules.
//!
//! A ringtrace ring records every span at ring cost; what to send is
//! decided once each span tree is whole ([`export_otlp`]): keep the trees
//! with an error, with a span slower than a threshold, with a given
//! name, or a fraction of the rest chosen by trace id ([`KeepRules`]).
//!
//! - Spans become OTLP spans (see `convert` in the source for every
//!   attribute): ids stable each time the trace is read, parent links,
//!   fields as attributes, status from an `error` field or the level,
//!   events inside spans as span events, `follows_from` links as links;
//!   a root carrying a W3C `traceparent` field joins that trace.
//! - Events outside spans become log records.
//! - Each process is a resource: `service.name`, `host.name`,
//!   `process.pid`, `process.executable.name`, `ringtrace.clock`.
//! - The [`transport`] batches requests under a size bound, retries 429,
//!   502, 503, 504 and connection errors with a backoff, and counts every
//!   span and record it was handed as delivered or not: nothing is
//!   dropped without being counted.
//!
//! ```no_run
//! use ringtrace_otlp::{export_otlp, KeepRules, OtlpOptions};
//! let recovery = ringtrace_ring::file::recover("service.ring")?;
//! let trace = ringtrace_export::Trace::single(&recovery);
//! let options = OtlpOptions::new("http://127.0.0.1:4318".parse()?)
//!     .service_name("checkout")
//!     .keep(KeepRules::parse(["error", "slower:250ms"])?);
//! let summary = export_otlp(&trace, options)?;
//! println!("kept {} of {} trees", summary.kept.kept_trees, summary.assembled.trees);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod export;
pub mod live;
mod pipeline;
pub mod transport;

pub use convert::SCOPE;
pub use export::{export_otlp, OtlpError, OtlpOptions, OtlpSummary};
pub use ringtrace_export::spans::{KeepRule, KeepRuleError, KeepRules, KeepStats};
pub use transport::{Endpoint, EndpointError, SendError, SendStats, TransportOptions};
