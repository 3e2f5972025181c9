//! Typed tracepoint fields: how each is encoded into an event and shown.

use std::fmt;
use std::panic::Location;

/// The type of a field, as recorded in a tracepoint's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each names the Rust type it records
pub enum FieldKind {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    Bool,
    F64,
    /// A string: u16 length, then UTF-8 bytes (cut to 65,535 bytes).
    Str,
    /// A source location: the file as a Str, then line and column as u32.
    Location,
}

/// A value a tracepoint field can carry.
pub trait TraceField {
    /// The kind recorded for this type.
    const KIND: FieldKind;
    /// Bytes the encoding takes.
    fn encoded_len(&self) -> usize;
    /// Appends the encoding to `out` (a sink of bytes).
    fn encode(&self, out: &mut dyn FnMut(&[u8]));
    /// The encoding's length whatever the value, for a type whose
    /// encoding has one size (the integers, `f64`, `bool`): `None`, the
    /// default, for one that varies (`&str`). A tracepoint whose fields
    /// all have one size builds its event on the stack and writes it to
    /// the ring in one piece, the ring's cheapest write. An implementation
    /// that sets it must encode exactly that many bytes.
    const FIXED_LEN: Option<usize> = None;
    /// Writes the encoding at the start of `buf`; returns its length.
    /// `buf` holds at least [`encoded_len`](Self::encoded_len) bytes
    /// (what does not fit is left out). The default goes through
    /// [`encode`](Self::encode); the fixed-size types write directly.
    ///
    /// ```
    /// use ringtrace_tracepoint::TraceField;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(0x0102_u16.encode_into(&mut buf), 2);
    /// assert_eq!(buf[..2], [2, 1]);
    /// assert_eq!(<u16 as TraceField>::FIXED_LEN, Some(2));
    /// assert_eq!(<&str as TraceField>::FIXED_LEN, None);
    /// assert_eq!("hi".encode_into(&mut buf), 4);
    /// assert_eq!(buf[..4], [2, 0, b'h', b'i']);
    /// ```
    fn encode_into(&self, buf: &mut [u8]) -> usize {
        let mut at = 0;
        self.encode(&mut |bytes| {
            let end = (at + bytes.len()).min(buf.len());
            buf[at..end].copy_from_slice(&bytes[..end - at]);
            at = end;
        });
        at
    }
}

/// The sum of `lens` if every one is `Some`: a tracepoint's fields'
/// [`TraceField::FIXED_LEN`], at compile time.
#[doc(hidden)]
pub const fn fixed_len(lens: &[Option<usize>]) -> Option<usize> {
    let mut sum = 0usize;
    let mut i = 0;
    while i < lens.len() {
        match lens[i] {
            Some(n) => sum = sum.saturating_add(n),
            None => return None,
        }
        i += 1;
    }
    Some(sum)
}

macro_rules! fixed_field {
    ($($ty:ty => $kind:ident),* $(,)?) => {$(
        impl TraceField for $ty {
            const KIND: FieldKind = FieldKind::$kind;
            #[inline]
            fn encoded_len(&self) -> usize {
                std::mem::size_of::<$ty>()
            }
            #[inline]
            fn encode(&self, out: &mut dyn FnMut(&[u8])) {
                out(&self.to_le_bytes());
            }
            const FIXED_LEN: Option<usize> = Some(std::mem::size_of::<$ty>());
            #[inline(always)]
            fn encode_into(&self, buf: &mut [u8]) -> usize {
                const N: usize = std::mem::size_of::<$ty>();
                if let Some(dst) = buf.get_mut(..N) {
                    dst.copy_from_slice(&self.to_le_bytes());
                }
                N
            }
        }
    )*};
}

fixed_field!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16, i32 => I32, i64 => I64, f64 => F64);

impl TraceField for bool {
    const KIND: FieldKind = FieldKind::Bool;
    fn encoded_len(&self) -> usize {
        1
    }
    fn encode(&self, out: &mut dyn FnMut(&[u8])) {
        out(&[u8::from(*self)]);
    }
    const FIXED_LEN: Option<usize> = Some(1);
    #[inline(always)]
    fn encode_into(&self, buf: &mut [u8]) -> usize {
        if let Some(b) = buf.first_mut() {
            *b = u8::from(*self);
        }
        1
    }
}

/// How many bytes of `s` a string field keeps: all, or the most that fit
/// its 16-bit length and end on a character boundary (an event that long
/// is larger than any page, and refused whole as too large).
fn kept_len(s: &str) -> usize {
    let mut len = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(len) {
        len -= 1;
    }
    len
}

impl TraceField for &str {
    const KIND: FieldKind = FieldKind::Str;
    fn encoded_len(&self) -> usize {
        2 + kept_len(self)
    }
    fn encode(&self, out: &mut dyn FnMut(&[u8])) {
        let bytes = &self.as_bytes()[..kept_len(self)];
        out(&(bytes.len() as u16).to_le_bytes());
        out(bytes);
    }
}

impl TraceField for &'static Location<'static> {
    const KIND: FieldKind = FieldKind::Location;
    fn encoded_len(&self) -> usize {
        self.file().encoded_len() + 8
    }
    fn encode(&self, out: &mut dyn FnMut(&[u8])) {
        self.file().encode(out);
        out(&self.line().to_le_bytes());
        out(&self.column().to_le_bytes());
    }
}

/// A decoded field value.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // each holds the value of the kind it names
pub enum FieldValue {
    Unsigned(u64),
    Signed(i64),
    Bool(bool),
    Float(f64),
    Str(String),
    /// A string field whose bytes are not UTF-8 (a damaged or forged
    /// trace: writers record `&str`), as it holds them. `Display` shows
    /// each byte that is not UTF-8 as U+FFFD; a text dump shows it as
    /// `\xNN`.
    Bytes(Vec<u8>),
    Location {
        file: String,
        line: u32,
        column: u32,
    },
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Unsigned(v) => write!(f, "{v}"),
            FieldValue::Signed(v) => write!(f, "{v}"),
            FieldValue::Bool(v) => write!(f, "{v}"),
            FieldValue::Float(v) => write!(f, "{v}"),
            FieldValue::Str(v) => f.write_str(v),
            FieldValue::Bytes(v) => f.write_str(&String::from_utf8_lossy(v)),
            FieldValue::Location { file, line, column } => write!(f, "{file}:{line}:{column}"),
        }
    }
}

impl FieldValue {
    /// The value as `Display` shows it, as bytes, except that a string
    /// that is not UTF-8 ([`FieldValue::Bytes`]) keeps its bytes: for a
    /// reader that escapes what it prints.
    ///
    /// ```
    /// use ringtrace_tracepoint::FieldValue;
    /// assert_eq!(&*FieldValue::Unsigned(7).shown_bytes(), b"7");
    /// assert_eq!(&*FieldValue::Bytes(vec![b'a', 0xff]).shown_bytes(), b"a\xff");
    /// assert_eq!(FieldValue::Bytes(vec![b'a', 0xff]).to_string(), "a\u{fffd}");
    /// ```
    pub fn shown_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            FieldValue::Str(s) => s.as_bytes().into(),
            FieldValue::Bytes(b) => b.as_slice().into(),
            other => other.to_string().into_bytes().into(),
        }
    }
}

/// Reads one field of `kind` from the front of `bytes`; returns the value
/// and the bytes it took, or `None` if `bytes` is too short. A string whose
/// bytes are not UTF-8 decodes as [`FieldValue::Bytes`]; a location's file
/// name that is not UTF-8 shows U+FFFD for its bytes that are not.
pub fn decode_field(kind: FieldKind, bytes: &[u8]) -> Option<(FieldValue, usize)> {
    fn take<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
        bytes.get(..N)?.try_into().ok()
    }
    fn string(bytes: &[u8]) -> Option<(&[u8], usize)> {
        let len = u16::from_le_bytes(take(bytes)?) as usize;
        Some((bytes.get(2..2 + len)?, 2 + len))
    }
    Some(match kind {
        FieldKind::U8 => (FieldValue::Unsigned(u64::from(take::<1>(bytes)?[0])), 1),
        FieldKind::U16 => (
            FieldValue::Unsigned(u64::from(u16::from_le_bytes(take(bytes)?))),
            2,
        ),
        FieldKind::U32 => (
            FieldValue::Unsigned(u64::from(u32::from_le_bytes(take(bytes)?))),
            4,
        ),
        FieldKind::U64 => (FieldValue::Unsigned(u64::from_le_bytes(take(bytes)?)), 8),
        FieldKind::I8 => (
            FieldValue::Signed(i64::from(i8::from_le_bytes(take(bytes)?))),
            1,
        ),
        FieldKind::I16 => (
            FieldValue::Signed(i64::from(i16::from_le_bytes(take(bytes)?))),
            2,
        ),
        FieldKind::I32 => (
            FieldValue::Signed(i64::from(i32::from_le_bytes(take(bytes)?))),
            4,
        ),
        FieldKind::I64 => (FieldValue::Signed(i64::from_le_bytes(take(bytes)?)), 8),
        FieldKind::Bool => (FieldValue::Bool(take::<1>(bytes)?[0] != 0), 1),
        FieldKind::F64 => (FieldValue::Float(f64::from_le_bytes(take(bytes)?)), 8),
        FieldKind::Str => {
            let (s, n) = string(bytes)?;
            match std::str::from_utf8(s) {
                Ok(s) => (FieldValue::Str(s.to_owned()), n),
                Err(_) => (FieldValue::Bytes(s.to_vec()), n),
            }
        }
        FieldKind::Location => {
            let (file, n) = string(bytes)?;
            let file = String::from_utf8_lossy(file).into_owned();
            let line = u32::from_le_bytes(take(bytes.get(n..)?)?);
            let column = u32::from_le_bytes(take(bytes.get(n + 4..)?)?);
            (FieldValue::Location { file, line, column }, n + 8)
        }
    })
}

/// Fills the `{}` placeholders of `format` with `values`, in order. Extra
/// placeholders stay as they are; extra values are appended.
pub fn render(format: &str, values: &[FieldValue]) -> String {
    let mut out = String::with_capacity(format.len() + 8 * values.len());
    let mut values = values.iter();
    let mut rest = format;
    while let Some(at) = rest.find("{}") {
        out.push_str(&rest[..at]);
        match values.next() {
            Some(v) => out.push_str(&v.to_string()),
            None => out.push_str("{}"),
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    for v in values {
        out.push(' ');
        out.push_str(&v.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: TraceField>(v: T) -> FieldValue {
        let mut buf = Vec::new();
        v.encode(&mut |b| buf.extend_from_slice(b));
        assert_eq!(buf.len(), v.encoded_len());
        let (value, used) = decode_field(T::KIND, &buf).unwrap();
        assert_eq!(used, buf.len());
        value
    }

    #[test]
    fn every_kind_decodes_to_what_was_encoded() {
        assert_eq!(round_trip(7u8), FieldValue::Unsigned(7));
        assert_eq!(round_trip(u64::MAX), FieldValue::Unsigned(u64::MAX));
        assert_eq!(round_trip(-3i32), FieldValue::Signed(-3));
        assert_eq!(round_trip(true), FieldValue::Bool(true));
        assert_eq!(round_trip(2.5f64), FieldValue::Float(2.5));
        assert_eq!(round_trip("héllo"), FieldValue::Str("héllo".into()));
        let here = Location::caller();
        assert_eq!(
            round_trip(here).to_string(),
            format!("{}:{}:{}", here.file(), here.line(), here.column())
        );
    }

    #[test]
    fn a_string_longer_than_its_length_field_is_cut_on_a_character_boundary() {
        // 'é' is two bytes: 32767 of them end one byte short of the limit,
        // and the next would straddle it.
        let long = "é".repeat(40_000);
        let FieldValue::Str(kept) = round_trip(long.as_str()) else {
            panic!("not a string");
        };
        assert_eq!(kept.len(), 65_534);
        assert!(kept.chars().all(|c| c == 'é'));
    }

    #[test]
    fn truncated_bytes_decode_to_none_not_a_panic() {
        assert_eq!(decode_field(FieldKind::U64, &[1, 2, 3]), None);
        assert_eq!(decode_field(FieldKind::Str, &[9, 0, b'a']), None);
        assert_eq!(decode_field(FieldKind::Location, &[0, 0, 1]), None);
    }

    #[test]
    fn a_string_that_is_not_utf8_keeps_its_bytes() {
        let (v, used) = decode_field(FieldKind::Str, &[3, 0, b'a', 0xff, 0x1b]).unwrap();
        assert_eq!(
            (v.clone(), used),
            (FieldValue::Bytes(vec![b'a', 0xff, 0x1b]), 5)
        );
        assert_eq!(v.to_string(), "a\u{fffd}\x1b");
        assert_eq!(&*v.shown_bytes(), b"a\xff\x1b");
    }

    #[test]
    fn render_fills_placeholders_in_order() {
        let v = [FieldValue::Unsigned(1), FieldValue::Str("x".into())];
        assert_eq!(render("a={} b={}", &v), "a=1 b=x");
        assert_eq!(render("a={}", &v), "a=1 x");
        assert_eq!(render("{} {} {}", &v), "1 x {}");
    }
}
