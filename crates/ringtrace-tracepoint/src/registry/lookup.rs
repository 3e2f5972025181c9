//! Finding tracepoints by full name, bare event name or pattern (the rules
//! are in the [registry](super) documentation).

use super::check::problems_of;
use super::{all, TracepointError};
use crate::tracepoint::Tracepoint;

/// The tracepoint called `name`: a full name `system:event`, or a bare
/// event name that exactly one system has. No wildcards.
///
/// Errors: [`TracepointError::Unknown`] listing the valid names,
/// [`TracepointError::Ambiguous`] for a bare name several systems have,
/// [`TracepointError::Duplicate`] when two tracepoints have the name.
///
/// ```
/// use ringtrace_tracepoint::{registry, tracepoint, TracepointError};
/// tracepoint! {
///     system = docs;
///     /// A doc example's tracepoint.
///     pub fn found_example(value: u32) = "value={}";
/// }
/// assert_eq!(registry::find("docs:found_example")?.event, "found_example");
/// assert_eq!(registry::find("found_example")?.system, "docs");
/// assert_eq!(registry::find("preemptirq:irq_disable")?.event, "irq_disable");
/// let err = registry::find("docs:lost_example").unwrap_err();
/// assert!(err.to_string().contains("docs:found_example"), "{err}");
/// # Ok::<(), TracepointError>(())
/// ```
pub fn find(name: &str) -> Result<&'static Tracepoint, TracepointError> {
    let found = named(name)?;
    let duplicate = problems_of(&found)
        .into_iter()
        .find(|p| matches!(p, TracepointError::Duplicate { .. }));
    if let Some(duplicate) = duplicate {
        return Err(duplicate);
    }
    found.first().copied().ok_or_else(|| unknown(name))
}

/// Every tracepoint `pattern` matches (see the registry's rules), or the
/// error saying why none can be chosen: no match, or a bare name several
/// systems have. Duplicates are all returned; the caller checks.
pub(super) fn matching(pattern: &str) -> Result<Vec<&'static Tracepoint>, TracepointError> {
    if !pattern.contains('*') {
        return named(pattern);
    }
    let full = pattern.contains(':');
    let found: Vec<&'static Tracepoint> = all()
        .into_iter()
        .filter(|tp| glob(pattern, if full { tp.name } else { tp.event }))
        .collect();
    if found.is_empty() {
        return Err(unknown(pattern));
    }
    Ok(found)
}

/// The tracepoints with full name `name`, or with event name `name` when
/// it has no `:` (all of one system's; Ambiguous if several systems').
fn named(name: &str) -> Result<Vec<&'static Tracepoint>, TracepointError> {
    let full = name.contains(':');
    let found: Vec<&'static Tracepoint> = all()
        .into_iter()
        .filter(|tp| name == if full { tp.name } else { tp.event })
        .collect();
    let Some(first) = found.first() else {
        return Err(unknown(name));
    };
    if found.iter().any(|tp| tp.name != first.name) {
        let mut candidates: Vec<&'static str> = found.iter().map(|tp| tp.name).collect();
        candidates.dedup();
        return Err(TracepointError::Ambiguous {
            given: name.to_owned(),
            candidates,
        });
    }
    Ok(found)
}

/// The error for `given` matching nothing, with every valid name.
fn unknown(given: &str) -> TracepointError {
    let mut valid: Vec<&'static str> = all().iter().map(|tp| tp.name).collect();
    valid.dedup();
    TracepointError::Unknown {
        given: given.to_owned(),
        valid: valid.join(", "),
    }
}

/// Whether `text` matches `pattern`, in which `*` stands for any run of
/// characters (none included) and every other character for itself.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(head) = parts.next() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(head) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((tail, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*`: the head was all of it
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= tail.len() && rest.ends_with(tail)
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn a_star_stands_for_any_run_of_characters_and_nothing_else_does() {
        assert!(glob("tp_*", "tp_a"));
        assert!(glob("tp_*", "tp_"));
        assert!(!glob("tp_*", "tq_a"));
        assert!(glob("*", ""));
        assert!(glob("app:*", "app:request_done"));
        assert!(!glob("app:*", "apps:request_done"));
        assert!(glob("*:irq_disable", "preemptirq:irq_disable"));
        assert!(!glob("*:irq_disable", "preemptirq:irq_disable2"));
        assert!(glob("pre*:irq_*", "preemptirq:irq_enable"));
        assert!(glob("a*a", "aa"));
        assert!(!glob("a*a", "a"));
        assert!(glob("a**b", "ab"));
        assert!(glob("exact", "exact"));
        assert!(!glob("exact", "exactly"));
    }
}
