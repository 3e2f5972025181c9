//! Level and target filtering in `RUST_LOG` syntax, decided as
//! tracing-subscriber's `EnvFilter` decides it for directives without
//! span or field parts.
//!
//! A spec is directives separated by commas, each one of:
//!
//! | directive | means |
//! |---|---|
//! | `LEVEL` | callsites no target directive matches: up to `LEVEL` |
//! | `TARGET=LEVEL` | callsites whose target starts with `TARGET`: up to `LEVEL` |
//! | `TARGET` or `TARGET=` | the same up to `trace` |
//!
//! `LEVEL` is `off`, `error`, `warn`, `info`, `debug` or `trace` (any
//! case), or `0` to `5` in that order. The longest matching target
//! decides; of two directives with the same target the later wins; a
//! callsite no directive matches is off.

use std::str::FromStr;
use thiserror::Error;
use tracing_core::{LevelFilter, Metadata};

/// A filter spec that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("filter directive `{}` is not valid: {why}", .directive.escape_debug())]
#[non_exhaustive]
pub struct FilterError {
    /// The directive at fault (the whole spec when it holds none).
    pub directive: String,
    /// What is wrong with it, and what is valid.
    pub why: &'static str,
}

const LEVELS: &str = "a level is off, error, warn, info, debug, trace (any case) or 0 to 5";

/// Parsed directives (see the module's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetFilter {
    /// Target directives, longest target first; no two share a target.
    targeted: Vec<(String, LevelFilter)>,
    /// The level for callsites no target matches (`OFF` if none given).
    default: LevelFilter,
    /// The most verbose level any directive enables.
    max: LevelFilter,
}

impl TargetFilter {
    /// A filter that enables every callsite.
    pub(crate) fn everything() -> TargetFilter {
        TargetFilter {
            targeted: Vec::new(),
            default: LevelFilter::TRACE,
            max: LevelFilter::TRACE,
        }
    }

    /// Whether `meta`'s callsite is enabled.
    pub(crate) fn enabled(&self, meta: &Metadata<'_>) -> bool {
        let target = meta.target();
        let level = self
            .targeted
            .iter()
            .find(|(t, _)| target.starts_with(t.as_str()))
            .map_or(self.default, |(_, level)| *level);
        *meta.level() <= level
    }

    /// The most verbose level enabled anywhere.
    pub(crate) fn max_level(&self) -> LevelFilter {
        self.max
    }
}

impl FromStr for TargetFilter {
    type Err = FilterError;

    fn from_str(spec: &str) -> Result<TargetFilter, FilterError> {
        let mut default = None;
        let mut targeted: Vec<(String, LevelFilter)> = Vec::new();
        for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let bad = |why| FilterError {
                directive: directive.to_owned(),
                why,
            };
            if directive.contains(['[', ']', '{', '}']) {
                return Err(bad("span and field filters are not supported here; \
                     use RingLayer behind tracing-subscriber's EnvFilter for them"));
            }
            let (target, level) = match directive.split_once('=') {
                Some((target, "")) => (Some(target), LevelFilter::TRACE),
                Some((target, level)) => (
                    Some(target),
                    LevelFilter::from_str(level).map_err(|_| bad(LEVELS))?,
                ),
                None => match LevelFilter::from_str(directive) {
                    Ok(level) => (None, level),
                    Err(_) => (Some(directive), LevelFilter::TRACE),
                },
            };
            match target {
                None => default = Some(level),
                Some(target) => {
                    let valid_start = target
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || "-:_".contains(c));
                    if !valid_start || target.contains('=') {
                        return Err(bad(
                            "a target starts with a letter, digit, `-`, `:` or `_`, \
                             and is followed by `=LEVEL` at most once",
                        ));
                    }
                    targeted.retain(|(t, _)| t != target);
                    targeted.push((target.to_owned(), level));
                }
            }
        }
        if default.is_none() && targeted.is_empty() {
            return Err(FilterError {
                directive: spec.to_owned(),
                why: "it holds no directive; give LEVEL or TARGET=LEVEL, separated by commas",
            });
        }
        // Stable: among equal lengths the targets differ, and only one
        // of them can be a prefix of a given target.
        targeted.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        let default = default.unwrap_or(LevelFilter::OFF);
        let max = targeted.iter().map(|(_, l)| *l).fold(default, Ord::max);
        Ok(TargetFilter {
            targeted,
            default,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_directive_for_the_same_target_wins() {
        let f: TargetFilter = "a=info,a=trace".parse().unwrap();
        assert_eq!(f.targeted, vec![("a".to_owned(), LevelFilter::TRACE)]);
    }

    #[test]
    fn longest_target_first_and_max_level_over_all() {
        let f: TargetFilter = "warn,a=error,a::b=debug".parse().unwrap();
        assert_eq!(f.targeted[0].0, "a::b");
        assert_eq!(f.max_level(), LevelFilter::DEBUG);
        assert_eq!(f.default, LevelFilter::WARN);
    }

    #[test]
    fn bad_directives_name_themselves_and_what_is_valid() {
        for (spec, needle) in [
            ("a=loud", "a level is"),
            ("a[span]=info", "span and field filters"),
            ("=info", "a target starts"),
            ("a=b=info", "a level is"),
            (" , ", "no directive"),
        ] {
            let err = spec.parse::<TargetFilter>().unwrap_err();
            assert!(err.to_string().contains(needle), "{spec}: {err}");
        }
    }
}
