//! Temporary outputs removed when SIGINT, SIGTERM or SIGHUP ends the
//! process, so that an interrupted export leaves nothing behind.
//!
//! An export builds its output under a hidden temporary name (see
//! [`output`](super::output)) and removes it on any error; but a signal
//! whose default action ends the process runs no destructor. So each
//! temporary path is registered, while it exists, as a [`Temporary`]:
//!
//! - `registry`: a fixed table of the paths in use, which a signal
//!   handler can read without allocating or locking.
//! - `handler`: the handler for the three signals, installed only while
//!   a path is registered, and only over their default action: a signal
//!   ignored (`nohup`) or handled by the program is left as it is. It
//!   removes every registered path, restores the default action and
//!   raises the signal again, so the process still ends as killed by it
//!   (a shell's 130 for SIGINT).
//! - `remove`: the removal itself, with async-signal-safe calls only; a
//!   directory is emptied first (the exports' temporary directories are
//!   flat).
//!
//! A path is registered before it is created and unregistered after it
//! is renamed into place or removed, so no moment of its life is
//! unguarded; a signal in between finds nothing there, and removes
//! nothing. At most [`SLOTS`] paths are registered at once;
//! beyond that an output is written as before, just not removed by a
//! signal. SIGKILL, and a crash, still leave a temporary output: nothing
//! runs then.

// Under loom (`--cfg loom`) the registry alone is built, as the model in
// tests/loom_interrupt.rs uses it: no process-wide table, no handler.
#[cfg(not(loom))]
mod handler;
mod registry;
#[cfg(not(loom))]
mod remove;

use registry::Kind;
pub use registry::SLOTS;
#[cfg(not(loom))]
use registry::{Entry, REGISTRY};
use std::path::Path;

/// A temporary output (a file or a directory) registered, while this is
/// alive, for removal should SIGINT, SIGTERM or SIGHUP end the process.
///
/// Create it before the path is created; drop it once the path is
/// renamed into place or removed. Dropping it removes nothing.
///
/// ```
/// use ringtrace_export::export::interrupt::Temporary;
/// let dir = std::env::temp_dir().join(format!("ringtrace-temporary-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let (tmp, out) = (dir.join(".out.tmp"), dir.join("out"));
/// let guard = Temporary::file(&tmp);
/// std::fs::write(&tmp, b"whole")?;
/// std::fs::rename(&tmp, &out)?;
/// drop(guard);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "the path is unregistered when this is dropped"]
pub struct Temporary {
    /// Its slot in the registry; `None` when it could not be registered
    /// (the registry full, a path with a NUL byte).
    slot: Option<usize>,
}

impl Temporary {
    /// Registers the temporary file `path` (made absolute against the
    /// current directory, so that a later `chdir` does not move it).
    pub fn file(path: &Path) -> Temporary {
        Temporary::new(path, Kind::File)
    }

    /// Registers the temporary directory `path`: a signal removes the
    /// files in it, then the directory.
    pub fn dir(path: &Path) -> Temporary {
        Temporary::new(path, Kind::Dir)
    }

    #[cfg(not(loom))]
    fn new(path: &Path, kind: Kind) -> Temporary {
        let slot = Entry::new(path, kind).and_then(|entry| REGISTRY.insert(entry));
        if slot.is_some() {
            handler::arm();
        }
        Temporary { slot }
    }

    /// Under loom: nothing registered (there is no process-wide table).
    #[cfg(loom)]
    fn new(_: &Path, _: Kind) -> Temporary {
        Temporary { slot: None }
    }

    /// Whether a signal would remove the path: false when it could not be
    /// registered (as many as [`SLOTS`] already are).
    pub fn is_registered(&self) -> bool {
        self.slot.is_some()
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        if let Some(slot) = self.slot {
            REGISTRY.release(slot);
            handler::disarm();
        }
    }
}
