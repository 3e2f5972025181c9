//! What a declared tracepoint is: its system, name, id, fields, format,
//! key and where it was declared.

use crate::field::FieldKind;
use crate::location::SourceLocation;

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
///
/// Its full name is `system:event`, as the kernel's
/// `events/<system>/<event>`: the system is the declaring crate's name
/// unless the declaration names one (`tracepoint! { system = app; ... }`),
/// and the built-in preemptirq tracepoints are in system `preemptirq`.
///
/// ```
/// ringtrace_tracepoint::tracepoint! {
///     system = app;
///     /// A request was served.
///     pub fn request_done(status: u16) = "status={}";
/// }
/// let tp = &request_done::TRACEPOINT;
/// assert_eq!((tp.system, tp.event, tp.name), ("app", "request_done", "app:request_done"));
/// assert_eq!(tp.id, ringtrace_tracepoint::fnv1a("app:request_done"));
/// assert!(tp.declared_at.file.ends_with(".rs"));
/// ```
#[derive(Debug)]
pub struct Tracepoint {
    /// The system it belongs to: the declaring crate's name, or the one its
    /// declaration names.
    pub system: &'static str,
    /// Its name within the system (the declared function's name).
    pub event: &'static str,
    /// Its full name, `system:event`, unique in a correct program.
    pub name: &'static str,
    /// A 32-bit id, the FNV-1a hash of the full name: the first four bytes
    /// of every event it records, so a reader can tell whose event it is.
    pub id: u32,
    /// Where its `tracepoint!` block is, for errors about it (two
    /// tracepoints of one block cannot share a name: each is a module).
    pub declared_at: SourceLocation,
    /// Its fields, in order.
    pub fields: &'static [Field],
    /// The text format: `{}` for each field in order.
    pub format: &'static str,
    key: KeyHandle,
}

impl Tracepoint {
    /// Describes a tracepoint; used by the macro, which passes `name` as
    /// `concat!(system, ":", event)` (a `const fn` cannot concatenate).
    pub const fn new(
        names: TracepointNames,
        fields: &'static [Field],
        format: &'static str,
        key: KeyHandle,
    ) -> Self {
        Tracepoint {
            system: names.system,
            event: names.event,
            name: names.name,
            id: fnv1a(names.name),
            declared_at: names.declared_at,
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
/// are in [`tracing_record`](crate::tracing_record)). A tracepoint whose name
/// hashes into this range is refused by
/// [`registry::check`](crate::registry::check); the odds are 1 in
/// 16.7 million per name.
pub const RESERVED_IDS: std::ops::RangeInclusive<u32> = 0xFFFF_FF00..=0xFFFF_FFFF;

/// Two descriptions are equal when they describe one declaration (the same
/// full name, id and location).
impl PartialEq for Tracepoint {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.name == other.name && self.declared_at == other.declared_at
    }
}

/// What names a tracepoint and where it is declared, as
/// [`Tracepoint::new`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct TracepointNames {
    /// [`Tracepoint::system`].
    pub system: &'static str,
    /// [`Tracepoint::event`].
    pub event: &'static str,
    /// [`Tracepoint::name`]: `system:event`.
    pub name: &'static str,
    /// [`Tracepoint::declared_at`].
    pub declared_at: SourceLocation,
}

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
