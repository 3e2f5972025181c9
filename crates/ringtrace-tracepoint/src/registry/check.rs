//! The registry's consistency check: no two tracepoints with one full
//! name, no two names with one id, and no id among those reserved for
//! `tracing` records.

use super::{all, TracepointError};
use crate::tracepoint::Tracepoint;

/// Every problem among the registered tracepoints, in name order: a
/// [`TracepointError::Duplicate`] for each further tracepoint with a full
/// name already seen (naming the first one's location and its own), and a
/// [`TracepointError::IdCollision`] for each two different names with one
/// id, and a [`TracepointError::IdReserved`] for each name whose id is
/// among [`RESERVED_IDS`](crate::RESERVED_IDS). Empty for a correct
/// program.
pub fn problems() -> Vec<TracepointError> {
    problems_among(&all())
}

/// The first of [`problems`], or Ok when there is none.
///
/// ```
/// ringtrace_tracepoint::tracepoint! {
///     /// A doc example's tracepoint.
///     pub fn checked_example(value: u32) = "value={}";
/// }
/// ringtrace_tracepoint::registry::check()?;
/// # Ok::<(), ringtrace_tracepoint::TracepointError>(())
/// ```
pub fn check() -> Result<(), TracepointError> {
    match problems().into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// The former name of [`check`], which now also reports duplicate names.
#[deprecated(note = "use registry::check, which also reports duplicate names")]
pub fn check_ids() -> Result<(), TracepointError> {
    check()
}

/// The problems that involve `of`: a duplicate of its name or another name
/// with its id. What enabling, disabling or finding it refuses on.
pub(super) fn problems_of(of: &[&'static Tracepoint]) -> Vec<TracepointError> {
    problems()
        .into_iter()
        .filter(|p| match p {
            TracepointError::Duplicate { name, .. } => of.iter().any(|tp| tp.name == *name),
            TracepointError::IdCollision(a, b) => {
                of.iter().any(|tp| tp.name == *a || tp.name == *b)
            }
            TracepointError::IdReserved(name, _) => of.iter().any(|tp| tp.name == *name),
            _ => false,
        })
        .collect()
}

/// [`problems`] of `sorted` (as [`all`] sorts: by name, then location).
fn problems_among(sorted: &[&'static Tracepoint]) -> Vec<TracepointError> {
    let mut found = Vec::new();
    for (i, tp) in sorted.iter().enumerate() {
        let first = sorted[..i].iter().find(|seen| seen.name == tp.name);
        if let Some(first) = first {
            found.push(TracepointError::Duplicate {
                name: tp.name,
                first: first.declared_at,
                second: tp.declared_at,
            });
        }
    }
    let mut names: Vec<(u32, &'static str)> = sorted.iter().map(|tp| (tp.id, tp.name)).collect();
    names.sort_unstable();
    names.dedup();
    for pair in names.windows(2) {
        if pair[0].0 == pair[1].0 {
            found.push(TracepointError::IdCollision(pair[0].1, pair[1].1));
        }
    }
    for &(id, name) in &names {
        if crate::RESERVED_IDS.contains(&id) {
            found.push(TracepointError::IdReserved(name, id));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::SourceLocation;
    use crate::tracepoint::{KeyHandle, TracepointNames};

    const KEY: KeyHandle = KeyHandle {
        is_enabled: || false,
        set: |_| {},
    };

    fn named(
        system: &'static str,
        event: &'static str,
        name: &'static str,
        line: u32,
    ) -> &'static Tracepoint {
        let declared_at = SourceLocation {
            file: "t.rs",
            line,
            column: 1,
        };
        let names = TracepointNames {
            system,
            event,
            name,
            declared_at,
        };
        Box::leak(Box::new(Tracepoint::new(names, &[], "", KEY)))
    }

    fn leaked(system: &'static str, event: &'static str, line: u32) -> &'static Tracepoint {
        let name: &'static str = Box::leak(format!("{system}:{event}").into_boxed_str());
        named(system, event, name, line)
    }

    #[test]
    fn three_tracepoints_with_one_name_are_two_duplicates_of_the_first() {
        let a = leaked("s", "x", 1);
        let b = leaked("s", "x", 2);
        let c = leaked("s", "x", 3);
        let other = leaked("t", "x", 4);
        let found = problems_among(&[a, b, c, other]);
        let at = |line| SourceLocation {
            file: "t.rs",
            line,
            column: 1,
        };
        assert_eq!(
            found,
            vec![
                TracepointError::Duplicate {
                    name: "s:x",
                    first: at(1),
                    second: at(2)
                },
                TracepointError::Duplicate {
                    name: "s:x",
                    first: at(1),
                    second: at(3)
                },
            ]
        );
    }

    #[test]
    fn a_name_hashing_into_the_tracing_records_ids_is_refused() {
        // "app:rljvl" hashes to 0xfffffff8, found by search.
        assert_eq!(crate::fnv1a("app:rljvl"), 0xFFFF_FFF8);
        let bad = leaked("app", "rljvl", 1);
        let fine = leaked("app", "fine", 2);
        let found = problems_among(&[bad, fine]);
        assert_eq!(
            found,
            [TracepointError::IdReserved("app:rljvl", 0xFFFF_FFF8)]
        );
        assert!(found[0]
            .to_string()
            .contains("reserved for `tracing` records"));
    }

    #[test]
    fn two_names_with_one_id_are_a_collision_and_a_duplicate_is_not() {
        // "costarring" and "liquid" are a known FNV-1a 32-bit collision.
        assert_eq!(
            crate::fnv1a("costarring"),
            crate::fnv1a("liquid"),
            "the test's premise"
        );
        let a = named("", "costarring", "costarring", 1);
        let a_again = named("", "costarring", "costarring", 3);
        let b = named("", "liquid", "liquid", 2);
        let found = problems_among(&[a, a_again, b]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(matches!(found[0], TracepointError::Duplicate { .. }));
        assert_eq!(
            found[1],
            TracepointError::IdCollision("costarring", "liquid")
        );
    }
}
