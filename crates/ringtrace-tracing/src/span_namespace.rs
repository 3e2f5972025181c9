//! Span ids of one registry told from another registry's on the same
//! ring.
//!
//! A `tracing` registry numbers its spans from 1 (its slab's slots), so
//! two registries recording into one ring (two subscribers built with
//! the same ring, say one per test or per thread with `with_default`)
//! would write spans of one id that are not the same span, and readers
//! would join their records. The first registry a ring's layer joins
//! keeps its ids as they are; each later one XORs them with a 64-bit
//! constant of its own. Two live spans of two registries then share an
//! id only if their registry ids differ by exactly the two constants'
//! XOR: about one chance in 2^64 a pair.

use std::any::Any;
use std::sync::{Arc, Mutex, Weak};

/// A ring and how many registries have joined it.
type Joined = (Weak<dyn Any + Send + Sync>, u64);

/// Rings that registries joined, while they live. Looked at once per
/// registry (when a layer joins one), never per record.
static JOINED: Mutex<Vec<Joined>> = Mutex::new(Vec::new());

/// The constant for the next registry that records into `ring`: 0 for
/// the first, then a constant per registry.
pub(crate) fn next_salt(ring: Arc<dyn Any + Send + Sync>) -> u64 {
    let n = {
        let mut joined = JOINED.lock().unwrap_or_else(|e| e.into_inner());
        // Rings dropped since: a ring made later at the same address is
        // another ring.
        joined.retain(|(weak, _)| weak.strong_count() > 0);
        match joined
            .iter_mut()
            .find(|(weak, _)| weak.upgrade().is_some_and(|r| Arc::ptr_eq(&r, &ring)))
        {
            Some((_, count)) => {
                *count += 1;
                *count - 1
            }
            None => {
                joined.push((Arc::downgrade(&ring), 1));
                0
            }
        }
    };
    if n == 0 {
        0
    } else {
        splitmix64(n).max(1)
    }
}

/// The id span `id` of a registry with `salt` is written under: never 0
/// (which means "no span"), and distinct for distinct ids.
#[inline(always)]
pub(crate) fn ring_id(id: u64, salt: u64) -> u64 {
    // A registry id is never 0, so the id that XORs to 0 (`salt` itself)
    // can take the place 0 would have had: `salt`.
    match id ^ salt {
        0 => salt,
        x => x,
    }
}

/// SplitMix64's output for `n`: constants far apart for nearby `n`.
pub(crate) fn splitmix64(n: u64) -> u64 {
    let mut z = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_registry_of_a_ring_keeps_its_ids_and_later_ones_do_not() {
        let ring: Arc<dyn Any + Send + Sync> = Arc::new(7u64);
        assert_eq!(next_salt(ring.clone()), 0);
        let second = next_salt(ring.clone());
        let third = next_salt(ring.clone());
        assert!(second != 0 && third != 0 && second != third);
        let other: Arc<dyn Any + Send + Sync> = Arc::new(8u64);
        assert_eq!(next_salt(other), 0, "another ring starts again");
        drop(ring);
        let again: Arc<dyn Any + Send + Sync> = Arc::new(7u64);
        assert_eq!(next_salt(again), 0, "a ring dropped is forgotten");
        assert_eq!(ring_id(1, 0), 1);
        assert_ne!(ring_id(1, second), ring_id(1, third));
    }

    #[test]
    fn ring_ids_are_never_0_and_never_shared_by_two_ids() {
        let salt = splitmix64(7);
        assert_eq!(ring_id(salt, salt), salt);
        assert_ne!(ring_id(salt, salt), 0);
        let ids: Vec<u64> = (1..1000).chain([salt, salt ^ 1, u64::MAX]).collect();
        let mut seen: Vec<u64> = ids.iter().map(|&id| ring_id(id, salt)).collect();
        assert!(seen.iter().all(|&x| x != 0));
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), ids.len());
    }
}
