//! Bad configuration, named with what is valid.

use thiserror::Error;

/// Bad configuration, named with what is valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The page size is not a power of two in range.
    #[error("page size {given} is invalid: it must be a power of two from {min} to {max} bytes")]
    PageSize {
        /// What was asked for.
        given: usize,
        /// Smallest valid page size.
        min: usize,
        /// Largest valid page size.
        max: usize,
    },
    /// The per-CPU buffer would hold fewer than two pages, or too many.
    #[error("per-CPU size {given} bytes makes {pages} page{} of {page_size} bytes; a CPU buffer has from 2 to {max_pages} pages, so from {} to {} bytes at this page size{}", if *.pages == 1 { "" } else { "s" }, .page_size + 1, .max_pages.saturating_mul(*.page_size), other_page_size(*.pages, *.page_size))]
    BufferSize {
        /// What was asked for, in bytes.
        given: usize,
        /// The page size in force.
        page_size: usize,
        /// How many pages that makes.
        pages: usize,
        /// The most pages a CPU buffer can have.
        max_pages: usize,
    },
    /// A wait before a fixup too short to tell a writer that died from
    /// one that is running.
    #[error("fixup_after of {given:?} is too short: a reader would take pages out from under writers that are only running; give at least {min:?}, or None and CpuBuffer::fixup to take a page out at once")]
    FixupAfter {
        /// What was asked for.
        given: std::time::Duration,
        /// The shortest wait.
        min: std::time::Duration,
    },
    /// Zero CPU buffers were asked for.
    #[error("the ring needs at least one CPU buffer, and at most {max}; {given} were asked for")]
    Cpus {
        /// What was asked for.
        given: usize,
        /// The most buffers a ring can have.
        max: usize,
    },
    /// A mode name that is neither `overwrite` nor `discard`.
    #[error("unknown ring mode `{0}`; valid modes: overwrite, discard")]
    UnknownMode(String),
    /// More quarantine pages than page indices remain for.
    #[error("quarantine of {given} pages is too large: with {pages} pages per CPU buffer it can be at most {max}")]
    QuarantinePages {
        /// What was asked for.
        given: usize,
        /// The most the ring's shape allows.
        max: usize,
        /// Pages per CPU buffer.
        pages: usize,
    },
    /// The system refused the memory for a CPU buffer's pages.
    #[error("could not map {bytes} bytes for a CPU buffer's pages: {reason}; use fewer CPUs, a smaller per-CPU size, smaller pages or fewer quarantine pages")]
    Memory {
        /// The bytes asked for.
        bytes: usize,
        /// What the system said.
        reason: String,
    },
    /// The ring's file was given an empty path.
    #[error("the ring file's path is empty: name a file (such as trace.ring), or leave the ring in memory")]
    EmptyFilePath,
    /// The ring's file could not be created, opened or mapped.
    #[error(transparent)]
    File(#[from] crate::file::FileError),
    /// A metadata annex larger than ringtrace keeps.
    #[error("a metadata annex of {given} bytes is too large: it can be at most {max} bytes (0 for none); the records are callsite descriptions, a few hundred bytes each")]
    MetadataCapacity {
        /// What was asked for.
        given: usize,
        /// The largest capacity.
        max: usize,
    },
    /// This CPU lacks an instruction the ring needs.
    #[error("{0}")]
    Cpu(String),
    /// A write path that is unknown, or unavailable here.
    #[error(transparent)]
    WritePath(#[from] crate::WritePathError),
    /// A blocking wait asked of a ring that is not in discard mode.
    #[error("a blocking writer (block_for, --blocking-timeout) waits for room in a full discard-mode buffer; this ring is in {mode} mode, where writers never find it full: use discard mode")]
    BlockingMode {
        /// The ring's mode.
        mode: crate::Mode,
    },
    /// A blocking wait of zero or longer than ringtrace allows.
    #[error("a blocking writer's wait of {given:?} is out of range: it must be more than zero and at most {max:?}")]
    BlockFor {
        /// What was asked for.
        given: std::time::Duration,
        /// The longest wait.
        max: std::time::Duration,
    },
    /// `append` or `metadata` without `file`.
    #[error("`{0}` applies to a file ring only; set a file with RingConfig::file (--file on the command line)")]
    NeedsFile(&'static str),
    /// The ring's pages would not fit in this machine's memory.
    #[error("{cpus} CPU buffers of {pages} pages of {page_size} bytes (plus the reader's spares) need {bytes} bytes, more than this machine's {memory} bytes of memory; use fewer CPUs, a smaller per-CPU size or smaller pages")]
    TooLarge {
        /// CPU buffers asked for.
        cpus: usize,
        /// Pages per CPU buffer.
        pages: usize,
        /// The page size.
        page_size: usize,
        /// The page memory that shape needs (saturated at `usize::MAX`).
        bytes: usize,
        /// The machine's physical memory.
        memory: usize,
    },
}

/// What another page size would allow, for a buffer of `pages` pages of
/// `page_size` bytes out of range: a clause, empty where no other page
/// size helps.
fn other_page_size(pages: usize, page_size: usize) -> &'static str {
    if pages < 2 && page_size > crate::config::MIN_PAGE_SIZE {
        " (a smaller page size allows a smaller buffer)"
    } else if pages >= 2 && page_size < crate::config::MAX_PAGE_SIZE {
        " (a larger page size allows a larger buffer)"
    } else {
        ""
    }
}
