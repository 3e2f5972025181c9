//! Creating a ring file, or opening one to append to, and mapping it.

use super::error::FileError;
use super::header::{fnv1a64, FileClock, FileHeader, VERSION};
use super::layout::{FileLayout, EXIT_WORDS, STATUS_OFFSET};
use super::read::Source;
use super::FileTarget;
use crate::config::Geometry;
use crate::page::memory::CpuMemory;
use crate::page::zeroed::ZeroedSlice;
use crate::sync::{AtomicU64, Ordering};
use ringtrace_clock::ClockInfo;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::at_exit::StatusWord;
use super::{STATUS_OPEN, STATUS_SETTING_UP};

/// A mapped ring file, held by its ring.
#[derive(Debug)]
pub(crate) struct RingFile {
    pub path: PathBuf,
    map: Arc<memmap2::MmapMut>,
    /// Also marked at a normal process exit (see `at_exit`).
    status: Arc<StatusWord>,
    /// Device and inode, while this ring has the file (see `open_here`).
    id: (u64, u64),
}

/// What the ring needs to build its buffers over a file.
pub(crate) struct Opened {
    pub file: RingFile,
    pub memory: Vec<CpuMemory>,
    /// The file's metadata annex, with the records an earlier run left.
    pub annex: crate::annex::Annex,
    /// The file held a ring already (append): take it over as it is.
    pub adopt: bool,
    /// The anchor the file's header holds: the writer's, or an appended
    /// file's own.
    pub anchor: super::WallAnchor,
}

/// What the header records about the writer, gathered by the ring.
pub(crate) struct Writer<'a> {
    pub clock: &'a ClockInfo,
    /// Read as the ring opens; an appended file keeps its own.
    pub anchor: super::WallAnchor,
}

pub(crate) fn comm() -> String {
    // Miri's isolation has no /proc; a ring in memory under Miri is
    // still worth checking, and an empty name is what a failed read gives.
    if cfg!(miri) {
        return String::new();
    }
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_default()
}

/// Reserves the file's blocks now: a write through the map into a hole
/// needs a block, and with the disk full the kernel's answer is SIGBUS in
/// the writer, mid-event. Better refused here, with the reason. A file
/// system that cannot reserve (EOPNOTSUPP) leaves the file sparse.
fn reserve_disk(file: &std::fs::File, len: u64, path: &Path) -> Result<(), FileError> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Ok(());
    };
    // SAFETY: the descriptor is open for writing and owned by `file`;
    // posix_fallocate only reserves blocks in it.
    let err = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match err {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(FileError::io(
            path,
            "given its disk space",
            std::io::Error::from_raw_os_error(e),
        )),
    }
}

/// Removes the file at its path when dropped, unless forgotten: the
/// guard of a file `RingFile::open` created until it is set up.
struct RemoveUnlessKept<'a>(&'a Path);

impl Drop for RemoveUnlessKept<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

impl RingFile {
    /// Creates (or, with `append`, opens) the file of `target` for a ring of
    /// `geometry`, and maps it.
    pub(crate) fn open(
        target: &FileTarget,
        geometry: &Geometry,
        writer: Writer<'_>,
    ) -> Result<Opened, FileError> {
        let path = target.path.as_path();
        let layout =
            FileLayout::for_geometry(geometry, target.metadata.len()).ok_or_else(|| {
                FileError::Header {
                    path: path.to_owned(),
                    field: "layout",
                    why: "the ring's size overflows a file offset".into(),
                }
            })?;
        let header = FileHeader {
            version: VERSION,
            page_size: geometry.page_size,
            pages_per_cpu: geometry.pages_per_cpu,
            cpus: geometry.cpus,
            quarantine_pages: geometry.quarantine_pages,
            mode: geometry.mode,
            layout,
            clock: FileClock::from_info(writer.clock),
            wall_ns: writer.anchor.wall_ns,
            anchor_ticks: writer.anchor.ticks,
            pid: std::process::id(),
            comm: comm(),
            metadata_checksum: fnv1a64(&target.metadata),
        };
        let created = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path);
        let (file, adopt) = match created {
            Ok(file) => (file, false),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let kind = std::fs::symlink_metadata(path).map(|m| m.file_type());
                if kind.as_ref().is_ok_and(|k| k.is_symlink()) {
                    return Err(FileError::Symlink {
                        path: path.to_owned(),
                    });
                }
                if let Some(k) = kind.as_ref().ok().filter(|k| !k.is_file()) {
                    return Err(FileError::NotRegular {
                        path: path.to_owned(),
                        kind: super::error::kind_of(*k),
                    });
                }
                if !target.append {
                    return Err(FileError::Exists {
                        path: path.to_owned(),
                    });
                }
                (Self::open_existing(path, &header, &target.metadata)?, true)
            }
            Err(e) => return Err(FileError::io(path, "created", e)),
        };
        // A file made here and then refused (no disk space, no map) is
        // removed: a failed ring leaves nothing in the way of the next try.
        let made = (!adopt).then(|| RemoveUnlessKept(path));
        let len = usize::try_from(layout.file_len).map_err(|_| FileError::Header {
            path: path.to_owned(),
            field: "layout",
            why: format!(
                "{} bytes do not fit in memory's address space",
                layout.file_len
            ),
        })?;
        if !adopt {
            file.set_len(layout.file_len)
                .map_err(|e| FileError::io(path, "sized", e))?;
            reserve_disk(&file, layout.file_len, path)?;
        }
        // SAFETY: the file is ours, opened read-write; other processes may
        // map it too (a reader, or a dump), which is the point of a shared
        // map. Every access to the ring's part goes through atomics; the
        // header is written below while we hold the only reference.
        let mut map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(&file) }
            .map_err(|e| FileError::io(path, "mapped", e))?;
        let encoded = header.encode();
        let meta_at = layout.metadata_offset as usize;
        let mut anchor = writer.anchor;
        if !adopt {
            map[..encoded.len()].copy_from_slice(&encoded);
            map[meta_at..meta_at + target.metadata.len()].copy_from_slice(&target.metadata);
        } else {
            // The new writer's pid and command; the layout and clock were
            // checked equal, and the anchor stays, so old events keep
            // their wall-clock times.
            let mut kept = header.clone();
            let old = Source::checked(
                file.try_clone()
                    .map_err(|e| FileError::io(path, "opened", e))?,
                path,
            )?
            .header(path)?
            .0;
            kept.wall_ns = old.wall_ns;
            kept.anchor_ticks = old.anchor_ticks;
            anchor = super::WallAnchor {
                wall_ns: old.wall_ns,
                ticks: old.anchor_ticks,
            };
            kept.metadata_checksum = old.metadata_checksum;
            let encoded = kept.encode();
            map[..encoded.len()].copy_from_slice(&encoded);
        }
        let map = Arc::new(map);
        let failed = |e: crate::page::zeroed::ZeroedError| FileError::Io {
            path: path.to_owned(),
            action: "mapped",
            reason: e.reason,
        };
        // The status word and the exit record after it.
        let status_words: ZeroedSlice<AtomicU64> =
            ZeroedSlice::in_file(&map, STATUS_OFFSET, 1 + EXIT_WORDS).map_err(failed)?;
        if !adopt {
            // Relaxed: nothing is shared yet; `set_open` publishes.
            status_words[0].store(STATUS_SETTING_UP, Ordering::Relaxed);
        }
        // Checked before anything is changed, as the CPUs' words are below.
        // A descriptor of its own for the annex's record lock (a failure
        // only leaves appends unlocked against forked processes).
        let annex = super::annex::in_map(&map, &layout, file.try_clone().ok()).map_err(|why| {
            if adopt {
                FileError::Mismatch {
                    path: path.to_owned(),
                    what: format!(
                        "its metadata annex is damaged: {why}; read it with `ringtrace recover` and start a new file"
                    ),
                }
            } else {
                FileError::Io {
                    path: path.to_owned(),
                    action: "mapped",
                    reason: why,
                }
            }
        })?;
        let memory = (0..geometry.cpus)
            .map(|cpu| CpuMemory::in_file(&map, layout.cpu_offsets(cpu), geometry))
            .collect::<Result<Vec<_>, _>>()
            .map_err(failed)?;
        if adopt {
            // Every CPU's words checked before any is changed.
            for (cpu, m) in memory.iter().enumerate() {
                super::adopt::check_memory(m, geometry).map_err(|why| FileError::Mismatch {
                    path: path.to_owned(),
                    what: format!(
                        "CPU {cpu}'s control words are inconsistent: {why}; read it with `ringtrace recover` and start a new file"
                    ),
                })?;
            }
        }
        let id = super::open_here::id_of(
            &file
                .metadata()
                .map_err(|e| FileError::io(path, "examined", e))?,
        );
        if !super::open_here::register(id, path) {
            return Err(FileError::Mismatch {
                path: path.to_owned(),
                what: "a ring of this process has it open already (two rings over one file would corrupt each other)".into(),
            });
        }
        std::mem::forget(made);
        Ok(Opened {
            file: RingFile {
                path: path.to_owned(),
                map,
                status: StatusWord::new(status_words),
                id,
            },
            memory,
            annex,
            adopt,
            anchor,
        })
    }

    /// Opens an existing file to append to: a regular file holding a ring
    /// of the same shape and clock, whose writer is gone.
    fn open_existing(
        path: &Path,
        want: &FileHeader,
        metadata: &[u8],
    ) -> Result<std::fs::File, FileError> {
        let file = super::read::open_read_write(path)?;
        let source = Source::checked(file, path)?;
        let (have, have_metadata) = source.header(path)?;
        let mismatch = |what: String| FileError::Mismatch {
            path: path.to_owned(),
            what,
        };
        if have.version != VERSION {
            return Err(mismatch(format!(
                "it is a format version {} file; this build appends to version {VERSION} files only (version 1 has no metadata annex, version 2 no per-page hits): start a new file (`ringtrace recover` still reads the old one)",
                have.version
            )));
        }
        let shape = |h: &FileHeader| {
            format!(
                "{} CPU{} x {} pages of {} bytes, {} quarantine pages, {} mode",
                h.cpus,
                if h.cpus == 1 { "" } else { "s" },
                h.pages_per_cpu,
                h.page_size,
                h.quarantine_pages,
                h.mode
            )
        };
        if (
            have.cpus,
            have.pages_per_cpu,
            have.page_size,
            have.quarantine_pages,
            have.mode,
        ) != (
            want.cpus,
            want.pages_per_cpu,
            want.page_size,
            want.quarantine_pages,
            want.mode,
        ) {
            return Err(mismatch(format!(
                "its ring is {}; this one would be {}",
                shape(&have),
                shape(want)
            )));
        }
        // The length first: a file cut short also reads as damaged
        // metadata, which would blame the wrong thing.
        if source.len != have.layout.file_len {
            return Err(mismatch(format!(
                "it is {} bytes long, its header says {}: {}",
                source.len,
                have.layout.file_len,
                if source.len < have.layout.file_len {
                    "it was cut short (read what is left with `ringtrace recover`)"
                } else {
                    "something was added to its end"
                }
            )));
        }
        if have_metadata.as_deref().ok() != Some(metadata) {
            return Err(mismatch(format!(
                "its metadata (the event descriptions, {} bytes) differs from this ring's ({} bytes), or is damaged",
                have.layout.metadata_len,
                metadata.len()
            )));
        }
        if have.layout.annex_capacity != want.layout.annex_capacity {
            return Err(mismatch(format!(
                "its metadata annex holds {} bytes of records, this ring's would hold {} (RingConfig::metadata_capacity): use the file's",
                have.layout.annex_capacity, want.layout.annex_capacity
            )));
        }
        if have.layout != want.layout {
            return Err(mismatch(
                "its layout differs from this build's (written by another build or machine)".into(),
            ));
        }
        if have.clock.name != want.clock.name {
            return Err(mismatch(format!(
                "its events are stamped by clock `{}`, this ring's by `{}`",
                have.clock.name, want.clock.name
            )));
        }
        if source.status(path)? == Some(STATUS_OPEN)
            && super::process_alive(have.pid, &have.comm)
            && have.pid != std::process::id()
        {
            return Err(mismatch(format!(
                "process {} ({}) may still be writing it",
                have.pid, have.comm
            )));
        }
        source.file.into_file().ok_or_else(|| FileError::Io {
            path: path.to_owned(),
            action: "opened",
            reason: "not a file".into(),
        })
    }

    /// Marks the file open for writers: from now on a crash leaves a ring,
    /// and a normal exit of the process marks it exited if nothing dropped
    /// it.
    pub(crate) fn set_open(&self) {
        self.status.set_open();
    }

    /// Hands the exit handler the ring's clock, for the time of a normal
    /// exit (see `at_exit`).
    ///
    /// # Safety
    ///
    /// - `clock` stays alive, at its address, until this `RingFile` is
    ///   dropped.
    pub(crate) unsafe fn set_exit_clock<C: ringtrace_clock::Clock>(&self, clock: &C) {
        // SAFETY: the caller's promise is `set_clock`'s: this file's drop
        // is the status's `close`.
        unsafe { self.status.set_clock(clock) };
    }

    /// Asks the system to write the file's dirty pages to disk and waits.
    pub(crate) fn sync(&self) -> std::io::Result<()> {
        self.map.flush()
    }
}

impl Drop for RingFile {
    fn drop(&mut self) {
        super::open_here::unregister(self.id);
        // Nothing writes the ring any more (dropping takes `&mut`), so
        // every commit is in the file before the mark. A ring that failed
        // while being set up keeps `SETTING_UP`, and one the exit handler
        // marked keeps `EXITED`. The exit handler gets no clock after this.
        self.status.close();
        // Unmapping leaves the dirty pages to the page cache, which writes
        // them back on its own.
    }
}
