//! Arrays that start all zero and take memory only where they are touched:
//! a CPU buffer's pages and commit words, most of which (the quarantine's,
//! see `RingConfig::quarantine_pages`) a ring may never use.
//!
//! Normally they are anonymous private maps (memmap2), which the kernel
//! backs with the shared zero page until written, whatever the allocator's
//! state. Under Miri (which cannot map memory) and loom (whose atomics are
//! not plain integers) they are boxed slices built value by value.

use std::ptr::NonNull;

/// Types with a zero value that is also all-zero bytes.
///
/// # Safety
///
/// `zero()` must return a value whose bytes are all zero (outside
/// padding), and the type must be valid when every byte of it is zero and
/// need no drop. (loom's atomics are implemented too, for the boxed
/// backing only, which builds every value with `zero()`.)
pub(crate) unsafe trait Zeroable: Sized {
    /// The zero value.
    fn zero() -> Self;
}

// SAFETY: std's AtomicU32 has the size, alignment and bit validity of a
// u32, for which zero is 0; it has no Drop. (Under loom this is loom's
// type, only ever built by `zero()`.)
unsafe impl Zeroable for crate::sync::AtomicU32 {
    fn zero() -> Self {
        Self::new(0)
    }
}
// SAFETY: as for AtomicU32.
unsafe impl Zeroable for crate::sync::AtomicU64 {
    fn zero() -> Self {
        Self::new(0)
    }
}
// SAFETY: CachePadded<T> is T plus padding (repr(align)); padding may hold
// any bytes, and T is Zeroable; it adds no Drop of its own.
unsafe impl<T: Zeroable> Zeroable for crossbeam_utils::CachePadded<T> {
    fn zero() -> Self {
        Self::new(T::zero())
    }
}

/// `len` zeroed values of `T`, owned.
pub(crate) struct ZeroedSlice<T: Zeroable> {
    /// The first element; valid for `len` elements while `_backing` lives.
    ptr: NonNull<T>,
    len: usize,
    _backing: Backing,
}

/// What owns the memory.
enum Backing {
    /// The map; unmapped when dropped. Only held, for its drop.
    #[cfg(not(any(miri, loom)))]
    Map(#[allow(dead_code)] memmap2::MmapMut),
    /// A boxed slice turned into `ptr` and `len` by `Box::into_raw`, and
    /// back into a box by `Drop`. (Kept raw: a box moved after a pointer
    /// was taken from it would invalidate the pointer.)
    Raw,
}

/// Why zeroed memory could not be had.
#[derive(Debug)]
pub(crate) struct ZeroedError {
    /// The bytes asked for (saturated).
    pub bytes: usize,
    /// What the system said.
    pub reason: String,
}

impl<T: Zeroable> ZeroedSlice<T> {
    /// `len` zeroed values.
    pub(crate) fn new(len: usize) -> Result<Self, ZeroedError> {
        let layout = std::alloc::Layout::array::<T>(len).map_err(|e| ZeroedError {
            bytes: usize::MAX,
            reason: e.to_string(),
        })?;
        if layout.size() == 0 || cfg!(any(miri, loom)) {
            return Ok(Self::boxed(len));
        }
        Self::mapped(len, layout)
    }

    fn boxed(len: usize) -> Self {
        let values: Box<[T]> = (0..len).map(|_| T::zero()).collect();
        let raw = Box::into_raw(values);
        // Box::into_raw never returns null, dangling for an empty slice.
        let ptr = NonNull::new(raw.cast::<T>()).unwrap_or(NonNull::dangling());
        ZeroedSlice {
            ptr,
            len,
            _backing: Backing::Raw,
        }
    }

    #[cfg(not(any(miri, loom)))]
    fn mapped(len: usize, layout: std::alloc::Layout) -> Result<Self, ZeroedError> {
        let failed = |reason: String| ZeroedError {
            bytes: layout.size(),
            reason,
        };
        // A map is aligned to the system page, enough for any T here.
        if layout.align() > 4096 {
            return Err(failed(format!(
                "alignment {} is over a page",
                layout.align()
            )));
        }
        let mut map = memmap2::MmapOptions::new()
            .len(layout.size())
            .map_anon()
            .map_err(|e| failed(e.to_string()))?;
        let ptr = NonNull::new(map.as_mut_ptr().cast::<T>())
            .ok_or_else(|| failed("the map has a null address".into()))?;
        Ok(ZeroedSlice {
            ptr,
            len,
            _backing: Backing::Map(map),
        })
    }

    #[cfg(any(miri, loom))]
    fn mapped(len: usize, _layout: std::alloc::Layout) -> Result<Self, ZeroedError> {
        Ok(Self::boxed(len))
    }

    /// The values.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised values (a fresh map is
        // all zero bytes, valid for T: Zeroable; a box holds values built
        // by `zero()`), aligned, owned by `_backing` for as long as `self`
        // lives, and only ever accessed through shared references.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Drop for ZeroedSlice<T> {
    fn drop(&mut self) {
        if matches!(self._backing, Backing::Raw) {
            let slice = std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len);
            // SAFETY: `ptr` and `len` came from `Box::into_raw` of a
            // Box<[T]> in `boxed`, and are turned back into a box once,
            // here; nothing borrows the values any more.
            drop(unsafe { Box::from_raw(slice) });
        }
        // A map unmaps itself when `_backing` drops.
    }
}

impl<T: Zeroable> std::ops::Deref for ZeroedSlice<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Zeroable> std::fmt::Debug for ZeroedSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ZeroedSlice({} x {})",
            self.len,
            std::any::type_name::<T>()
        )
    }
}

// SAFETY: a ZeroedSlice owns its values as a Box<[T]> does; sharing or
// sending it shares or sends &[T] and the T themselves.
unsafe impl<T: Zeroable + Sync> Sync for ZeroedSlice<T> {}
// SAFETY: as above; the map or box is not tied to a thread.
unsafe impl<T: Zeroable + Send> Send for ZeroedSlice<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{AtomicU32, Ordering};

    #[test]
    fn starts_zero_and_keeps_what_is_stored() {
        let words = ZeroedSlice::<AtomicU32>::new(3000).unwrap();
        assert!(words
            .as_slice()
            .iter()
            .all(|w| w.load(Ordering::Relaxed) == 0));
        words.as_slice()[2999].store(7, Ordering::Relaxed);
        assert_eq!(words.as_slice()[2999].load(Ordering::Relaxed), 7);
        assert_eq!(
            ZeroedSlice::<AtomicU32>::new(0).unwrap().as_slice().len(),
            0
        );
    }
}
