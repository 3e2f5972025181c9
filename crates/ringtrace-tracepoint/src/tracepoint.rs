//! What a declared tracepoint is: its name, id, fields, format and key.

use crate::field::FieldKind;

/// One field of a tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: &'static str,
    /// Its type.
    pub kind: FieldKind,
}

/// How a tracepoint's key is read and flipped (a [`crate::StaticKey`], or a
/// patched static-keys key under the `static-keys` feature).
#[derive(Debug, Clone, Copy)]
pub struct KeyHandle {
    /// Whether the key is on.
    pub is_enabled: fn() -> bool,
    /// Turns it on or off.
    pub set: fn(bool),
}

/// A tracepoint, as [`tracepoint!`](crate::tracepoint) declares it.
#[derive(Debug)]
pub struct Tracepoint {
    /// The name it is enabled by.
    pub name: &'static str,
    /// A 32-bit id, the FNV-1a hash of the name: the first four bytes of
    /// every event it records, so a reader can tell whose event it is.
    pub id: u32,
    /// Its fields, in order.
    pub fields: &'static [Field],
    /// The text format: `{}` for each field in order.
    pub format: &'static str,
    key: KeyHandle,
}

impl Tracepoint {
    /// Describes a tracepoint; used by the macro.
    pub const fn new(
        name: &'static str,
        fields: &'static [Field],
        format: &'static str,
        key: KeyHandle,
    ) -> Self {
        Tracepoint {
            name,
            id: fnv1a(name),
            fields,
            format,
            key,
        }
    }

    /// Whether it records.
    pub fn is_enabled(&self) -> bool {
        (self.key.is_enabled)()
    }

    pub(crate) fn set_key(&self, on: bool) {
        (self.key.set)(on)
    }
}

/// Event ids no tracepoint may have: the first four bytes of the records a
/// `tracing` layer and local spans write (ringtrace-tracing; the layouts
/// are in ringtrace-export's `tracing_format`). A tracepoint whose name
/// hashes into this range is refused by
/// [`registry::check_ids`](crate::registry::check_ids); the odds are 1 in
/// 16.7 million per name.
pub const RESERVED_IDS: std::ops::RangeInclusive<u32> = 0xFFFF_FF00..=0xFFFF_FFFF;

/// FNV-1a, 32 bits, at compile time.
pub const fn fnv1a(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash = 0x811C_9DC5u32;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u32;
        hash = hash.wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}
