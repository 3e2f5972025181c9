//! The length a preemptirq section must exceed to be reported: a
//! duration written with its unit (`10us`, `1.5ms`), parsed exactly in
//! integers so that `0.3us` is 300 ns, not 299.

use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// A section threshold, ns: sections longer than it (strictly) are
/// reported ([`Analysis::long_sections`](super::Analysis::long_sections)).
/// 10 µs unless given.
///
/// ```
/// use ringtrace_export::analysis::Threshold;
/// assert_eq!("10us".parse::<Threshold>()?.ns(), 10_000);
/// assert_eq!("1.5ms".parse::<Threshold>()?.ns(), 1_500_000);
/// assert_eq!(Threshold::default().to_string(), "10us");
/// let err = "10".parse::<Threshold>().unwrap_err().to_string();
/// assert!(err.contains("valid: a number and a unit"), "{err}");
/// # Ok::<(), ringtrace_export::analysis::ThresholdError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Threshold {
    ns: u64,
}

impl Threshold {
    /// A threshold of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Threshold {
        Threshold { ns }
    }

    /// Its length, ns.
    pub const fn ns(self) -> u64 {
        self.ns
    }
}

impl Default for Threshold {
    /// 10 µs.
    fn default() -> Threshold {
        Threshold::from_ns(10_000)
    }
}

/// Why a threshold does not parse: the text given and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad duration `{given}`: {why}; valid: a number and a unit, ns, us, ms or s (e.g. 10us, 1.5ms, 250ns)")]
pub struct ThresholdError {
    given: String,
    why: &'static str,
}

/// The units, with their length in ns.
const UNITS: [(&str, u64); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Threshold, ThresholdError> {
        let fail = |why| ThresholdError {
            given: text.to_owned(),
            why,
        };
        if text.starts_with('-') {
            return Err(fail("it is negative"));
        }
        let digits_end = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| fail("it has no unit"))?;
        let (number, unit) = text.split_at(digits_end);
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, scale)| *scale)
            .ok_or_else(|| fail("unknown unit"))?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(fail("it has no number"));
        }
        if fraction.contains('.') {
            return Err(fail("a number has one decimal point at most"));
        }
        let parse = |s: &str| -> Result<u64, ThresholdError> {
            if s.is_empty() {
                return Ok(0);
            }
            s.parse().map_err(|_| fail("the number is too large"))
        };
        let mut ns = parse(whole)?
            .checked_mul(scale)
            .ok_or_else(|| fail("the number is too large"))?;
        // The fraction's digits, each worth a tenth of the one before.
        let mut place = scale;
        for digit in fraction.bytes().map(|b| u64::from(b - b'0')) {
            if place < 10 {
                if digit != 0 {
                    return Err(fail("it is finer than 1 ns"));
                }
                continue;
            }
            place /= 10;
            ns = ns
                .checked_add(digit * place)
                .ok_or_else(|| fail("the number is too large"))?;
        }
        Ok(Threshold::from_ns(ns))
    }
}

impl fmt::Display for Threshold {
    /// In the largest unit that shows it whole: `10us`, `1500ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, scale) = [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)]
            .into_iter()
            .find(|(_, scale)| self.ns != 0 && self.ns % *scale == 0)
            .unwrap_or(("ns", 1));
        write!(f, "{}{name}", self.ns / scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(text: &str) -> Result<u64, String> {
        text.parse::<Threshold>()
            .map(Threshold::ns)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn durations_parse_exactly_in_every_unit() {
        assert_eq!(ns("10us"), Ok(10_000));
        assert_eq!(ns("10µs"), Ok(10_000));
        assert_eq!(ns("0.3us"), Ok(300));
        assert_eq!(ns(".5ms"), Ok(500_000));
        assert_eq!(ns("2s"), Ok(2_000_000_000));
        assert_eq!(ns("1.000000001s"), Ok(1_000_000_001));
        assert_eq!(ns("0ns"), Ok(0));
        assert_eq!(ns("7.0ns"), Ok(7));
    }

    #[test]
    fn bad_durations_say_why_and_what_is_valid() {
        for (bad, why) in [
            ("10", "no unit"),
            ("us", "no number"),
            ("10 us", "unknown unit"),
            ("10min", "unknown unit"),
            ("1.5ns", "finer than 1 ns"),
            ("1.2.3us", "one decimal point"),
            ("99999999999999999999s", "too large"),
            ("-5us", "negative"),
        ] {
            let e = ns(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
            assert!(e.contains("valid: a number and a unit"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_threshold_prints_in_a_unit_that_parses_back() {
        for n in [0, 1, 999, 1_000, 10_000, 1_500_000, 3_000_000_000] {
            let t = Threshold::from_ns(n);
            assert_eq!(t.to_string().parse::<Threshold>(), Ok(t), "{t}");
        }
        assert_eq!(Threshold::from_ns(1_500).to_string(), "1500ns");
    }
}
