//! Strings from a trace, made safe to print. A trace is input from
//! whoever wrote it: a field, a name or a file's metadata can hold a
//! newline that breaks the dump's one line per event, an escape sequence
//! that a terminal would obey, or text that a bidi override reorders on
//! screen. Every text form (`ringtrace dump`, the text export, `recover`,
//! the report) shows such strings through [`escape`] or [`escape_bytes`].
//!
//! The rules, as Rust's `escape_debug` and `escape_ascii` write them:
//!
//! | in the string | shown as |
//! |---------------|----------|
//! | newline, tab, carriage return | `\n`, `\t`, `\r` |
//! | a backslash | `\\` |
//! | another C0 control (U+0000 to U+001F) or DEL (U+007F) | `\xNN` (ESC is `\x1b`) |
//! | a C1 control (U+0080 to U+009F) | `\u{NN}` (it is two bytes in UTF-8) |
//! | a bidi control: U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069 | `\u{NNNN}` |
//! | a line or paragraph separator, U+2028, U+2029 | `\u{NNNN}` |
//! | a byte that is not UTF-8 ([`escape_bytes`]) | `\xNN` |
//!
//! Anything else, printable Unicode included, is kept as it is. Because a
//! backslash is escaped too, the output reads back unambiguously: `\x1b`
//! in a dump was an ESC byte, `\\x1b` was the four characters.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `s` as text output shows it: control characters, bidi controls and
/// backslashes escaped (the module's table), everything else as it is.
/// Borrows when there is nothing to escape.
///
/// ```
/// use ringtrace_export::text::escape;
/// assert_eq!(escape("plain é"), "plain é");
/// assert_eq!(escape("a\nb\x1b[31m\\"), "a\\nb\\x1b[31m\\\\");
/// assert_eq!(escape("\u{85}\u{202e}"), "\\u{85}\\u{202e}");
/// ```
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    push_escaped(&mut out, s);
    Cow::Owned(out)
}

/// `bytes` as text output shows them: their UTF-8 as [`escape`] shows it,
/// and each byte that is not UTF-8 as `\xNN`.
///
/// ```
/// use ringtrace_export::text::escape_bytes;
/// assert_eq!(escape_bytes(b"ok"), "ok");
/// assert_eq!(escape_bytes(b"a\xff\xe2\x80b\n"), "a\\xff\\xe2\\x80b\\n");
/// ```
pub fn escape_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return escape(s);
    }
    let mut out = String::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        push_escaped(&mut out, chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

/// A message for people (an error naming a value, often already quoted
/// with `{:?}`): its control, bidi and separator characters escaped as
/// [`escape`] does, its backslashes kept as they are, so that an escape
/// the message already holds is not escaped twice. Not for output that
/// must read back unambiguously: that is [`escape`].
///
/// ```
/// use ringtrace_export::text::escape_message;
/// assert_eq!(escape_message(r#"bad name "a\nb""#), r#"bad name "a\nb""#);
/// assert_eq!(escape_message("raw \u{1b}[2J here"), r"raw \x1b[2J here");
/// ```
pub fn escape_message(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\\' && needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if c == '\\' {
            out.push(c);
        } else {
            push_escaped(&mut out, c.encode_utf8(&mut [0; 4]));
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) with the characters it leaves raw
/// that a terminal or an editor acts on (DEL, the C1 controls, the bidi
/// controls, the line and paragraph separators) written as `\uXXXX`: the
/// same JSON value, safe to print. JSON escapes the C0 controls itself.
/// Outside its strings JSON text is ASCII, so only strings change.
///
/// ```
/// use ringtrace_export::text::escape_json;
/// let json = serde_json::json!({ "s": "a\u{1b}\u{9b}2J\u{202e}" }).to_string();
/// assert_eq!(escape_json(&json), r#"{"s":"a\u001b\u009b2J\u202e"}"#);
/// let back: serde_json::Value = serde_json::from_str(&escape_json(&json))?;
/// assert_eq!(back.to_string(), json);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn escape_json(json: &str) -> Cow<'_, str> {
    // Not the C0 controls: JSON text holds none raw but the newlines and
    // tabs between its tokens, which must stay.
    let raw = |c: char| ('\u{7f}'..='\u{9f}').contains(&c) || is_bidi_or_separator(c);
    if !json.chars().any(raw) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw(c) {
            // Every such character is in the Basic Multilingual Plane.
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c == '\\' || c.is_control() || is_bidi_or_separator(c)
}

/// Characters that reorder or break text on screen without showing:
/// the bidi embeddings, overrides, isolates and marks, and the line and
/// paragraph separators.
fn is_bidi_or_separator(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || is_bidi_or_separator(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_char_below_256_is_shown_without_a_control() {
        for n in 0u32..256 {
            let c = char::from_u32(n).unwrap();
            let shown = escape(&c.to_string()).into_owned();
            assert!(
                shown.chars().all(|c| !c.is_control()),
                "{n:#x} shown as {shown:?}"
            );
            let expected = match c {
                '\n' => "\\n".to_owned(),
                '\t' => "\\t".to_owned(),
                '\r' => "\\r".to_owned(),
                '\\' => "\\\\".to_owned(),
                _ if n < 0x20 || n == 0x7f => format!("\\x{n:02x}"),
                _ if (0x80..0xa0).contains(&n) => format!("\\u{{{n:x}}}"),
                _ => c.to_string(),
            };
            assert_eq!(shown, expected, "{n:#x}");
        }
    }

    #[test]
    fn every_byte_that_is_not_utf8_is_shown_as_hex() {
        for b in 0x80u8..=0xff {
            assert_eq!(escape_bytes(&[b'a', b, b'z']), format!("a\\x{b:02x}z"));
        }
        // A cut sequence, then a valid one: only the cut bytes are hex.
        assert_eq!(escape_bytes("\u{e9}".as_bytes()), "\u{e9}");
        assert_eq!(
            escape_bytes(b"\xe2\x80\xc3\xa9\x00"),
            "\\xe2\\x80\u{e9}\\x00"
        );
    }

    #[test]
    fn json_keeps_its_value_and_its_layout() {
        let all: String = (0u32..256).filter_map(char::from_u32).collect();
        let value = serde_json::json!({ "s": format!("{all}\u{202e}\u{2028}"), "n": [1, 2] });
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let escaped = escape_json(&pretty);
        assert!(
            escaped.lines().count() == pretty.lines().count(),
            "{escaped}"
        );
        assert!(
            escaped
                .chars()
                .all(|c| c == '\n' || !needs_escape(c) || c == '\\'),
            "{escaped}"
        );
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn bidi_controls_and_separators_are_shown_as_code_points() {
        for c in [
            '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
            '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{2028}', '\u{2029}',
        ] {
            assert_eq!(
                escape(&format!("x{c}y")),
                format!("x\\u{{{:x}}}y", c as u32)
            );
        }
        assert!(matches!(escape("plain, ünïcode ✓"), Cow::Borrowed(_)));
    }
}
