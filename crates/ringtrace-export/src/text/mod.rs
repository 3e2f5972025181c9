//! Text for people from a trace: strings escaped so that printing them is
//! safe ([`escape`], [`escape_bytes`], [`escape_json`]), times
//! ([`utc_time`], [`seconds`]), bytes as [`hex`], and a recovered file's
//! writer and clock in words ([`writer_words`], [`clock_words`]). What the
//! dump and the exporters write with, and what a command that prints a
//! trace (`ringtrace dump`, `recover`) needs beside them.

mod escape;
mod time;
mod words;

pub use escape::{escape, escape_bytes, escape_json, escape_message};
pub use time::{seconds, utc_time};
pub use words::{clock_words, comm, exit_time_words, writer_name, writer_words};

/// `name` with every character but ASCII letters, digits and `_` made
/// `_`: the characters of a C identifier, which the trace-cmd and CTF
/// exports' names must be.
pub(crate) fn c_identifier_chars(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Bytes as lowercase hex, two digits each.
///
/// ```
/// assert_eq!(ringtrace_export::text::hex(&[0, 0xab, 7]), "00ab07");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
