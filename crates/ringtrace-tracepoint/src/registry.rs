//! Every declared tracepoint, found at link time: list them, find them by
//! name, enable and disable them by name or pattern, check that no two
//! share a name or an id, and decode their events.
//!
//! # Names and patterns
//!
//! A tracepoint's full name is `system:event` ([`Tracepoint::name`]). The
//! functions that take a name or pattern ([`find`], [`enable`],
//! [`disable`], [`set_enabled`]) accept:
//!
//! | given | matches |
//! |---|---|
//! | `app:request_done` | that tracepoint |
//! | `request_done` | the tracepoint with that event name, when exactly one system has one; [`TracepointError::Ambiguous`] when several do |
//! | `app:*`, `*:irq_disable`, `preemptirq:irq_*` | (patterns only) with a `:`, `*` stands for any characters of the full name |
//! | `tp_*`, `*` | (patterns only) without a `:`, `*` stands for any characters of the event name, in every system |
//!
//! Nothing matching is [`TracepointError::Unknown`], listing the valid
//! names.
//!
//! # Duplicates
//!
//! Two tracepoints with one full name (declared in two modules of one crate,
//! or with one `system = ...` header in two crates) are never merged:
//! [`all`] lists both, [`check`] reports [`TracepointError::Duplicate`] with
//! both declarations' locations, and enabling, disabling or finding that
//! name is refused with the same error. Give one a system of its own.
//!
//! # Patched keys
//!
//! Under the `static-keys` feature a tracepoint's check is patched code,
//! and the static-keys crate allows patching only while no other thread
//! runs. [`set_enabled`] enforces that: it fails with
//! [`TracepointError::ThreadsRunning`] when the process has more than one
//! thread. Flip keys at startup, before spawning threads.

mod check;
mod decode;
mod lookup;
mod switch;

use crate::location::SourceLocation;
use crate::tracepoint::Tracepoint;
use thiserror::Error;

#[allow(deprecated)]
pub use check::{check, check_ids, problems};
pub use decode::{decode, DecodedEvent};
pub use lookup::find;
pub use switch::{disable, enable, set_enabled};

/// A tracepoint as the registry holds it.
#[doc(hidden)]
pub struct Registered(pub &'static Tracepoint);

inventory::collect!(Registered);

/// What went wrong with a registry call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TracepointError {
    /// No tracepoint has this name (or matches this pattern).
    #[error("no tracepoint matches `{given}`; registered tracepoints: {valid} (give `system:event`, an event name one system has, or a pattern with `*`)")]
    Unknown {
        /// The name or pattern asked for.
        given: String,
        /// The registered full names, comma-separated.
        valid: String,
    },
    /// An event name without a system that several systems have.
    #[error("`{given}` is an event in several systems: {}; give the full name `system:event`", candidates.join(", "))]
    Ambiguous {
        /// The name asked for.
        given: String,
        /// The full names it could mean.
        candidates: Vec<&'static str>,
    },
    /// Two tracepoints with one full name.
    #[error("two tracepoints are named `{name}`: one declared at {first}, the other at {second}; rename one, or declare one in a system of its own (`tracepoint! {{ system = NAME; ... }}`)")]
    Duplicate {
        /// The full name they share.
        name: &'static str,
        /// Where the first is declared (in file order).
        first: SourceLocation,
        /// Where the second is declared.
        second: SourceLocation,
    },
    /// No latency tracer has this name.
    #[error("no latency tracer is called `{given}`; valid tracers: {valid}")]
    UnknownTracer {
        /// The name asked for.
        given: String,
        /// The tracers, comma-separated.
        valid: String,
    },
    /// No instrumentation strategy has this name.
    #[error("no instrumentation strategy is called `{given}`; valid strategies: {valid}")]
    UnknownStrategy {
        /// The name asked for.
        given: String,
        /// The strategies, comma-separated.
        valid: String,
    },
    /// Two tracepoints with different names hash to one id.
    #[error("tracepoints `{0}` and `{1}` have the same id, so their events cannot be told apart; rename one")]
    IdCollision(&'static str, &'static str),
    /// A tracepoint hashes to an id reserved for `tracing` records.
    #[error("tracepoint `{0}` has id {1:#010x}, which is reserved for `tracing` records (0xffffff00 to 0xffffffff); rename it")]
    IdReserved(&'static str, u32),
    /// Patched keys may only change while the process has one thread.
    #[error("static-keys code patching needs a single-threaded process, and {0} threads are running; flip keys before spawning threads")]
    ThreadsRunning(usize),
    /// An event that is not a well-formed tracepoint event.
    #[error("cannot decode event: {0}")]
    Decode(String),
}

/// Every registered tracepoint, sorted by full name and then by where it
/// is declared. Two tracepoints with one name are both here (see
/// [`check`]).
pub fn all() -> Vec<&'static Tracepoint> {
    let mut all: Vec<&'static Tracepoint> = inventory::iter::<Registered>
        .into_iter()
        .map(|r| r.0)
        .collect();
    all.sort_by_key(|tp| {
        let at = tp.declared_at;
        (tp.name, at.file, at.line, at.column)
    });
    all
}

/// The tracepoint whose events start with `id`: the first in [`all`]'s
/// order if an id collision ([`check`]) gives it two.
pub fn by_id(id: u32) -> Option<&'static Tracepoint> {
    all().into_iter().find(|tp| tp.id == id)
}

/// A tracepoint's names, state and shape, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TracepointState {
    /// Its full name, `system:event`.
    pub name: &'static str,
    /// Its system.
    pub system: &'static str,
    /// Its event name within the system.
    pub event: &'static str,
    /// Its id.
    pub id: u32,
    /// Whether it records.
    pub enabled: bool,
    /// `name: kind` for each field.
    pub fields: Vec<String>,
    /// Its text format.
    pub format: &'static str,
    /// Where it is declared.
    pub declared_at: SourceLocation,
}

/// Every tracepoint with its state, in [`all`]'s order.
///
/// ```
/// ringtrace_tracepoint::tracepoint! {
///     system = docs;
///     /// A doc example's tracepoint.
///     pub fn listed_example(value: u32) = "value={}";
/// }
/// let listed = ringtrace_tracepoint::registry::list();
/// let me = listed.iter().find(|t| t.name == "docs:listed_example").unwrap();
/// assert_eq!((me.system, me.event), ("docs", "listed_example"));
/// assert!(!me.enabled);
/// assert_eq!(me.fields, vec!["value: U32"]);
/// ```
pub fn list() -> Vec<TracepointState> {
    all()
        .into_iter()
        .map(|tp| TracepointState {
            name: tp.name,
            system: tp.system,
            event: tp.event,
            id: tp.id,
            enabled: tp.is_enabled(),
            fields: tp
                .fields
                .iter()
                .map(|f| format!("{}: {:?}", f.name, f.kind))
                .collect(),
            format: tp.format,
            declared_at: tp.declared_at,
        })
        .collect()
}
