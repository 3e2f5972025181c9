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
    /// A path inside the session directory the trace was read from: its
    /// index, a chunk, a process's file, or a new file among them.
    Session {
        /// The session directory, as the trace names it.
        dir: PathBuf,
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
            RingTarget::Session { dir } => write!(
                f,
                "it is inside the session directory {}, which the trace was read from: an export never writes into a session (it could replace its index or a chunk); name a path outside it",
                dir.display()
            ),
        }
    }
}

/// Refuses `out` when it leads to a ring file, or into the session the
/// trace was read from (see [`RingTarget`]). An output that does not
/// exist yet is no ring file: only where it would be is checked.
pub(crate) fn refuse_ring_target(recovery: &Recovery, out: &Path) -> Result<(), ExportError> {
    let refused = |why| ExportError::RingFile {
        path: out.to_owned(),
        why,
    };
    if let Some(dir) = session_dir(recovery) {
        if inside(out, &dir) {
            return Err(refused(RingTarget::Session { dir }));
        }
    }
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

/// The session directory a recovery was read from: a session's process is
/// read from its directory in the session (a ring file's path is a file).
fn session_dir(recovery: &Recovery) -> Option<PathBuf> {
    if recovery.path.as_os_str() == file::MEMORY_PATH || !recovery.path.is_dir() {
        return None;
    }
    recovery.path.parent().map(Path::to_owned)
}

/// Whether `path`, once its links and `..` are resolved as far as it
/// exists, lies inside the directory `dir` (or is it).
fn inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    // The deepest part of `path` that exists, resolved, then the rest.
    let mut rest = Vec::new();
    let mut at = if path.is_absolute() {
        path.to_owned()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => return false,
        }
    };
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            let mut whole = real;
            for part in rest.iter().rev() {
                whole.push(part);
            }
            return whole.starts_with(&dir);
        }
        match (at.file_name().map(std::ffi::OsStr::to_owned), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_owned();
            }
            // A `..` or a root that does not resolve: nothing to compare.
            _ => return false,
        }
    }
}

/// The session directory of `trace` that `out` lies inside, if any: an
/// export (of any format, a directory of tables included) never writes
/// there, whether `out` exists or not.
///
/// ```
/// use ringtrace_export::export::session_holding;
/// use ringtrace_export::{Alignment, Trace};
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("rt-holding-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(dir.join("a.ring"));
/// drop(RingBuffer::new(config, ringtrace_clock::Counter::new())?);
/// let recoveries = [file::recover(dir.join("a.ring"))?];
/// let trace = Trace::new(&recoveries, Alignment::SharedClock)?;
/// // A ring file is no session: only exports over it are refused.
/// assert_eq!(session_holding(&trace, &dir.join("out.json")), None);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn session_holding(trace: &crate::Trace<'_>, out: &Path) -> Option<PathBuf> {
    trace
        .processes()
        .iter()
        .filter_map(|p| session_dir(p.recovery))
        .find(|dir| inside(out, dir))
}
