//! Clock names: `SOURCE[@PROTECTION]`, parsed into a [`ClockSpec`] and built
//! into an [`AnyClock`].

use crate::source::{Global, Source, SourceName};
use crate::{ClockError, Protected, Protection};
use std::fmt;
use std::str::FromStr;

/// A clock chosen at run time: any source under any protection.
pub type AnyClock = Protected<Source>;

impl AnyClock {
    /// A user-defined clock, read with no protection (`@raw`): what a
    /// clock built from a name carries, so that a ring, a tracer or a
    /// command that takes an [`AnyClock`] takes the program's own clock
    /// too. See [`CustomClock`](crate::CustomClock) for an example.
    pub fn custom(clock: impl crate::Clock + 'static) -> AnyClock {
        Protected::new(Source::custom(clock), Protection::Raw)
    }

    /// A user-defined clock whose every read runs inside `protection`,
    /// as `tsc@preempt` runs `tsc`; its name gains the `@protection`.
    pub fn custom_protected(
        clock: impl crate::Clock + 'static,
        protection: Protection,
    ) -> AnyClock {
        Protected::new(Source::custom(clock), protection)
    }
}

/// A parsed clock name.
///
/// The grammar is `SOURCE` or `SOURCE@PROTECTION`, where `SOURCE` is a base
/// source name, `global` (which clamps `local`) or `global:BASE`, and a bare
/// source means `@raw`.
///
/// ```
/// use ringtrace_clock::{Clock, ClockSpec, Protection, SourceName};
/// let spec: ClockSpec = "global:mono@irq-soft".parse().unwrap();
/// assert_eq!(spec.source, SourceName::Mono);
/// assert!(spec.global);
/// assert_eq!(spec.protection, Protection::IrqSoft);
/// assert_eq!(spec.to_string(), "global:mono@irq-soft");
///
/// let clock = spec.build().unwrap();
/// assert_eq!(clock.info().name, "global:mono@irq-soft");
///
/// let err = "tsc@irqs".parse::<ClockSpec>().unwrap_err().to_string();
/// assert!(err.contains("irq-hard"), "{err}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClockSpec {
    /// The base source.
    pub source: SourceName,
    /// Whether the source is clamped to a process-wide maximum.
    pub global: bool,
    /// What each read runs inside.
    pub protection: Protection,
}

impl ClockSpec {
    /// Every selectable source name, for listings and error messages.
    pub fn source_names() -> Vec<String> {
        let mut names: Vec<String> = SourceName::ALL
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        names.push("global".to_owned());
        names.push("global:SOURCE".to_owned());
        names
    }

    /// Every source (with `global`) under every protection, in listing order.
    pub fn all() -> Vec<ClockSpec> {
        let sources = SourceName::ALL
            .iter()
            .map(|&source| (source, false))
            .chain(std::iter::once((SourceName::Local, true)));
        sources
            .flat_map(|(source, global)| {
                Protection::ALL
                    .into_iter()
                    .map(move |protection| ClockSpec {
                        source,
                        global,
                        protection,
                    })
            })
            .collect()
    }

    /// The source part of the name: `tsc`, `global`, `global:mono`.
    pub fn source_label(&self) -> String {
        match (self.global, self.source) {
            (false, s) => s.name().to_owned(),
            (true, SourceName::Local) => "global".to_owned(),
            (true, s) => format!("global:{s}"),
        }
    }

    /// Builds the clock, or says why it cannot work here.
    pub fn build(&self) -> Result<AnyClock, ClockError> {
        let base = self.source.build()?;
        let source = if self.global {
            Source::Global(Global::new(base))
        } else {
            Source::Base(base)
        };
        Ok(Protected::new(source, self.protection))
    }

    fn parse_source(name: &str, whole: &str) -> Result<(SourceName, bool), ClockError> {
        let (global, base) = match name.strip_prefix("global") {
            Some("") => return Ok((SourceName::Local, true)),
            Some(rest) => match rest.strip_prefix(':') {
                Some(base) => (true, base),
                None => (false, name),
            },
            None => (false, name),
        };
        if global && base.is_empty() {
            return Err(ClockError::Malformed {
                given: whole.to_owned(),
                reason: "`global:` must name the source to clamp",
            });
        }
        if global && (base == "global" || base.starts_with("global:")) {
            return Err(ClockError::Malformed {
                given: whole.to_owned(),
                reason: "`global:` takes a base source; `global` cannot clamp itself",
            });
        }
        SourceName::ALL
            .into_iter()
            .find(|s| s.name() == base)
            .map(|s| (s, global))
            .ok_or_else(|| ClockError::UnknownSource {
                given: base.to_owned(),
                valid: ClockSpec::source_names().join(", "),
            })
    }
}

impl FromStr for ClockSpec {
    type Err = ClockError;

    fn from_str(name: &str) -> Result<ClockSpec, ClockError> {
        let malformed = |reason| ClockError::Malformed {
            given: name.to_owned(),
            reason,
        };
        if name.trim().is_empty() {
            return Err(malformed("the name is empty"));
        }
        let mut parts = name.split('@');
        let source = parts.next().unwrap_or_default();
        let protection = parts.next();
        if parts.next().is_some() {
            return Err(malformed("it has more than one `@`"));
        }
        if source.is_empty() {
            return Err(malformed("the source before `@` is missing"));
        }
        let (source, global) = ClockSpec::parse_source(source, name)?;
        let protection = match protection {
            None => Protection::Raw,
            Some(p) => Protection::parse(p)?,
        };
        Ok(ClockSpec {
            source,
            global,
            protection,
        })
    }
}

impl fmt::Display for ClockSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source_label())?;
        if self.protection != Protection::Raw {
            write!(f, "@{}", self.protection)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_source_means_raw_protection() {
        let spec: ClockSpec = "mono".parse().unwrap();
        assert_eq!(spec.protection, Protection::Raw);
        assert!(!spec.global);
    }

    #[test]
    fn every_listed_spec_round_trips_through_its_name() {
        for spec in ClockSpec::all() {
            assert_eq!(spec.to_string().parse::<ClockSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn unknown_source_error_lists_valid_sources() {
        let err = "rdtsc@raw".parse::<ClockSpec>().unwrap_err().to_string();
        assert!(err.contains("`rdtsc`"), "{err}");
        for name in [
            "tsc",
            "tsc-ordered",
            "cntvct",
            "mono-raw",
            "global:SOURCE",
            "local",
        ] {
            assert!(err.contains(name), "{err} lacks {name}");
        }
    }

    #[test]
    fn malformed_names_say_what_is_wrong() {
        for (name, says) in [
            ("", "empty"),
            ("@raw", "missing"),
            ("tsc@raw@raw", "more than one"),
            ("global:", "must name"),
            ("global:global", "cannot clamp itself"),
            ("global:global:tsc@raw", "cannot clamp itself"),
        ] {
            let err = name.parse::<ClockSpec>().unwrap_err().to_string();
            assert!(err.contains(says), "{name:?}: {err}");
        }
    }

    #[test]
    fn globalish_prefix_is_not_global() {
        let err = "globalx".parse::<ClockSpec>().unwrap_err();
        assert!(matches!(err, ClockError::UnknownSource { .. }), "{err}");
    }
}
