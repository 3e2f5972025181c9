//! An export never replaces a ring file: not the one it was read from, not
//! one a ring of this process has open, not any other (by its magic),
//! whatever name or symbolic link leads to it. A flight recorder's trace is
//! not lost to a slip in an output path.

use super::ExportError;
use ringtrace_ring::file::{self, Recovery, MAGIC};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why an output path is refused: it leads to a ring file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingTarget {
    /// The ring file the exported trace was read from.
    Source {
        /// The ring file, as the trace names it.
        ring: PathBuf,
    },
    /// The file of a ring this process has open (a live tracer's flight
    /// recorder).
    Live {
        /// The ring file, as its ring opened it.
        ring: PathBuf,
    },
    /// Another ring file: it starts with the ring files' magic.
    RingFile {
        /// Where the output path leads, links resolved.
        resolved: PathBuf,
    },
}

impl std::fmt::Display for RingTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingTarget::Source { ring } => write!(
                f,
                "it is the ring file {} itself, which the trace was read from: exporting would overwrite the trace; name another file",
                ring.display()
            ),
            RingTarget::Live { ring } => write!(
                f,
                "it is the ring file {} that a ring of this process has open: exporting would replace the live flight recorder; name another file",
                ring.display()
            ),
            RingTarget::RingFile { resolved } => write!(
                f,
                "it is a ring file ({}): an export does not replace one; remove it first or name another file",
                resolved.display()
            ),
        }
    }
}

/// Refuses `out` when it leads to a ring file (see [`RingTarget`]). An
/// output that does not exist yet is no ring file: nothing is checked
/// beyond its name.
pub(crate) fn refuse_ring_target(recovery: &Recovery, out: &Path) -> Result<(), ExportError> {
    let refused = |why| ExportError::RingFile {
        path: out.to_owned(),
        why,
    };
    // Followed through every link: what a write to `out` would replace, or
    // what a link at `out` points to.
    let Ok(target) = std::fs::metadata(out) else {
        return Ok(());
    };
    if let Some(ring) = file::open_in_this_process(out) {
        return Err(refused(RingTarget::Live { ring }));
    }
    if recovery.path.as_os_str() != file::MEMORY_PATH && same_file(&recovery.path, &target) {
        return Err(refused(RingTarget::Source {
            ring: recovery.path.clone(),
        }));
    }
    if target.is_file() && starts_with_magic(out) {
        return Err(refused(RingTarget::RingFile {
            resolved: resolved(out),
        }));
    }
    Ok(())
}

/// Whether `path` names the file `meta` describes (device and inode).
fn same_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()))
}

/// Whether the file at `path` starts with a ring file's magic.
fn starts_with_magic(path: &Path) -> bool {
    let mut first = [0u8; MAGIC.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut first))
        .is_ok_and(|()| first == MAGIC)
}

/// `path` with its links resolved (it exists: its metadata was read).
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}
