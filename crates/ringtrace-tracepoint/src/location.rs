//! Source locations for the preemptirq tracepoints' `ip` and `parent`.

use crate::field::{FieldKind, TraceField};
use std::fmt;
use std::panic::Location;

/// A source location built from `file!()`, `line!()` and `column!()` at a
/// macro's call site, so that a tracepoint can record where irqs or
/// preemption were disabled (the kernel's `CALLER_ADDR0`) next to the
/// `#[track_caller]` location one level up (`CALLER_ADDR1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    /// The file.
    pub file: &'static str,
    /// The line.
    pub line: u32,
    /// The column.
    pub column: u32,
}

impl SourceLocation {
    /// The location of a `std::panic::Location`.
    pub fn from_location(l: &'static Location<'static>) -> Self {
        SourceLocation {
            file: l.file(),
            line: l.line(),
            column: l.column(),
        }
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

impl TraceField for SourceLocation {
    const KIND: FieldKind = FieldKind::Location;
    fn encoded_len(&self) -> usize {
        self.file.encoded_len() + 8
    }
    fn encode(&self, out: &mut dyn FnMut(&[u8])) {
        self.file.encode(out);
        out(&self.line.to_le_bytes());
        out(&self.column.to_le_bytes());
    }
}

/// The [`SourceLocation`] of the macro call site.
#[macro_export]
macro_rules! here {
    () => {
        $crate::SourceLocation {
            file: ::core::file!(),
            line: ::core::line!(),
            column: ::core::column!(),
        }
    };
}
