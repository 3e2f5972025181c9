//! Names as a trace-cmd file can hold them. The systems, events and
//! fields of its format files are C identifiers (`[A-Za-z_][A-Za-z0-9_]*`):
//! libtraceevent's format parser reads a name as one token of those
//! characters, so `ham mer` is two, `a;b` ends a field early and a name
//! with `"` starts a string. ringtrace's names come from the trace's
//! metadata and can hold anything; each is made an identifier the way
//! the CTF exporter does its fields, and the exporter says which were
//! changed.

/// The name given to an empty one.
pub const PLACEHOLDER: &str = "unnamed";

/// `name` as a C identifier: every character but ASCII letters, digits
/// and `_` made `_`, `_` before a leading digit, [`PLACEHOLDER`] when it
/// is empty. A name that is one already ([`is_identifier`]) is kept as it
/// is.
pub fn identifier(name: &str) -> String {
    if name.is_empty() {
        return PLACEHOLDER.to_owned();
    }
    let chars = crate::text::c_identifier_chars(name);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{chars}")
    } else {
        chars
    }
}

/// `base` when `taken` says it is free, else the first free of `base_2`,
/// `base_3`...
pub fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|name| !taken(name))
        .unwrap_or_else(|| base.to_owned())
}

/// Whether `name` is a C identifier, as [`identifier`] makes them.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_c_identifiers_and_valid_ones_stay_as_they_are() {
        for (name, want) in [
            ("hammer", "hammer"),
            ("_x9", "_x9"),
            ("ham mer", "ham_mer"),
            ("pro duc;er\n", "pro_duc_er_"),
            ("a\"b", "a_b"),
            ("é", "_"),
            ("9lives", "_9lives"),
            ("", PLACEHOLDER),
        ] {
            let got = identifier(name);
            assert_eq!(got, want, "{name:?}");
            assert!(is_identifier(&got), "{got:?}");
        }
    }

    #[test]
    fn a_taken_name_gets_the_first_free_suffix() {
        let taken = ["a", "a_2", "b"];
        let is_taken = |n: &str| taken.contains(&n);
        assert_eq!(unique("a", is_taken), "a_3");
        assert_eq!(unique("b", is_taken), "b_2");
        assert_eq!(unique("c", is_taken), "c");
    }
}
