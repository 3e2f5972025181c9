//! What every writer of one session shares: its directory, options, lock,
//! the index being kept, and the finished chunks on disk (for
//! `max_size`). The index is rewritten by rename under the same lock that
//! guards it, so rewrites never interleave.

use crate::error::WriteError;
use crate::fsutil;
use crate::index::{self, Index, RotatedOut};
use crate::open_chunk::Done;
use crate::options::SessionOptions;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The index's file name.
pub(crate) const INDEX: &str = "session";
/// The lock's file name.
pub(crate) const LOCK: &str = "session.lock";
/// The directory traced programs create their ring files in.
pub(crate) const RINGS: &str = "rings";
/// Space held back while the session is written, given up to write the
/// index when the file system is full, so that the index can still say
/// what could not be written.
pub(crate) const RESERVE: &str = "session.reserve";
/// Its size.
pub(crate) const RESERVE_LEN: usize = 64 << 10;
/// What a `process` file's last rewrite may take of the reserve on a full
/// file system (a file system block or a tmpfs page, with room to spare),
/// so that the session says how each process ended; half the reserve is
/// always kept for the final index.
const RESERVE_STEP: u64 = 8 << 10;

/// A finished chunk still on disk.
#[derive(Debug, Clone)]
struct Kept {
    /// Wall-clock ns of its last event (or of its finish, for a clock
    /// whose ticks are not time): the oldest go first.
    key: u64,
    process: usize,
    cpu: usize,
    done: Done,
}

/// The mutable part.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub index: Index,
    kept: Vec<Kept>,
    kept_bytes: u64,
}

/// One session's shared writer state.
#[derive(Debug)]
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub options: SessionOptions,
    /// Held (flock) until the session is finished.
    lock: Mutex<Option<File>>,
    state: Mutex<State>,
}

impl Shared {
    pub fn new(dir: PathBuf, options: SessionOptions, lock: File) -> Shared {
        let index = Index {
            options: options.clone(),
            ..Index::default()
        };
        Shared {
            dir,
            options,
            lock: Mutex::new(Some(lock)),
            state: Mutex::new(State {
                index,
                ..State::default()
            }),
        }
    }

    /// The state, whatever a panicking holder left (its counts stay
    /// usable: each update is a few additions).
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets the lock go: the session is finished.
    pub fn unlock(&self) {
        let _ = std::fs::remove_file(self.dir.join(RESERVE));
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Gives up [`RESERVE_STEP`] bytes of the reserve, for a small write
    /// the full file system refused to be tried again (a process's last
    /// `process` file): whether any was given up. Half the reserve is
    /// never given up this way: it is the final index's.
    pub fn give_up_reserve_step(&self) -> bool {
        let path = self.dir.join(RESERVE);
        let Ok(file) = std::fs::OpenOptions::new().write(true).open(&path) else {
            return false;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return false;
        };
        let floor = RESERVE_LEN as u64 / 2;
        len > floor
            && file
                .set_len(len.saturating_sub(RESERVE_STEP).max(floor))
                .is_ok()
    }

    /// Rewrites the index from `state`, by rename; the final one (the
    /// session finished) synced, the others not (a recorder must not wait
    /// for the disk while rings fill). On a full file system, the final
    /// one gives the reserve up and is tried again: the reserve is kept
    /// for it, so that the last word on what could not be written is
    /// written.
    pub fn write_index(&self, state: &State) -> Result<(), WriteError> {
        let path = self.dir.join(INDEX);
        let bytes = index::encode(&state.index);
        let write = |path: &Path, bytes: &[u8]| {
            if state.index.finished {
                fsutil::replace_durably(path, bytes)
            } else {
                fsutil::replace(path, bytes)
            }
        };
        let mut written = write(&path, &bytes);
        if matches!(&written, Err((_, _, e)) if fsutil::is_no_space(e))
            && state.index.finished
            && std::fs::remove_file(self.dir.join(RESERVE)).is_ok()
        {
            written = write(&path, &bytes);
        }
        written.map_err(|(path, op, e)| {
            if fsutil::is_no_space(&e) {
                WriteError::NoSpace {
                    path,
                    unwritten: Default::default(),
                }
            } else {
                WriteError::Io {
                    path,
                    op,
                    source: e,
                }
            }
        })
    }

    /// Counts a chunk of `process`'s `cpu` as finished, deletes the
    /// oldest chunks while the kept ones are past `max_size` (the index
    /// rewritten first, naming what was rotated out, then the files
    /// removed), and rewrites the index.
    pub fn chunk_finished(
        &self,
        process: usize,
        cpu: usize,
        key: u64,
        done: Done,
    ) -> Result<(), WriteError> {
        let mut state = self.state();
        let state = &mut *state;
        if let Some(c) = state
            .index
            .processes
            .get_mut(process)
            .and_then(|p| p.cpus.get_mut(cpu))
        {
            c.counters.chunks += 1;
            c.counters.disk_bytes =
                c.counters.disk_bytes.saturating_sub(done.open_bytes) + done.disk_bytes;
        }
        state.kept_bytes += done.disk_bytes;
        state.kept.push(Kept {
            key,
            process,
            cpu,
            done,
        });
        let mut doomed = Vec::new();
        if let Some(max) = self.options.max_size {
            while state.kept_bytes > max && state.kept.len() > 1 {
                let Some((oldest, _)) = state.kept.iter().enumerate().min_by_key(|(_, k)| k.key)
                else {
                    break;
                };
                let k = state.kept.swap_remove(oldest);
                state.kept_bytes -= k.done.disk_bytes;
                if let Some(c) = state
                    .index
                    .processes
                    .get_mut(k.process)
                    .and_then(|p| p.cpus.get_mut(k.cpu))
                {
                    let out = RotatedOut {
                        chunks: 1,
                        pages: k.done.pages,
                        events: k.done.events,
                        raw_bytes: k.done.raw_bytes,
                        disk_bytes: k.done.disk_bytes,
                        page_lost: k.done.page_lost,
                        lost_by_cause: k.done.lost_by_cause,
                        last_ts: k.done.last_ts,
                    };
                    c.counters.rotated_out.add(&out);
                    c.counters.disk_bytes = c.counters.disk_bytes.saturating_sub(out.disk_bytes);
                    c.first_kept = c.first_kept.max(k.done.number + 1);
                }
                doomed.push(k.done.path);
            }
        }
        self.write_index(state)?;
        for path in doomed {
            let _ = std::fs::remove_file(&path);
        }
        Ok(())
    }
}

/// The directory of `process`'s `cpu`.
pub(crate) fn cpu_dir(process_dir: &Path, cpu: usize) -> PathBuf {
    process_dir.join(format!("cpu{cpu}"))
}
