//! Every declared tracepoint, found at link time: list them, enable and
//! disable them by name, and decode their events.
//!
//! Under the `static-keys` feature a tracepoint's check is patched code,
//! and the static-keys crate allows patching only while no other thread
//! runs. [`set_enabled`] enforces that: it fails with
//! [`TracepointError::ThreadsRunning`] when the process has more than one
//! thread. Flip keys at startup, before spawning threads.

use crate::field::{decode_field, render, FieldValue};
use crate::sink::EVENT_HEADER_LEN;
use crate::tracepoint::Tracepoint;
use thiserror::Error;

/// A tracepoint as the registry holds it.
#[doc(hidden)]
pub struct Registered(pub &'static Tracepoint);

inventory::collect!(Registered);

/// What went wrong with a registry call.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TracepointError {
    /// No tracepoint has this name (or matches this pattern).
    #[error("no tracepoint matches `{given}`; registered tracepoints: {valid}")]
    Unknown {
        /// The name or pattern asked for.
        given: String,
        /// The registered names, comma-separated.
        valid: String,
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
    /// Two tracepoints hash to one id.
    #[error("tracepoints `{0}` and `{1}` have the same id; rename one")]
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

/// Every registered tracepoint, sorted by name.
pub fn all() -> Vec<&'static Tracepoint> {
    let mut all: Vec<&'static Tracepoint> = inventory::iter::<Registered>
        .into_iter()
        .map(|r| r.0)
        .collect();
    all.sort_by_key(|tp| tp.name);
    all.dedup_by_key(|tp| tp.name);
    all
}

/// The tracepoint called `name`.
pub fn find(name: &str) -> Option<&'static Tracepoint> {
    all().into_iter().find(|tp| tp.name == name)
}

/// The tracepoint whose events start with `id`.
pub fn by_id(id: u32) -> Option<&'static Tracepoint> {
    all().into_iter().find(|tp| tp.id == id)
}

/// Checks that no two registered tracepoints share an id, and that none
/// has an id reserved for `tracing` records ([`RESERVED_IDS`](crate::RESERVED_IDS)).
pub fn check_ids() -> Result<(), TracepointError> {
    let mut by_id: Vec<&'static Tracepoint> = all();
    if let Some(tp) = by_id.iter().find(|tp| crate::RESERVED_IDS.contains(&tp.id)) {
        return Err(TracepointError::IdReserved(tp.name, tp.id));
    }
    by_id.sort_by_key(|tp| tp.id);
    for pair in by_id.windows(2) {
        if pair[0].id == pair[1].id {
            return Err(TracepointError::IdCollision(pair[0].name, pair[1].name));
        }
    }
    Ok(())
}

/// A tracepoint's name, state and shape, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracepointState {
    /// Its name.
    pub name: &'static str,
    /// Its id.
    pub id: u32,
    /// Whether it records.
    pub enabled: bool,
    /// `name: kind` for each field.
    pub fields: Vec<String>,
    /// Its text format.
    pub format: &'static str,
}

/// Every tracepoint with its state.
///
/// ```
/// ringtrace_tracepoint::tracepoint! {
///     /// A doc example's tracepoint.
///     pub fn listed_example(value: u32) = "value={}";
/// }
/// let listed = ringtrace_tracepoint::registry::list();
/// let me = listed.iter().find(|t| t.name == "listed_example").unwrap();
/// assert!(!me.enabled);
/// assert_eq!(me.fields, vec!["value: U32"]);
/// ```
pub fn list() -> Vec<TracepointState> {
    all()
        .into_iter()
        .map(|tp| TracepointState {
            name: tp.name,
            id: tp.id,
            enabled: tp.is_enabled(),
            fields: tp
                .fields
                .iter()
                .map(|f| format!("{}: {:?}", f.name, f.kind))
                .collect(),
            format: tp.format,
        })
        .collect()
}

/// Turns on every tracepoint matching `pattern` (a name, or a prefix ending
/// in `*`); returns how many.
pub fn enable(pattern: &str) -> Result<usize, TracepointError> {
    set_enabled(pattern, true)
}

/// Turns off every tracepoint matching `pattern`; returns how many.
pub fn disable(pattern: &str) -> Result<usize, TracepointError> {
    set_enabled(pattern, false)
}

/// Sets every tracepoint matching `pattern`; returns how many.
pub fn set_enabled(pattern: &str, on: bool) -> Result<usize, TracepointError> {
    let matching: Vec<&'static Tracepoint> = all()
        .into_iter()
        .filter(|tp| matches(pattern, tp.name))
        .collect();
    if matching.is_empty() {
        return Err(TracepointError::Unknown {
            given: pattern.to_owned(),
            valid: all()
                .iter()
                .map(|tp| tp.name)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    patching_allowed()?;
    for tp in &matching {
        tp.set_key(on);
    }
    Ok(matching.len())
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

#[cfg(feature = "static-keys")]
fn patching_allowed() -> Result<(), TracepointError> {
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Threads:")
                    .and_then(|n| n.trim().parse::<usize>().ok())
            })
        })
        .unwrap_or(usize::MAX);
    if threads != 1 {
        return Err(TracepointError::ThreadsRunning(threads));
    }
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(static_keys::global_init);
    Ok(())
}

#[cfg(not(feature = "static-keys"))]
fn patching_allowed() -> Result<(), TracepointError> {
    Ok(())
}

/// A decoded tracepoint event.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedEvent {
    /// The tracepoint that recorded it.
    pub tracepoint: &'static Tracepoint,
    /// The id (`gettid`) of the thread that recorded it.
    pub tid: u32,
    /// Its field values, in order.
    pub values: Vec<FieldValue>,
}

impl DecodedEvent {
    /// The event as text: `name: ` and the tracepoint's format filled in.
    pub fn text(&self) -> String {
        format!(
            "{}: {}",
            self.tracepoint.name,
            render(self.tracepoint.format, &self.values)
        )
    }
}

impl PartialEq for Tracepoint {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.name == other.name
    }
}

/// Decodes an event payload recorded by a tracepoint: its tracepoint's id
/// and the writing thread's id (u32 each, little-endian), then the fields.
/// Bytes after the last field are ignored.
///
/// ```
/// use ringtrace_tracepoint::{registry, tracepoint};
/// tracepoint! {
///     /// A doc example's tracepoint.
///     pub fn decoded_example(value: u32) = "value={}";
/// }
/// let mut payload = decoded_example::TRACEPOINT.id.to_le_bytes().to_vec();
/// payload.extend_from_slice(&1234u32.to_le_bytes()); // the thread's id
/// payload.extend_from_slice(&7u32.to_le_bytes());
/// let event = registry::decode(&payload)?;
/// assert_eq!((event.tid, event.text()), (1234, "decoded_example: value=7".to_owned()));
/// assert!(registry::decode(&payload[..6]).is_err()); // cut off: an error, not a panic
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
pub fn decode(payload: &[u8]) -> Result<DecodedEvent, TracepointError> {
    let word = |at: usize| {
        payload
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let (Some(id), Some(tid)) = (word(0), word(4)) else {
        return Err(TracepointError::Decode(format!(
            "{} bytes is too short for an id and a thread id ({EVENT_HEADER_LEN} bytes)",
            payload.len()
        )));
    };
    let tracepoint = by_id(id)
        .ok_or_else(|| TracepointError::Decode(format!("no tracepoint has id {id:#010x}")))?;
    let mut rest = &payload[EVENT_HEADER_LEN..];
    let mut values = Vec::with_capacity(tracepoint.fields.len());
    for field in tracepoint.fields {
        let (value, used) = decode_field(field.kind, rest).ok_or_else(|| {
            TracepointError::Decode(format!(
                "{}: field `{}` is cut off",
                tracepoint.name, field.name
            ))
        })?;
        values.push(value);
        rest = &rest[used..];
    }
    Ok(DecodedEvent {
        tracepoint,
        tid,
        values,
    })
}
