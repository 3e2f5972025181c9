//! What one patch's measurement comes to: our figure, how it was measured
//! in one phrase, the rule that decides the verdict, and the verdict.
//!
//! Every verdict the report prints is produced by a rule written next to
//! it, so that a reader can check the verdict against the figures without
//! reading code: [`Finding::rule`] is printed in the patches table's legend.
//!
//! ```
//! use ringtrace_cli::finding::{Finding, Verdict};
//! let f = Finding {
//!     ours: "1.31 (p10 1.20, p90 1.40)".into(),
//!     method: "paired rounds of the same loop with and without the check".into(),
//!     rule: "reproduced when the ratio's p10 is above 1".into(),
//!     verdict: Verdict::Reproduced,
//! };
//! assert_eq!(f.verdict.text(), "reproduced");
//! ```

use serde::Serialize;

/// What a patch's finding came to here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "why", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Verdict {
    /// Our measurement shows what the patch claimed.
    Reproduced,
    /// Our measurement does not show it.
    NotReproduced,
    /// Neither: what was seen, in words with its numbers (a mechanism shown
    /// only in an amplified setting, a bound instead of a count).
    Seen(String),
    /// It cannot be measured here (or was not: a failure, a stop), and why.
    NotMeasurable(String),
}

impl Verdict {
    /// `Reproduced` when `ok`, else `NotReproduced`.
    pub fn from_bool(ok: bool) -> Verdict {
        if ok {
            Verdict::Reproduced
        } else {
            Verdict::NotReproduced
        }
    }

    /// The verdict as the table prints it.
    pub fn text(&self) -> String {
        match self {
            Verdict::Reproduced => "reproduced".to_owned(),
            Verdict::NotReproduced => "not reproduced".to_owned(),
            Verdict::Seen(what) => what.clone(),
            Verdict::NotMeasurable(why) => format!("not measurable here: {why}"),
        }
    }
}

/// One patch's measurement, as the patches table shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Our figures, with their spread or confidence interval.
    pub ours: String,
    /// How ours was measured, in one phrase.
    pub method: String,
    /// The rule that turned the figures into the verdict.
    pub rule: String,
    /// The verdict.
    pub verdict: Verdict,
}

impl Finding {
    /// A finding for a measurement that did not run (a stop, a failure).
    pub fn not_measured(method: &str, rule: &str, why: impl Into<String>) -> Finding {
        Finding {
            ours: String::new(),
            method: method.to_owned(),
            rule: rule.to_owned(),
            verdict: Verdict::NotMeasurable(why.into()),
        }
    }
}
