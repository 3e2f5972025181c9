//! Arrays that start all zero and take memory only where they are touched:
//! a CPU buffer's pages and commit words, most of which (the quarantine's,
//! see `RingConfig::quarantine_pages`) a ring may never use.
//!
//! Normally they are anonymous private maps (memmap2), which the kernel
//! backs with the shared zero page until written, whatever the allocator's
//! state. A file ring's are views into one shared map of its file (a new
//! file is sparse, so zero too). Under Miri (which cannot map memory) and
//! loom (whose atomics are not plain integers) they are boxed slices built
//! value by value.

use std::ptr::NonNull;

/// Types with a zero value that is also all-zero bytes.
///
/// # Safety
///
/// `zero()` must return a value whose bytes are all zero (outside
/// padding), the type must be valid for *every* bit pattern (a file ring
/// reopened with `append` views whatever bytes the file holds), and it must
/// need no drop. Integer atomics, and structs of them, are. (loom's atomics
/// are implemented too, for the boxed backing only, which builds every value
/// with `zero()`.)
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
// SAFETY: as for AtomicU32, with a u8.
unsafe impl Zeroable for crate::sync::AtomicU8 {
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
    /// A view into a shared map of a file, which lives while any view does.
    #[cfg(not(loom))]
    File(#[allow(dead_code)] std::sync::Arc<memmap2::MmapMut>),
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

    /// `len` values of `T` at byte `offset` of a shared file map, which the
    /// view keeps alive. The values are whatever the file holds (zero in a
    /// new, sparse file); any bytes are a valid `T` (see [`Zeroable`]).
    #[cfg(not(loom))]
    pub(crate) fn in_file(
        map: &std::sync::Arc<memmap2::MmapMut>,
        offset: usize,
        len: usize,
    ) -> Result<Self, ZeroedError> {
        let failed = |reason: String| ZeroedError {
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
            reason,
        };
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| failed("the size overflows".into()))?;
        let end = offset
            .checked_add(bytes)
            .filter(|&end| end <= map.len())
            .ok_or_else(|| {
                failed(format!(
                    "bytes {offset}+{bytes} are past the map's {}",
                    map.len()
                ))
            })?;
        let base = map.as_ptr() as usize;
        if (base + offset) % std::mem::align_of::<T>() != 0 {
            return Err(failed(format!(
                "offset {offset} is not aligned to {}",
                std::mem::align_of::<T>()
            )));
        }
        debug_assert!(end <= map.len());
        // The map is only ever accessed through atomics (shared references
        // to `T`), never through the `MmapMut`'s own slice, so deriving a
        // pointer from its base is sound; `as_ptr` on a shared reference
        // gives one valid for the whole map.
        let ptr = NonNull::new(map.as_ptr().wrapping_add(offset) as *mut T)
            .ok_or_else(|| failed("the map has a null address".into()))?;
        Ok(ZeroedSlice {
            ptr,
            len,
            _backing: Backing::File(std::sync::Arc::clone(map)),
        })
    }

    /// The values.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised values (a fresh map is
        // all zero bytes, and a file view holds file bytes, both valid for
        // T: Zeroable; a box holds values built by `zero()`), aligned
        // (checked for a file view; maps are page aligned), owned by
        // `_backing` for as long as `self` lives, and only ever accessed
        // through shared references.
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

/// One zeroed `T`: a [`ZeroedSlice`] of length one that derefs to it.
pub(crate) struct ZeroedBox<T: Zeroable>(ZeroedSlice<T>);

impl<T: Zeroable> ZeroedBox<T> {
    /// A zero `T`, anonymous.
    pub(crate) fn new() -> Result<Self, ZeroedError> {
        Self::from_slice(ZeroedSlice::new(1)?)
    }

    /// The first value of `slice`, which must hold one.
    pub(crate) fn from_slice(slice: ZeroedSlice<T>) -> Result<Self, ZeroedError> {
        if slice.len != 1 {
            return Err(ZeroedError {
                bytes: std::mem::size_of::<T>(),
                reason: format!("a box needs one value, not {}", slice.len),
            });
        }
        Ok(ZeroedBox(slice))
    }
}

impl<T: Zeroable> std::ops::Deref for ZeroedBox<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the slice holds exactly one value (checked when built).
        unsafe { self.0.as_slice().get_unchecked(0) }
    }
}

impl<T: Zeroable + std::fmt::Debug> std::fmt::Debug for ZeroedBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
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
