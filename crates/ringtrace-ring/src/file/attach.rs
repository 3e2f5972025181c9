//! A ring file opened by another process to drain it while its writer
//! runs: a recorder streaming the ring to disk.
//!
//! The drainer maps the file shared, read-write (its reads consume by a
//! compare-and-swap on the slot words), builds a reader over each CPU's
//! words as they are, and never writes anything else: no repair, no
//! fixup, no page swap (it owns no page; see `read::drain`). It holds an
//! exclusive advisory lock (`flock`) on the file while open, so that two
//! drainers never split one ring's events between them.

use super::error::FileError;
use super::header::FileHeader;
use super::read::Source;
use super::recover::WriterState;
use crate::config::RingConfig;
use crate::cpu_buffer::CpuBuffer;
use crate::page::memory::CpuMemory;
use crate::page::zeroed::{ZeroedBox, ZeroedSlice};
use crate::stats::Stats;
use crate::sync::{AtomicU64, Ordering};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A ring file opened to drain it, its writer alive or not: each CPU
/// buffer's [`read_committed`](CpuBuffer::read_committed) consumes its
/// committed events, in place, freeing a discard-mode ring's pages for
/// its writers as a reader of their own would.
///
/// ```
/// use ringtrace_ring::{file::LiveFile, Mode, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-live-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("app.ring");
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024).mode(Mode::Discard).file(&path);
/// let ring = RingBuffer::new(config, ringtrace_clock::Counter::new())?;
/// ring.cpu_writer(0).write(b"streamed")?;
/// // In the recorder's process (here the same one):
/// let live = LiveFile::open(&path)?;
/// let page = live.cpu_buffers()[0].read_committed().unwrap();
/// assert_eq!(page.events().next().unwrap().1, b"streamed");
/// assert_eq!(live.header().clock.name, "counter");
/// drop(live);
/// # drop(ring);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LiveFile {
    path: PathBuf,
    header: FileHeader,
    metadata: Result<Vec<u8>, super::UnreadableMetadata>,
    source: Source,
    buffers: Vec<CpuBuffer>,
    /// The annex's committed-length word in the map (`None` without an
    /// annex): read after every page a drain takes, so a load, not a
    /// system call.
    annex_word: Option<ZeroedBox<AtomicU64>>,
    /// Keeps the words the buffers point into mapped.
    _map: Arc<memmap2::MmapMut>,
    /// Holds the drainer's lock (released when the file closes).
    _lock: std::fs::File,
}

impl LiveFile {
    /// Opens the ring file at `path` to drain it. Errors name the file and
    /// what is wrong: not a ring file, a damaged header, a version this
    /// build does not write (3), a file cut short, or another drainer
    /// holding it.
    pub fn open(path: impl AsRef<Path>) -> Result<LiveFile, FileError> {
        let path = path.as_ref();
        let file = super::read::open_read_write(path)?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(FileError::Mismatch {
                path: path.to_owned(),
                what: "another drainer (a `ringtrace record`) holds it".into(),
            });
        }
        let lock = file
            .try_clone()
            .map_err(|e| FileError::io(path, "opened", e))?;
        let source = Source::checked(file, path)?;
        let (header, metadata) = source.header(path)?;
        let mismatch = |what: String| FileError::Mismatch {
            path: path.to_owned(),
            what,
        };
        if header.version != super::VERSION {
            return Err(mismatch(format!(
                "it is a format version {} file; this build drains version {} files only (read it with `ringtrace recover`)",
                header.version,
                super::VERSION
            )));
        }
        if source.len != header.layout.file_len {
            return Err(mismatch(format!(
                "it is {} bytes long, its header says {} (read what is left with `ringtrace recover`)",
                source.len, header.layout.file_len
            )));
        }
        let geometry = RingConfig::default()
            .cpus(header.cpus)
            .page_size(header.page_size)
            .per_cpu_bytes(header.pages_per_cpu * header.page_size)
            .quarantine_pages(header.quarantine_pages)
            .metadata_capacity(usize::try_from(header.layout.annex_capacity).unwrap_or(usize::MAX))
            .mode(header.mode)
            .validate()
            .map_err(|e| mismatch(format!("its ring cannot be this build's: {e}")))?;
        let layout =
            super::FileLayout::for_geometry(&geometry, header.layout.metadata_len as usize);
        if layout.as_ref() != Some(&header.layout) {
            return Err(mismatch(
                "its layout differs from this build's (written by another build or machine)".into(),
            ));
        }
        // Before the control words are looked at: while its writer sets it
        // up, they are not yet what they will be.
        match source.status(path)? {
            Some(super::STATUS_OPEN | super::STATUS_CLOSED | super::STATUS_EXITED) => {}
            _ => {
                return Err(mismatch(format!(
                    "{} (process {}) is still setting it up: open it once it has",
                    header.comm, header.pid
                )))
            }
        }
        let len = usize::try_from(header.layout.file_len)
            .map_err(|_| mismatch("it does not fit in memory's address space".into()))?;
        let file = source
            .file_ref()
            .ok_or_else(|| mismatch("it is not a file".into()))?;
        // SAFETY: a shared map of a ring file, as its writer maps it: every
        // access to the ring's words goes through atomics (the writer's
        // process and this one agree on the layout, checked above). The
        // file must not be truncated while mapped, as for the writer.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(file) }
            .map_err(|e| FileError::io(path, "mapped", e))?;
        let map = Arc::new(map);
        let mut buffers = Vec::with_capacity(header.cpus);
        for cpu in 0..header.cpus {
            let memory = CpuMemory::in_file(&map, header.layout.cpu_offsets(cpu), &geometry)
                .map_err(|e| FileError::Io {
                    path: path.to_owned(),
                    action: "mapped",
                    reason: e.reason,
                })?;
            super::adopt::check_memory(&memory, &geometry).map_err(|why| {
                mismatch(format!("CPU {cpu}'s control words are inconsistent: {why}"))
            })?;
            buffers.push(CpuBuffer::drainer(cpu, geometry, memory));
        }
        let annex_word = annex_word(&map, &header.layout).map_err(|reason| FileError::Io {
            path: path.to_owned(),
            action: "mapped",
            reason,
        })?;
        Ok(LiveFile {
            path: path.to_owned(),
            header,
            metadata,
            source,
            buffers,
            annex_word,
            _map: map,
            _lock: lock,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its header: geometry, clock, wall-clock anchor, writer.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The metadata it was made with (the event descriptions), or what is
    /// wrong with it.
    pub fn metadata(&self) -> Result<&[u8], &super::UnreadableMetadata> {
        self.metadata.as_deref()
    }

    /// The metadata records appended so far (the annex), in order, and
    /// what is wrong with the annex in words. Read the annex after the
    /// events that need its records: a writer appends a record before
    /// the events that use it.
    pub fn metadata_records(&self) -> Result<(Vec<Vec<u8>>, Vec<String>), FileError> {
        let annex = super::annex::read(&self.source, &self.header, &self.path)?;
        Ok((annex.records, annex.problems))
    }

    /// The metadata annex's committed length now (bytes of whole records):
    /// it grows with every record the writer appends, so a drainer reads
    /// the records again only when it changed. 0 without an annex.
    pub fn metadata_len(&self) -> u64 {
        // Acquire: pairs with the writer's Release store of the word
        // (`order::ANNEX_COMMITTED`), so the records it covers are in the
        // file before a drain reads them (`metadata_records`, whose reads
        // come after this load).
        self.annex_word
            .as_ref()
            .map_or(0, |word| word.load(Ordering::Acquire))
    }

    /// One reader per CPU buffer; use
    /// [`read_committed`](CpuBuffer::read_committed) and
    /// [`stats`](CpuBuffer::stats) (the other readers take pages out of
    /// the ring, which a drainer must not do: they find none).
    pub fn cpu_buffers(&self) -> &[CpuBuffer] {
        &self.buffers
    }

    /// Every CPU's counters, summed.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for b in &self.buffers {
            total.add(&b.stats());
        }
        total
    }

    /// Whether the writing process still runs (not a zombie, its pid not
    /// reused by another command).
    pub fn writer_running(&self) -> bool {
        super::process_alive(self.header.pid, &self.header.comm)
    }

    /// The writer's state now: live, closed (it dropped its ring), exited
    /// (its process exited normally with the ring alive), died (its
    /// process is gone and the file still open: a crash or a kill), or
    /// still being set up (also when the file cannot be read).
    pub fn writer(&self) -> WriterState {
        super::recover::writer_state(&self.source, &self.path, &self.header)
            .unwrap_or(WriterState::SettingUp)
    }
}

/// The annex's committed-length word in `map`, laid out by `layout`, or
/// `None` when the file has no annex.
fn annex_word(
    map: &Arc<memmap2::MmapMut>,
    layout: &super::FileLayout,
) -> Result<Option<ZeroedBox<AtomicU64>>, String> {
    if layout.annex_capacity == 0 {
        return Ok(None);
    }
    let at = usize::try_from(layout.annex_offset).map_err(|e| e.to_string())?;
    let failed = |e: crate::page::zeroed::ZeroedError| e.reason;
    let slice = ZeroedSlice::in_file(map, at, 1).map_err(failed)?;
    ZeroedBox::from_slice(slice).map(Some).map_err(failed)
}
