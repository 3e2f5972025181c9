//! Tail sampling: which span trees to keep, decided over each whole tree
//! after it was recorded. A tree is kept when any rule keeps it; with no
//! rule, every tree is kept.

use super::SpanTree;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// One rule of [`KeepRules`], as `--keep` spells it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KeepRule {
    /// `error`: trees with a span that failed
    /// ([`SpanData::is_error`](super::SpanData::is_error)).
    Error,
    /// `slower:DURATION` (`250ms`, `1.5s`, `80us`, `500ns`): trees with a
    /// span that lasted longer.
    SlowerThan {
        /// The threshold, ns.
        ns: u64,
    },
    /// `name:NAME`: trees with a span of that name.
    Name(String),
    /// `fraction:F` (0 to 1): that share of the trees no other rule kept,
    /// chosen by trace id, so that every service choosing by the same
    /// fraction keeps the same distributed traces.
    Fraction(f64),
}

/// Why a `--keep` rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad --keep rule `{given}`: {why}; valid rules: error, slower:DURATION (e.g. slower:250ms; units ns, us, ms, s), name:SPAN_NAME, fraction:F (0 to 1)")]
pub struct KeepRuleError {
    given: String,
    why: String,
}

/// Parses `250ms`, `1.5s`, `80us`, `500ns` as ns.
fn duration_ns(s: &str) -> Result<u64, String> {
    if s.starts_with('-') {
        return Err(format!("duration `{s}` is negative"));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration `{s}` has no unit"))?;
    let (number, unit) = s.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("unknown unit `{unit}` in `{s}`")),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{number}` is not a number"))?;
    let ns = value * scale;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return Err(format!("duration `{s}` is out of range"));
    }
    Ok(ns.round() as u64)
}

impl FromStr for KeepRule {
    type Err = KeepRuleError;

    /// ```
    /// use ringtrace_export::spans::KeepRule;
    /// assert_eq!("slower:250ms".parse::<KeepRule>()?, KeepRule::SlowerThan { ns: 250_000_000 });
    /// assert_eq!("error".parse::<KeepRule>()?, KeepRule::Error);
    /// assert!("fraction:2".parse::<KeepRule>().is_err());
    /// # Ok::<(), ringtrace_export::spans::KeepRuleError>(())
    /// ```
    fn from_str(s: &str) -> Result<KeepRule, KeepRuleError> {
        let fail = |why: String| KeepRuleError {
            given: s.to_owned(),
            why,
        };
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        match (kind, arg) {
            ("error", None) => Ok(KeepRule::Error),
            ("slower", Some(d)) => Ok(KeepRule::SlowerThan {
                ns: duration_ns(d).map_err(fail)?,
            }),
            ("name", Some(n)) if !n.is_empty() => Ok(KeepRule::Name(n.to_owned())),
            ("fraction", Some(f)) => {
                let v: f64 = f
                    .parse()
                    .map_err(|_| fail(format!("`{f}` is not a number")))?;
                if !(0.0..=1.0).contains(&v) {
                    return Err(fail(format!("fraction {f} is not between 0 and 1")));
                }
                Ok(KeepRule::Fraction(v))
            }
            ("error", Some(_)) => Err(fail("`error` takes no value".into())),
            ("slower" | "name" | "fraction", _) => Err(fail(format!("`{kind}` needs a value"))),
            _ => Err(fail(format!("unknown rule `{kind}`"))),
        }
    }
}

impl fmt::Display for KeepRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepRule::Error => f.write_str("error"),
            KeepRule::SlowerThan { ns } => write!(f, "slower:{ns}ns"),
            KeepRule::Name(n) => write!(f, "name:{n}"),
            KeepRule::Fraction(v) => write!(f, "fraction:{v}"),
        }
    }
}

/// What [`KeepRules::decide`] said of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeepDecision {
    /// Kept, by the rule at this place (the first that matched), or by
    /// there being no rule (`None`).
    Kept(Option<usize>),
    /// Dropped: no rule kept it.
    Dropped,
}

impl KeepDecision {
    /// Whether the tree is kept.
    pub fn is_kept(self) -> bool {
        matches!(self, KeepDecision::Kept(_))
    }
}

/// How many trees and spans each decision took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeepStats {
    /// Trees kept, and their spans.
    pub kept_trees: u64,
    /// Spans of the trees kept.
    pub kept_spans: u64,
    /// Trees dropped.
    pub dropped_trees: u64,
    /// Spans of the trees dropped.
    pub dropped_spans: u64,
    /// Trees kept by each rule (by the first that matched), in the rules'
    /// order.
    pub by_rule: Vec<u64>,
}

/// The tail-sampling rules of an export: a tree is kept when any rule
/// keeps it, every tree when there is none.
///
/// ```
/// use ringtrace_export::spans::KeepRules;
/// let rules = KeepRules::parse(["error", "slower:100ms", "fraction:0.01"])?;
/// assert_eq!(rules.rules().len(), 3);
/// assert!(KeepRules::parse(["slower:fast"]).unwrap_err().to_string().contains("valid rules"));
/// # Ok::<(), ringtrace_export::spans::KeepRuleError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeepRules {
    rules: Vec<KeepRule>,
    stats: KeepStats,
}

impl KeepRules {
    /// Rules from their `--keep` spellings.
    pub fn parse<S: AsRef<str>>(
        rules: impl IntoIterator<Item = S>,
    ) -> Result<KeepRules, KeepRuleError> {
        let rules = rules
            .into_iter()
            .map(|r| r.as_ref().parse())
            .collect::<Result<Vec<KeepRule>, _>>()?;
        Ok(KeepRules::new(rules))
    }

    /// These rules.
    pub fn new(rules: Vec<KeepRule>) -> KeepRules {
        let by_rule = vec![0; rules.len()];
        KeepRules {
            rules,
            stats: KeepStats {
                by_rule,
                ..KeepStats::default()
            },
        }
    }

    /// The rules.
    pub fn rules(&self) -> &[KeepRule] {
        &self.rules
    }

    /// Whether every tree is kept (no rule).
    pub fn keeps_all(&self) -> bool {
        self.rules.is_empty()
    }

    /// Decides `tree`, whose trace id is `trace_id` (what a fraction
    /// chooses by), and counts the decision.
    pub fn decide(&mut self, tree: &SpanTree, trace_id: &[u8; 16]) -> KeepDecision {
        let decision = self.decision(tree, trace_id);
        let spans = tree.spans.len() as u64;
        match decision {
            KeepDecision::Kept(rule) => {
                self.stats.kept_trees += 1;
                self.stats.kept_spans += spans;
                if let Some(i) = rule {
                    self.stats.by_rule[i] += 1;
                }
            }
            KeepDecision::Dropped => {
                self.stats.dropped_trees += 1;
                self.stats.dropped_spans += spans;
            }
        }
        decision
    }

    fn decision(&self, tree: &SpanTree, trace_id: &[u8; 16]) -> KeepDecision {
        if self.rules.is_empty() {
            return KeepDecision::Kept(None);
        }
        let fixed = self.rules.iter().position(|r| match r {
            KeepRule::Error => tree.has_error(),
            KeepRule::SlowerThan { ns } => tree.longest_ns() > *ns,
            KeepRule::Name(n) => tree.spans.iter().any(|s| &s.name == n),
            KeepRule::Fraction(_) => false,
        });
        if let Some(i) = fixed {
            return KeepDecision::Kept(Some(i));
        }
        // The trace id's last 8 bytes as a share of 2^64: random for ids
        // made at random (W3C asks for the right-most 7 bytes at least).
        let mut low = [0u8; 8];
        low.copy_from_slice(&trace_id[8..]);
        let share = u64::from_be_bytes(low) as f64 / 18_446_744_073_709_551_616.0;
        let fraction = self.rules.iter().position(|r| match r {
            KeepRule::Fraction(f) => share < *f,
            _ => false,
        });
        match fraction {
            Some(i) => KeepDecision::Kept(Some(i)),
            None => KeepDecision::Dropped,
        }
    }

    /// What was decided so far.
    pub fn stats(&self) -> &KeepStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_unit_or_say_why_not() {
        assert_eq!(duration_ns("250ms"), Ok(250_000_000));
        assert_eq!(duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(duration_ns("80us"), Ok(80_000));
        assert_eq!(duration_ns("7ns"), Ok(7));
        assert!(duration_ns("250").unwrap_err().contains("no unit"));
        assert!(duration_ns("3h").unwrap_err().contains("unknown unit"));
        assert!(duration_ns("-5ms").unwrap_err().contains("negative"));
        assert!(duration_ns("1.2.3s").unwrap_err().contains("not a number"));
        assert!(duration_ns("99999999999999999999s")
            .unwrap_err()
            .contains("out of range"));
    }

    #[test]
    fn every_bad_rule_names_the_valid_ones() {
        for bad in [
            "",
            "errors",
            "error:yes",
            "slower",
            "slower:",
            "name:",
            "fraction:-0.1",
            "fraction:1.5",
            "fraction:NaN",
        ] {
            let e = bad.parse::<KeepRule>().unwrap_err().to_string();
            assert!(e.contains("valid rules: error, slower"), "{bad}: {e}");
        }
        assert_eq!(
            "name:db".parse::<KeepRule>().unwrap(),
            KeepRule::Name("db".into())
        );
        assert_eq!(
            "fraction:0".parse::<KeepRule>().unwrap(),
            KeepRule::Fraction(0.0)
        );
    }
}
