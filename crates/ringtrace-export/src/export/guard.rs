//! An export never replaces a ring file: not the one it was read from, not
//! one a ring of this process has open, not any other (by its magic),
//! whatever name or symbolic link leads to it. A flight recorder's trace is
//! not lost to a slip in an output path. Nor does it write into a ringtrace
//! session: the one it reads, or any other directory holding a session
//! index, and it replaces no session's file (an index, a chunk, a
//! process's file) wherever one was moved.

use super::{output, ExportError};
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
    /// A file of a ringtrace session, wherever it is: it starts with the
    /// magic of a session's index, chunk or process file.
    SessionFile {
        /// Where the output path leads, links resolved.
        resolved: PathBuf,
        /// Which file it is, in words ("a ringtrace session index").
        what: &'static str,
    },
    /// A path inside another ringtrace session's directory (one holding a
    /// `session` index), at any depth, or that directory itself.
    OtherSession {
        /// The session directory, links resolved.
        dir: PathBuf,
    },
}

/// The first eight bytes of the files of a ringtrace session directory,
/// with what each file is. ringtrace-session writes them; this crate does
/// not depend on it, and they are private to it, so they are copied from
/// `MAGIC` in `crates/ringtrace-session/src/index.rs` (the `session`
/// index), `chunk.rs` (every chunk, finished or open) and `process.rs`
/// (a process's `process` file); docs/format.md, "The session
/// directory", describes them.
const SESSION_FILES: [([u8; 8], &str); 3] = [
    (*b"RTSESSN\0", "a ringtrace session index"),
    (*b"RTCHUNK\0", "a ringtrace session chunk"),
    (*b"RTPROC\0\0", "a ringtrace session's process file"),
];

/// The index's name in a session directory (`INDEX` in
/// `crates/ringtrace-session/src/shared.rs`).
const SESSION_INDEX: &str = "session";

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
            RingTarget::SessionFile { resolved, what } => write!(
                f,
                "it is {what} ({}): an export never replaces a session's files; name another file",
                resolved.display()
            ),
            RingTarget::OtherSession { dir } => write!(
                f,
                "it is inside the ringtrace session directory {} (it holds a session index): an export never writes into a session (it could replace its index or a chunk); name a path outside it",
                dir.display()
            ),
        }
    }
}

/// Refuses `out` when it leads to a ring file, into the session the
/// trace was read from or any other session, or to a session's file (see
/// [`RingTarget`]). An output that does not exist yet is no ring file:
/// only where it would be is checked. A symbolic link at `out` is judged
/// by where it leads, dangling or not: that is what an export writes.
pub(crate) fn refuse_ring_target(recovery: &Recovery, out: &Path) -> Result<(), ExportError> {
    let written = output::follow_links(out).unwrap_or_else(|_| out.to_owned());
    let why = session_of(recovery, &written)
        .or_else(|| existing_target(recovery, out))
        .or_else(|| other_session(&written));
    match why {
        Some(why) => Err(ExportError::RingFile {
            path: out.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// The session `recovery` was read from, when `written` lies inside it.
fn session_of(recovery: &Recovery, written: &Path) -> Option<RingTarget> {
    let dir = session_dir(recovery)?;
    inside(written, &dir).then_some(RingTarget::Session { dir })
}

/// Which ring file or session file `out` leads to, if it exists and is
/// one.
fn existing_target(recovery: &Recovery, out: &Path) -> Option<RingTarget> {
    // Followed through every link: what a write to `out` would replace, or
    // what a link at `out` points to.
    let target = std::fs::metadata(out).ok()?;
    if let Some(ring) = file::open_in_this_process(out) {
        return Some(RingTarget::Live { ring });
    }
    if recovery.path.as_os_str() != file::MEMORY_PATH && same_file(&recovery.path, &target) {
        return Some(RingTarget::Source {
            ring: recovery.path.clone(),
        });
    }
    if !target.is_file() {
        return None;
    }
    let first = first_bytes(out)?;
    if first == MAGIC {
        return Some(RingTarget::RingFile {
            resolved: resolved(out),
        });
    }
    let (_, what) = SESSION_FILES.iter().find(|(magic, _)| first == *magic)?;
    Some(RingTarget::SessionFile {
        resolved: resolved(out),
        what,
    })
}

/// The session directory `written` lies in (or is): the nearest of it and
/// its ancestors, links and `..` resolved, that holds a session index.
fn other_session(written: &Path) -> Option<RingTarget> {
    let real = real_path(written)?;
    real.ancestors()
        .find(|dir| is_session_index(&dir.join(SESSION_INDEX)))
        .map(|dir| RingTarget::OtherSession {
            dir: dir.to_owned(),
        })
}

/// Whether `path` is a file that starts with a session index's magic.
fn is_session_index(path: &Path) -> bool {
    let (index_magic, _) = SESSION_FILES[0];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && first_bytes(path).is_some_and(|first| first == index_magic)
}

/// Whether `path` names the file `meta` describes (device and inode).
fn same_file(path: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()))
}

/// The first eight bytes of the file at `path`, where it has as many:
/// every magic checked here is eight bytes (the comparisons of these
/// arrays would not compile otherwise).
fn first_bytes(path: &Path) -> Option<[u8; 8]> {
    let mut first = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut first))
        .ok()
        .map(|()| first)
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
    real_path(path).is_some_and(|real| real.starts_with(&dir))
}

/// `path` made absolute, with its links and `..` resolved as far as it
/// exists: the deepest part of it that exists, resolved, then the rest.
/// `None` where that cannot be told (a `..` or a root that does not
/// resolve, no working directory).
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut at = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    loop {
        if let Ok(mut whole) = std::fs::canonicalize(&at) {
            whole.extend(rest.iter().rev());
            return Some(whole);
        }
        let name = at.file_name()?.to_owned();
        rest.push(name);
        at = at.parent()?.to_owned();
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
    let out = &output::follow_links(out).unwrap_or_else(|_| out.to_owned());
    trace
        .processes()
        .iter()
        .filter_map(|p| session_dir(p.recovery))
        .find(|dir| inside(out, dir))
}
