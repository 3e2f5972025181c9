//! Events lost, with the reason: what a loss entry of a chunk records.

use crate::error::ParseLossCauseError;
use std::fmt;
use std::str::FromStr;

/// Why events were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LossCause {
    /// A write was refused: the ring was full (discard mode), or the page
    /// to reuse was still being written (the ring's `missed`).
    Refused,
    /// Overwrite mode: unread events were written over (the ring's
    /// `overrun`).
    Overwritten,
    /// A blocking writer waited its timeout and gave up.
    BlockedTooLong,
    /// A writer died inside a reservation, or a dead process left pages
    /// that could not be read.
    WriterDied,
}

impl LossCause {
    /// Every cause, in the order of their codes.
    pub const ALL: [LossCause; 4] = [
        LossCause::Refused,
        LossCause::Overwritten,
        LossCause::BlockedTooLong,
        LossCause::WriterDied,
    ];

    /// The cause's code in a chunk (1 to 4).
    pub(crate) fn code(self) -> u32 {
        match self {
            LossCause::Refused => 1,
            LossCause::Overwritten => 2,
            LossCause::BlockedTooLong => 3,
            LossCause::WriterDied => 4,
        }
    }

    /// The cause of a code, if it is one.
    pub(crate) fn from_code(code: u32) -> Option<LossCause> {
        LossCause::ALL.into_iter().find(|c| c.code() == code)
    }

    /// Its place in [`LossCause::ALL`] (and in the counters).
    pub(crate) fn index(self) -> usize {
        self.code() as usize - 1
    }

    /// The name [`Display`](fmt::Display) prints and
    /// [`FromStr`] takes: `refused`, `overwritten`, `blocked too long`,
    /// `writer died`.
    pub fn name(self) -> &'static str {
        match self {
            LossCause::Refused => "refused",
            LossCause::Overwritten => "overwritten",
            LossCause::BlockedTooLong => "blocked too long",
            LossCause::WriterDied => "writer died",
        }
    }
}

impl fmt::Display for LossCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LossCause {
    type Err = ParseLossCauseError;

    /// The name as printed, any case, with spaces, `-` or `_` between the
    /// words.
    ///
    /// ```
    /// use ringtrace_session::LossCause;
    /// assert_eq!("blocked-too-long".parse::<LossCause>()?, LossCause::BlockedTooLong);
    /// assert_eq!(LossCause::WriterDied.to_string(), "writer died");
    /// assert!("late".parse::<LossCause>().is_err());
    /// # Ok::<(), ringtrace_session::ParseLossCauseError>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let words = s.trim().to_ascii_lowercase().replace(['-', '_'], " ");
        LossCause::ALL
            .into_iter()
            .find(|c| c.name() == words)
            .ok_or_else(|| ParseLossCauseError {
                given: s.to_owned(),
            })
    }
}

/// A loss entry as the reader returns it: where and when, how many, why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Loss {
    /// The process's pid.
    pub pid: u32,
    /// The process's start time (`/proc/PID/stat` field 22).
    pub start: u64,
    /// The CPU buffer.
    pub cpu: usize,
    /// When, in the process's clock ticks.
    pub ts: u64,
    /// Events lost.
    pub count: u64,
    /// Why.
    pub cause: LossCause,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_reads_back_from_its_name_and_its_code() {
        for c in LossCause::ALL {
            assert_eq!(c.to_string().parse::<LossCause>().unwrap(), c);
            assert_eq!(LossCause::from_code(c.code()), Some(c));
            assert_eq!(LossCause::ALL[c.index()], c);
        }
        assert_eq!(LossCause::from_code(0), None);
        let e = "full".parse::<LossCause>().unwrap_err().to_string();
        assert!(e.contains("full") && e.contains("writer died"), "{e}");
    }
}
