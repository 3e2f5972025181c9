//! Where a CPU buffer's memory comes from: anonymous maps, or views into
//! the shared map of a file ring (see [`crate::file`]). Either way the
//! buffer is the same code over the same words.

use crate::config::Geometry;
use crate::page::counters::RareCounters;
use crate::page::hot::WriterHot;
use crate::page::words::PageWords;
use crate::page::zeroed::{ZeroedBox, ZeroedError, ZeroedSlice};
use crate::sync::AtomicU64;
use crossbeam_utils::CachePadded;

/// Everything a CPU buffer shares with its writers and readers.
pub(crate) struct CpuMemory {
    pub hot: ZeroedBox<CachePadded<WriterHot>>,
    pub rare: ZeroedBox<CachePadded<RareCounters>>,
    pub slots: ZeroedSlice<AtomicU64>,
    pub commits: ZeroedSlice<CachePadded<crate::page::meta::CommitLine>>,
    pub words: PageWords,
    /// A file ring: a claim zeroes its page before any writer may reserve
    /// in it, so that a recovered file never shows an older lap's bytes.
    pub zero_on_claim: bool,
}

/// Byte offsets, in a file map, of one CPU buffer's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuOffsets {
    pub hot: usize,
    pub rare: usize,
    pub slots: usize,
    pub commits: usize,
    pub pages: usize,
}

impl CpuMemory {
    /// Zeroed anonymous memory for a buffer of `geometry`, with the spare
    /// pages of its pool after the quarantine's (see
    /// `page::zero_pool::memory_spares`).
    pub(crate) fn anonymous(geometry: &Geometry) -> Result<Self, ZeroedError> {
        let phys = geometry.physical_pages();
        let phys = phys + crate::page::zero_pool::memory_spares(phys);
        Ok(CpuMemory {
            hot: ZeroedBox::new()?,
            rare: ZeroedBox::new()?,
            slots: ZeroedSlice::new(geometry.pages_per_cpu)?,
            commits: ZeroedSlice::new(phys)?,
            words: PageWords::new(
                ZeroedSlice::new(phys * geometry.page_size / 4)?,
                geometry.page_size,
            ),
            zero_on_claim: false,
        })
    }

    /// Views into `map` at `at`, for a buffer of `geometry`.
    #[cfg(not(loom))]
    pub(crate) fn in_file(
        map: &std::sync::Arc<memmap2::MmapMut>,
        at: CpuOffsets,
        geometry: &Geometry,
    ) -> Result<Self, ZeroedError> {
        let phys = geometry.physical_pages();
        Ok(CpuMemory {
            hot: ZeroedBox::from_slice(ZeroedSlice::in_file(map, at.hot, 1)?)?,
            rare: ZeroedBox::from_slice(ZeroedSlice::in_file(map, at.rare, 1)?)?,
            slots: ZeroedSlice::in_file(map, at.slots, geometry.pages_per_cpu)?,
            commits: ZeroedSlice::in_file(map, at.commits, phys)?,
            words: PageWords::new(
                ZeroedSlice::in_file(map, at.pages, phys * geometry.page_size / 4)?,
                geometry.page_size,
            ),
            zero_on_claim: true,
        })
    }
}
