//! Where everything is in a ring file: the header, the metadata, the
//! metadata annex, and each CPU buffer's control words and pages.
//! docs/format.md has the picture.
//!
//! ```text
//!   0      header (fixed fields, then a checksum)       HEADER_AREA bytes
//!   2048   status word: being set up, open, closed, or exited
//!   2056   exit record: ticks, wall-clock ns, what was read (3 x u64)
//!   4096   metadata (opaque to the ring: the tracepoint descriptions)
//!   annex  committed length (u64), then records appended at run time
//!          (4096-aligned; absent when its capacity is 0)
//!   data   CPU 0: | hot line | rare line | slots | commit words | pages |
//!          CPU 1: ... every CPU `cpu_stride` bytes after the last
//! ```
//!
//! Offsets inside a CPU area are recorded in the header, so a reader does
//! not depend on the writer's struct sizes; the order of the words inside
//! the hot and rare lines is fixed here (`HOT_*`, `RARE_*`) and checked
//! against the structs by a test.

use crate::config::Geometry;
use crate::page::memory::CpuOffsets;

/// Bytes before the metadata: the header and the status word.
pub const HEADER_AREA: usize = 4096;
/// Byte offset of the status word.
pub const STATUS_OFFSET: usize = 2048;
/// Byte offset of the exit record, right after the status word: three
/// words in the writer's byte order, stored by the exit handler before it
/// marks the file `EXITED` (see [`STATUS_EXITED`](super::STATUS_EXITED)),
/// and meaningful only then.
///
/// | offset | word | meaning |
/// |---|---|---|
/// | 2056 | ticks | the ring clock's reading at the exit |
/// | 2064 | wall ns | `CLOCK_REALTIME` at the exit, ns since the Unix epoch |
/// | 2072 | read | bit 0: `ticks` was read; bit 1: `wall ns` was (others 0) |
///
/// Zero in files of builds before the record, whose status is never
/// `EXITED`.
pub const EXIT_OFFSET: usize = STATUS_OFFSET + 8;
/// Words in the exit record.
pub const EXIT_WORDS: usize = 3;
/// The exit record's `read` word: its `ticks` was read.
pub const EXIT_HAS_TICKS: u64 = 1;
/// The exit record's `read` word: its `wall ns` was read.
pub const EXIT_HAS_WALL: u64 = 2;
/// The exit record's `read` word: the exit code is known, in bits 8 to 15
/// ([`EXIT_CODE_SHIFT`]).
pub const EXIT_HAS_CODE: u64 = 4;
/// Where the exit code sits in the exit record's `read` word.
pub const EXIT_CODE_SHIFT: u32 = 8;
/// Alignment of each CPU area and of its pages.
pub const AREA_ALIGN: usize = 4096;
/// Alignment of each part of a CPU area's control words (a cache line pair).
pub const LINE: usize = 128;

/// Byte offsets in the hot line (`WriterHot`): the (write, last_ts) pair is
/// a little-endian u128 on the targets ringtrace supports, low word first.
pub const HOT_WRITE: usize = 0;
/// The last reserved record's time.
pub const HOT_LAST_TS: usize = 8;
/// `hit`.
pub const HOT_HIT: usize = 32;
/// Byte offsets in the rare line (`RareCounters`), in declaration order.
pub const RARE_MISSED: usize = 0;
/// `overrun`.
pub const RARE_OVERRUN: usize = 8;
/// `discarded`.
pub const RARE_DISCARDED: usize = 16;
/// `lost`.
pub const RARE_LOST: usize = 24;
/// `ts_fixups`.
pub const RARE_TS_FIXUPS: usize = 32;
/// `pages_reclaimed`.
pub const RARE_PAGES_RECLAIMED: usize = 40;
/// `read`.
pub const RARE_READ: usize = 48;
/// `fixups_refused`.
pub const RARE_FIXUPS_REFUSED: usize = 56;
/// `reader_page`.
pub const RARE_READER_PAGE: usize = 80;
/// Bytes of the rare line a reader needs.
pub const RARE_LEN: usize = 88;
/// `busy`, in files whose rare line has room for it ([`RARE_WRITTEN`]
/// bytes before the slot words); older builds left it zero.
pub const RARE_BUSY: usize = 88;
/// `too_large`, as `busy`.
pub const RARE_TOO_LARGE: usize = 96;
/// `blocked`, as `busy`.
pub const RARE_BLOCKED: usize = 104;
/// `timed_out`, as `busy`.
pub const RARE_TIMED_OUT: usize = 112;
/// `preparing`, as `busy` (older builds counted it in `busy`).
pub const RARE_PREPARING: usize = 120;
/// Bytes of the rare line this build writes.
pub const RARE_WRITTEN: usize = 128;
/// Bytes of the hot line a reader needs.
pub const HOT_LEN: usize = 40;

/// The layout of a file for one geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLayout {
    /// Where the metadata starts.
    pub metadata_offset: u64,
    /// Its length.
    pub metadata_len: u64,
    /// Where CPU 0's area starts.
    pub data_offset: u64,
    /// Bytes from one CPU area to the next.
    pub cpu_stride: u64,
    /// Offsets inside a CPU area.
    pub hot: u64,
    /// The rare line.
    pub rare: u64,
    /// The slot words (8 bytes each).
    pub slots: u64,
    /// The commit words.
    pub commits: u64,
    /// Bytes from one commit word to the next.
    pub commit_stride: u64,
    /// The first page.
    pub pages: u64,
    /// The whole file.
    pub file_len: u64,
    /// Where the metadata annex starts: its committed-length word (u64),
    /// then the records. 0 when it has no capacity.
    pub annex_offset: u64,
    /// Bytes for the annex's records, after the committed-length word
    /// ([`RingConfig::metadata_capacity`](crate::RingConfig::metadata_capacity));
    /// 0 for no annex (and in a version 1 file, which has none).
    pub annex_capacity: u64,
}

fn round_up(n: u64, to: u64) -> Option<u64> {
    n.checked_add(to - 1).map(|n| n / to * to)
}

impl FileLayout {
    /// Its words in the order the file header stores them (a version 1
    /// header stores the first 11: no annex).
    ///
    /// ```
    /// use ringtrace_ring::file::FileLayout;
    /// assert_eq!(FileLayout::NONE.words(), [0; 13]);
    /// ```
    pub fn words(&self) -> [u64; 13] {
        [
            self.metadata_offset,
            self.metadata_len,
            self.data_offset,
            self.cpu_stride,
            self.hot,
            self.rare,
            self.slots,
            self.commits,
            self.commit_stride,
            self.pages,
            self.file_len,
            self.annex_offset,
            self.annex_capacity,
        ]
    }

    /// The layout whose words, in header order, are `w` (the inverse of
    /// [`words`](Self::words)).
    ///
    /// ```
    /// use ringtrace_ring::file::FileLayout;
    /// let w: [u64; 13] = std::array::from_fn(|i| i as u64 * 8);
    /// assert_eq!(FileLayout::from_words(w).words(), w);
    /// ```
    pub fn from_words(w: [u64; 13]) -> FileLayout {
        FileLayout {
            metadata_offset: w[0],
            metadata_len: w[1],
            data_offset: w[2],
            cpu_stride: w[3],
            hot: w[4],
            rare: w[5],
            slots: w[6],
            commits: w[7],
            commit_stride: w[8],
            pages: w[9],
            file_len: w[10],
            annex_offset: w[11],
            annex_capacity: w[12],
        }
    }

    /// No layout: every offset and length zero (a ring that is in no file).
    pub const NONE: FileLayout = FileLayout {
        metadata_offset: 0,
        metadata_len: 0,
        data_offset: 0,
        cpu_stride: 0,
        hot: 0,
        rare: 0,
        slots: 0,
        commits: 0,
        commit_stride: 0,
        pages: 0,
        file_len: 0,
        annex_offset: 0,
        annex_capacity: 0,
    };

    /// The layout this build writes for `geometry` and `metadata_len` bytes
    /// of metadata; `None` if it overflows.
    pub(crate) fn for_geometry(geometry: &Geometry, metadata_len: usize) -> Option<FileLayout> {
        let hot_size =
            std::mem::size_of::<crossbeam_utils::CachePadded<crate::page::hot::WriterHot>>();
        let rare_size = std::mem::size_of::<
            crossbeam_utils::CachePadded<crate::page::counters::RareCounters>,
        >();
        let commit_stride = std::mem::size_of::<
            crossbeam_utils::CachePadded<crate::page::meta::CommitLine>,
        >() as u64;
        Self::compute(
            geometry.pages_per_cpu as u64,
            geometry.physical_pages() as u64,
            geometry.page_size as u64,
            geometry.cpus as u64,
            hot_size as u64,
            rare_size as u64,
            commit_stride,
            metadata_len as u64,
            geometry.metadata_capacity as u64,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn compute(
        pages: u64,
        physical: u64,
        page_size: u64,
        cpus: u64,
        hot_size: u64,
        rare_size: u64,
        commit_stride: u64,
        metadata_len: u64,
        annex_capacity: u64,
    ) -> Option<FileLayout> {
        let line = LINE as u64;
        let hot = 0;
        let rare = round_up(hot + hot_size, line)?;
        let slots = round_up(rare + rare_size, line)?;
        let commits = round_up(slots.checked_add(pages.checked_mul(8)?)?, line)?;
        let pages_at = round_up(
            commits.checked_add(physical.checked_mul(commit_stride)?)?,
            AREA_ALIGN as u64,
        )?;
        let cpu_stride = round_up(
            pages_at.checked_add(physical.checked_mul(page_size)?)?,
            AREA_ALIGN as u64,
        )?;
        let metadata_offset = HEADER_AREA as u64;
        let metadata_end = metadata_offset.checked_add(metadata_len)?;
        let (annex_offset, annex_end) = if annex_capacity == 0 {
            (0, metadata_end)
        } else {
            let at = round_up(metadata_end, AREA_ALIGN as u64)?;
            let end = at
                .checked_add(crate::annex::COMMITTED_WORD as u64)?
                .checked_add(annex_capacity)?;
            (at, end)
        };
        let data_offset = round_up(annex_end, AREA_ALIGN as u64)?;
        let file_len = data_offset.checked_add(cpus.checked_mul(cpu_stride)?)?;
        Some(FileLayout {
            metadata_offset,
            metadata_len,
            data_offset,
            cpu_stride,
            hot,
            rare,
            slots,
            commits,
            commit_stride,
            pages: pages_at,
            file_len,
            annex_offset,
            annex_capacity,
        })
    }

    /// Where CPU `cpu`'s area starts.
    pub fn cpu_base(&self, cpu: usize) -> u64 {
        self.data_offset + cpu as u64 * self.cpu_stride
    }

    /// The offsets of CPU `cpu`'s parts, for mapping (the file's length
    /// was checked against the layout, so these fit in usize).
    pub(crate) fn cpu_offsets(&self, cpu: usize) -> CpuOffsets {
        let base = self.cpu_base(cpu);
        CpuOffsets {
            hot: (base + self.hot) as usize,
            rare: (base + self.rare) as usize,
            slots: (base + self.slots) as usize,
            commits: (base + self.commits) as usize,
            pages: (base + self.pages) as usize,
        }
    }

    /// Checks a layout read from a file against its geometry: every part
    /// inside its CPU area, in order, none overlapping, the areas inside
    /// the file. Returns what is wrong.
    pub(crate) fn check(
        &self,
        pages: u64,
        physical: u64,
        page_size: u64,
        cpus: u64,
    ) -> Result<(), String> {
        let parts_end = |start: u64, len: Option<u64>| len.and_then(|l| start.checked_add(l));
        let need = [
            ("hot line", self.hot, Some(HOT_LEN as u64)),
            ("rare line", self.rare, Some(RARE_LEN as u64)),
            ("slot words", self.slots, pages.checked_mul(8)),
            (
                "commit words",
                self.commits,
                physical.checked_mul(self.commit_stride),
            ),
            ("pages", self.pages, physical.checked_mul(page_size)),
        ];
        if self.commit_stride < 8 || self.commit_stride % 8 != 0 {
            return Err(format!(
                "commit word stride {} is not a multiple of 8",
                self.commit_stride
            ));
        }
        let mut previous_end = 0u64;
        for (name, start, len) in need {
            let end = parts_end(start, len).ok_or_else(|| format!("the {name} overflow"))?;
            if start < previous_end || end > self.cpu_stride || start % 8 != 0 {
                return Err(format!(
                    "the {name} at {start}..{end} overlap another part or leave the CPU area of {} bytes",
                    self.cpu_stride
                ));
            }
            previous_end = end;
        }
        if self.pages % 4 != 0 {
            return Err(format!("the pages start at {}, not 4-aligned", self.pages));
        }
        let end = cpus
            .checked_mul(self.cpu_stride)
            .and_then(|b| b.checked_add(self.data_offset))
            .ok_or("the CPU areas overflow")?;
        if end != self.file_len {
            return Err(format!(
                "{cpus} CPU areas of {} bytes from byte {} end at {end}, not at the recorded length {}",
                self.cpu_stride, self.data_offset, self.file_len
            ));
        }
        let meta_end = self
            .metadata_offset
            .checked_add(self.metadata_len)
            .ok_or("the metadata overflows")?;
        if self.metadata_offset < HEADER_AREA as u64 || meta_end > self.data_offset {
            return Err(format!(
                "the metadata at {}..{meta_end} is outside the space before the CPU areas ({}..{})",
                self.metadata_offset, HEADER_AREA, self.data_offset
            ));
        }
        if self.annex_capacity > 0 {
            let end = self
                .annex_offset
                .checked_add(crate::annex::COMMITTED_WORD as u64)
                .and_then(|e| e.checked_add(self.annex_capacity))
                .ok_or("the metadata annex overflows")?;
            if self.annex_offset < meta_end || end > self.data_offset || self.annex_offset % 8 != 0
            {
                return Err(format!(
                    "the metadata annex at {}..{end} is not 8-aligned or is outside the space between the metadata and the CPU areas ({meta_end}..{})",
                    self.annex_offset, self.data_offset
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::counters::RareCounters;
    use crate::page::hot::WriterHot;
    use std::mem::offset_of;

    #[test]
    fn word_offsets_match_the_structs() {
        assert_eq!(offset_of!(WriterHot, state), HOT_WRITE);
        assert_eq!(offset_of!(WriterHot, hit), HOT_HIT);
        // The commit line: the word at 0, the page's hits at 8 (what
        // recovery reads), and the stride the file records is its size.
        assert_eq!(offset_of!(crate::page::meta::CommitLine, word), 0);
        assert_eq!(offset_of!(crate::page::meta::CommitLine, hits), 8);
        let stride =
            std::mem::size_of::<crossbeam_utils::CachePadded<crate::page::meta::CommitLine>>();
        assert!(stride >= 16 && stride % 16 == 0, "{stride}");
        assert!(std::mem::size_of::<WriterHot>() >= HOT_LEN);
        assert_eq!(offset_of!(RareCounters, missed), RARE_MISSED);
        assert_eq!(offset_of!(RareCounters, overrun), RARE_OVERRUN);
        assert_eq!(offset_of!(RareCounters, discarded), RARE_DISCARDED);
        assert_eq!(offset_of!(RareCounters, lost), RARE_LOST);
        assert_eq!(offset_of!(RareCounters, ts_fixups), RARE_TS_FIXUPS);
        assert_eq!(
            offset_of!(RareCounters, pages_reclaimed),
            RARE_PAGES_RECLAIMED
        );
        assert_eq!(offset_of!(RareCounters, read), RARE_READ);
        assert_eq!(
            offset_of!(RareCounters, fixups_refused),
            RARE_FIXUPS_REFUSED
        );
        assert_eq!(offset_of!(RareCounters, reader_page), RARE_READER_PAGE);
        assert_eq!(offset_of!(RareCounters, busy), RARE_BUSY);
        assert_eq!(offset_of!(RareCounters, too_large), RARE_TOO_LARGE);
        assert_eq!(offset_of!(RareCounters, blocked), RARE_BLOCKED);
        assert_eq!(offset_of!(RareCounters, timed_out), RARE_TIMED_OUT);
        assert_eq!(offset_of!(RareCounters, preparing), RARE_PREPARING);
        assert_eq!(std::mem::size_of::<RareCounters>(), RARE_WRITTEN);
    }

    #[test]
    fn a_computed_layout_passes_its_own_check() {
        let g = crate::RingConfig::default()
            .cpus(3)
            .page_size(256)
            .per_cpu_bytes(4096)
            .quarantine_pages(5)
            .validate()
            .unwrap();
        let l = FileLayout::for_geometry(&g, 1000).unwrap();
        l.check(16, 22, 256, 3).unwrap();
        assert_eq!(l.data_offset % 4096, 0);
        assert_eq!(l.cpu_stride % 4096, 0);
        assert_eq!(
            l.annex_offset, 8192,
            "the annex after the metadata, aligned"
        );
        assert_eq!(l.data_offset, 8192 + 8 + 256 * 1024 + 4088);
        let bad = FileLayout { slots: 0, ..l };
        assert!(bad
            .check(16, 22, 256, 3)
            .unwrap_err()
            .contains("slot words"));
        let into_metadata = FileLayout {
            annex_offset: 4096,
            ..l
        };
        assert!(into_metadata
            .check(16, 22, 256, 3)
            .unwrap_err()
            .contains("metadata annex"));
        let g = crate::RingConfig::default()
            .cpus(3)
            .page_size(256)
            .per_cpu_bytes(4096)
            .quarantine_pages(5)
            .metadata_capacity(0)
            .validate()
            .unwrap();
        let none = FileLayout::for_geometry(&g, 1000).unwrap();
        none.check(16, 22, 256, 3).unwrap();
        assert_eq!((none.annex_offset, none.data_offset), (0, 8192));
    }
}
