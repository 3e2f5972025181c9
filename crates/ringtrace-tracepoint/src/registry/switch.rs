//! Turning tracepoints on and off, by pattern or one at a time, refusing
//! names that two tracepoints share.

use super::check::problems_of;
use super::lookup::matching;
use super::TracepointError;
use crate::tracepoint::Tracepoint;

/// Turns on every tracepoint matching `pattern` (a full name, a bare event
/// name, or a pattern with `*`: see the [registry](super) rules); returns
/// how many.
///
/// Refused, with nothing changed, when a matching name belongs to two
/// tracepoints ([`TracepointError::Duplicate`], naming both locations) or
/// shares its id with another ([`TracepointError::IdCollision`]).
///
/// ```
/// use ringtrace_tracepoint::{registry, tracepoint};
/// tracepoint! {
///     system = docs;
///     /// A doc example's tracepoint.
///     pub fn enabled_a(value: u32) = "value={}";
///     /// Another.
///     pub fn enabled_b(value: u32) = "value={}";
/// }
/// assert_eq!(registry::enable("docs:enabled_a")?, 1);
/// assert_eq!(registry::enable("docs:*")?, 2);
/// assert_eq!(registry::disable("enabled_*")?, 2);
/// assert!(!enabled_a::is_enabled());
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
pub fn enable(pattern: &str) -> Result<usize, TracepointError> {
    set_enabled(pattern, true)
}

/// Turns off every tracepoint matching `pattern`; returns how many. Refused
/// as [`enable`] is.
pub fn disable(pattern: &str) -> Result<usize, TracepointError> {
    set_enabled(pattern, false)
}

/// Sets every tracepoint matching `pattern`; returns how many. Refused as
/// [`enable`] is.
pub fn set_enabled(pattern: &str, on: bool) -> Result<usize, TracepointError> {
    let found = matching(pattern)?;
    if let Some(problem) = problems_of(&found).into_iter().next() {
        return Err(problem);
    }
    patching_allowed()?;
    for tp in &found {
        tp.set_key(on);
    }
    Ok(found.len())
}

impl Tracepoint {
    /// Turns this tracepoint on or off, as [`set_enabled`] with its full
    /// name would (and refused as it would be), without a name to look up.
    ///
    /// ```
    /// ringtrace_tracepoint::tracepoint! {
    ///     /// A doc example's tracepoint.
    ///     pub fn switched_example(value: u32) = "value={}";
    /// }
    /// switched_example::TRACEPOINT.set_enabled(true)?;
    /// assert!(switched_example::is_enabled());
    /// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
    /// ```
    pub fn set_enabled(&'static self, on: bool) -> Result<(), TracepointError> {
        if let Some(problem) = problems_of(&[self]).into_iter().next() {
            return Err(problem);
        }
        patching_allowed()?;
        self.set_key(on);
        Ok(())
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
