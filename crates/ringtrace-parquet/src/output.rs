//! Where the export goes, so that a failure leaves nothing half-written
//! and nothing but a previous export is ever replaced.
//!
//! The tables are written into a temporary directory beside the target,
//! `.<name>.tmp-<pid>`, renamed into place once every table is complete
//! (removed on failure). The target may be absent, an empty directory, or
//! a directory holding only a previous export's tables (each a regular
//! file that starts with Parquet's magic `PAR1`): that one is moved aside
//! to `.<name>.old-<pid>`, the new export renamed in, and the old tables
//! removed. Anything else is refused, naming what is in the way: a file
//! (a ring file of the trace among them), a link, a directory holding
//! anything else (a session directory, another tool's output).

use crate::error::ParquetError;
use crate::schema::files;
use ringtrace_export::export::RingTarget;
use ringtrace_export::Trace;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What the target holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Nothing: it is created.
    Absent,
    /// An empty directory: replaced.
    Empty,
    /// A previous export: replaced.
    Previous,
}

fn refused(dir: &Path, why: impl Into<String>) -> ParquetError {
    ParquetError::Refused {
        path: dir.to_owned(),
        why: why.into(),
    }
}

/// What `dir` holds, or why it cannot be written.
pub(crate) fn check(trace: &Trace<'_>, dir: &Path) -> Result<Existing, ParquetError> {
    if dir.file_name().is_none() {
        return Err(refused(
            dir,
            "it names no directory to create (it ends in `..` or is a root); name the export's directory",
        ));
    }
    if let Some(session) = ringtrace_export::export::session_holding(trace, dir) {
        let why = RingTarget::Session { dir: session };
        return Err(refused(dir, why.to_string()));
    }
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !parent.is_dir() {
                return Err(refused(
                    dir,
                    format!(
                        "{} is not a directory that exists: the export makes its own directory, not the ones above it; create it first",
                        parent.display()
                    ),
                ));
            }
            return Ok(Existing::Absent);
        }
        Err(e) => return Err(ParquetError::io(dir, "read the metadata of", e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refused(
            dir,
            "it is a symbolic link: an export replaces only a directory it finds there; name the directory itself",
        ));
    }
    if !meta.is_dir() {
        for p in trace.processes() {
            let ring = &p.recovery.path;
            if std::fs::metadata(ring).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()))
            {
                let why = RingTarget::Source { ring: ring.clone() };
                return Err(refused(dir, why.to_string()));
            }
        }
        let kind = if meta.is_file() {
            "a file"
        } else {
            "a special file"
        };
        return Err(refused(
            dir,
            format!("it is {kind}, not a directory: the Parquet export is a directory of five tables; name a directory"),
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| ParquetError::io(dir, "list", e))?;
    let mut any = false;
    for entry in entries {
        let entry = entry.map_err(|e| ParquetError::io(dir, "list", e))?;
        any = true;
        let name = entry.file_name();
        let path = entry.path();
        let table = files().any(|f| name == f);
        let why = if !table {
            Some("which is not a table of a ringtrace Parquet export")
        } else if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            Some("which is not a regular file")
        } else if !is_parquet(&path) {
            Some("which is not a Parquet file (no `PAR1` magic)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(refused(
                dir,
                format!(
                    "it holds {}, {why}; an export replaces only an empty directory or a previous export ({}); name another directory",
                    path.display(),
                    files().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    Ok(if any {
        Existing::Previous
    } else {
        Existing::Empty
    })
}

/// Whether `path` starts with Parquet's magic.
fn is_parquet(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"PAR1")
}

/// `.<name>.<what>-<pid>` beside `dir`, with at most the first
/// [`NAME_PREFIX`](ringtrace_export::export::output::NAME_PREFIX) bytes of
/// its name (cut at a character's start), so that the name fits any file
/// system's limit however long the target's is.
fn beside(dir: &Path, what: &str) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let whole = dir.file_name().unwrap_or_default().as_bytes();
    let mut end = whole
        .len()
        .min(ringtrace_export::export::output::NAME_PREFIX);
    while end > 0 && end < whole.len() && whole[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    let mut name = OsString::from(".");
    name.push(std::ffi::OsStr::from_bytes(&whole[..end]));
    name.push(format!(".{what}-{}", std::process::id()));
    dir.with_file_name(name)
}

/// The temporary directory the tables are written in; removed when
/// dropped unless committed, and by SIGINT, SIGTERM or SIGHUP ending the
/// process (`_registered`, dropped after `drop` has run).
pub(crate) struct Staging {
    pub tmp: PathBuf,
    target: PathBuf,
    committed: bool,
    _registered: ringtrace_export::export::interrupt::Temporary,
}

impl Staging {
    /// A new, empty temporary directory beside `dir`.
    pub fn new(dir: &Path) -> Result<Staging, ParquetError> {
        // What an export here killed earlier left (its own pid's is below).
        ringtrace_export::export::stale::remove_stale(dir);
        let tmp = beside(dir, "tmp");
        if tmp.exists() {
            // Left by a process of our pid that died: ours to remove.
            std::fs::remove_dir_all(&tmp).map_err(|e| ParquetError::io(&tmp, "remove", e))?;
        }
        let registered = ringtrace_export::export::interrupt::Temporary::dir(&tmp);
        std::fs::create_dir(&tmp).map_err(|e| ParquetError::io(&tmp, "create", e))?;
        Ok(Staging {
            tmp,
            target: dir.to_owned(),
            committed: false,
            _registered: registered,
        })
    }

    /// Renames the complete export into place, replacing what `check`
    /// found there (checked again now); warnings of what could not be
    /// cleaned up.
    pub fn commit(mut self, trace: &Trace<'_>) -> Result<Vec<String>, ParquetError> {
        let dir = self.target.clone();
        let sync = std::fs::File::open(&self.tmp).and_then(|d| d.sync_all());
        sync.map_err(|e| ParquetError::io(&self.tmp, "sync", e))?;
        let mut warnings = Vec::new();
        match check(trace, &dir)? {
            Existing::Absent | Existing::Empty => {
                std::fs::rename(&self.tmp, &dir)
                    .map_err(|e| ParquetError::io(&dir, "rename into", e))?;
            }
            Existing::Previous => {
                let old = beside(&dir, "old");
                std::fs::rename(&dir, &old).map_err(|e| {
                    ParquetError::io(&dir, "move the previous export aside from", e)
                })?;
                if let Err(e) = std::fs::rename(&self.tmp, &dir) {
                    let _ = std::fs::rename(&old, &dir);
                    return Err(ParquetError::io(&dir, "rename into", e));
                }
                // Only the tables checked: anything added since stays.
                for f in files() {
                    let _ = std::fs::remove_file(old.join(f));
                }
                if let Err(e) = std::fs::remove_dir(&old) {
                    warnings.push(format!(
                        "the previous export was moved to {} and cannot be removed: {e}",
                        old.display()
                    ));
                }
            }
        }
        self.committed = true;
        Ok(warnings)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}
