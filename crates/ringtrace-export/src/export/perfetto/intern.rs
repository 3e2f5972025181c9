//! Interned strings of one packet sequence: event names, categories,
//! debug annotation names and repeated string values, each given a number (an iid, from 1) the first
//! time it is used. The strings new to a packet go into that packet's
//! `interned_data`, which Perfetto reads before the packet's event, so
//! every iid is described before (or where) it is first used.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: the interned strings are short names, looked up for every
/// event, where SipHash's cost shows and its flood resistance is not
/// needed (the keys are the trace's own names).
#[derive(Default)]
pub(super) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xCBF2_9CE4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
        self.0 = h;
    }
}

/// A map hashed with [`Fnv`].
pub(super) type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// What a string names: one `InternedData` field each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    /// `event_categories` (1): `EventCategory`.
    Category,
    /// `event_names` (2): `EventName`.
    EventName,
    /// `debug_annotation_names` (3): `DebugAnnotationName`.
    AnnotationName,
    /// `debug_annotation_string_values` (29): `InternedString`.
    StringValue,
}

impl Kind {
    /// The `InternedData` field that carries this kind.
    pub fn field(self) -> u32 {
        match self {
            Kind::Category => 1,
            Kind::EventName => 2,
            Kind::AnnotationName => 3,
            Kind::StringValue => 29,
        }
    }
}

/// The strings of one sequence, and those new since the last packet.
#[derive(Debug, Default)]
pub(super) struct Interned {
    ids: [FnvMap<String, u64>; 4],
    /// New in the packet being built: kind, iid, string.
    pub fresh: Vec<(Kind, u64, String)>,
    /// Bytes of the strings held.
    held: usize,
}

/// When a sequence's strings pass either bound, its state is cleared (and
/// the strings interned again as they come), so that the tables stay
/// bounded whatever the trace holds (a message formatted per event is a
/// new name each time).
pub(super) const MAX_STRINGS: usize = 1 << 16;
pub(super) const MAX_BYTES: usize = 8 << 20;

impl Interned {
    /// Whether the tables have passed their bounds.
    pub fn is_full(&self) -> bool {
        self.held > MAX_BYTES || self.ids.iter().map(|m| m.len()).sum::<usize>() > MAX_STRINGS
    }

    /// The iid of `s` as a `kind`, made (and noted fresh) if new.
    pub fn id(&mut self, kind: Kind, s: &str) -> u64 {
        let ids = &mut self.ids[kind as usize];
        if let Some(&id) = ids.get(s) {
            return id;
        }
        let id = ids.len() as u64 + 1;
        self.held += s.len();
        ids.insert(s.to_owned(), id);
        self.fresh.push((kind, id, s.to_owned()));
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_counts_its_own_ids_and_a_string_is_fresh_once() {
        let mut i = Interned::default();
        assert_eq!(i.id(Kind::EventName, "a"), 1);
        assert_eq!(i.id(Kind::EventName, "b"), 2);
        assert_eq!(i.id(Kind::Category, "a"), 1);
        assert_eq!(i.id(Kind::EventName, "a"), 1);
        assert_eq!(i.fresh.len(), 3);
    }
}
