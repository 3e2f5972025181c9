//! The ring files this process has open: a second ring over one file would
//! share its words with the first and corrupt both (the pid check cannot
//! tell: the pid is ours), and an export written over one would replace a
//! live flight recorder. A ring registers its file once it is set up and
//! removes it when dropped; a ring leaked or forgotten keeps its file here
//! for good.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// One open ring file: its device and inode (what identifies it through
/// any name or link), and the path its ring opened it by, made absolute.
#[derive(Debug, Clone)]
struct Entry {
    id: (u64, u64),
    path: PathBuf,
}

static OPEN_HERE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn open_here() -> MutexGuard<'static, Vec<Entry>> {
    // A panic while the list was held left it whole (each change is one
    // push or one retain): the list is still right.
    OPEN_HERE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Device and inode of `meta`.
pub(crate) fn id_of(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Registers the file `id` opened by `path`; `false` (and nothing changed)
/// when a ring of this process has it open already.
pub(crate) fn register(id: (u64, u64), path: &Path) -> bool {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mut here = open_here();
    if here.iter().any(|e| e.id == id) {
        return false;
    }
    here.push(Entry { id, path });
    true
}

/// Removes the file `id`, its ring dropped.
pub(crate) fn unregister(id: (u64, u64)) {
    open_here().retain(|e| e.id != id);
}

/// The ring file a ring of this process has open at `path`, through any
/// name, hard link or symbolic link to it: the path its ring opened it by
/// (absolute), or `None` when `path` is no such file (or names nothing).
///
/// ```
/// use ringtrace_clock::Counter;
/// use ringtrace_ring::{file, RingBuffer, RingConfig};
/// let dir = std::env::temp_dir().join(format!("ringtrace-open-here-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("app.ring");
/// let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path), Counter::new())?;
/// assert!(file::open_in_this_process(&path).is_some());
/// drop(ring);
/// assert!(file::open_in_this_process(&path).is_none());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_in_this_process(path: &Path) -> Option<PathBuf> {
    let id = id_of(&std::fs::metadata(path).ok()?);
    open_here()
        .iter()
        .find(|e| e.id == id)
        .map(|e| e.path.clone())
}
